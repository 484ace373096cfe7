"""Reciprocal Rank Fusion and the candidate pool rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.search.pipeline.fusion import (
    VECTOR_FETCH_MAX,
    FusedRanking,
    PoolPlan,
    RrfSweep,
    fuse_rrf,
    fuse_rrf_ranks,
    order_fused,
    pool_sizes,
    rrf_terms,
)
from pytest_groove.settings.config import SEARCH_LIMIT_MAX

TUNE_KS = (5.0, 10.0, 20.0, 30.0, 60.0, 100.0)


def legacy_fuse(
    vec: list[int], fts: list[int], k: float, limit: int | None
) -> list[tuple[int, float]]:
    """An independent, deliberately naive float32 fusion to compare against."""
    acc: dict[int, np.float32] = {}
    for ranked in (vec, fts):
        for rank0, cid in enumerate(ranked):
            denom = np.float32(np.float32(k) + np.float32(rank0)) + np.float32(1)
            acc[cid] = np.float32(acc.get(cid, np.float32(0)) + np.float32(1) / denom)
    out = [(cid, float(score)) for cid, score in acc.items()]
    out.sort(key=lambda pair: pair[0])
    out.sort(key=lambda pair: pair[1], reverse=True)  # stable: ids stay ascending on ties
    return out if limit is None else out[:limit]


# --------------------------------------------------------------------------- examples


def test_tie_break_by_ascending_chunk_id() -> None:
    assert [cid for cid, _ in order_fused({3: 0.5, 1: 0.5, 2: 0.7, 5: 0.5})] == [2, 1, 3, 5]


def test_equal_rrf_scores_fall_back_to_chunk_id() -> None:
    # 5 and 3 swap ranks between the legs, so their sums are identical
    fused = fuse_rrf([5, 3], [3, 5])
    assert [cid for cid, _ in fused] == [3, 5]
    assert fused[0][1] == fused[1][1]


def test_rank_only_example_at_k60_and_k5() -> None:
    at60 = fuse_rrf([10, 20, 30], [30, 40], rrf_k=60.0)
    at5 = fuse_rrf([10, 20, 30], [30, 40], rrf_k=5.0)
    assert at60[0][0] == 30 and at5[0][0] == 30
    assert at60[0][1] == pytest.approx(1 / 63 + 1 / 61, rel=1e-6)
    assert at5[0][1] == pytest.approx(1 / 8 + 1 / 6, rel=1e-6)
    assert all(s5 > s60 for (_, s5), (_, s60) in zip(at5, at60, strict=True))
    assert len(fuse_rrf([10, 20, 30], [30, 40], rrf_k=60.0, limit=2)) == 2


def test_rank_one_in_both_lists_and_vector_only() -> None:
    one_term = np.float32(1) / np.float32(61)
    assert fuse_rrf([7], [7])[0][1] == float(one_term + one_term)
    assert fuse_rrf([7], [7], rrf_k=5.0)[0][1] == pytest.approx(2 / 6, rel=1e-6)
    only_vector = fuse_rrf([4, 9], [])
    assert [cid for cid, _ in only_vector] == [4, 9]
    assert only_vector[0][1] == pytest.approx(1 / 61, rel=1e-7)


def test_limit_none_keeps_everything_and_limit_zero_keeps_nothing() -> None:
    vec = list(range(10))
    assert len(fuse_rrf(vec, [], limit=None)) == 10
    assert fuse_rrf(vec, vec[::-1], limit=0) == []


def test_empty_inputs() -> None:
    assert fuse_rrf([], []) == []
    assert fuse_rrf_ranks([], [], [60.0])[0].pairs() == []


@pytest.mark.parametrize("limit", [None, 1, 3, 100])
def test_matches_the_legacy_loop(limit: int | None) -> None:
    vec, fts = [3, 1, 7, 2], [7, 5, 1]
    assert fuse_rrf(vec, fts, 60.0, limit) == legacy_fuse(vec, fts, 60.0, limit)


def test_scores_are_float32_values() -> None:
    for _, score in fuse_rrf([1, 2, 3], [3, 2, 1]):
        assert float(np.float32(score)) == score


def test_large_k_collapses_ranks_in_float32() -> None:
    # the reason rrf_k is capped at 1e6: at 1e9 adjacent ranks are indistinguishable
    fused = fuse_rrf([1, 2], [], rrf_k=1e9)
    assert fused[0][1] == fused[1][1]
    assert [cid for cid, _ in fused] == [1, 2]


@pytest.mark.parametrize("k", [float("nan"), float("inf"), -1.0])
def test_rejects_unusable_k(k: float) -> None:
    with pytest.raises(ValueError):
        fuse_rrf([1], [2], rrf_k=k)
    with pytest.raises(ValueError):
        fuse_rrf_ranks([1], [2], [k])


def test_rejects_negative_limit() -> None:
    with pytest.raises(ValueError):
        fuse_rrf([1], [2], limit=-1)


# --------------------------------------------------------------------------- properties

ids = st.lists(st.integers(min_value=0, max_value=60), max_size=40)
unique_ids = st.lists(st.integers(min_value=0, max_value=10_000), max_size=80, unique=True)
limits = st.none() | st.integers(min_value=0, max_value=50)
ks = st.sampled_from(TUNE_KS) | st.floats(min_value=1.0, max_value=1e6, allow_nan=False)


@settings(deadline=None)  # no per-example deadline: CI machines are busy
@given(vec=unique_ids, fts=unique_ids, k=ks, limit=limits)
def test_property_order_bound_subset(
    vec: list[int], fts: list[int], k: float, limit: int | None
) -> None:
    fused = fuse_rrf(vec, fts, k, limit)
    union = set(vec) | set(fts)
    assert len(fused) == (len(union) if limit is None else min(limit, len(union)))
    assert {cid for cid, _ in fused} <= union
    assert len({cid for cid, _ in fused}) == len(fused)
    keys = [(-score, cid) for cid, score in fused]
    assert keys == sorted(keys)
    # the truncated list is a prefix of the full one: scores are not altered by limit
    assert fused == fuse_rrf(vec, fts, k, None)[: len(fused)]
    assert all(score > 0 for _, score in fused)


@settings(deadline=None)
@given(vec=ids, fts=ids, k=ks, limit=limits)
def test_property_equals_legacy_loop_even_with_repeated_ids(
    vec: list[int], fts: list[int], k: float, limit: int | None
) -> None:
    assert fuse_rrf(vec, fts, k, limit) == legacy_fuse(vec, fts, k, limit)


@settings(max_examples=150, deadline=None)
@given(
    vec=ids | unique_ids,
    fts_lists=st.lists(ids | unique_ids, min_size=1, max_size=6),
    rrf_ks=st.lists(ks, min_size=1, max_size=6),
    limit=limits,
)
def test_property_vectorised_sweep_is_bit_identical(
    vec: list[int], fts_lists: list[list[int]], rrf_ks: list[float], limit: int | None
) -> None:
    sweep = RrfSweep(vec, rrf_ks, limit)
    for fts in fts_lists:
        rankings = sweep.fuse(fts)
        assert len(rankings) == len(rrf_ks)
        for k, ranking in zip(rrf_ks, rankings, strict=True):
            expected = fuse_rrf(vec, fts, k, limit)
            assert ranking.pairs() == expected
            # bit-identical, not merely equal as Python floats
            assert ranking.scores.dtype == np.float32
            assert (
                ranking.scores.tobytes()
                == np.asarray([s for _, s in expected], dtype=np.float32).tobytes()
            )


@settings(max_examples=100, deadline=None)
@given(
    vec=ids | unique_ids,
    fts=ids | unique_ids,
    rrf_ks=st.lists(ks, min_size=1, max_size=4),
    weight=st.floats(min_value=0.0, max_value=1.0),
)
def test_property_weighted_sweep_is_bit_identical(
    vec: list[int], fts: list[int], rrf_ks: list[float], weight: float
) -> None:
    """Tune fuses a weighed full-text vote exactly as search does."""
    rankings = RrfSweep(vec, rrf_ks).fuse(fts, weight)
    for k, ranking in zip(rrf_ks, rankings, strict=True):
        expected = fuse_rrf(vec, fts, k, None, fts_weight=weight)
        assert ranking.pairs() == expected
        assert (
            ranking.scores.tobytes()
            == np.asarray([s for _, s in expected], dtype=np.float32).tobytes()
        )


def test_full_text_weight_scales_its_terms_and_one_changes_nothing() -> None:
    assert fuse_rrf([1, 2], [3, 2], fts_weight=1.0) == fuse_rrf([1, 2], [3, 2])
    weighed = dict(fuse_rrf([1, 2], [3, 2], fts_weight=0.4))
    assert weighed[3] == pytest.approx(0.4 / 61, rel=1e-6)
    assert weighed[2] == pytest.approx(1 / 62 + 0.4 / 62, rel=1e-6)
    # the vector leg's third, the full-text leg's first: first with a full vote, still
    # first with a fifth of one (1/63 + 0.2/61 > 1/61), behind the vector leg's first
    # with a hundredth
    assert fuse_rrf([1, 2, 3], [3])[0][0] == 3
    assert fuse_rrf([1, 2, 3], [3], fts_weight=0.2)[0][0] == 3
    assert fuse_rrf([1, 2, 3], [3], fts_weight=0.01)[0][0] == 1
    assert dict(fuse_rrf([1], [3], fts_weight=0.0))[3] == 0.0


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_full_text_weight_outside_zero_to_one_is_refused(weight: float) -> None:
    with pytest.raises(ValueError):
        fuse_rrf([1], [2], fts_weight=weight)
    with pytest.raises(ValueError):
        RrfSweep([1], [60.0]).fuse([2], weight)


def test_sweep_over_the_tune_grid_shape() -> None:
    rng = np.random.default_rng(7)
    vec = [int(x) for x in rng.permutation(5000)[:250]]
    sweep = RrfSweep(vec, TUNE_KS, limit=10)
    for _ in range(64):
        fts = [int(x) for x in rng.permutation(5000)[:250]]
        rankings = sweep.fuse(fts)
        assert [len(r) for r in rankings] == [10] * len(TUNE_KS)
        assert rankings[4].pairs() == fuse_rrf(vec, fts, 60.0, 10)


def test_sweep_grows_its_term_table_for_longer_fts_lists() -> None:
    sweep = RrfSweep([1], [60.0])
    long_fts = list(range(2, 300))
    assert sweep.fuse(long_fts)[0].pairs() == fuse_rrf([1], long_fts)


def test_rrf_terms_table() -> None:
    table = rrf_terms([60.0, 5.0], 3)
    assert table.shape == (2, 3) and table.dtype == np.float32
    assert table[0, 0] == np.float32(1) / np.float32(61)
    assert table[1, 2] == np.float32(1) / np.float32(8)


def test_fused_ranking_len_and_pairs() -> None:
    ranking = FusedRanking(
        ids=np.asarray([4, 2], dtype=np.int64), scores=np.asarray([0.5, 0.25], dtype=np.float32)
    )
    assert len(ranking) == 2
    assert ranking.pairs() == [(4, 0.5), (2, 0.25)]


def test_sweep_needs_a_k() -> None:
    with pytest.raises(ValueError):
        RrfSweep([1], [])


# --------------------------------------------------------------------------- pool sizes


def test_pool_plain_search() -> None:
    assert pool_sizes(5, mmr=False, reranker=False) == PoolPlan(50, 5, None)
    assert pool_sizes(10, mmr=False, reranker=False) == PoolPlan(50, 10, None)
    assert pool_sizes(20, mmr=False, reranker=False) == PoolPlan(100, 20, None)


def test_pool_reranker_double_over_fetch() -> None:
    # limit 10 -> pool 50 -> each leg 250; reranker scores 50 and keeps 10
    assert pool_sizes(10, mmr=False, reranker=True) == PoolPlan(250, 50, 10)


@pytest.mark.parametrize("reranker", [False, True])
def test_pool_mmr_is_unbounded_and_reranker_keeps_all(reranker: bool) -> None:
    plan = pool_sizes(10, mmr=True, reranker=reranker)
    assert plan == PoolPlan(per_leg_n=50, fused_limit=None, rerank_keep=None)
    assert pool_sizes(1000, mmr=True, reranker=reranker).per_leg_n == 5000


def test_pool_limit_zero_and_clamp() -> None:
    assert pool_sizes(0, mmr=False, reranker=False) == PoolPlan(50, 0, None)
    assert pool_sizes(0, mmr=False, reranker=True).rerank_keep == 0
    huge = pool_sizes(2**32 - 1, mmr=False, reranker=False)
    assert huge.fused_limit == SEARCH_LIMIT_MAX
    assert pool_sizes(1001, mmr=False, reranker=False) == pool_sizes(
        SEARCH_LIMIT_MAX, mmr=False, reranker=False
    )
    with pytest.raises(ValueError):
        pool_sizes(-1, mmr=False, reranker=False)


def test_fetch_sizes_respect_the_caps() -> None:
    plain = pool_sizes(10, mmr=False, reranker=False)
    assert plain.vector_fetch() == 50 and plain.fts_fetch() == 50
    assert plain.vector_fetch(filtered=True) == 500 and plain.fts_fetch(filtered=True) == 500
    big = pool_sizes(1000, mmr=False, reranker=True)  # per leg 25000
    assert big.vector_fetch() == VECTOR_FETCH_MAX
    assert big.vector_fetch(filtered=True) == VECTOR_FETCH_MAX
    assert big.fts_fetch() == 25_000
    assert big.fts_fetch(filtered=True) == 10_000


@settings(deadline=None)
@given(limit=st.integers(min_value=0, max_value=5000), mmr=st.booleans(), reranker=st.booleans())
def test_property_pool_covers_the_limit(limit: int, mmr: bool, reranker: bool) -> None:
    plan = pool_sizes(limit, mmr, reranker)
    clamped = min(limit, SEARCH_LIMIT_MAX)
    assert plan.per_leg_n >= max(clamped, 50)
    assert plan.vector_fetch() <= VECTOR_FETCH_MAX
    if plan.fused_limit is not None:
        assert plan.fused_limit >= clamped
