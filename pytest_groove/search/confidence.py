"""The ``low_confidence`` flag: no hit clearly stands out from the rest.

When the best score is not much above the average of the final scores, the
result list is flat and the top hit is probably not a confident answer.  The
flag is computed on the final scores (after MMR, before parent expansion) and
does not depend on their order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: default ``[search].min_confidence_ratio``
DEFAULT_MIN_CONFIDENCE_RATIO = 1.5


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
