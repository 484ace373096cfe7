"""Per-query retrieval metrics and their aggregation (``metric_version`` 2).

One small function per metric, each docstring stating its formula, in the manner of
ranx; every name a metric goes by, and how the reports read it, is declared once in
:mod:`.metric_table`.  An expected entry is satisfied by a hit or not (see
:func:`entry_satisfied`); its ``grade`` (1 unless the golden file says otherwise) is
nDCG's gain, and every other metric counts an entry with grade 1 or more as relevant.
An entry of grade 0 is judged not relevant: no metric counts it as expected.

Notation used in the docstrings: ``E`` is the query's relevant expected list (grade 1
or more, length ``n`` = ``R``, duplicates kept), ``g(e)`` an entry's grade, ``T`` the
ranked hit list, ``T[:k]`` its first ``k`` hits by position, ``rel(p)`` 1 when the
hit at position ``p`` is *credited* to an entry of ``E`` under the one-to-one rule of
:func:`credited_entry` (else 0).  Ranks are 1-based and contiguous, as search
produces them.

For numbers that match the reference bit for bit, sums run left to right with plain
float addition (not ``math.fsum``) and discounts are ``1 / math.log2(rank + 1)``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.text.plain import trim

#: bumped whenever a formula changes; part of the run fingerprint, so runs computed
#: by different formulas are never compared.  2 = one-to-one nDCG (see ndcg_at_k).
METRIC_VERSION = 2

#: k used by :func:`is_miss` when the k list is empty
FALLBACK_K = 10


class RankedHit(Protocol):
    """What the metrics need from a search result (SearchHit satisfies it)."""

    @property
    def rank(self) -> int: ...

    @property
    def path(self) -> str: ...

    @property
    def heading(self) -> str | None: ...


def normalise_heading(heading: str) -> str:
    """Trim leading/trailing Unicode White_Space, then lowercase.

    Internal whitespace is significant: ``"Data  flow"`` differs from ``"Data flow"``.
    """
    return trim(heading).lower()


def heading_matches(expected: str | None, hit: str | None) -> bool:
    """Heading half of the hit rule.

    No expected heading → any hit heading (including none) matches.  An expected
    heading never matches a hit without a heading.  Otherwise both sides are
    compared after :func:`normalise_heading`.
    """
    if expected is None:
        return True
    if hit is None:
        return False
    return normalise_heading(expected) == normalise_heading(hit)


def entry_satisfied(entry: ExpectedEntry, path: str, heading: str | None) -> bool:
    """The hit rule: same path (exact, byte for byte) and a matching heading."""
    return entry.path == path and heading_matches(entry.heading, heading)


def relevant_entries(expected: Sequence[ExpectedEntry]) -> Sequence[ExpectedEntry]:
    """The entries every metric counts: grade 1 or more (all of them in a binary set)."""
    if all(entry.relevant for entry in expected):
        return expected
    return [entry for entry in expected if entry.relevant]


def _satisfies_any(expected: Sequence[ExpectedEntry], hit: RankedHit) -> bool:
    return any(entry_satisfied(entry, hit.path, hit.heading) for entry in expected)


def recall_at_k(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit], k: int) -> float:
    """Recall at k = |{e in E : some hit in T[:k] satisfies e}| / n.

    0.0 when ``E`` or ``T`` is empty or ``k <= 0``.  No one-to-one consumption: one
    hit may satisfy several entries (duplicates, or a path-only and a heading entry
    for the same file).  Order inside the window is irrelevant.
    """
    expected = relevant_entries(expected)
    if not expected or not hits or k <= 0:
        return 0.0
    window = hits[:k]
    found = sum(
        1
        for entry in expected
        if any(entry_satisfied(entry, hit.path, hit.heading) for hit in window)
    )
    return found / len(expected)


def reciprocal_rank(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> float:
    """RR = 1 / rank of the first hit (over the whole list) satisfying any entry.

    0.0 when ``E`` or ``T`` is empty or nothing matches.  Not cut at any k.  A
    matching hit that claims rank 0 (or less) gives 0.0 rather than infinity.
    """
    expected = relevant_entries(expected)
    if not expected or not hits:
        return 0.0
    for hit in hits:
        if _satisfies_any(expected, hit):
            return 1.0 / hit.rank if hit.rank > 0 else 0.0
    return 0.0


def _discount(position: int) -> float:
    """Gain of a relevant hit at 1-based ``position``: 1 / log2(position + 1)."""
    return 1.0 / math.log2(position + 1)


def credited_entry(
    expected: Sequence[ExpectedEntry], consumed: list[bool], hit: RankedHit
) -> int | None:
    """Index of the entry ``hit`` is credited to under the one-to-one rule, or None.

    Among the relevant entries not yet ``consumed`` that the hit satisfies, a heading
    entry is preferred over a path-only one (the more specific claim), then golden
    order decides.  nDCG, precision, MAP, R-precision and the TREC export share it.
    """
    path_only: int | None = None
    for index, entry in enumerate(expected):
        if consumed[index] or not entry.relevant:
            continue
        if not entry_satisfied(entry, hit.path, hit.heading):
            continue
        if entry.heading is not None:
            return index
        if path_only is None:
            path_only = index
    return path_only


def credited_grades(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> list[int]:
    """For each hit in order, the grade of the entry it is credited to (0 for none)."""
    consumed = [False] * len(expected)
    grades: list[int] = []
    for hit in hits:
        index = credited_entry(expected, consumed, hit)
        if index is None:
            grades.append(0)
        else:
            consumed[index] = True
            grades.append(expected[index].grade)
    return grades


def ndcg_at_k(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit], k: int) -> float:
    """nDCG at k = DCG_k / IDCG_k with gain = grade and one-to-one matching.

    DCG_k = sum over p = 1..k of g(credited(T[p])) / log2(p + 1): walk ``T[:k]`` in
    order; each hit is credited to at most one still unconsumed relevant entry it
    satisfies (:func:`credited_entry`), which it consumes.  A hit credited to nothing
    adds 0.  IDCG_k = sum over i = 1..min(n, k) of G[i] / log2(i + 1), with ``G`` the
    grades of ``E`` from highest to lowest.  The gain is the grade itself, as
    trec_eval's ``ndcg_cut``, ranx's ``ndcg`` and BEIR compute it (not
    ``2**g - 1``); with every grade 1 this is the binary nDCG, bit for bit.

    0.0 when ``E`` or ``T`` is empty or ``k <= 0``.  Because every entry is credited
    at most once and positions are distinct, the value is always within [0, 1]:
    several chunks of one file satisfy a path-only entry once, and duplicate entries
    need a distinct hit each.

    The position equals the hit's rank when ranks are 1-based and contiguous (as
    search returns them); using the position keeps the bound even for malformed ranks.
    """
    relevant = relevant_entries(expected)
    if not relevant or not hits or k <= 0:
        return 0.0
    dcg = 0.0
    for position, grade in enumerate(credited_grades(expected, hits[:k]), start=1):
        if grade:
            dcg += grade * _discount(position)
    idcg = 0.0
    ideal = sorted((entry.grade for entry in relevant), reverse=True)[:k]
    for position, grade in enumerate(ideal, start=1):
        idcg += grade * _discount(position)
    return dcg / idcg if idcg > 0.0 else 0.0


def _credited_count(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> int:
    return sum(1 for grade in credited_grades(expected, hits) if grade)


def precision_at_k(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit], k: int) -> float:
    """Precision at k = (sum over p = 1..k of rel(p)) / k.

    Divided by k even when fewer than k hits came back (trec_eval's ``P_k``, ranx's
    ``precision@k``).  0.0 when ``E`` or ``T`` is empty or ``k <= 0``.
    """
    if not relevant_entries(expected) or not hits or k <= 0:
        return 0.0
    return _credited_count(expected, hits[:k]) / k


def hit_rate_at_k(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit], k: int) -> float:
    """Hit rate (success) at k = 1 if some hit in ``T[:k]`` satisfies an entry of E, else 0.

    trec_eval's ``success_k``, ranx's ``hit_rate@k``; its mean over queries is the share
    of queries answered within k.  0.0 when ``E`` or ``T`` is empty or ``k <= 0``.
    """
    relevant = relevant_entries(expected)
    if not relevant or k <= 0:
        return 0.0
    return 1.0 if any(_satisfies_any(relevant, hit) for hit in hits[:k]) else 0.0


def average_precision(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> float:
    """AP = (sum over p = 1..|T| with rel(p) = 1 of precision@p) / R.

    Over the whole retrieved list (so MAP is at the run's limit: trec_eval's
    ``map_cut_N`` with N the limit, ranx's ``map@N``); ``R`` counts every relevant
    entry, retrieved or not.  precision@p = (rel(1) + .. + rel(p)) / p.  0.0 when ``E``
    or ``T`` is empty.
    """
    relevant = relevant_entries(expected)
    if not relevant or not hits:
        return 0.0
    found = 0
    total = 0.0
    for position, grade in enumerate(credited_grades(expected, hits), start=1):
        if grade:
            found += 1
            total += found / position
    return total / len(relevant)


def r_precision(expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]) -> float:
    """R-precision = (sum over p = 1..R of rel(p)) / R, with R = n the relevant entries.

    Precision at the cut-off where a perfect ranking would have found everything
    (trec_eval's ``Rprec``, ranx's ``r-precision``).  0.0 when ``E`` or ``T`` is empty.
    """
    relevant = relevant_entries(expected)
    if not relevant or not hits:
        return 0.0
    return _credited_count(expected, hits[: len(relevant)]) / len(relevant)


def expected_ranks(
    expected: Sequence[ExpectedEntry], hits: Sequence[RankedHit]
) -> list[int | None]:
    """For each entry, the rank of the first hit that satisfies it (None if none).

    Used by failure texts ("expected docs/a.md: rank 7" / "not retrieved").
    """
    ranks: list[int | None] = []
    for entry in expected:
        rank: int | None = None
        for hit in hits:
            if entry_satisfied(entry, hit.path, hit.heading):
                rank = hit.rank
                break
        ranks.append(rank)
    return ranks


@dataclass(frozen=True)
class QueryMetrics:
    """One query's numbers; maps are keyed by k."""

    recall_at_k: dict[int, float]
    reciprocal_rank: float
    ndcg_at_k: dict[int, float]
    #: the optional metrics (:data:`OPTIONAL_METRICS`): None when not measured
    precision_at_k: dict[int, float] | None = None
    hit_rate_at_k: dict[int, float] | None = None
    average_precision: float | None = None
    r_precision: float | None = None


@dataclass(frozen=True)
class AggregateMetrics:
    """Means over every golden query (``query_count`` of them)."""

    recall_at_k: dict[int, float]
    mrr: float
    ndcg_at_k: dict[int, float]
    query_count: int
    #: the optional metrics' means (None when not measured)
    precision_at_k: dict[int, float] | None = None
    hit_rate_at_k: dict[int, float] | None = None
    map: float | None = None
    r_precision: float | None = None


def query_metrics(
    expected: Sequence[ExpectedEntry],
    hits: Sequence[RankedHit],
    k_values: Sequence[int],
    optional: Collection[str] = (),
) -> QueryMetrics:
    """Recall and nDCG at each k in ``k_values``, plus the reciprocal rank, and the
    ``optional`` metrics asked for (keys of ``metric_names.OPTIONAL_METRICS``)."""
    return QueryMetrics(
        recall_at_k={k: recall_at_k(expected, hits, k) for k in k_values},
        reciprocal_rank=reciprocal_rank(expected, hits),
        ndcg_at_k={k: ndcg_at_k(expected, hits, k) for k in k_values},
        precision_at_k=(
            {k: precision_at_k(expected, hits, k) for k in k_values}
            if "precision" in optional
            else None
        ),
        hit_rate_at_k=(
            {k: hit_rate_at_k(expected, hits, k) for k in k_values}
            if "hit_rate" in optional
            else None
        ),
        average_precision=average_precision(expected, hits) if "map" in optional else None,
        r_precision=r_precision(expected, hits) if "r_precision" in optional else None,
    )


def ordered_mean(values: Iterable[float]) -> float:
    """``(v_1 + v_2 + ... + v_N) / N``, summed left to right; 0.0 for no values.

    The one mean behind every reported aggregate (``groove eval``, the plugin and
    ``groove tune``), so the same per-query numbers always give the same last
    digits.  Not exactly rounded: the order of the values matters in the last ulp.
    """
    total = 0.0
    count = 0
    for value in values:
        total += value
        count += 1
    return total / count if count else 0.0


def _mean_by_k(maps: Sequence[dict[int, float]]) -> dict[int, float]:
    keys = sorted({k for mapping in maps for k in mapping})
    # A k absent from one query's map counts as 0.0 for that query.
    return {k: ordered_mean(mapping.get(k, 0.0) for mapping in maps) for k in keys}


def aggregate(metrics: Sequence[QueryMetrics]) -> AggregateMetrics:
    """Arithmetic mean of each metric over all queries, in golden order.

    mean = (m_1 + m_2 + ... + m_N) / N, summed left to right.  Every query counts
    equally (no weighting by number of expected entries); the loader refuses a
    query with no expected entries, so nothing is left out.  No queries → empty
    maps, MRR 0.0, count 0.
    """
    if not metrics:
        return AggregateMetrics(recall_at_k={}, mrr=0.0, ndcg_at_k={}, query_count=0)
    first = metrics[0]
    return AggregateMetrics(
        recall_at_k=_mean_by_k([item.recall_at_k for item in metrics]),
        mrr=ordered_mean(item.reciprocal_rank for item in metrics),
        ndcg_at_k=_mean_by_k([item.ndcg_at_k for item in metrics]),
        query_count=len(metrics),
        # an optional metric is measured for every query of a run or for none; a
        # query without it (never in one run) counts as 0.0, like a missing k
        precision_at_k=(
            None
            if first.precision_at_k is None
            else _mean_by_k([item.precision_at_k or {} for item in metrics])
        ),
        hit_rate_at_k=(
            None
            if first.hit_rate_at_k is None
            else _mean_by_k([item.hit_rate_at_k or {} for item in metrics])
        ),
        map=(
            None
            if first.average_precision is None
            else ordered_mean(item.average_precision or 0.0 for item in metrics)
        ),
        r_precision=(
            None
            if first.r_precision is None
            else ordered_mean(item.r_precision or 0.0 for item in metrics)
        ),
    )


def is_miss(metrics: QueryMetrics, k_values: Sequence[int]) -> bool:
    """A query misses when recall at the largest k is 0 (nothing expected retrieved).

    With an empty k list the fallback k of 10 is used, and a k missing from the map
    counts as 0, so such a query is a miss.
    """
    k = max(k_values) if k_values else FALLBACK_K
    return metrics.recall_at_k.get(k, 0.0) == 0.0
