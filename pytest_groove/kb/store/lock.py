"""The lock concurrent indexers of one index serialise on.

Only "someone else holds it" is worth waiting for.  Every other failure to take the
lock (a read-only folder, no permission, a directory where the lock file belongs, a
folder that cannot hold files at all, like ``/proc/self``) would fail again on every
retry, so it is reported at once instead of after the wait times out.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.files.lock import LockTimeout, acquire_lock, holding
from pytest_groove.kb.store.faults import os_fault, unwritable_reason

LOCK_FILE_NAME = "index.lock"
LOCK_TIMEOUT_S = 600.0

_PROBE_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def probe_lock_file(index_dir: Path) -> None:
    """Create (or open) the lock file once; raise a translated error if that fails.

    filelock retries a failed open until its timeout because the file may be between
    a holder's release and the next creation; opening it ourselves first tells a
    lasting fault from that moment.
    """
    lock_path = index_dir / LOCK_FILE_NAME
    try:
        fd = os.open(lock_path, _PROBE_FLAGS, 0o644)
    except OSError as exc:
        if unwritable_reason(exc.errno) is not None:
            exc.filename = str(index_dir)  # the folder is what the user can move
        raise os_fault(exc, lock_path) from None
    os.close(fd)


def _say_waiting(lock_path: Path, timeout: float) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no stderr to say it on
        print(
            f"groove: waiting for {clip_path(lock_path)}: another groove or pytest run is "
            f"updating this index (waiting up to {timeout:.0f}s)",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def index_lock(index_dir: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold ``<index_dir>/index.lock`` for the duration of the block."""
    lock_path = index_dir / LOCK_FILE_NAME
    probe_lock_file(index_dir)
    try:
        try:
            lock = acquire_lock(lock_path, 0)
        except LockTimeout:
            # a wait of minutes must not be an empty log (a CI job on a shared workspace)
            _say_waiting(lock_path, timeout)
            lock = acquire_lock(lock_path, timeout)
    except LockTimeout:
        raise GrooveError(
            f"another groove or pytest run has held {clip_path(lock_path)} for "
            f"{timeout:.0f}s; wait for it to finish, or stop it (a run that exits "
            "releases the lock: remove the file only if no run is active, as after a "
            "crash on a network file system)"
        ) from None
    except OSError as exc:
        raise os_fault(exc, lock_path) from None
    with holding(lock):
        yield
