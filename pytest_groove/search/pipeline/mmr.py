"""Maximal Marginal Relevance: pick a diverse top-``limit`` from a candidate pool.

Greedy selection.  Each round, every candidate not yet picked is valued

    lambda * relevance - (1 - lambda) * max_similarity - penalty * same_document

where ``relevance`` is its score min-max normalised over the pool,
``max_similarity`` its highest cosine similarity to an already picked candidate
(0 before the first pick) and ``same_document`` is 1 when a picked candidate
comes from the same document.  The strictly greatest value wins; a tie goes to
the candidate earlier in the pool.  Arithmetic is float32, like the reference,
so ties fall the same way.  Similarities are taken in steps of
:data:`~pytest_groove.kb.derived.vectors.SCORE_GRID`, as the vector legs compare theirs: a
float32 dot product's last bits depend on the CPU's summation order, and two
candidates equally similar to a pick must tie on every machine.

The caller supplies only candidates that have a stored embedding (one without
cannot be compared, so it cannot be picked) and keeps each hit's pre-MMR score:
the MMR value is a selection device, never a score shown to the user.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

from pytest_groove.errors import UsageError, flag
from pytest_groove.kb.derived.vectors import SCORE_GRID, graded_scores

#: below this spread (float32 machine epsilon) the pool counts as equally relevant
RELEVANCE_SPREAD_EPSILON = float(np.finfo(np.float32).eps)

F32Array = npt.NDArray[np.float32]


def check_mmr_params(lambda_: float, same_doc_penalty: float) -> None:
    """Both knobs must be numbers in [0, 1]; NaN is refused."""
    for option, value in (
        (flag("mmr-lambda"), lambda_),
        (flag("mmr-same-doc-penalty"), same_doc_penalty),
    ):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise UsageError(f"{option} must be a number in [0, 1] (got {value!r})")


def normalise_relevance(relevance: Sequence[float]) -> F32Array:
    """Min-max normalise to [0, 1] in float32.

    A spread of at most float32 epsilon makes every value 0 (the pool is flat,
    so only diversity and the pool order decide).  Non-finite scores are left
    out of the min/max and normalise to 0, the least relevant value.
    """
    scores = np.asarray(relevance, dtype=np.float32).reshape(-1)
    out = np.zeros(scores.shape, dtype=np.float32)
    finite = np.isfinite(scores)
    if not finite.any():
        return out
    low = scores[finite].min()
    spread = np.float32(scores[finite].max() - low)
    if spread <= RELEVANCE_SPREAD_EPSILON:
        return out
    out[finite] = (scores[finite] - low) / spread
    return out


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cosine similarity; 0.0 when either vector is empty, zero, non-finite or the dims differ."""
    va = np.asarray(a, dtype=np.float64).reshape(-1)
    vb = np.asarray(b, dtype=np.float64).reshape(-1)
    if va.size == 0 or va.shape != vb.shape:
        return 0.0
    with np.errstate(all="ignore"):
        denominator = float(np.linalg.norm(va)) * float(np.linalg.norm(vb))
        if denominator == 0.0 or not math.isfinite(denominator):
            return 0.0
        value = float(np.dot(va, vb)) / denominator
    return value if math.isfinite(value) else 0.0


def _unit_rows(embeddings: npt.NDArray[np.floating], n: int) -> F32Array:
    """Rows scaled to length 1; zero, NaN or infinite rows become all-zero (similarity 0).

    Norms are taken in float64 (no overflow for large components); the unit rows
    are float32, the precision of the stored embeddings and of the reference.
    """
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[0] != n:
        raise ValueError(
            f"embeddings must have shape (n, dim) with n = {n} (got {embeddings.shape})"
        )
    rows = embeddings.astype(np.float64)
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(rows, axis=1)
        usable = np.isfinite(rows).all(axis=1) & np.isfinite(norms) & (norms > 0.0)
        unit = np.zeros_like(rows)
        unit[usable] = rows[usable] / norms[usable, None]
    return unit.astype(np.float32)


def mmr_select(
    relevance: Sequence[float],
    embeddings: npt.NDArray[np.floating],
    doc_ids: Sequence[Hashable],
    limit: int,
    lambda_: float,
    same_doc_penalty: float,
) -> list[int]:
    """Indices of the picked candidates, in pick order (at most ``min(limit, n)``).

    ``relevance[i]``, ``embeddings[i]`` and ``doc_ids[i]`` describe candidate
    ``i``, listed in pool order (the order ties fall back to).
    """
    check_mmr_params(lambda_, same_doc_penalty)
    n = len(relevance)
    if len(doc_ids) != n:
        raise ValueError(f"doc_ids has {len(doc_ids)} entries for {n} candidates")
    if limit < 0:
        raise ValueError(f"limit must be >= 0 (got {limit})")
    unit = _unit_rows(np.asarray(embeddings), n)
    wanted = min(limit, n)
    if wanted == 0:
        return []

    lam = np.float32(lambda_)
    diversity_weight = np.float32(1.0) - lam
    penalty = np.float32(same_doc_penalty)
    weighted_relevance = lam * normalise_relevance(relevance)

    members: dict[Hashable, list[int]] = {}
    for index, doc in enumerate(doc_ids):
        members.setdefault(doc, []).append(index)

    max_similarity = np.zeros(n, dtype=np.float32)  # 0 while nothing is picked
    same_document = np.zeros(n, dtype=np.float32)
    taken = np.zeros(n, dtype=bool)
    picks: list[int] = []
    for _ in range(wanted):
        value = (weighted_relevance - diversity_weight * max_similarity) - penalty * same_document
        value[taken] = -np.inf
        # argmax returns the first maximum: ties go to the earlier pool position
        pick = int(np.argmax(value))
        picks.append(pick)
        taken[pick] = True
        similarity = (graded_scores(unit @ unit[pick]) * SCORE_GRID).astype(np.float32)
        if len(picks) == 1:
            max_similarity = similarity
        else:
            np.maximum(max_similarity, similarity, out=max_similarity)
        same_document[members[doc_ids[pick]]] = np.float32(1.0)
    return picks
