"""The CRC-32 pieces of a cache file (``files/seal_pieces.py``): taking them holds one
piece in memory, whatever the file's size."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from pytest_groove.files.seal_pieces import PIECE_BYTES, pieces_of

_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


def _reset_peak() -> None:
    """Make the process's peak resident memory its current one (Linux 4.0 and later)."""
    try:
        _CLEAR_REFS.write_text("5", encoding="ascii")
    except OSError:
        pytest.skip("the peak resident memory cannot be reset here")


def test_pieces_are_the_files_crcs(tmp_path: Path) -> None:
    data = os.urandom(3 * PIECE_BYTES + 12_345)
    path = tmp_path / "file"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        pieces = pieces_of(fd)
    finally:
        os.close(fd)
    assert sum(length for length, _ in pieces) == len(data)
    assert all(length <= PIECE_BYTES for length, _ in pieces)
    at = 0
    for length, crc in pieces:
        assert zlib.crc32(data[at : at + length]) == crc
        at += length


@pytest.mark.skipif(not _CLEAR_REFS.exists(), reason="Linux's /proc only")
def test_sealing_a_large_file_does_not_raise_the_peak_memory(tmp_path: Path) -> None:
    """A file just written lies in the page cache: mapped and read, each of its pages
    counted towards the process's resident memory (a 64 MiB file, 64 MiB more at the
    peak); read a piece at a time, one piece does."""
    path = tmp_path / "cache"
    with path.open("wb") as handle:
        for _ in range(64):
            handle.write(os.urandom(1024 * 1024))
    fd = os.open(path, os.O_RDONLY)
    try:
        _reset_peak()
        before = _status_kib("VmRSS")
        pieces_of(fd)
        grown = _status_kib("VmHWM") - before
    finally:
        os.close(fd)
    assert grown < 16 * 1024
