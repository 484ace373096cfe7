"""How a ``groove`` run ends: its exit statuses, and its last line on standard error.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import sys

from pytest_groove.errors import OutputFailed

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
#: interrupted (Ctrl-C), as a shell reports a process that SIGINT ended
EXIT_INTERRUPTED = 130


def report_line(line: str) -> None:
    """Write the final line to stderr; if even that fails there is nobody to tell."""
    with contextlib.suppress(OutputFailed, OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OutputFailed, OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
