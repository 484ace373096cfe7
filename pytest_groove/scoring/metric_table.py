"""The metric table: every retrieval metric declared once, with all its names.

Each :class:`MetricKind` says what a metric is called wherever it appears — the
reports' label (``recall@5``, ``MRR``, ``nDCG@10``), a per-query row's label
(``RR``), the per-query regression message (``reciprocal rank``), the threshold
spelling (``recall@5``, ``mrr``, ``ndcg@10``), the JSON keys, the JUnit property
— and how to read its value from one query's :class:`QueryMetrics` or from an
aggregate.  Comparison, thresholds, the reports, ``groove history`` and ``groove
tune`` iterate :data:`METRIC_KINDS` instead of spelling the metrics by hand, so a
new metric is one entry here plus its formula in :mod:`.metrics`.  An *optional*
kind (precision@k, hit rate@k, MAP, R-precision) is measured only when the run asks
for it (``[eval] metrics``); an object that does not measure it gives None, and
everything that iterates the table leaves it out, so default reports are unchanged.

The rank metric is ``rr`` per query and ``mrr`` aggregated (the mean of ``rr``);
the labels users read are the ones the reports have always printed.

Labels with a ``{k}`` placeholder belong to metrics measured at every cut-off k;
:class:`Metric` is one kind at one k (or at none), the unit every consumer handles.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from pytest_groove.scoring.metrics import QueryMetrics

#: the k a threshold name may carry: 1 to 9999, no leading zero
_K = r"[1-9][0-9]{0,3}"


class AggregateLike(Protocol):
    """Aggregate metrics, or a difference of two (``compare.AggregateDiff``)."""

    @property
    def recall_at_k(self) -> Mapping[int, float]: ...

    @property
    def mrr(self) -> float: ...

    @property
    def ndcg_at_k(self) -> Mapping[int, float]: ...


#: a metric's value on one object: a map keyed by k, or one number; None when the
#: object does not measure it (an optional metric the run was not asked for)
Values: TypeAlias = Mapping[int, float] | float | None


@dataclass(frozen=True)
class MetricKind:
    """One metric and every name it goes by (``{k}`` is replaced by the cut-off)."""

    #: the name in code: ``recall``, ``rr`` (aggregated: ``mrr``), ``ndcg``
    key: str
    #: measured at every k of the run (labels carry ``{k}``) or once per query
    per_k: bool
    #: aggregate label in the text, HTML and history reports and in regressions
    label: str
    #: a single query's label (the HTML table column, the failed item's metric line)
    query_label: str
    #: a single query's name in the per-query regression message
    query_regression_label: str
    #: the spelling ``--groove-regression-threshold`` and ``[eval]`` take
    threshold: str
    #: key of the aggregate JSON object (history, ``--format json``)
    json_key: str
    #: key of a query's JSON metrics object; equal to the QueryMetrics field name
    query_json_key: str
    #: JUnit ``<property>`` name of a query's value
    junit: str
    #: summaries (the text report, ``groove history list``, a failed item) show only
    #: the largest k of this metric rather than every k
    summary_largest_k_only: bool
    #: the query's value(s): a k-map for a per-k metric, else one number
    of_query: Callable[[QueryMetrics], Values] = field(repr=False)
    #: the aggregate's value(s), same shape as :attr:`of_query`
    of_aggregate: Callable[[AggregateLike], Values] = field(repr=False)
    #: measured only when ``[eval] metrics`` / ``--groove-metrics`` names :attr:`key`
    optional: bool = False

    def names(self) -> tuple[str, ...]:
        """Every spelling of this kind, lower case, ``{k}`` unreplaced."""
        spellings = (self.threshold, self.label, self.query_label, self.query_regression_label)
        return tuple(dict.fromkeys(name.lower() for name in spellings))


RECALL = MetricKind(
    key="recall",
    per_k=True,
    label="recall@{k}",
    query_label="recall@{k}",
    query_regression_label="recall@{k}",
    threshold="recall@{k}",
    json_key="recall_at_k",
    query_json_key="recall_at_k",
    junit="groove.recall@{k}",
    summary_largest_k_only=False,
    of_query=lambda m: m.recall_at_k,
    of_aggregate=lambda a: a.recall_at_k,
)
RR = MetricKind(
    key="rr",
    per_k=False,
    label="MRR",
    query_label="RR",
    query_regression_label="reciprocal rank",
    threshold="mrr",
    json_key="mrr",
    query_json_key="reciprocal_rank",
    junit="groove.reciprocal_rank",
    summary_largest_k_only=False,
    of_query=lambda m: m.reciprocal_rank,
    of_aggregate=lambda a: a.mrr,
)
NDCG = MetricKind(
    key="ndcg",
    per_k=True,
    label="nDCG@{k}",
    query_label="nDCG@{k}",
    query_regression_label="nDCG@{k}",
    threshold="ndcg@{k}",
    json_key="ndcg_at_k",
    query_json_key="ndcg_at_k",
    junit="groove.ndcg@{k}",
    summary_largest_k_only=True,
    of_query=lambda m: m.ndcg_at_k,
    of_aggregate=lambda a: a.ndcg_at_k,
)

# The optional metrics (formulas in .metrics).  Their aggregates are read with getattr:
# a difference of two aggregates (compare.AggregateDiff) may not carry them.
PRECISION = MetricKind(
    key="precision",
    per_k=True,
    label="P@{k}",
    query_label="P@{k}",
    query_regression_label="precision@{k}",
    threshold="precision@{k}",
    json_key="precision_at_k",
    query_json_key="precision_at_k",
    junit="groove.precision@{k}",
    summary_largest_k_only=True,
    of_query=lambda m: m.precision_at_k,
    of_aggregate=lambda a: getattr(a, "precision_at_k", None),
    optional=True,
)
HIT_RATE = MetricKind(
    key="hit_rate",
    per_k=True,
    label="success@{k}",
    query_label="success@{k}",
    query_regression_label="hit rate@{k}",
    threshold="hit_rate@{k}",
    json_key="hit_rate_at_k",
    query_json_key="hit_rate_at_k",
    junit="groove.hit_rate@{k}",
    summary_largest_k_only=True,
    of_query=lambda m: m.hit_rate_at_k,
    of_aggregate=lambda a: getattr(a, "hit_rate_at_k", None),
    optional=True,
)
MAP = MetricKind(
    key="map",
    per_k=False,
    label="MAP",
    query_label="AP",
    query_regression_label="average precision",
    threshold="map",
    json_key="map",
    query_json_key="average_precision",
    junit="groove.average_precision",
    summary_largest_k_only=False,
    of_query=lambda m: m.average_precision,
    of_aggregate=lambda a: getattr(a, "map", None),
    optional=True,
)
R_PRECISION = MetricKind(
    key="r_precision",
    per_k=False,
    label="R-prec",
    query_label="R-prec",
    query_regression_label="R-precision",
    threshold="r_precision",
    json_key="r_precision",
    query_json_key="r_precision",
    junit="groove.r_precision",
    summary_largest_k_only=False,
    of_query=lambda m: m.r_precision,
    of_aggregate=lambda a: getattr(a, "r_precision", None),
    optional=True,
)

#: every metric, in report order
METRIC_KINDS: tuple[MetricKind, ...] = (RECALL, RR, NDCG, PRECISION, HIT_RATE, MAP, R_PRECISION)

#: the optional kinds by their key (the names ``[eval] metrics`` takes)
OPTIONAL_KINDS: dict[str, MetricKind] = {kind.key: kind for kind in METRIC_KINDS if kind.optional}


def _chosen(kind: MetricKind, optional: Collection[str]) -> bool:
    return not kind.optional or kind.key in optional


def _pick(values: Values, k: int | None) -> float:
    if values is None:
        # a metric the object does not measure counts as 0.0, like a missing k
        return 0.0
    if isinstance(values, Mapping):
        # a k the object lacks counts as 0.0 (a baseline measured at fewer k)
        return values.get(k, 0.0) if k is not None else 0.0
    return values


@dataclass(frozen=True)
class Metric:
    """One kind at one cut-off (``k`` is None for a metric without one)."""

    kind: MetricKind
    k: int | None = None

    def _fill(self, template: str) -> str:
        return template.format(k=self.k)

    @property
    def label(self) -> str:
        return self._fill(self.kind.label)

    @property
    def query_label(self) -> str:
        return self._fill(self.kind.query_label)

    @property
    def query_regression_label(self) -> str:
        return self._fill(self.kind.query_regression_label)

    @property
    def threshold_key(self) -> str:
        return self._fill(self.kind.threshold)

    @property
    def junit(self) -> str:
        return self._fill(self.kind.junit)

    def of_query(self, metrics: QueryMetrics) -> float:
        return _pick(self.kind.of_query(metrics), self.k)

    def of_aggregate(self, metrics: AggregateLike) -> float:
        return _pick(self.kind.of_aggregate(metrics), self.k)


def all_metrics(k_values: Sequence[int], optional: Collection[str] = ()) -> list[Metric]:
    """Every metric at every k, in report order: recall@k..., MRR, nDCG@k..., then the
    ``optional`` kinds asked for (keys of :data:`OPTIONAL_KINDS`)."""
    return [
        Metric(kind, k)
        for kind in METRIC_KINDS
        if _chosen(kind, optional)
        for k in (k_values if kind.per_k else (None,))
    ]


def measured(values: Callable[[MetricKind], Values]) -> list[Metric]:
    """The metrics an object holds, in report order; a per-k kind at each k of its map.

    ``values`` reads a kind's value(s) from the object, e.g. ``lambda kind:
    kind.of_query(metrics)``.
    """
    out: list[Metric] = []
    for kind in METRIC_KINDS:
        found = values(kind)
        if found is None:
            continue
        if isinstance(found, Mapping):
            out.extend(Metric(kind, k) for k in sorted(found))
        else:
            out.append(Metric(kind))
    return out


def summary_metrics(k_values: Sequence[int], optional: Collection[str] = ()) -> list[Metric]:
    """The short list summaries show: recall at every k, MRR, nDCG at the largest k,
    then the ``optional`` kinds asked for (a per-k one at the largest k).

    A kind shown at its largest k only is left out when there is no k at all.
    """
    out: list[Metric] = []
    for kind in METRIC_KINDS:
        if not _chosen(kind, optional):
            continue
        if not kind.per_k:
            out.append(Metric(kind))
        elif kind.summary_largest_k_only:
            if k_values:
                out.append(Metric(kind, max(k_values)))
        else:
            out.extend(Metric(kind, k) for k in k_values)
    return out


def _name_pattern(kind: MetricKind) -> re.Pattern[str]:
    names = "|".join(re.escape(name).replace(re.escape("{k}"), f"({_K})") for name in kind.names())
    return re.compile(names)


_PATTERNS = tuple((kind, _name_pattern(kind)) for kind in METRIC_KINDS)


def parse_metric(name: str) -> Metric | None:
    """The metric a user or a report names, or None.

    Any spelling of the table is accepted, in any case and with outer spaces:
    ``recall@5``, ``mrr``, ``MRR``, ``reciprocal rank``, ``RR``, ``ndcg@10``,
    ``nDCG@10``.  A per-k metric needs its k (1 to 9999).
    """
    text = name.strip().lower()
    for kind, pattern in _PATTERNS:
        match = pattern.fullmatch(text)
        if match is not None:
            found = next((group for group in match.groups() if group is not None), None)
            return Metric(kind, None if found is None else int(found))
    return None


def unasked_optional(keys: Iterable[str], metrics: Collection[str]) -> list[str]:
    """The ``keys`` (threshold or floor spellings) naming an optional metric that
    ``metrics`` (the run's ``--metrics`` keys) does not ask for: they could never apply."""
    return [
        key
        for key in keys
        if (metric := parse_metric(key)) is not None
        and metric.kind.optional
        and metric.kind.key not in metrics
    ]


def _example() -> str:
    per_k = next(kind for kind in METRIC_KINDS if kind.per_k)
    single = next(kind for kind in METRIC_KINDS if not kind.per_k)
    return f"{Metric(per_k, 5).threshold_key}=0.02,{Metric(single).threshold_key}=0.05"


def metric_names_hint() -> str:
    """``recall@K, mrr or ndcg@K`` — the threshold spellings, for error messages."""
    names = [kind.threshold.replace("{k}", "K") for kind in METRIC_KINDS if not kind.optional]
    return ", ".join(names[:-1]) + " or " + names[-1]


#: a per-metric threshold specification, for help texts and messages
THRESHOLD_EXAMPLE = _example()


# --------------------------------------------------------------------------- door helpers


def metric_value(metrics: QueryMetrics, name: str) -> float:
    """One query's value of the metric ``name`` (any spelling :func:`parse_metric` takes).

    Raises ValueError for a name that is no metric.
    """
    metric = parse_metric(name)
    if metric is None:
        raise ValueError(f"unknown metric {name!r}")
    return metric.of_query(metrics)


def _measured_keys(metrics: QueryMetrics) -> tuple[str, ...]:
    return tuple(key for key, kind in OPTIONAL_KINDS.items() if kind.of_query(metrics) is not None)


def junit_properties(metrics: QueryMetrics, k_values: Sequence[int]) -> list[tuple[str, str]]:
    """A query's metrics as JUnit ``<properties>``: ``groove.recall@5`` = ``0.5000``, ..."""
    chosen = all_metrics(k_values, _measured_keys(metrics))
    return [(m.junit, f"{m.of_query(metrics):.4f}") for m in chosen]


def query_summary(metrics: QueryMetrics, k_values: Sequence[int]) -> str:
    """``recall@1 0.00  recall@5 1.00  RR 0.50  nDCG@5 0.63`` (a failed item's metrics)."""
    return "  ".join(
        f"{m.query_label} {m.of_query(metrics):.2f}"
        for m in summary_metrics(k_values, _measured_keys(metrics))
    )


def aggregate_summary(metrics: AggregateLike, k_values: Sequence[int]) -> str:
    """``recall@1 0.250  MRR 0.500  nDCG@10 0.460`` (``groove history list``)."""
    chosen = [key for key, kind in OPTIONAL_KINDS.items() if kind.of_aggregate(metrics) is not None]
    return "  ".join(
        f"{m.label} {m.of_aggregate(metrics):.3f}" for m in summary_metrics(k_values, chosen)
    )


# --------------------------------------------------------------------------- JSON


def _finite(value: float) -> float | None:
    """Strict JSON has no NaN or Infinity: they are written as null."""
    return value if math.isfinite(value) else None


def values_to_json(values: Values) -> dict[str, float | None] | float | None:
    """A k-map as ``{"1": .., "5": .., "10": ..}`` (numeric order), a number as itself."""
    if values is None:
        return None
    if isinstance(values, Mapping):
        return {str(k): _finite(values[k]) for k in sorted(values)}
    return _finite(values)


def aggregate_metrics_to_json(metrics: AggregateLike) -> dict[str, object]:
    """``{"recall_at_k": {...}, "mrr": .., "ndcg_at_k": {...}}`` in table order."""
    return {
        kind.json_key: values_to_json(found)
        for kind in METRIC_KINDS
        if (found := kind.of_aggregate(metrics)) is not None
    }
