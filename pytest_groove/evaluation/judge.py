"""The first step of finishing an evaluation: judge the run.

:func:`judge` puts the per-query results in golden order, builds the run record (the
corpus and the quote scan read from the searcher), compares it with the baseline the
evaluation chose when it began, and applies the gate.  It writes nothing: the
:class:`Judged` record it returns is what :mod:`~pytest_groove.evaluation.finish`
delivers (the history save, the reports) and spells for the door.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_groove.errors import Door, flag
from pytest_groove.evaluation.gate.accepted import compare_across
from pytest_groove.evaluation.gate.compare import Comparison, compare, project_baseline
from pytest_groove.evaluation.gate.policy import (
    GateVerdict,
    failed_baseline_warning,
    floors_message,
    gate_record,
    gate_verdict,
    loosened,
    unconfirmed_note,
)
from pytest_groove.evaluation.gate.verdict import (
    RunVerdicts,
    comparison_verdicts,
    removed_answer_failures,
    violation_failures,
)
from pytest_groove.evaluation.history.file import BaselineChoice
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.plan import EvalPlan
from pytest_groove.evaluation.runs.corpus_files import with_document_digests
from pytest_groove.evaluation.runs.coverage import Coverage, golden_coverage
from pytest_groove.evaluation.runs.findings import quote_findings
from pytest_groove.evaluation.runs.gate_record import loosened_warning
from pytest_groove.evaluation.runs.record import (
    Finding,
    QueryResult,
    RunRecord,
    build_run,
    display_timestamp,
)
from pytest_groove.evaluation.searched import EvaluatedSearcher
from pytest_groove.scoring.records import GoldenSet


@dataclass(frozen=True)
class Scope:
    """Which results this run has, and whether it is recorded and gated."""

    #: results in golden order
    per_query: list[QueryResult]
    #: not the whole golden set (or not asked to record): reported, never recorded or gated
    subset: bool
    #: the run goes into the history
    will_record: bool


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided (:func:`_gate`)."""

    #: the regression gate was asked for, on a whole run
    applies: bool
    #: what fails the run: regressed metrics, metrics under their floor, lost answers
    failures: list[str]
    #: the part of :attr:`failures` under its floor
    floor_failures: tuple[str, ...]
    #: what failed the regression gate, recorded with the run
    failed: tuple[str, ...]
    #: the stderr lines explaining a failure
    lines: tuple[str, ...]
    #: said about the gate (nothing compared, loosened, a failed baseline, unconfirmed)
    warnings: tuple[str, ...]
    #: the queries whose pytest item the gate fails on their own (``query X regressed``)
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged:
    """The run recorded, compared with the baseline and gated (:func:`judge`)."""

    plan: EvalPlan
    scope: Scope
    #: the run, with the gate it was held to and what failed it
    run: RunRecord
    comparison: Comparison
    choice: BaselineChoice | None
    #: the stored runs as read
    runs: tuple[RunRecord, ...]
    #: one verdict per query, for every report
    verdicts: RunVerdicts
    findings: list[Finding]
    gate: GateDecision
    #: the history's and the gate's notes for stderr, in the order said
    warnings: tuple[str, ...]
    #: positions in :attr:`run` of the known misses of the accepted baseline (a query
    #: that missed there and still misses: an expected failure unless strict)
    known_misses: frozenset[int] = frozenset()
    #: what the golden set covers of the KB in this run (None: a subset of the queries
    #: ran, or the searcher names no documents)
    coverage: Coverage | None = None


def judge(
    evaluation: Evaluation,
    results: Sequence[QueryResult],
    searcher: EvaluatedSearcher | None,
    *,
    record: bool,
    door: Door,
) -> Judged:
    """Record the run, compare it with the baseline the evaluation chose, gate it."""
    warnings: list[str] = list(evaluation.stored.warnings)
    scope = _scope(evaluation, results, record=record, warnings=warnings)
    run, findings = _record(evaluation, scope, searcher, warnings)
    comparison = _compare(evaluation, scope, run)
    # one verdict per query, for every report; a deleted answer fails the gate too
    verdicts = comparison_verdicts(
        comparison, evaluation.why_unindexed, evaluation.lost_headings, evaluation.vanished_files
    )
    gate = _gate(evaluation, scope, comparison, verdicts, door)
    assert run.gate is not None
    # what failed the regression gate is recorded with the run: a later run compared
    # with it says so (floors are absolute, checked again by every run: not recorded)
    run = replace(run, gate=replace(run.gate, failed=gate.failed))
    return Judged(
        plan=evaluation.plan,
        scope=scope,
        run=run,
        comparison=comparison,
        choice=evaluation.choice,
        runs=evaluation.stored.runs,
        verdicts=verdicts,
        findings=findings,
        gate=gate,
        warnings=(*warnings, *gate.warnings),
        known_misses=_known_misses(evaluation, scope.per_query),
        coverage=_coverage(evaluation, scope),
    )


def _coverage(evaluation: Evaluation, scope: Scope) -> Coverage | None:
    """The golden set's coverage of the documents, from this run's top k (a subset's
    would say the set covers less than it does)."""
    headings = evaluation.document_headings
    if headings is None or scope.subset:
        return None
    plan = evaluation.plan
    return golden_coverage(plan.golden, headings, scope.per_query, max(plan.k_values))


def _known_misses(evaluation: Evaluation, per_query: Sequence[QueryResult]) -> frozenset[int]:
    """The positions in ``per_query`` of the known misses (:meth:`Evaluation.known_miss`,
    asked with each result's position in the golden set: a subset run has fewer)."""
    positions: dict[tuple[object, ...], deque[int]] = {}
    for position, query in enumerate(evaluation.plan.golden.queries):
        positions.setdefault((query.id, query.query, tuple(query.expected)), deque()).append(
            position
        )
    known = set()
    for index, result in enumerate(per_query):
        queue = positions.get((result.id, result.query, result.expected))
        if queue and evaluation.known_miss(queue.popleft(), result):
            known.add(index)
    return frozenset(known)


def _scope(
    evaluation: Evaluation, results: Sequence[QueryResult], *, record: bool, warnings: list[str]
) -> Scope:
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
    return Scope(per_query=per_query, subset=subset, will_record=will_record)


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


def _shown_baseline(choice: BaselineChoice | None, scope: Scope) -> RunRecord | None:
    """The run the diff is shown against: a subset run is compared like for like."""
    shown = None if choice is None else choice.shown
    if scope.subset and choice is not None and choice.baseline is not None:
        # like for like: the same queries of the baseline, re-averaged
        shown = project_baseline(choice.baseline, scope.per_query)
    return shown


def _record(
    evaluation: Evaluation, scope: Scope, searcher: EvaluatedSearcher | None, warnings: list[str]
) -> tuple[RunRecord, list[Finding]]:
    """The run record, with the gate it is held to, and the quote scan's findings."""
    plan = evaluation.plan
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
    return replace(run, gate=gate_record(plan.thresholds, plan.gate, frozen)), findings


def _compare(evaluation: Evaluation, scope: Scope, run: RunRecord) -> Comparison:
    """The run compared with the baseline, and how its gate is looser than the baseline's."""
    plan, choice = evaluation.plan, evaluation.choice
    shown = _shown_baseline(choice, scope)
    if choice is not None and choice.accepted is not None and shown is not None:
        # the accepted baseline is compared with whatever this run changed
        comparison = compare_across(run, shown, plan.thresholds)
    else:
        comparison = compare(run, shown, plan.thresholds)
    assert run.gate is not None
    loose = loosened(
        plan,
        run.gate,
        comparison.baseline if comparison.compatible else None,
        evaluation.stored.runs,
        named=choice is not None and choice.named,
    )
    return replace(comparison, gate_loosened=loose)


def _gate(
    evaluation: Evaluation,
    scope: Scope,
    comparison: Comparison,
    verdicts: RunVerdicts,
    door: Door,
) -> GateDecision:
    """Apply the gate: what fails the run, the lines saying why, the warnings about it."""
    plan = evaluation.plan
    # a run being accepted is the new reference: its drops are what is accepted
    applies = plan.options.fail_on_regression and not scope.subset and not plan.options.accept
    verdict = gate_verdict(plan, comparison, regression_gate=applies, subset=scope.subset)
    removed = removed_answer_failures(verdicts) if applies else []
    # a constraint the baseline's ranking kept and this run broke fails the gate too
    broken = violation_failures(verdicts) if applies and verdicts.compared else []
    items = _item_regressions(verdicts, door, applies, plan)
    lines = []
    if verdict.regressions or removed:
        lines.append(_regression_message(plan, comparison, verdict.regressions, removed))
    if broken:
        lines.append(
            "golden query constraints the baseline run kept are broken "
            f"(not_expected / within): {', '.join(broken)}"
        )
    if verdict.floor_failures:
        lines.append(floors_message(plan, verdict.floor_failures))
    return GateDecision(
        applies=applies,
        failures=[*verdict.failures, *removed, *broken],
        floor_failures=tuple(verdict.floor_failures),
        failed=(*verdict.regressions, *removed, *broken, *items),
        lines=tuple(lines),
        warnings=_gate_warnings(evaluation, comparison, verdict, applies),
        items=tuple(items),
    )


def _gate_warnings(
    evaluation: Evaluation, comparison: Comparison, verdict: GateVerdict, applies: bool
) -> tuple[str, ...]:
    """What is said about the gate besides its verdict."""
    plan, runs = evaluation.plan, evaluation.stored.runs
    warnings = []
    if applies and not (comparison.baseline is not None and comparison.compatible):
        warnings.append(_nothing_to_gate(plan, comparison, runs))
    if comparison.gate_loosened:
        warnings.append(str(loosened_warning(comparison.gate_loosened)))
    failed_before = failed_baseline_warning(evaluation.choice, runs, plan.kb)
    if failed_before is not None and comparison.compatible:
        warnings.append(failed_before)
    if verdict.unconfirmed:
        warnings.append(unconfirmed_note(plan, verdict.unconfirmed))
    return tuple(warnings)


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
    if comparison.across_changes:
        since = "since the accepted baseline"
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
    if comparison.settings_changes:
        note += f" Settings changed: {'; '.join(comparison.settings_changes)}."
    if comparison.corpus_changed:
        note += (
            f" The indexed corpus changed since that run as well ({comparison.corpus_phrase}),"
            " which moves rankings on its own."
        )
    return (
        f"{plan.prog}: {', '.join(causes)}.{note} "
        f"Exit status 1 because {flag('fail-on-regression')} was set."
    )


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
