"""A Ctrl-C while pytest finishes is one line, not a traceback.

pytest turns a Ctrl-C during the tests into its own short "KeyboardInterrupt" report,
but not one that arrives while the session finishes: in the terminal summary (ours
or another plugin's), in ``pytest_unconfigure`` or on the way out of ``pytest.main``,
the ``KeyboardInterrupt`` reaches the interpreter and prints its whole traceback. The
controller therefore puts :func:`interrupted_while_finishing` in ``sys.excepthook``
when the plugin is active (a host's own hook stays): it says in one line that the
session was interrupted and whether the run was recorded.  The exit status stays
Python's own for an unhandled Ctrl-C (the process ends by SIGINT: 130 in a shell),
and a second Ctrl-C during the interpreter's own shutdown ends it at once.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType

#: what the line says about the run: set by the controller once it knows
_run_state: list[str] = []


def arm() -> None:
    """Install the hook, unless the host has its own (IPython, a test harness)."""
    _run_state.clear()
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = interrupted_while_finishing


def note_run(state: str) -> None:
    """Record what the last line should say of the run (``the run was recorded``)."""
    _run_state[:] = [state]


def interrupted_while_finishing(
    kind: type[BaseException], value: BaseException, traceback: TracebackType | None
) -> None:
    """``sys.excepthook``: a ``KeyboardInterrupt`` is one line; anything else is
    Python's own report."""
    if not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, traceback)
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends it at once
    line = "groove: interrupted while pytest was finishing"
    if _run_state:
        line += f"; {_run_state[0]}"
    with contextlib.suppress(Exception):  # a closed or broken stdout must not hide it
        sys.stdout.flush()
    with contextlib.suppress(Exception):  # nobody left to tell
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
