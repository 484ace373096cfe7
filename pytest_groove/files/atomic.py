"""Writing files so that a crash or a full device never leaves half of one.

- :func:`write_atomic` / :func:`write_atomic_with` replace a file all at once: the
  new bytes go to a fresh temporary file beside it (``<name>.<8 characters>.tmp``,
  created exclusively, so nothing planted there is followed), are synced, take the
  file's permission bits, and are renamed over it; the rename is then synced too.
  A failure at any step removes the temporary file and leaves the old file as it was.
  :func:`write_temp` and :func:`move_into_place` are the two halves, for a caller
  that must do something between them (the eval history delivers its report first).
- :func:`open_new` creates a file only when no file (or link) has its name.
- :func:`write_backup` keeps bytes in a backup whose name no earlier backup holds.
- :func:`remove_stale_temp_files` deletes the temporary files of an interrupted
  write; call it only while holding the lock every writer of that file takes.

Every function raises the :class:`OSError` it met: the caller words the message.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: create, never open what is there, never follow a link in the last component
_CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
#: a fresh backup name is tried this many times before giving up
_BACKUP_ATTEMPTS = 100


def file_mode(path: Path, default: int = 0o644) -> int:
    """``path``'s permission bits, or ``default`` when it cannot be looked at."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return default


def sync_directory(folder: Path) -> None:
    """Make a rename in ``folder`` durable; not every platform can open a directory."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_temp(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    mode: int,
    sync: bool = True,
) -> Path:
    """A new temporary file beside ``path`` that ``write`` filled, synced when ``sync``.

    The temporary file gets the permission bits ``mode``.  On :class:`OSError` (or
    any other error ``write`` raises) the temporary file is removed and the error
    raised.
    """
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
    return tmp


def move_into_place(tmp: Path, path: Path, *, sync: bool = True) -> None:
    """Rename ``tmp`` over ``path`` (and sync the folder when ``sync``).

    When the rename fails, ``tmp`` is removed and the :class:`OSError` raised.
    """
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if sync:
        sync_directory(path.parent)


def write_atomic_with(
    path: Path,
    write: Callable[[BinaryIO], object],
    *,
    mode: int | None = None,
    sync: bool = True,
) -> None:
    """Replace ``path`` with what ``write`` puts in a binary handle (see module doc).

    ``mode`` defaults to ``path``'s own permission bits (0644 for a new file).
    ``sync=False`` skips both fsyncs, for a file that is only a cache: a torn one
    is rebuilt, so it is not worth a wait on the disk.
    """
    tmp = write_temp(path, write, mode=file_mode(path) if mode is None else mode, sync=sync)
    move_into_place(tmp, path, sync=sync)


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data``, durably (see :func:`write_atomic_with`)."""
    write_atomic_with(path, lambda handle: handle.write(data), mode=mode)


def open_new(path: Path, mode: int = 0o644) -> BinaryIO | None:
    """A binary handle on a new file ``path``; None when the name is taken (by
    anything, a dangling link included: it is never followed).

    Raises :class:`OSError` when the file cannot be created.
    """
    try:
        fd = os.open(path, _CREATE_NEW, mode)
    except FileExistsError:
        return None
    return os.fdopen(fd, "wb")


def write_backup(data: bytes, names: Callable[[], Path], mode: int = 0o644) -> Path | None:
    """Keep ``data`` in a new file named by ``names()``, synced; returns its path.

    ``names`` gives a fresh candidate each call; a name taken meanwhile (by another
    process, between its check and the creation) is skipped for the next, so no
    backup ever overwrites another.  None when no free name turned up.  Raises
    :class:`OSError`, with ``filename`` set to the backup's path, when the backup
    cannot be created or written (a partly written one is removed).
    """
    for _attempt in range(_BACKUP_ATTEMPTS):
        backup = names()
        try:
            handle = open_new(backup, mode)
        except OSError as exc:
            exc.filename = str(backup)
            raise
        if handle is None:
            continue
        try:
            with handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                backup.unlink()
            exc.filename = str(backup)
            raise
        return backup
    return None


def temp_file_pattern(path: Path) -> str:
    """A regular expression for the names :func:`write_temp` gives beside ``path``."""
    return re.escape(path.name) + r"\.[a-z0-9_]{8}\.tmp"


def remove_stale_temp_files(path: Path, pattern: str | None = None) -> int:
    """Delete the temporary files an interrupted write of ``path`` left; returns how many.

    ``pattern`` (default :func:`temp_file_pattern`) must match a whole name.  Only
    safe with the lock every writer of ``path`` holds while its temporary file
    exists: any such file seen then belongs to a writer that died.  A symbolic link
    of that name is removed itself, never followed.
    """
    matcher = re.compile(temp_file_pattern(path) if pattern is None else pattern)
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        if not matcher.fullmatch(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)
                removed += 1
    return removed
