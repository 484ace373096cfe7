"""One engine, several doors: the facade the CLI, ``groove eval``/``tune`` and the
pytest plugin all open to index a KB and search it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pytest_groove.embed.base import Embedder
from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.index_command import missing_index
from pytest_groove.engine.indexing import (
    index_dir_for,
    reads_note_vectors,
    reads_term_table,
    resolve_kb,
)
from pytest_groove.engine.indexing import run_indexer as run_indexer
from pytest_groove.errors import GENERIC_INDEX_COMMAND, GrooveError, IndexMissing, clip_path, flag
from pytest_groove.files.beneath import index_folder_beneath
from pytest_groove.kb.derived.note_index import note_index_for
from pytest_groove.kb.derived.quote_scan import kept_quote_scan
from pytest_groove.kb.derived.vectors import VectorIndex
from pytest_groove.kb.indexer import IndexReport
from pytest_groove.kb.progress import ProgressTo
from pytest_groove.kb.source.records import ChunkText, CorpusSnapshot
from pytest_groove.kb.store.database import Store
from pytest_groove.kb.store.faults import index_dir_faults, index_faults
from pytest_groove.kb.store.indexed_headings import IndexedHeadings
from pytest_groove.kb.store.tie_order import TieOrder
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.pipeline.hybrid import HybridSearcher, SearchResponse
from pytest_groove.search.pipeline.rerank import get_reranker
from pytest_groove.search.query.fts_query import TERMS_QUERY_VERSION, ParsedQuery
from pytest_groove.settings.config import SearchSettings, Settings


class Engine:
    """An open, searchable index of one KB."""

    def __init__(
        self,
        kb: Path,
        settings: Settings,
        embedder: Embedder,
        store: Store,
        index_report: IndexReport | None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.embedder = embedder
        self.store = store
        #: what the indexer did when the engine was opened (None with reindex=False)
        self.index_report = index_report
        with self._faults(), store.read_snapshot():
            self.vectors = VectorIndex.load_for(
                store,
                store.path.parent,
                centre=settings.search.vector_centring,
                kind=settings.index.vector_index,
            )
            #: chunk vectors carrying their note's vector, when note order is on
            self.note_vectors: VectorIndex | None = None
            if settings.search.note_order:
                # a flat one is answered from the chunk index (one copy of the vectors)
                self.note_vectors = note_index_for(
                    store,
                    store.path.parent,
                    self.vectors,
                    centre=settings.search.vector_centring,
                    kind=settings.index.vector_index,
                )
            self.context_mode: str = store.get_meta("context_mode") or "off"
        self.reranker = get_reranker(settings.search.reranker)
        self._searcher = HybridSearcher(
            store, self.vectors, embedder, self.reranker, self.note_vectors
        )

    def _faults(self) -> AbstractContextManager[None]:
        """SQLite errors and undecodable rows become one line naming the index file."""
        return index_faults(self.store.path, self.store.conn)

    @property
    def model_name(self) -> str:
        return self.embedder.name

    @property
    def reranker_id(self) -> str | None:
        return None if self.reranker is None else self.reranker.name

    # ------------------------------------------------------------------ search

    def search(
        self, query: str, limit: int, search: SearchSettings | None = None
    ) -> list[SearchHit]:
        return self.search_response(query, limit, search).hits

    def search_response(
        self, query: str, limit: int, search: SearchSettings | None = None
    ) -> SearchResponse:
        with self._faults():
            return self._searcher.search(query, limit, search or self.settings.search)

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed the queries about to be searched in one batch (golden sets, tune)."""
        self._searcher.prepare_queries(queries)

    def read_snapshot(self) -> AbstractContextManager[None]:
        """Searches, corpus snapshot and quote scan inside see one index state."""
        return self._read_snapshot()

    @contextmanager
    def _read_snapshot(self) -> Iterator[None]:
        # only the snapshot's own statements are translated here: the caller's block
        # calls the guarded methods below, and its other errors are not the index's
        snapshot = self.store.read_snapshot()
        with self._faults():
            snapshot.__enter__()
        try:
            yield
        except BaseException as exc:
            # ends the transaction quietly: the block's error stays the one raised
            with self._faults():
                snapshot.__exit__(type(exc), exc, exc.__traceback__)
            raise
        with self._faults():
            snapshot.__exit__(None, None, None)

    def corpus_snapshot(self) -> CorpusSnapshot:
        """The index's corpus snapshot, kept in it per index state by the indexer
        (:mod:`~pytest_groove.kb.store.kept_snapshot`): one value read, not every document."""
        with self._faults(), self.store.read_snapshot():
            return self.store.kept_corpus_snapshot()

    def document_digests(self) -> dict[str, str]:
        """Each indexed path and the SHA-256 hex of its file (the indexer's hash)."""
        with self._faults():
            return self.store.document_hashes()

    def iter_chunk_texts(self) -> Iterator[ChunkText]:
        with self._faults():
            yield from self.store.iter_chunk_texts()

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        """Document path -> the normalised ``needles`` it quotes, from the scan kept
        in the index (the same answer as ``quoted_needles(needles,
        self.iter_chunk_texts())``).  Call inside :meth:`read_snapshot`, the snapshot
        that answered the searches."""
        with self._faults():
            return kept_quote_scan(self.store, needles)

    def headings_by_path(self) -> IndexedHeadings:
        """Every indexed path with its chunks' headings (for the pre-search golden check),
        each path's read when first asked: ask inside the same read snapshot."""
        return IndexedHeadings(self.store, self._faults)

    # ------------------------------------------------------------------ tune's low level

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embedder.embed_queries(list(texts))

    def tie_order(self) -> TieOrder:
        """How the index orders equal scores (tune fuses with it as search does)."""
        with self._faults():
            return self._searcher.tie_order()

    def vector_leg(
        self, query_vector: npt.NDArray[np.float32], n: int, parsed: ParsedQuery
    ) -> list[int]:
        """The pipeline's vector leg alone: chunk ids, best first, exclusions applied."""
        with self._faults():
            return self._searcher.vector_leg(query_vector, n, parsed)

    def note_vector_leg(
        self, query_vector: npt.NDArray[np.float32], n: int, parsed: ParsedQuery
    ) -> list[int]:
        """The note-carrying vector list search orders documents by ([] without it)."""
        with self._faults():
            return self._searcher.note_vector_leg(query_vector, n, parsed)

    def fts_leg(
        self,
        parsed: ParsedQuery,
        weights: tuple[float, float, float],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """The pipeline's full-text leg alone, with the given bm25 column weights.

        Pass the vector leg's list for the same query to get exactly what the
        pipeline fuses (the script gate may leave the full-text list out).
        """
        gate = vector_ids if self.settings.search.fts_script_gate else None
        with self._faults():
            return self._searcher.fts_leg(parsed, weights, n, gate)

    def gate_fts(
        self, parsed: ParsedQuery, fts_ids: list[int], vector_ids: Sequence[int]
    ) -> list[int]:
        """``fts_ids`` (an ungated ``fts_leg`` list), or nothing when the script gate
        leaves it out next to ``vector_ids`` -- one list, gated next to several."""
        with self._faults():
            return self._searcher.gate_fts(parsed, fts_ids, vector_ids, self.settings.search)

    def fts_vote(self, parsed: ParsedQuery, fts_ids: Sequence[int]) -> float:
        """The weight search gives the terms of ``fts_ids`` (an ungated ``fts_leg``
        list) when it fuses them (:meth:`HybridSearcher.fts_vote`)."""
        with self._faults():
            return self._searcher.fts_vote(parsed, fts_ids, self.settings.search)

    def fts_legs(
        self,
        parsed: ParsedQuery,
        weights: Sequence[tuple[float, float, float]],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        """``fts_leg`` under many weight triples at the cost of about one (tune's sweep)."""
        gate = vector_ids if self.settings.search.fts_script_gate else None
        with self._faults():
            return self._searcher.fts_legs(parsed, weights, n, gate)

    def fts_match_count(self, match_expr: str, table: str = "fts_chunks") -> int:
        with self._faults():
            return self.store.fts_match_count(match_expr, table)

    def chunk_labels(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        with self._faults():
            rows = self.store.chunk_rows(ids)
        return {cid: (row.path, row.heading) for cid, row in rows.items()}

    def chunk_count(self) -> int:
        with self._faults():
            return self.store.counts()[1]

    def context_chunk_count(self) -> int:
        with self._faults():
            return self.store.context_chunk_count()

    def close(self) -> None:
        # the full-text terms asked of SQLite, for the next process on this index state
        self._searcher.phrase_scores.save()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_engine(
    kb: Path,
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    reindex: bool = True,
    progress: ProgressTo = None,
    log: Callable[[str], None] | None = None,
) -> Engine:
    """Open the KB's index for searching, first bringing it up to date unless told not to."""
    kb = resolve_kb(kb)
    if not kb.is_dir():
        raise GrooveError(
            f"knowledge base {clip_path(kb)} is not a directory (check --kb-path / --groove-kb)"
        )
    embedder = embedder or get_embedder(settings.index.model)
    report = None
    if reindex:
        report = run_indexer(kb, settings, embedder=embedder, progress=progress, log=log)
    index_dir = index_dir_for(kb, settings, embedder.name)
    with index_dir_faults(index_dir):
        index_folder_beneath(kb, index_dir, create=False)
    try:
        store = Store.open(index_dir, create=False)
    except IndexMissing as exc:
        raise missing_index(exc, kb) from None  # the doors add the flags they were given
    try:
        with index_faults(store.path, store.conn):
            recorded = store.get_meta("embedding_model")
            keeps_term_table = store.keeps_term_table
            keeps_note_vectors = store.keeps_note_vectors
        if recorded is not None and recorded != embedder.name:
            raise GrooveError(
                f"embedding model mismatch: the index at {clip_path(store.path)} was built with "
                f"{recorded!r} but {embedder.name!r} was asked for; "
                f"pass {flag('model')} {recorded}, "
                f"or rebuild it for the new model with `{GENERIC_INDEX_COMMAND}`"
            )
        if reads_term_table(settings) and not keeps_term_table:
            raise GrooveError(
                f"the index at {clip_path(store.path)} has no word table, which [search] "
                f"fts_query_version = {TERMS_QUERY_VERSION} searches: run `groove index` "
                "with that setting once to add it"
            )
        if reads_note_vectors(settings) and not keeps_note_vectors:
            raise GrooveError(
                f"the index at {clip_path(store.path)} has no note vectors, which [search] "
                "note_order "
                "= true (the default) reads: run `groove index` with that setting once to "
                "add them, or set note_order = false"
            )
        return Engine(kb, settings, embedder, store, report)
    except BaseException:
        store.close()
        raise
