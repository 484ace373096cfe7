"""MMR diversity selection."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pytest_groove.errors import UsageError
from pytest_groove.search.pipeline.mmr import cosine, mmr_select, normalise_relevance


def basis(dim: int, *axes: int) -> np.ndarray:
    """Rows that are unit vectors along the given axes."""
    out = np.zeros((len(axes), dim), dtype=np.float32)
    for row, axis in enumerate(axes):
        out[row, axis] = 1.0
    return out


# --------------------------------------------------------------------------- selection


def test_lambda_one_is_pure_relevance_order() -> None:
    picks = mmr_select([0.3, 0.9, 0.6], basis(3, 0, 0, 0), ["a", "a", "a"], 3, 1.0, 0.0)
    assert picks == [1, 2, 0]


def test_lambda_zero_takes_pool_head_then_the_orthogonal_candidate() -> None:
    # 0 and 1 are duplicates, 2 is orthogonal; relevance is ignored at lambda 0
    emb = basis(4, 0, 0, 1)
    picks = mmr_select([0.1, 0.9, 0.5], emb, [1, 2, 3], 3, 0.0, 0.0)
    assert picks[0] == 0
    assert picks[1] == 2
    assert picks == [0, 2, 1]


def test_first_pick_is_the_most_relevant() -> None:
    picks = mmr_select([0.2, 0.4, 0.95, 0.1], basis(4, 0, 1, 2, 3), "abcd", 1, 0.7, 0.0)
    assert picks == [2]


def test_diversity_beats_a_near_duplicate_at_default_lambda() -> None:
    emb = np.asarray([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0]], dtype=np.float32)
    rel = [1.0, 0.7, 0.65]
    assert mmr_select(rel, emb, ["a", "b", "c"], 2, 1.0, 0.0) == [0, 1]
    # 0.7 * 1/7 - 0.3 * 0.99 < 0.7 * 0 - 0.3 * 0: the near-duplicate loses
    assert mmr_select(rel, emb, ["a", "b", "c"], 2, 0.7, 0.0) == [0, 2]


def test_same_document_penalty_prefers_another_document() -> None:
    rel = [1.0, 0.9, 0.8]
    emb = basis(3, 0, 1, 2)
    docs = ["guide.md", "guide.md", "faq.md"]
    assert mmr_select(rel, emb, docs, 2, 0.7, 0.0) == [0, 1]
    assert mmr_select(rel, emb, docs, 2, 0.7, 0.5) == [0, 2]


def test_empty_pool_and_zero_limit() -> None:
    assert mmr_select([], np.zeros((0, 8), dtype=np.float32), [], 5, 0.7, 0.0) == []
    assert mmr_select([], np.zeros((0,), dtype=np.float32), [], 5, 0.7, 0.0) == []
    assert mmr_select([0.5, 0.4], basis(2, 0, 1), [1, 2], 0, 0.7, 0.0) == []


def test_limit_above_pool_size_returns_every_candidate() -> None:
    picks = mmr_select([0.5, 0.4, 0.3], basis(3, 0, 1, 2), [1, 2, 3], 10, 0.7, 0.0)
    assert sorted(picks) == [0, 1, 2]


def test_identical_embeddings_give_relevance_order() -> None:
    emb = np.ones((3, 5), dtype=np.float32)
    picks = mmr_select([0.9, 0.5, 0.1], emb, [1, 2, 3], 3, 0.7, 0.0)
    assert picks == [0, 1, 2]


def test_zero_and_non_finite_embeddings_do_not_poison_selection() -> None:
    emb = np.asarray([[0.0, 0.0], [np.nan, 1.0], [np.inf, 0.0], [1.0, 0.0]], dtype=np.float32)
    with np.errstate(all="raise"):  # no hidden invalid-value arithmetic either
        picks = mmr_select([0.4, 0.3, 0.2, 0.1], emb, [1, 2, 3, 4], 4, 0.7, 0.0)
    assert picks == [0, 1, 2, 3]


def test_non_finite_relevance_counts_as_least_relevant() -> None:
    picks = mmr_select([math.nan, 0.2, 0.8], basis(3, 0, 1, 2), [1, 2, 3], 3, 1.0, 0.0)
    assert picks == [2, 0, 1]  # nan -> 0, ties with 0.2 -> 0; earlier index wins


def test_flat_relevance_falls_back_to_pool_order_then_diversity() -> None:
    emb = basis(2, 0, 0, 1)
    picks = mmr_select([0.5, 0.5, 0.5], emb, [1, 2, 3], 3, 0.7, 0.0)
    assert picks == [0, 2, 1]


@pytest.mark.parametrize(
    ("lam", "penalty"),
    [(-0.1, 0.0), (1.1, 0.0), (math.nan, 0.0), (0.5, -0.01), (0.5, 1.5), (0.5, math.nan)],
)
def test_rejects_knobs_outside_the_unit_interval(lam: float, penalty: float) -> None:
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        mmr_select([0.5], basis(1, 0), [1], 1, lam, penalty)


def test_boundary_knobs_are_accepted() -> None:
    assert mmr_select([0.5], basis(1, 0), [1], 1, 0.0, 1.0) == [0]
    assert mmr_select([0.5], basis(1, 0), [1], 1, 1.0, 0.0) == [0]


def test_mismatched_inputs_are_programming_errors() -> None:
    with pytest.raises(ValueError):
        mmr_select([0.5, 0.4], basis(2, 0), [1, 2], 2, 0.7, 0.0)
    with pytest.raises(ValueError):
        mmr_select([0.5, 0.4], basis(2, 0, 1), [1], 2, 0.7, 0.0)


# --------------------------------------------------------------------------- normalisation


def test_min_max_normalisation() -> None:
    assert normalise_relevance([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]


def test_spread_within_float32_epsilon_flattens_to_zero() -> None:
    assert normalise_relevance([0.0, 1.1920929e-7]).tolist() == [0.0, 0.0]
    assert normalise_relevance([0.7, 0.7, 0.7]).tolist() == [0.0, 0.0, 0.0]
    assert normalise_relevance([0.0, 2.5e-7]).tolist() == [0.0, 1.0]


def test_negative_logits_normalise_too() -> None:
    assert normalise_relevance([-8.0, -2.0, -5.0]).tolist() == [0.0, 1.0, 0.5]


# --------------------------------------------------------------------------- cosine


def test_cosine_identical_vectors() -> None:
    seven = np.arange(1, 8, dtype=np.float32)
    assert cosine(seven, seven) == pytest.approx(1.0, abs=1e-6)
    wide = np.linspace(-1.0, 1.0, 385, dtype=np.float32)
    assert cosine(wide, wide) == pytest.approx(1.0, abs=1e-6)


def test_cosine_nine_dim_half_overlap() -> None:
    a = np.zeros(9)
    b = np.zeros(9)
    a[0] = 1.0
    b[0] = b[1] = 1.0
    assert cosine(a, b) == pytest.approx(1 / math.sqrt(2), abs=1e-6)


def test_cosine_degenerate_inputs_are_zero() -> None:
    assert cosine([1.0, 2.0], [1.0, 2.0, 3.0]) == 0.0
    assert cosine([], []) == 0.0
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([math.nan, 1.0], [1.0, 1.0]) == 0.0
    assert cosine([math.inf, 1.0], [1.0, 1.0]) == 0.0


# --------------------------------------------------------------------------- properties

pools = st.integers(min_value=0, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(-5, 5, allow_nan=False, width=32), min_size=n, max_size=n),
        arrays(np.float32, (n, 4), elements=st.floats(-1, 1, width=32)),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
    )
)
unit = st.floats(0.0, 1.0)


@settings(deadline=None)  # no per-example deadline: CI machines are busy
@given(pool=pools, limit=st.integers(0, 15), lam=unit, penalty=unit)
def test_property_picks_are_unique_valid_and_bounded(
    pool: tuple[list[float], np.ndarray, list[int]], limit: int, lam: float, penalty: float
) -> None:
    rel, emb, docs = pool
    picks = mmr_select(rel, emb, docs, limit, lam, penalty)
    assert len(picks) == min(limit, len(rel))
    assert len(set(picks)) == len(picks)
    assert all(0 <= i < len(rel) for i in picks)


@settings(deadline=None)
@given(pool=pools, lam=st.floats(0.01, 1.0), penalty=unit)
def test_property_first_pick_is_the_earliest_most_relevant(
    pool: tuple[list[float], np.ndarray, list[int]], lam: float, penalty: float
) -> None:
    rel, emb, docs = pool
    picks = mmr_select(rel, emb, docs, 1, lam, penalty)
    if rel:
        norm = normalise_relevance(rel)
        assert picks == [int(np.argmax(norm))]


@settings(deadline=None)
@given(pool=pools)
def test_property_lambda_one_without_penalty_sorts_by_relevance(
    pool: tuple[list[float], np.ndarray, list[int]],
) -> None:
    rel, emb, docs = pool
    norm = normalise_relevance(rel)
    expected = sorted(range(len(rel)), key=lambda i: (-float(norm[i]), i))
    assert mmr_select(rel, emb, docs, len(rel), 1.0, 0.0) == expected


@settings(deadline=None)
@given(n=st.integers(0, 10), lam=unit, penalty=unit)
def test_property_all_equal_candidates_pick_in_pool_order(
    n: int, lam: float, penalty: float
) -> None:
    emb = np.full((n, 3), 0.5, dtype=np.float32)
    assert mmr_select([0.4] * n, emb, ["same"] * n, n, lam, penalty) == list(range(n))
