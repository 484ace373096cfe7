"""The last step of an evaluation, shared by ``groove eval`` and the pytest plugin.

Both doors search every golden query of a begun :class:`~pytest_groove.evaluation.
lifecycle.Evaluation` and hand the per-query results to :func:`finish_evaluation`,
which does everything else exactly once: quote scan, run record, comparison with the
baseline the evaluation chose when it began, regression gate, history save, and the
reports.  It prints nothing; the caller decides where the reports and warnings go.

It takes three steps, each handing a small record to the next: **judge** (record,
compare with the baseline, gate: :mod:`~pytest_groove.evaluation.judge`, a
``Judged``), **deliver** (stage the history save, render the reports, write the
report files through the table of :mod:`~pytest_groove.evaluation.reports.formats`:
a ``_Delivered``) and **spell** (the :class:`EvalOutcome`, its messages worded for
the door).

The gate is a no-op when there is no compatible stored run, under ``no_history`` or
``no_diff``, and for a subset run (``record=False``: some golden queries were
deselected).  A subset run is reported against the same queries of the baseline but
never recorded, so it can neither move a baseline nor fail a build.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_groove.errors import Door, GrooveError, flag, spell_flags, spell_flags_within
from pytest_groove.evaluation.gate.compare import Comparison, match_queries
from pytest_groove.evaluation.gate.policy import significance_phrase
from pytest_groove.evaluation.gate.verdict import RunVerdicts
from pytest_groove.evaluation.history.accepted import save_baseline
from pytest_groove.evaluation.history.file import BaselineChoice, StagedSave, stage_save
from pytest_groove.evaluation.judge import Judged, Scope, judge
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.plan import EvalPlan
from pytest_groove.evaluation.reports.formats import ReportFormat, ReportInputs, report_files
from pytest_groove.evaluation.reports.headline import ReportGate
from pytest_groove.evaluation.reports.json_report import build_json_report
from pytest_groove.evaluation.reports.text_report import NEXT_RUN_HINT, render_text
from pytest_groove.evaluation.runs.findings import findings_warning
from pytest_groove.evaluation.runs.record import QueryResult, RunRecord, display_timestamp
from pytest_groove.scoring.metrics import is_miss


@dataclass(frozen=True)
class EvalOutcome:
    run: RunRecord
    comparison: Comparison
    text_report: str
    json_report: dict[str, Any]
    #: the findings block for stderr (None = nothing found)
    findings_warning: str | None
    #: aggregate metrics that failed the gate (empty = passed or not applied)
    gate_failures: list[str]
    #: history notes for stderr (corrupt file started fresh, trimmed, ...)
    warnings: list[str]
    #: 0 = fine, 1 = the gate failed or the history could not be saved
    exit_code: int
    #: the stderr line explaining a gate failure
    gate_message: str | None = None
    #: a problem that happened after the reports were built (history save failed)
    error: str | None = None
    #: the run was written to the history
    recorded: bool = False
    #: how the baseline was chosen (None when no history was consulted)
    choice: BaselineChoice | None = None
    #: confirmations for stderr (the frozen baseline, where a report was written)
    notes: tuple[str, ...] = ()
    #: the save waiting for :meth:`commit` (``finish_evaluation(..., staged=True)``)
    staged: StagedSave | None = None
    #: the door whose spelling of options the messages use
    door: Door = "cli"
    #: the part of :attr:`gate_failures` that is under its floor (``--fail-under``)
    floor_failures: tuple[str, ...] = ()
    #: what every report file was made from (a door that prints one: ``--format``)
    report_inputs: ReportInputs | None = None

    def commit(self) -> str | None:
        """Put a staged run into the history once the report is delivered; returns
        the error message when that last step fails (None: done, or nothing staged)."""
        if self.staged is None:
            return None
        try:
            self.staged.commit()
        except GrooveError as exc:
            return exc.message_for(self.door)
        return None

    def discard(self) -> None:
        """Leave the history as it was (the report could not be delivered)."""
        if self.staged is not None:
            self.staged.discard()


def finish_evaluation(
    evaluation: Evaluation,
    results: Sequence[QueryResult],
    *,
    record: bool,
    staged: bool = False,
    color: bool = False,
    door: Door = "cli",
) -> EvalOutcome:
    """Turn per-query results into a run: findings, record, diff, gate, save, reports.

    ``record`` is True when the whole golden set ran; then (unless ``no_history``)
    the run is saved and the gate applies.  The corpus and the quote scan are read
    from the evaluation's searcher, inside one read snapshot.  A failure to *save* is
    returned in :attr:`EvalOutcome.error` so the reports still reach the user; every
    message of the outcome is spelled for ``door``.

    With ``staged`` the save stops one step short (:func:`~pytest_groove.evaluation.
    history.stage_save`, holding the history's lock): the caller delivers the report
    and then calls :meth:`EvalOutcome.commit`, or :meth:`EvalOutcome.discard` when
    the report could not be delivered, which leaves the history untouched.
    """
    searcher = evaluation.searcher
    with searcher.read_snapshot() if searcher is not None else nullcontext():
        judged = judge(evaluation, results, searcher, record=record, door=door)
        delivered = _deliver(judged, staged=staged, color=color, door=door)
    return _spell(judged, _accept(judged, delivered), door)


# --------------------------------------------------------------------------- deliver


@dataclass(frozen=True)
class _Rendered:
    """The text and JSON reports of the run, recorded or not (:func:`_render`)."""

    text: str
    #: names options as the door spells them
    report: dict[str, Any]


@dataclass(frozen=True)
class _Delivered:
    """What became of the history save and the reports (:func:`_deliver`)."""

    rendered: _Rendered
    #: the run went into the history (or waits in :attr:`staged` to)
    recorded: bool
    #: the save waiting for :meth:`EvalOutcome.commit`
    staged: StagedSave | None
    #: the first problem: the save failed, or a report file could not be written
    error: str | None
    #: a note per report file written, in the table's order
    written: tuple[str, ...]
    #: what the history save said (runs trimmed, a backup made, ...)
    warnings: tuple[str, ...]
    #: what the report files were made from, with the JSON report as delivered
    inputs: ReportInputs


#: the report files a run writes, each with the format that writes it
_Files = list[tuple[ReportFormat, Path]]


def _deliver(judged: Judged, *, staged: bool, color: bool, door: Door) -> _Delivered:
    """Stage the history save, render the reports and write the files the options ask
    for (the table of ``reports/formats.py``); commit the save unless ``staged``."""
    targets = report_files(judged.plan.options)
    inputs = _report_inputs(judged, door)
    pending, error, messages = _save(judged)
    try:
        # The report files come before the history is committed: a run whose report
        # could not be written is not recorded (a retry would record it twice).  Each
        # is still written when another failed; the first error wins.
        report_error, written = _write_files(targets, inputs, says_recorded=False)
        if report_error is not None and pending is not None:
            pending.discard()
            pending = None
        rendered = _render(judged, pending is not None, color, door)
        # the files that say whether the run is recorded, now that it is known
        late_inputs = replace(inputs, json_report=rendered.report)
        late_error, late = _write_files(targets, late_inputs, says_recorded=True)
        if late_error is not None and pending is not None:
            pending.discard()
            pending = None
            rendered = _unrecorded(judged, late, inputs, color, door)
        report_error = report_error or late_error
        recorded = pending is not None
        if pending is not None and not staged:
            try:
                pending.commit()
            except GrooveError as exc:
                recorded, error = False, exc.raw_message
                # the files already written said the run would be recorded
                rendered = _unrecorded(judged, late, inputs, color, door)
            pending = None
    except BaseException:
        if pending is not None:
            pending.discard()
        raise
    done = {fmt.option for fmt, _path in (*written, *late)}
    return _Delivered(
        rendered=rendered,
        recorded=recorded,
        staged=pending,
        error=error or report_error,
        written=tuple(
            f"{fmt.label} written to {path}" for fmt, path in targets if fmt.option in done
        ),
        warnings=messages,
        inputs=replace(inputs, json_report=rendered.report),
    )


def _save(judged: Judged) -> tuple[StagedSave | None, str | None, tuple[str, ...]]:
    """Stage appending the run to the history when it is recorded: (the staged save,
    error message, what the save said)."""
    plan = judged.plan
    if not judged.scope.will_record:
        return None, None, ()
    try:
        staged = stage_save(
            plan.history_path,
            judged.runs,
            judged.run,
            plan.settings.eval.history_size,
            plan.history_cap,
            freeze_baseline=plan.options.freeze_baseline,
        )
    except GrooveError as exc:
        return None, exc.raw_message, ()
    return staged, None, tuple(staged.messages)


def _report_inputs(judged: Judged, door: Door) -> ReportInputs:
    plan, gate, scope = judged.plan, judged.gate, judged.scope
    return ReportInputs(
        run=judged.run,
        comparison=judged.comparison,
        history=judged.runs,
        verdicts=judged.verdicts,
        golden=plan.golden.queries,
        prog=plan.prog,
        gate=ReportGate(
            applied=not scope.subset and (gate.applies or bool(plan.gate.floors)),
            failures=tuple(gate.failures),
            lines=gate.lines,
            item_failures=gate.items,
            known_misses=judged.known_misses,
            subset=scope.subset,
            accepting=plan.options.accept,
        ),
        choice=judged.choice,
        options=plan.options,
        door=door,
        coverage=judged.coverage,
    )


def _write_files(
    targets: _Files, inputs: ReportInputs, *, says_recorded: bool
) -> tuple[str | None, _Files]:
    """Write the files of ``targets`` whose format says whether the run is recorded, or
    those that do not: (the first error, the files written)."""
    errors: list[str | None] = []
    written: _Files = []
    for fmt, path in targets:
        if fmt.says_recorded == says_recorded:
            errors.append(fmt.write_file(path, inputs))
            if errors[-1] is None:
                written.append((fmt, path))
    return next((e for e in errors if e is not None), None), written


def _unrecorded(
    judged: Judged, late: _Files, inputs: ReportInputs, color: bool, door: Door
) -> _Rendered:
    """The reports of a run that is not recorded after all; the files ``late`` written
    saying it would be are written again (a second failure is not reported)."""
    rendered = _render(judged, False, color, door)
    for fmt, path in late:
        fmt.write_file(path, replace(inputs, json_report=rendered.report))
    return rendered


def _render(judged: Judged, recorded: bool, color: bool, door: Door) -> _Rendered:
    """(text report, JSON report) of a run recorded or not; the JSON report names
    options as ``door`` spells them."""
    plan = judged.plan
    text = render_text(
        judged.run,
        judged.comparison,
        color=color,
        choice=judged.choice,
        footer=_footer(plan, judged.scope, judged.comparison, recorded),
        title=plan.prog,
        verdicts=judged.verdicts,
    )
    # a gate setting's source ("--significance on the command line") is a flag token
    built = build_json_report(
        judged.run,
        judged.comparison,
        recorded=recorded,
        verdicts=judged.verdicts,
        choice=judged.choice,
        coverage=judged.coverage,
    )
    return _Rendered(text, spell_flags_within(built, door))


def _footer(plan: EvalPlan, scope: Scope, comparison: Comparison, recorded: bool) -> str | None:
    """The text report's last line: why the run was not recorded, or what the next run does."""
    if scope.subset and len(scope.per_query) == len(plan.golden.queries):
        # every query has a result, but the session did not end as a whole run does
        # (-x, --maxfail, --sw, a broken session): say that, not "subset"
        return (
            f"Interrupted run (all {len(scope.per_query)} golden queries ran, but the "
            "session stopped early): not recorded in the history and not gated."
        )
    if scope.subset:
        return (
            f"Subset run ({len(scope.per_query)} of {len(plan.golden.queries)} golden queries): "
            "not recorded in the history and not gated."
        )
    if recorded and not comparison.compatible:
        return NEXT_RUN_HINT
    return None


def _accept(judged: Judged, delivered: _Delivered) -> _Delivered:
    """Write the run as the accepted baseline when asked (``--accept``): a whole run
    only, after its reports; the file changes only when the results did."""
    plan = judged.plan
    if not plan.options.accept:
        return delivered
    if judged.scope.subset:
        warning = (
            f"{flag('accept')} ignored: only a run of the whole golden set is accepted "
            f"({len(judged.scope.per_query)} of {len(plan.golden.queries)} queries ran)"
        )
        return replace(delivered, warnings=(*delivered.warnings, warning))
    path = plan.baseline_path
    try:
        changed = save_baseline(path, judged.run)
    except GrooveError as exc:
        return replace(delivered, error=delivered.error or exc.raw_message)
    what = "written" if changed else "unchanged: the results are those already accepted"
    note = f"accepted baseline: {path} ({len(judged.run.per_query)} queries; {what})"
    return replace(delivered, written=(note, *delivered.written))


# --------------------------------------------------------------------------- spell


def _spell(judged: Judged, delivered: _Delivered, door: Door) -> EvalOutcome:
    """The outcome, every message worded for ``door``."""
    plan, gate = judged.plan, judged.gate
    notes = list(delivered.written)
    recovered = _recovered_known_misses(judged)
    if recovered is not None:
        notes.append(recovered)
    ungated = _ungated_queries(judged.verdicts, gate.applies and not gate.failures, door, plan)
    if ungated is not None:
        notes.append(ungated)
    if delivered.recorded and plan.options.freeze_baseline:
        notes.insert(
            0,
            f"frozen baseline: the run of {display_timestamp(judged.run.timestamp)}; "
            "later runs are compared with it",
        )

    def spelled(text: str) -> str:
        return spell_flags(text, door)

    found = findings_warning(judged.findings, plan.prog)
    error = delivered.error
    return EvalOutcome(
        run=judged.run,
        comparison=judged.comparison,
        text_report=spelled(delivered.rendered.text),
        json_report=delivered.rendered.report,
        findings_warning=None if found is None else spelled(found),
        gate_failures=gate.failures,
        warnings=[spelled(w) for w in (*judged.warnings, *delivered.warnings)],
        exit_code=1 if gate.failures or error else 0,
        gate_message=spelled("\n".join(gate.lines)) if gate.lines else None,
        error=None if error is None else spelled(error),
        recorded=delivered.recorded,
        choice=judged.choice,
        notes=tuple(spelled(n) for n in notes),
        staged=delivered.staged,
        door=door,
        floor_failures=gate.floor_failures,
        report_inputs=delivered.inputs,
    )


def _recovered_known_misses(judged: Judged) -> str | None:
    """The queries that missed in the accepted baseline and pass now: said, so that
    the improvement is accepted (until then they stay known misses)."""
    choice, baseline = judged.choice, judged.comparison.baseline
    if choice is None or choice.accepted is None or baseline is None:
        return None
    if judged.plan.options.accept:
        return None
    k_values, accepted_k = judged.run.fingerprint.k_values, baseline.fingerprint.k_values
    per_query = judged.run.per_query
    recovered = [
        now.id
        for now, before in zip(per_query, match_queries(per_query, baseline), strict=True)
        if before is not None
        and is_miss(before.metrics, accepted_k)
        and not is_miss(now.metrics, k_values)
    ]
    if not recovered:
        return None
    named = ", ".join(recovered[:5]) + (
        f" and {len(recovered) - 5} more" if len(recovered) > 5 else ""
    )
    return (
        f"{len(recovered)} known miss(es) of the accepted baseline now pass ({named}): "
        f"accept to record {'it' if len(recovered) == 1 else 'them'} ({flag('accept')})"
    )


def _ungated_queries(
    verdicts: RunVerdicts, gate_passed: bool, door: Door, plan: EvalPlan
) -> str | None:
    """Said when the gate passed while some queries dropped since the baseline -- a
    pass must not read as "no query got worse": by ``groove eval``, which gates on the
    aggregate metrics (and deleted answers) where pytest fails each such query's item,
    and by both doors under ``--significance``, where no query's own drop fails."""
    alpha = plan.gate.significance
    if (door != "cli" and alpha is None) or not gate_passed or not verdicts.compared:
        return None
    dropped = [v.label for v in verdicts.queries if v.regressed]
    if not dropped:
        return None
    shown = ", ".join(dropped[:3]) + (f" and {len(dropped) - 3} more" if len(dropped) > 3 else "")
    head = (
        f"the gate passed on the aggregate metrics, but {len(dropped)} "
        f"quer{'y' if len(dropped) == 1 else 'ies'} dropped since the baseline ({shown}; "
        "see the per-query block)"
    )
    if alpha is not None:
        return (
            f"{head}: under {significance_phrase(plan)}, one query's drop fails neither its "
            "pytest item nor the run, as the test cannot tell a single query's drop from "
            f"chance; the gate fails on an aggregate drop over its threshold with p < {alpha:g}"
        )
    return (
        f"{head}: groove eval gates on the averages, pytest --groove-kb also fails each "
        "such query's item"
    )
