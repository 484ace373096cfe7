"""The write-ahead log checkpointed on a thread of its own while the indexer writes.

SQLite copies the WAL back into ``index.db`` (a *checkpoint*) at the commit that
takes the WAL past 1,000 pages.  With ``synchronous=NORMAL`` a checkpoint syncs the
WAL and the database file, and the commit waits for both to reach the disk: on a full
``hash`` index of 10,000 chunks, about 90 ms of the writer thread's 0.95 s, the
thread the index waits for.  While :func:`checkpoints_apart` holds, a commit that
takes the WAL past the same size only wakes :class:`_Checkpointer`, which checkpoints
through a connection of its own (``PASSIVE``: it copies what no reader still needs
and never blocks the writer or a reader).  The WAL starts over only once every page
in it is copied, which a checkpoint running beside a writer that keeps appending
never achieves; so past :data:`WAL_RESTART_PAGES` the commit checkpoints the little
left itself, as SQLite would.  What it leaves, the indexer's close checkpoints.

A checkpoint that fails is not an error here: the WAL keeps every commit, the next
commit tries again, and the close checkpoints (and reports) whatever is left.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw

from pytest_groove.kb.store.database import Store

__all__ = ["WAL_CHECKPOINT_PAGES", "WAL_RESTART_PAGES", "checkpoints_apart"]

#: WAL pages that call for a checkpoint (SQLite's own ``wal_autocheckpoint`` default)
WAL_CHECKPOINT_PAGES = 1000
#: WAL pages past which the commit checkpoints what is left itself: the WAL starts
#: over only once every page in it is copied, which a checkpoint running beside the
#: writer never sees (at 10k chunks the WAL grew to 59 MB without it, and the pages
#: read through it cost the writer time); the thread has copied most of them by then
WAL_RESTART_PAGES = 4 * WAL_CHECKPOINT_PAGES


@contextlib.contextmanager
def checkpoints_apart(store: Store) -> Iterator[None]:
    """Checkpoint ``store``'s WAL on another thread until the block ends (its commits
    no longer wait for the checkpoints); the thread is gone when it ends."""
    checkpointer = _Checkpointer(store)
    store.conn.set_wal_hook(checkpointer.after_commit)
    try:
        yield
    finally:
        # without a hook SQLite checkpoints no more at commit: the close does
        store.conn.set_wal_hook(None)
        checkpointer.stop()


class _Checkpointer:
    """A thread that checkpoints the index when a commit asks, through its own connection.

    The thread starts with the first checkpoint asked for: a run that writes little (a
    no-op re-index before every eval) starts none.
    """

    def __init__(self, store: Store) -> None:
        self._folder = store.path.parent
        self._wanted = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def after_commit(self, conn: apsw.Connection, _name: str, pages: int) -> int:
        """SQLite's WAL hook: called on the committing thread after every commit (the
        connection's commits come one at a time, so the thread is started once)."""
        if pages >= WAL_RESTART_PAGES:
            with contextlib.suppress(apsw.Error):  # as SQLite's own hook: tried again later
                conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        elif pages >= WAL_CHECKPOINT_PAGES:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="groove-checkpoints", daemon=True
                )
                self._thread.start()
            self._wanted.set()
        return apsw.SQLITE_OK

    def stop(self) -> None:
        """Let a checkpoint under way finish, and close the thread's connection."""
        self._stopping = True
        self._wanted.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        reader: Store | None = None
        try:
            while True:
                self._wanted.wait()
                self._wanted.clear()
                if self._stopping:
                    return
                reader = reader or _opened(self._folder)
                if reader is not None:
                    _checkpoint(reader)
        finally:
            if reader is not None:
                with contextlib.suppress(Exception):
                    reader.close()


def _opened(folder: Path) -> Store | None:
    """A second connection to the index (None if it cannot be opened now)."""
    try:
        return Store.open(folder, create=False)
    except Exception:  # best effort: whatever it is, the close reports it, in one line
        return None


def _checkpoint(reader: Store) -> None:
    # best effort, as above: a thread's exception would print a traceback, never that
    with contextlib.suppress(Exception):
        reader.conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
