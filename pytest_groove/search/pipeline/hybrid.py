"""The hybrid search every door runs: the CLI, ``groove eval`` and the pytest items.

Order is fixed: vector leg + full-text leg (its vote weighed by how much of the
query its best hit holds) → reciprocal rank fusion →
document-first ordering (on by default) → optional cross-encoder rerank →
optional MMR → parent-retriever expansion → match spans.  Every other stage
after fusion is off by default, in which case the output is the RRF list with
each document's best chunk ahead of any second chunk, cut to the limit.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from pytest_groove.embed.base import Embedder
from pytest_groove.errors import GrooveError
from pytest_groove.kb.derived.phrase_scores import PhraseScores
from pytest_groove.kb.derived.vectors import VectorIndex
from pytest_groove.kb.store.bm25_sweep import best_rowids_per_triple
from pytest_groove.kb.store.database import ChunkRow, Store
from pytest_groove.kb.store.tie_order import TieOrder
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.pipeline.confidence import low_confidence
from pytest_groove.search.pipeline.documents import documents_first
from pytest_groove.search.pipeline.fusion import (
    PoolPlan,
    fts_fetch,
    fuse_rrf,
    pool_sizes,
    vector_fetch,
)
from pytest_groove.search.pipeline.mmr import mmr_select
from pytest_groove.search.pipeline.notes import notes_first
from pytest_groove.search.pipeline.parent import (
    Expansion,
    ParentChunk,
    apply_expansion,
    expand_parent,
)
from pytest_groove.search.pipeline.rerank import Reranker, rerank_scores, rerank_text
from pytest_groove.search.query.fts_query import ParsedQuery, is_excluded, leg_terms, parse_query
from pytest_groove.search.query.spans import match_spans
from pytest_groove.settings.config import SEARCH_LIMIT_MAX, SearchSettings
from pytest_groove.text.scripts import chunk_opening, script_group

#: the script gate keeps a full-text list whose best hit has this share of the
#: query's idf weight (half: most of what the query asks for was found verbatim)
GATE_MIN_COVERAGE = 0.5


def coverage_vote(coverage: float) -> float:
    """The full-text list's vote in the fusion, from its best hit's ``coverage``.

    The full-text leg matches the query's own words, so its list is evidence only as
    far as those words are what the query asks for.  A question phrased in other
    words than its answer still shares common words with many chunks (a note that
    uses the topic's vocabulary, a neighbouring note), and the list those words rank
    would count as much as the vector leg.  So its RRF terms are multiplied by the
    share of the query's idf weight its best hit holds, over
    :data:`GATE_MIN_COVERAGE`, capped at 1: a best hit holding half of what the query
    asks for (the script gate's threshold) votes in full, one holding a fifth votes
    at 0.4.  Search applies it while ``[search] fts_coverage_vote`` is on.
    """
    return min(1.0, max(0.0, coverage) / GATE_MIN_COVERAGE)


@dataclass
class SearchResponse:
    hits: list[SearchHit]
    low_confidence: bool
    #: the fused list was grouped by document (so the scores need not descend)
    grouped_by_document: bool = False


def _parent_chunk(row: ChunkRow) -> ParentChunk:
    return ParentChunk(
        document_id=row.document_id,
        chunk_index=row.chunk_index,
        content=row.content,
        token_count=row.token_count,
    )


#: candidates checked beyond the number still missing, per batch (HybridSearcher._first_kept)
_EXCLUSION_SLACK = 8


class HybridSearcher:
    """Runs queries against one open store + vector index."""

    def __init__(
        self,
        store: Store,
        vectors: VectorIndex,
        embedder: Embedder,
        reranker: Reranker | None = None,
        note_vectors: VectorIndex | None = None,
    ) -> None:
        self.store = store
        self.vectors = vectors
        #: chunk vectors carrying their note's vector (None: note order unavailable)
        self.note_vectors = note_vectors
        self.embedder = embedder
        self.reranker = reranker
        #: the full-text ranking, keeping each phrase's bm25 terms between queries
        self.phrase_scores = PhraseScores(store)
        #: query vectors embedded ahead of the searches (see prepare_queries)
        self._prepared: dict[str, npt.NDArray[np.float32]] = {}

    def prepare_queries(self, queries: Sequence[str]) -> None:
        """Embed the queries of a coming batch of searches in one embedder call.

        A golden set is known before its first search; embedding it in one batch
        costs a fraction of one call per query (a neural model's fixed cost per call
        dominates a short query).  Vectors do not depend on the batch they were
        embedded in, so results are the same as without preparing.
        """
        wanted: dict[str, None] = {}
        for query in queries:
            try:
                positive = parse_query(query).positive
            except GrooveError:
                continue  # its own search reports the error
            if positive not in self._prepared:
                wanted[positive] = None
        positives = list(wanted)
        if positives:
            vectors = self.embedder.embed_queries(positives)
            self._prepared.update(zip(positives, vectors, strict=True))

    def _query_vector(self, positive: str) -> npt.NDArray[np.float32]:
        prepared = self._prepared.get(positive)
        if prepared is not None:
            return prepared
        vector: npt.NDArray[np.float32] = self.embedder.embed_queries([positive])[0]
        return vector

    # ------------------------------------------------------------------ legs

    def tie_order(self) -> TieOrder:
        """How this state of the index orders equal scores: in corpus order, so an
        updated index ranks as a fresh build of the same notes
        (:mod:`pytest_groove.kb.store.tie_order`)."""
        return self.store.tie_order()

    def vector_leg(
        self,
        query_vector: npt.NDArray[np.float32],
        n: int,
        parsed: ParsedQuery,
        tie: TieOrder | None = None,
    ) -> list[int]:
        """Up to ``n`` chunk ids by vector similarity, ``-term`` exclusions applied
        (``tie``: the index's tie order, when the caller read it already)."""
        return self._vector_search(self.vectors, query_vector, n, parsed, tie)

    def note_vector_leg(
        self,
        query_vector: npt.NDArray[np.float32],
        n: int,
        parsed: ParsedQuery,
        tie: TieOrder | None = None,
    ) -> list[int]:
        """Up to ``n`` chunk ids by note-carrying vector similarity, exclusions applied."""
        if self.note_vectors is None:
            return []
        return self._vector_search(self.note_vectors, query_vector, n, parsed, tie)

    def _vector_search(
        self,
        index: VectorIndex,
        query_vector: npt.NDArray[np.float32],
        n: int,
        parsed: ParsedQuery,
        tie: TieOrder | None,
    ) -> list[int]:
        """Up to ``n`` chunk ids of ``index`` by similarity, exclusions applied."""
        filtered = bool(parsed.exclusions)
        query_vector = index.prepare_query(query_vector, parsed.positive)
        ids = index.search(query_vector, vector_fetch(n, filtered), tie or self.tie_order())
        return self._first_kept(ids, parsed, n) if filtered else ids[:n]

    def fts_leg(
        self,
        parsed: ParsedQuery,
        weights: tuple[float, float, float],
        n: int,
        vector_ids: Sequence[int] | None = None,
        tie: TieOrder | None = None,
    ) -> list[int]:
        """Up to ``n`` chunk ids by bm25 with the given column weights, exclusions applied.

        With ``vector_ids`` (the vector leg's list for the same query) the script gate
        applies and may return an empty list: see :meth:`fts_out_of_reach`.
        """
        if parsed.fts is None:
            return []
        filtered = bool(parsed.exclusions)
        ids = self.phrase_scores.candidates(
            parsed.fts, weights, fts_fetch(n, filtered), parsed.fts_table, tie or self.tie_order()
        )
        ids = self._first_kept(ids, parsed, n) if filtered else ids
        if vector_ids is not None and ids and self.fts_out_of_reach(parsed, vector_ids, ids[0]):
            return []
        return ids

    def fts_legs(
        self,
        parsed: ParsedQuery,
        weights: Sequence[tuple[float, float, float]],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        """``fts_leg`` under each weight triple, from ONE pass over the matching rows.

        Same lists as calling ``fts_leg`` per triple: bm25 is recomputed here exactly
        as FTS5 computes it (see :mod:`pytest_groove.kb.store.bm25_sweep`).
        """
        if parsed.fts is None:
            return [[] for _ in weights]
        filtered = bool(parsed.exclusions)
        hits = self.store.fts_phrase_hits(parsed.fts, parsed.fts_table)
        lists = best_rowids_per_triple(hits, weights, fts_fetch(n, filtered), self.tie_order())
        if filtered:
            kept = set(self._drop_excluded(sorted({c for ids in lists for c in ids}), parsed))
            lists = [[cid for cid in ids if cid in kept][:n] for ids in lists]
        if vector_ids is not None:
            lists = [
                [] if ids and self.fts_out_of_reach(parsed, vector_ids, ids[0]) else ids
                for ids in lists
            ]
        return lists

    def gate_fts(
        self,
        parsed: ParsedQuery,
        fts_ids: list[int],
        vector_ids: Sequence[int],
        settings: SearchSettings,
    ) -> list[int]:
        """``fts_ids``, or nothing when the script gate leaves it out next to ``vector_ids``."""
        if not settings.fts_script_gate or not fts_ids:
            return fts_ids
        return [] if self.fts_out_of_reach(parsed, vector_ids, fts_ids[0]) else fts_ids

    def fts_out_of_reach(
        self, parsed: ParsedQuery, vector_ids: Sequence[int], fts_top: int
    ) -> bool:
        """True when the full-text list is left out of the fusion (the script gate).

        The full-text leg matches the query's own words, so it can only find chunks
        written in the query's script.  When the (language-centred) vector leg's best
        chunk is written in another script, the answer is probably out of the
        full-text leg's reach, and its list -- all in the query's language -- would
        only pull the fusion back towards the query's language.  The list is still
        kept when its best hit holds at least :data:`GATE_MIN_COVERAGE` of the
        query's terms weighted by idf: an exact identifier found verbatim is strong
        evidence whatever the vector leg says.  Only applies to an index with more
        than one script group.
        """
        if not vector_ids or not self.vectors.means:
            return False
        top = self.store.chunk_rows([vector_ids[0]]).get(vector_ids[0])
        if top is None:
            return False
        if script_group(chunk_opening(top.heading, top.content)) == script_group(parsed.positive):
            return False
        return self._coverage(parsed, fts_top) < GATE_MIN_COVERAGE

    def fts_vote(
        self, parsed: ParsedQuery, fts_ids: Sequence[int], settings: SearchSettings
    ) -> float:
        """The weight of ``fts_ids``' RRF terms: :func:`coverage_vote` of its best hit."""
        if not settings.fts_coverage_vote or not fts_ids:
            return 1.0
        return coverage_vote(self._coverage(parsed, fts_ids[0]))

    def _coverage(self, parsed: ParsedQuery, chunk_id: int) -> float:
        """Share of the query's idf weight (bm25's idf) whose terms ``chunk_id`` contains."""
        stats = self.store.fts_term_stats(parsed.fts_table, leg_terms(parsed), chunk_id)
        total = self.store.counts()[1]
        weights = [(math.log(1.0 + (total - df + 0.5) / (df + 0.5)), hit) for df, hit in stats]
        whole = sum(w for w, _ in weights)
        return sum(w for w, hit in weights if hit) / whole if whole > 0 else 0.0

    def _first_kept(self, ids: Sequence[int], parsed: ParsedQuery, n: int) -> list[int]:
        """``_drop_excluded(ids, parsed)[:n]``, reading only as many rows as it takes.

        A leg over-fetches when the query has ``-term`` exclusions (most candidates
        usually survive), so the candidates are checked in order, a batch at a time,
        until ``n`` are kept: same list, a fraction of the rows read.
        """
        kept: list[int] = []
        at = 0
        while len(kept) < n and at < len(ids):
            batch = ids[at : at + max(n - len(kept), 1) + _EXCLUSION_SLACK]
            kept += self._drop_excluded(batch, parsed)
            at += len(batch)
        return kept[:n]

    def _drop_excluded(self, ids: Sequence[int], parsed: ParsedQuery) -> list[int]:
        rows = self.store.chunk_rows(ids)
        return [
            cid
            for cid in ids
            if cid in rows
            and not is_excluded(
                parsed.exclusions, rows[cid].heading, rows[cid].context, rows[cid].content
            )
        ]

    def _expand(self, row: ChunkRow, settings: SearchSettings) -> Expansion | None:
        """Parent-retriever content for one hit; a database error keeps the hit as is."""
        return expand_parent(
            _parent_chunk(row),
            lambda doc_id, cap: [
                _parent_chunk(r) for r in self.store.document_chunk_rows(doc_id, limit=cap)
            ],
            lambda doc_id, lo, hi: [
                _parent_chunk(r) for r in self.store.document_chunk_rows(doc_id, lo, hi, limit=16)
            ],
            settings.parent_retriever,
            tolerate=(apsw.Error,),
        )

    # ------------------------------------------------------------------ pipeline

    def search(self, query: str, limit: int, settings: SearchSettings) -> SearchResponse:
        """Run the whole pipeline; ``limit`` is clamped to the retrieval cap."""
        parsed = parse_query(query, version=settings.fts_query_version)
        limit = max(0, min(limit, SEARCH_LIMIT_MAX))
        use_reranker = self.reranker is not None
        plan = pool_sizes(limit, settings.mmr.enabled, use_reranker)
        # a reranker or MMR orders the pool its own way; otherwise the whole fused
        # list is grouped by document before it is cut to the limit
        by_document = settings.document_first and not use_reranker and not settings.mmr.enabled
        by_note = by_document and settings.note_order and self.note_vectors is not None
        fused, note_fused = self._fused(parsed, plan, settings, by_document, by_note)
        candidates = sorted({cid for cid, _ in [*fused, *note_fused]})
        # Only a reranker reads the text of the whole pool; otherwise ordering needs
        # each candidate's document, and the text is read for the hits alone.
        rows = self.store.chunk_rows(candidates) if use_reranker else {}
        document_of = (
            {cid: row.document_id for cid, row in rows.items()}
            if use_reranker
            else self.store.documents_of(candidates)
        )
        pool: list[tuple[int, float]] = [
            (cid, float(score)) for cid, score in fused if cid in document_of
        ]
        # the low-confidence flag judges the fused scores, however they are shown
        flag_scores = [score for _, score in pool[:limit]] if by_document else None
        if by_note:
            note_pool = [(cid, float(score)) for cid, score in note_fused if cid in document_of]
            pool = notes_first(pool, note_pool, lambda hit: document_of[hit[0]], lambda hit: hit[0])
        elif by_document:
            pool = documents_first(pool, lambda hit: document_of[hit[0]])

        if self.reranker is not None and pool:
            docs = [rerank_text(rows[cid].context, rows[cid].content) for cid, _ in pool]
            ranked = rerank_scores(self.reranker, parsed.positive, docs, plan.rerank_keep)
            pool = [(pool[i][0], score) for i, score in ranked]
        if settings.mmr.enabled and pool:
            pool = _mmr_pool(self.store, pool, document_of, limit, settings)
        pool = pool[:limit]
        if not use_reranker:
            rows = self.store.chunk_rows([cid for cid, _ in pool])
            pool = [(cid, score) for cid, score in pool if cid in rows]

        if flag_scores is None:
            flag_scores = [s for _, s in pool]
        flag = low_confidence(flag_scores, settings.min_confidence_ratio)
        return SearchResponse(
            hits=self._hits(parsed, pool, rows, settings),
            low_confidence=flag,
            grouped_by_document=by_document,
        )

    def _fused(
        self,
        parsed: ParsedQuery,
        plan: PoolPlan,
        settings: SearchSettings,
        by_document: bool,
        by_note: bool,
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
        """The legs fused by RRF: the vector and full-text legs, and (``by_note``) the
        note-carrying vector leg with the full-text leg (else an empty list)."""
        query_vector = self._query_vector(parsed.positive)
        tie = self.tie_order()  # read once for every leg and both fusions
        vec_ids = self.vector_leg(query_vector, plan.per_leg_n, parsed, tie)
        fts_all = self.fts_leg(parsed, settings.fusion.weights, plan.per_leg_n, tie=tie)
        fts_ids = self.gate_fts(parsed, fts_all, vec_ids, settings)
        vote = self.fts_vote(parsed, fts_all, settings)  # one list: one vote for both fusions
        fused_limit = None if by_document else plan.fused_limit
        fused = fuse_rrf(vec_ids, fts_ids, settings.fusion.rrf_k, fused_limit, tie, vote)
        note_fused: list[tuple[int, float]] = []
        if by_note:
            note_ids = self.note_vector_leg(query_vector, plan.per_leg_n, parsed, tie)
            note_fts = self.gate_fts(parsed, fts_all, note_ids, settings)
            note_fused = fuse_rrf(note_ids, note_fts, settings.fusion.rrf_k, None, tie, vote)
        return fused, note_fused

    def _hits(
        self,
        parsed: ParsedQuery,
        pool: list[tuple[int, float]],
        rows: dict[int, ChunkRow],
        settings: SearchSettings,
    ) -> list[SearchHit]:
        """The final pool as ranked hits: expanded to their parents when that stage is on,
        with their match spans."""
        hits: list[SearchHit] = []
        for rank, (cid, score) in enumerate(pool, start=1):
            row = rows[cid]
            hit = SearchHit(
                rank=rank,
                path=row.path,
                heading=row.heading,
                score=score,
                content=row.content,
                title=row.title,
                chunk_id=cid,
            )
            if settings.parent_retriever.enabled:
                hit = apply_expansion(hit, self._expand(row, settings))
            hit.match_spans = match_spans(parsed.positive, hit.content)
            hits.append(hit)
        return hits


def _mmr_pool(
    store: Store,
    pool: list[tuple[int, float]],
    document_of: dict[int, int],
    limit: int,
    settings: SearchSettings,
) -> list[tuple[int, float]]:
    """MMR's ``limit`` picks from ``pool`` (the chunks whose vectors are stored)."""
    embeddings = store.vectors_for([cid for cid, _ in pool])
    pool = [(cid, s) for cid, s in pool if cid in embeddings]
    if not pool:
        return pool
    matrix = np.stack([embeddings[cid] for cid, _ in pool])
    picks = mmr_select(
        [s for _, s in pool],
        matrix,
        [document_of[cid] for cid, _ in pool],
        limit,
        settings.mmr.lambda_,
        settings.mmr.same_doc_penalty,
    )
    return [pool[i] for i in picks]
