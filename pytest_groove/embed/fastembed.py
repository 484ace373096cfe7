"""``fastembed:<name>``: a fastembed (ONNX) text model already in the local cache.

Optional extra (``pip install pytest-groove[fastembed]``).  Loaded with
``local_files_only=True``: the model must already sit in fastembed's cache
directory, which is ``GROOVE_FASTEMBED_CACHE`` if set, else fastembed's own default
(``FASTEMBED_CACHE_PATH`` or ``<tmp>/fastembed_cache``).  groove never downloads it.
Queries go through ``query_embed`` and documents through ``passage_embed`` so
models with query/passage instructions get them; vectors are L2-normalised here.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_groove.embed.base import Matrix, l2_normalise
from pytest_groove.embed.st import import_extra, offline_hub, one_line
from pytest_groove.errors import GrooveError

__all__ = ["PREFIX", "FastEmbedEmbedder"]

PREFIX = "fastembed:"
_BATCH = 32


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding`` loaded from local files only."""

    def __init__(self, name: str) -> None:
        model_name = name[len(PREFIX) :].strip() if name.startswith(PREFIX) else name.strip()
        if not model_name:
            raise GrooveError(f"embedding model {name!r} names no model; use {PREFIX}<model-name>")
        self.name: str = PREFIX + model_name
        self._model_name = model_name
        self._model = _load(model_name)
        probe = self._run(self._model.query_embed, ["dimension probe"], expected_dim=None)
        self.dimension: int = int(probe.shape[1])

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._run(self._model.passage_embed, texts, expected_dim=self.dimension)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._run(self._model.query_embed, texts, expected_dim=self.dimension)

    def _run(self, method: Any, texts: Sequence[str], *, expected_dim: int | None) -> Matrix:
        if not texts:
            return np.empty((0, expected_dim or 0), dtype=np.float32)
        rows = [np.asarray(v, dtype=np.float32) for v in method(list(texts), batch_size=_BATCH)]
        vectors = np.vstack(rows) if rows else np.empty((0, 0), dtype=np.float32)
        ok_dim = vectors.ndim == 2 and vectors.shape[1] > 0
        if expected_dim is not None:
            ok_dim = ok_dim and vectors.shape[1] == expected_dim
        if not ok_dim or vectors.shape[0] != len(texts):
            raise GrooveError(
                f"{self.name} returned vectors of shape {vectors.shape} for {len(texts)} texts"
            )
        return l2_normalise(vectors)


def _load(model_name: str) -> Any:
    """Import fastembed and load ``model_name`` from the local cache, or raise GrooveError."""
    cache_dir = os.environ.get("GROOVE_FASTEMBED_CACHE", "").strip() or None
    with offline_hub():
        module = import_extra("fastembed", "fastembed", PREFIX + model_name)
        try:
            return module.TextEmbedding(
                model_name=model_name, cache_dir=cache_dir, local_files_only=True
            )
        except Exception as exc:  # fastembed raises ValueError/OSError/HF errors
            where = cache_dir or "fastembed's default cache (FASTEMBED_CACHE_PATH)"
            raise GrooveError(
                f"fastembed model {model_name!r} could not be loaded from local files in "
                f"{where} ({type(exc).__name__}: {one_line(exc)}); it must be available "
                "locally (groove never downloads models; set GROOVE_FASTEMBED_CACHE to "
                "its cache directory)"
            ) from exc
