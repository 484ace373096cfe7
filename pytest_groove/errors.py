"""The one exception type users see.

Every problem caused by input (a golden file, a config value, a KB file, a query,
a history file, a flag) is raised as :class:`GrooveError` carrying a single line
that names the file or value and the fix.  The CLI prints it as ``Error: ...`` and
exits with :attr:`GrooveError.exit_code`; the pytest plugin turns it into a usage
error.  Anything else escaping is a bug.
"""

from __future__ import annotations


class GrooveError(Exception):
    """A user-facing error: one clear line, no traceback."""

    #: process exit status the CLI uses for this error
    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class UsageError(GrooveError):
    """Bad flag or option value (exit status 2, like argparse)."""

    exit_code = 2


class IndexUnwritable(GrooveError):
    """The index folder cannot be written: read-only, no permission, disk full, size limit."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        #: what went wrong and the fix, without the file name (for callers that rephrase)
        self.reason = reason


class IndexCorrupt(GrooveError):
    """The index database is damaged.  It is a cache of the KB, so rebuilding it is safe."""


class LockFailed(GrooveError):
    """The index lock could not be taken for a reason other than another holder."""


class OutputFailed(GrooveError):
    """Standard output is closed, full or gone: the report could not be written."""
