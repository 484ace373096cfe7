"""The faiss side of an index: exact inner-product search over stored embeddings.

``IndexIDMap2`` over ``IndexFlatIP`` on L2-normalised vectors: exhaustive (so the
ranking is exact and deterministic, which a regression gate needs), keyed by chunk
id, and it supports removal.  It is built from the database and cached in a file
beside it, named by the database's random id and write generation, so a second
process opening an unchanged index reads one file instead of every embedding blob,
and a re-created database can never pick up a stale cache.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from pytest_groove.kb.store import Store

CACHE_PREFIX = "vectors"


class VectorIndex:
    """Exact cosine search over the chunk embeddings of one store."""

    def __init__(self, index: faiss.Index, dimension: int) -> None:
        self._index = index
        self.dimension = dimension

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    @classmethod
    def build(
        cls, ids: npt.NDArray[np.int64], matrix: npt.NDArray[np.float32], dim: int
    ) -> VectorIndex:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        if len(ids):
            index.add_with_ids(np.ascontiguousarray(matrix, dtype=np.float32), ids)
        return cls(index, dim)

    @classmethod
    def load_for(cls, store: Store, directory: Path) -> VectorIndex:
        """The cached index for the store's current generation, else a fresh build.

        Must be called inside ``store.read_snapshot()`` so the generation and the
        embeddings come from the same committed state.
        """
        dim = int(store.get_meta("embedding_dim") or "0")
        cache = directory / f"{CACHE_PREFIX}-{store.index_id}-gen{store.generation}.faiss"
        if cache.is_file():
            try:
                index = faiss.read_index(str(cache))
                if index.d == dim and index.ntotal == store.counts()[1]:
                    return cls(index, dim)
            except RuntimeError:
                pass  # a damaged cache is rebuilt below
        ids, matrix = store.all_vectors()
        built = cls.build(ids, matrix, dim)
        built._write_cache(directory, cache)
        return built

    def _write_cache(self, directory: Path, cache: Path) -> None:
        # The cache is an optimisation: failing to write it (read-only checkout, full
        # disk) must never fail a search.
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        try:
            faiss.write_index(self._index, str(tmp))
            os.replace(tmp, cache)
        except (OSError, RuntimeError):
            with contextlib.suppress(OSError):
                tmp.unlink()
            return
        for old in directory.glob(f"{CACHE_PREFIX}*.faiss"):
            if old != cache:
                with contextlib.suppress(OSError):
                    old.unlink()

    def vector(self, chunk_id: int) -> npt.NDArray[np.float32]:
        """The vector this index holds for ``chunk_id`` (to check it against the store)."""
        return np.asarray(self._index.reconstruct(int(chunk_id)), dtype=np.float32)

    def search(self, query: npt.NDArray[np.float32], n: int) -> list[int]:
        """Up to ``n`` chunk ids, most similar first (ties: lower id first)."""
        n = min(n, self.size)
        if n <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        scores, ids = self._index.search(q, n)
        pairs = [(float(s), int(i)) for s, i in zip(scores[0], ids[0], strict=True) if i >= 0]
        # faiss does not promise an order among equal scores; the gate needs one
        pairs.sort(key=lambda p: (-p[0], p[1]))
        return [i for _, i in pairs]
