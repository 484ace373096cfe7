"""pytest's standard output in a session that records a run.

pytest writes its terminal report to ``sys.stdout`` and has no answer when that
write fails: a full device (``> /dev/full``) or a reader that went away ends the
session in ``INTERNALERROR``, and a closed descriptor (``>&-``) in a traceback.
A gate must not end that way, and it must not record a run whose report nobody
could read.  So, in the process that records the run and before pytest's terminal
reporter is made, the plugin

- refuses a closed standard output as a usage error (one line on stderr, exit 4);
- gives pytest a standard output that notes its first failed write instead of
  raising (:class:`StdoutGuard`); the controller reads :attr:`StdoutGuard.failure`
  once its summary is written, and then leaves the history as it was and ends the
  session with one ``ERROR:`` line and exit status 4.

The plugin does this only when it is active (a knowledge base is configured).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, Protocol, TextIO, cast

import pytest

from pytest_groove.errors import OutputFailed
from pytest_groove.text.console import fd_is_open, guarded_text_stream, output_failure


class _Stream(Protocol):
    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


class StdoutGuard(io.TextIOBase):
    """A text stream that records its first write failure and swallows the rest.

    An :class:`io.TextIOBase`, as ``sys.stdout`` is: a test under ``-s`` (or a library
    it calls) that checks ``isinstance(sys.stdout, io.TextIOBase)`` must see no
    difference.  What the base class would answer for itself -- encoding, errors,
    ``fileno``, ``closed`` -- is the stream's underneath.
    """

    def __init__(self, stream: _Stream, replaced: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self._replaced = replaced
        #: the one-line description of the first failed write (None = all went out)
        self.failure: str | None = None

    @property
    def encoding(self) -> Any:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> Any:  # type: ignore[override]
        return getattr(self._stream, "errors", None)

    @property
    def newlines(self) -> Any:  # type: ignore[override]
        return getattr(self._stream, "newlines", None)

    @property
    def closed(self) -> bool:
        return bool(getattr(self._stream, "closed", False))

    def fileno(self) -> int:
        return cast(int, self._stream.fileno())  # type: ignore[attr-defined]

    def close(self) -> None:
        # the base class's close would only mark this object closed (and its
        # finaliser would write the flush): closing is the stream's own business
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()

    def __del__(self) -> None:
        return None

    def restore(self) -> None:
        """Put back the ``sys.stdout`` this guard replaced (at the session's end)."""
        self.flush()
        if sys.stdout is self:
            sys.stdout = self._replaced

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                self._stream.write(text)
            except OutputFailed as exc:
                self.failure = exc.message_for("pytest")
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.failure is None:
            try:
                self._stream.flush()
            except OutputFailed as exc:
                self.failure = exc.message_for("pytest")

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        # encoding, fileno, errors, ...: what the stream underneath says
        return getattr(self._stream, name)


def guard_stdout(*, closed: bool = False) -> StdoutGuard:
    """Put a :class:`StdoutGuard` in place of ``sys.stdout``; a closed standard
    output (``closed``: it was closed when pytest started) is a
    :class:`pytest.UsageError`."""
    current: TextIO | None = sys.stdout
    if closed or current is None or not fd_is_open(1):
        if current is None:
            # pytest flushes sys.stdout on its way out: give it somewhere harmless
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        raise pytest.UsageError(
            "standard output is closed, so no report could be written and no run is "
            "recorded; redirect it to a file or /dev/null instead of closing it"
        )
    original: TextIO = current
    if original is not sys.__stdout__:
        # already replaced (pytester, an IDE runner): watch that stream as it is
        guard = StdoutGuard(_RaisingStream(original), original)
    else:
        # the guarded descriptor says what it is (a pipe, /dev/full) when a write fails
        encoding = getattr(original, "encoding", None) or "utf-8"
        guarded = guarded_text_stream(1, "standard output", encoding, like=original)
        guard = StdoutGuard(_KeepTty(guarded, original), original)
    sys.stdout = cast(TextIO, guard)
    return guard


class _RaisingStream:
    """Another stream whose ``OSError`` becomes :class:`OutputFailed`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return self._stream.isatty()

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _failure(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _failure(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _KeepTty:
    """The guarded stream, answering ``isatty``/``encoding`` like the original, and
    as unbuffered as it was (``PYTHONUNBUFFERED``, ``-u``: every write goes out at
    once, so a test's prints interleave with what it writes to the descriptor)."""

    def __init__(self, stream: TextIO, original: TextIO) -> None:
        self._stream = stream
        self._original = original
        self._unbuffered = not isinstance(getattr(original, "buffer", None), io.BufferedIOBase)

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if self._unbuffered:
            self._stream.flush()
        return written

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _failure(exc: OSError) -> OutputFailed:
    return output_failure(exc, "standard output")
