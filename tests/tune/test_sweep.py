"""Pre-flight and the metric table, against a scripted candidate source.

The fake returns hand-written candidate lists, so each test controls exactly which
query is effective and how the bm25 weights reorder things; it also counts the
FTS fetches.  The real engine is exercised in tests/tune/test_sweep_engine.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TieOrder
from pytest_groove.scoring.metrics import QueryMetrics, aggregate, query_metrics
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.pipeline.fusion import fuse_rrf
from pytest_groove.search.query.fts_query import ParsedQuery
from pytest_groove.tune.grid import DEFAULT_INDEX, Condition, all_conditions, condition_index
from pytest_groove.tune.sweep import (
    MetricTable,
    build_metric_table,
    candidate_pool,
    run_preflight,
)

Weights = tuple[float, float, float]
FtsFn = Callable[[Weights], list[int]]


@dataclass
class FakeSource:
    """Candidate lists by query text; labels ``doc<id>.md`` unless given."""

    vec: dict[str, list[int]]
    fts: dict[str, FtsFn]
    chunks: int = 100
    context_chunks: int = 0
    matches: dict[str, int] = field(default_factory=dict)
    labels: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    fts_calls: list[tuple[str, Weights, int]] = field(default_factory=list)
    embed_count: int | None = None

    def tie_order(self) -> TieOrder:
        return IN_ID_ORDER  # the fake's ids are in corpus order

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        n = len(texts) if self.embed_count is None else self.embed_count
        return np.zeros((n, 4), dtype=np.float32)

    def vector_leg(
        self, query_vector: npt.NDArray[np.float32], n: int, parsed: ParsedQuery
    ) -> list[int]:
        return self.vec[parsed.positive][:n]

    def fts_leg(
        self,
        parsed: ParsedQuery,
        weights: Weights,
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[int]:
        assert parsed.fts is not None
        self.fts_calls.append((parsed.positive, weights, n))
        return self.fts[parsed.positive](weights)[:n]

    def fts_legs(
        self,
        parsed: ParsedQuery,
        weights: Sequence[Weights],
        n: int,
        vector_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        return [self.fts_leg(parsed, w, n, vector_ids) for w in weights]

    def gate_fts(
        self, parsed: ParsedQuery, fts_ids: list[int], vector_ids: Sequence[int]
    ) -> list[int]:
        return fts_ids  # no script gate in this fake

    def fts_vote(self, parsed: ParsedQuery, fts_ids: Sequence[int]) -> float:
        return 1.0  # every list votes in full in this fake

    def fts_match_count(self, match_expr: str, table: str = "fts_chunks") -> int:
        for text, count in self.matches.items():
            if text in match_expr:
                return count
        return 0

    def chunk_labels(self, ids: Sequence[int]) -> dict[int, tuple[str, str | None]]:
        return {i: self.labels.get(i, (f"doc{i}.md", None)) for i in ids}

    def chunk_count(self) -> int:
        return self.chunks

    def context_chunk_count(self) -> int:
        return self.context_chunks


def gq(text: str, *paths: str, ident: str | None = None) -> GoldenQuery:
    return GoldenQuery(
        id=ident or text[:32],
        query=text,
        expected=tuple(ExpectedEntry(p) for p in paths),
    )


def fixed(ids: list[int]) -> FtsFn:
    return lambda _w: list(ids)


def heading_vs_content(heading_ids: list[int], content_ids: list[int]) -> FtsFn:
    """Heading weight above content weight -> the heading-matching chunks first."""
    return lambda w: list(heading_ids + content_ids if w[0] > w[2] else content_ids + heading_ids)


# --------------------------------------------------------------------------- pre-flight


def test_preflight_classifies_effective_and_insensitive_queries() -> None:
    src = FakeSource(
        vec={"alpha": [1, 2, 3], "beta": [4, 5], "gamma": [6], "zz": [7]},
        fts={"alpha": fixed([3, 9]), "beta": fixed([5]), "gamma": fixed([])},
        chunks=4,
    )
    queries = [gq("alpha", "doc3.md"), gq("beta", "doc5.md"), gq("gamma", "doc6.md")]
    pre = run_preflight(src, queries, limit=10, k_values=(1, 5, 10))
    assert [q.diagnostics.id for q in pre.queries] == ["alpha", "beta", "gamma"]
    assert [q.diagnostics.fts_candidates for q in pre.queries] == [2, 1, 0]
    assert pre.effective == [0]
    assert pre.pool_size == 50
    assert pre.chunk_total == 4
    assert pre.queries[0].vec_ids == [1, 2, 3]
    assert pre.queries[0].diagnostics.vec_fts_overlap == 1
    assert pre.context_axis_noop


def test_a_query_without_expected_entries_is_refused_not_skipped() -> None:
    """No silent, log-only skip: a golden set built in code gets the loader's answer."""
    src = FakeSource(vec={"alpha": [1, 2], "zz": [7]}, fts={"alpha": fixed([1, 2])})
    queries = [gq("alpha", "doc1.md"), GoldenQuery(id="empty", query="zz", expected=(), line=7)]
    with pytest.raises(GrooveError) as caught:
        run_preflight(src, queries, limit=10, k_values=(5,))
    message = str(caught.value)
    assert message.startswith("golden query `empty` (line 7) has no expected entry")
    assert "\n" not in message
    assert src.fts_calls == []  # refused before anything was fetched


def test_preflight_flags_idf_clamp_and_overlap() -> None:
    src = FakeSource(
        vec={"common": [1, 2, 3, 4]},
        fts={"common": fixed([1, 2, 3, 4])},
        chunks=4,
        matches={"common": 4},
    )
    pre = run_preflight(src, [gq("common", "doc1.md")], 10, (5,))
    d = pre.queries[0].diagnostics
    assert (d.fts_total_matches, d.idf_clamped, d.vec_fts_overlap) == (4, True, 4)
    src.matches = {"common": 1}
    assert (
        not run_preflight(src, [gq("common", "doc1.md")], 10, (5,))
        .queries[0]
        .diagnostics.idf_clamped
    )


def test_a_query_compiling_to_nothing_makes_no_fts_call() -> None:
    src = FakeSource(vec={"ab": [1, 2]}, fts={})
    pre = run_preflight(src, [gq("ab", "doc1.md")], 10, (5,))
    assert pre.queries[0].parsed.fts is None
    table = build_metric_table(src, pre)
    assert src.fts_calls == []
    assert pre.queries[0].diagnostics.fts_total_matches == 0
    # vector-only: every condition ranks the same
    assert np.all(table.primary == table.primary[0, 0])


def test_preflight_rejects_an_embedding_count_mismatch() -> None:
    src = FakeSource(vec={"alpha": [1]}, fts={"alpha": fixed([1])}, embed_count=2)
    with pytest.raises(GrooveError, match="embedding"):
        run_preflight(src, [gq("alpha", "doc1.md")], 10, (5,))


def test_pool_is_a_floor_of_fifty() -> None:
    assert [candidate_pool(n) for n in (1, 10, 11, 100)] == [50, 50, 55, 500]


def test_context_chunks_switch_the_noop_flag_off() -> None:
    src = FakeSource(vec={"alpha": [1]}, fts={"alpha": fixed([1, 2])}, context_chunks=1)
    assert not run_preflight(src, [gq("alpha", "doc1.md")], 10, (5,)).context_axis_noop


# --------------------------------------------------------------------------- sweep


def _two_query_source() -> FakeSource:
    return FakeSource(
        vec={"alpha": [1, 2, 3, 4], "beta": [10, 11]},
        fts={"alpha": heading_vs_content([4], [5, 6]), "beta": fixed([12, 11])},
    )


def test_sweep_fetches_each_fts_list_once_per_weight_triple() -> None:
    src = _two_query_source()
    queries = [gq("alpha", "doc4.md"), gq("beta", "doc12.md")]
    pre = run_preflight(src, queries, 10, (1, 5, 10))
    assert len(src.fts_calls) == 2  # the default-weight pre-flight fetch
    build_metric_table(src, pre)
    # 64 per query in all: the pre-flight list serves the default triple
    assert len(src.fts_calls) == 64 * 2
    assert pre.timings.fts_calls == 128
    for text in ("alpha", "beta"):
        weights = [w for t, w, _ in src.fts_calls if t == text]
        assert len(set(weights)) == 64
    # never asked with any rrf_k: the k axis is re-fused in memory
    assert all(n == pre.pool_size for _, _, n in src.fts_calls)


def test_bm25_sensitivity_is_filled_by_the_sweep() -> None:
    src = _two_query_source()
    pre = run_preflight(src, [gq("alpha", "doc4.md"), gq("beta", "doc12.md")], 10, (5,))
    assert [q.diagnostics.bm25_sensitive for q in pre.queries] == [False, False]
    build_metric_table(src, pre)
    assert [q.diagnostics.bm25_sensitive for q in pre.queries] == [True, False]


def test_every_cell_is_filled_and_the_weights_move_the_metric() -> None:
    src = FakeSource(vec={"alpha": [1, 2, 3, 7, 8]}, fts={"alpha": heading_vs_content([4], [5, 6])})
    pre = run_preflight(src, [gq("alpha", "doc4.md")], 10, (1, 5, 10))
    table = build_metric_table(src, pre)
    assert table.primary.shape == (1, 384)
    assert np.all(table.ndcg[10] > 0.0)
    heading_heavy = condition_index(3, 0, 0, 4)
    content_heavy = condition_index(0, 0, 3, 4)
    assert table.primary[0, heading_heavy] > table.primary[0, content_heavy]


def test_k_cells_are_equal_when_rrf_k_cannot_reorder() -> None:
    # no overlap between the legs and equal lengths: every k gives the same order
    src = FakeSource(vec={"alpha": [1, 2, 3]}, fts={"alpha": fixed([4, 5, 6])})
    pre = run_preflight(src, [gq("alpha", "doc5.md")], 10, (1, 5, 10))
    table = build_metric_table(src, pre)
    for w in range(64):
        cells = table.primary[0, w * 6 : w * 6 + 6]
        assert np.all(cells == cells[0])


def test_rrf_ties_counts_equal_adjacent_scores_at_the_default() -> None:
    # vec [1,2] and fts [3,4]: 1 and 3 tie at 1/61, 2 and 4 tie at 1/62
    src = FakeSource(vec={"alpha": [1, 2]}, fts={"alpha": fixed([3, 4])})
    pre = run_preflight(src, [gq("alpha", "doc1.md")], 10, (5,))
    build_metric_table(src, pre)
    assert pre.queries[0].diagnostics.rrf_ties == 2


def test_secondary_maps_recall_at_every_k_and_mrr() -> None:
    table = MetricTable.empty(2, (1, 5, 10))
    assert list(table.secondary()) == ["recall@1", "recall@5", "recall@10", "mrr"]
    assert table.primary is table.ndcg[5]


def test_aggregate_is_the_mean_over_all_queries() -> None:
    table = MetricTable.empty(3, (1, 5))
    table.recall[1][:, DEFAULT_INDEX] = [1.0, 0.0, 0.5]
    table.rr[:, DEFAULT_INDEX] = [1.0, 0.5, 0.0]
    table.ndcg[5][:, DEFAULT_INDEX] = [0.3, 0.3, 0.3]
    agg = table.aggregate(DEFAULT_INDEX)
    assert agg.recall_at_k == {1: 0.5, 5: 0.0}
    assert agg.mrr == 0.5
    assert agg.ndcg_at_k[5] == pytest.approx(0.3)
    assert agg.query_count == 3
    assert MetricTable.empty(0, (5,)).aggregate(0).mrr == 0.0


def test_aggregate_gives_exactly_the_numbers_groove_eval_gives() -> None:
    """Summed left to right in golden order, as metrics.aggregate does."""
    n = 10
    table = MetricTable.empty(n, (1, 5))
    column = [0.1] * 7 + [0.7, 0.3, 0.2]
    for k in (1, 5):
        table.recall[k][:, DEFAULT_INDEX] = column
        table.ndcg[k][:, DEFAULT_INDEX] = column[::-1]
    table.rr[:, DEFAULT_INDEX] = column
    rows = [
        QueryMetrics(recall_at_k={1: v, 5: v}, reciprocal_rank=v, ndcg_at_k={1: w, 5: w})
        for v, w in zip(column, column[::-1], strict=True)
    ]
    assert table.aggregate(DEFAULT_INDEX) == aggregate(rows)
    # the case where the two sums differ: an exactly rounded one would not match eval
    assert aggregate(rows).ndcg_at_k[1] != math.fsum(column) / n


# --------------------------------------------------------------------------- vs naive


def _naive_cell(
    expected: tuple[ExpectedEntry, ...],
    vec: list[int],
    fts: list[int],
    cond: Condition,
    limit: int,
    k_values: tuple[int, ...],
) -> tuple[float, ...]:
    fused = fuse_rrf(vec, fts, cond.rrf_k, limit)
    hits = [
        SearchHit(rank=i, path=f"doc{cid}.md", heading=None, score=s)
        for i, (cid, s) in enumerate(fused, start=1)
    ]
    m = query_metrics(expected, hits, k_values)
    return (
        *(m.ndcg_at_k[k] for k in k_values),
        *(m.recall_at_k[k] for k in k_values),
        m.reciprocal_rank,
    )


ids_strategy = st.lists(st.integers(0, 30), max_size=15, unique=True)


@settings(max_examples=12, deadline=None)
@given(
    vec=ids_strategy,
    heading_first=ids_strategy,
    content_first=ids_strategy,
    expected=st.lists(st.integers(0, 30), min_size=1, max_size=3),
    limit=st.sampled_from([1, 5, 10, 12]),
)
def test_shared_list_sweep_equals_a_naive_384_fusion_sweep(
    vec: list[int],
    heading_first: list[int],
    content_first: list[int],
    expected: list[int],
    limit: int,
) -> None:
    content_only = [c for c in content_first if c not in heading_first]

    def fts(w: Weights) -> list[int]:
        # three orders, so several triples share a list and several differ
        if w[0] > w[2]:
            return heading_first + content_only
        if w[0] < w[2]:
            return content_only + heading_first
        return sorted(heading_first + content_only)

    src = FakeSource(vec={"query": vec}, fts={"query": fts})
    k_values = (1, 5, 10)
    entries = tuple(ExpectedEntry(f"doc{e}.md") for e in expected)
    query = GoldenQuery(id="q", query="query", expected=entries)
    pre = run_preflight(src, [query], limit, k_values)
    table = build_metric_table(src, pre)
    for cond in all_conditions():
        want = _naive_cell(entries, vec, fts(cond.weights), cond, limit, k_values)
        got = (
            *(table.ndcg[k][0, cond.index] for k in k_values),
            *(table.recall[k][0, cond.index] for k in k_values),
            table.rr[0, cond.index],
        )
        assert got == want, cond.label
