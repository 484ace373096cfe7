"""The eval history file: stored runs, the frozen baseline, and baseline selection.

File: ``<kb>/.groove-eval-history.json`` (:data:`HISTORY_FILE_NAME`), UTF-8 JSON,
pretty-printed with two-space indentation::

    {
      "baseline": "2026-04-23T09:10:11.500Z",   <- optional: the frozen run
      "runs": [ {run}, {run}, ... ]              <- newest first
    }

Each run is a :class:`~pytest_groove.evaluation.run.RunRecord` in its JSON form.
``baseline`` holds the timestamp of the run frozen with ``--freeze-baseline``
(compared as an instant, so any RFC 3339 spelling of it matches); it is absent when
no run is frozen, and a value that names no stored run is ignored.  Readers that
only know ``runs`` (the reference tool) ignore it.  The frozen run is *pinned*: it
is kept even when it falls out of the newest ``history_size`` runs, in which case
it is written last (it is the oldest).

Reading (:func:`load_history`) goes through the guarded reader.  A file that cannot
be read, or is refused (symlink, hard link, not a regular file, over the cap),
stops the run with an error and is never overwritten: treating it as empty would
replace every baseline with one run and let the gate pass without comparing
anything.  Runs are parsed one at a time: a run that does not parse (a hand edit,
a bad merge) is skipped with a warning and every other run is kept.  Bytes that do
not parse as a history at all start the run fresh, with a warning.  Whenever
something was dropped either way, the next save first copies the file's original
bytes to ``<file>.bak`` (:func:`backup_path`), so nothing is lost for good.

Saving (:func:`save_history`) takes ``<file>.lock`` (a :class:`filelock.FileLock`)
and, while holding it, re-reads the file, puts the new run in front, keeps the
newest ``history_size`` runs (plus the pinned baseline), drops the oldest further
until the file fits the cap, and replaces the file atomically (temporary file in
the same directory, fsync, ``os.replace``).  Re-reading under the lock means two CI
jobs or pytest sessions finishing together never lose each other's run.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import textwrap
import warnings as _warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import filelock

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.guarded_io import HISTORY_CAP, read_guarded
from pytest_groove.evaluation.run import (
    Fingerprint,
    RecordFormatError,
    RunRecord,
    display_timestamp,
    format_timestamp,
    parse_timestamp,
)

HISTORY_FILE_NAME = ".groove-eval-history.json"
#: how the guarded reader names this file in its refusals
HISTORY_WHAT = "eval history"
#: seconds to wait for another process's save to finish
LOCK_TIMEOUT_SECONDS = 120.0


class HistoryWarning(UserWarning):
    """A history problem that does not stop the run (when no warning list is given)."""


def history_path(kb: Path) -> Path:
    """Where a KB's history lives (independent of where the golden file is)."""
    return kb / HISTORY_FILE_NAME


# --------------------------------------------------------------------------- reading


def backup_path(path: Path) -> Path:
    """Where a save keeps the original bytes of a history it could not fully read."""
    return path.with_name(path.name + ".bak")


@dataclass(frozen=True)
class ParsedHistory:
    """A history file's runs, and the stored runs that did not parse."""

    #: the runs that parsed, newest first
    runs: list[RunRecord]
    #: how many runs the file holds, parsed or not
    stored: int
    #: one reason per skipped run (naming its JSON location), in file order
    skipped: tuple[str, ...] = ()


def read_history(data: bytes) -> ParsedHistory:
    """Decode a history file's bytes run by run.

    Raises :class:`RecordFormatError` when the bytes are not a history at all (not
    UTF-8 JSON, no ``runs`` list); a run that does not parse is skipped and named
    in :attr:`ParsedHistory.skipped`.
    """
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecordFormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise RecordFormatError("JSON nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError, oversized integer literals
        raise RecordFormatError(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise RecordFormatError("top level: expected an object with a 'runs' list")
    if "runs" not in doc:
        raise RecordFormatError("top level: missing key 'runs'")
    raw_runs = doc["runs"]
    if not isinstance(raw_runs, list):
        raise RecordFormatError("runs: expected a list")
    runs: list[RunRecord] = []
    skipped: list[str] = []
    for i, raw in enumerate(raw_runs):
        try:
            runs.append(RunRecord.from_json(raw, f"runs[{i}]"))
        except RecordFormatError as exc:
            skipped.append(str(exc))
        except RecursionError:
            skipped.append(f"runs[{i}]: JSON nested too deeply")
    parsed = ParsedHistory(runs=runs, stored=len(raw_runs), skipped=tuple(skipped))
    marker = doc.get("baseline")
    if isinstance(marker, str):
        try:
            frozen_at = parse_timestamp(marker, "baseline")
        except RecordFormatError:
            return parsed  # an unreadable marker freezes nothing; the runs are intact
        for i, run in enumerate(runs):
            if run.timestamp == frozen_at:
                runs[i] = replace(run, frozen=True)
                break
    return parsed


def parse_history(data: bytes) -> list[RunRecord]:
    """The runs of a history file that parse (see :func:`read_history`)."""
    return read_history(data).runs


def _blank(data: bytes) -> bool:
    """An empty (or whitespace-only) file held nothing worth a ``.bak`` copy."""
    return not data.strip()


def _skipped_message(path: Path, parsed: ParsedHistory) -> str:
    count = len(parsed.skipped)
    reason = parsed.skipped[0] + (f"; and {count - 1} more" if count > 1 else "")
    return (
        f"eval history {path}: skipped {count} of {parsed.stored} stored run(s) that do not "
        f"parse ({reason}); the other runs are kept, and the next save first copies the "
        f"file to {backup_path(path)}"
    )


def load_history(
    path: Path, *, warnings: list[str] | None = None, cap: int = HISTORY_CAP
) -> list[RunRecord]:
    """Stored runs, newest first; ``[]`` when the file does not exist.

    Raises :class:`GrooveError` when the file is refused or cannot be read (the
    caller must then stop without saving).  Stored runs that do not parse are
    skipped; content that is not a history at all yields ``[]``.  Either way one
    warning says so, appended to ``warnings`` when given, else issued as a
    :class:`HistoryWarning`.  Loading never writes.
    """
    data = read_guarded(path, HISTORY_WHAT, cap)
    if data is None:
        return []
    message: str | None = None
    try:
        parsed = read_history(data)
    except RecordFormatError as exc:
        runs: list[RunRecord] = []
        message = f"eval history {path} is not a readable history ({exc}); starting fresh"
        if not _blank(data):
            message += f" (the next save first copies the file to {backup_path(path)})"
    else:
        runs = parsed.runs
        if parsed.skipped:
            message = _skipped_message(path, parsed)
    if message is not None:
        if warnings is None:
            _warnings.warn(message, HistoryWarning, stacklevel=2)
        else:
            warnings.append(message)
    return runs


# --------------------------------------------------------------------------- baseline


@dataclass(frozen=True)
class BaselineChoice:
    """Which stored run a new run is compared with, and why."""

    #: the compatible run to diff against (None = no diff, no gate)
    baseline: RunRecord | None
    #: the newest stored run (None = empty history)
    newest: RunRecord | None
    #: the baseline is the frozen one
    frozen: bool
    #: stored runs newer than the baseline that were skipped as incompatible
    skipped: int

    @property
    def shown(self) -> RunRecord | None:
        """The run a report calls "previous": the baseline, else the newest run."""
        return self.baseline if self.baseline is not None else self.newest


def choose_baseline(runs: Sequence[RunRecord], fingerprint: Fingerprint) -> BaselineChoice:
    """The frozen run while it stays compatible, else the newest compatible run.

    Searching back past incompatible runs means one experimental run (another
    reranker, say) does not switch the gate off for the runs after it.
    """
    newest = runs[0] if runs else None
    frozen = next((r for r in runs if r.frozen), None)
    if frozen is not None and frozen.fingerprint == fingerprint:
        return BaselineChoice(frozen, newest, frozen=True, skipped=0)
    for position, run in enumerate(runs):
        if run.fingerprint == fingerprint:
            return BaselineChoice(run, newest, frozen=run.frozen, skipped=position)
    return BaselineChoice(None, newest, frozen=False, skipped=len(runs))


def select_baseline(runs: Sequence[RunRecord], fingerprint: Fingerprint) -> RunRecord | None:
    """The run to diff against (see :func:`choose_baseline`), or None."""
    return choose_baseline(runs, fingerprint).baseline


# --------------------------------------------------------------------------- writing


def _encode_run(run: RunRecord) -> bytes:
    # indented one level deeper, exactly as json.dumps(indent=2) nests it in "runs"
    text = json.dumps(run.to_json(), indent=2, ensure_ascii=False, allow_nan=False)
    return textwrap.indent(text, "    ").encode("utf-8")


_OPEN = b'  "runs": [\n'
_SEPARATOR = b",\n"
_CLOSE = b"\n  ]\n}\n"
_EMPTY = b'  "runs": []\n}\n'


def _head(baseline: RunRecord | None) -> bytes:
    if baseline is None:
        return b"{\n"
    return b'{\n  "baseline": "' + format_timestamp(baseline.timestamp).encode() + b'",\n'


def _assemble(pieces: Sequence[bytes], baseline: RunRecord | None) -> bytes:
    if not pieces:
        return _head(baseline) + _EMPTY
    return _head(baseline) + _OPEN + _SEPARATOR.join(pieces) + _CLOSE


def _assembled_size(piece_sizes: Sequence[int], baseline: RunRecord | None) -> int:
    """``len(_assemble(...))`` without building the bytes."""
    if not piece_sizes:
        return len(_head(baseline)) + len(_EMPTY)
    return (
        len(_head(baseline))
        + len(_OPEN)
        + sum(piece_sizes)
        + len(_SEPARATOR) * (len(piece_sizes) - 1)
        + len(_CLOSE)
    )


def encode_history(runs: Sequence[RunRecord]) -> bytes:
    """The file bytes for these runs (newest first; a frozen run sets ``baseline``)."""
    return _assemble([_encode_run(r) for r in runs], next((r for r in runs if r.frozen), None))


def _too_big(size: int, cap: int) -> GrooveError:
    return GrooveError(
        f"one eval run serialises to {size} bytes, more than the {cap}-byte history cap, "
        "so it cannot be saved in a form the next run could read; this comes from a very "
        "large golden set or a very high --limit: reduce either, or pass --no-history to "
        "skip the history file"
    )


def bound_history(
    ordered: Sequence[RunRecord], history_size: int, cap: int
) -> tuple[list[RunRecord], bytes, list[str]]:
    """Keep the newest ``history_size`` runs (+ the frozen one) within ``cap`` bytes.

    ``ordered`` is newest first and starts with the run being saved.  Returns the
    runs kept, their file bytes and warnings.  Oldest runs go first, so the run the
    next comparison most likely needs is the last to be dropped; the frozen run is
    dropped only when it no longer fits even beside the newest run alone.
    """
    pieces = [_encode_run(r) for r in ordered]
    sizes = [len(p) for p in pieces]
    wanted = min(max(history_size, 0), len(ordered))
    pin = next((i for i, r in enumerate(ordered) if r.frozen), None)

    def pick(n: int, keep_pin: bool) -> list[int]:
        indices = list(range(n))
        if keep_pin and pin is not None and pin >= n:
            indices.append(pin)  # the oldest of those kept: it goes last
        return indices

    def size(indices: list[int]) -> int:
        frozen = next((ordered[i] for i in indices if i == pin), None)
        return _assembled_size([sizes[i] for i in indices], frozen)

    chosen: list[int] | None = None
    for keep_pin in (True, False) if pin is not None else (True,):
        chosen = next(
            (pick(n, keep_pin) for n in range(wanted, 0, -1) if size(pick(n, keep_pin)) <= cap),
            None,
        )
        if chosen is not None:
            break
    if chosen is None:
        if wanted > 0:
            raise _too_big(size([0]), cap)
        chosen = pick(0, True) if pin is not None and size(pick(0, True)) <= cap else []

    messages: list[str] = []
    if len(chosen) < len(pick(wanted, True)):
        messages.append(
            f"eval history trimmed to {len(chosen)} run(s) to stay under the {cap}-byte "
            "cap; [eval].history_size asks for more"
        )
    if pin is not None and pin not in chosen:
        messages.append(
            f"the frozen baseline of {display_timestamp(ordered[pin].timestamp)} no longer "
            "fits in the history and was dropped; freeze a new one with --freeze-baseline"
        )
    frozen = next((ordered[i] for i in chosen if i == pin), None)
    return [ordered[i] for i in chosen], _assemble([pieces[i] for i in chosen], frozen), messages


def _write_atomic(
    path: Path, data: bytes, *, what: str = "eval history", like: Path | None = None
) -> None:
    """Replace ``path`` with ``data``: temp file beside it, fsync, rename.

    The file keeps the permission bits of ``like`` (default: of ``path`` itself).
    """
    try:
        mode = stat.S_IMODE((path if like is None else like).stat().st_mode)
    except OSError:
        mode = 0o644
    tmp: Path | None = None
    try:
        # a fresh, exclusively created name: nothing planted beside the history is followed
        fd, tmp_name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise GrooveError(
            f"could not write the {what} {path}: {exc.strerror or exc} "
            "(check that the directory is writable, or pass --no-history)"
        ) from None
    # make the rename itself durable; not every platform can open a directory
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save_history(
    path: Path,
    runs: Sequence[RunRecord],
    new_run: RunRecord,
    history_size: int,
    cap: int = HISTORY_CAP,
    *,
    freeze_baseline: bool = False,
) -> list[str]:
    """Record ``new_run`` in front of the stored runs; returns warnings.

    ``runs`` is the history as this process loaded it.  Under the lock the file is
    read again and what it holds now is used instead, so runs saved by another
    process in the meantime are kept; ``runs`` only stands in when the file no
    longer parses.  When the file as read drops anything (runs that do not parse,
    or bytes that are no history), its original bytes are first copied to
    :func:`backup_path`.  ``freeze_baseline`` makes ``new_run`` the frozen baseline.
    Raises :class:`GrooveError` (file untouched) when the file is refused, the lock
    cannot be taken, the new run alone exceeds ``cap``, or writing (either file)
    fails.
    """
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    if lock_path.is_symlink():
        raise GrooveError(
            f"refusing to use the history lock file {lock_path}: it is a symbolic link; "
            "delete it and run again"
        )
    lock = filelock.FileLock(str(lock_path), timeout=LOCK_TIMEOUT_SECONDS)
    try:
        with lock:
            # read with the loader's cap: a smaller write cap trims, it never refuses
            data = read_guarded(path, HISTORY_WHAT, max(cap, HISTORY_CAP))
            current: Sequence[RunRecord] = []
            #: replacing the file as read would drop something it holds
            loses = False
            if data is not None:
                try:
                    parsed = read_history(data)
                    current, loses = parsed.runs, bool(parsed.skipped)
                except RecordFormatError:
                    current = runs  # the load already warned about these bytes
                    loses = not _blank(data)
            stored = [
                replace(r, frozen=False) if freeze_baseline and r.frozen else r for r in current
            ]
            ordered = [replace(new_run, frozen=freeze_baseline), *stored]
            _kept, encoded, messages = bound_history(ordered, history_size, cap)
            if data is not None and loses:
                # before the rewrite: if the copy fails, the original stays in place
                _write_atomic(backup_path(path), data, what="eval history backup", like=path)
            _write_atomic(path, encoded)
            return messages
    except filelock.Timeout:
        raise GrooveError(
            f"timed out after {LOCK_TIMEOUT_SECONDS:g} s waiting for {lock_path}: another "
            "groove run is saving the eval history (delete the lock file if none is)"
        ) from None
    except OSError as exc:
        raise GrooveError(
            f"could not lock the eval history {lock_path}: {exc.strerror or exc}"
        ) from None
