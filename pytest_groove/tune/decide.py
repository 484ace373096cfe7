"""Selection, nested leave-one-query-out CV and the adoption decision.

Everything here is pure numpy over a metric table: ``ndcg5[q, c]`` is the primary
metric (:data:`PRIMARY`, nDCG at k = 5) of query ``q`` under grid condition ``c``
(grid order, see :mod:`.grid`).  No database, no model.  The Monte Carlo
simulations that justify the thresholds run exactly this code.

The guard against over-fitting has three layers:

* selection is a two-phase coordinate descent (weights at k=60, then k) with
  deterministic tie-breaks that favour the built-in defaults, so a flat or noisy
  landscape selects the defaults;
* every query is scored by the condition selected *without* it (nested LOO), so
  the held-out mean is not inflated by the selection;
* adoption needs all five criteria of the seed: a non-default refit, a held-out
  mean gain above 0.02 and above 3 paired standard errors, more than half of the
  folds agreeing with the refit, and no secondary metric worse than the default.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pytest_groove.scoring.metric_table import METRIC_KINDS, NDCG, Metric, parse_metric
from pytest_groove.scoring.metrics import ordered_mean
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    DEFAULT_INDEX,
    DEFAULT_K_INDEX,
    N_CONDITIONS,
    N_K,
    N_WEIGHT_TRIPLES,
    Condition,
)
from pytest_groove.tune.units import FloatArray, unit_table

#: two scores closer than this are a plateau (a tie) for the selection
EPS_PLATEAU = 1e-9
#: two centre distances closer than this are equal
EPS_DIST = 1e-12
#: a per-query difference smaller than this in magnitude counts as a tie
EPS_TIE = 1e-12
#: criterion 2: the held-out mean gain must exceed this
ADOPT_MIN_MEAN_DELTA = 0.02
#: criterion 3: the held-out mean gain must exceed this many paired SEs.  It was 2
#: before the null-adoption rate was measured (12.7% at N=26, see docs/tune.md)
ADOPT_SE_MULTIPLIER = 3.0
#: criterion 4: more than this share of folds must select the refit
STABILITY_MIN = 0.5
#: the rank depth of the primary metric
PRIMARY_K = 5
#: the metric the selection and the decision use
PRIMARY = Metric(NDCG, PRIMARY_K)

#: Phase W columns: every weight triple at k = 60, in grid order
PHASE_W_COLUMNS: tuple[int, ...] = tuple(w * N_K + DEFAULT_K_INDEX for w in range(N_WEIGHT_TRIPLES))


# --------------------------------------------------------------------------- statistics


def mean(values: Sequence[float] | FloatArray) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return float(np.mean(values)) if len(values) else 0.0


def sample_sd(values: Sequence[float] | FloatArray) -> float:
    """Sample standard deviation (denominator n-1); 0.0 for fewer than 2 values."""
    return float(np.std(values, ddof=1)) if len(values) >= 2 else 0.0


def paired_se(diffs: Sequence[float] | FloatArray) -> float:
    """SD(d) / sqrt(N) of per-query paired differences; +inf for N < 2.

    Infinity makes criterion 3 fail for a single effective query instead of
    pretending a one-point estimate has no error.
    """
    n = len(diffs)
    if n < 2:
        return math.inf
    return sample_sd(diffs) / math.sqrt(n)


@dataclass(frozen=True)
class SignTest:
    """Exact two-sided sign test on paired differences (reported, never decides)."""

    improved: int
    degraded: int
    tied: int
    p_value: float


def sign_test(diffs: Iterable[float]) -> SignTest:
    values = list(diffs)
    pos = sum(1 for d in values if d > EPS_TIE)
    neg = sum(1 for d in values if d < -EPS_TIE)
    ties = len(values) - pos - neg
    n = pos + neg
    if n == 0:
        return SignTest(pos, neg, ties, 1.0)
    tail = sum(math.comb(n, i) for i in range(min(pos, neg) + 1))
    p = min(1.0, 2.0 * tail / 2.0**n)
    return SignTest(pos, neg, ties, p)


#: up to this many differences the sign-flip test enumerates all 2^n flips
PERMUTATION_EXACT_MAX = 16
#: above it, this many random flips (seeded, so a report is reproducible)
PERMUTATION_DRAWS = 20_000


def permutation_p_value(diffs: Sequence[float] | FloatArray, *, seed: int = 0) -> float:
    """Two-sided paired sign-flip permutation p-value of mean(d) = 0.

    Under the null each difference is symmetric around 0, so flipping its sign is
    as likely as not.  Exact for up to 16 differences, else a seeded Monte Carlo
    estimate ``(1 + hits) / (1 + draws)``.  Unlike the sign test it uses the
    sizes of the differences, not just their signs.  Ties (|d| <= 1e-12) are left
    out, as in the sign test.  Reported only.
    """
    d = np.asarray(diffs, dtype=np.float64)
    # a zero difference flips onto itself: only the non-zero ones matter
    d = d[np.abs(d) > EPS_TIE]
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(float(d.sum()))
    # relative slack so that a flip reproducing the observed sum up to rounding counts
    threshold = observed - 1e-12 * max(1.0, float(np.abs(d).sum()))
    if n <= PERMUTATION_EXACT_MAX:
        bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
        signs = 1.0 - 2.0 * bits
        sums = np.abs(signs @ d)
        return float(np.count_nonzero(sums >= threshold)) / float(2**n)
    rng = np.random.default_rng(seed)
    hits = 0
    remaining = PERMUTATION_DRAWS
    while remaining:
        batch = min(remaining, 4096)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(batch, n))
        hits += int(np.count_nonzero(np.abs(signs @ d) >= threshold))
        remaining -= batch
    return (1.0 + hits) / (1.0 + PERMUTATION_DRAWS)


# --------------------------------------------------------------------------- selection


def _pick(plateau: list[int]) -> int:
    """Break a plateau: the default, else closest to the grid centre, else lowest index."""
    if DEFAULT_INDEX in plateau:
        return DEFAULT_INDEX
    best = -1
    best_dist = math.inf
    for index in sorted(plateau):
        dist = Condition.from_index(index).centre_distance()
        if best < 0 or dist < best_dist - EPS_DIST:
            best, best_dist = index, dist
    return best


def _scan(
    scores: Sequence[float], columns: Iterable[int], best: float, plateau: list[int]
) -> float:
    """Running-best scan shared by both phases; returns the new running best.

    A score more than EPS above the running best starts a new plateau; one
    within EPS of it joins the plateau without moving the running best.
    """
    for column in columns:
        s = scores[column]
        if s > best + EPS_PLATEAU:
            best = s
            plateau[:] = [column]
        elif abs(s - best) <= EPS_PLATEAU and column not in plateau:
            plateau.append(column)
    return best


def select_from_means(means: Sequence[float] | FloatArray) -> int:
    """Two-phase coordinate descent over a vector of 384 mean scores.

    Phase W scans the 64 weight triples at k=60 starting from the default; Phase
    K scans the six k values at the Phase-W winner, carrying Phase W's running
    best.  Only 69 conditions are ever compared: the global argmax is *not* the
    answer when it sits at k != 60 under a weight triple that loses Phase W.
    """
    if len(means) != N_CONDITIONS:
        raise ValueError(f"expected {N_CONDITIONS} condition scores, got {len(means)}")
    scores = [float(v) for v in means]
    best = scores[DEFAULT_INDEX]
    plateau = [DEFAULT_INDEX]
    best = _scan(scores, PHASE_W_COLUMNS, best, plateau)
    winner = _pick(plateau)
    base = (winner // N_K) * N_K
    plateau = [winner]
    _scan(scores, range(base, base + N_K), best, plateau)
    return _pick(plateau)


def _check_table(ndcg5: FloatArray) -> None:
    if ndcg5.ndim != 2 or ndcg5.shape[1] != N_CONDITIONS:
        raise ValueError(
            f"metric table must have shape (queries, {N_CONDITIONS}), got {ndcg5.shape}"
        )


def condition_means(ndcg5: FloatArray, rows: Sequence[int]) -> FloatArray:
    """Mean score of every condition over ``rows``; all zeros for no rows."""
    if len(rows) == 0:
        return np.zeros(ndcg5.shape[1], dtype=np.float64)
    return np.asarray(ndcg5[list(rows)].mean(axis=0), dtype=np.float64)


def select_condition(ndcg5: FloatArray, rows: Sequence[int]) -> int:
    """Condition selected by coordinate descent on the queries ``rows``."""
    table = np.asarray(ndcg5, dtype=np.float64)
    _check_table(table)
    return select_from_means(condition_means(table, rows))


# --------------------------------------------------------------------------- nested LOO


@dataclass(frozen=True)
class LooResult:
    """Nested leave-one-query-out over the effective queries."""

    #: condition selected on all effective queries: the candidate recommendation
    refit: int
    #: the effective query rows, in golden order
    effective: tuple[int, ...]
    #: condition selected with each effective query held out (same order)
    fold_selections: tuple[int, ...]
    #: the held-out unit's primary metric under its fold's selection minus under the default
    diffs: tuple[float, ...]
    #: the rows of each unit (held out together, counted once), in golden order of
    #: their first row; one row each unless queries repeat a text
    units: tuple[tuple[int, ...], ...] = ()

    @property
    def folds(self) -> int:
        return len(self.fold_selections)

    @property
    def mean_delta(self) -> float:
        return mean(self.diffs)

    @property
    def paired_se(self) -> float:
        return paired_se(self.diffs)

    @property
    def stability(self) -> float:
        """Share of folds whose selection equals the refit (0.0 with no folds)."""
        if not self.fold_selections:
            return 0.0
        agree = sum(1 for s in self.fold_selections if s == self.refit)
        return agree / len(self.fold_selections)

    @property
    def sign_test(self) -> SignTest:
        return sign_test(self.diffs)

    def permutation_p_value(self) -> float:
        return permutation_p_value(self.diffs)


def _units(
    n_rows: int, effective: Sequence[int] | None, units: Sequence[Sequence[int]] | None
) -> tuple[tuple[int, ...], ...]:
    if units is not None:
        return tuple(tuple(unit) for unit in units)
    rows = range(n_rows) if effective is None else effective
    return tuple((row,) for row in rows)


def nested_loo(
    ndcg5: FloatArray,
    effective: Sequence[int] | None = None,
    units: Sequence[Sequence[int]] | None = None,
) -> LooResult:
    """Refit on every effective query, and one fold per query held out.

    Each difference uses the fold's *own* selection on its held-out query;
    reusing the refit there would put the selection bias straight back in.
    ``units`` (replacing ``effective``) groups rows that count as one query: a
    unit is held out whole and contributes one difference, of its rows' mean.
    """
    table = np.asarray(ndcg5, dtype=np.float64)
    _check_table(table)
    groups = _units(table.shape[0], effective, units)
    rows = tuple(sorted(row for unit in groups for row in unit))
    n = len(groups)
    if n == 0:
        return LooResult(select_from_means(np.zeros(N_CONDITIONS)), rows, (), ())
    sub = unit_table(table, groups)
    total = sub.sum(axis=0)
    refit = select_from_means(total / n)
    selections: list[int] = []
    diffs: list[float] = []
    for j in range(n):
        # removing one row from the column sums; with one query the training set is
        # empty and every condition scores 0, which selects the default
        train = (total - sub[j]) / (n - 1) if n > 1 else np.zeros(N_CONDITIONS)
        sel = select_from_means(train)
        selections.append(sel)
        diffs.append(float(sub[j, sel] - sub[j, DEFAULT_INDEX]))
    return LooResult(refit, rows, tuple(selections), tuple(diffs), groups)


# --------------------------------------------------------------------------- decision


def _metric_order(names: Iterable[str]) -> list[str]:
    """Metrics of the table in report order (recall by ascending k, then MRR, ...),
    then any other name in the given order."""
    names = list(names)
    kinds = list(METRIC_KINDS)
    known = {name: metric for name in names if (metric := parse_metric(name)) is not None}
    ordered = sorted(known, key=lambda n: (kinds.index(known[n].kind), known[n].k or 0))
    return ordered + [n for n in names if n not in known]


def display_name(name: str) -> str:
    """A secondary metric as the reports label it (``mrr`` -> ``MRR``)."""
    metric = parse_metric(name)
    return name if metric is None else metric.label


@dataclass(frozen=True)
class SecondaryCheck:
    """Criterion 5: the refit's secondary aggregates against the built-in default."""

    #: metric name -> (default mean, refit mean), in report order; the means as
    #: ``groove eval`` computes them (:func:`ordered_mean`), for display
    values: dict[str, tuple[float, float]]
    #: one "name refit < baseline default" string per degraded metric
    violations: tuple[str, ...]


def _exact_mean(column: FloatArray) -> float:
    """Mean with an exactly rounded sum: equal multisets of values give equal means.

    Criterion 5 has no tolerance, so a summation-order ulp must not read as a
    degradation when the refit merely moves the same values between queries.
    """
    n = len(column)
    return math.fsum(float(v) for v in column) / n if n else 0.0


def check_secondary(secondary: Mapping[str, FloatArray], refit: int) -> SecondaryCheck:
    """Compare refit and default column means over *all* rows; strict, no tolerance.

    The comparison uses exactly rounded means (:func:`_exact_mean`); the values
    kept for the report are the means ``groove eval`` would print (rows in golden
    order, summed left to right), so the report's default column matches eval's
    aggregate to the last digit.  The two can differ by an ulp, never by enough to
    show at the four decimals the report prints; where the exact means are equal, the
    refit is shown with the default's value, so the JSON's full digits never show a
    one-ulp drop the guard (rightly) did not count.
    """
    values: dict[str, tuple[float, float]] = {}
    violations: list[str] = []
    for name in _metric_order(secondary):
        table = np.asarray(secondary[name], dtype=np.float64)
        _check_table(table)
        exact_base, exact_cand = _exact_mean(table[:, DEFAULT_INDEX]), _exact_mean(table[:, refit])
        base = ordered_mean(float(v) for v in table[:, DEFAULT_INDEX])
        cand = ordered_mean(float(v) for v in table[:, refit])
        shown = (base, base if exact_cand == exact_base else cand)
        values[name] = shown
        if exact_cand < exact_base:
            base, cand = shown
            violations.append(f"{display_name(name)} {cand:.4f} < baseline {base:.4f}")
    return SecondaryCheck(values, tuple(violations))


@dataclass(frozen=True)
class Verdict:
    """The outcome of the five adoption criteria."""

    #: True iff all five criteria passed
    adopt: bool
    #: the refit condition (the candidate, whether adopted or not)
    refit: Condition
    held_out_mean: float
    paired_se: float
    stability: float
    #: numbers (1..5) of the criteria that failed, ascending
    failed: tuple[int, ...]
    #: one human-readable reason per failed criterion, same order
    reasons: tuple[str, ...]
    #: criterion 5's degraded metrics (computed even when other criteria fail)
    violations: tuple[str, ...]
    loo: LooResult
    secondary: SecondaryCheck
    multiplier: float = ADOPT_SE_MULTIPLIER
    min_delta: float = ADOPT_MIN_MEAN_DELTA

    @property
    def condition(self) -> Condition:
        """What to run with: the refit when adopted, else the built-in default."""
        return self.refit if self.adopt else DEFAULT_CONDITION

    @property
    def decision(self) -> str:
        return "adopt" if self.adopt else "keep_default"

    @property
    def permutation_p(self) -> float:
        """Sign-flip permutation p-value of the held-out differences (reported only)."""
        return self.loo.permutation_p_value()


def decide_from_loo(
    loo: LooResult,
    secondary: Mapping[str, FloatArray],
    *,
    multiplier: float = ADOPT_SE_MULTIPLIER,
    min_delta: float = ADOPT_MIN_MEAN_DELTA,
) -> Verdict:
    """Apply the five criteria to a finished nested LOO (no short-circuit)."""
    m = loo.mean_delta
    se = loo.paired_se
    stability = loo.stability
    check = check_secondary(secondary, loo.refit)
    failed: list[int] = []
    reasons: list[str] = []
    if loo.refit == DEFAULT_INDEX:
        failed.append(1)
        reasons.append("refit selected the built-in defaults")
    if not m > min_delta:
        failed.append(2)
        reasons.append(f"held-out mean delta {m:+.4f} <= threshold {min_delta:.4f}")
    # written as "pass only if m > mult*se": NaN or an infinite SE must fail
    if not m > multiplier * se:
        failed.append(3)
        reasons.append(
            f"held-out mean delta {m:+.4f} <= {multiplier:.1f} x paired SE {multiplier * se:.4f}"
        )
    if not stability > STABILITY_MIN:
        failed.append(4)
        reasons.append(
            f"selection stability {stability:.2f} <= {STABILITY_MIN:.2f} "
            "(folds disagree = overfit signal)"
        )
    if check.violations:
        failed.append(5)
        reasons.append("secondary metrics degraded: " + "; ".join(check.violations))
    return Verdict(
        adopt=not failed,
        refit=Condition.from_index(loo.refit),
        held_out_mean=m,
        paired_se=se,
        stability=stability,
        failed=tuple(failed),
        reasons=tuple(reasons),
        violations=check.violations,
        loo=loo,
        secondary=check,
        multiplier=multiplier,
        min_delta=min_delta,
    )


def decide(
    ndcg5: FloatArray,
    secondary: Mapping[str, FloatArray],
    *,
    effective: Sequence[int] | None = None,
    units: Sequence[Sequence[int]] | None = None,
    multiplier: float = ADOPT_SE_MULTIPLIER,
    min_delta: float = ADOPT_MIN_MEAN_DELTA,
) -> Verdict:
    """Should the fusion parameters move off the built-in defaults?

    ``ndcg5`` has shape (N queries, 384) in grid order (the default is column
    226).  ``secondary`` maps metric names (threshold spellings of
    :mod:`~pytest_groove.scoring.metric_table`) to arrays of the same shape.
    ``effective`` lists the rows whose ranking can react to the fusion parameters
    (default: all rows): selection, LOO and the statistics use only those, while
    criterion 5 compares the secondary metrics over every row, because production
    sees every query.  ``units`` (replacing ``effective``) groups the rows that
    ask the same text: selection, LOO and the statistics count each group once.
    """
    table = np.asarray(ndcg5, dtype=np.float64)
    _check_table(table)
    for name, other in secondary.items():
        if np.shape(other) != table.shape:
            raise ValueError(
                f"secondary metric {name!r} has shape {np.shape(other)}, expected {table.shape}"
            )
    loo = nested_loo(table, effective, units)
    return decide_from_loo(loo, secondary, multiplier=multiplier, min_delta=min_delta)


# --------------------------------------------------------------------------- report helpers


@dataclass(frozen=True)
class QueryImpact:
    """Per-query change of the primary metric, refit vs default, over all usable queries."""

    improved: int
    degraded: int
    worst_delta: float
    #: row of the first query attaining ``worst_delta`` (None when nothing degraded)
    worst_query: int | None
    deltas: tuple[float, ...]


def per_query_impact(ndcg5: FloatArray, refit: int) -> QueryImpact:
    table = np.asarray(ndcg5, dtype=np.float64)
    deltas = [float(v) for v in table[:, refit] - table[:, DEFAULT_INDEX]]
    improved = sum(1 for d in deltas if d > EPS_TIE)
    degraded = sum(1 for d in deltas if d < -EPS_TIE)
    worst = 0.0
    worst_query: int | None = None
    for row, d in enumerate(deltas):
        if d < -EPS_TIE and d < worst:
            worst, worst_query = d, row
    return QueryImpact(improved, degraded, worst, worst_query, tuple(deltas))


def phase_w_ranking(
    ndcg5: FloatArray, rows: Sequence[int], top: int = 5, chosen: int | None = None
) -> list[tuple[int, float]]:
    """The best weight triples at k=60 by mean score (ties keep grid order).

    ``chosen`` (any condition: its weight triple at k=60 is meant) is the triple
    Phase W picked: it is listed before every triple it ties with (within the
    selection's plateau tolerance) and is always among the ``top``, so the list
    never leaves out what the selection chose.
    """
    means = condition_means(np.asarray(ndcg5, dtype=np.float64), rows)
    ranked = sorted(PHASE_W_COLUMNS, key=lambda c: -float(means[c]))
    if chosen is not None:
        pick = (chosen // N_K) * N_K + DEFAULT_K_INDEX
        ranked.remove(pick)
        at = sum(1 for c in ranked if means[c] > means[pick] + EPS_PLATEAU)
        ranked.insert(min(at, top - 1), pick)
    return [(c, float(means[c])) for c in ranked[:top]]


def phase_k_sweep(ndcg5: FloatArray, rows: Sequence[int], at: int) -> list[tuple[int, float]]:
    """The six k values at the weights of condition ``at``, k ascending."""
    means = condition_means(np.asarray(ndcg5, dtype=np.float64), rows)
    base = (at // N_K) * N_K
    return [(c, float(means[c])) for c in range(base, base + N_K)]
