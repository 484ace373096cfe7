"""The ``low_confidence`` flag: no hit clearly stands out from the rest.

When the best score is not much above the average of the final scores, the
result list is flat and the top hit is probably not a confident answer.  The
flag is computed on the final scores (after MMR, before parent expansion) and
does not depend on their order.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: default ``[search].min_confidence_ratio``.  Calibrated on the 84 labelled queries
#: of tests/corpora (kb-eval + kb-bilingual, default pipeline, limit 10): 1.5 flagged
#: 66 queries of which 58 had a right top hit (precision 0.12, recall 0.73); 1.1 flags
#: 23 (precision 0.22, recall 0.45).  Fused scores only say whether both legs agree
#: on the top hit, so the flag cannot do much better; see docs/retrieval-pipeline.md.
DEFAULT_MIN_CONFIDENCE_RATIO = 1.1


def low_confidence(scores: Sequence[float], ratio: float) -> bool:
    """True when ``max(scores) / mean(scores) < ratio``.

    Always False with fewer than two scores, a ratio of 0 (or below: the check
    is off), or a mean that is not positive -- a ratio against a zero or
    negative mean (raw reranker logits are often negative) means nothing.
    """
    if len(scores) < 2 or not ratio > 0.0:
        return False
    values = [float(s) for s in scores]
    # fsum is exactly rounded, so the mean and the flag cannot depend on order
    mean = math.fsum(values) / len(values)
    if not math.isfinite(mean) or mean <= 0.0:
        return False
    return max(values) / mean < ratio
