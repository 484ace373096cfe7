"""``hash``: a dependency-free *lexical* embedder for fast tests.

This is not a language model and captures no meaning: two texts are close only
when they share character sequences.  "car" and "automobile" are unrelated to it,
while "index" and "indexing" are close.  Use it to test plumbing (indexing, search,
evaluation) quickly and offline; never to judge retrieval quality.

Recipe: NFKC-normalise, casefold, collapse whitespace to single spaces and pad the
text with one space at each end (so word starts and ends form their own grams);
take every character 3-gram; hash each gram with BLAKE2b (stable across processes
and machines, unlike Python's salted ``hash()``) to a bucket in 0..255 and a sign
(signed feature hashing, so collisions cancel instead of piling up); sum the signed
counts and L2-normalise.  Queries and passages are embedded identically.  A text
with no characters left after normalisation embeds to the zero vector.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from pytest_groove.embed.base import Matrix, l2_normalise

__all__ = ["HASH_DIMENSION", "HashEmbedder"]

#: number of hash buckets; 256 keeps the index small and collisions rare enough for
#: the short texts tests use
HASH_DIMENSION = 256
_GRAM = 3


@lru_cache(maxsize=1 << 16)
def _bucket(gram: str) -> tuple[int, float]:
    """Stable (bucket, sign) for one n-gram."""
    digest = hashlib.blake2b(gram.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if (value >> 63) & 1 == 0 else -1.0
    return value % HASH_DIMENSION, sign


def normalise_text(text: str) -> str:
    """The text the n-grams are taken from (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    collapsed = " ".join(folded.split())
    return f" {collapsed} " if collapsed else ""


class HashEmbedder:
    """Hashed character 3-grams, 256 dimensions: lexical, NOT semantic."""

    name: str = "hash"
    dimension: int = HASH_DIMENSION

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dimension), dtype=np.float64)
        for row, text in enumerate(texts):
            padded = normalise_text(text)
            for start in range(len(padded) - _GRAM + 1):
                bucket, sign = _bucket(padded[start : start + _GRAM])
                out[row, bucket] += sign
        # float64 accumulation then one rounding: the result does not depend on
        # how the texts were batched.
        return l2_normalise(out)
