"""Pre-flight and the metric table: every golden query under all 384 conditions.

Cost structure, cheapest last:

1. the usable queries are embedded in one batch;
2. the vector list of each query is fetched once (it depends on no fusion knob);
3. the FTS list of each query under every weight triple -- 64 lists, because the
   bm25 weights decide which rows survive the ``LIMIT`` -- from ONE pass over its
   matching rows (``fts_legs``: per-phrase, per-column hit counts, bm25 recomputed
   exactly as FTS5 computes it; the pre-flight's default-weight list is reused);
4. everything else happens in memory: each distinct FTS list is fused with the
   vector list at all six ``rrf_k`` values in one numpy pass
   (:class:`~pytest_groove.search.pipeline.fusion.RrfSweep`), and each distinct fused
   ranking is scored once with :func:`~pytest_groove.scoring.metrics.query_metrics`
   -- the same fusion and metric code ``groove search`` and ``groove eval`` run.

The legs come from the search pipeline itself (:class:`CandidateSource`), so a
golden query with ``-term`` exclusions is filtered exactly as in a search.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from pytest_groove.errors import GrooveError, clip
from pytest_groove.kb.store.tie_order import TieOrder
from pytest_groove.scoring.metric_table import RECALL, RR, Metric
from pytest_groove.scoring.metrics import (
    AggregateMetrics,
    QueryMetrics,
    aggregate,
    query_metrics,
)
from pytest_groove.scoring.records import GoldenQuery
from pytest_groove.search.pipeline.documents import documents_first
from pytest_groove.search.pipeline.fusion import FusedRanking, RrfSweep, pool_sizes
from pytest_groove.search.pipeline.notes import notes_first
from pytest_groove.search.query.fts_query import ParsedQuery, parse_query
from pytest_groove.tune.decide import PRIMARY_K
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    N_CONDITIONS,
    N_K,
    N_WEIGHT_TRIPLES,
    RRF_K_VALUES,
    weight_triple_index,
    weight_triples,
)
from pytest_groove.tune.units import Units, query_units

FloatArray = npt.NDArray[np.float64]
Log = Callable[[str], None]


#: a query is effective (can react to the fusion knobs) with this many FTS candidates
MIN_FTS_CANDIDATES = 2
#: weight triples whose FTS lists decide ``bm25_sensitive``
HEADING_HEAVY = weight_triple_index(3, 0, 0)  # h=4.0 ctx=0.5 content=0.5
CONTENT_HEAVY = weight_triple_index(0, 0, 3)  # h=0.5 ctx=0.5 content=4.0
DEFAULT_TRIPLE = DEFAULT_CONDITION.weight_index


class CandidateSource(Protocol):
    """What the sweep needs from an open index;
    :class:`~pytest_groove.engine.builtin.Engine` is one."""

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def tie_order(self) -> TieOrder: ...

    def vector_leg(
        self, query_vector: npt.NDArray[np.float32], n: int, parsed: ParsedQuery
    ) -> list[int]: ...

    def note_vector_leg(
        self, query_vector: npt.NDArray[np.float32], n: int, parsed: ParsedQuery
    ) -> list[int]: ...

    def fts_leg(
        self,
        parsed: ParsedQuery,
        weights: tuple[float, float, float],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[int]: ...

    def fts_legs(
        self,
        parsed: ParsedQuery,
        weights: Sequence[tuple[float, float, float]],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[list[int]]: ...

    def gate_fts(
        self, parsed: ParsedQuery, fts_ids: list[int], vector_ids: Sequence[int]
    ) -> list[int]: ...

    def fts_vote(self, parsed: ParsedQuery, fts_ids: Sequence[int]) -> float: ...

    def fts_match_count(self, match_expr: str, table: str = ...) -> int: ...

    def chunk_labels(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]: ...

    def chunk_count(self) -> int: ...

    def context_chunk_count(self) -> int: ...


@dataclass
class QueryDiagnostics:
    """Why a query can or cannot react to the fusion parameters."""

    id: str
    #: length of the FTS list at the default weights (at most the pool size)
    fts_candidates: int = 0
    #: chunks matching the compiled expression, no LIMIT: the size of the OR-union
    #: of the phrases, so only an upper bound on any one phrase's document frequency
    fts_total_matches: int = 0
    #: FTS candidates that are also in the vector list; 0 means rrf_k cannot reorder
    vec_fts_overlap: int = 0
    #: the FTS order differs between the heading-heavy and content-heavy extremes
    bm25_sensitive: bool = False
    #: the union covers at least half of all chunks (FTS5 clamps such IDFs): a hint
    idf_clamped: bool = False
    #: adjacent equal float32 scores in the default condition's fused list
    rrf_ties: int = 0

    @property
    def effective(self) -> bool:
        """0 candidates is vector-only, 1 has a fixed rank: neither can move."""
        return self.fts_candidates >= MIN_FTS_CANDIDATES

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "fts_candidates": self.fts_candidates,
            "fts_total_matches": self.fts_total_matches,
            "vec_fts_overlap": self.vec_fts_overlap,
            "bm25_sensitive": self.bm25_sensitive,
            "idf_clamped": self.idf_clamped,
            "rrf_ties": self.rrf_ties,
            "effective": self.effective,
        }


@dataclass
class PreparedQuery:
    golden: GoldenQuery
    parsed: ParsedQuery
    vec_ids: list[int]
    fts_default: list[int]
    diagnostics: QueryDiagnostics
    #: with note order: the note-carrying vector list, and the default full-text
    #: list as the script gate treats it next to that list
    note_vec_ids: list[int] = field(default_factory=list)
    note_fts_default: list[int] = field(default_factory=list)
    #: the weight of the default full-text list's terms in both fusions (search's vote)
    fts_vote_default: float = 1.0


@dataclass
class Timings:
    """Wall-clock seconds per stage (reported so the cost split is measured, not guessed)."""

    embed: float = 0.0
    vector: float = 0.0
    fts: float = 0.0
    fts_calls: int = 0
    count: float = 0.0
    labels: float = 0.0
    fuse: float = 0.0
    metrics: float = 0.0
    distinct_fts_lists: int = 0
    distinct_rankings: int = 0

    def summary(self) -> str:
        return (
            f"embed {self.embed:.2f}s, vector {self.vector:.2f}s, "
            f"fts {self.fts:.2f}s ({self.fts_calls} fetches) + counts {self.count:.2f}s, "
            f"labels {self.labels:.2f}s, fuse {self.fuse:.2f}s "
            f"({self.distinct_fts_lists} distinct FTS lists), "
            f"metrics {self.metrics:.2f}s ({self.distinct_rankings} distinct rankings)"
        )


@dataclass
class Preflight:
    queries: list[PreparedQuery]
    limit: int
    k_values: tuple[int, ...]
    pool_size: int
    chunk_total: int
    context_chunks: int
    timings: Timings = field(default_factory=Timings)
    #: each fused list is grouped by document before it is cut, as search does
    document_first: bool = False
    #: with document_first: documents in note order (search.notes), as search does
    note_order: bool = False
    #: the index's context mode: ``off``, ``static`` or ``embedded`` (breadcrumb
    #: embedded, not searched), which says why no chunk has context text
    context_mode: str = "off"

    @property
    def effective(self) -> list[int]:
        """Rows of the queries that can react to the fusion parameters, golden order."""
        return [i for i, q in enumerate(self.queries) if q.diagnostics.effective]

    @property
    def units(self) -> Units:
        """The effective rows grouped by query text (:mod:`.units`): each group counts
        once in the selection and the statistics."""
        return query_units([q.golden for q in self.queries], self.effective)

    @property
    def context_axis_noop(self) -> bool:
        """No chunk has context text, so bm25_context_weight multiplies zeros."""
        return self.context_chunks == 0

    @property
    def context_axis_why(self) -> str:
        """Why the context column is empty, as the warning says it."""
        if self.context_mode == "embedded":
            return "the breadcrumb is embedded but not searched: [contextual] full_text = false"
        return "contextual retrieval is off"


def candidate_pool(limit: int) -> int:
    """Per-leg candidates: ``max(5 * limit, 50)`` -- a floor, not a cap."""
    return pool_sizes(limit, mmr=False, reranker=False).per_leg_n


def refuse_unscorable(queries: Sequence[GoldenQuery]) -> None:
    """Raise :class:`GrooveError` for the first query without an expected entry.

    The golden loader refuses such a query already; a golden set built in code is
    refused here, in one line, rather than measured without it.
    """
    for query in queries:
        if not query.expected:
            at = f" (line {query.line})" if query.line > 0 else ""
            raise GrooveError(
                f"golden query `{clip(query.id)}`{at} has no expected entry, so it cannot be "
                "scored; name at least one `path` it should find (nothing was measured)"
            )


def run_preflight(
    source: CandidateSource,
    queries: Sequence[GoldenQuery],
    limit: int,
    k_values: Sequence[int],
    log: Log | None = None,
    document_first: bool = False,
    note_order: bool = False,
) -> Preflight:
    """Embed the usable queries, fetch their vector lists and default FTS lists.

    ``note_order`` (only with ``document_first``) also fetches each query's
    note-carrying vector list, so the sweep orders documents as search does.

    A golden query with no expected entry cannot be scored: it is refused with one
    line, as the golden loader refuses it (:func:`refuse_unscorable`), never
    skipped.
    """
    timings = Timings()
    refuse_unscorable(queries)
    usable = list(queries)
    parsed = [parse_query(q.query) for q in usable]
    pool = candidate_pool(limit)
    chunk_total = source.chunk_count()
    context_chunks = source.context_chunk_count()
    vectors = _embed_queries(source, parsed, timings)
    if log is not None:
        log("groove tune: pre-flight (measuring FTS candidates per query)...")
    with_notes = note_order and document_first
    prepared: list[PreparedQuery] = []
    for row, (golden, pq) in enumerate(zip(usable, parsed, strict=True)):
        assert vectors is not None
        prepared.append(
            _prepare_query(source, golden, pq, vectors[row], pool, chunk_total, timings, with_notes)
        )
    return Preflight(
        queries=prepared,
        limit=limit,
        k_values=tuple(k_values),
        pool_size=pool,
        chunk_total=chunk_total,
        context_chunks=context_chunks,
        timings=timings,
        document_first=document_first,
        note_order=with_notes,
        context_mode=getattr(source, "context_mode", "off"),
    )


def _embed_queries(
    source: CandidateSource, parsed: Sequence[ParsedQuery], timings: Timings
) -> npt.NDArray[np.float32] | None:
    """One vector per query (None when there is none to embed)."""
    started = time.perf_counter()
    vectors = source.embed_queries([p.positive for p in parsed]) if parsed else None
    timings.embed = time.perf_counter() - started
    if parsed and (vectors is None or len(vectors) != len(parsed)):
        # only a broken (e.g. conftest-supplied) embedder gets here
        got = 0 if vectors is None else len(vectors)
        raise GrooveError(
            f"the embedding model returned {got} vectors for {len(parsed)} golden queries; "
            "check the embedder (--model)"
        )
    return vectors


def _prepare_query(
    source: CandidateSource,
    golden: GoldenQuery,
    pq: ParsedQuery,
    vector: npt.NDArray[np.float32],
    pool: int,
    chunk_total: int,
    timings: Timings,
    with_notes: bool,
) -> PreparedQuery:
    """One query's vector list, its default FTS list (gated) and its diagnostics."""
    t0 = time.perf_counter()
    vec_ids = source.vector_leg(vector, pool, pq)
    t1 = time.perf_counter()
    fts_ids: list[int] = []
    total = 0
    default_list: list[int] = []
    if pq.fts is not None:
        # fetched once, gated next to each vector list that is fused with it
        default_list = source.fts_leg(pq, DEFAULT_CONDITION.params.weights, pool)
        fts_ids = source.gate_fts(pq, default_list, vec_ids)
        timings.fts_calls += 1
    t2 = time.perf_counter()
    if pq.fts is not None:
        total = source.fts_match_count(pq.fts, pq.fts_table)
    t3 = time.perf_counter()
    timings.vector += t1 - t0
    timings.fts += t2 - t1
    timings.count += t3 - t2
    vec_set = set(vec_ids)
    diag = QueryDiagnostics(
        id=golden.id,
        fts_candidates=len(fts_ids),
        fts_total_matches=total,
        vec_fts_overlap=sum(1 for cid in fts_ids if cid in vec_set),
        idf_clamped=chunk_total > 0 and 2 * total >= chunk_total,
    )
    entry = PreparedQuery(golden, pq, vec_ids, fts_ids, diag)
    entry.fts_vote_default = source.fts_vote(pq, default_list)
    if with_notes:
        entry.note_vec_ids = source.note_vector_leg(vector, pool, pq)
        if pq.fts is not None:
            entry.note_fts_default = source.gate_fts(pq, default_list, entry.note_vec_ids)
    return entry


# --------------------------------------------------------------------------- metric table


@dataclass(frozen=True)
class _Hit:
    rank: int
    path: str
    heading: str | None


@dataclass
class MetricTable:
    """Per-query metrics under every condition: arrays of shape (queries, 384)."""

    k_values: tuple[int, ...]
    ndcg: dict[int, FloatArray]
    recall: dict[int, FloatArray]
    rr: FloatArray

    @classmethod
    def empty(cls, n_queries: int, k_values: Sequence[int]) -> MetricTable:
        shape = (n_queries, N_CONDITIONS)
        ks = tuple(k_values)
        return cls(
            k_values=ks,
            ndcg={k: np.zeros(shape) for k in ks},
            recall={k: np.zeros(shape) for k in ks},
            rr=np.zeros(shape),
        )

    @property
    def n_queries(self) -> int:
        return int(self.rr.shape[0])

    @property
    def primary(self) -> FloatArray:
        """The primary metric (:data:`~.decide.PRIMARY`), which selection and decision use."""
        return self.ndcg[PRIMARY_K]

    def secondary(self) -> dict[str, FloatArray]:
        """Recall at every k, then MRR (threshold spellings): what criterion 5 guards."""
        out: dict[str, FloatArray] = {
            Metric(RECALL, k).threshold_key: self.recall[k] for k in self.k_values
        }
        out[Metric(RR).threshold_key] = self.rr
        return out

    def set_cell(self, row: int, condition: int, metrics: QueryMetrics) -> None:
        for k in self.k_values:
            self.ndcg[k][row, condition] = metrics.ndcg_at_k[k]
            self.recall[k][row, condition] = metrics.recall_at_k[k]
        self.rr[row, condition] = metrics.reciprocal_rank

    def cell_metrics(self, row: int, condition: int) -> QueryMetrics:
        """One cell as the per-query metrics ``groove eval`` would have recorded."""
        return QueryMetrics(
            recall_at_k={k: float(self.recall[k][row, condition]) for k in self.k_values},
            reciprocal_rank=float(self.rr[row, condition]),
            ndcg_at_k={k: float(self.ndcg[k][row, condition]) for k in self.k_values},
        )

    def aggregate(self, condition: int) -> AggregateMetrics:
        """Means over every query under one condition, computed as ``groove eval``
        computes them (:func:`~pytest_groove.scoring.metrics.aggregate`, rows in
        golden order), so the default condition reports eval's numbers to the last
        digit."""
        return aggregate([self.cell_metrics(row, condition) for row in range(self.n_queries)])


def _adjacent_ties(ranking: FusedRanking) -> int:
    scores = ranking.scores
    return int(np.count_nonzero(scores[1:] == scores[:-1])) if len(scores) > 1 else 0


#: each chunk's (path, heading), by chunk id
Labels = dict[int, tuple[str, str | None]]


@dataclass(frozen=True)
class _FtsLists:
    """One FTS list per weight triple, gated next to the vector list, and (with note
    order) the same lists gated next to the note-carrying vector list."""

    plain: list[list[int]]
    note: list[list[int]]
    #: the weight of each list's terms when fused (search's full-text vote)
    votes: list[float]


@dataclass(frozen=True)
class _Fused:
    """The fused rankings (one per rrf_k) of each weight triple's FTS list."""

    #: per distinct FTS list
    distinct: dict[tuple[int, ...], list[FusedRanking]]
    per_triple: list[list[FusedRanking]]
    #: with note order: the same against the note-carrying vector list
    note_per_triple: list[list[FusedRanking]]


def build_metric_table(
    source: CandidateSource, pre: Preflight, log: Log | None = None
) -> MetricTable:
    """Fill every (query, condition) cell; also completes the sweep diagnostics."""
    table = MetricTable.empty(len(pre.queries), pre.k_values)
    triples = list(weight_triples())
    total = len(pre.queries)
    for row, query in enumerate(pre.queries):
        if log is not None:
            log(
                f"  [{row + 1}/{total}] sweeping {N_WEIGHT_TRIPLES} weight conditions "
                f"for {query.golden.id}"
            )
        lists = _fts_lists(source, pre, query, triples)
        query.diagnostics.bm25_sensitive = lists.plain[HEADING_HEAVY] != lists.plain[CONTENT_HEAVY]
        fused = _fuse_lists(source, pre, query, lists)
        default_ranking = fused.per_triple[DEFAULT_TRIPLE][DEFAULT_CONDITION.k]
        query.diagnostics.rrf_ties = _adjacent_ties(default_ranking)
        labels = _chunk_labels(source, fused, pre.timings)
        _score_row(table, row, pre, query, fused, labels)
    return table


def _fts_lists(
    source: CandidateSource,
    pre: Preflight,
    query: PreparedQuery,
    triples: Sequence[tuple[int, tuple[float, float, float]]],
) -> _FtsLists:
    """One FTS fetch per weight triple; the default triple reuses the pre-flight list."""
    timings = pre.timings
    t0 = time.perf_counter()
    lists: list[list[int]] = [[] for _ in triples]
    note_lists: list[list[int]] = [[] for _ in triples]
    votes = [1.0 for _ in triples]
    if query.parsed.fts is not None:
        # every other triple's list from one pass over the matching rows
        others = [(w, weights) for w, weights in triples if w != DEFAULT_TRIPLE]
        fetched = source.fts_legs(query.parsed, [t for _, t in others], pre.pool_size)
        for (w, _), fts_list in zip(others, fetched, strict=True):
            lists[w] = source.gate_fts(query.parsed, fts_list, query.vec_ids)
            votes[w] = source.fts_vote(query.parsed, fts_list)
            if pre.note_order:
                # the same list, gated next to the note-carrying vector list
                note_lists[w] = source.gate_fts(query.parsed, fts_list, query.note_vec_ids)
        lists[DEFAULT_TRIPLE] = query.fts_default
        note_lists[DEFAULT_TRIPLE] = query.note_fts_default
        votes[DEFAULT_TRIPLE] = query.fts_vote_default
        timings.fts_calls += len(others)
    timings.fts += time.perf_counter() - t0
    return _FtsLists(lists, note_lists, votes)


def _fuse_lists(
    source: CandidateSource, pre: Preflight, query: PreparedQuery, lists: _FtsLists
) -> _Fused:
    """Fuse each distinct FTS list once, at all six k."""
    t0 = time.perf_counter()
    # grouped by document, a list is cut only after grouping (search does the same)
    tie = source.tie_order()
    fuser = RrfSweep(query.vec_ids, RRF_K_VALUES, None if pre.document_first else pre.limit, tie)
    distinct: dict[tuple[int, ...], list[FusedRanking]] = {}
    per_triple = [
        _fused_once(fuser, fts_ids, vote, distinct)
        for fts_ids, vote in zip(lists.plain, lists.votes, strict=True)
    ]
    note_per_triple: list[list[FusedRanking]] = []
    if pre.note_order:
        note_fuser = RrfSweep(query.note_vec_ids, RRF_K_VALUES, None, tie)
        note_distinct: dict[tuple[int, ...], list[FusedRanking]] = {}
        note_per_triple = [
            _fused_once(note_fuser, ids, vote, note_distinct)
            for ids, vote in zip(lists.note, lists.votes, strict=True)
        ]
    pre.timings.fuse += time.perf_counter() - t0
    pre.timings.distinct_fts_lists += len(distinct)
    return _Fused(distinct, per_triple, note_per_triple)


def _fused_once(
    fuser: RrfSweep,
    fts_ids: list[int],
    vote: float,
    fused: dict[tuple[int, ...], list[FusedRanking]],
) -> list[FusedRanking]:
    # a list's vote follows from its best hit, so equal lists have equal votes
    key = tuple(fts_ids)
    if key not in fused:
        fused[key] = fuser.fuse(fts_ids, vote)
    return fused[key]


def _chunk_labels(source: CandidateSource, fused: _Fused, timings: Timings) -> Labels:
    """The labels of every chunk any ranking holds, in one lookup."""
    t0 = time.perf_counter()
    rankings = [*fused.distinct.values(), *fused.note_per_triple]
    wanted = sorted({int(c) for ranked in rankings for r in ranked for c in r.ids})
    labels = source.chunk_labels(wanted)
    timings.labels += time.perf_counter() - t0
    return labels


def _score_row(
    table: MetricTable,
    row: int,
    pre: Preflight,
    query: PreparedQuery,
    fused: _Fused,
    labels: Labels,
) -> None:
    """Score each distinct ranking once with the shared metric code."""
    t0 = time.perf_counter()
    scored: dict[tuple[int, ...], QueryMetrics] = {}
    for w in range(N_WEIGHT_TRIPLES):
        for k_index, ranking in enumerate(fused.per_triple[w]):
            note_ranking = fused.note_per_triple[w][k_index] if pre.note_order else None
            ids = _as_search_cuts(pre, ranking, note_ranking, labels)
            metrics = scored.get(ids)
            if metrics is None:
                # a chunk deleted under us has no label; search drops it the same way
                kept = [labels[c] for c in ids if c in labels]
                hits = [_Hit(i, p, h) for i, (p, h) in enumerate(kept, start=1)]
                metrics = query_metrics(query.golden.expected, hits, pre.k_values)
                scored[ids] = metrics
            table.set_cell(row, w * N_K + k_index, metrics)
    pre.timings.metrics += time.perf_counter() - t0
    pre.timings.distinct_rankings += len(scored)


def _as_search_cuts(
    pre: Preflight, ranking: FusedRanking, note_ranking: FusedRanking | None, labels: Labels
) -> tuple[int, ...]:
    """A fused ranking's chunk ids as search returns them: grouped by document (in
    note order) before the cut when search groups."""
    ids = tuple(int(c) for c in ranking.ids)
    if note_ranking is not None:
        # a chunk deleted under us has no label; search drops it first too
        note_ids = [int(c) for c in note_ranking.ids]
        path_of = {c: labels[c][0] for c in [*ids, *note_ids] if c in labels}
        ordered = notes_first(
            [c for c in ids if c in path_of],
            [c for c in note_ids if c in path_of],
            path_of.__getitem__,
            int,
        )
        return tuple(ordered[: pre.limit])
    if pre.document_first:
        # a chunk deleted under us has no label; search drops it first too
        path_of = {c: labels[c][0] for c in ids if c in labels}
        return tuple(documents_first(list(path_of), path_of.__getitem__)[: pre.limit])
    return ids
