"""A resource the operating system ran out of: never damage, an empty KB or a permission.

An ``OSError`` of ``EMFILE`` (this process's limit of open files, ``ulimit -n``),
``ENFILE`` (the system's table of open files) or ``ENOMEM`` (memory) says nothing of the
file it was met on: that file is neither damaged, unreadable, missing nor empty of
notes.  So wherever a failed open or listing would otherwise be taken for one of those
-- a folder skipped as unlistable (a KB then "has no indexable document"), a cache's
seal that "does not read back" (the cache then removed), a folder whose "permissions"
are to be checked -- :func:`raise_if_limit` is asked first and raises
:class:`ResourceLimit`: one line naming the limit and the fix, and the run stops before
it removes or records anything.  The doors turn one met anywhere else the same way
(:func:`resource_limit_of`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from pytest_groove.errors import GrooveError, clip_path

try:  # imported now: a process out of descriptors cannot import a module
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

__all__ = [
    "RESOURCE_ERRNOS",
    "ResourceLimit",
    "limits_as_errors",
    "raise_if_limit",
    "resource_limit",
    "resource_limit_of",
]

#: what a process or the machine ran out of, in errno's words
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


class ResourceLimit(GrooveError):
    """The process or the machine ran out of open files or memory (a limit, not damage)."""


def _open_files_limit() -> int | None:
    """This process's limit of open files (``ulimit -n``), None where it cannot be read."""
    if resource is None:
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def resource_limit(code: int, where: object) -> ResourceLimit:
    """The one line for running out of what ``code`` (an errno of
    :data:`RESOURCE_ERRNOS`) names, met at the file or folder ``where``."""
    at = clip_path(where)
    if code == errno.EMFILE:
        limit = _open_files_limit()
        now = f" (`ulimit -n` is {limit})" if limit is not None else ""
        return ResourceLimit(
            f"cannot open {at}: this process reached its limit of open files{now}, which "
            "is no fault of the file; raise the limit (for example `ulimit -n 4096`) and "
            "run again"
        )
    if code == errno.ENFILE:
        return ResourceLimit(
            f"cannot open {at}: the system's table of open files is full, which is no fault "
            "of the file; close other programs or raise the system's limit (fs.file-max), "
            "and run again"
        )
    return ResourceLimit(
        f"ran out of memory at {at}, which is no fault of the file; free some memory or "
        "raise the memory limit (`ulimit -v`), and run again"
    )


def resource_limit_of(exc: BaseException) -> ResourceLimit | None:
    """``exc`` as a :class:`ResourceLimit` when it is an ``OSError`` of a limit or a
    ``MemoryError``, else None (for the doors' boundaries: what no caller translated)."""
    if isinstance(exc, MemoryError):
        return resource_limit(errno.ENOMEM, "a step of the run")
    if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
        where = exc.filename if exc.filename is not None else "a file"
        return resource_limit(exc.errno, where)
    return None


def raise_if_limit(exc: OSError, where: object) -> None:
    """Raise :class:`ResourceLimit` when ``exc`` is running out of open files or memory
    (met at ``where``); return otherwise, for the caller's own handling."""
    if exc.errno in RESOURCE_ERRNOS:
        raise resource_limit(exc.errno, where) from None


@contextmanager
def limits_as_errors() -> Iterator[None]:
    """Turn running out of open files or memory met inside (and translated by no caller)
    into its :class:`ResourceLimit` line: for the doors' boundaries."""
    try:
        yield
    except (OSError, MemoryError) as exc:
        limit = resource_limit_of(exc)
        if limit is None:
            raise
        raise limit from None
