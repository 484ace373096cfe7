"""The records of one evaluation run, and their JSON form in the history file.

A run is: when it happened, the *fingerprint* of everything that decides what the
numbers mean (two runs are comparable only when their fingerprints are equal), the
corpus it measured, one :class:`QueryResult` per golden query, the aggregate, and
the findings of the quote check.

JSON rules (the history file format, spec-eval §6-§7):

- keys are written in field order; k-maps use the k as a string key, in numeric order;
- timestamps are RFC 3339 UTC with a ``Z`` and 0, 3 or 6 fractional digits;
- optional fingerprint objects (``mmr``, ``parent_retriever``, ``fusion``, ``context``,
  ``retriever``) are omitted when off; ``reranker`` is always written (``null`` = none);
- a run's ``corpus`` is omitted when unknown and ``findings`` when empty;
- non-finite floats are written as ``null`` and read back as NaN.

Reading is lenient where history written by older versions differs (missing
``metric_version`` / ``fts_query_version`` read as 1, missing optional objects as
absent) and strict about types everywhere else: anything that does not fit raises
:class:`RecordFormatError`, which the history loader reports and skips.  Nothing
here raises anything else for malformed input.

Unknown *fingerprint* keys (written by a newer version) are kept in
:attr:`Fingerprint.extra`, written back verbatim, and take part in equality: such a
run measured something this version cannot see, so it is never compared with a run
of this version, and rewriting the history does not erase what the newer version
needs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from pytest_groove.config import SearchSettings, normalise_k_values
from pytest_groove.evaluation.metrics import (
    METRIC_VERSION,
    AggregateMetrics,
    QueryMetrics,
    aggregate,
    query_metrics,
)
from pytest_groove.evaluation.records import ExpectedEntry, GoldenQuery
from pytest_groove.kb.markdown import CHUNKER_VERSION
from pytest_groove.kb.records import CorpusSnapshot
from pytest_groove.search.fts_query import FTS_QUERY_VERSION
from pytest_groove.search.hits import SearchHit

#: the only check the findings scan runs today
QUOTE_CHECK = "golden-queries-quoted"


class RecordFormatError(ValueError):
    """Stored JSON does not have the shape of a run record (names the JSON location)."""


# --------------------------------------------------------------------------- JSON helpers


def _where(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else key)


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise RecordFormatError(f"{path or 'top level'}: expected an object")
    return value


def _req(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise RecordFormatError(f"{path or 'top level'}: missing key {key!r}")
    return obj[key]


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise RecordFormatError(f"{path}: expected a list")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise RecordFormatError(f"{path}: expected a string")
    return value


def _opt_str(value: Any, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _opt_bool(value: Any, path: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise RecordFormatError(f"{path}: expected true or false")


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordFormatError(f"{path}: expected a whole number")
    return value


def _float(value: Any, path: str) -> float:
    """A stored number; ``null`` stands for a non-finite value (read back as NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordFormatError(f"{path}: expected a number")
    return float(value)


def _out(value: float) -> float | None:
    """Strict JSON has no NaN/Infinity: write them as null."""
    return value if math.isfinite(value) else None


_K_KEY = re.compile(r"[0-9]{1,9}")


def k_map_to_json(values: Mapping[int, float]) -> dict[str, float | None]:
    """``{5: 0.5, 1: 0.2}`` -> ``{"1": 0.2, "5": 0.5}`` (numeric order, string keys)."""
    return {str(k): _out(values[k]) for k in sorted(values)}


def _k_map(value: Any, path: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for key, item in _obj(value, path).items():
        if not _K_KEY.fullmatch(key):
            raise RecordFormatError(f"{path}: {key!r} is not a k value")
        out[int(key)] = _float(item, _where(path, key))
    return out


def _json_value(value: Any, path: str) -> Any:
    """A copy of a parsed JSON value that strict JSON can write back.

    Non-finite numbers (Python's parser accepts ``NaN``) become ``null``, as
    everywhere else in the file; anything that is not JSON data is a format error.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return _out(value)
    if isinstance(value, list):
        return [_json_value(item, _where(path, i)) for i, item in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: _json_value(item, _where(path, key)) for key, item in value.items()}
    raise RecordFormatError(f"{path}: not JSON data")


def _opt_obj(raw: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    return dict(_obj(value, _where(path, key)))


# --------------------------------------------------------------------------- timestamps

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def now_utc() -> datetime:
    return datetime.now(UTC)


def format_timestamp(moment: datetime, *, zulu: bool = True) -> str:
    """RFC 3339 in UTC with 0, 3 or 6 fractional digits; ``Z`` or ``+00:00`` suffix."""
    moment = moment.astimezone(UTC)
    # not strftime: %Y does not zero-pad years below 1000 on every platform
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    micro = moment.microsecond
    if micro:
        text += f".{micro // 1000:03d}" if micro % 1000 == 0 else f".{micro:06d}"
    return text + ("Z" if zulu else "+00:00")


def display_timestamp(moment: datetime) -> str:
    """A moment as people read it (report banners, stderr messages): the seed's
    ``+00:00`` form.  Files and the JSON report keep :func:`format_timestamp`'s ``Z``.
    """
    return format_timestamp(moment, zulu=False)


def parse_timestamp(text: Any, path: str = "timestamp") -> datetime:
    """Read an RFC 3339 timestamp (any offset, up to 9 fractional digits) as UTC."""
    match = _RFC3339.fullmatch(_str(text, path))
    if match is None:
        raise RecordFormatError(f"{path}: {text!r} is not an RFC 3339 timestamp")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction = (match.group(7) or "").ljust(6, "0")[:6]
    offset = timedelta(0)
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        if match.group(9) == "-":
            offset = -offset
    try:
        moment = datetime(
            year,
            month,
            day,
            hour,
            minute,
            min(second, 59),
            int(fraction),
            tzinfo=timezone(offset),
        )
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise RecordFormatError(f"{path}: {text!r} is not a valid date/time ({exc})") from None


# --------------------------------------------------------------------------- fingerprint


@dataclass(frozen=True)
class Fingerprint:
    """Everything that must be equal for two runs' numbers to be comparable.

    Compared as a whole (``==``).  The optional objects are ``None`` when their
    feature is off so that runs with the feature off stay comparable with history
    written before the field existed.
    """

    model: str
    #: reranker identifier, None when no reranking stage ran
    reranker: str | None
    #: the normalised limit (not the fetch depth)
    limit: int
    #: normalised: capped, sorted, de-duplicated
    k_values: tuple[int, ...]
    golden_hash: str
    metric_version: int = METRIC_VERSION
    fts_query_version: int = FTS_QUERY_VERSION
    #: the chunking rules the index was cut by (chunk boundaries move every ranking)
    chunker_version: int = CHUNKER_VERSION
    #: {"lambda", "same_doc_penalty"} when MMR ran
    mmr: dict[str, float] | None = None
    #: {"whole_doc_threshold_tokens", "max_expanded_tokens"} when the parent retriever ran
    parent_retriever: dict[str, int] | None = None
    #: all four fusion values when any differs from the built-in defaults
    fusion: dict[str, float] | None = None
    #: {"mode": "static"} or {"mode": "embedded"} when the index was built with
    #: contextual indexing
    context: dict[str, str] | None = None
    #: qualified name of a custom retriever from conftest.py (pytest door only)
    retriever: str | None = None
    #: False when the vector leg ran without language centring (the default is on)
    vector_centring: bool | None = None
    #: False when the full-text leg ran without the script gate (the default is on)
    fts_script_gate: bool | None = None
    #: the approximate vector index kind ("hnsw"); None for the exact flat index
    vector_index: str | None = None
    #: True when the fused list was grouped by document (the default since it
    #: exists): recorded when on, so such runs never compare with older history
    document_first: bool | None = None
    #: True when the documents were ordered by note-carrying vectors (the default
    #: since it exists; see search.notes): recorded when on, like document_first
    note_order: bool | None = None
    #: keys this version does not know (from a newer version's run), kept verbatim
    #: so they survive a history rewrite; a non-empty ``extra`` never equals a
    #: fingerprint this version builds, so such a run is never compared
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        model: str,
        reranker_id: str | None,
        limit: int,
        k_values: Sequence[int],
        golden_hash: str,
        search: SearchSettings,
        context_mode: str | None,
        retriever: str | None = None,
        vector_index: str | None = None,
    ) -> Fingerprint:
        """The fingerprint of a run with these effective settings.

        ``search`` must be the *effective* settings (config + command-line
        overrides); ``context_mode`` is what the index records, not what the config
        asks for.  ``reranker_id`` of None or "none" means no reranker.
        """
        mmr = search.mmr
        parent = search.parent_retriever
        fusion = search.fusion
        return cls(
            model=model,
            reranker=None if reranker_id in (None, "none") else reranker_id,
            limit=limit,
            k_values=normalise_k_values(tuple(k_values)),
            golden_hash=golden_hash,
            fts_query_version=search.fts_query_version,
            mmr=(
                {"lambda": mmr.lambda_, "same_doc_penalty": mmr.same_doc_penalty}
                if mmr.enabled
                else None
            ),
            parent_retriever=(
                {
                    "whole_doc_threshold_tokens": parent.whole_doc_threshold_tokens,
                    "max_expanded_tokens": parent.max_expanded_tokens,
                }
                if parent.enabled
                else None
            ),
            fusion=(
                None
                if fusion.is_default
                else {
                    "rrf_k": fusion.rrf_k,
                    "bm25_heading_weight": fusion.bm25_heading_weight,
                    "bm25_context_weight": fusion.bm25_context_weight,
                    "bm25_content_weight": fusion.bm25_content_weight,
                }
            ),
            context=({"mode": context_mode} if context_mode in ("static", "embedded") else None),
            retriever=retriever,
            vector_centring=None if search.vector_centring else False,
            fts_script_gate=None if search.fts_script_gate else False,
            # runs on an approximate index never compare with exact ones (or history
            # from before the option existed)
            vector_index=None if vector_index in (None, "flat") else vector_index,
            document_first=(
                True if retriever is None and _groups_by_document(search, reranker_id) else None
            ),
            note_order=(
                True
                if retriever is None
                and search.note_order
                and _groups_by_document(search, reranker_id)
                else None
            ),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "reranker": self.reranker,
            "limit": self.limit,
            "k_values": list(self.k_values),
            "golden_hash": self.golden_hash,
            "metric_version": self.metric_version,
            "fts_query_version": self.fts_query_version,
            "chunker_version": self.chunker_version,
        }
        optional: dict[str, Any] = {
            "mmr": self.mmr,
            "parent_retriever": self.parent_retriever,
            "fusion": self.fusion,
            "context": self.context,
            "retriever": self.retriever,
            "vector_centring": self.vector_centring,
            "fts_script_gate": self.fts_script_gate,
            "vector_index": self.vector_index,
            "document_first": self.document_first,
            "note_order": self.note_order,
        }
        out.update({key: value for key, value in optional.items() if value is not None})
        # after the known keys, in the order they were read; a known key always wins
        out.update({key: value for key, value in self.extra.items() if key not in out})
        return out

    @classmethod
    def from_json(cls, raw: Any, path: str = "fingerprint") -> Fingerprint:
        obj = _obj(raw, path)
        k_raw = _list(_req(obj, "k_values", path), _where(path, "k_values"))
        mmr = _opt_obj(obj, "mmr", path)
        parent = _opt_obj(obj, "parent_retriever", path)
        fusion = _opt_obj(obj, "fusion", path)
        context = _opt_obj(obj, "context", path)
        return cls(
            model=_str(_req(obj, "model", path), _where(path, "model")),
            reranker=_opt_str(obj.get("reranker"), _where(path, "reranker")),
            limit=_int(_req(obj, "limit", path), _where(path, "limit")),
            k_values=tuple(_int(k, _where(path, "k_values")) for k in k_raw),
            golden_hash=_str(_req(obj, "golden_hash", path), _where(path, "golden_hash")),
            # history written before these versions existed measured version 1
            metric_version=_int(obj.get("metric_version", 1), _where(path, "metric_version")),
            fts_query_version=_int(
                obj.get("fts_query_version", 1), _where(path, "fts_query_version")
            ),
            chunker_version=_int(obj.get("chunker_version", 1), _where(path, "chunker_version")),
            mmr=None if mmr is None else _float_fields(mmr, _where(path, "mmr")),
            parent_retriever=(
                None if parent is None else _int_fields(parent, _where(path, "parent_retriever"))
            ),
            fusion=None if fusion is None else _float_fields(fusion, _where(path, "fusion")),
            context=None if context is None else _str_fields(context, _where(path, "context")),
            retriever=_opt_str(obj.get("retriever"), _where(path, "retriever")),
            vector_centring=_opt_bool(obj.get("vector_centring"), _where(path, "vector_centring")),
            fts_script_gate=_opt_bool(obj.get("fts_script_gate"), _where(path, "fts_script_gate")),
            vector_index=_opt_str(obj.get("vector_index"), _where(path, "vector_index")),
            document_first=_opt_bool(obj.get("document_first"), _where(path, "document_first")),
            note_order=_opt_bool(obj.get("note_order"), _where(path, "note_order")),
            extra={
                key: _json_value(value, _where(path, key))
                for key, value in obj.items()
                if key not in FINGERPRINT_KEYS
            },
        )


#: every fingerprint key this version reads; any other is kept in ``extra``
FINGERPRINT_KEYS = frozenset(
    {
        "model",
        "reranker",
        "limit",
        "k_values",
        "golden_hash",
        "metric_version",
        "fts_query_version",
        "chunker_version",
        "mmr",
        "parent_retriever",
        "fusion",
        "context",
        "retriever",
        "vector_centring",
        "fts_script_gate",
        "vector_index",
        "document_first",
        "note_order",
    }
)


def _groups_by_document(search: SearchSettings, reranker_id: str | None) -> bool:
    """Whether search grouped the fused list by document (not under a reranker or MMR)."""
    reranked = reranker_id not in (None, "none")
    return search.document_first and not reranked and not search.mmr.enabled


def _float_fields(obj: Mapping[str, Any], path: str) -> dict[str, float]:
    return {key: _float(value, _where(path, key)) for key, value in obj.items()}


def _int_fields(obj: Mapping[str, Any], path: str) -> dict[str, int]:
    return {key: _int(value, _where(path, key)) for key, value in obj.items()}


def _str_fields(obj: Mapping[str, Any], path: str) -> dict[str, str]:
    return {key: _str(value, _where(path, key)) for key, value in obj.items()}


# --------------------------------------------------------------------------- per query


@dataclass(frozen=True)
class TopHit:
    """One retrieved chunk as the evaluator keeps it (rank is 1-based, contiguous)."""

    rank: int
    path: str
    heading: str | None
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "path": self.path,
            "heading": self.heading,
            "score": _out(self.score),
        }

    @classmethod
    def from_json(cls, raw: Any, path: str) -> TopHit:
        obj = _obj(raw, path)
        return cls(
            rank=_int(_req(obj, "rank", path), _where(path, "rank")),
            path=_str(_req(obj, "path", path), _where(path, "path")),
            heading=_opt_str(obj.get("heading"), _where(path, "heading")),
            score=_float(_req(obj, "score", path), _where(path, "score")),
        )


def metrics_to_json(metrics: QueryMetrics) -> dict[str, Any]:
    return {
        "recall_at_k": k_map_to_json(metrics.recall_at_k),
        "reciprocal_rank": _out(metrics.reciprocal_rank),
        "ndcg_at_k": k_map_to_json(metrics.ndcg_at_k),
    }


def metrics_from_json(raw: Any, path: str) -> QueryMetrics:
    obj = _obj(raw, path)
    return QueryMetrics(
        recall_at_k=_k_map(_req(obj, "recall_at_k", path), _where(path, "recall_at_k")),
        reciprocal_rank=_float(_req(obj, "reciprocal_rank", path), _where(path, "reciprocal_rank")),
        ndcg_at_k=_k_map(_req(obj, "ndcg_at_k", path), _where(path, "ndcg_at_k")),
    )


def aggregate_to_json(agg: AggregateMetrics) -> dict[str, Any]:
    return {
        "recall_at_k": k_map_to_json(agg.recall_at_k),
        "mrr": _out(agg.mrr),
        "ndcg_at_k": k_map_to_json(agg.ndcg_at_k),
        "query_count": agg.query_count,
    }


def aggregate_from_json(raw: Any, path: str = "aggregate") -> AggregateMetrics:
    obj = _obj(raw, path)
    return AggregateMetrics(
        recall_at_k=_k_map(_req(obj, "recall_at_k", path), _where(path, "recall_at_k")),
        mrr=_float(_req(obj, "mrr", path), _where(path, "mrr")),
        ndcg_at_k=_k_map(_req(obj, "ndcg_at_k", path), _where(path, "ndcg_at_k")),
        query_count=_int(_req(obj, "query_count", path), _where(path, "query_count")),
    )


@dataclass(frozen=True)
class QueryResult:
    """One golden query's outcome: what it asked, what came back, how well it did.

    Plain data with a JSON form, so a pytest-xdist worker can ship it to the
    controller on its test report (``to_json`` / ``from_json``).
    """

    id: str
    query: str
    expected: tuple[ExpectedEntry, ...]
    #: the whole retrieved list (it may be longer than every k)
    top_k: tuple[TopHit, ...]
    metrics: QueryMetrics

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "query": self.query,
            "expected": [{"path": e.path, "heading": e.heading} for e in self.expected],
            "top_k": [hit.to_json() for hit in self.top_k],
            "metrics": metrics_to_json(self.metrics),
        }

    @classmethod
    def from_json(cls, raw: Any, path: str = "query") -> QueryResult:
        obj = _obj(raw, path)
        exp_path = _where(path, "expected")
        expected = []
        for i, item in enumerate(_list(_req(obj, "expected", path), exp_path)):
            entry = _obj(item, _where(exp_path, i))
            expected.append(
                ExpectedEntry(
                    path=_str(_req(entry, "path", _where(exp_path, i)), _where(exp_path, i)),
                    heading=_opt_str(entry.get("heading"), _where(exp_path, i)),
                )
            )
        top_path = _where(path, "top_k")
        return cls(
            id=_str(_req(obj, "id", path), _where(path, "id")),
            query=_str(_req(obj, "query", path), _where(path, "query")),
            expected=tuple(expected),
            top_k=tuple(
                TopHit.from_json(hit, _where(top_path, i))
                for i, hit in enumerate(_list(_req(obj, "top_k", path), top_path))
            ),
            metrics=metrics_from_json(_req(obj, "metrics", path), _where(path, "metrics")),
        )


def evaluate_query(
    q: GoldenQuery, hits: Sequence[SearchHit], k_values: Sequence[int]
) -> QueryResult:
    """Score one golden query against what the retriever returned for it.

    Ranks are re-assigned from list position (1-based), whatever the retriever put
    in ``rank``: the metrics and ``rank_in_top_k`` must agree with the order shown.
    """
    ranked = [
        hit if hit.rank == position else replace(hit, rank=position)
        for position, hit in enumerate(hits, start=1)
    ]
    return QueryResult(
        id=q.id,
        query=q.query,
        expected=tuple(q.expected),
        top_k=tuple(
            TopHit(rank=h.rank, path=h.path, heading=h.heading, score=float(h.score))
            for h in ranked
        ),
        metrics=query_metrics(q.expected, ranked, tuple(k_values)),
    )


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class QuotedQuery:
    query_id: str
    #: rank of the quoting document in that query's retrieved list, None if absent
    rank_in_top_k: int | None

    def to_json(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "rank_in_top_k": self.rank_in_top_k}


@dataclass(frozen=True)
class Finding:
    """One document reported by a corpus check (today only ``golden-queries-quoted``)."""

    check: str
    path: str
    quoted: tuple[QuotedQuery, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "path": self.path,
            "quoted": [q.to_json() for q in self.quoted],
        }

    @classmethod
    def from_json(cls, raw: Any, path: str = "finding") -> Finding:
        obj = _obj(raw, path)
        quoted_path = _where(path, "quoted")
        quoted = []
        for i, item in enumerate(_list(_req(obj, "quoted", path), quoted_path)):
            entry = _obj(item, _where(quoted_path, i))
            rank = entry.get("rank_in_top_k")
            quoted.append(
                QuotedQuery(
                    query_id=_str(
                        _req(entry, "query_id", _where(quoted_path, i)), _where(quoted_path, i)
                    ),
                    rank_in_top_k=None if rank is None else _int(rank, _where(quoted_path, i)),
                )
            )
        return cls(
            check=_str(_req(obj, "check", path), _where(path, "check")),
            path=_str(_req(obj, "path", path), _where(path, "path")),
            quoted=tuple(quoted),
        )


# --------------------------------------------------------------------------- corpus


def corpus_to_json(corpus: CorpusSnapshot) -> dict[str, Any]:
    return {"documents": corpus.documents, "chunks": corpus.chunks, "digest": corpus.digest}


def corpus_from_json(raw: Any, path: str = "corpus") -> CorpusSnapshot:
    obj = _obj(raw, path)
    return CorpusSnapshot(
        documents=_int(_req(obj, "documents", path), _where(path, "documents")),
        chunks=_int(_req(obj, "chunks", path), _where(path, "chunks")),
        digest=_str(_req(obj, "digest", path), _where(path, "digest")),
    )


# --------------------------------------------------------------------------- run record


@dataclass(frozen=True)
class RunRecord:
    timestamp: datetime
    fingerprint: Fingerprint
    #: None only for runs recorded before corpus snapshots existed
    corpus: CorpusSnapshot | None
    per_query: tuple[QueryResult, ...]
    aggregate: AggregateMetrics
    findings: tuple[Finding, ...] = ()
    #: this run is the history's frozen baseline (stored once, at the top of the
    #: history file, not inside the run; see history.py)
    frozen: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timestamp": format_timestamp(self.timestamp),
            "fingerprint": self.fingerprint.to_json(),
        }
        if self.corpus is not None:
            out["corpus"] = corpus_to_json(self.corpus)
        out["per_query"] = [q.to_json() for q in self.per_query]
        out["aggregate"] = aggregate_to_json(self.aggregate)
        if self.findings:
            out["findings"] = [f.to_json() for f in self.findings]
        return out

    @classmethod
    def from_json(cls, raw: Any, path: str = "run") -> RunRecord:
        obj = _obj(raw, path)
        pq_path = _where(path, "per_query")
        findings_raw = obj.get("findings")
        findings_path = _where(path, "findings")
        corpus_raw = obj.get("corpus")
        return cls(
            timestamp=parse_timestamp(_req(obj, "timestamp", path), _where(path, "timestamp")),
            fingerprint=Fingerprint.from_json(
                _req(obj, "fingerprint", path), _where(path, "fingerprint")
            ),
            corpus=None
            if corpus_raw is None
            else corpus_from_json(corpus_raw, _where(path, "corpus")),
            per_query=tuple(
                QueryResult.from_json(item, _where(pq_path, i))
                for i, item in enumerate(_list(_req(obj, "per_query", path), pq_path))
            ),
            aggregate=aggregate_from_json(_req(obj, "aggregate", path), _where(path, "aggregate")),
            findings=()
            if findings_raw is None
            else tuple(
                Finding.from_json(item, _where(findings_path, i))
                for i, item in enumerate(_list(findings_raw, findings_path))
            ),
        )


def build_run(
    fingerprint: Fingerprint,
    per_query: Sequence[QueryResult],
    corpus: CorpusSnapshot | None,
    findings: Sequence[Finding] = (),
    timestamp: datetime | None = None,
) -> RunRecord:
    """Assemble a run: aggregates ``per_query`` (in the order given) and stamps it."""
    return RunRecord(
        timestamp=(timestamp or now_utc()).astimezone(UTC),
        fingerprint=fingerprint,
        corpus=corpus,
        per_query=tuple(per_query),
        aggregate=aggregate([q.metrics for q in per_query]),
        findings=tuple(findings),
    )
