"""The last step of an evaluation, shared by ``groove eval`` and the pytest plugin.

Both doors search every golden query of a begun :class:`~pytest_groove.evaluation.
lifecycle.Evaluation` and hand the per-query results to :func:`finish_evaluation`,
which does everything else exactly once: quote scan, run record, comparison with the
baseline the evaluation chose when it began, regression gate, history save, and the
reports.  It prints nothing; the caller decides where the reports and warnings go.

The gate is a no-op when there is no compatible stored run, under ``no_history`` or
``no_diff``, and for a subset run (``record=False``: some golden queries were
deselected).  A subset run is reported against the same queries of the baseline but
never recorded, so it can neither move a baseline nor fail a build.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_groove.engine.searcher import Searcher
from pytest_groove.errors import Door, GrooveError, flag, spell_flags, spell_flags_within
from pytest_groove.evaluation.gate.compare import (
    Comparison,
    compare,
    project_baseline,
)
from pytest_groove.evaluation.gate.policy import (
    failed_baseline_warning,
    floors_message,
    gate_record,
    gate_verdict,
    loosened,
    significance_phrase,
    unconfirmed_note,
)
from pytest_groove.evaluation.gate.verdict import (
    RunVerdicts,
    comparison_verdicts,
    removed_answer_failures,
)
from pytest_groove.evaluation.history.file import BaselineChoice, StagedSave, stage_save
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.plan import EvalPlan
from pytest_groove.evaluation.reports.formats import ReportFormat, ReportInputs, report_files
from pytest_groove.evaluation.reports.json_report import build_json_report
from pytest_groove.evaluation.reports.text_report import NEXT_RUN_HINT, render_text
from pytest_groove.evaluation.runs.corpus_files import with_document_digests
from pytest_groove.evaluation.runs.findings import findings_warning, quote_findings
from pytest_groove.evaluation.runs.gate_record import loosened_warning
from pytest_groove.evaluation.runs.record import (
    Finding,
    QueryResult,
    RunRecord,
    build_run,
    display_timestamp,
)
from pytest_groove.scoring.records import GoldenSet


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


def order_results(golden: GoldenSet, results: Sequence[QueryResult]) -> list[QueryResult]:
    """Results in golden order, whatever order they arrived in (xdist workers).

    A result belongs to the first golden query with the same id, text and expected
    list that has no result yet; results matching no golden query go last.
    """
    waiting: dict[tuple[object, ...], deque[QueryResult]] = {}
    for result in results:
        waiting.setdefault((result.id, result.query, result.expected), deque()).append(result)
    ordered: list[QueryResult] = []
    for q in golden.queries:
        queue = waiting.get((q.id, q.query, tuple(q.expected)))
        if queue:
            ordered.append(queue.popleft())
    return ordered + [result for queue in waiting.values() for result in queue]


def _regression_message(
    plan: EvalPlan, comparison: Comparison, regressions: list[str], removed: list[str]
) -> str:
    """The gate's line: the metrics that dropped by more than the threshold, and the
    expected answers lost since the baseline (which fail the gate whatever the metrics
    did, so they are never worded as a metric drop)."""
    baseline = comparison.baseline
    assert baseline is not None
    limits = plan.thresholds
    threshold = limits.describe() if limits.per_metric else f"{limits.default:.3f}"
    since = f"since the run of {display_timestamp(baseline.timestamp)}"
    causes = []
    if regressions:
        causes.append(
            f"retrieval quality regressed by more than {threshold} {since} "
            f"({', '.join(regressions)})"
        )
    if removed:
        # removed, renamed, left out of the index, or a pinned heading edited away
        lost = "expected answers were lost" if len(removed) > 1 else "an expected answer was lost"
        lost = f"and {lost}" if regressions else f"{lost} {since}"
        causes.append(f"{lost} ({', '.join(removed)})")
    note = ""
    if comparison.corpus_changed:
        note = (
            f" The indexed corpus changed since that run as well ({comparison.corpus_phrase}),"
            " which moves rankings on its own."
        )
    return (
        f"{plan.prog}: {', '.join(causes)}.{note} "
        f"Exit status 1 because {flag('fail-on-regression')} was set."
    )


@dataclass(frozen=True)
class _Scope:
    """Which results this run has, and whether it is recorded and gated."""

    #: results in golden order
    per_query: list[QueryResult]
    #: not the whole golden set (or not asked to record): reported, never recorded or gated
    subset: bool
    #: the run goes into the history
    will_record: bool


def _nothing_to_gate(plan: EvalPlan, comparison: Comparison, stored: Sequence[RunRecord]) -> str:
    """The gate was asked for but had no run to compare with: say so, or it passes mute."""
    if plan.options.no_history:
        why = f"{flag('no-history')} reads no stored run"
    elif plan.options.no_diff:
        why = f"{flag('no-diff')} compares with no stored run"
    elif comparison.baseline is None and stored:
        # runs are stored, but none may be the baseline (edited by hand, dated ahead)
        why = (
            f"the {len(stored)} stored run{'s' if len(stored) != 1 else ''} cannot be trusted "
            "as the baseline (see the warning above)"
        )
    elif comparison.baseline is None:
        why = "no earlier run is stored"
    else:
        why = f"no stored run can be compared with this one ({comparison.reason})"
    later = (
        ""
        if plan.options.no_history
        else "; once this run is recorded, later ones are compared with it"
    )
    return (
        f"{flag('fail-on-regression')} compared nothing: {why}, so no regression could be "
        f"checked{later}"
    )


def _item_regressions(
    verdicts: RunVerdicts, door: Door, gate_applies: bool, plan: EvalPlan
) -> list[str]:
    """Under pytest's gate each query that dropped fails its item, and so the session:
    that failed the run as much as an aggregate regression did.  Not under
    ``--significance``, where a query's own drop fails no item."""
    if door != "pytest" or not gate_applies or plan.gate.significance is not None:
        return []
    return [f"query {v.label} regressed" for v in verdicts.queries if v.regressed]


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
        return _finish(evaluation, results, searcher, record, staged, color, door)


def _finish(
    evaluation: Evaluation,
    results: Sequence[QueryResult],
    searcher: Searcher | None,
    record: bool,
    staged: bool,
    color: bool,
    door: Door,
) -> EvalOutcome:
    plan = evaluation.plan
    warnings: list[str] = list(evaluation.stored.warnings)
    scope = _scope(evaluation, results, record=record, warnings=warnings)
    corpus = None
    findings: list[Finding] = []
    if searcher is not None:
        # answers that cannot be judged stop here, before anything is recorded
        warnings += searcher.answer_warnings(scope.per_query, max(plan.k_values))
        corpus = with_document_digests(searcher.corpus_snapshot(), searcher.document_digests())
        findings = quote_findings(scope.per_query, searcher)
    run = build_run(evaluation.fingerprint, scope.per_query, corpus, findings)
    choice = evaluation.choice
    frozen = choice.baseline if choice is not None and choice.frozen else None
    run = replace(run, gate=gate_record(plan.thresholds, plan.gate, frozen))
    runs = list(evaluation.stored.runs)
    shown = _shown_baseline(choice, scope)
    comparison = compare(run, shown, plan.thresholds)
    assert run.gate is not None
    loose = loosened(
        plan,
        run.gate,
        comparison.baseline if comparison.compatible else None,
        runs,
        named=choice is not None and choice.named,
    )
    comparison = replace(comparison, gate_loosened=loose)
    gate_applies = plan.options.fail_on_regression and not scope.subset
    verdict = gate_verdict(plan, comparison, regression_gate=gate_applies, subset=scope.subset)
    # one verdict per query, for every report; a deleted answer fails the gate too
    verdicts = comparison_verdicts(comparison, evaluation.why_unindexed, evaluation.lost_headings)
    removed = removed_answer_failures(verdicts) if gate_applies else []
    failures = [*verdict.failures, *removed]
    if gate_applies and not (comparison.baseline is not None and comparison.compatible):
        warnings.append(_nothing_to_gate(plan, comparison, runs))
    if loose:
        warnings.append(str(loosened_warning(loose)))
    failed_before = failed_baseline_warning(choice, runs, plan.kb)
    if failed_before is not None and comparison.compatible:
        warnings.append(failed_before)
    if verdict.unconfirmed:
        warnings.append(unconfirmed_note(plan, verdict.unconfirmed))
    gate_lines = []
    if verdict.regressions or removed:
        gate_lines.append(_regression_message(plan, comparison, verdict.regressions, removed))
    if verdict.floor_failures:
        gate_lines.append(floors_message(plan, verdict.floor_failures))
    # what failed the regression gate is recorded with the run: a later run compared
    # with it says so (floors are absolute, checked again by every run: not recorded)
    run = replace(
        run,
        gate=replace(
            run.gate,
            failed=(
                *verdict.regressions,
                *removed,
                *_item_regressions(verdicts, door, gate_applies, plan),
            ),
        ),
    )
    pending, error = _save(plan, scope, runs, run, warnings)
    try:
        # The report files come before the history is committed: a run whose report
        # could not be written is not recorded (a retry would record it twice).  Each
        # is still written when another failed; the first error wins.
        targets = report_files(plan.options)
        inputs = ReportInputs(run, comparison, runs, verdicts, plan.golden.queries, plan.prog)
        report_error, written = _write_files(targets, inputs, says_recorded=False)
        if report_error is not None and pending is not None:
            pending.discard()
            pending = None

        def reports(recorded: bool) -> tuple[str, dict[str, Any]]:
            return _reports(plan, scope, run, comparison, choice, recorded, color, verdicts, door)

        text, report = reports(pending is not None)
        # the files that say whether the run is recorded (JSON), now that it is known
        late_error, late = _write_files(
            targets, replace(inputs, json_report=report), says_recorded=True
        )
        written += late
        if late_error is not None and pending is not None:
            pending.discard()
            pending = None
            text, report = reports(False)
        report_error = report_error or late_error
        recorded = pending is not None
        if recorded and not staged:
            assert pending is not None
            try:
                pending.commit()
            except GrooveError as exc:
                recorded, error = False, exc.raw_message
                # the files already written said the run would be recorded
                text, report = reports(False)
                for fmt, path in late:
                    fmt.write_file(path, replace(inputs, json_report=report))
            pending = None
    except BaseException:
        if pending is not None:
            pending.discard()
        raise
    error = error or report_error
    done = {fmt.option for fmt, _path in written}
    notes = [f"{fmt.label} written to {path}" for fmt, path in targets if fmt.option in done]
    ungated = _ungated_queries(verdicts, gate_applies and not failures, door, plan)
    if ungated is not None:
        notes.append(ungated)
    if recorded and plan.options.freeze_baseline:
        notes.insert(
            0,
            f"frozen baseline: the run of {display_timestamp(run.timestamp)}; "
            "later runs are compared with it",
        )

    def spelled(text: str) -> str:
        return spell_flags(text, door)

    found = findings_warning(findings, plan.prog)
    return EvalOutcome(
        run=run,
        comparison=comparison,
        text_report=spelled(text),
        json_report=report,
        findings_warning=None if found is None else spelled(found),
        gate_failures=failures,
        warnings=[spelled(w) for w in warnings],
        exit_code=1 if failures or error else 0,
        gate_message=spelled("\n".join(gate_lines)) if gate_lines else None,
        error=None if error is None else spelled(error),
        recorded=recorded,
        choice=choice,
        notes=tuple(spelled(n) for n in notes),
        staged=pending,
        door=door,
        floor_failures=tuple(verdict.floor_failures),
    )


def _scope(
    evaluation: Evaluation, results: Sequence[QueryResult], *, record: bool, warnings: list[str]
) -> _Scope:
    """Put the results in golden order and decide whether the run is recorded."""
    options = evaluation.plan.options
    golden = evaluation.plan.golden
    per_query = order_results(golden, results)
    complete = len(per_query) == len(golden.queries) and all(
        r.id == q.id and r.query == q.query for r, q in zip(per_query, golden.queries, strict=True)
    )
    if record and not complete:
        warnings.append(
            f"only {len(per_query)} of {len(golden.queries)} golden queries have results; "
            "this run is reported but not recorded"
        )
    subset = not (record and complete)
    will_record = not subset and not options.no_history
    if options.freeze_baseline and not will_record:
        warnings.append(
            f"{flag('freeze-baseline')} ignored: this run is not recorded in the history"
        )
    return _Scope(per_query=per_query, subset=subset, will_record=will_record)


def _shown_baseline(choice: BaselineChoice | None, scope: _Scope) -> RunRecord | None:
    """The run the diff is shown against: a subset run is compared like for like."""
    shown = None if choice is None else choice.shown
    if scope.subset and choice is not None and choice.baseline is not None:
        # like for like: the same queries of the baseline, re-averaged
        shown = project_baseline(choice.baseline, scope.per_query)
    return shown


def _save(
    plan: EvalPlan, scope: _Scope, runs: list[RunRecord], run: RunRecord, warnings: list[str]
) -> tuple[StagedSave | None, str | None]:
    """Stage appending the run to the history when it is recorded: (the staged save,
    error message)."""
    if not scope.will_record:
        return None, None
    try:
        staged = stage_save(
            plan.history_path,
            runs,
            run,
            plan.settings.eval.history_size,
            plan.history_cap,
            freeze_baseline=plan.options.freeze_baseline,
        )
    except GrooveError as exc:
        return None, exc.raw_message
    warnings += staged.messages
    return staged, None


def _reports(
    plan: EvalPlan,
    scope: _Scope,
    run: RunRecord,
    comparison: Comparison,
    choice: BaselineChoice | None,
    recorded: bool,
    color: bool,
    verdicts: RunVerdicts | None = None,
    door: Door = "cli",
) -> tuple[str, dict[str, Any]]:
    """(text report, JSON report) of a run recorded or not; the JSON report names
    options as ``door`` spells them."""
    footer: str | None = None
    if scope.subset and len(scope.per_query) == len(plan.golden.queries):
        # every query has a result, but the session did not end as a whole run does
        # (-x, --maxfail, --sw, a broken session): say that, not "subset"
        footer = (
            f"Interrupted run (all {len(scope.per_query)} golden queries ran, but the "
            "session stopped early): not recorded in the history and not gated."
        )
    elif scope.subset:
        footer = (
            f"Subset run ({len(scope.per_query)} of {len(plan.golden.queries)} golden queries): "
            "not recorded in the history and not gated."
        )
    elif recorded and not comparison.compatible:
        footer = NEXT_RUN_HINT
    text = render_text(
        run,
        comparison,
        color=color,
        choice=choice,
        footer=footer,
        title=plan.prog,
        verdicts=verdicts,
    )
    # a gate setting's source ("--significance on the command line") is a flag token
    report = spell_flags_within(
        build_json_report(run, comparison, recorded=recorded, verdicts=verdicts), door
    )
    return text, report


def _write_files(
    targets: list[tuple[ReportFormat, Path]], inputs: ReportInputs, *, says_recorded: bool
) -> tuple[str | None, list[tuple[ReportFormat, Path]]]:
    """Write the files of ``targets`` whose format says whether the run is recorded, or
    those that do not: (the first error, the files written)."""
    errors: list[str | None] = []
    written: list[tuple[ReportFormat, Path]] = []
    for fmt, path in targets:
        if fmt.says_recorded == says_recorded:
            errors.append(fmt.write_file(path, inputs))
            if errors[-1] is None:
                written.append((fmt, path))
    return next((e for e in errors if e is not None), None), written
