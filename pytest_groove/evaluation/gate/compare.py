"""Comparing a run with its baseline: compatibility, deltas, regressions, the gate.

Two runs are *compatible* when their fingerprints are equal; only then are deltas
shown and the gate applied.  The corpus is deliberately outside that test: a KB
normally grows, and refusing to compare after every added note would make the gate
inert exactly when it matters; a change is reported instead (:func:`corpus_change`).

A metric *regressed* when ``previous - now > threshold`` (strictly, computed in that
order, so 0.80 -> 0.75 is a regression at 0.05 and 0.70 -> 0.65 is not); a pair with
a non-finite value is never a regression.  The threshold may differ per metric
(:class:`~pytest_groove.scoring.thresholds.Thresholds`); a single query's rank metric
uses the aggregate's threshold.  Every metric is read through that table.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TextIO

from pytest_groove.evaluation.runs.fingerprint import differing_keys
from pytest_groove.evaluation.runs.gate_record import Loosened
from pytest_groove.evaluation.runs.record import Fingerprint, QueryResult, RunRecord
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.metric_table import (
    OPTIONAL_KINDS,
    RECALL,
    AggregateLike,
    Metric,
    measured,
)
from pytest_groove.scoring.metrics import FALLBACK_K, aggregate, is_miss
from pytest_groove.scoring.records import ExpectedEntry, question_key
from pytest_groove.scoring.significance import PValues, paired_p_values
from pytest_groove.scoring.thresholds import Thresholds, as_thresholds

GOLDEN_CHANGED = "golden changed since last run"
CONFIG_CHANGED = "config or metric version changed since last run"
#: a |delta| below this is shown as unchanged
UNCHANGED_EPSILON = 1e-9

GREEN = "\x1b[32m"
RED = "\x1b[31m"
GRAY = "\x1b[90m"
RESET = "\x1b[0m"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class AggregateDiff:
    """``now - previous`` for every k of the current run (a missing previous k is 0.0)."""

    recall_at_k: dict[int, float]
    mrr: float
    ndcg_at_k: dict[int, float]
    #: the optional metrics the current run measures (None when it does not)
    precision_at_k: dict[int, float] | None = None
    hit_rate_at_k: dict[int, float] | None = None
    map: float | None = None
    r_precision: float | None = None


@dataclass(frozen=True)
class QueryDelta:
    """One query's row: recall at the largest k, now and in the baseline."""

    id: str
    k: int
    now: float
    #: None when there is no compatible baseline or it has no query with this id
    previous: float | None
    #: nothing expected was retrieved within the largest k
    miss: bool
    regressed: bool


#: at most this many ids are named per kind of golden change
_IDS_NAMED = 5


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_IDS_NAMED])
    return shown + (f" and {len(ids) - _IDS_NAMED} more" if len(ids) > _IDS_NAMED else "")


@dataclass(frozen=True)
class GoldenChanges:
    """The golden set against the accepted one."""

    #: queries this run has and the baseline does not (by id)
    added: tuple[str, ...] = ()
    #: accepted queries this run no longer has
    removed: tuple[str, ...] = ()
    #: ids in both whose text or expected entries changed
    edited: tuple[str, ...] = ()
    #: queries compared with their accepted counterpart
    paired: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.edited)

    def describe(self) -> str:
        """``1 added (new-q), 1 edited (ship-days); the gate compares the 20 paired
        queries``, or empty when nothing changed."""
        parts = [
            f"{len(ids)} {what} ({_named(ids)})"
            for what, ids in (
                ("added", self.added),
                ("removed", self.removed),
                ("edited", self.edited),
            )
            if ids
        ]
        if not parts:
            return ""
        return f"{', '.join(parts)}; the gate compares the {self.paired} paired queries"


@dataclass(frozen=True)
class Comparison:
    """What a run is compared with and what came of it."""

    run: RunRecord
    #: the run shown as "previous": the compatible baseline, else the newest stored
    #: run (incompatible, shown only to say why there is no diff), else None
    baseline: RunRecord | None
    compatible: bool
    #: GOLDEN_CHANGED / CONFIG_CHANGED when a baseline exists but is incompatible
    reason: str | None
    diff: AggregateDiff | None
    #: one row per query of the run, in run order
    queries: tuple[QueryDelta, ...]
    #: None = cannot tell (no baseline, or one side recorded no corpus)
    corpus_changed: bool | None
    corpus_phrase: str | None
    #: aggregate metrics that regressed by more than their threshold
    regressions: tuple[str, ...]
    #: the threshold of every metric not named in ``thresholds``
    threshold: float
    thresholds: Thresholds | None = None
    #: the sign-flip test's p-value of every delta (None when there is no diff)
    p_values: PValues | None = None
    #: settings of this run's gate looser than the baseline run's (set by finish)
    gate_loosened: tuple[Loosened, ...] = ()
    #: compared across golden and settings changes (:mod:`.accepted`: the accepted
    #: baseline, or ``groove history diff`` of two runs with other settings)
    across_changes: bool = False
    #: across changes: the golden queries added, removed, edited
    golden: GoldenChanges | None = None
    #: across changes: each setting that differs, ``name old -> new``
    settings_changes: tuple[str, ...] = ()
    #: across changes: metrics only one side measures (left out)
    left_out: tuple[str, ...] = ()

    @property
    def limits(self) -> Thresholds:
        """The per-metric thresholds this comparison applied."""
        return self.thresholds if self.thresholds is not None else Thresholds(self.threshold)


# --------------------------------------------------------------------------- helpers


def regressed(previous: float, now: float, threshold: float) -> bool:
    """``previous - now > threshold``, never true for a non-finite pair."""
    if not (math.isfinite(previous) and math.isfinite(now)):
        return False
    return previous - now > threshold


def _short(value: object) -> str:
    text = "none" if value is None else str(value)
    return text if len(text) <= 24 else text[:12] + "…" + text[-6:]


def fingerprint_difference(
    now: Fingerprint, stored: Fingerprint, labels: tuple[str, str] = ("this run", "that run")
) -> str:
    """What differs between two fingerprints, for people: ``model: hash (that run)
    vs e5-small (this run)``, every differing key, ``; ``-separated (``labels``: how
    ``now`` and ``stored`` are called)."""
    now_label, stored_label = labels
    mine, theirs = now.to_json(), stored.to_json()
    keys = list(mine) + [key for key in theirs if key not in mine]
    parts = []
    for key in keys:
        if mine.get(key) != theirs.get(key):
            label = "golden file (content hash)" if key == "golden_hash" else key
            parts.append(
                f"{label}: {_short(theirs.get(key))} ({stored_label}) vs "
                f"{_short(mine.get(key))} ({now_label})"
            )
    return "; ".join(parts) or "the settings differ"


def incompatibility(now: RunRecord, previous: RunRecord) -> str | None:
    """Why two runs cannot be compared (None = compatible)."""
    if now.fingerprint == previous.fingerprint:
        return None
    if now.fingerprint.golden_hash != previous.fingerprint.golden_hash:
        return GOLDEN_CHANGED
    return config_changed(differing_keys(now.fingerprint, previous.fingerprint))


#: at most this many differing fingerprint keys are named in the reason: enough for a
#: switch to a retriever of your own (``retriever``, ``model`` and the three keys the
#: default pipeline records: ``document_first``, ``note_order``, ``fts_coverage_vote``)
_KEYS_NAMED = 5


def config_changed(keys: Sequence[str]) -> str:
    """:data:`CONFIG_CHANGED` naming the fingerprint keys that differ, e.g.
    ``config or metric version changed since last run (retriever, model differ)``.
    """
    if not keys:
        return CONFIG_CHANGED
    named = ", ".join(keys[:_KEYS_NAMED])
    if len(keys) > _KEYS_NAMED:
        named += f" and {len(keys) - _KEYS_NAMED} more"
    return f"{CONFIG_CHANGED} ({named} differ{'s' if len(keys) == 1 else ''})"


def corpus_change(
    now: CorpusSnapshot | None, previous: CorpusSnapshot | None
) -> tuple[bool | None, str | None]:
    """(changed, phrase): changed is None when either side recorded no corpus, or when
    the counts agree and the two digests were made by different definitions (a run of
    an older version): unknown, never "changed"."""
    if now is None or previous is None:
        return None, None
    if (now.documents, now.chunks) != (previous.documents, previous.chunks):
        return True, (
            f"{previous.documents} -> {now.documents} documents, "
            f"{previous.chunks} -> {now.chunks} chunks"
        )
    if now.digest_version != previous.digest_version:
        return None, None
    if now.digest != previous.digest:
        return True, "same document and chunk counts, different contents"
    return False, None


def largest_k(k_values: Sequence[int]) -> int:
    return max(k_values) if k_values else FALLBACK_K


class QueryLike(Protocol):
    """What identifies a golden query: a :class:`GoldenQuery` or a :class:`QueryResult`."""

    @property
    def id(self) -> str: ...

    @property
    def query(self) -> str: ...

    @property
    def expected(self) -> tuple[ExpectedEntry, ...]: ...


def query_key(query: QueryLike) -> tuple[str, str, tuple[ExpectedEntry, ...]]:
    """The identity a query keeps from run to run: its id, text and expected list.

    The id alone is not enough: a derived id is only the first 32 code points of
    the text, so two queries sharing that prefix share it.
    """
    return (query.id, query.query, tuple(query.expected))


def match_queries(
    queries: Sequence[QueryLike | str], previous: RunRecord
) -> list[QueryResult | None]:
    """Each query's counterpart in ``previous`` (None = it has none).

    The one pairing rule of the comparison, the per-item regression check and the
    subset projection: a query pairs with a previous query that has the same id,
    text and expected list (:func:`query_key`); the n-th query with a given key
    pairs with the n-th previous query with that key, so exact duplicates keep
    their order.  A bare id (``str``, for callers that only have ids) pairs by id
    and position among the queries with that id, which is exact for a whole run
    but can miss for a subset whose ids collide.
    """
    by_key: dict[tuple[str, str, tuple[ExpectedEntry, ...]], deque[QueryResult]] = {}
    by_id: dict[str, deque[QueryResult]] = {}
    for result in previous.per_query:
        by_key.setdefault(query_key(result), deque()).append(result)
        by_id.setdefault(result.id, deque()).append(result)
    paired: list[QueryResult | None] = []
    for query in queries:
        queue = by_id.get(query) if isinstance(query, str) else by_key.get(query_key(query))
        paired.append(queue.popleft() if queue else None)
    return paired


def find_query(run: RunRecord, query: QueryLike | str) -> QueryResult | None:
    """``query``'s counterpart in ``run`` (:func:`match_queries` for one query)."""
    return match_queries([query], run)[0]


def _map_diff(now: Mapping[int, float], previous: Mapping[int, float]) -> dict[int, float]:
    return {k: value - previous.get(k, 0.0) for k, value in now.items()}


def aggregate_diff(now: AggregateLike, previous: AggregateLike) -> AggregateDiff:
    return AggregateDiff(
        recall_at_k=_map_diff(now.recall_at_k, previous.recall_at_k),
        mrr=now.mrr - previous.mrr,
        ndcg_at_k=_map_diff(now.ndcg_at_k, previous.ndcg_at_k),
        **_optional_diff(now, previous),
    )


def _optional_diff(now: AggregateLike, previous: AggregateLike) -> dict[str, Any]:
    """The optional metrics' differences, for those the current run measures."""
    out: dict[str, Any] = {}
    for kind in OPTIONAL_KINDS.values():
        found, before = kind.of_aggregate(now), kind.of_aggregate(previous)
        if isinstance(found, Mapping):
            out[kind.json_key] = _map_diff(found, before if isinstance(before, Mapping) else {})
        elif found is not None:
            out[kind.json_key] = found - (before if isinstance(before, float) else 0.0)
    return out


def _regressed_names(
    metrics: Sequence[Metric],
    previous: Callable[[Metric], float],
    now: Callable[[Metric], float],
    label: Callable[[Metric], str],
    threshold: Thresholds,
) -> list[str]:
    """Labels of the metrics that regressed from ``previous`` to ``now``.

    The one rule for aggregates and single queries alike: every metric of the
    current side in report order (:func:`.metric_table.measured`: each kind of the
    table at each k, ascending); a k the previous side lacks counts as 0.0.
    """
    return [
        label(metric)
        for metric in metrics
        if regressed(previous(metric), now(metric), threshold.for_metric(metric.threshold_key))
    ]


def aggregate_regressions(
    run: RunRecord, baseline: RunRecord, threshold: Thresholds
) -> tuple[str, ...]:
    now, prev = run.aggregate, baseline.aggregate
    names = _regressed_names(
        measured(lambda kind: kind.of_aggregate(now)),
        lambda metric: metric.of_aggregate(prev),
        lambda metric: metric.of_aggregate(now),
        lambda metric: metric.label,
        threshold,
    )
    return tuple(names)


def query_regressed(
    current: QueryResult, previous: QueryResult | None, threshold: float | Thresholds
) -> list[str]:
    """Metrics of one query that dropped by more than ``threshold`` since ``previous``.

    Used by the pytest plugin to fail a query's item under
    ``--groove-fail-on-regression``: every metric of the current query, named as the
    per-query regression message names them.  Empty when there is nothing to compare
    with.
    """
    if previous is None:
        return []
    now, prev = current.metrics, previous.metrics
    return _regressed_names(
        measured(lambda kind: kind.of_query(now)),
        lambda metric: metric.of_query(prev),
        lambda metric: metric.of_query(now),
        lambda metric: metric.query_regression_label,
        as_thresholds(threshold),
    )


def query_rows(
    run: RunRecord, baseline: RunRecord | None, thresholds: Thresholds
) -> tuple[QueryDelta, ...]:
    k_values = run.fingerprint.k_values
    k = largest_k(k_values)
    threshold = thresholds.for_metric(Metric(RECALL, k).threshold_key)
    paired = (
        [None] * len(run.per_query) if baseline is None else match_queries(run.per_query, baseline)
    )
    rows = []
    for result, before in zip(run.per_query, paired, strict=True):
        now = result.metrics.recall_at_k.get(k, 0.0)
        previous = None if before is None else before.metrics.recall_at_k.get(k, 0.0)
        rows.append(
            QueryDelta(
                id=result.id,
                k=k,
                now=now,
                previous=previous,
                miss=is_miss(result.metrics, k_values),
                regressed=previous is not None and regressed(previous, now, threshold),
            )
        )
    return tuple(rows)


# --------------------------------------------------------------------------- compare


def project_baseline(baseline: RunRecord, queries: Sequence[QueryLike | str]) -> RunRecord:
    """The baseline restricted to these queries (paired by :func:`match_queries`),
    re-aggregated.

    A run of a subset of the golden set is compared with what the same queries
    scored in the baseline, not with the whole baseline's averages.  Pass the
    subset's results (not bare ids) so queries sharing a derived id pair exactly.
    """
    picked = [q for q in match_queries(queries, baseline) if q is not None]
    return replace(
        baseline,
        per_query=tuple(picked),
        aggregate=aggregate([q.metrics for q in picked]),
    )


def compare(
    run: RunRecord, baseline: RunRecord | None, threshold: float | Thresholds
) -> Comparison:
    """Compare ``run`` with ``baseline`` (the chosen previous run, compatible or not)."""
    thresholds = as_thresholds(threshold)
    changed, phrase = corpus_change(run.corpus, None if baseline is None else baseline.corpus)
    reason = None if baseline is None else incompatibility(run, baseline)
    compatible = baseline is not None and reason is None
    diff = None
    regressions: tuple[str, ...] = ()
    p_values = None
    if compatible and baseline is not None:
        diff = aggregate_diff(run.aggregate, baseline.aggregate)
        regressions = aggregate_regressions(run, baseline, thresholds)
        p_values = run_p_values(run, baseline)
    return Comparison(
        run=run,
        baseline=baseline,
        compatible=compatible,
        reason=reason,
        diff=diff,
        queries=query_rows(run, baseline if compatible else None, thresholds),
        corpus_changed=changed,
        corpus_phrase=phrase,
        regressions=regressions,
        threshold=thresholds.default,
        thresholds=thresholds,
        p_values=p_values,
    )


def run_p_values(run: RunRecord, baseline: RunRecord) -> PValues:
    """The paired test over the queries both runs have (:func:`match_queries`)."""
    paired = match_queries(run.per_query, baseline)
    matched = [(q, b) for q, b in zip(run.per_query, paired, strict=True) if b]
    pairs = [(q.metrics, b.metrics) for q, b in matched]
    # copies of one question are one observation of the test
    units = [question_key(q.query) for q, _ in matched]
    return paired_p_values(pairs, run.fingerprint.k_values, units)


def gate_failures(comparison: Comparison, threshold: float | Thresholds | None = None) -> list[str]:
    """Aggregate metrics that regressed by more than the threshold (the CI gate).

    That is :attr:`Comparison.regressions`, computed once by :func:`compare`; it is
    empty when there is no compatible baseline, so the gate is a no-op then.  Only
    a ``threshold`` other than the comparison's asks for the same rule again.
    """
    if threshold is None or as_thresholds(threshold) == comparison.limits:
        return list(comparison.regressions)
    if not comparison.compatible or comparison.baseline is None:
        return []
    return list(
        aggregate_regressions(comparison.run, comparison.baseline, as_thresholds(threshold))
    )


# --------------------------------------------------------------------------- display


def color_enabled(no_color: bool, stream: TextIO | None) -> bool:
    """ANSI colour only on a terminal, and never with --no-color or NO_COLOR set."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def format_delta(delta: float, threshold: float, color: bool) -> str:
    """The suffix after a metric value: ``  (↑ 0.200)``, ``  (↓ 0.010)``, ``  (—)``.

    The value before it is already padded to one width, so the marker is not padded
    again: ``(—)`` and ``(n/a)`` hug their text instead of ending in a run of blanks.
    """
    if not math.isfinite(delta):
        return "  (n/a)"
    if abs(delta) < UNCHANGED_EPSILON:
        return "  (—)"
    body = f"{'↑' if delta > 0 else '↓'} {abs(delta):.3f}"
    if color:
        if delta > threshold:
            code = GREEN
        elif delta < -threshold:
            code = RED
        else:
            code = GRAY
        body = f"{code}{body}{RESET}"
    return f"  ({body})"
