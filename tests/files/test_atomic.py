"""The shared file plumbing: atomic replacement, exclusive backups, stale temps."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

import pytest

from pytest_groove.files.atomic import (
    move_into_place,
    open_new,
    remove_stale_temp_files,
    write_atomic,
    write_atomic_with,
    write_backup,
    write_temp,
)

unix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and symlinks")


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------- atomic write


def test_write_atomic_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"old")
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert temps(tmp_path) == []


@unix_only
def test_write_atomic_keeps_the_permission_bits(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_atomic(target, b"new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.json"
    write_atomic(fresh, b"x")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644


def test_a_write_that_fails_halfway_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"old")

    def full_device(handle: BinaryIO) -> None:
        handle.write(b"half of the new")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomic_with(target, full_device)
    assert target.read_bytes() == b"old"
    assert temps(tmp_path) == []


def test_a_rename_that_fails_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"old")

    def refused(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(PermissionError):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert temps(tmp_path) == []


def test_staged_temp_waits_beside_the_file_until_moved(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"old")
    tmp = write_temp(target, lambda handle: handle.write(b"new"), mode=0o644)
    assert tmp.parent == tmp_path and tmp.name.startswith("data.json.")
    assert target.read_bytes() == b"old"  # nothing visible before the rename
    move_into_place(tmp, target)
    assert target.read_bytes() == b"new"
    assert not tmp.exists()


# --------------------------------------------------------------------------- stale temps


def test_stale_temps_of_the_file_are_removed_and_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b"kept")
    stale = write_temp(target, lambda handle: handle.write(b"died"), mode=0o644)
    other = write_temp(tmp_path / "other.json", lambda handle: handle.write(b"x"), mode=0o644)
    lookalike = tmp_path / "data.json.short.tmp"
    lookalike.write_bytes(b"x")
    assert remove_stale_temp_files(target) == 1
    assert not stale.exists()
    assert other.exists() and lookalike.exists() and target.read_bytes() == b"kept"
    assert remove_stale_temp_files(target) == 0


@unix_only
def test_a_stale_temp_that_is_a_link_is_removed_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    precious = tmp_path / "precious.txt"
    precious.write_bytes(b"mine")
    link = tmp_path / "data.json.abcd1234.tmp"
    link.symlink_to(precious)
    assert remove_stale_temp_files(target) == 1
    assert not link.is_symlink()
    assert precious.read_bytes() == b"mine"


def test_stale_temps_follow_the_given_pattern(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    legacy = tmp_path / "data.json.bak.abcd1234.tmp"
    legacy.write_bytes(b"x")
    assert remove_stale_temp_files(target) == 0
    assert remove_stale_temp_files(target, r"data\.json\.bak\.[a-z0-9_]{8}\.tmp") == 1
    assert not legacy.exists()


# --------------------------------------------------------------------------- new files, backups


@unix_only
def test_open_new_never_opens_what_is_there(tmp_path: Path) -> None:
    existing = tmp_path / "existing"
    existing.write_bytes(b"mine")
    assert open_new(existing) is None
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "elsewhere")
    assert open_new(dangling) is None
    assert not (tmp_path / "elsewhere").exists()
    assert existing.read_bytes() == b"mine"
    handle = open_new(tmp_path / "fresh")
    assert handle is not None
    with handle:
        handle.write(b"new")
    assert (tmp_path / "fresh").read_bytes() == b"new"


def test_a_backup_never_overwrites_another(tmp_path: Path) -> None:
    taken = tmp_path / "file.bak-1"
    taken.write_bytes(b"first damage")
    names = iter([taken, tmp_path / "file.bak-2"])
    backup = write_backup(b"second damage", lambda: next(names))
    assert backup == tmp_path / "file.bak-2"
    assert taken.read_bytes() == b"first damage"
    assert backup.read_bytes() == b"second damage"


@unix_only
def test_a_backup_name_held_by_a_link_is_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours")
    planted = tmp_path / "file.bak-1"
    planted.symlink_to(outside)
    names = iter([planted, tmp_path / "file.bak-2"])
    assert write_backup(b"copy", lambda: next(names)) == tmp_path / "file.bak-2"
    assert outside.read_bytes() == b"not yours"


def test_no_free_backup_name_is_none(tmp_path: Path) -> None:
    taken = tmp_path / "file.bak"
    taken.write_bytes(b"x")
    assert write_backup(b"copy", lambda: taken) is None
    assert taken.read_bytes() == b"x"


def test_a_backup_that_cannot_be_created_names_it(tmp_path: Path) -> None:
    where = tmp_path / "missing-folder" / "file.bak"
    with pytest.raises(OSError) as caught:
        write_backup(b"copy", lambda: where)
    assert caught.value.filename == str(where)
