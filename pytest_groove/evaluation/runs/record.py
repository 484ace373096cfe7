"""The records of one evaluation run, and their JSON form in the history file.

A run is: when it happened, the *fingerprint* of everything that decides what the
numbers mean (two runs are comparable only when their fingerprints are equal), the
corpus it measured, one :class:`QueryResult` per golden query, the aggregate, and
the findings of the quote check.

JSON rules (the history file format, spec-eval §6-§7):

- keys are written in field order (each record's fields carry their JSON form, see
  :func:`pytest_groove.shapes.json_key`); k-maps use the k as a string key, in
  numeric order;
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

The fingerprint lives in :mod:`~pytest_groove.evaluation.runs.fingerprint` and the
timestamp rules in :mod:`~pytest_groove.evaluation.runs.timestamps`; both are importable
from here too.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Self

from pytest_groove.evaluation.runs.fingerprint import FINGERPRINT_KEYS, Fingerprint
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.evaluation.runs.stored import StoredText
from pytest_groove.evaluation.runs.timestamps import (
    display_timestamp,
    format_timestamp,
    now_utc,
    parse_timestamp,
)
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.metrics import (
    AggregateMetrics,
    QueryMetrics,
    aggregate,
    query_metrics,
)
from pytest_groove.scoring.optional_metrics import (
    optional_aggregate_from_json,
    optional_metrics_to_json,
    optional_query_metrics_from_json,
)
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.search.hits import SearchHit
from pytest_groove.shapes import (
    ShapeError,
    finite_or_none,
    json_key,
    k_map_to_json,
    optional,
    read_int,
    read_items,
    read_k_map,
    read_object,
    read_opt_str,
    read_stored_float,
    read_str,
    record_fields_from_json,
    record_to_json,
    require,
    where,
    write_all,
)

__all__ = [
    "FINGERPRINT_KEYS",
    "QUOTE_CHECK",
    "Finding",
    "Fingerprint",
    "QueryResult",
    "QuotedQuery",
    "RecordFormatError",
    "RunRecord",
    "TopHit",
    "aggregate_from_json",
    "aggregate_to_json",
    "build_run",
    "corpus_from_json",
    "corpus_to_json",
    "display_timestamp",
    "evaluate_query",
    "format_timestamp",
    "k_map_to_json",
    "metrics_from_json",
    "metrics_to_json",
    "now_utc",
    "parse_timestamp",
]

#: the only check the findings scan runs today
QUOTE_CHECK = "golden-queries-quoted"

#: stored JSON that does not have the shape of a run record (the message names the
#: JSON location); one type with the shape readers' errors, so a caller catches one
RecordFormatError = ShapeError


# --------------------------------------------------------------------------- per query


class _JsonRecord:
    """``to_json`` and ``from_json`` of a record dataclass whose fields say how each is
    written and read (:func:`record_to_json`, :func:`record_fields_from_json`)."""

    #: the JSON location ``from_json`` names when the caller gives none
    json_path: ClassVar[str] = "record"

    def to_json(self) -> dict[str, Any]:
        return record_to_json(self)

    @classmethod
    def from_json(cls, raw: Any, path: str | None = None) -> Self:
        where = cls.json_path if path is None else path
        return cls(**record_fields_from_json(cls, read_object(raw, where), where))


@dataclass(frozen=True)
class TopHit(_JsonRecord):
    """One retrieved chunk as the evaluator keeps it (rank is 1-based, contiguous)."""

    rank: int = field(metadata=json_key(read_int, required=True))
    path: str = field(metadata=json_key(read_str, required=True))
    heading: str | None = field(metadata=json_key(read_opt_str))
    score: float = field(metadata=json_key(read_stored_float, write=finite_or_none, required=True))


def metrics_to_json(metrics: QueryMetrics) -> dict[str, Any]:
    out: dict[str, Any] = {
        "recall_at_k": k_map_to_json(metrics.recall_at_k),
        "reciprocal_rank": finite_or_none(metrics.reciprocal_rank),
        "ndcg_at_k": k_map_to_json(metrics.ndcg_at_k),
    }
    out.update(optional_metrics_to_json(metrics))
    return out


def _k_map_at(obj: dict[str, Any], key: str, path: str) -> dict[int, float]:
    return read_k_map(require(obj, key, path), where(path, key))


def _float_at(obj: dict[str, Any], key: str, path: str) -> float:
    return read_stored_float(require(obj, key, path), where(path, key))


def metrics_from_json(raw: Any, path: str) -> QueryMetrics:
    obj = read_object(raw, path)
    return QueryMetrics(
        recall_at_k=_k_map_at(obj, "recall_at_k", path),
        reciprocal_rank=_float_at(obj, "reciprocal_rank", path),
        ndcg_at_k=_k_map_at(obj, "ndcg_at_k", path),
        **optional_query_metrics_from_json(obj, path),
    )


def aggregate_to_json(agg: AggregateMetrics) -> dict[str, Any]:
    out: dict[str, Any] = {
        "recall_at_k": k_map_to_json(agg.recall_at_k),
        "mrr": finite_or_none(agg.mrr),
        "ndcg_at_k": k_map_to_json(agg.ndcg_at_k),
        "query_count": agg.query_count,
    }
    out.update(optional_metrics_to_json(agg))
    return out


def aggregate_from_json(raw: Any, path: str = "aggregate") -> AggregateMetrics:
    obj = read_object(raw, path)
    return AggregateMetrics(
        recall_at_k=_k_map_at(obj, "recall_at_k", path),
        mrr=_float_at(obj, "mrr", path),
        ndcg_at_k=_k_map_at(obj, "ndcg_at_k", path),
        query_count=read_int(require(obj, "query_count", path), where(path, "query_count")),
        **optional_aggregate_from_json(obj, path),
    )


def _read_expected_entry(raw: Any, path: str) -> ExpectedEntry:
    # both keys are named by the entry's path (the format-1 messages)
    entry = read_object(raw, path)
    return ExpectedEntry(
        path=read_str(require(entry, "path", path), path),
        heading=read_opt_str(entry.get("heading"), path),
        # written only when not 1, so binary runs keep their bytes
        grade=read_int(entry.get("grade", 1), where(path, "grade"), lo=0, hi=2**32 - 1),
    )


def _write_expected_entry(entry: ExpectedEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"path": entry.path, "heading": entry.heading}
    if entry.grade != 1:
        out["grade"] = entry.grade
    return out


def _write_expected(entries: tuple[ExpectedEntry, ...]) -> list[dict[str, Any]]:
    return [_write_expected_entry(e) for e in entries]


def _read_expected(value: Any, path: str) -> tuple[ExpectedEntry, ...]:
    return tuple(read_items(value, path, _read_expected_entry))


def _read_top_k(value: Any, path: str) -> tuple[TopHit, ...]:
    return tuple(read_items(value, path, TopHit.from_json))


@dataclass(frozen=True)
class QueryResult(_JsonRecord):
    """One golden query's outcome: what it asked, what came back, how well it did.

    Plain data with a JSON form, so a pytest-xdist worker can ship it to the
    controller on its test report (``to_json`` / ``from_json``).
    """

    id: str = field(metadata=json_key(read_str, required=True))
    query: str = field(metadata=json_key(read_str, required=True))
    expected: tuple[ExpectedEntry, ...] = field(
        metadata=json_key(_read_expected, write=_write_expected, required=True, early=True)
    )
    #: the whole retrieved list (it may be longer than every k)
    top_k: tuple[TopHit, ...] = field(
        metadata=json_key(_read_top_k, write=write_all, required=True)
    )
    metrics: QueryMetrics = field(
        metadata=json_key(metrics_from_json, write=metrics_to_json, required=True)
    )
    #: the golden query's ``not_expected`` entries (written only when it has some; the
    #: compact history leaves them out: a baseline is judged by the current golden file)
    not_expected: tuple[ExpectedEntry, ...] = field(
        default=(),
        metadata=json_key(_read_expected, write=_write_expected, absent=(), omit_empty=True),
    )
    #: the golden query's ``within`` (written only when set)
    within: int | None = field(default=None, metadata=json_key(optional(read_int), omit_none=True))

    json_path: ClassVar[str] = "query"


def evaluate_query(
    q: GoldenQuery,
    hits: Sequence[SearchHit],
    k_values: Sequence[int],
    optional_metrics: Collection[str] = (),
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
        metrics=query_metrics(q.expected, ranked, tuple(k_values), optional_metrics),
        not_expected=q.not_expected,
        within=q.within,
    )


# --------------------------------------------------------------------------- findings


@dataclass(frozen=True)
class QuotedQuery:
    query_id: str = field(metadata=json_key(read_str, required=True))
    #: rank of the quoting document in that query's retrieved list, None if absent
    rank_in_top_k: int | None = field(metadata=json_key(optional(read_int)))

    def to_json(self) -> dict[str, Any]:
        return record_to_json(self)

    @classmethod
    def from_json(cls, raw: Any, path: str) -> QuotedQuery:
        # both keys are named by the entry's path (the format-1 messages)
        entry = read_object(raw, path)
        return cls(
            query_id=read_str(require(entry, "query_id", path), path),
            rank_in_top_k=optional(read_int)(entry.get("rank_in_top_k"), path),
        )


def _read_quoted(value: Any, path: str) -> tuple[QuotedQuery, ...]:
    return tuple(read_items(value, path, QuotedQuery.from_json))


@dataclass(frozen=True)
class Finding(_JsonRecord):
    """One document reported by a corpus check (today only ``golden-queries-quoted``)."""

    check: str = field(metadata=json_key(read_str, required=True))
    path: str = field(metadata=json_key(read_str, required=True))
    quoted: tuple[QuotedQuery, ...] = field(
        metadata=json_key(_read_quoted, write=write_all, required=True, early=True)
    )

    json_path: ClassVar[str] = "finding"


# --------------------------------------------------------------------------- corpus


def corpus_to_json(corpus: CorpusSnapshot) -> dict[str, Any]:
    out: dict[str, Any] = {
        "documents": corpus.documents,
        "chunks": corpus.chunks,
        "digest": corpus.digest,
    }
    if corpus.files is not None:
        # one object, path -> digest prefix: the history is committed, keep it short
        out["files"] = dict(corpus.files)
    if corpus.digest_version != 1:
        # no key: version 1, so the runs of older versions keep their bytes
        out["digest_version"] = corpus.digest_version
    return out


def _read_files(raw: Any, path: str) -> tuple[tuple[str, str], ...] | None:
    if raw is None:
        return None
    obj = read_object(raw, path)
    return tuple(sorted((name, read_str(value, where(path, name))) for name, value in obj.items()))


def corpus_from_json(raw: Any, path: str = "corpus") -> CorpusSnapshot:
    obj = read_object(raw, path)
    return CorpusSnapshot(
        documents=read_int(require(obj, "documents", path), where(path, "documents")),
        chunks=read_int(require(obj, "chunks", path), where(path, "chunks")),
        digest=read_str(require(obj, "digest", path), where(path, "digest")),
        files=_read_files(obj.get("files"), where(path, "files")),
        digest_version=read_int(obj.get("digest_version", 1), where(path, "digest_version")),
    )


# --------------------------------------------------------------------------- run record


def _read_per_query(value: Any, path: str) -> tuple[QueryResult, ...]:
    return tuple(read_items(value, path, QueryResult.from_json))


def _read_findings(value: Any, path: str) -> tuple[Finding, ...]:
    return () if value is None else tuple(read_items(value, path, Finding.from_json))


@dataclass(frozen=True)
class RunRecord(_JsonRecord):
    timestamp: datetime = field(
        metadata=json_key(parse_timestamp, write=format_timestamp, required=True)
    )
    fingerprint: Fingerprint = field(
        metadata=json_key(Fingerprint.from_json, write=Fingerprint.to_json, required=True)
    )
    #: None only for runs recorded before corpus snapshots existed
    corpus: CorpusSnapshot | None = field(
        metadata=json_key(optional(corpus_from_json), write=corpus_to_json, omit_none=True)
    )
    #: a tuple, or for a run read from the history a :class:`~.stored.LazyTuple`
    #: that reads the queries at their first use
    per_query: Sequence[QueryResult] = field(
        metadata=json_key(_read_per_query, write=write_all, required=True)
    )
    aggregate: AggregateMetrics = field(
        metadata=json_key(aggregate_from_json, write=aggregate_to_json, required=True)
    )
    #: left out of the JSON when empty
    findings: tuple[Finding, ...] = field(
        default=(),
        metadata=json_key(_read_findings, write=write_all, absent=(), omit_empty=True),
    )
    #: the thresholds, floors and significance level in effect (None: older runs)
    gate: GateRecord | None = field(
        default=None,
        metadata=json_key(optional(GateRecord.from_json), write=GateRecord.to_json, omit_none=True),
    )
    #: this run is the history's frozen baseline (stored once, at the top of the
    #: history file, not inside the run; see history.py)
    frozen: bool = field(default=False, compare=False)
    #: its stored digest did not match its content (see history_trust.py)
    edited: bool = field(default=False, compare=False)
    #: the history's text of this run, when its digest vouched for it (:mod:`.stored`)
    stored: StoredText | None = field(default=None, compare=False, repr=False)

    json_path: ClassVar[str] = "run"

    def _content(self) -> tuple[object, ...]:
        """What the stored text of a run holds (the frozen mark lives elsewhere)."""
        return (
            self.timestamp,
            self.fingerprint,
            self.corpus,
            self.per_query,
            self.aggregate,
            self.findings,
            self.gate,
            self.edited,
        )

    def keeping_text(self, text: str) -> RunRecord:
        """This run, remembering ``text`` as the stored JSON it was read from."""
        return replace(self, stored=StoredText(text, self._content()))

    def stored_text(self) -> str | None:
        """The stored JSON this run was read from, while the run is still what was
        read (None for a new run, or one made from a stored run by changing a field)."""
        if self.stored is None or not self.stored.describes(self._content()):
            return None
        return self.stored.text


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
