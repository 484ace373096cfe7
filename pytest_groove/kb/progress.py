"""What a long index run shows while it works.

On a terminal (standard error is a TTY) a tqdm bar; anywhere else -- a CI log, a file,
a pipe, pytest's output -- one plain line every few seconds from a timer thread, e.g.
``groove: indexing notes: 150 / 600 files, 1,200 chunks embedded, embedding 256 more,
31 s, about 2 min left``.  The first line comes :data:`FIRST_LINE_SECONDS` after the
run began, so a run that ends sooner prints nothing; then one every
:data:`LINE_EVERY_SECONDS`.  The
environment variable ``GROOVE_PROGRESS_SECONDS`` (:data:`INTERVAL_ENV`) sets the
seconds between lines (and caps the wait for the first).

Where the lines go is the caller's ``progress`` (:data:`ProgressTo`): ``None`` (the
bar on a terminal, else lines on standard error), ``False`` (nowhere), ``True`` (the
bar), or a function taking each line (pytest's door hands its terminal reporter's, so
capture never swallows them).  A line is one line of plain text: the values in it are
counts and durations, never text from the notes.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from pytest_groove.errors import GrooveError

#: seconds from the run's start to the first line (a run that ends sooner shows none)
FIRST_LINE_SECONDS = 2.0
#: seconds between lines
LINE_EVERY_SECONDS = 5.0
#: the environment variable that sets the seconds between lines (tests set it low)
INTERVAL_ENV = "GROOVE_PROGRESS_SECONDS"
#: what starts a line written to standard error (a door's writer adds its own)
PREFIX = "groove: "

#: where progress goes: None (bar on a terminal, else lines on stderr), False
#: (nowhere), True (the bar), or a function taking each line
ProgressTo = bool | Callable[[str], None] | None


def line_interval() -> tuple[float, float]:
    """Seconds to the first line and between lines: the defaults, or as
    ``$GROOVE_PROGRESS_SECONDS`` says."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return FIRST_LINE_SECONDS, LINE_EVERY_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise GrooveError(
            f"{INTERVAL_ENV}={raw[:40]!r} is not a positive number of seconds between "
            "progress lines; fix or unset it"
        )
    return min(FIRST_LINE_SECONDS, value), value


def duration(seconds: float) -> str:
    """``31 s``, ``2 min 5 s``, ``1 h 4 min``."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def time_left(seconds: float) -> str:
    """A rough estimate: ``about 40 s left``, ``about 3 min left``, ``about 2 h left``."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5)} s left"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left".replace(".0 h", " h")


def _stderr_line(text: str) -> None:
    stream = sys.stderr
    if stream is not None:
        stream.write(PREFIX + text + "\n")
        stream.flush()


class IndexProgress:
    """The progress of one index run, phase by phase (see the module docstring).

    ``phase`` starts the next step of the run (with a count to reach, or none);
    ``step`` counts one more done (with the chunks or notes embedded so far);
    ``close`` ends it all.  Lines are written by a timer thread reading what the
    indexer's thread set last; once a line has been written, each new phase writes
    one at once, so a long run's log says what it turned to.
    """

    def __init__(self, to: ProgressTo) -> None:
        self._bar_wanted = sys.stderr is not None and sys.stderr.isatty() if to is None else to
        self._write: Callable[[str], None] | None = None
        if to is None and not self._bar_wanted:
            self._write = _stderr_line
        elif callable(to) and not isinstance(to, bool):
            self._bar_wanted, self._write = False, to
        self._bar: Any = None
        self._started = time.monotonic()
        self._phase, self._phase_started = "", self._started
        #: when the last step was counted
        self._step_at = self._started
        self._total = self._done = self._embedded = 0
        self._counted = self._doing = ""
        self._unit = "file"
        self._wrote = False
        #: the indexer's thread (a new phase) and the timer's may write at once
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self._write is not None:
            first, every = line_interval()
            self._thread = threading.Thread(
                target=self._tick, args=(first, every), name="groove-progress", daemon=True
            )
            self._thread.start()

    def phase(self, label: str, total: int = 0, *, unit: str = "file", counted: str = "") -> None:
        """Start the phase ``label`` (``total``: what it counts to; ``counted``: the
        noun of :meth:`step`'s running total, e.g. ``chunks embedded``)."""
        self._close_bar()
        self._phase, self._phase_started = label, time.monotonic()
        self._step_at = self._phase_started
        self._total, self._done, self._embedded, self._counted = total, 0, 0, counted
        self._doing = ""
        self._unit = unit
        if self._bar_wanted and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit=unit, desc=f"groove {label}", leave=False)
        if self._wrote:
            self._emit()

    def step(self, embedded: int) -> None:
        self._done += 1
        self._embedded = embedded
        self._step_at = time.monotonic()
        if self._bar is not None:
            rate = embedded / max(time.monotonic() - self._phase_started, 1e-9)
            noun = self._counted.split()[0] if self._counted else "items"
            self._bar.set_postfix({noun: embedded, f"{noun}_per_s": f"{rate:.1f}"}, refresh=False)
            self._bar.update(1)

    def doing(self, what: str) -> None:
        """What the phase is busy with now (``embedding 256 more``, ``writing``; ``""``
        when nothing in particular): the lines say it after the counts."""
        self._doing = what

    def close(self) -> None:
        self._close_bar()
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def line(self) -> str:
        """The line the state now reads as (without the door's prefix)."""
        now = time.monotonic()
        total, done, label = self._total, min(self._done, self._total), self._phase
        parts = [f"{label}: {done:,} / {total:,} {self._unit}s" if total else label]
        if self._counted:
            parts.append(f"{self._embedded:,} {self._counted}")
        if self._doing:
            parts.append(self._doing)
        parts.append(duration(now - self._started))
        # at the pace of the phase up to its last step, less the time since that step
        spent = self._step_at - self._phase_started
        if total and done and done < total and spent >= 1:
            left = spent * (total - done) / done - (now - self._step_at)
            parts.append(time_left(max(left, 0.0)))
        return ", ".join(parts)

    def _tick(self, first: float, every: float) -> None:
        if self._stop.wait(first):
            return
        while not self._stop.is_set():
            self._emit()
            if self._stop.wait(every):
                return

    def _emit(self) -> None:
        with self._lock:
            write = self._write
            if write is None or not self._phase:
                return
            try:
                write(self.line())
            except (OSError, ValueError, GrooveError):
                self._write = None  # a closed stream: the run goes on without lines
                return
            self._wrote = True
