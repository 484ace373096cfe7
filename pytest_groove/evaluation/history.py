"""The eval history file: stored runs, the frozen baseline, and baseline selection.

File: ``<kb>/.groove-eval-history.json`` (:data:`HISTORY_FILE_NAME`), UTF-8 JSON
with one stored run per line, so that a committed history diffs one line per run::

    {
      "format": 2,
      "baseline": "2026-04-23T09:10:11.500Z",   <- optional: the frozen run
      "runs": [
    {run},                                       <- newest first
    {run}
      ]
    }

Each run is written in the compact form of :mod:`~pytest_groove.evaluation.history_codec`
(about a fifth of the format-1 size).  Format 1 -- no ``format`` key, each run the
pretty-printed :meth:`RunRecord.to_json <pytest_groove.evaluation.run.RunRecord.to_json>`
object -- is still read, run by run, and the next save rewrites it as format 2.
``baseline`` holds the timestamp of the run frozen with ``--freeze-baseline`` or
:func:`freeze_run` (compared as an instant, so any RFC 3339 spelling of it
matches); it is absent when no run is frozen, and a value that names no stored run
is ignored.  The frozen run is *pinned*: it is kept even when it falls out of the
newest ``history_size`` runs, in which case it is written last (it is the oldest).

Reading (:func:`load_history`) goes through the guarded reader.  A file that cannot
be read, or is refused (symlink, hard link, not a regular file, over the cap),
stops the run with an error and is never overwritten: treating it as empty would
replace every baseline with one run and let the gate pass without comparing
anything.  Runs are parsed one at a time: a run that does not parse (a hand edit,
a bad merge) is skipped with a warning and every other run is kept.  A run that
parses but holds text no file can store (a lone surrogate escape such as
``"\\udfff"``) is repaired: each such code point becomes U+FFFD.  Bytes that do not
parse as a history at all start the run fresh, with a warning.  Whenever the file
as read lost or changed anything either way, the next save first copies the
file's original bytes to a backup of its own, ``<file>.bak-<UTC time>``
(:func:`new_backup_path`), which no later save overwrites.

Saving (:func:`save_history`, :func:`freeze_run`) takes ``<file>.lock`` (a
:class:`filelock.FileLock`) and, while holding it, removes temporary files an
interrupted save of this file left behind, re-reads the file, puts the new run in
front, keeps the newest ``history_size`` runs (plus the pinned baseline), drops the
oldest further until the file fits the cap, and replaces the file atomically
(temporary file in the same directory, fsync, ``os.replace``).  Re-reading under
the lock means two CI jobs or pytest sessions finishing together never lose each
other's run.  :func:`stage_save` stops before the rename: the doors deliver the
report first and rename only when it went out, so a run whose report could not be
written (a full device) leaves the history byte for byte as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import warnings as _warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import filelock

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.compare import fingerprint_difference
from pytest_groove.evaluation.guarded_io import HISTORY_CAP, read_guarded
from pytest_groove.evaluation.history_codec import decode_run, encode_run, is_compact
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

#: the format this version writes (format 1 had no ``format`` key)
HISTORY_FORMAT = 2

#: the mark a backup's name carries after the history's own name
BACKUP_MARK = ".bak-"


def new_backup_path(path: Path, moment: datetime | None = None) -> Path:
    """A name for a backup of ``path`` that no earlier backup holds.

    ``<file>.bak-<UTC time, to the microsecond>``, with ``-2``, ``-3``... added
    when that name is taken: every damage event keeps its own copy.
    """
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    stem = path.name + BACKUP_MARK + moment.strftime("%Y%m%dT%H%M%S.%fZ")
    candidate = path.with_name(stem)
    n = 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{stem}-{n}")
    return candidate


def backup_pattern(path: Path) -> str:
    """How messages name the backups of ``path`` before one is written."""
    return f"{path}{BACKUP_MARK}<time>"


@dataclass(frozen=True)
class ParsedHistory:
    """A history file's runs, and what reading them dropped or changed."""

    #: the runs that parsed, newest first
    runs: list[RunRecord]
    #: how many runs the file holds, parsed or not
    stored: int
    #: one reason per skipped run (naming its JSON location), in file order
    skipped: tuple[str, ...] = ()
    #: the JSON location of each run whose text had to be repaired to be storable
    repaired: tuple[str, ...] = ()

    @property
    def damaged(self) -> bool:
        """Writing these runs back would not reproduce what the file holds."""
        return bool(self.skipped or self.repaired)


#: a ``\uD800``-``\uDFFF`` escape: the only way JSON text can carry a surrogate
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _without_lone_surrogates(value: Any) -> tuple[Any, bool]:
    """``value`` with every lone surrogate replaced by U+FFFD, and whether any was.

    JSON can spell a lone surrogate (``"\\udfff"``); Python reads it into a string
    that cannot be encoded as UTF-8, so such a run could never be written again.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            fixed = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return fixed, True
        return value, False
    if isinstance(value, list):
        items = [_without_lone_surrogates(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            new_key, key_changed = _without_lone_surrogates(key)
            new_item, item_changed = _without_lone_surrogates(item)
            out[new_key] = new_item
            changed = changed or key_changed or item_changed
        return out, changed
    return value, False


def _decode_run(raw: Any, where: str) -> RunRecord:
    if is_compact(raw):
        return decode_run(raw, where)
    return RunRecord.from_json(raw, where)


def read_history(data: bytes) -> ParsedHistory:
    """Decode a history file's bytes (format 1 or 2) run by run.

    Raises :class:`RecordFormatError` when the bytes are not a history at all (not
    UTF-8 JSON, no ``runs`` list); a run that does not parse is skipped and named
    in :attr:`ParsedHistory.skipped`, one holding lone surrogates is repaired and
    named in :attr:`ParsedHistory.repaired`.
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
    may_hold_surrogates = _SURROGATE_ESCAPE.search(data) is not None
    runs: list[RunRecord] = []
    skipped: list[str] = []
    repaired: list[str] = []
    for i, raw in enumerate(raw_runs):
        where = f"runs[{i}]"
        try:
            changed = False
            if may_hold_surrogates:
                raw, changed = _without_lone_surrogates(raw)
            runs.append(_decode_run(raw, where))
            if changed:
                repaired.append(where)
        except RecordFormatError as exc:
            skipped.append(str(exc))
        except RecursionError:
            skipped.append(f"{where}: JSON nested too deeply")
    parsed = ParsedHistory(
        runs=runs, stored=len(raw_runs), skipped=tuple(skipped), repaired=tuple(repaired)
    )
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
    """An empty (or whitespace-only) file held nothing worth a backup copy."""
    return not data.strip()


def _damage_message(path: Path, parsed: ParsedHistory) -> str:
    parts = []
    if parsed.skipped:
        count = len(parsed.skipped)
        reason = parsed.skipped[0] + (f"; and {count - 1} more" if count > 1 else "")
        parts.append(
            f"skipped {count} of {parsed.stored} stored run(s) that do not parse ({reason})"
        )
    if parsed.repaired:
        parts.append(
            f"repaired {len(parsed.repaired)} stored run(s) holding a lone surrogate escape "
            f"({', '.join(parsed.repaired[:3])}; each becomes U+FFFD)"
        )
    return (
        f"eval history {path}: {'; '.join(parts)}; the other runs are kept, and the next "
        f"save first copies the file to {backup_pattern(path)}"
    )


def load_history(
    path: Path, *, warnings: list[str] | None = None, cap: int = HISTORY_CAP
) -> list[RunRecord]:
    """Stored runs, newest first; ``[]`` when the file does not exist.

    Raises :class:`GrooveError` when the file is refused or cannot be read (the
    caller must then stop without saving).  Stored runs that do not parse are
    skipped, runs holding lone surrogates repaired; content that is not a history
    at all yields ``[]``.  Either way one warning says so, appended to ``warnings``
    when given, else issued as a :class:`HistoryWarning`.  Loading never writes.
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
            message += f" (the next save first copies the file to {backup_pattern(path)})"
    else:
        runs = parsed.runs
        if parsed.damaged:
            message = _damage_message(path, parsed)
    if message is not None:
        if warnings is None:
            _warnings.warn(message, HistoryWarning, stacklevel=2)
        else:
            warnings.append(message)
    return runs


# --------------------------------------------------------------------------- finding a run


def run_label(run: RunRecord) -> str:
    """A run's name on the command line: its timestamp exactly as stored."""
    return format_timestamp(run.timestamp)


def find_run(runs: Sequence[RunRecord], wanted: str, path: Path) -> RunRecord:
    """The stored run ``wanted`` names: its timestamp (any RFC 3339 spelling of the
    same instant) or a prefix of it as stored that only one run has.

    Raises :class:`GrooveError` (one line, naming ``path``) when no run or several
    runs match.
    """
    text = wanted.strip()
    try:
        moment = parse_timestamp(text, "RUN")
    except RecordFormatError:
        matches = [r for r in runs if text and run_label(r).startswith(text)]
    else:
        matches = [r for r in runs if r.timestamp == moment]
    if len(matches) == 1:
        return matches[0]
    shown = wanted if len(wanted) <= 40 else wanted[:39] + "…"
    if not matches:
        newest = f" (newest: {run_label(runs[0])})" if runs else " (it holds no run)"
        raise GrooveError(
            f"no run in {path} matches {shown!r}{newest}; `groove history` lists the "
            "stored runs by timestamp"
        )
    examples = ", ".join(run_label(r) for r in matches[:3])
    raise GrooveError(
        f"{shown!r} matches {len(matches)} runs in {path} ({examples}"
        f"{', …' if len(matches) > 3 else ''}); give more of the timestamp"
    )


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
    #: the baseline is the run the user named (``--baseline RUN``)
    named: bool = False

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


def named_baseline(
    runs: Sequence[RunRecord], fingerprint: Fingerprint, wanted: str, path: Path
) -> BaselineChoice:
    """The run ``wanted`` names (:func:`find_run`), as the baseline.

    Raises :class:`GrooveError` when no run or several match, or when that run was
    measured with other settings (the message names each difference).
    """
    chosen = find_run(runs, wanted, path)
    if chosen.fingerprint != fingerprint:
        raise GrooveError(
            f"baseline {run_label(chosen)} in {path} cannot be compared with this run: "
            f"{fingerprint_difference(fingerprint, chosen.fingerprint)}; name a run measured "
            "with the same settings (`groove history` lists them)"
        )
    newer = next(i for i, r in enumerate(runs) if r is chosen)
    return BaselineChoice(chosen, runs[0], frozen=chosen.frozen, skipped=newer, named=True)


def select_baseline(runs: Sequence[RunRecord], fingerprint: Fingerprint) -> RunRecord | None:
    """The run to diff against (see :func:`choose_baseline`), or None."""
    return choose_baseline(runs, fingerprint).baseline


# --------------------------------------------------------------------------- writing


def _encode_run(run: RunRecord) -> bytes:
    """One run on one line (compact form, no spaces: the file is meant to be committed)."""
    text = json.dumps(encode_run(run), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate from the golden file: store U+FFFD rather than fail the save
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


_OPEN = b'  "runs": [\n'
_SEPARATOR = b",\n"
_CLOSE = b"\n  ]\n}\n"
_EMPTY = b'  "runs": []\n}\n'


def _head(baseline: RunRecord | None) -> bytes:
    head = b'{\n  "format": ' + str(HISTORY_FORMAT).encode() + b",\n"
    if baseline is None:
        return head
    return head + b'  "baseline": "' + format_timestamp(baseline.timestamp).encode() + b'",\n'


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


def _file_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o644


def _write_failed(what: str, path: Path, exc: OSError) -> GrooveError:
    return GrooveError(
        f"could not write the {what} {path}: {exc.strerror or exc} "
        "(check that the directory is writable, or pass --no-history)"
    )


def _write_temp(path: Path, data: bytes, *, what: str, mode: int) -> Path:
    """``data`` in a new temporary file beside ``path``, synced to disk."""
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
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise _write_failed(what, path, exc) from None
    return tmp


def _move_into_place(tmp: Path, path: Path, *, what: str) -> None:
    """Rename ``tmp`` over ``path`` and make the rename durable."""
    try:
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _write_failed(what, path, exc) from None
    # make the rename itself durable; not every platform can open a directory
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _write_atomic(
    path: Path, data: bytes, *, what: str = "eval history", like: Path | None = None
) -> None:
    """Replace ``path`` with ``data``: temp file beside it, fsync, rename.

    The file keeps the permission bits of ``like`` (default: of ``path`` itself).
    """
    tmp = _write_temp(path, data, what=what, mode=_file_mode(path if like is None else like))
    _move_into_place(tmp, path, what=what)


#: temporary files of this module's own naming (``tempfile.mkstemp`` beside the
#: history, ``<file>.<8 characters>.tmp``; older versions also wrote ``<file>.bak.…``)
def _temp_file_pattern(path: Path) -> re.Pattern[str]:
    return re.compile(re.escape(path.name) + r"\.(?:bak\.)?[a-z0-9_]{8}\.tmp")


def remove_stale_temp_files(path: Path) -> int:
    """Delete temporary files an interrupted save of ``path`` left; returns how many.

    Only called with the history lock held: every save writes its temporary file
    under that lock, so any such file seen then belongs to a save that died.
    """
    pattern = _temp_file_pattern(path)
    removed = 0
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return 0
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)  # a symlink is removed itself, never followed
                removed += 1
    return removed


def _write_backup(path: Path, data: bytes) -> Path:
    """Keep ``data`` (the history's bytes as read) in a backup no one has used yet."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o644
    for _attempt in range(100):
        backup = new_backup_path(path)
        try:
            fd = os.open(
                backup,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                mode,
            )
        except FileExistsError:
            continue  # another name taken between the check and the open: try the next
        except OSError as exc:
            raise _backup_failed(backup, exc) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                backup.unlink()
            raise _backup_failed(backup, exc) from None
        return backup
    raise GrooveError(f"could not find a free name for a backup of the eval history {path}")


def _backup_failed(backup: Path, exc: OSError) -> GrooveError:
    return GrooveError(
        f"could not write the eval history backup {backup}: {exc.strerror or exc}; the "
        "history was left as it is (check that the directory is writable, or pass "
        "--no-history)"
    )


def _acquire_lock(path: Path) -> filelock.BaseFileLock:
    """Take ``<file>.lock``; one clear :class:`GrooveError` when it cannot be had."""
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
        lock.acquire()
    except filelock.Timeout:
        raise GrooveError(
            f"timed out after {LOCK_TIMEOUT_SECONDS:g} s waiting for {lock_path}: another "
            "groove run is saving the eval history (delete the lock file if none is)"
        ) from None
    except OSError as exc:
        raise GrooveError(
            f"could not lock the eval history {lock_path}: {exc.strerror or exc}; make the "
            "folder writable or pass --no-history to evaluate without recording the run"
        ) from None
    return lock


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``<file>.lock`` for the body."""
    lock = _acquire_lock(path)
    try:
        yield
    finally:
        lock.release()


@dataclass(frozen=True)
class _Current:
    """The history as it is on disk, read under the lock."""

    data: bytes | None
    runs: Sequence[RunRecord]
    #: replacing the file with ``runs`` would drop or change something it holds
    damaged: bool


def _read_current(path: Path, fallback: Sequence[RunRecord], cap: int) -> _Current:
    # read with the loader's cap: a smaller write cap trims, it never refuses
    data = read_guarded(path, HISTORY_WHAT, max(cap, HISTORY_CAP))
    if data is None:
        return _Current(None, [], damaged=False)
    try:
        parsed = read_history(data)
    except RecordFormatError:
        # the load already warned about these bytes
        return _Current(data, fallback, damaged=not _blank(data))
    return _Current(data, parsed.runs, damaged=parsed.damaged)


def _replace(path: Path, current: _Current, encoded: bytes) -> None:
    """Write ``encoded`` over the history, after backing up bytes it would lose."""
    remove_stale_temp_files(path)
    if current.data is not None and current.damaged:
        # before the rewrite: if the copy fails, the original stays in place
        _write_backup(path, current.data)
    _write_atomic(path, encoded)


class StagedSave:
    """A history save done up to its last step, waiting for :meth:`commit`.

    Made by :func:`stage_save`.  The lock on the history is held, the original
    bytes of a damaged file are already in their backup, and the new history sits
    complete and synced in a temporary file beside the old one; only the rename is
    left.  So whatever happens between staging and committing (the report cannot
    be written to standard output, say) can end in :meth:`discard`, and the history
    is then exactly what it was.  Used as a context manager it commits when the
    body completes and discards when it raises.
    """

    def __init__(
        self, path: Path, tmp: Path, lock: filelock.BaseFileLock, messages: list[str]
    ) -> None:
        self.path = path
        #: notes on what the save had to drop (runs over the size or byte cap)
        self.messages = messages
        self._tmp: Path | None = tmp
        self._lock = lock

    @property
    def pending(self) -> bool:
        return self._tmp is not None

    def commit(self) -> None:
        """Put the new history in place; :class:`GrooveError` if the rename fails."""
        tmp, self._tmp = self._tmp, None
        if tmp is None:
            return
        try:
            _move_into_place(tmp, self.path, what="eval history")
        finally:
            self._lock.release()

    def discard(self) -> None:
        """Drop the new history; the file stays as it was."""
        tmp, self._tmp = self._tmp, None
        if tmp is None:
            return
        try:
            with contextlib.suppress(OSError):
                tmp.unlink()
        finally:
            self._lock.release()

    def __enter__(self) -> StagedSave:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def stage_save(
    path: Path,
    runs: Sequence[RunRecord],
    new_run: RunRecord,
    history_size: int,
    cap: int = HISTORY_CAP,
    *,
    freeze_baseline: bool = False,
) -> StagedSave:
    """Prepare recording ``new_run`` in front of the stored runs (see :class:`StagedSave`).

    ``runs`` is the history as this process loaded it.  Under the lock the file is
    read again and what it holds now is used instead, so runs saved by another
    process in the meantime are kept; ``runs`` only stands in when the file no
    longer parses.  When the file as read loses or changes anything (runs that do
    not parse or were repaired, or bytes that are no history), its original bytes
    are first copied to a new backup (:func:`new_backup_path`).  Temporary files
    of an interrupted save are removed.  ``freeze_baseline`` makes ``new_run`` the
    frozen baseline.  Raises :class:`GrooveError` (file untouched, lock released)
    when the file is refused, the lock cannot be taken, the new run alone exceeds
    ``cap``, or writing (either file) fails.
    """
    lock = _acquire_lock(path)
    try:
        current = _read_current(path, runs, cap)
        stored = [
            replace(r, frozen=False) if freeze_baseline and r.frozen else r for r in current.runs
        ]
        ordered = [replace(new_run, frozen=freeze_baseline), *stored]
        _kept, encoded, messages = bound_history(ordered, history_size, cap)
        remove_stale_temp_files(path)
        if current.data is not None and current.damaged:
            # before the rewrite: if the copy fails, the original stays in place
            _write_backup(path, current.data)
        tmp = _write_temp(path, encoded, what="eval history", mode=_file_mode(path))
    except BaseException:
        lock.release()
        raise
    return StagedSave(path, tmp, lock, messages)


def save_history(
    path: Path,
    runs: Sequence[RunRecord],
    new_run: RunRecord,
    history_size: int,
    cap: int = HISTORY_CAP,
    *,
    freeze_baseline: bool = False,
) -> list[str]:
    """Record ``new_run`` now (:func:`stage_save`, then commit); returns warnings."""
    with stage_save(
        path, runs, new_run, history_size, cap, freeze_baseline=freeze_baseline
    ) as staged:
        return staged.messages


def freeze_run(path: Path, wanted: str, cap: int = HISTORY_CAP) -> RunRecord:
    """Make the stored run ``wanted`` names (:func:`find_run`) the frozen baseline.

    Done under the lock on the file as it is then; every run is kept.  Returns the
    run now frozen.  Raises :class:`GrooveError` when the file is missing,
    refused or no history, when ``wanted`` names no single run, or when writing
    fails.
    """
    with _locked(path):
        current = _read_current(path, [], cap)
        if current.data is None or (not current.runs and current.damaged):
            raise GrooveError(
                f"there is no eval history to freeze a run in: {path} "
                f"{'does not exist' if current.data is None else 'holds no readable run'}"
            )
        chosen = find_run(current.runs, wanted, path)
        ordered = [replace(r, frozen=r is chosen) for r in current.runs]
        _replace(path, current, encode_history(ordered))
        return replace(chosen, frozen=True)
