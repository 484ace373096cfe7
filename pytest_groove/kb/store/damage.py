"""Damage to ``index.db`` met by a reader, or found by the indexer before it trusts it.

The index is a cache of the KB, so a damaged one is thrown away and rebuilt -- by the
indexer, which alone holds the index lock.  But an incremental run of the indexer reads
few of the database's pages (the document rows, the metadata): a page it never reads (a
full-text segment, a chunk's row) could be damaged while it reported every note
unchanged, and every later search failed on it until someone ran ``groove index
--force``.  Two things keep a damaged index from outliving the next run that indexes:

- **a reader's mark.**  Whoever meets SQLite's corruption in the database (a search,
  ``--no-reindex``, the corpus snapshot, the indexer itself) leaves a mark beside it,
  ``index.db.damaged``: the database's device and inode and what SQLite said.  The next
  indexer rebuilds a database so marked and removes the mark.  A mark that names
  another file (the database was rebuilt since) is stale and only removed.
- **the indexer's check.**  Before it uses the database, the indexer runs SQLite's
  ``PRAGMA quick_check`` (every page of every b-tree read once) unless the file is the
  one it last left checked: that file's identity (device, inode, size, modification
  and change times) and boot are kept in ``index.db.seal``, a seal of
  :mod:`~pytest_groove.files.seal` with no pieces.  Nothing but a write changes a
  file's bytes, and a write moves its identity; so a run on the file the indexer left
  reads nothing more, while a copy, a restored CI cache, a new boot or a write by
  anything else (``dd``, a disk error the kernel saw, another program) is checked once.

Both files are written by replacing their name (a temporary file renamed over it), so
a link planted there is replaced, never followed; the mark is read without following a
link.  Neither is needed for correctness of an undamaged index: a missing seal costs
one check, a missing mark leaves the damage to the next reader that meets it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import apsw

from pytest_groove.errors import IndexCorrupt, clip, clip_path
from pytest_groove.files.atomic import write_atomic_with
from pytest_groove.files.seal import identity_sealed, seal_identity, seal_path

__all__ = [
    "MARK_SUFFIX",
    "check_database",
    "clear_damage_records",
    "mark_damaged",
    "mark_path",
    "marked_damage",
    "needs_check",
    "record_checked",
]

#: the mark a reader leaves beside ``index.db`` when SQLite says it is damaged
MARK_SUFFIX = ".damaged"
#: the most bytes of a mark read back (it holds one short line and SQLite's words)
_MARK_CAP = 4096
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def mark_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + MARK_SUFFIX)


def mark_damaged(db_path: Path, detail: str) -> bool:
    """Leave the mark that makes the next indexer rebuild ``db_path``; whether it is
    there now.  Never raises: a folder that cannot take it (read-only) is left as it is."""
    try:
        info = os.lstat(db_path)
        if not stat.S_ISREG(info.st_mode):
            return False
        data = f"{info.st_dev} {info.st_ino}\n{clip(detail, 200)}\n".encode()
        write_atomic_with(mark_path(db_path), lambda handle: handle.write(data), sync=False)
    except OSError:
        return False
    return True


def _read_mark(path: Path) -> bytes | None:
    """The mark's bytes; None when there is none (or something other than a file)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MARK_CAP)
    except OSError:
        return None
    finally:
        os.close(fd)


def marked_damage(db_path: Path) -> str | None:
    """What a reader's mark says of ``db_path`` (SQLite's words); None when no mark
    names this file.  A stale mark (naming a database since replaced) is removed."""
    path = mark_path(db_path)
    data = _read_mark(path)
    if data is None:
        return None
    head, _, rest = data.decode("utf-8", "replace").partition("\n")
    try:
        info = os.lstat(db_path)
        named = tuple(int(part) for part in head.split())
    except (OSError, ValueError):
        named = ()
    if named and named != (info.st_dev, info.st_ino):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    # a mark that does not read back still says a reader met damage: rebuilt all the same
    return clip(rest.strip(), 200) or "marked damaged by an earlier run"


def needs_check(db_path: Path) -> bool:
    """Whether ``db_path`` is not the file the indexer last left checked (see the
    module doc): its pages are then checked before the indexer trusts them."""
    return not identity_sealed(db_path)


def record_checked(db_path: Path) -> None:
    """Seal ``db_path`` as the indexer leaves it, checked and written by it alone (its
    connection closed).  A folder that cannot take the seal costs one check next time."""
    with contextlib.suppress(OSError):
        seal_identity(db_path)


def clear_damage_records(db_path: Path) -> None:
    """Remove the mark and the seal of ``db_path`` (the database is being rebuilt)."""
    for path in (mark_path(db_path), seal_path(db_path)):
        with contextlib.suppress(OSError):
            path.unlink()


def check_database(conn: apsw.Connection, db_path: Path) -> None:
    """The indexer's look before it trusts ``db_path`` (open as ``conn``, under the
    index lock): :class:`IndexCorrupt` when a reader marked it, or when it is not the
    file the indexer last left checked and ``PRAGMA quick_check`` finds damage.  An
    error SQLite raises meanwhile is the caller's to translate."""
    detail = marked_damage(db_path)
    if detail is not None:
        raise IndexCorrupt(
            f"the index {clip_path(db_path)} is corrupt (an earlier run found: {detail})"
        )
    if not needs_check(db_path):
        return
    problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(1)")]
    if problems != ["ok"]:
        # "*** in database main ***" and the problem, on lines of their own
        lines = [line for line in problems[0].splitlines() if not line.startswith("***")]
        raise IndexCorrupt(
            f"the index {clip_path(db_path)} is corrupt (SQLite's check: "
            f"{clip(' '.join(lines) or problems[0])})"
        )
