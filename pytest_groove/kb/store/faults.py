"""Faults of the index folder as one line that names the file and the fix.

The index is a cache of the KB kept in a folder (``<kb>/.groove/<model>`` unless
``--index-dir`` says otherwise).  What can go wrong there is the machine's, not the
user's input: a read-only checkout, a folder someone else owns, a full disk, a file
size limit (``ulimit -f``), a damaged database, a path that is a file or a symlink
loop.  Each is translated here, at the boundary where the operating system or SQLite
reports it, into a :class:`~pytest_groove.errors.GrooveError` subclass whose message
says what happened to which file and what to do about it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw

from pytest_groove.errors import (
    GENERIC_INDEX_COMMAND,
    GENERIC_REBUILD_COMMAND,
    GrooveError,
    IndexCorrupt,
    IndexUnwritable,
    LockFailed,
    clip_path,
    flag,
)
from pytest_groove.files.resource_limits import RESOURCE_ERRNOS, resource_limit
from pytest_groove.kb.store.damage import mark_damaged

#: where the index can go instead (the plugin rewrites the flag to --groove-index-dir)
INDEX_DIR_HINT = f"pass {flag('index-dir')} to keep the index in a writable folder"
#: the index is derived data, so the remedy for damage is always the same
REBUILD_HINT = f"it is only a cache of the KB: rebuild it with `{GENERIC_REBUILD_COMMAND}`"
#: ... and once a reader left its mark: any run that indexes rebuilds it
MARKED_HINT = (
    f"it is only a cache of the KB, marked now to be rebuilt by the next run that indexes: "
    f"run `{GENERIC_INDEX_COMMAND}`"
)

_READ_ONLY = frozenset({errno.EROFS})
_NO_PERMISSION = frozenset({errno.EACCES, errno.EPERM})
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def _is_symlink_loop(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def unwritable_reason(code: int | None) -> str | None:
    """The words and the fix for an errno that means "cannot write here", else None."""
    if code in _READ_ONLY:
        return f"the file system is read-only; {INDEX_DIR_HINT}"
    if code in _NO_PERMISSION:
        return f"permission denied; make it writable or {INDEX_DIR_HINT}"
    if code in _NO_SPACE:
        return f"no space left on the device; free some space or {INDEX_DIR_HINT}"
    if code == errno.EFBIG:
        return f"the file size limit was reached (ulimit -f); raise the limit or {INDEX_DIR_HINT}"
    return None


def os_fault(exc: OSError, where: Path) -> GrooveError:
    """An OSError met while preparing or locking the index folder ``where``."""
    path = Path(exc.filename) if isinstance(exc.filename, str) else where
    if exc.errno in RESOURCE_ERRNOS:
        # not the folder's fault: no --index-dir (a name opened below a folder is relative)
        return resource_limit(exc.errno, path if path.is_absolute() else where)
    reason = unwritable_reason(exc.errno)
    if reason is not None:
        return IndexUnwritable(
            f"cannot write the index at {clip_path(path)}: {reason}", reason=reason
        )
    if (
        exc.errno in (errno.ELOOP, errno.EMLINK)
        and path.is_symlink()
        and not _is_symlink_loop(path)
    ):
        # an O_NOFOLLOW open refused a link: that is what it found, not a loop
        return GrooveError(
            f"{clip_path(path)} is a symbolic link, and the index's files are never opened "
            f"through one; remove it and run again, or point {flag('index-dir')} at a real folder"
        )
    if exc.errno == errno.ELOOP or _is_symlink_loop(path):
        return GrooveError(
            f"the index folder {clip_path(path)} is a symlink loop; "
            f"point {flag('index-dir')} at a real folder"
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return GrooveError(
            f"the index folder {clip_path(path)} is not a folder (a file is in its place); point "
            f"{flag('index-dir')} at a folder or move the file away"
        )
    if exc.errno == errno.EISDIR:
        return LockFailed(
            f"the index lock {clip_path(path)} is a directory, not a file; remove it and run again"
        )
    return GrooveError(
        f"cannot use the index at {clip_path(path)}: {exc.strerror or exc}; {INDEX_DIR_HINT}"
    )


def corrupt(db_path: Path, detail: str) -> IndexCorrupt:
    """The error for a damaged ``db_path``, once the mark that has the next indexer
    rebuild it is left beside it (:mod:`~pytest_groove.kb.store.damage`)."""
    hint = MARKED_HINT if mark_damaged(db_path, detail) else REBUILD_HINT
    return IndexCorrupt(f"the index {clip_path(db_path)} is corrupt ({detail}); {hint}")


def apsw_fault(exc: apsw.Error, db_path: Path, system_errno: int = 0) -> GrooveError:
    """An error SQLite reported for the index database ``db_path``.

    ``system_errno`` is the connection's last operating-system error, which tells a
    full disk from a file size limit behind SQLite's plain "disk I/O error", and a
    process out of open files from a folder it may not write.
    """
    if isinstance(exc, apsw.NoMemError):
        return resource_limit(errno.ENOMEM, db_path)
    limit = system_errno if system_errno in RESOURCE_ERRNOS else _out_of_files(exc)
    if limit:
        return resource_limit(limit, db_path)
    if isinstance(exc, apsw.CantOpenError) and (
        getattr(exc, "extendedresult", 0) == getattr(apsw, "SQLITE_CANTOPEN_SYMLINK", -1)
        or system_errno in (errno.ELOOP, errno.EMLINK)
    ):
        # SQLITE_OPEN_NOFOLLOW (the database) or SQLite's own O_NOFOLLOW (its journal,
        # WAL and shared-memory files) refused a link that appeared after the check
        return GrooveError(
            f"a symbolic link stands at {clip_path(db_path)} or a file beside it (-wal, -shm, "
            "-journal), or on the way to it, and is never followed; run the indexer again "
            "(it removes a link in the index folder and rebuilds), or point "
            f"{flag('index-dir')} at a real folder"
        )
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        return corrupt(db_path, str(exc))
    if isinstance(exc, apsw.SQLError) and "no such" in str(exc):
        # a database of ours that lacks one of its tables or columns
        return corrupt(db_path, str(exc))
    if isinstance(exc, apsw.FullError):
        reason = f"{unwritable_reason(errno.ENOSPC)}"
        return IndexUnwritable(
            f"cannot write the index {clip_path(db_path)}: {reason}", reason=reason
        )
    if isinstance(exc, apsw.IOError):
        reason = unwritable_reason(system_errno) or (
            "disk I/O error (a full disk or a file size limit?); free some space, raise "
            f"`ulimit -f` or {INDEX_DIR_HINT}"
        )
        return IndexUnwritable(
            f"cannot write the index {clip_path(db_path)}: {reason}", reason=reason
        )
    if isinstance(exc, apsw.ReadOnlyError | apsw.CantOpenError | apsw.PermissionsError):
        folder = db_path.parent
        code = system_errno or (errno.EROFS if not os.access(folder, os.W_OK) else 0)
        reason = unwritable_reason(code) or f"{exc}; {INDEX_DIR_HINT}"
        return IndexUnwritable(
            f"cannot open the index {clip_path(db_path)}: {reason}", reason=reason
        )
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        # another process holds the database: nothing is damaged, nothing to rebuild
        return GrooveError(
            f"the index {clip_path(db_path)} is busy: another process is writing it "
            f"({exc}); run again once it has finished"
        )
    return GrooveError(f"the index {clip_path(db_path)} failed: {exc}; {REBUILD_HINT}")


def _out_of_files(exc: apsw.Error) -> int:
    """EMFILE or ENFILE when SQLite could not open a file because this process (or the
    system) has no descriptor left, else 0.  SQLite says only "unable to open database
    file", and a connection that failed to open keeps no errno: one descriptor is asked
    for here, as SQLite's open asked."""
    if not isinstance(exc, apsw.CantOpenError | apsw.IOError):
        return 0
    try:
        os.close(os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
    except OSError as probe:
        return probe.errno if probe.errno in (errno.EMFILE, errno.ENFILE) else 0
    return 0


def _system_errno(conn: apsw.Connection | None) -> int:
    if conn is None:
        return 0
    try:
        return int(conn.system_errno)
    except apsw.Error:
        return 0


@contextmanager
def index_faults(db_path: Path, conn: apsw.Connection | None = None) -> Iterator[None]:
    """Translate what SQLite raises while the index is read or written.

    A text column that is not valid UTF-8 surfaces as ``UnicodeDecodeError`` when a
    row is read: that is damage too.
    """
    try:
        yield
    except apsw.Error as exc:
        raise apsw_fault(exc, db_path, _system_errno(conn)) from None
    except UnicodeDecodeError as exc:
        raise corrupt(db_path, f"undecodable text: {exc.reason}") from None


@contextmanager
def index_dir_faults(index_dir: Path) -> Iterator[None]:
    """Translate OSErrors met while creating or locking the index folder."""
    try:
        yield
    except OSError as exc:
        raise os_fault(exc, index_dir) from None
    except RuntimeError as exc:  # pathlib's "Symlink loop from ..." before Python 3.13
        if "Symlink loop" not in str(exc):
            raise
        raise os_fault(OSError(errno.ELOOP, "symlink loop", str(index_dir)), index_dir) from None
