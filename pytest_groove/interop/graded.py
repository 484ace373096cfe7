"""Graded nDCG@k, as trec_eval's ``ndcg_cut`` computes it from exported files.

Prepared for graded golden files (``grade: N`` on an expected entry, written by the
BEIR import for judgements above 1); the metric table does not use it yet.

Formula, with ``E`` the expected entries, ``g(e)`` the grade of entry ``e`` and
``T[:k]`` the first ``k`` hits::

    DCG@k  = sum over positions p = 1..k of  g(credited(T[p])) / log2(p + 1)
    IDCG@k = sum over i = 1..min(n, k) of    G[i] / log2(i + 1)
    nDCG@k = DCG@k / IDCG@k                  (0.0 when IDCG@k is 0)

where ``credited`` is the one-to-one rule of the binary nDCG and of the TREC export
(each entry credited at most once, a heading entry before a path-only one, then golden
order; a hit credited to nothing adds 0) and ``G`` is the grades sorted from highest
to lowest.  The gain is the grade itself (trec_eval's default, not ``2**g - 1``), so
with every grade 1 this is the binary nDCG@k exactly.  Sums run left to right with
plain float addition, as in :mod:`pytest_groove.evaluation.metrics`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_groove.evaluation.metrics import RankedHit
from pytest_groove.evaluation.records import ExpectedEntry
from pytest_groove.interop.trec import credited_entry


def _discount(position: int) -> float:
    return 1.0 / math.log2(position + 1)


def graded_ndcg_at_k(
    expected: Sequence[ExpectedEntry],
    grades: Sequence[int],
    hits: Sequence[RankedHit],
    k: int,
) -> float:
    """nDCG@k with gain = grade (``grades[i]`` belongs to ``expected[i]``).

    0.0 when ``E`` or ``T`` is empty, ``k <= 0`` or no grade is above 0.  Grades must
    be whole numbers >= 0 (a 0 entry is judged but earns nothing, as in qrels).
    """
    if len(grades) != len(expected):
        raise ValueError(f"{len(grades)} grade(s) for {len(expected)} expected entries")
    if any(grade < 0 for grade in grades):
        raise ValueError(f"grades must be 0 or more, got {min(grades)}")
    if not expected or not hits or k <= 0:
        return 0.0
    consumed = [False] * len(expected)
    dcg = 0.0
    for position, hit in enumerate(hits[:k], start=1):
        index = credited_entry(expected, consumed, hit)
        if index is not None:
            consumed[index] = True
            dcg += grades[index] * _discount(position)
    idcg = 0.0
    for position, grade in enumerate(sorted(grades, reverse=True)[:k], start=1):
        idcg += grade * _discount(position)
    return dcg / idcg if idcg > 0.0 else 0.0
