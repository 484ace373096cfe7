"""Giving freed heap memory back to the operating system between the indexer's phases.

Indexing a changed KB holds every file's bytes, SQLite's page cache and the parsed
documents; once they are freed, glibc keeps most of that memory in its heap (the
blocks are small and interleaved, so the heap's top cannot shrink).  The vector
caches built next and the searches after them then come on top of it, and a run after
a one-file edit peaked far above a run with nothing changed.  ``malloc_trim`` hands
the free pages back.  Elsewhere than glibc it does nothing: only the peak is higher.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

__all__ = ["return_freed_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    # the symbols the process already has (the C library among them): no search for
    # the library's file (``ctypes.util.find_library`` runs ``ldconfig``, 10 ms or more)
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None  # not glibc, or no process-wide symbol table (Windows)
    return trim


def return_freed_memory() -> None:
    """Hand the heap's free pages back to the OS (glibc); nothing elsewhere."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
