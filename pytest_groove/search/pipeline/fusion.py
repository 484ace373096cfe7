"""Reciprocal Rank Fusion of the vector and full-text candidate lists.

Only ranks matter: a chunk at 0-based position ``p`` of a list earns
``1 / (k + p + 1)`` from that list, and a chunk found by both legs earns both
terms.  Distances and bm25 values are never looked at, so the two legs need no
common scale.

Scores are accumulated in float32, vector term first, then FTS term, because
float32 rounding decides ties (and ties are broken by chunk id): doing the same
arithmetic everywhere keeps ``groove search``, ``groove eval`` and the
``groove tune`` sweep bit-identical.  :func:`fuse_rrf` is the plain reference
version; :class:`RrfSweep` computes the same numbers with numpy for many FTS
lists and several ``k`` values at once.

:func:`pool_sizes` holds the orchestration rule that says how many candidates
each leg fetches and how long the fused list is, depending on which optional
stages (reranker, MMR) follow fusion.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TieOrder
from pytest_groove.settings.config import SEARCH_LIMIT_MAX

#: default RRF constant (``[search.fusion].rrf_k``)
RRF_K_DEFAULT = 60.0
#: each leg fetches at least this many candidates
POOL_FLOOR = 50
#: ... and at least this many times the number of results wanted
POOL_FACTOR = 5
#: hard cap on the vector KNN fetch (kept from the reference implementation)
VECTOR_FETCH_MAX = 4096
#: cap on a filtered (over-fetching) leg before the vector clamp applies
FILTERED_FETCH_MAX = 10_000
#: a filtered leg fetches this many times its N to survive post-filtering
FILTERED_FETCH_FACTOR = 10

_ONE = np.float32(1.0)

IdArray = npt.NDArray[np.int64]
ScoreArray = npt.NDArray[np.float32]


def _check_k(rrf_k: float) -> None:
    # config validation keeps k in [1, 1e6]; this guards programmatic callers
    # against a zero or negative denominator.
    if not math.isfinite(rrf_k) or rrf_k < 0.0:
        raise ValueError(f"rrf_k must be a finite number >= 0 (got {rrf_k!r})")


def _check_weight(weight: float) -> None:
    if not (0.0 <= weight <= 1.0):
        raise ValueError(f"fts_weight must be in [0, 1] (got {weight!r})")


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None (got {limit!r})")


# --------------------------------------------------------------------------- scalar


def fuse_rrf(
    vector_ids: Sequence[int],
    fts_ids: Sequence[int],
    rrf_k: float = RRF_K_DEFAULT,
    limit: int | None = None,
    tie: TieOrder = IN_ID_ORDER,
    fts_weight: float = 1.0,
) -> list[tuple[int, float]]:
    """Fuse two ranked id lists into ``[(chunk_id, score)]``, best first.

    ``fts_weight`` (in [0, 1]) multiplies each term of the full-text list (its vote:
    :meth:`~pytest_groove.search.pipeline.hybrid.HybridSearcher.fts_vote`); at 1 the
    sums are the unweighted ones bit for bit.

    Order: score descending, then ``tie`` order (by default chunk id ascending; for an
    index whose ids left corpus order, the order a fresh build's ids would have).
    ``limit=None`` keeps every fused id (the MMR path); otherwise the list is cut to
    ``limit`` entries.  The returned floats are exactly the float32 sums.
    """
    _check_k(rrf_k)
    _check_limit(limit)
    _check_weight(fts_weight)
    k = np.float32(rrf_k)
    totals: dict[int, np.float32] = {}
    # vector list first: the order of the two float32 additions is part of the result
    for ranked, weight in ((vector_ids, _ONE), (fts_ids, np.float32(fts_weight))):
        for position, chunk_id in enumerate(ranked):
            term = _ONE / ((k + np.float32(position)) + _ONE)
            if weight != _ONE:
                term = np.float32(term * weight)
            key = int(chunk_id)
            previous = totals.get(key)
            totals[key] = term if previous is None else np.float32(previous + term)
    return order_fused({cid: float(score) for cid, score in totals.items()}, limit, tie)


def order_fused(
    scores: Mapping[int, float], limit: int | None = None, tie: TieOrder = IN_ID_ORDER
) -> list[tuple[int, float]]:
    """Sort ``{chunk_id: score}`` by score descending, then ``tie`` order (id ascending
    by default); cut to ``limit``.

    The tie-break makes the order total, so equal scores never depend on dictionary
    or database order -- nor, through ``tie``, on the index's history.
    """
    _check_limit(limit)
    fused = sorted(scores.items(), key=lambda item: (-item[1], tie.key(item[0])))
    return fused if limit is None else fused[:limit]


# --------------------------------------------------------------------------- vectorised


@dataclass(frozen=True)
class FusedRanking:
    """One fused list as arrays: ``ids[i]`` has float32 score ``scores[i]``, best first."""

    ids: IdArray
    scores: ScoreArray

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def pairs(self) -> list[tuple[int, float]]:
        """The same shape :func:`fuse_rrf` returns."""
        return [(int(c), float(s)) for c, s in zip(self.ids, self.scores, strict=True)]


def rrf_terms(rrf_ks: Sequence[float], length: int) -> ScoreArray:
    """Table ``T[j, p] = 1 / (k_j + p + 1)`` in float32, shape ``(len(rrf_ks), length)``.

    Computed with the same float32 operations, in the same order, as
    :func:`fuse_rrf` uses per element, so the values are bit-identical.
    """
    for k in rrf_ks:
        _check_k(k)
    ks = np.asarray(rrf_ks, dtype=np.float32).reshape(-1, 1)
    positions = np.arange(length, dtype=np.float32).reshape(1, -1)
    table: ScoreArray = _ONE / ((ks + positions) + _ONE)
    return table


def _add_terms(scores: ScoreArray, where: npt.NDArray[np.intp], terms: ScoreArray) -> None:
    """``scores[:, where[p]] += terms[:, p]`` in list order, one float32 add each."""
    if where.size == 0:
        return
    if np.unique(where).size == where.size:
        scores[:, where] += terms
        return
    # An id repeated within one list: ufunc.at applies the additions one by one,
    # in index order, exactly like the scalar loop.
    for row in range(scores.shape[0]):
        np.add.at(scores[row], where, terms[row])


class RrfSweep:
    """Fuse one query's fixed vector list against many FTS lists at several ``k``.

    Built for ``groove tune``: the vector list does not depend on any fusion
    parameter, so it is converted once; each :meth:`fuse` call then handles one
    FTS list for every ``k`` in one pass of array arithmetic.  The result for
    ``k = rrf_ks[j]`` equals ``fuse_rrf(vector_ids, fts_ids, rrf_ks[j], limit)``
    bit for bit.
    """

    def __init__(
        self,
        vector_ids: Sequence[int],
        rrf_ks: Sequence[float],
        limit: int | None = None,
        tie: TieOrder = IN_ID_ORDER,
    ) -> None:
        _check_limit(limit)
        self.tie = tie
        if len(rrf_ks) == 0:
            raise ValueError("rrf_ks must name at least one k")
        self.rrf_ks: tuple[float, ...] = tuple(float(k) for k in rrf_ks)
        self.limit = limit
        self._vector: IdArray = np.asarray(vector_ids, dtype=np.int64).reshape(-1)
        self._terms = rrf_terms(self.rrf_ks, max(len(self._vector), 1))

    def _terms_for(self, length: int) -> ScoreArray:
        if length > self._terms.shape[1]:
            # grow geometrically so a sweep over many FTS lists rebuilds rarely
            self._terms = rrf_terms(self.rrf_ks, max(length, 2 * self._terms.shape[1]))
        return self._terms[:, :length]

    def fuse(self, fts_ids: Sequence[int], fts_weight: float = 1.0) -> list[FusedRanking]:
        """Fused rankings for this FTS list (its terms times ``fts_weight``, as
        :func:`fuse_rrf` weighs them), one per ``k`` in ``rrf_ks`` order."""
        _check_weight(fts_weight)
        fts: IdArray = np.asarray(fts_ids, dtype=np.int64).reshape(-1)
        vector = self._vector
        # np.unique sorts ascending, so a stable sort on the score keeps
        # equal scores in ascending id order: the required tie-break.
        union = np.unique(np.concatenate([vector, fts]))
        scores: ScoreArray = np.zeros((len(self.rrf_ks), union.size), dtype=np.float32)
        _add_terms(scores, np.searchsorted(union, vector), self._terms_for(vector.size))
        fts_terms = self._terms_for(fts.size)
        if np.float32(fts_weight) != _ONE:
            fts_terms = fts_terms * np.float32(fts_weight)
        _add_terms(scores, np.searchsorted(union, fts), fts_terms)
        if self.tie.by_id:
            order = np.argsort(-scores, axis=1, kind="stable")
        else:
            # equal scores in corpus order, not in id order (see fuse_rrf)
            keys = self.tie.keys(union)
            order = np.stack([np.lexsort((keys, -row)) for row in scores])
        if self.limit is not None:
            order = order[:, : self.limit]
        return [
            FusedRanking(ids=union[order[row]], scores=scores[row, order[row]])
            for row in range(len(self.rrf_ks))
        ]


def fuse_rrf_ranks(
    vector_ids: Sequence[int],
    fts_ids: Sequence[int],
    rrf_ks: Sequence[float],
    limit: int | None = None,
    tie: TieOrder = IN_ID_ORDER,
) -> list[FusedRanking]:
    """One-shot :class:`RrfSweep`: the fused rankings of two lists at each ``k``."""
    return RrfSweep(vector_ids, rrf_ks, limit, tie).fuse(fts_ids)


# --------------------------------------------------------------------------- pool sizes


@dataclass(frozen=True)
class PoolPlan:
    """How many candidates each stage of one search handles.

    ``per_leg_n``: survivors each leg (vector, FTS) contributes to fusion.
    ``fused_limit``: length of the fused list (``None`` = keep all, for MMR).
    ``rerank_keep``: reranked candidates kept (``None`` = all of them; also
    ``None`` when no reranker runs).
    """

    per_leg_n: int
    fused_limit: int | None
    rerank_keep: int | None

    def vector_fetch(self, filtered: bool = False) -> int:
        """Rows to ask the vector index for (over-fetch when post-filtering)."""
        return vector_fetch(self.per_leg_n, filtered)

    def fts_fetch(self, filtered: bool = False) -> int:
        """Rows to ask FTS5 for (no 4096 clamp on this leg)."""
        return fts_fetch(self.per_leg_n, filtered)


def vector_fetch(per_leg_n: int, filtered: bool = False) -> int:
    """Rows the vector leg asks faiss for to keep ``per_leg_n`` after post-filtering."""
    fetch = per_leg_n
    if filtered:
        fetch = min(fetch * FILTERED_FETCH_FACTOR, FILTERED_FETCH_MAX)
    return min(fetch, VECTOR_FETCH_MAX)


def fts_fetch(per_leg_n: int, filtered: bool = False) -> int:
    """Rows the full-text leg asks FTS5 for (no 4096 clamp on this leg)."""
    if filtered:
        return min(per_leg_n * FILTERED_FETCH_FACTOR, FILTERED_FETCH_MAX)
    return per_leg_n


def pool_sizes(limit: int, mmr: bool, reranker: bool) -> PoolPlan:
    """Candidate pool sizes for a search returning ``limit`` hits.

    ``limit`` is clamped to :data:`SEARCH_LIMIT_MAX` (never rejected).  With
    ``pool = max(limit * 5, 50)``:

    * plain: each leg gives ``pool``; fusion keeps ``limit``.
    * reranker, no MMR: fusion keeps ``pool`` for the reranker, so each leg
      over-fetches again (``max(pool * 5, 50)``); the reranker keeps ``limit``.
    * MMR (with or without reranker): each leg gives ``pool``; fusion keeps all
      (at most ``2 * pool``); a reranker scores and keeps all; MMR picks ``limit``.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0 (got {limit})")
    limit = min(limit, SEARCH_LIMIT_MAX)
    pool = max(limit * POOL_FACTOR, POOL_FLOOR)
    if mmr:
        return PoolPlan(per_leg_n=pool, fused_limit=None, rerank_keep=None)
    if reranker:
        return PoolPlan(
            per_leg_n=max(pool * POOL_FACTOR, POOL_FLOOR), fused_limit=pool, rerank_keep=limit
        )
    return PoolPlan(per_leg_n=pool, fused_limit=limit, rerank_keep=None)
