"""Is a delta more than chance?  A paired randomization test beside every aggregate.

The test is Fisher's randomization test in its paired, two-sided form (the sign-flip
test; Smucker, Allan & Carterette, "A Comparison of Statistical Significance Tests for
Information Retrieval Evaluation", CIKM 2007).  For each golden query present in both
runs, ``d_i = now_i - before_i``.  Under the null hypothesis the two runs are the same
system, so each ``d_i`` is as likely to have had the other sign; the p-value is the
share of the 2^n sign assignments whose ``|sum|`` is at least the observed ``|sum|``.
Queries with ``d_i = 0`` do not move any sum, so only the m non-zero differences are
flipped:

- m <= :data:`EXACT_MAX_FLIPS`: every one of the 2^m assignments is enumerated (exact);
- otherwise :data:`SAMPLES` assignments are drawn with a fixed seed, and the p-value is
  ``(hits + 1) / (samples + 1)`` (never 0, and the same for the same inputs).

Pure Python on purpose: the plugin's controller finishes a retriever run without
numpy.  Sums are looked up in per-byte subset-sum tables, so a sample of 100 queries
costs 13 additions.

:func:`detectable_drop` answers the question before any test: for this set's size n and
per-query spread s, how large must a mean drop be before the test can reach p < 0.05?
Under the sign-flip null, ``sum(e_i |d_i|)`` has variance ``sum(d_i^2) = n (s^2 + m^2)``
for differences of mean m and spread s, so a mean drop reaches ``z`` standard errors
when ``m^2 (n - z^2) > z^2 s^2``, i.e. ``m > z s / sqrt(n - z^2)`` (normal approximation).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_groove.scoring.metric_table import (
    METRIC_KINDS,
    RECALL,
    RR,
    Metric,
    MetricKind,
    values_to_json,
)
from pytest_groove.scoring.metrics import QueryMetrics

#: up to this many non-zero differences the p-value is exact (2^16 assignments)
EXACT_MAX_FLIPS = 16
#: sign assignments drawn above that
SAMPLES = 10_000
#: the seed of those draws: the same runs always give the same p-value
SEED = 20070606
#: two-sided 5 %: the z a mean must reach for p < 0.05 (normal approximation)
Z_05 = 1.959963984540054
#: the fewest same-sign differences whose exact p-value, 2 / 2^k, is under 0.05
SIGN_TEST_MIN = 6
#: sums closer than this (relative) count as equal (float addition order)
_TIE = 1e-9


def _subset_sums(values: Sequence[float]) -> list[float]:
    """Sum of every subset of ``values`` (at most 8), indexed by the subset's bit mask."""
    sums = [0.0]
    for value in values:
        sums += [s + value for s in sums]
    return sums


def sign_flip_p_value(differences: Sequence[float]) -> float:
    """Two-sided p-value of the paired sign-flip test for these per-query differences.

    1.0 when every difference is 0 (or there is none): nothing to tell apart.
    """
    flips = [abs(d) for d in differences if d != 0.0 and math.isfinite(d)]
    if not flips:
        return 1.0
    observed = abs(math.fsum(d for d in differences if math.isfinite(d)))
    total = math.fsum(flips)
    # a sign assignment's sum is 2 * (sum of the |d| kept positive) - total
    bar = observed * (1.0 - _TIE) - _TIE
    tables = [_subset_sums(flips[i : i + 8]) for i in range(0, len(flips), 8)]
    if len(flips) <= EXACT_MAX_FLIPS:
        hits = _count_exact(tables, total, bar)
        return hits / float(2 ** len(flips))
    generator = random.Random(SEED)
    hits = 0
    for _ in range(SAMPLES):
        bits = generator.getrandbits(len(flips))
        positive = 0.0
        for table in tables:
            positive += table[bits & 0xFF]
            bits >>= 8
        if abs(2.0 * positive - total) >= bar:
            hits += 1
    return (hits + 1) / (SAMPLES + 1)


def _count_exact(tables: Sequence[Sequence[float]], total: float, bar: float) -> int:
    """How many of all sign assignments reach ``bar`` (one or two byte tables)."""
    if len(tables) == 1:
        return sum(1 for s in tables[0] if abs(2.0 * s - total) >= bar)
    low, high = tables
    hits = 0
    for h in high:
        hits += sum(1 for s in low if abs(2.0 * (s + h) - total) >= bar)
    return hits


# --------------------------------------------------------------------------- per metric


@dataclass(frozen=True)
class PValues:
    """The p-value of every aggregate metric's delta, keyed like the aggregate.

    ``values[kind.key]`` is a k-map for a per-k kind and one number otherwise, so the
    reports read it through :mod:`.metric_table` as they read the aggregate.
    """

    values: Mapping[str, Mapping[int, float] | float]

    def of(self, metric: Metric) -> float | None:
        found = self.values.get(metric.kind.key)
        if isinstance(found, Mapping):
            return found.get(metric.k) if metric.k is not None else None
        return found

    def to_json(self) -> dict[str, object]:
        """``{"recall_at_k": {"1": p, ...}, "mrr": p, "ndcg_at_k": {...}}`` (as ``diff``)."""
        return {
            kind.json_key: values_to_json(self.values[kind.key])
            for kind in METRIC_KINDS
            if kind.key in self.values
        }


def _kind_values(
    kind: MetricKind, k_values: Sequence[int], test: Callable[[Metric], float]
) -> Mapping[int, float] | float:
    if kind.per_k:
        return {k: test(Metric(kind, k)) for k in k_values}
    return test(Metric(kind))


def paired_p_values(
    pairs: Sequence[tuple[QueryMetrics, QueryMetrics]],
    k_values: Sequence[int],
    units: Sequence[str] | None = None,
) -> PValues:
    """The p-value of every metric for ``(now, before)`` pairs of the same queries.

    ``units`` names each pair's question (:func:`~.records.question_key`): pairs of
    one question are one observation, their differences averaged, since copies of a
    query are not independent -- counted apart, three copies of every query shrink
    the test's spread by about the square root of three.
    """
    keys = list(units) if units is not None else [str(at) for at in range(len(pairs))]

    def test(metric: Metric) -> float:
        grouped: dict[str, list[float]] = {}
        for key, (a, b) in zip(keys, pairs, strict=True):
            grouped.setdefault(key, []).append(metric.of_query(a) - metric.of_query(b))
        return sign_flip_p_value([math.fsum(d) / len(d) for d in grouped.values()])

    # only what both runs measured: an optional metric the run was not asked for has no
    # values, and no p-value
    measured = [
        kind
        for kind in METRIC_KINDS
        if all(kind.of_query(a) is not None and kind.of_query(b) is not None for a, b in pairs)
    ]
    return PValues({kind.key: _kind_values(kind, k_values, test) for kind in measured})


def format_p(p: float) -> str:
    """``p=0.031``, ``p<0.001``, ``p=1.00``: three decimals, never a misleading 0."""
    if p < 0.001:
        return "p<0.001"
    if p >= 0.995:
        return "p=1.00"
    return f"p={p:.3f}"


def significant(p: float | None, alpha: float | None) -> bool:
    """A drop counts under ``--significance ALPHA`` only when ``p < alpha`` (off: always)."""
    if alpha is None:
        return True
    return p is not None and p < alpha


# --------------------------------------------------------------------------- power


def detectable_drop(values: Sequence[float], z: float = Z_05) -> float | None:
    """The smallest mean drop the test can tell from chance at this size and spread.

    ``values`` are the per-query values of one metric; their population spread stands in
    for the spread of the per-query differences a change would make.  None when no drop
    a metric in [0, 1] can make reaches p < 0.05 at this size (3 queries or fewer, or a
    wide spread over few queries).
    """
    n = len(values)
    if n <= z * z:
        return None
    spread = statistics.pstdev(values) if n > 1 else 0.0
    # every query scored the same (all 1.0, say): a drop then means whole queries lost,
    # and k differences of one sign reach p = 2 / 2^k < 0.05 from k = 6 on
    drop = SIGN_TEST_MIN / n if spread == 0.0 else z * spread / math.sqrt(n - z * z)
    return drop if drop < 1.0 else None


def _recall_metric(k_values: Sequence[int]) -> Metric:
    """Recall at 5 when measured, else at the largest k."""
    return Metric(RECALL, 5 if 5 in k_values or not k_values else max(k_values))


def detectable_drop_line(
    per_query: Sequence[QueryMetrics], k_values: Sequence[int], units: Sequence[str] | None = None
) -> str:
    """``with 30 queries, drops under 0.062 in MRR and 0.081 in <recall at 5> cannot be
    told from chance (p < 0.05)``.

    ``units`` names each query's question (as for :func:`paired_p_values`): copies of
    one question are one observation here too, their values averaged.
    """
    keys = list(units) if units is not None else [str(at) for at in range(len(per_query))]
    metrics = [Metric(RR), _recall_metric(k_values)]

    def unit_values(metric: Metric) -> list[float]:
        grouped: dict[str, list[float]] = {}
        for key, query in zip(keys, per_query, strict=True):
            grouped.setdefault(key, []).append(metric.of_query(query))
        return [math.fsum(values) / len(values) for values in grouped.values()]

    drops = [detectable_drop(unit_values(m)) for m in metrics]
    n, distinct = len(per_query), len(set(keys))
    queries = f"{n} quer{'y' if n == 1 else 'ies'}"
    if distinct < n:
        queries = f"{queries} ({distinct} distinct)"
    if any(drop is None for drop in drops):
        return f"with {queries}, no drop in any metric can be told from chance (p < 0.05)"
    parts = " and ".join(
        f"{drop:.3f} in {metric.label}" for metric, drop in zip(metrics, drops, strict=True)
    )
    return f"with {queries}, drops under {parts} cannot be told from chance (p < 0.05)"


def with_p_value(line: str, p_values: PValues | None, metric: Metric) -> str:
    """A report's metric line ending in its delta, ``(↓ 0.050)``, with the p-value added
    inside the parentheses: ``(↓ 0.050, p=0.031)``; an unchanged delta gets none."""
    p = None if p_values is None else p_values.of(metric)
    if p is None or not line.endswith(")") or "(—" in line or "(n/a" in line:
        return line
    return f"{line[:-1]}, {format_p(p)})"
