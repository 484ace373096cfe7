"""Which stored run a new run is compared with: the baseline policy.

The frozen run while it stays compatible, else the newest compatible run
(:func:`choose_baseline`), or the run the user named with ``--baseline``
(:func:`named_baseline`); :func:`pick_baseline` is the choice both doors make.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.compare import fingerprint_difference
from pytest_groove.evaluation.runs.record import (
    Fingerprint,
    RecordFormatError,
    RunRecord,
    format_timestamp,
    parse_timestamp,
)


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
    #: the accepted baseline file the baseline was read from (None: the run log's)
    accepted: Path | None = None

    @property
    def source(self) -> str:
        """Where the baseline came from, as the JSON report says it."""
        return "accepted" if self.accepted is not None else "history"

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


def pick_baseline(
    runs: Sequence[RunRecord], fingerprint: Fingerprint, named: str | None, path: Path
) -> BaselineChoice:
    """The run named with ``--baseline`` (an error when unknown or incompatible), else
    the frozen or newest compatible run."""
    if named is not None:
        return named_baseline(runs, fingerprint, named, path)
    return choose_baseline(runs, fingerprint)
