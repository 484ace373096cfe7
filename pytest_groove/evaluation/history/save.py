"""Saving the eval history: under its lock, backed up when damaged, replaced atomically.

:func:`stage_save` does everything but the final rename and returns a
:class:`StagedSave`; :func:`save_history` commits at once; :func:`freeze_run`
marks a stored run as the frozen baseline.  The file plumbing (temporary file,
fsync, rename, exclusive backup, stale-temp clean-up, the lock) is
:mod:`pytest_groove.files`; this module decides what is written and words the errors.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import filelock

from pytest_groove.errors import GrooveError, flag
from pytest_groove.evaluation.gate.baseline import find_run, run_label
from pytest_groove.evaluation.history.format import (
    HISTORY_WHAT,
    HistoryTooNew,
    bound_history,
    encode_history,
    is_blank,
    new_backup_path,
    read_history,
    too_new,
)
from pytest_groove.evaluation.runs.record import RecordFormatError, RunRecord
from pytest_groove.evaluation.runs.trust import untrusted
from pytest_groove.files import atomic
from pytest_groove.files.guarded_io import HISTORY_CAP, read_guarded
from pytest_groove.files.lock import LockTimeout, acquire_lock, holding
from pytest_groove.files.resource_limits import raise_if_limit

#: seconds to wait for another process's save to finish
LOCK_TIMEOUT_SECONDS = 120.0


#: how an evaluation gets past a history it cannot write: by not recording the run
RECORDING = f"check that the directory is writable, or pass {flag('no-history')}"
#: how `groove history freeze` / `delete` get past it: there is no other way
EDITING = "check that the directory is writable: the history cannot be changed otherwise"


def _write_failed(what: str, path: Path, exc: OSError, remedy: str = RECORDING) -> GrooveError:
    raise_if_limit(exc, path)  # out of open files is no unwritable folder
    return GrooveError(f"could not write the {what} {path}: {exc.strerror or exc} ({remedy})")


def _write_temp(path: Path, data: bytes, *, what: str, mode: int) -> Path:
    """``data`` in a new temporary file beside ``path``, synced to disk."""
    try:
        return atomic.write_temp(path, lambda handle: handle.write(data), mode=mode)
    except OSError as exc:
        raise _write_failed(what, path, exc) from None


def _move_into_place(tmp: Path, path: Path, *, what: str) -> None:
    """Rename ``tmp`` over ``path`` and make the rename durable."""
    try:
        atomic.move_into_place(tmp, path)
    except OSError as exc:
        raise _write_failed(what, path, exc) from None


def _write_atomic(path: Path, data: bytes) -> None:
    """Replace the history ``path`` with ``data`` (keeping its permission bits); only
    ``groove history`` edits do."""
    try:
        atomic.write_atomic(path, data)
    except OSError as exc:
        raise _write_failed("eval history", path, exc, EDITING) from None


def _temp_file_pattern(path: Path) -> str:
    """Temporary files of this module's naming (``tempfile.mkstemp`` beside the history,
    ``<file>.<8 characters>.tmp``; older versions also wrote ``<file>.bak.<8>.tmp``)."""
    return re.escape(path.name) + r"\.(?:bak\.)?[a-z0-9_]{8}\.tmp"


def remove_stale_temp_files(path: Path) -> int:
    """Delete temporary files an interrupted save of ``path`` left; returns how many.

    Only called with the history lock held: every save writes its temporary file
    under that lock, so any such file seen then belongs to a save that died.
    """
    return atomic.remove_stale_temp_files(path, _temp_file_pattern(path))


def _write_backup(path: Path, data: bytes, remedy: str = RECORDING) -> Path:
    """Keep ``data`` (the history's bytes as read) in a backup no one has used yet."""
    try:
        backup = atomic.write_backup(data, lambda: new_backup_path(path), atomic.file_mode(path))
    except OSError as exc:
        raise _backup_failed(Path(exc.filename), exc, remedy) from None
    if backup is None:
        raise GrooveError(f"could not find a free name for a backup of the eval history {path}")
    return backup


def _backup_failed(backup: Path, exc: OSError, remedy: str = RECORDING) -> GrooveError:
    raise_if_limit(exc, backup)
    return GrooveError(
        f"could not write the eval history backup {backup}: {exc.strerror or exc}; the "
        f"history was left as it is ({remedy})"
    )


def _acquire_lock(path: Path, remedy: str = RECORDING) -> filelock.BaseFileLock:
    """Take ``<file>.lock``; one clear :class:`GrooveError` when it cannot be had."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    if lock_path.is_symlink():
        raise GrooveError(
            f"refusing to use the history lock file {lock_path}: it is a symbolic link; "
            "delete it and run again"
        )
    if lock_path.is_dir():
        raise GrooveError(
            f"refusing to use the history lock file {lock_path}: a folder is in its place; "
            "remove the folder and run again"
        )
    try:
        return acquire_lock(lock_path, LOCK_TIMEOUT_SECONDS)
    except LockTimeout:
        raise GrooveError(
            f"timed out after {LOCK_TIMEOUT_SECONDS:g} s waiting for {lock_path}: another "
            "groove or pytest run is saving the eval history; wait for it to finish, or stop "
            "it (a run that exits releases the lock: remove the file only if no run is "
            "active, as after a crash on a network file system)"
        ) from None
    except OSError as exc:
        raise_if_limit(exc, lock_path)
        raise GrooveError(
            f"could not lock the eval history {lock_path}: {exc.strerror or exc} ({remedy})"
        ) from None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``<file>.lock`` for the body of a ``groove history`` edit."""
    with holding(_acquire_lock(path, EDITING)):
        yield


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
    except HistoryTooNew as exc:
        raise too_new(path, exc) from None
    except RecordFormatError:
        # the load already warned about these bytes
        return _Current(data, fallback, damaged=not is_blank(data))
    return _Current(data, parsed.runs, damaged=parsed.damaged)


def _replace(path: Path, current: _Current, encoded: bytes) -> None:
    """Write ``encoded`` over the history, after backing up bytes it would lose."""
    remove_stale_temp_files(path)
    if current.data is not None and current.damaged:
        # before the rewrite: if the copy fails, the original stays in place
        _write_backup(path, current.data, EDITING)
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
        tmp = _write_temp(path, encoded, what="eval history", mode=atomic.file_mode(path))
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


def _stored_run(path: Path, wanted: str, cap: int, doing: str) -> tuple[_Current, RunRecord]:
    """(the history as it is now, the run ``wanted`` names); call under the lock.

    Raises :class:`GrooveError` naming ``doing`` when there is no readable history.
    """
    current = _read_current(path, [], cap)
    if current.data is None or (not current.runs and current.damaged):
        raise GrooveError(
            f"there is no eval history to {doing}: {path} "
            f"{'does not exist' if current.data is None else 'holds no readable run'}"
        )
    return current, find_run(current.runs, wanted, path)


def freeze_run(path: Path, wanted: str, cap: int = HISTORY_CAP) -> RunRecord:
    """Make the stored run ``wanted`` names (:func:`find_run`) the frozen baseline.

    Done under the lock on the file as it is then; every run is kept.  Returns the
    run now frozen.  Raises :class:`GrooveError` when the file is missing,
    refused or no history, when ``wanted`` names no single run, or when writing
    fails.
    """
    with _locked(path):
        current, chosen = _stored_run(path, wanted, cap, "freeze a run in")
        why = untrusted(chosen)
        if why is not None:
            # it would never be used: the gate would compare with another run unannounced
            raise GrooveError(
                f"the run {run_label(chosen)} in {path} cannot be the frozen baseline: {why}; "
                "freeze another run (`groove history verify` lists the runs that cannot be "
                "trusted)"
            )
        ordered = [replace(r, frozen=r is chosen) for r in current.runs]
        _replace(path, current, encode_history(ordered))
        return replace(chosen, frozen=True)


def delete_run(path: Path, wanted: str, cap: int = HISTORY_CAP) -> RunRecord:
    """Remove the stored run ``wanted`` names (:func:`find_run`); returns it.

    Done under the lock on the file as it is then; every other run is kept as stored
    (an edited run keeps its mark).  Deleting the frozen run unfreezes the history.
    Raises :class:`GrooveError` as :func:`freeze_run` does.
    """
    with _locked(path):
        current, chosen = _stored_run(path, wanted, cap, "delete a run from")
        _replace(path, current, encode_history([r for r in current.runs if r is not chosen]))
        return chosen
