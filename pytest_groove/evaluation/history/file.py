"""The eval history file: stored runs, the frozen baseline, and baseline selection.

This module is the facade: the file layout is :mod:`.history_format`, the baseline
policy :mod:`.history_baseline`, saving :mod:`.history_save` (on the shared file
plumbing of :mod:`pytest_groove.files`), and every name stays importable from here.

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

Each run is written in the compact form of :mod:`~pytest_groove.evaluation.history.codec`
(about a fifth of the format-1 size).  Format 1 -- no ``format`` key, each run the
pretty-printed :meth:`RunRecord.to_json <pytest_groove.evaluation.runs.record.RunRecord.to_json>`
object -- is still read, run by run, and the next save rewrites it as format 2.
``baseline`` holds the timestamp of the run frozen with ``--freeze-baseline`` or
:func:`freeze_run` (compared as an instant, so any RFC 3339 spelling of it
matches); it is absent when no run is frozen, and a value that names no stored run
freezes nothing (with a warning).  The frozen run is *pinned*: it is kept even when
it falls out of the newest ``history_size`` runs, in which case it is written last
(it is the oldest).

Reading (:func:`load_history`) goes through the guarded reader.  A file in the layout
above is read a line at a time (:mod:`~pytest_groove.evaluation.history.vouch`): a run
whose digest matches its text is read without its queries, which are read when first
asked for (the listing never asks, the gate only for its baseline's), and the next
save writes its line back as it was read.  A file that cannot
be read, or is refused (symlink, hard link, not a regular file, over the cap),
stops the run with an error and is never overwritten: treating it as empty would
replace every baseline with one run and let the gate pass without comparing
anything.  Runs are parsed one at a time: a run that does not parse (a hand edit,
a bad merge) is skipped with a warning and every other run is kept.  A run that
parses but holds text no file can store (a lone surrogate escape such as
``"\\udfff"``) is repaired: each such code point becomes U+FFFD.  Bytes that are not
JSON as a whole (a merge conflict, a cut-off end) are read line by line, one run a
line; runs come out newest first by timestamp whatever their order in the file, a run
written twice the same way once.  Bytes holding no run at all start the run fresh,
with a warning; a ``format`` newer than this version reads stops the run
(:class:`~pytest_groove.evaluation.history.format.HistoryTooNew`).  Whenever the file
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

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.evaluation.gate.baseline import (
    BaselineChoice,
    choose_baseline,
    find_run,
    named_baseline,
    pick_baseline,
    run_label,
    select_baseline,
)
from pytest_groove.evaluation.history.format import (
    BACKUP_MARK,
    HISTORY_FILE_NAME,
    HISTORY_FORMAT,
    HISTORY_WHAT,
    HistoryWarning,
    ParsedHistory,
    backup_pattern,
    bound_history,
    encode_history,
    history_path,
    load_history,
    new_backup_path,
    parse_history,
    read_history,
)
from pytest_groove.evaluation.history.save import (
    LOCK_TIMEOUT_SECONDS,
    StagedSave,
    freeze_run,
    remove_stale_temp_files,
    save_history,
    stage_save,
)
from pytest_groove.files.guarded_io import HISTORY_CAP

__all__ = [
    "BACKUP_MARK",
    "HISTORY_CAP",
    "HISTORY_FILE_NAME",
    "HISTORY_FORMAT",
    "HISTORY_WHAT",
    "LOCK_TIMEOUT_SECONDS",
    "BaselineChoice",
    "HistoryWarning",
    "ParsedHistory",
    "StagedSave",
    "backup_pattern",
    "bound_history",
    "choose_baseline",
    "encode_history",
    "find_run",
    "freeze_run",
    "history_path",
    "load_history",
    "named_baseline",
    "new_backup_path",
    "parse_history",
    "pick_baseline",
    "read_history",
    "remove_stale_temp_files",
    "run_label",
    "save_history",
    "select_baseline",
    "stage_save",
]
