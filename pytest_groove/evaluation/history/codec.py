"""The compact JSON form of a stored run (history format 2).

The history is meant to be committed, so a run is stored with only what the
diff, the per-query verdicts and the reports need, and without repetition:

- every path and heading a run mentions is written once, in the run's ``paths``
  and ``headings`` tables; expected entries and hits refer to them by index
  (a heading of ``null`` stays ``null``);
- a hit is ``[path, heading, score]``; its rank is its position (1-based), and a
  query whose stored ranks are not ``1..n`` keeps them in ``ranks``;
- a query's metrics are ``[[recall at each k], reciprocal rank, [nDCG at each k]]`` in the
  order of the run's ``metric_k`` list; a query whose k values differ keeps the
  keyed form of format 1, and so does a query with optional metrics (``[eval] metrics``);
- an expected entry is ``[path, heading]``, or ``[path, heading, grade]`` when its grade
  is not 1;
- scores are written with the fewest digits that read back to the same value.
  Search scores are 32-bit floats, so when every score of a run is one
  (``"scores": "float32"``), nine significant digits at most restore it exactly.

Everything else (timestamp, fingerprint, corpus, aggregate, findings) keeps the
format-1 shape of :mod:`pytest_groove.evaluation.runs.record`.  Decoding is as strict as
format 1: anything out of shape raises
:class:`~pytest_groove.evaluation.runs.record.RecordFormatError` naming where.
Encoding then decoding gives back an equal :class:`RunRecord` (lossless).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.evaluation.runs.record import (
    Finding,
    Fingerprint,
    QueryResult,
    RunRecord,
    TopHit,
    aggregate_from_json,
    aggregate_to_json,
    corpus_from_json,
    corpus_to_json,
    format_timestamp,
    metrics_from_json,
    metrics_to_json,
    parse_timestamp,
)
from pytest_groove.evaluation.runs.stored import LazyTuple
from pytest_groove.evaluation.runs.trust import stamp, was_edited
from pytest_groove.scoring.metrics import QueryMetrics
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.shapes import (
    finite_or_none,
    read_int,
    read_items,
    read_list,
    read_object,
    read_stored_float,
    read_str,
    require,
    shape_error,
    where,
)

#: marks a run whose scores are all 32-bit floats written in their shortest form
FLOAT32 = "float32"


# --------------------------------------------------------------------------- numbers


def _as_float32(value: float) -> float | None:
    """``value`` rounded to a 32-bit float, None when it does not fit one."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except (OverflowError, struct.error):
        return None


def _is_float32(value: float) -> bool:
    return not math.isfinite(value) or _as_float32(value) == value


def _short_float32(value: float) -> float | None:
    """The shortest decimal that reads back (as float32) to ``value``; None for NaN/inf."""
    if not math.isfinite(value):
        return None
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if _as_float32(candidate) == value:
            return candidate
    return value  # unreachable for a float32 value: nine digits always restore it


# --------------------------------------------------------------------------- encoding


class _Table:
    """Strings in first-seen order, each written once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found

    def opt_ref(self, text: str | None) -> int | None:
        return None if text is None else self.ref(text)


#: the keys of a query's metrics when only the default three are measured
_DEFAULT_METRIC_KEYS = frozenset({"recall_at_k", "reciprocal_rank", "ndcg_at_k"})


def _metrics_out(metrics: QueryMetrics, metric_k: Sequence[int]) -> Any:
    keys = list(metric_k)
    if sorted(metrics.recall_at_k) != keys or sorted(metrics.ndcg_at_k) != keys:
        return metrics_to_json(metrics)  # unusual k values: the keyed form
    if metrics_to_json(metrics).keys() - _DEFAULT_METRIC_KEYS:
        return metrics_to_json(metrics)  # optional metrics: the keyed form holds them
    return [
        [finite_or_none(metrics.recall_at_k[k]) for k in keys],
        finite_or_none(metrics.reciprocal_rank),
        [finite_or_none(metrics.ndcg_at_k[k]) for k in keys],
    ]


def encode_run(run: RunRecord) -> dict[str, Any]:
    """The compact JSON object of one run (see the module docstring)."""
    paths, headings = _Table(), _Table()
    float32 = all(_is_float32(hit.score) for q in run.per_query for hit in q.top_k)
    metric_k = sorted(run.per_query[0].metrics.recall_at_k) if run.per_query else []

    def score(value: float) -> float | None:
        return _short_float32(value) if float32 else finite_or_none(value)

    queries = []
    for result in run.per_query:
        entry: dict[str, Any] = {
            "id": result.id,
            "query": result.query,
            "expected": [
                [paths.ref(e.path), headings.opt_ref(e.heading)]
                + ([e.grade] if e.grade != 1 else [])
                for e in result.expected
            ],
            "hits": [
                [paths.ref(h.path), headings.opt_ref(h.heading), score(h.score)]
                for h in result.top_k
            ],
        }
        ranks = [h.rank for h in result.top_k]
        if ranks != list(range(1, len(ranks) + 1)):
            entry["ranks"] = ranks
        entry["metrics"] = _metrics_out(result.metrics, metric_k)
        queries.append(entry)

    out: dict[str, Any] = {
        "timestamp": format_timestamp(run.timestamp),
        "fingerprint": run.fingerprint.to_json(),
    }
    if run.corpus is not None:
        out["corpus"] = corpus_to_json(run.corpus)
    out["aggregate"] = aggregate_to_json(run.aggregate)
    if float32:
        out["scores"] = FLOAT32
    out["metric_k"] = metric_k
    out["paths"] = paths.items
    out["headings"] = headings.items
    out["queries"] = queries
    if run.findings:
        out["findings"] = [f.to_json() for f in run.findings]
    if run.gate is not None:
        out["gate"] = run.gate.to_json()
    return stamp(out, run.edited)


# --------------------------------------------------------------------------- decoding


def _lookup(table: list[str], value: Any, path: str, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    index = read_int(value, path)
    if not 0 <= index < len(table):
        raise shape_error(path, f"{index} is not an index into the run's table")
    return table[index]


def _metrics_in(raw: Any, metric_k: list[int], path: str) -> QueryMetrics:
    if isinstance(raw, dict):
        return metrics_from_json(raw, path)
    parts = read_list(raw, path)
    if len(parts) != 3:
        raise shape_error(path, "expected [recall@k list, reciprocal rank, nDCG@k list]")
    recall = read_items(parts[0], where(path, 0), read_stored_float)
    ndcg = read_items(parts[2], where(path, 2), read_stored_float)
    if len(recall) != len(metric_k) or len(ndcg) != len(metric_k):
        raise shape_error(path, "one value per metric_k entry expected")
    return QueryMetrics(
        recall_at_k=dict(zip(metric_k, recall, strict=True)),
        reciprocal_rank=read_stored_float(parts[1], where(path, 1)),
        ndcg_at_k=dict(zip(metric_k, ndcg, strict=True)),
    )


def _sized(item: Any, at: str, size: int) -> list[Any]:
    parts = read_list(item, at)
    if len(parts) != size:
        raise shape_error(at, f"expected {size} values")
    return parts


def _expected_in(
    obj: dict[str, Any], path: str, paths: list[str], headings: list[str]
) -> tuple[ExpectedEntry, ...]:
    expected = []
    exp_path = where(path, "expected")
    for i, item in enumerate(read_list(require(obj, "expected", path), exp_path)):
        here = where(exp_path, i)
        graded = isinstance(item, list) and len(item) == 3
        p, h, *grade = _sized(item, here, 3 if graded else 2)
        expected.append(
            ExpectedEntry(
                path=_lookup(paths, p, where(here, 0), optional=False) or "",
                heading=_lookup(headings, h, where(here, 1), optional=True),
                grade=read_int(grade[0], where(here, 2), lo=0, hi=2**32 - 1) if grade else 1,
            )
        )
    return tuple(expected)


def _score_in(raw: Any, at: str, float32: bool) -> float:
    value = read_stored_float(raw, at)
    if float32 and math.isfinite(value):
        rounded = _as_float32(value)
        if rounded is None:
            raise shape_error(at, "not a 32-bit float")
        value = rounded
    return value


def _hits_in(
    obj: dict[str, Any], path: str, paths: list[str], headings: list[str], float32: bool
) -> tuple[TopHit, ...]:
    hits_path = where(path, "hits")
    raw_hits = read_list(require(obj, "hits", path), hits_path)
    ranks: list[int] = list(range(1, len(raw_hits) + 1))
    if "ranks" in obj:
        ranks_path = where(path, "ranks")
        ranks = read_items(obj["ranks"], ranks_path, read_int)
        if len(ranks) != len(raw_hits):
            raise shape_error(ranks_path, "expected one rank per hit")
    hits = []
    for i, item in enumerate(raw_hits):
        here = where(hits_path, i)
        p, h, s = _sized(item, here, 3)
        score = _score_in(s, where(here, 2), float32)
        hits.append(
            TopHit(
                rank=ranks[i],
                path=_lookup(paths, p, where(here, 0), optional=False) or "",
                heading=_lookup(headings, h, where(here, 1), optional=True),
                score=score,
            )
        )
    return tuple(hits)


def _query_in(
    raw: Any,
    path: str,
    paths: list[str],
    headings: list[str],
    metric_k: list[int],
    float32: bool,
) -> QueryResult:
    obj = read_object(raw, path)
    expected = _expected_in(obj, path, paths, headings)
    hits = _hits_in(obj, path, paths, headings, float32)
    return QueryResult(
        id=read_str(require(obj, "id", path), where(path, "id")),
        query=read_str(require(obj, "query", path), where(path, "query")),
        expected=expected,
        top_k=hits,
        metrics=_metrics_in(require(obj, "metrics", path), metric_k, where(path, "metrics")),
    )


def is_compact(raw: Any) -> bool:
    """A stored run in this format (``queries``) rather than format 1 (``per_query``)."""
    return isinstance(raw, dict) and "queries" in raw and "per_query" not in raw


#: a compact run's metric_k, paths and headings, and whether its scores are float32
_Tables = tuple[list[int], list[str], list[str], bool]


def _tables(obj: dict[str, Any], path: str) -> _Tables:
    """The tables the queries of a compact run refer to."""
    scores = obj.get("scores")
    if scores not in (None, FLOAT32):
        raise shape_error(where(path, "scores"), f"expected {FLOAT32!r} or nothing")
    metric_k = read_items(obj.get("metric_k", []), where(path, "metric_k"), read_int)
    paths = read_items(require(obj, "paths", path), where(path, "paths"), read_str)
    headings = read_items(require(obj, "headings", path), where(path, "headings"), read_str)
    return metric_k, paths, headings, scores == FLOAT32


def _queries(obj: dict[str, Any], path: str, tables: _Tables) -> tuple[QueryResult, ...]:
    metric_k, paths, headings, float32 = tables
    q_path = where(path, "queries")
    return tuple(
        _query_in(item, where(q_path, i), paths, headings, metric_k, float32)
        for i, item in enumerate(read_list(require(obj, "queries", path), q_path))
    )


#: reads one member of a run's object (its key, the reader for its value); a cache of
#: members already read in other runs may answer instead
MemberReader = Callable[[str, Callable[[Any, str], Any]], Any]


def _findings_in(raw: Any, path: str) -> tuple[Finding, ...]:
    return tuple(
        Finding.from_json(item, where(path, i)) for i, item in enumerate(read_list(raw, path))
    )


def _record(
    obj: dict[str, Any],
    path: str,
    per_query: Callable[[], Sequence[QueryResult]],
    *,
    edited: bool,
    member: MemberReader | None = None,
) -> RunRecord:
    """The run of a compact object, its queries from ``per_query`` (read in the order
    the keys are checked: an error names the first bad place)."""

    def read(key: str, how: Callable[[Any, str], Any], *, required: bool = False) -> Any:
        if required:
            require(obj, key, path)
        elif obj.get(key) is None:
            return None
        return how(obj[key], where(path, key)) if member is None else member(key, how)

    return RunRecord(
        timestamp=parse_timestamp(require(obj, "timestamp", path), where(path, "timestamp")),
        fingerprint=read("fingerprint", Fingerprint.from_json, required=True),
        corpus=read("corpus", corpus_from_json),
        per_query=per_query(),
        aggregate=read("aggregate", aggregate_from_json, required=True),
        findings=read("findings", _findings_in) or (),
        gate=read("gate", GateRecord.from_json),
        edited=edited,
    )


def decode_run(raw: Any, path: str = "run") -> RunRecord:
    """A run from its compact JSON object; :class:`RecordFormatError` when out of shape."""
    obj = read_object(raw, path)
    tables = _tables(obj, path)  # checked first, as they always were
    return _record(obj, path, lambda: _queries(obj, path, tables), edited=was_edited(obj))


def decode_later(
    head: dict[str, Any],
    path: str,
    per_query: Callable[[], Sequence[QueryResult]],
    member: MemberReader | None = None,
) -> RunRecord:
    """A run whose digest vouched for its text, from its members other than the tables
    and queries (``head``); ``per_query`` reads those at the first use
    (:class:`~pytest_groove.evaluation.runs.stored.LazyTuple`).  Raises
    :class:`RecordFormatError` as :func:`decode_run` does for the members read now."""
    scores = head.get("scores")
    if scores not in (None, FLOAT32):
        raise shape_error(where(path, "scores"), f"expected {FLOAT32!r} or nothing")
    read_items(head.get("metric_k", []), where(path, "metric_k"), read_int)
    return _record(head, path, lambda: LazyTuple(per_query), edited=False, member=member)
