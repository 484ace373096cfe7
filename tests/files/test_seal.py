"""Seals on the index folder's derived files (``files/seal.py``): what they trust.

A file whose identity is what its seal records is used without being read; one whose
identity moved is read once and its CRC-32 decides; a seal that does not read back
vouches for nothing.  Through ``groove eval`` (in-process, hash embedder) and the
module's own functions.
"""

from __future__ import annotations

import errno
import itertools
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.files import seal as cache_seal
from pytest_groove.files import seal_pieces as cache_pieces
from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import (
    SEAL_SUFFIX,
    Seal,
    Verdict,
    open_cache_file,
    read_seal,
    seal_path,
    verdict_of,
    write_sealed,
)
from pytest_groove.kb.derived.cache_check import check_caches
from tests.helpers.cache_damage import (
    derived_files,
    eval_json,
    evaluated_example,
    index_dir,
    measured,
    warnings_of,
)
from tests.helpers.kb_files import TOPIC_WORDS


@pytest.fixture
def example(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The example KB, evaluated once (every derived file written) and what it measured."""
    return evaluated_example(tmp_path)


@pytest.fixture
def crc_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file read in full to check its CRC, from here on."""
    calls: list[int] = []
    real_check = cache_seal.crc_matches

    def counting(fd: int, pieces: Any) -> bool:
        calls.append(os.fstat(fd).st_size)
        return real_check(fd, pieces)

    monkeypatch.setattr(cache_seal, "crc_matches", counting)
    return calls


def _sealed(path: Path) -> bool:
    return not path.name.endswith(SEAL_SUFFIX) and seal_path(path).exists()


def _verdict(path: Path) -> Verdict:
    handle = open_cache_file(path)
    assert handle is not None
    with handle:
        return verdict_of(handle, path)


def test_a_no_op_eval_reads_no_derived_file_in_full(
    example: tuple[Path, dict[str, Any]], crc_calls: list[int]
) -> None:
    """A no-op eval trusts every file by its identity: no O(corpus) hashing."""
    kb, before = example
    run, report = eval_json(kb, "--no-history")
    assert run.returncode == 0 and measured(report) == before
    assert crc_calls == []


def test_a_copied_index_is_checked_once_then_trusted(
    example: tuple[Path, dict[str, Any]], crc_calls: list[int]
) -> None:
    """New inodes (``cp -a``, a CI cache restored): each file's CRC is checked once, it
    is sealed again, and the next run trusts it unread."""
    kb, before = example
    moved = kb.parent / "moved"
    shutil.copytree(kb, moved)
    sealed = [p for p in derived_files(index_dir(moved)) if _sealed(p)]
    run, report = eval_json(moved, "--no-history")
    assert run.returncode == 0 and warnings_of(run) == [], run.stderr
    assert measured(report)["aggregate"] == before["aggregate"]
    assert len(crc_calls) == len(sealed)
    crc_calls.clear()
    run, _ = eval_json(moved, "--no-history")
    assert run.returncode == 0 and crc_calls == []


def test_a_new_boot_checks_each_file_once(
    example: tuple[Path, dict[str, Any]], crc_calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written without fsync, a file is trusted by identity only in the boot that wrote
    it: after a reboot (a crash may have lost its bytes) its CRC is checked once."""
    kb, before = example
    if cache_seal.current_boot() is None:
        pytest.skip("no boot id here: every file is written with fsync")
    monkeypatch.setattr(cache_seal, "current_boot", lambda: b"\x01" * 16)
    run, report = eval_json(kb, "--no-history")
    assert run.returncode == 0 and warnings_of(run) == [], run.stderr
    assert measured(report) == before and crc_calls
    crc_calls.clear()
    run, _ = eval_json(kb, "--no-history")
    assert run.returncode == 0 and crc_calls == []


def test_without_a_boot_id_files_are_written_durably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(cache_seal, "current_boot", lambda: None)
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    path = tmp_path / "vectors-x.faiss"
    write_sealed(path, lambda handle: handle.write(b"rows" * 100))
    assert len(synced) >= 3  # the file, its folder, the seal
    seal = read_seal(path)
    assert seal is not None and seal.boot == bytes(16)
    monkeypatch.setattr(cache_seal, "current_boot", lambda: b"\x02" * 16)
    assert _verdict(path) is Verdict.TRUSTED  # durable: trusted by identity in any boot


def test_a_seal_vouches_only_for_the_bytes_and_the_file_it_sealed(tmp_path: Path) -> None:
    path = tmp_path / "corpus-snapshot.json"
    write_sealed(path, lambda handle: handle.write(b'{"documents": 11}'))
    assert _verdict(path) is Verdict.TRUSTED
    # the same bytes in a new file (a copy): checked, trusted, sealed again
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    assert _verdict(path) is Verdict.TRUSTED
    seal = read_seal(path)
    assert seal is not None and seal.identity[1] == path.stat().st_ino
    # other bytes of the same size, written in place: damaged
    path.write_bytes(data.replace(b"11", b"12"))
    assert _verdict(path) is Verdict.DAMAGED
    # a seal that does not read back vouches for nothing
    write_sealed(path, lambda handle: handle.write(data))
    raw = bytearray(seal_path(path).read_bytes())
    assert len(raw) == 72 + 12  # one piece
    raw[20] ^= 1
    seal_path(path).write_bytes(bytes(raw))
    assert read_seal(path) is None and _verdict(path) is Verdict.UNSEALED
    seal_path(path).unlink()
    assert _verdict(path) is Verdict.UNSEALED


def test_a_link_in_a_seals_place_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    path = tmp_path / "phrases-x.npz"
    write_sealed(path, lambda handle: handle.write(b"phrases"))
    outside.write_bytes(seal_path(path).read_bytes())
    seal_path(path).unlink()
    seal_path(path).symlink_to(outside)
    assert read_seal(path) is None and _verdict(path) is Verdict.UNSEALED
    write_sealed(path, lambda handle: handle.write(b"phrases"))
    assert not seal_path(path).is_symlink() and outside.read_bytes() != b""
    assert Seal.decode(outside.read_bytes()) is not None  # the outside file kept its bytes


# ------------------------------------------------------------------ pieces carried over

_MIB = cache_pieces.PIECE_BYTES


def _file(path: Path, data: bytes) -> int:
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


@settings(max_examples=60, deadline=None)
@given(
    old_size=st.integers(0, 9 * _MIB),
    cuts=st.lists(st.integers(0, 9 * _MIB), max_size=6),
    fresh=st.lists(st.integers(0, _MIB // 2), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_carried_pieces_are_the_new_files_own(
    tmp_path_factory: pytest.TempPathFactory,
    old_size: int,
    cuts: list[int],
    fresh: list[int],
    seed: int,
) -> None:
    """Any file made of ranges copied from an older one and fresh bytes between them:
    the pieces carried over check out against its bytes, no piece but the last is under
    a quarter piece, and only the bytes around the cuts and the fresh ones are read."""
    folder = tmp_path_factory.mktemp("pieces")
    rng = random.Random(seed)
    old_data = rng.randbytes(old_size)
    old_fd = _file(folder / "old", old_data)
    new_fd = -1
    try:
        old_pieces = cache_pieces.pieces_of(old_fd)
        bounds = sorted({0, old_size, *(c % (old_size + 1) for c in cuts)})
        kept = [(a, b) for a, b in itertools.pairwise(bounds) if rng.random() < 0.7]
        parts, copies, at = [], [], 0
        for number, (a, b) in enumerate(kept):
            gap = rng.randbytes(fresh[number % len(fresh)])
            parts.append(gap)
            at += len(gap)
            copies.append((at, a, b - a))
            parts.append(old_data[a:b])
            at += b - a
        parts.append(rng.randbytes(fresh[-1]))
        new_fd = _file(folder / "new", b"".join(parts))
        read: list[int] = []
        real = cache_pieces._Reader.pieces

        def counting(self: Any, start: int, end: int) -> Any:
            read.append(end - start)
            return real(self, start, end)

        cache_pieces._Reader.pieces = counting  # type: ignore[method-assign]
        try:
            pieces = cache_pieces.carried_pieces(new_fd, old_pieces, copies)
        finally:
            cache_pieces._Reader.pieces = real  # type: ignore[method-assign]
        assert cache_pieces.crc_matches(new_fd, pieces)
        assert all(length >= _MIB // 4 for length, _ in pieces[:-1])
        assert all(length <= _MIB for length, _ in pieces)
        fresh_bytes = at + len(parts[-1]) - sum(b - a for a, b in kept)
        # each cut reads at most a piece on each side, plus the piece a short stretch takes
        assert sum(read) <= fresh_bytes + (3 * len(kept) + 1) * _MIB
    finally:
        os.close(old_fd)
        if new_fd >= 0:
            os.close(new_fd)


def test_an_edit_reads_a_few_pieces_of_the_vector_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flat cache of the new index state is sealed from the older one's pieces: an
    edit reads the pieces around it, not the whole cache."""
    piece = 64 * 1024  # pieces of 64 KiB: a cache of 1,200 chunks is many of them
    monkeypatch.setattr(cache_pieces, "PIECE_BYTES", piece)
    monkeypatch.setattr(cache_pieces, "_SMALL", piece // 4)
    kb = tmp_path / "kb"
    kb.mkdir()
    words = TOPIC_WORDS[:11]
    for d in range(40):
        body = "\n\n".join(
            f"## Part {s}\n\n" + " ".join(words[(d + s + k) % len(words)] for k in range(60))
            for s in range(30)
        )
        (kb / f"note{d:02}.md").write_text(f"# Note {d}\n\n{body}\n")
    run, _ = eval_json(kb, "--no-history", "--golden", str(_golden(kb)))
    assert run.returncode == 0, run.stderr
    (cache,) = index_dir(kb).glob("vectors-*.faiss")
    assert cache.stat().st_size > 16 * piece  # 1,200 chunks of 256 floats
    read: list[int] = []
    real = cache_pieces._Reader.pieces
    monkeypatch.setattr(
        cache_pieces._Reader,
        "pieces",
        lambda self, start, end: read.append(end - start) or real(self, start, end),
    )
    with (kb / "note20.md").open("a", encoding="utf-8") as out:
        out.write("\nOne more line about the replica lease.\n")
    run, _ = eval_json(kb, "--no-history", "--golden", str(_golden(kb)))
    assert run.returncode == 0 and warnings_of(run) == [], run.stderr
    (cache,) = index_dir(kb).glob("vectors-*.faiss")
    seal = read_seal(cache)
    assert seal is not None and len(seal.pieces) > 16
    handle = open_cache_file(cache)
    assert handle is not None
    with handle:
        assert cache_pieces.crc_matches(handle.fileno(), seal.pieces)
    # only the flat cache is sealed from pieces read (the note rows are rows of index.db)
    assert sum(read) < cache.stat().st_size // 2


def _golden(kb: Path) -> Path:
    golden = kb.parent / "golden.yml"
    golden.write_text(
        'queries:\n  - query: "replica lease"\n    expected:\n      - path: "note01.md"\n'
    )
    return golden


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
def test_a_seal_out_of_reach_for_want_of_descriptors_is_no_damage(
    example: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    # `ulimit -n 8`: opening a seal failed with EMFILE, which read as "its seal does not
    # read back", and every cache was removed as damaged
    kb, _ = example
    folder = index_dir(kb)
    before = derived_files(folder)
    real_open = os.open

    def out_of_descriptors(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(SEAL_SUFFIX):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", out_of_descriptors)
    with pytest.raises(ResourceLimit, match="open files") as caught:
        check_caches(folder)
    monkeypatch.undo()
    assert SEAL_SUFFIX in caught.value.message and "\n" not in caught.value.message
    assert derived_files(folder) == before
