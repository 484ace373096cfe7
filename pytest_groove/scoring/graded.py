"""Graded nDCG at k for grades given beside the entries (the golden file's ``grade: N``).

The formula lives in one place, :func:`pytest_groove.scoring.metrics.ndcg_at_k`,
which takes each entry's own ``grade`` as its gain (trec_eval's ``ndcg_cut``, not
``2**g - 1``).  This helper scores entries with the grades given separately, as the
BEIR qrels and TREC tools keep them.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pytest_groove.scoring.metrics import RankedHit, ndcg_at_k
from pytest_groove.scoring.records import ExpectedEntry


def graded_ndcg_at_k(
    expected: Sequence[ExpectedEntry],
    grades: Sequence[int],
    hits: Sequence[RankedHit],
    k: int,
) -> float:
    """nDCG at k with gain = grade (``grades[i]`` belongs to ``expected[i]``).

    0.0 when ``E`` or ``T`` is empty, ``k <= 0`` or no grade is above 0.  Grades must
    be whole numbers >= 0 (a 0 entry is judged but earns nothing, as in qrels).
    """
    if len(grades) != len(expected):
        raise ValueError(f"{len(grades)} grade(s) for {len(expected)} expected entries")
    if any(grade < 0 for grade in grades):
        raise ValueError(f"grades must be 0 or more, got {min(grades)}")
    graded = [replace(entry, grade=grade) for entry, grade in zip(expected, grades, strict=True)]
    return ndcg_at_k(graded, hits, k)
