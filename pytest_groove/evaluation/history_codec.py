"""The compact JSON form of a stored run (history format 2).

The history is meant to be committed, so a run is stored with only what the
diff, the per-query verdicts and the reports need, and without repetition:

- every path and heading a run mentions is written once, in the run's ``paths``
  and ``headings`` tables; expected entries and hits refer to them by index
  (a heading of ``null`` stays ``null``);
- a hit is ``[path, heading, score]``; its rank is its position (1-based), and a
  query whose stored ranks are not ``1..n`` keeps them in ``ranks``;
- a query's metrics are ``[[recall@k...], reciprocal rank, [nDCG@k...]]`` in the
  order of the run's ``metric_k`` list; a query whose k values differ keeps the
  keyed form of format 1;
- scores are written with the fewest digits that read back to the same value.
  Search scores are 32-bit floats, so when every score of a run is one
  (``"scores": "float32"``), nine significant digits at most restore it exactly.

Everything else (timestamp, fingerprint, corpus, aggregate, findings) keeps the
format-1 shape of :mod:`pytest_groove.evaluation.run`.  Decoding is as strict as
format 1: anything out of shape raises :class:`RecordFormatError` naming where.
Encoding then decoding gives back an equal :class:`RunRecord` (lossless).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

from pytest_groove.evaluation.metrics import QueryMetrics
from pytest_groove.evaluation.records import ExpectedEntry
from pytest_groove.evaluation.run import (
    Finding,
    Fingerprint,
    QueryResult,
    RecordFormatError,
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


def _out(value: float) -> float | None:
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------- checking


def _where(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


def _fail(path: str, what: str) -> RecordFormatError:
    return RecordFormatError(f"{path}: {what}")


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, "expected a list")
    return value


def _req(obj: dict[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise _fail(path, f"missing key {key!r}")
    return obj[key]


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, "expected a string")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(path, "expected a whole number")
    return value


def _float(value: Any, path: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, "expected a number")
    return float(value)


def _strings(value: Any, path: str) -> list[str]:
    return [_str(item, _where(path, i)) for i, item in enumerate(_list(value, path))]


def _floats(value: Any, path: str) -> list[float]:
    return [_float(item, _where(path, i)) for i, item in enumerate(_list(value, path))]


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


def _metrics_out(metrics: QueryMetrics, metric_k: Sequence[int]) -> Any:
    keys = list(metric_k)
    if sorted(metrics.recall_at_k) != keys or sorted(metrics.ndcg_at_k) != keys:
        return metrics_to_json(metrics)  # unusual k values: the keyed form
    return [
        [_out(metrics.recall_at_k[k]) for k in keys],
        _out(metrics.reciprocal_rank),
        [_out(metrics.ndcg_at_k[k]) for k in keys],
    ]


def encode_run(run: RunRecord) -> dict[str, Any]:
    """The compact JSON object of one run (see the module docstring)."""
    paths, headings = _Table(), _Table()
    float32 = all(_is_float32(hit.score) for q in run.per_query for hit in q.top_k)
    metric_k = sorted(run.per_query[0].metrics.recall_at_k) if run.per_query else []

    def score(value: float) -> float | None:
        return _short_float32(value) if float32 else _out(value)

    queries = []
    for result in run.per_query:
        entry: dict[str, Any] = {
            "id": result.id,
            "query": result.query,
            "expected": [[paths.ref(e.path), headings.opt_ref(e.heading)] for e in result.expected],
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
    return out


# --------------------------------------------------------------------------- decoding


def _lookup(table: list[str], value: Any, path: str, *, optional: bool) -> str | None:
    if value is None and optional:
        return None
    index = _int(value, path)
    if not 0 <= index < len(table):
        raise _fail(path, f"{index} is not an index into the run's table")
    return table[index]


def _metrics_in(raw: Any, metric_k: list[int], path: str) -> QueryMetrics:
    if isinstance(raw, dict):
        return metrics_from_json(raw, path)
    parts = _list(raw, path)
    if len(parts) != 3:
        raise _fail(path, "expected [recall@k list, reciprocal rank, nDCG@k list]")
    recall = _floats(parts[0], _where(path, 0))
    ndcg = _floats(parts[2], _where(path, 2))
    if len(recall) != len(metric_k) or len(ndcg) != len(metric_k):
        raise _fail(path, "one value per metric_k entry expected")
    return QueryMetrics(
        recall_at_k=dict(zip(metric_k, recall, strict=True)),
        reciprocal_rank=_float(parts[1], _where(path, 1)),
        ndcg_at_k=dict(zip(metric_k, ndcg, strict=True)),
    )


def _query_in(
    raw: Any,
    path: str,
    paths: list[str],
    headings: list[str],
    metric_k: list[int],
    float32: bool,
) -> QueryResult:
    obj = _obj(raw, path)

    def pair(item: Any, where: str, size: int) -> list[Any]:
        parts = _list(item, where)
        if len(parts) != size:
            raise _fail(where, f"expected {size} values")
        return parts

    expected = []
    exp_path = _where(path, "expected")
    for i, item in enumerate(_list(_req(obj, "expected", path), exp_path)):
        where = _where(exp_path, i)
        p, h = pair(item, where, 2)
        expected.append(
            ExpectedEntry(
                path=_lookup(paths, p, _where(where, 0), optional=False) or "",
                heading=_lookup(headings, h, _where(where, 1), optional=True),
            )
        )
    hits_path = _where(path, "hits")
    raw_hits = _list(_req(obj, "hits", path), hits_path)
    ranks: list[int] = list(range(1, len(raw_hits) + 1))
    if "ranks" in obj:
        ranks_path = _where(path, "ranks")
        ranks = [
            _int(r, _where(ranks_path, i)) for i, r in enumerate(_list(obj["ranks"], ranks_path))
        ]
        if len(ranks) != len(raw_hits):
            raise _fail(ranks_path, "expected one rank per hit")
    hits = []
    for i, item in enumerate(raw_hits):
        where = _where(hits_path, i)
        p, h, s = pair(item, where, 3)
        value = _float(s, _where(where, 2))
        if float32 and math.isfinite(value):
            rounded = _as_float32(value)
            if rounded is None:
                raise _fail(_where(where, 2), "not a 32-bit float")
            value = rounded
        hits.append(
            TopHit(
                rank=ranks[i],
                path=_lookup(paths, p, _where(where, 0), optional=False) or "",
                heading=_lookup(headings, h, _where(where, 1), optional=True),
                score=value,
            )
        )
    return QueryResult(
        id=_str(_req(obj, "id", path), _where(path, "id")),
        query=_str(_req(obj, "query", path), _where(path, "query")),
        expected=tuple(expected),
        top_k=tuple(hits),
        metrics=_metrics_in(_req(obj, "metrics", path), metric_k, _where(path, "metrics")),
    )


def is_compact(raw: Any) -> bool:
    """A stored run in this format (``queries``) rather than format 1 (``per_query``)."""
    return isinstance(raw, dict) and "queries" in raw and "per_query" not in raw


def decode_run(raw: Any, path: str = "run") -> RunRecord:
    """A run from its compact JSON object; :class:`RecordFormatError` when out of shape."""
    obj = _obj(raw, path)
    scores = obj.get("scores")
    if scores not in (None, FLOAT32):
        raise _fail(_where(path, "scores"), f"expected {FLOAT32!r} or nothing")
    metric_k_path = _where(path, "metric_k")
    metric_k = [
        _int(k, _where(metric_k_path, i))
        for i, k in enumerate(_list(obj.get("metric_k", []), metric_k_path))
    ]
    paths = _strings(_req(obj, "paths", path), _where(path, "paths"))
    headings = _strings(_req(obj, "headings", path), _where(path, "headings"))
    q_path = _where(path, "queries")
    corpus_raw = obj.get("corpus")
    findings_raw = obj.get("findings")
    findings_path = _where(path, "findings")
    return RunRecord(
        timestamp=parse_timestamp(_req(obj, "timestamp", path), _where(path, "timestamp")),
        fingerprint=Fingerprint.from_json(
            _req(obj, "fingerprint", path), _where(path, "fingerprint")
        ),
        corpus=None if corpus_raw is None else corpus_from_json(corpus_raw, _where(path, "corpus")),
        per_query=tuple(
            _query_in(item, _where(q_path, i), paths, headings, metric_k, scores == FLOAT32)
            for i, item in enumerate(_list(_req(obj, "queries", path), q_path))
        ),
        aggregate=aggregate_from_json(_req(obj, "aggregate", path), _where(path, "aggregate")),
        findings=()
        if findings_raw is None
        else tuple(
            Finding.from_json(item, _where(findings_path, i))
            for i, item in enumerate(_list(findings_raw, findings_path))
        ),
    )
