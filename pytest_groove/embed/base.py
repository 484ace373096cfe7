"""The embedder protocol every backend implements.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    ``name`` is the model identity: it is recorded in the index metadata (an index
    built with one name refuses queries from another) and in every eval run's
    fingerprint.  Both methods return an array of shape ``(len(texts), dimension)``.
    Queries and passages are separate calls because some models (e5) prefix them
    differently.
    """

    name: str
    dimension: int

    def embed_passages(self, texts: Sequence[str]) -> Matrix: ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...


def l2_normalise(matrix: npt.NDArray[np.floating]) -> Matrix:
    """Row-wise L2 normalisation; zero rows stay zero."""
    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim == 1:
        out = out.reshape(1, -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)
