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

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from pytest_groove.embed.base import Matrix, l2_normalise

__all__ = ["HASH_DIMENSION", "HashEmbedder"]

#: number of hash buckets; 256 keeps the index small and collisions rare enough for
#: the short texts tests use
HASH_DIMENSION = 256
_GRAM = 3
#: a Unicode code point fits in 21 bits
_POINT_MASK = (1 << 21) - 1
#: an odd 64-bit constant (from the golden ratio) spreading packed grams over table slots
_SLOT_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
#: texts embedded together (bounds the gram table to a few MiB)
_SLICE = 512
#: characters embedded together: the gram arrays of one pass take about 100 bytes a
#: character, so a pass stays near 50 MiB however long one text is
_SLICE_CHARS = 1 << 19


@lru_cache(maxsize=1 << 16)
def _bucket(gram: str) -> tuple[int, float]:
    """Stable (bucket, sign) for one n-gram."""
    digest = hashlib.blake2b(gram.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    sign = 1.0 if (value >> 63) & 1 == 0 else -1.0
    return value % HASH_DIMENSION, sign


def normalise_text(text: str) -> str:
    """The text the n-grams are taken from (see the module docstring)."""
    # NFKC leaves ASCII as it is, and casefold() of ASCII is lower()
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    collapsed = " ".join(folded.split())
    return f" {collapsed} " if collapsed else ""


def _grams_buckets(
    distinct: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(bucket, sign) of each packed gram, hashing each one with BLAKE2b."""
    buckets = np.empty(len(distinct), dtype=np.int64)
    signs = np.empty(len(distinct), dtype=np.float64)
    for at, key in enumerate(distinct.tolist()):
        gram = chr(key >> 42) + chr((key >> 21) & _POINT_MASK) + chr(key & _POINT_MASK)
        buckets[at], signs[at] = _bucket(gram)
    return buckets, signs


def _buckets_of(
    keys: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """(bucket, sign) of every packed gram in ``keys``, hashing each distinct gram once.

    Natural text repeats its grams heavily, so the distinct ones are found with an
    open table indexed by a multiplicative hash of the key (linear time, where
    ``np.unique`` would sort every gram); the few keys that lose a table slot to
    another key are resolved with ``np.unique``.
    """
    bits = max(10, int(2 * len(keys) - 1).bit_length())
    slots = (keys.astype(np.uint64) * _SLOT_MULTIPLIER) >> np.uint64(64 - bits)
    slot = slots.astype(np.int64)
    table = np.full(1 << bits, -1, dtype=np.int64)
    table[slot] = keys
    held = table[slot] == keys
    occupied = np.flatnonzero(table >= 0)
    slot_bucket = np.zeros(1 << bits, dtype=np.int64)
    slot_sign = np.zeros(1 << bits, dtype=np.float64)
    slot_bucket[occupied], slot_sign[occupied] = _grams_buckets(table[occupied])
    buckets = slot_bucket[slot]
    signs = slot_sign[slot]
    if not held.all():
        lost = ~held
        distinct, inverse = np.unique(keys[lost], return_inverse=True)
        lost_buckets, lost_signs = _grams_buckets(distinct)
        buckets[lost] = lost_buckets[inverse]
        signs[lost] = lost_signs[inverse]
    return buckets, signs


class HashEmbedder:
    """Hashed character 3-grams, 256 dimensions: lexical, NOT semantic."""

    name: str = "hash"
    dimension: int = HASH_DIMENSION

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Matrix:
        # Passes of at most _SLICE pieces and _SLICE_CHARS characters bound the memory of
        # the gram arrays (about 100 bytes a character) whatever the texts' lengths: a
        # longer text is read in windows that overlap by two characters, so each of its
        # grams is counted once.  float64 sums of +-1 are exact whatever the order, so a
        # row does not depend on the batch or the windows it was embedded in.
        counts = np.zeros((len(texts), self.dimension), dtype=np.float64)
        for owners, pieces in _passes([normalise_text(text) for text in texts]):
            # owners ascend, so a pass fills the rows from its first owner to its last
            first, last = owners[0], owners[-1] + 1
            local = np.asarray(owners, dtype=np.int64) - first
            counts[first:last] += _gram_counts(pieces, local, last - first, self.dimension)
        return l2_normalise(counts)


def _windows(padded: str) -> list[str]:
    """``padded`` in pieces of at most ``_SLICE_CHARS`` characters whose grams are its grams."""
    if len(padded) <= _SLICE_CHARS:
        return [padded]
    step = _SLICE_CHARS - (_GRAM - 1)
    return [padded[at : at + _SLICE_CHARS] for at in range(0, len(padded) - (_GRAM - 1), step)]


def _passes(padded: Sequence[str]) -> Iterator[tuple[list[int], list[str]]]:
    """``(owners, pieces)`` in passes of at most ``_SLICE`` pieces and ``_SLICE_CHARS``
    characters (one piece at least); ``owners[i]`` is the row ``pieces[i]`` belongs to."""
    owners: list[int] = []
    pieces: list[str] = []
    chars = 0
    for row, text in enumerate(padded):
        if len(text) < _GRAM:
            continue  # no gram: the row stays zero
        for piece in _windows(text):
            if pieces and (len(pieces) >= _SLICE or chars + len(piece) > _SLICE_CHARS):
                yield owners, pieces
                owners, pieces, chars = [], [], 0
            owners.append(row)
            pieces.append(piece)
            chars += len(piece)
    if pieces:
        yield owners, pieces


def _gram_counts(
    padded: Sequence[str], rows_of: npt.NDArray[np.int64], n_rows: int, dim: int
) -> npt.NDArray[np.float64]:
    """Signed bucket counts ``(n_rows, dim)`` of the grams of normalised ``padded`` texts,
    text ``i`` counted in row ``rows_of[i]``.

    Vectorised over the pass: the texts' code points are read in one array, each gram
    is looked up (three ASCII characters: in a table indexed by the gram itself) or
    packed into one integer and hashed once per pass, and the signed counts are
    summed by one bincount.
    """
    lengths = np.fromiter((len(p) for p in padded), dtype=np.int64, count=len(padded))
    grams = np.maximum(lengths - (_GRAM - 1), 0)
    total = int(grams.sum())
    # a code point fits in 21 bits, so int32 holds it and an ASCII gram's code
    points = np.frombuffer(
        "".join(padded).encode("utf-32-le", "surrogatepass"), dtype=np.uint32
    ).astype(np.int32)
    rows = np.repeat(rows_of, grams)
    # where each text starts in ``points``, minus where its grams start among all grams
    shift = (np.cumsum(lengths) - lengths) - (np.cumsum(grams) - grams)
    first = np.arange(total, dtype=np.int64) + np.repeat(shift, grams)
    a, b, c = points[first], points[first + 1], points[first + 2]
    # every gram is looked up as if it were ASCII (others read entry 0 and are
    # replaced below: most text is ASCII, so this avoids masking the big arrays)
    ascii_code = (a << 14) | (b << 7) | c
    other = np.flatnonzero((a | b | c) >= 128)
    ascii_code[other] = 0
    bucket_of, sign_of = _ascii_table(ascii_code)
    buckets = bucket_of[ascii_code].astype(np.int64)
    signs = sign_of[ascii_code].astype(np.float64)
    if len(other):
        a, b, c = a[other].astype(np.int64), b[other].astype(np.int64), c[other]
        buckets[other], signs[other] = _buckets_of((a << 42) | (b << 21) | c)
    counts = np.bincount(rows * dim + buckets, weights=signs, minlength=n_rows * dim)
    return np.asarray(counts, dtype=np.float64).reshape(n_rows, dim)


#: (bucket, sign) of every gram of three ASCII characters, indexed by the gram's
#: characters as one 21-bit number; -1 = not hashed yet.  Filled as grams are seen
#: (every entry is a pure function of its gram, so any thread may fill any entry).
_ASCII_TABLE: list[tuple[npt.NDArray[np.int16], npt.NDArray[np.int8]]] = []


def _ascii_table(
    codes: npt.NDArray[np.int32],
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int8]]:
    """The ASCII gram table, with every gram of ``codes`` (``(a << 14) | (b << 7) | c``) in it."""
    if not _ASCII_TABLE:
        _ASCII_TABLE.append((np.full(1 << 21, -1, dtype=np.int16), np.zeros(1 << 21, np.int8)))
    bucket_of, sign_of = _ASCII_TABLE[0]
    missing = codes[bucket_of[codes] < 0]
    for code in np.unique(missing).tolist():
        gram = chr(code >> 14) + chr((code >> 7) & 127) + chr(code & 127)
        bucket, sign = _bucket(gram)
        # the sign first: a reader takes an entry whose bucket is set as complete
        sign_of[code] = int(sign)
        bucket_of[code] = bucket
    return bucket_of, sign_of
