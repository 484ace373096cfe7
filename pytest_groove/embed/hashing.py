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

    Vectorised over the pass, and about 15 bytes a character: the joined texts' code
    points are read in one array (a byte each when all are ASCII), the gram starting at
    each position is three overlapping slices of it, each gram is looked up (three
    ASCII characters: in a table indexed by the gram itself) or packed into one
    integer and hashed once per pass, and one unweighted bincount counts each
    (row, bucket, sign); a gram that would run into the next text counts in a bin
    that is dropped.
    """
    joined = "".join(padded)
    starts = len(joined) - (_GRAM - 1)  # positions a gram starts at
    points = (
        np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        if joined.isascii()
        else np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(
            np.int32
        )
    )
    a, b, c = points[:starts], points[1 : starts + 1], points[2:]
    # every gram is read as if it were ASCII (others are replaced below: most text is
    # ASCII, so this avoids masking the big arrays); shifted and or-ed in place
    code = a.astype(np.int32)
    code <<= 7
    code |= b
    code <<= 7
    code |= c
    other = (
        np.zeros(0, dtype=np.int64)
        if points.dtype == np.uint8
        else np.flatnonzero((a | b | c) >= 128)
    )
    code[other] = 0
    lengths = np.fromiter(map(len, padded), dtype=np.int64, count=len(padded))
    # bin = row * 2 * dim + bucket * 2 + (1 if the sign is negative)
    bins = np.repeat(rows_of * (2 * dim), lengths)[:starts]
    row_other = bins[other]
    bins += _ascii_bins(code)
    del code
    if len(other):
        first, second = a[other].astype(np.int64), b[other].astype(np.int64)
        buckets, signs = _buckets_of((first << 42) | (second << 21) | c[other])
        bins[other] = row_other + 2 * buckets + (signs < 0)
    # the two positions before each text's end start no gram of it
    ends = np.cumsum(lengths)
    dropped = n_rows * 2 * dim
    bins[ends[:-1] - 2] = dropped
    bins[ends[:-1] - 1] = dropped
    counts = np.bincount(bins, minlength=dropped + 1)[:dropped].reshape(n_rows, dim, 2)
    return (counts[:, :, 0] - counts[:, :, 1]).astype(np.float64)


#: (bucket * 2 + 1 if the sign is negative) of every gram of three ASCII characters,
#: indexed by the gram's characters as one 21-bit number; -1 = not hashed yet.  Filled
#: as grams are seen (every entry is a pure function of its gram, written in one
#: store, so any thread may fill any entry).
_ASCII_TABLE: list[npt.NDArray[np.int16]] = []


def _ascii_bins(codes: npt.NDArray[np.int32]) -> npt.NDArray[np.int16]:
    """The table entry of every gram of ``codes`` (``(a << 14) | (b << 7) | c``)."""
    if not _ASCII_TABLE:
        _ASCII_TABLE.append(np.full(1 << 21, -1, dtype=np.int16))
    table = _ASCII_TABLE[0]
    found = table[codes]
    if not len(found) or found.min() >= 0:
        return found
    for code in np.unique(codes[found < 0]).tolist():
        gram = chr(code >> 14) + chr((code >> 7) & 127) + chr(code & 127)
        bucket, sign = _bucket(gram)
        table[code] = 2 * bucket + (sign < 0)
    return table[codes]
