"""The index folder's own files, looked at before SQLite, faiss or the lock open them.

SQLite opens ``index.db`` and its ``-wal``, ``-shm`` and ``-journal`` files by name,
and the lock is taken by name.  Whoever can write the index folder (inside the KB
that is whoever writes the KB) could plant a symbolic link there to another SQLite
database or any file, which SQLite would follow and fill with the KB's text.  So,
before any of them is opened, every such name is looked at with ``lstat`` (never
following it) and must be absent or a regular file:

- the indexer (which holds the index lock, and whose index is only a cache of the
  KB) removes a symbolic link, named pipe or socket in its place -- only the name
  in the index folder is unlinked, never what a link points to -- and rebuilds;
- a folder or a device in its place is refused with one line naming it (it may
  hold something of someone's, so it is never removed);
- a search (which never writes the index) refuses anything planted, with one line
  naming it and the command that repairs it.

After the check SQLite is asked not to follow links either
(``SQLITE_OPEN_NOFOLLOW`` for the database; SQLite opens the journal, WAL and
shared-memory files with ``O_NOFOLLOW`` itself), so a link planted between the
check and the open fails the open instead of being followed.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.errors import GENERIC_INDEX_COMMAND, GrooveError, clip_path

#: what a search (which cannot repair the index) tells the user to run
REPAIR_HINT = (
    f"run `{GENERIC_INDEX_COMMAND}` (or pytest with reindexing on), which removes it "
    "(never what it points to) and rebuilds the index"
)


@dataclass(frozen=True)
class Planted:
    """Something other than a plain file where a file of the index belongs."""

    path: Path
    #: "a symbolic link (to ...)", "a named pipe", "a folder", ...
    what: str
    #: whether the indexer may remove it: a name only (a link, a pipe, a socket)
    removable: bool


def _describe(path: Path, info: os.stat_result) -> Planted | None:
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return Planted(path, f"a symbolic link (to {clip_path(target, 80)})", True)
    if stat.S_ISFIFO(mode):
        return Planted(path, "a named pipe", True)
    if stat.S_ISSOCK(mode):
        return Planted(path, "a socket", True)
    if stat.S_ISDIR(mode):
        return Planted(path, "a folder", False)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return Planted(path, "a device", False)
    return Planted(path, "not a regular file", False)


def find_planted(directory: Path, names: Iterable[str]) -> list[Planted]:
    """What stands at ``names`` in ``directory`` that is not a regular file (lstat only).

    Raises :class:`OSError` when a name cannot be looked at (other than "absent").
    """
    found: list[Planted] = []
    for name in names:
        path = directory / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            return found  # the folder itself is wrong: the caller's own check says so
        planted = _describe(path, info)
        if planted is not None:
            found.append(planted)
    return found


def _refusal(planted: Planted, fix: str) -> GrooveError:
    return GrooveError(
        f"{clip_path(planted.path)} is {planted.what}, not a file of the index, and is never "
        f"opened through; {fix}"
    )


def refuse_planted(directory: Path, names: Iterable[str]) -> None:
    """One :class:`GrooveError` for the first name that is not a regular file (searching)."""
    for planted in find_planted(directory, names):
        fix = (
            REPAIR_HINT if planted.removable else "remove it (it is not the index's) and run again"
        )
        raise _refusal(planted, fix)


def clear_planted(directory: Path, names: Iterable[str]) -> list[str]:
    """Remove links, pipes and sockets at ``names`` (indexing); returns one warning each.

    A folder or device at one of them is left where it is, for the open that follows
    to refuse with its own line.  Raises the :class:`OSError` of a removal that failed
    (a read-only folder): the caller words it.
    """
    warnings: list[str] = []
    for planted in find_planted(directory, names):
        if not planted.removable:
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(planted.path)
        warnings.append(
            f"{clip_path(planted.path)} was {planted.what}; removed that name (nothing it "
            "pointed to was opened), the index is a cache and is rebuilt from the KB"
        )
    return warnings


def identity_of(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the regular file at ``path`` (lstat), None when there is none."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def check_unchanged(path: Path, before: tuple[int, int] | None) -> None:
    """After SQLite opened ``path`` by name: it must still be the regular file checked
    before (or, when there was none, a regular file now), else one :class:`GrooveError`.

    SQLite refuses a link itself; this catches a named pipe, a device or another file
    swapped in between the check and SQLite's open.
    """
    after = identity_of(path)
    if after is None or (before is not None and after != before):
        raise GrooveError(
            f"{clip_path(path)} was replaced while it was being opened (by something that "
            "is not the index file); nothing was read from it: run again"
        )
