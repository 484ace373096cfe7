"""A Python retriever that does not answer: a line after a while, never a silent hang.

A Python retriever is called in the evaluation's own process, where a call cannot be
cut short (``--retriever-timeout`` bounds an HTTP exchange only).  While one query is
searched, a timer thread waits :data:`STALL_SECONDS`; if the retriever has not answered
by then, the thread prints one line naming the retriever, the query and how to bound
it, and does nothing else: the call goes on, and the line is said once per query that
hangs.  It goes through :data:`announce`, which writes to the process's standard error
(the pytest door points it past pytest's output capture).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator

from pytest_groove.errors import clip_repr, flag, spell_flags

#: seconds a Python retriever may take on one query before the line is printed
#: (a module attribute: tests, and a team that knows its retriever is slow, change it)
STALL_SECONDS = 30.0


def _to_stderr(text: str) -> None:
    """The default :data:`announce`: one line on standard error, options spelled for
    ``groove``."""
    stream = sys.__stderr__ or sys.stderr
    with contextlib.suppress(OSError, ValueError):  # a closed stream: nothing to tell
        stream.write(f"groove: warning: {spell_flags(text, 'cli')}\n")
        stream.flush()


#: where the line goes unless a door says otherwise
DEFAULT_ANNOUNCE: Callable[[str], None] = _to_stderr
#: where the line goes (called from the timer thread: it must only write)
announce: Callable[[str], None] = DEFAULT_ANNOUNCE


def stall_line(name: str, query: str, seconds: float) -> str:
    """The line for retriever ``name`` still searching ``query`` after ``seconds``."""
    return (
        f"retriever {name} has not answered query {clip_repr(query)} in {seconds:g} s "
        "and is still being waited for: a Python retriever runs in this process and "
        "cannot be cut short; set a timeout on the client it calls, or bound the run "
        f"with pytest-timeout (pytest --timeout=SECONDS); {flag('retriever-timeout')} "
        "applies to http:// retrievers only"
    )


def _tell(name: str, query: str, seconds: float) -> None:
    with contextlib.suppress(Exception):  # a thread's error would print a traceback
        announce(stall_line(name, query, seconds))


@contextlib.contextmanager
def watching(name: str, query: str) -> Iterator[None]:
    """While the block runs, a timer that tells :data:`announce` once the block has
    taken :data:`STALL_SECONDS`."""
    seconds = STALL_SECONDS
    timer = threading.Timer(seconds, _tell, (name, query, seconds))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


__all__ = ["DEFAULT_ANNOUNCE", "STALL_SECONDS", "announce", "stall_line", "watching"]
