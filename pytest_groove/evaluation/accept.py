"""Accepting a run of the local log as the accepted baseline, searching nothing.

``groove baseline accept --run RUN``: the way a project whose run log was committed
moves to an accepted baseline (accept its frozen or newest run, then stop tracking
the log).  A run edited by hand or dated ahead is refused, as ``--baseline RUN``
refuses it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_groove.evaluation.gate.baseline import find_run
from pytest_groove.evaluation.history.accepted import baseline_path, save_baseline
from pytest_groove.evaluation.history.file import history_path, load_history
from pytest_groove.evaluation.runs.record import RunRecord
from pytest_groove.evaluation.runs.trust import refuse_untrusted
from pytest_groove.settings.options import RunOptions, settings_for


@dataclass(frozen=True)
class AcceptedRun:
    """A run of the log written as the accepted baseline."""

    path: Path
    run: RunRecord
    #: the file changed (False: it held this run already)
    changed: bool
    #: what reading the log said (a damaged file, a run skipped)
    warnings: tuple[str, ...]


def accept_logged_run(kb: Path, options: RunOptions, wanted: str) -> AcceptedRun:
    """Write the run of ``<kb>``'s log that ``wanted`` names as the accepted baseline
    (where ``options`` and ``groove.toml`` put it).  Raises
    :class:`~pytest_groove.errors.GrooveError` for an unknown or untrusted run."""
    settings = settings_for(kb, options)
    log = history_path(kb)
    warnings: list[str] = []
    run = find_run(load_history(log, warnings=warnings), wanted, log)
    refuse_untrusted(run)
    path = baseline_path(kb, options.baseline_file or settings.eval.baseline_file)
    return AcceptedRun(path, run, save_baseline(path, run), tuple(warnings))
