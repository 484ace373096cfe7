"""The file lock writers of one file (or one index) serialise on.

A :class:`filelock.FileLock`: an advisory lock on ``<something>.lock`` that the
operating system drops when its holder dies, so a killed run never blocks the next.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

#: raised by :func:`acquire_lock` when another holder kept the lock past the timeout
LockTimeout = filelock.Timeout


def acquire_lock(lock_path: Path, timeout: float) -> filelock.BaseFileLock:
    """Take the lock at ``lock_path``, waiting up to ``timeout`` seconds.

    Raises :class:`LockTimeout` when another process still holds it then, and the
    :class:`OSError` met when the lock file cannot be opened at all.
    """
    lock = filelock.FileLock(str(lock_path), timeout=timeout)
    lock.acquire()
    return lock


@contextmanager
def holding(lock: filelock.BaseFileLock) -> Iterator[None]:
    """Release ``lock`` (already taken) when the body ends, however it ends."""
    try:
        yield
    finally:
        lock.release()
