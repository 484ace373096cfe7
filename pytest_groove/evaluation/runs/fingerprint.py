"""The fingerprint of a run: everything that decides what its numbers mean.

Two runs are comparable only when their fingerprints are equal.  Each field's JSON
form is stated once, on the field (:func:`pytest_groove.shapes.json_key`): its
reader, whether it is required, what a missing key means (history written before
the key existed), and whether a None value is left out.  Adding a fingerprint key
is one field here (and, when the settings decide it, a line in :meth:`Fingerprint.
build`); the JSON writer, the reader and :data:`FINGERPRINT_KEYS` follow from it.

JSON rules (the history file format, spec-eval §6-§7): keys are written in field
order, then any unknown keys in the order they were read; the optional objects
(``mmr``, ``parent_retriever``, ``fusion``, ``context``, ``retriever``...) are left
out when off; ``reranker`` is always written (``null`` = none).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_groove.kb.source.markdown import CHUNKER_VERSION
from pytest_groove.scoring.metrics import METRIC_VERSION
from pytest_groove.search.query.fts_query import FTS_QUERY_VERSION
from pytest_groove.settings.config import SearchSettings, normalise_k_values
from pytest_groove.shapes import (
    json_key,
    json_keys,
    optional,
    read_int,
    read_json_value,
    read_list,
    read_object,
    read_opt_bool,
    read_opt_str,
    read_stored_float,
    read_str,
    record_fields_from_json,
    record_to_json,
    values_of,
    where,
)


def _read_k_values(value: Any, path: str) -> tuple[int, ...]:
    # every item is named by the list's path (the format-1 messages)
    return tuple(read_int(k, path) for k in read_list(value, path))


def _write_k_values(value: tuple[int, ...]) -> list[int]:
    return list(value)


def _read_names(value: Any, path: str) -> tuple[str, ...]:
    return tuple(read_str(name, path) for name in read_list(value, path))


def _write_names(value: tuple[str, ...]) -> list[str]:
    return list(value)


#: the keys every fingerprint has
_REQUIRED_STR = json_key(read_str, required=True)
_REQUIRED_INT = json_key(read_int, required=True)
#: history written before a version key existed measured version 1
_VERSION = json_key(read_int, absent=1)
#: optional keys: absent (or null) when off, and then left out
_OPT_STR = json_key(read_opt_str, omit_none=True)
_OPT_BOOL = json_key(read_opt_bool, omit_none=True)
_FLOATS = json_key(optional(values_of(read_stored_float)), omit_none=True)
_INTS = json_key(optional(values_of(read_int)), omit_none=True)
_STRS = json_key(optional(values_of(read_str)), omit_none=True)


@dataclass(frozen=True)
class Fingerprint:
    """Everything that must be equal for two runs' numbers to be comparable.

    Compared as a whole (``==``).  The optional objects are ``None`` when their
    feature is off so that runs with the feature off stay comparable with history
    written before the field existed.
    """

    model: str = field(metadata=_REQUIRED_STR)
    #: reranker identifier, None when no reranking stage ran (always written)
    reranker: str | None = field(metadata=json_key(read_opt_str))
    #: the normalised limit (not the fetch depth)
    limit: int = field(metadata=_REQUIRED_INT)
    #: normalised: capped, sorted, de-duplicated
    k_values: tuple[int, ...] = field(
        metadata=json_key(_read_k_values, write=_write_k_values, required=True, early=True)
    )
    golden_hash: str = field(metadata=_REQUIRED_STR)
    metric_version: int = field(default=METRIC_VERSION, metadata=_VERSION)
    fts_query_version: int = field(default=FTS_QUERY_VERSION, metadata=_VERSION)
    #: the chunking rules the index was cut by (chunk boundaries move every ranking)
    chunker_version: int = field(default=CHUNKER_VERSION, metadata=_VERSION)
    #: {"lambda", "same_doc_penalty"} when MMR ran
    mmr: dict[str, float] | None = field(default=None, metadata=_FLOATS)
    #: {"whole_doc_threshold_tokens", "max_expanded_tokens"} when the parent retriever ran
    parent_retriever: dict[str, int] | None = field(default=None, metadata=_INTS)
    #: all four fusion values when any differs from the built-in defaults
    fusion: dict[str, float] | None = field(default=None, metadata=_FLOATS)
    #: {"mode": "static"} or {"mode": "embedded"} when the index was built with
    #: contextual indexing
    context: dict[str, str] | None = field(default=None, metadata=_STRS)
    #: qualified name of a custom retriever from conftest.py (pytest door only)
    retriever: str | None = field(default=None, metadata=_OPT_STR)
    #: False when the vector leg ran without language centring (the default is on)
    vector_centring: bool | None = field(default=None, metadata=_OPT_BOOL)
    #: False when the full-text leg ran without the script gate (the default is on)
    fts_script_gate: bool | None = field(default=None, metadata=_OPT_BOOL)
    #: the approximate vector index kind ("hnsw"); None for the exact flat index
    vector_index: str | None = field(default=None, metadata=_OPT_STR)
    #: True when the fused list was grouped by document (the default since it
    #: exists): recorded when on, so such runs never compare with older history
    document_first: bool | None = field(default=None, metadata=_OPT_BOOL)
    #: True when the documents were ordered by note-carrying vectors (the default
    #: since it exists; see search.notes): recorded when on, like document_first
    note_order: bool | None = field(default=None, metadata=_OPT_BOOL)
    #: True when the full-text list's RRF terms were weighed by how much of the
    #: query its best hit holds (the default since it exists; see
    #: search.pipeline.hybrid): recorded when on, so such runs never compare with
    #: history fused with a full vote
    fts_coverage_vote: bool | None = field(default=None, metadata=_OPT_BOOL)
    #: the optional metrics measured (metric table keys), None for the default three:
    #: a run with other metrics is not compared with one without them
    metrics: tuple[str, ...] | None = field(
        default=None, metadata=json_key(optional(_read_names), write=_write_names, omit_none=True)
    )
    #: "grade" when the golden set is graded (nDCG's gain is the grade); None for a
    #: binary set, so its runs stay comparable with history from before grades
    gain: str | None = field(default=None, metadata=_OPT_STR)
    #: keys this version does not know (from a newer version's run), kept verbatim
    #: so they survive a history rewrite; a non-empty ``extra`` never equals a
    #: fingerprint this version builds, so such a run is never compared
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.retriever is not None:
            # a custom retriever answered: the built-in pipeline's settings decided
            # nothing, so changing one (fusion, MMR, ...) must not stop two of its runs
            # from being compared -- that would switch the gate off unannounced.  Also
            # applied to stored runs, so a retriever run written with them compares.
            for name, value in _PIPELINE_ONLY.items():
                object.__setattr__(self, name, value)

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
        metrics: Sequence[str] = (),
        graded: bool = False,
    ) -> Fingerprint:
        """The fingerprint of a run with these effective settings.

        ``search`` must be the *effective* settings (config + command-line
        overrides); ``context_mode`` is what the index records, not what the config
        asks for.  ``reranker_id`` of None or "none" means no reranker.
        """
        return cls(
            model=model,
            reranker=None if reranker_id in (None, "none") else reranker_id,
            limit=limit,
            k_values=normalise_k_values(tuple(k_values)),
            golden_hash=golden_hash,
            fts_query_version=search.fts_query_version,
            mmr=_mmr_key(search),
            parent_retriever=_parent_retriever_key(search),
            fusion=_fusion_key(search),
            context=({"mode": context_mode} if context_mode in ("static", "embedded") else None),
            retriever=retriever,
            vector_centring=None if search.vector_centring else False,
            fts_script_gate=None if search.fts_script_gate else False,
            # runs on an approximate index never compare with exact ones (or history
            # from before the option existed)
            vector_index=None if vector_index in (None, "flat") else vector_index,
            document_first=_document_first_key(search, reranker_id, retriever),
            note_order=_note_order_key(search, reranker_id, retriever),
            fts_coverage_vote=True if retriever is None and search.fts_coverage_vote else None,
            metrics=tuple(metrics) or None,
            gain="grade" if graded else None,
        )

    def to_json(self) -> dict[str, Any]:
        out = record_to_json(self)
        # after the known keys, in the order they were read; a known key always wins
        out.update({key: value for key, value in self.extra.items() if key not in out})
        return out

    @classmethod
    def from_json(cls, raw: Any, path: str = "fingerprint") -> Fingerprint:
        obj: Mapping[str, Any] = read_object(raw, path)
        extra = {
            key: read_json_value(value, where(path, key))
            for key, value in obj.items()
            if key not in json_keys(cls)
        }
        return cls(**record_fields_from_json(cls, obj, path), extra=extra)


#: every fingerprint key this version reads; any other is kept in ``extra``
FINGERPRINT_KEYS = json_keys(Fingerprint)

#: the keys only the built-in search pipeline decides, and their value in the run of a
#: custom retriever (off, or the built-in default)
_PIPELINE_ONLY: dict[str, Any] = {
    "fts_query_version": FTS_QUERY_VERSION,
    "mmr": None,
    "parent_retriever": None,
    "fusion": None,
    "context": None,
    "vector_centring": None,
    "fts_script_gate": None,
    "vector_index": None,
    "document_first": None,
    "note_order": None,
    "fts_coverage_vote": None,
}


def differing_keys(now: Fingerprint, previous: Fingerprint) -> list[str]:
    """The top-level fingerprint keys whose stored values differ, in ``now``'s key order.

    A key only one side has counts (a custom retriever's run has ``retriever`` and no
    search-pipeline keys), so switching the retriever names ``retriever`` and the keys
    that came or went with it: the reason a report gives for not comparing two runs.
    """
    mine, theirs = now.to_json(), previous.to_json()
    ordered = list(mine) + [key for key in theirs if key not in mine]
    return [key for key in ordered if mine.get(key) != theirs.get(key)]


def _groups_by_document(search: SearchSettings, reranker_id: str | None) -> bool:
    """Whether search grouped the fused list by document (not under a reranker or MMR)."""
    reranked = reranker_id not in (None, "none")
    return search.document_first and not reranked and not search.mmr.enabled


def _mmr_key(search: SearchSettings) -> dict[str, float] | None:
    mmr = search.mmr
    if not mmr.enabled:
        return None
    return {"lambda": mmr.lambda_, "same_doc_penalty": mmr.same_doc_penalty}


def _parent_retriever_key(search: SearchSettings) -> dict[str, int] | None:
    parent = search.parent_retriever
    if not parent.enabled:
        return None
    return {
        "whole_doc_threshold_tokens": parent.whole_doc_threshold_tokens,
        "max_expanded_tokens": parent.max_expanded_tokens,
    }


def _fusion_key(search: SearchSettings) -> dict[str, float] | None:
    fusion = search.fusion
    if fusion.is_default:
        return None
    return {
        "rrf_k": fusion.rrf_k,
        "bm25_heading_weight": fusion.bm25_heading_weight,
        "bm25_context_weight": fusion.bm25_context_weight,
        "bm25_content_weight": fusion.bm25_content_weight,
    }


def _document_first_key(
    search: SearchSettings, reranker_id: str | None, retriever: str | None
) -> bool | None:
    return True if retriever is None and _groups_by_document(search, reranker_id) else None


def _note_order_key(
    search: SearchSettings, reranker_id: str | None, retriever: str | None
) -> bool | None:
    grouped = retriever is None and search.note_order and _groups_by_document(search, reranker_id)
    return True if grouped else None
