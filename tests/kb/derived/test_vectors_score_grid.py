"""A vector ranking does not move with the CPU's rounding.

faiss and the embedders sum float32 products in the order their SIMD kernels choose,
so the same index and query give scores that differ in the last bits from machine to
machine.  Chunks orthogonal to a query (every gram it lacks) score exactly 0 in
arithmetic and 0.0, -1.9e-9 or 3.7e-9 in float32: ranked by those bits, their order
-- and a golden query's score -- moved with the CI runner.  Here another machine's
rounding is played by noise of a few float32 steps on the scores faiss returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.derived.vectors import SCORE_GRID, VectorIndex, graded_scores
from pytest_groove.kb.store.tie_order import IN_ID_ORDER

DIM = 16


def _index_with_orthogonal_rows(seed: int) -> tuple[VectorIndex, np.ndarray]:
    """Twelve rows: four along the query's axis at distinct strengths, eight orthogonal
    to it (score 0 in arithmetic), ids shuffled so id order is not the answer."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((12, DIM), dtype=np.float32)
    rows[:4, 0] = [0.9, 0.7, 0.5, 0.3]
    rows[4:, 1:] = rng.normal(size=(8, DIM - 1))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    ids = rng.permutation(np.arange(100, 112)).astype(np.int64)
    query = np.zeros(DIM, dtype=np.float32)
    query[0] = 1.0
    return VectorIndex.build(ids, rows, DIM), query


class _Jittered:
    """The faiss index with each returned score moved by up to ``steps`` float32 ulps
    of 1.0 (what a different summation order does), ranks re-sorted as faiss would."""

    def __init__(self, index: Any, rng: np.random.Generator, steps: int) -> None:
        self._index, self._rng, self._steps = index, rng, steps
        self.ntotal = index.ntotal

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        scores, ids = self._index.search(q, self._index.ntotal)
        ulp = np.float32(np.finfo(np.float32).eps)
        noise = self._rng.integers(-self._steps, self._steps + 1, size=scores.shape) * ulp
        moved = (scores + noise).astype(np.float32)
        order = np.argsort(-moved[0], kind="stable")
        return moved[:, order][:, :k], ids[:, order][:, :k]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), noise_seed=st.integers(0, 2**16), steps=st.integers(1, 32))
def test_rounding_noise_never_reorders_a_ranking(seed: int, noise_seed: int, steps: int) -> None:
    index, query = _index_with_orthogonal_rows(seed)
    expected = index.search(query, 12, IN_ID_ORDER)
    index._index = _Jittered(index._index, np.random.default_rng(noise_seed), steps)
    got = index.search(query, 12, IN_ID_ORDER)
    assert got == expected
    # the four that point at the query first, by strength; the orthogonal eight after
    # them in the tie order (lower id first), not in the order their noise put them
    assert got[4:] == sorted(got[4:])


@pytest.mark.parametrize(
    ("score", "steps"),
    [(0.0, 0), (-1.862645149230957e-09, 0), (3.725290298461914e-09, 0), (1.0, 1 << 16)],
)
def test_scores_within_rounding_of_each_other_are_one_step(score: float, steps: int) -> None:
    assert graded_scores(np.array([score], dtype=np.float32))[0] == steps


def test_the_grid_is_far_coarser_than_float32_rounding_and_far_finer_than_a_ranking() -> None:
    # a 384-dimension float32 dot product of unit vectors is off by about
    # sqrt(384) half-ulps of 1.0 (1.2e-6): the step is ten of those, and a hundred
    # times finer than a similarity difference of 1e-3
    assert 10 * np.sqrt(384) * float(np.finfo(np.float32).eps) / 2 < SCORE_GRID
    assert SCORE_GRID < 1e-3 / 50


def test_the_note_index_rescores_every_row_that_could_tie_on_the_grid() -> None:
    # its rows within the margin of the n-th score are scored again and compared on
    # the grid: the margin must hold a whole step and the rounding around it
    from pytest_groove.kb.derived.note_index import _RESCORE_MARGIN

    assert _RESCORE_MARGIN > 2 * SCORE_GRID


def _mmr_pool(seed: int, steps: int) -> np.ndarray:
    """Embeddings of a five-candidate pool, each component moved by up to ``steps``
    float32 ulps of its own (another machine's rounding): the first candidate along one
    axis, the other four orthogonal to it in arithmetic (similarity 0 to the first)."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((5, DIM), dtype=np.float32)
    rows[0, 0] = 1.0
    rows[1:, 1:] = rng.normal(size=(4, DIM - 1))
    ulps = rng.integers(-steps, steps + 1, size=rows.shape).astype(np.float32)
    ulp = np.spacing(np.maximum(np.abs(rows), np.float32(1e-3)))
    return (rows + ulps * ulp).astype(np.float32)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(1, 8))
def test_rounding_noise_never_changes_what_mmr_picks(seed: int, steps: int) -> None:
    from pytest_groove.search.pipeline.mmr import mmr_select

    # the four after the first are equally relevant and equally unlike it: the second
    # pick is a tie between them, which goes to the earlier pool position -- whatever
    # sign the rounding gave each one's similarity to the first
    relevance = [1.0, 0.5, 0.5, 0.5, 0.5]
    embeddings = _mmr_pool(seed, steps)
    picks = mmr_select(relevance, embeddings, ["a", "b", "c", "d", "e"], 2, 0.5, 0.0)
    assert picks == [0, 1]
