"""Writing reports to a terminal, a pipe or a file that may not take them.

Two things can go wrong with standard output that are not the report's fault:

* its encoding cannot represent a character (``LC_ALL=C``, ``PYTHONIOENCODING=ascii``):
  the arrows, dashes and marks the reports use degrade to ASCII look-alikes, and any
  other character to a backslash escape, instead of raising ``UnicodeEncodeError``;
* the write itself fails (a closed pipe, ``/dev/full``, a closed descriptor): that is
  one :class:`~pytest_groove.errors.OutputFailed` naming where the output went, and
  whatever is still buffered is dropped so nothing fails again at exit.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from pytest_groove.errors import OutputFailed

#: ASCII stand-ins for the non-ASCII characters the reports print
ASCII_FALLBACKS: dict[str, str] = {
    "\u2014": "-",  # em dash
    "\u2013": "-",  # en dash
    "\u2192": "->",
    "\u2191": "^",
    "\u2193": "v",
    "\u2717": "x",  # ballot x
    "\u2713": "ok",  # check mark
    "\u26a0": "!",  # warning sign
    "\ufe0f": "",  # emoji presentation selector
    "\u0394": "d",  # Delta
    "\u2026": "...",
    "\u00a7": "S",
    "\u2265": ">=",
    "\u2264": "<=",
}

ERROR_HANDLER = "groove-ascii"


def _ascii_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for char in exc.object[exc.start : exc.end]:
        stand_in = ASCII_FALLBACKS.get(char)
        if stand_in is None:
            code = ord(char)
            stand_in = (
                f"\\x{code:02x}"
                if code <= 0xFF
                else (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
            )
        out.append(stand_in)
    return "".join(out), exc.end


codecs.register_error(ERROR_HANDLER, _ascii_fallback)


#: what JSON may carry only inside its strings, and ``ensure_ascii`` escapes
_NON_ASCII = re.compile("[^\x00-\x7f]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: a UTF-16 surrogate pair, as JSON spells it
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_for(stream: TextIO, text: str) -> str:
    """The JSON document ``text`` as ``stream`` carries it exactly.

    JSON exchanged between systems is UTF-8 (RFC 8259), so a stream whose encoding is
    anything else (``LC_ALL=C``, a Latin-1 or EUC-JP locale, ``PYTHONIOENCODING``)
    gets every non-ASCII character as a JSON ``\\u`` escape (as ``json.dumps`` with
    ``ensure_ascii`` writes it): the same data in the bytes every encoding shares.
    Written in the stream's own encoding, a reader would get EUC-JP bytes where JSON
    promises UTF-8; degraded as for people, JSON's data would change (an en dash read
    as ``-``) or break (``\\xdc`` is no JSON escape).
    """
    if text.isascii() or _is_utf8(getattr(stream, "encoding", None) or "utf-8"):
        return text
    return _NON_ASCII.sub(_json_escape, text)


def _is_utf8(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def write_json(stream: TextIO, text: str) -> None:
    """Write the JSON document ``text`` to ``stream`` (see :func:`json_for`)."""
    stream.write(json_for(stream, text))


def describe_fd(fd: int, fallback: str) -> str:
    """Where descriptor ``fd`` points (``/dev/full``, a file), for error messages."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return fallback
    if target.startswith(("pipe:", "socket:", "anon_inode:")):
        return f"{fallback} (a {target.split(':')[0].replace('anon_inode', 'descriptor')})"
    return target


def output_failure(exc: OSError, where: str) -> OutputFailed:
    if exc.errno == errno.EPIPE:
        detail = "the reading end of the pipe was closed"
        fix = "keep the reader open until the run finishes"
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
        detail = "no space left on the device"
        fix = "free some space or redirect the output elsewhere"
    elif exc.errno == errno.EBADF:
        detail = "the descriptor is closed"
        fix = "redirect the output to a file or /dev/null instead of closing it"
    else:
        detail = exc.strerror or str(exc)
        fix = "redirect the output to a writable file or /dev/null"
    return OutputFailed(f"cannot write the output to {where}: {detail}; {fix}")


class _GuardedRaw(io.RawIOBase):
    """A descriptor whose first write failure becomes :class:`OutputFailed`.

    After that failure every write is swallowed: the buffer Python flushes at exit
    must not fail (and print) a second time.
    """

    def __init__(self, fd: int, name: str) -> None:
        super().__init__()
        self._fd = fd
        self._name = name
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

    def write(self, data: object) -> int:
        view = memoryview(data)  # type: ignore[arg-type]
        if self.failed:
            return len(view)
        try:
            return os.write(self._fd, view)
        except OSError as exc:
            self.failed = True
            raise output_failure(exc, describe_fd(self._fd, self._name)) from None


def guarded_text_stream(fd: int, name: str, encoding: str, *, like: TextIO | None = None) -> TextIO:
    """A text stream on ``fd`` that degrades characters and reports write failures.

    ``like`` is the stream it stands in for: its line buffering and write-through
    (``PYTHONUNBUFFERED``, ``-u``) are kept, so output interleaves as it did.
    """
    raw = _GuardedRaw(fd, name)
    buffered = io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=encoding,
        errors=ERROR_HANDLER,
        line_buffering=bool(getattr(like, "line_buffering", raw.isatty())),
        write_through=bool(getattr(like, "write_through", False)),
    )


def fd_is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _occupy_closed_standard_fds() -> list[int]:
    """Point closed descriptors 0-2 at /dev/null; returns which were closed.

    Otherwise the next file opened (the index database) would get descriptor 1 and
    anything written to "standard output" would land in it.
    """
    closed = [fd for fd in (0, 1, 2) if not fd_is_open(fd)]
    for fd in closed:
        opened = os.open(os.devnull, os.O_RDWR)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    return closed


@contextmanager
def guarded_stdio() -> Iterator[bool]:
    """Swap the process's stdout/stderr for guarded streams for the block.

    Yields False when standard output was closed before the program started (the
    caller reports that and stops).  Streams replaced by a test harness are left alone.
    """
    closed = _occupy_closed_standard_fds()
    saved = sys.stdout, sys.stderr
    real_out = sys.stdout is not None and sys.stdout is sys.__stdout__
    real_err = sys.stderr is not None and sys.stderr is sys.__stderr__
    if 1 in closed or sys.stdout is None:
        sys.stdout = guarded_text_stream(1, "standard output", "utf-8")
        real_out = False
    if 2 in closed or sys.stderr is None:
        sys.stderr = guarded_text_stream(2, "standard error", "utf-8")
    if real_out:
        sys.stdout = guarded_text_stream(
            1, "standard output", sys.stdout.encoding or "utf-8", like=sys.stdout
        )
    if real_err:
        sys.stderr = guarded_text_stream(
            2, "standard error", sys.stderr.encoding or "utf-8", like=sys.stderr
        )
    try:
        yield 1 not in closed and saved[0] is not None
    finally:
        # the caller flushed inside its error boundary; what is left cannot be reported
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OutputFailed, OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = saved
