"""The guarded reader shared by the golden file and the history file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.files.guarded_io import (
    GOLDEN_CAP,
    HISTORY_CAP,
    ReadRefused,
    read_guarded,
)

unix_only = pytest.mark.skipif(os.name == "nt", reason="symlinks are refused on Unix only")


def test_caps() -> None:
    assert GOLDEN_CAP == 1_048_576
    assert HISTORY_CAP == 67_108_864


def test_missing_name_is_absent(tmp_path: Path) -> None:
    assert read_guarded(tmp_path / "nope.yml", "golden file", 100) is None


def test_reads_exact_bytes(tmp_path: Path) -> None:
    target = tmp_path / "g.yml"
    payload = b"queries:\r\n  - x\x00\xff\n"
    target.write_bytes(payload)
    assert read_guarded(target, "golden file", 100) == payload


def test_empty_file_reads_empty(tmp_path: Path) -> None:
    target = tmp_path / "g.yml"
    target.write_bytes(b"")
    assert read_guarded(target, "golden file", 0) == b""


@pytest.mark.parametrize("cap", [1, 7, 64])
def test_exactly_cap_accepted_one_more_refused(tmp_path: Path, cap: int) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"a" * cap)
    assert read_guarded(target, "eval history", cap) == b"a" * cap
    target.write_bytes(b"a" * (cap + 1))
    with pytest.raises(ReadRefused) as info:
        read_guarded(target, "eval history", cap)
    message = info.value.message
    assert info.value.kind == "too_large"
    assert message.startswith("refusing to read the eval history: ")
    assert f"{target} is {cap + 1} bytes, over the {cap} byte limit" in message
    # and what to do: a history that large is no history this product wrote
    assert "move it aside (the next run starts a new one)" in message
    assert "\n" not in message


def test_real_golden_cap_boundary(tmp_path: Path) -> None:
    target = tmp_path / "g.yml"
    target.write_bytes(b"#" * GOLDEN_CAP)
    data = read_guarded(target, "golden file", GOLDEN_CAP)
    assert data is not None and len(data) == GOLDEN_CAP
    with target.open("ab") as handle:
        handle.write(b"#")
    with pytest.raises(GrooveError, match=r"refusing to read the golden file: .*over the"):
        read_guarded(target, "golden file", GOLDEN_CAP)


def test_file_growing_after_fstat_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read itself is bounded: bytes past the cap are never accepted."""
    target = tmp_path / "h.json"
    target.write_bytes(b"x" * 20)
    real_fstat = os.fstat

    def shrunk_fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        fields = list(st)
        fields[6] = 5  # st_size as it looked before the file grew
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", shrunk_fstat)
    with pytest.raises(ReadRefused, match=r"is 11 bytes, over the 10 byte limit"):
        read_guarded(target, "eval history", 10)


@unix_only
def test_symlink_to_regular_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.yml"
    real.write_text("queries: []\n")
    link = tmp_path / "link.yml"
    link.symlink_to(real)
    with pytest.raises(ReadRefused) as info:
        read_guarded(link, "golden file", 100)
    assert info.value.kind == "not_regular"
    assert info.value.message.startswith("refusing to read the golden file: ")
    assert f"{link} is not a regular file" in info.value.message


@unix_only
def test_dangling_symlink_is_refused_not_absent(tmp_path: Path) -> None:
    link = tmp_path / ".groove-eval-history.json"
    link.symlink_to(tmp_path / "does-not-exist")
    with pytest.raises(ReadRefused, match=r"refusing to read the eval history: .*is not a regular"):
        read_guarded(link, "eval history", HISTORY_CAP)
    assert link.is_symlink()  # left untouched


def test_hard_link_is_refused(tmp_path: Path) -> None:
    original = tmp_path / "outside.txt"
    original.write_text("secret\n")
    alias = tmp_path / "g.yml"
    os.link(original, alias)
    with pytest.raises(ReadRefused) as info:
        read_guarded(alias, "golden file", 100)
    assert info.value.kind == "hard_link"
    assert "refusing to read the golden file:" in info.value.message
    assert "more than one name (hard link)" in info.value.message
    assert str(alias) in info.value.message


def test_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "g.yml"
    folder.mkdir()
    # a folder is named as one: the fix is another path, not "replace it with a file"
    with pytest.raises(ReadRefused, match="is a folder, not a file; name the golden") as info:
        read_guarded(folder, "golden file", 100)
    assert info.value.kind == "not_regular"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes need Unix")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "g.yml"
    os.mkfifo(fifo)
    with pytest.raises(ReadRefused, match="is not a regular file"):
        read_guarded(fifo, "golden file", 100)


def test_cannot_look_is_an_error_not_absent(tmp_path: Path) -> None:
    plain = tmp_path / "file"
    plain.write_text("x")
    # A name under a regular file: lstat fails with ENOTDIR, not "no such file".
    with pytest.raises(GrooveError, match=r"^could not look at .*file/g\.yml \(") as info:
        read_guarded(plain / "g.yml", "golden file", 100)
    assert not isinstance(info.value, ReadRefused)


@pytest.mark.skipif(
    os.name == "nt" or (hasattr(os, "geteuid") and os.geteuid() == 0),
    reason="needs POSIX permissions and a non-root user",
)
def test_unreadable_file_is_a_read_failure(tmp_path: Path) -> None:
    target = tmp_path / "g.yml"
    target.write_text("queries: []\n")
    target.chmod(0)
    try:
        with pytest.raises(GrooveError, match=r"^failed to read the golden file: .*g\.yml \("):
            read_guarded(target, "golden file", 100)
    finally:
        target.chmod(0o600)


def test_messages_are_single_lines(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    original = tmp_path / "o"
    original.write_text("x")
    os.link(original, tmp_path / "h")
    for path in (folder, tmp_path / "h"):
        with pytest.raises(GrooveError) as info:
            read_guarded(path, "golden file", 100)
        assert "\n" not in info.value.message
        assert "BU-20" not in info.value.message


def test_open_failure_is_a_read_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Works as root too: the open is made to fail the way a permission problem does."""
    import errno

    target = tmp_path / "g.yml"
    target.write_text("queries: []\n")

    def denied(path: object, flags: int, *args: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(GrooveError) as info:
        read_guarded(target, "golden file", 100)
    assert info.value.message == f"failed to read the golden file: {target} (Permission denied)"
    assert not isinstance(info.value, ReadRefused)
