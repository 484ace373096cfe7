"""The CRC-32 of a cache file, piece by piece, so that a file copied from another is
checked without reading what was copied.

A seal (:mod:`~pytest_groove.files.seal`) lists the file as consecutive pieces of at
most :data:`PIECE_BYTES`, each with its length and CRC-32.  A file written in full is
cut into pieces as it lies (:func:`pieces_of`).  The flat vector cache of a new index
state is mostly the previous cache's rows, copied file to file by the kernel
(:mod:`~pytest_groove.kb.derived.vector_cache`): its pieces are the previous file's pieces that
lie wholly inside what was copied, carried over unread, and the CRC of every other byte
(:func:`carried_pieces`) -- an edit then reads a few pieces, not the 100 MiB of a
100,000-chunk cache.  Runs of small pieces left by cuts are read again as one, so the
pieces stay few.  Checking a file (:func:`crc_matches`) reads all of it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence

__all__ = ["PIECE_BYTES", "Piece", "carried_pieces", "crc_matches", "pieces_of"]

#: the longest piece (a cut costs reading at most this much on either side)
PIECE_BYTES = 1024 * 1024
#: a carried piece shorter than this is read again with its neighbours
_SMALL = PIECE_BYTES // 4
#: bytes read at once when a file is checked
_READ_BYTES = 256 * 1024

#: (length, CRC-32) of consecutive bytes of a file
Piece = tuple[int, int]
#: a range of the new file that is a copy of the older one: (new offset, old offset, length)
Copy = tuple[int, int, int]


class _Reader:
    """The file at ``fd``, read a piece at a time into one buffer.

    Read with ``pread``, not mapped: the pages of a mapped file count towards the
    process's resident memory as they are touched, so sealing a freshly written cache
    of 56 MiB by a map raised the peak of the run that wrote it by 56 MiB; a buffer
    of one piece raises it by one piece.  And a file cut short while it is read ends
    the read (:class:`OSError`) instead of faulting the process (``SIGBUS``)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self._view = memoryview(bytearray(min(PIECE_BYTES, self.size)))

    def close(self) -> None:
        self._view.release()

    def pieces(self, start: int, end: int) -> Iterator[Piece]:
        """Pieces of at most :data:`PIECE_BYTES` over ``[start, end)``, of even lengths."""
        count = max(1, -(-(end - start) // PIECE_BYTES))
        for number in range(count):
            first = start + (end - start) * number // count
            last = start + (end - start) * (number + 1) // count
            yield last - first, self._crc(first, last - first)

    def _crc(self, at: int, length: int) -> int:
        value = 0
        while length:
            got = os.preadv(self.fd, [self._view[: min(length, len(self._view))]], at)
            if got <= 0:
                raise OSError(f"file cut short at byte {at} while it was sealed")
            value = zlib.crc32(self._view[:got], value)
            at, length = at + got, length - got
        return value


def pieces_of(fd: int) -> list[Piece]:
    """The pieces of the whole file open at ``fd`` (read from the page cache)."""
    mapped = _Reader(fd)
    try:
        return list(mapped.pieces(0, mapped.size))
    finally:
        mapped.close()


def crc_matches(fd: int, pieces: Sequence[Piece]) -> bool:
    """Whether the file open at ``fd`` is ``pieces``, byte for byte (reads all of it).

    Read with ``pread``, not mapped: a file cut short while it is read (someone else's
    write) ends the read early instead of faulting the process (``SIGBUS``)."""
    if sum(length for length, _ in pieces) != os.fstat(fd).st_size:
        return False
    buffer = bytearray(_READ_BYTES)
    view = memoryview(buffer)
    at = 0
    for length, crc in pieces:
        value, left = 0, length
        while left:
            got = os.preadv(fd, [view[: min(left, _READ_BYTES)]], at)
            if got <= 0:
                return False
            value = zlib.crc32(view[:got], value)
            at, left = at + got, left - got
        if value != crc:
            return False
    return True


def _carried(old: Sequence[Piece], copies: Sequence[Copy]) -> list[tuple[int, int, int]]:
    """(new offset, length, CRC) of each old piece lying wholly inside a copy."""
    starts, at = [], 0
    for length, _ in old:
        starts.append(at)
        at += length
    out: list[tuple[int, int, int]] = []
    for new_at, old_at, length in copies:
        for start, (size, crc) in zip(starts, old, strict=True):
            if start >= old_at and start + size <= old_at + length and size >= _SMALL:
                out.append((new_at + start - old_at, size, crc))
    return out


def carried_pieces(fd: int, old: Sequence[Piece], copies: Sequence[Copy]) -> list[Piece]:
    """The pieces of the file open at ``fd``, of which the ranges ``copies`` are copies
    of an older file sealed as ``old``: the older file's pieces inside a copy are carried
    over unread, every other byte is read.  A stretch to read that would be shorter than
    a quarter piece takes the carried piece after it along, so no piece but the last
    is that short and the pieces stay few however many edits carried them."""
    mapped = _Reader(fd)
    try:
        pieces: list[Piece] = []
        at = 0  # where the stretch still to read begins
        for start, size, crc in sorted(_carried(old, copies)):
            if start < at or start + size > mapped.size:
                continue  # overlapping copies, or past the end: read with the rest
            if 0 < start - at < _SMALL:
                continue  # read along with the stretch before it
            pieces.extend(mapped.pieces(at, start) if start > at else ())
            pieces.append((size, crc))
            at = start + size
        if at < mapped.size or not pieces:
            pieces.extend(mapped.pieces(at, mapped.size))
        return pieces
    finally:
        mapped.close()
