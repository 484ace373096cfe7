"""The session-level end of an evaluation, shared by ``groove eval`` and the pytest plugin.

Both doors search every golden query (each through :func:`~pytest_groove.evaluation.
run.evaluate_query`) and hand the per-query results to :func:`finish_evaluation`,
which does everything else exactly once: findings scan, run record, history load,
baseline choice, comparison, regression gate, history save, and the reports.  It
prints nothing; the caller decides where the reports and warnings go.

The gate is a no-op when there is no compatible stored run, under ``no_history`` or
``no_diff``, and for a subset run (``record=False``: some golden queries were
deselected).  A subset run is reported against the same queries of the baseline but
never recorded, so it can neither move a baseline nor fail a build.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_groove.config import EvalSettings
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.compare import (
    Comparison,
    Thresholds,
    compare,
    gate_failures,
    project_baseline,
)
from pytest_groove.evaluation.findings import findings_warning, scan_golden_quotes
from pytest_groove.evaluation.guarded_io import HISTORY_CAP
from pytest_groove.evaluation.history import (
    BaselineChoice,
    StagedSave,
    choose_baseline,
    history_path,
    load_history,
    named_baseline,
    stage_save,
)
from pytest_groove.evaluation.records import GoldenSet
from pytest_groove.evaluation.report_json import build_json_report, dumps_json_report
from pytest_groove.evaluation.report_text import NEXT_RUN_HINT, render_text
from pytest_groove.evaluation.run import (
    Finding,
    Fingerprint,
    QueryResult,
    RunRecord,
    build_run,
    display_timestamp,
    format_timestamp,
)
from pytest_groove.kb.records import ChunkText, CorpusSnapshot


@dataclass(frozen=True)
class EvalFlags:
    """Per-invocation switches (command-line flags / pytest options)."""

    #: neither read nor write the history: no diff, no gate
    no_history: bool = False
    #: read and write the history but show no previous run: no diff, no gate
    no_diff: bool = False
    #: a regression beyond the threshold makes the exit code 1
    fail_on_regression: bool = False
    #: record this run as the frozen baseline
    freeze_baseline: bool = False
    #: compare with the stored run this names (timestamp or unique prefix)
    baseline: str | None = None
    #: ANSI colour in the text report
    color: bool = False
    #: also write the JSON report to this file
    json_path: Path | None = None
    #: also write the HTML report (plots; needs the ``plots`` extra) to this file
    html_path: Path | None = None
    #: also write the rankings as a TREC run file / the golden set as TREC qrels
    trec_run_path: Path | None = None
    trec_qrels_path: Path | None = None


@dataclass
class EvalContext:
    """Everything :func:`finish_evaluation` needs besides the per-query results."""

    kb: Path
    golden: GoldenSet
    fingerprint: Fingerprint
    #: the corpus the searches ran against (None = unknown)
    corpus: CorpusSnapshot | None
    #: history_size and regression_threshold are used from here
    settings: EvalSettings
    flags: EvalFlags = field(default_factory=EvalFlags)
    #: every indexed chunk, for the quote scan; iterate it inside the read snapshot
    #: that answered the searches
    chunk_texts: Iterable[ChunkText] | None = None
    #: findings computed elsewhere (then ``chunk_texts`` is not scanned)
    findings: Sequence[Finding] | None = None
    #: None = ``<kb>/.groove-eval-history.json``
    history_path: Path | None = None
    #: the history as the caller already read it (:func:`load_history`, before its
    #: searches, so a refused file stops the run early); None = read it here
    history: Sequence[RunRecord] | None = None
    #: the warnings that read produced, reported with the outcome
    history_warnings: Sequence[str] = ()
    #: byte cap of the history file (tests lower it)
    history_cap: int = HISTORY_CAP
    #: names the tool in the report banner and stderr messages
    prog: str = "groove eval"
    #: the flag named by the regression message
    fail_flag: str = "--fail-on-regression"
    #: per-metric thresholds (None = [eval].regression_threshold for every metric)
    thresholds: Thresholds | None = None

    @property
    def limits(self) -> Thresholds:
        if self.thresholds is not None:
            return self.thresholds
        return Thresholds(self.settings.regression_threshold)

    @property
    def resolved_history_path(self) -> Path:
        return self.history_path if self.history_path is not None else history_path(self.kb)


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

    def commit(self) -> str | None:
        """Put a staged run into the history once the report is delivered; returns
        the error message when that last step fails (None: done, or nothing staged)."""
        if self.staged is None:
            return None
        try:
            self.staged.commit()
        except GrooveError as exc:
            return exc.message
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


def _regression_message(ctx: EvalContext, comparison: Comparison, failures: list[str]) -> str:
    baseline = comparison.baseline
    assert baseline is not None
    limits = ctx.limits
    threshold = limits.describe() if limits.per_metric else f"{limits.default:.3f}"
    note = ""
    if comparison.corpus_changed:
        note = (
            f" The indexed corpus changed since that run as well ({comparison.corpus_phrase}),"
            " which moves rankings on its own."
        )
    return (
        f"{ctx.prog}: retrieval quality regressed by more than {threshold} since the run "
        f"of {display_timestamp(baseline.timestamp)} ({', '.join(failures)}).{note} "
        f"Exit status 1 because {ctx.fail_flag} was set."
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


def finish_evaluation(
    ctx: EvalContext, results: Sequence[QueryResult], *, record: bool, staged: bool = False
) -> EvalOutcome:
    """Turn per-query results into a run: findings, history, diff, gate, reports.

    ``record`` is True when the whole golden set ran; then (unless ``no_history``)
    the run is saved and the gate applies.  The quote scan looks for the queries
    that ran (all of them, in a recorded run).  Raises :class:`GrooveError` before
    anything is built when the history file is refused or unreadable; a failure to
    *save* is returned in :attr:`EvalOutcome.error` so the reports still reach the
    user.

    With ``staged`` the save stops one step short (:func:`~pytest_groove.evaluation.
    history.stage_save`, holding the history's lock): the caller delivers the report
    and then calls :meth:`EvalOutcome.commit`, or :meth:`EvalOutcome.discard` when
    the report could not be delivered, which leaves the history untouched.
    """
    warnings: list[str] = []
    scope = _scope(ctx, results, record=record, warnings=warnings)
    findings = _findings(ctx, scope.per_query)
    run = build_run(ctx.fingerprint, scope.per_query, ctx.corpus, findings)
    runs, choice, shown = _baseline(ctx, scope, warnings)
    threshold = ctx.limits
    comparison = compare(run, shown, threshold)
    gate_applies = ctx.flags.fail_on_regression and not scope.subset
    failures = gate_failures(comparison, threshold) if gate_applies else []
    pending, error = _save(ctx, scope, runs, run, warnings)
    recorded = pending is not None
    if recorded and not staged:
        assert pending is not None
        try:
            pending.commit()
        except GrooveError as exc:
            recorded, error = False, exc.message
        pending = None
    try:
        text, report, report_error, written = _reports(
            ctx, scope, run, comparison, choice, runs, recorded
        )
    except BaseException:
        if pending is not None:
            pending.discard()
        raise
    error = error or report_error
    notes = list(written)
    if recorded and ctx.flags.freeze_baseline:
        notes.insert(
            0,
            f"frozen baseline: the run of {display_timestamp(run.timestamp)} "
            f"({format_timestamp(run.timestamp)}); later runs are compared with it",
        )
    return EvalOutcome(
        run=run,
        comparison=comparison,
        text_report=text,
        json_report=report,
        findings_warning=findings_warning(findings, ctx.prog),
        gate_failures=failures,
        warnings=warnings,
        exit_code=1 if failures or error else 0,
        gate_message=_regression_message(ctx, comparison, failures) if failures else None,
        error=error,
        recorded=recorded,
        choice=choice,
        notes=tuple(notes),
        staged=pending,
    )


def _scope(
    ctx: EvalContext, results: Sequence[QueryResult], *, record: bool, warnings: list[str]
) -> _Scope:
    """Put the results in golden order and decide whether the run is recorded."""
    golden = ctx.golden.queries
    per_query = order_results(ctx.golden, results)
    complete = len(per_query) == len(golden) and all(
        r.id == q.id and r.query == q.query for r, q in zip(per_query, golden, strict=True)
    )
    if record and not complete:
        warnings.append(
            f"only {len(per_query)} of {len(golden)} golden queries have results; "
            "this run is reported but not recorded"
        )
    subset = not (record and complete)
    will_record = not subset and not ctx.flags.no_history
    if ctx.flags.freeze_baseline and not will_record:
        warnings.append("--freeze-baseline ignored: this run is not recorded in the history")
    return _Scope(per_query=per_query, subset=subset, will_record=will_record)


def _findings(ctx: EvalContext, per_query: Sequence[QueryResult]) -> list[Finding]:
    """The caller's findings, else the quote scan over the indexed chunks, else none."""
    if ctx.findings is not None:
        return list(ctx.findings)
    if ctx.chunk_texts is not None:
        return scan_golden_quotes(per_query, ctx.chunk_texts)
    return []


def pick_baseline(
    runs: Sequence[RunRecord], fingerprint: Fingerprint, named: str | None, path: Path
) -> BaselineChoice:
    """The run named with ``--baseline`` (an error when unknown or incompatible), else
    the frozen or newest compatible run."""
    if named is not None:
        return named_baseline(runs, fingerprint, named, path)
    return choose_baseline(runs, fingerprint)


def _baseline(
    ctx: EvalContext, scope: _Scope, warnings: list[str]
) -> tuple[list[RunRecord], BaselineChoice | None, RunRecord | None]:
    """(the stored runs, how the baseline was chosen, the run to show the diff against)."""
    flags = ctx.flags
    if flags.no_history:
        runs: list[RunRecord] = []
    elif ctx.history is not None:
        runs = list(ctx.history)
        warnings += ctx.history_warnings
    else:
        runs = load_history(ctx.resolved_history_path, warnings=warnings, cap=ctx.history_cap)
    choice = (
        None
        if flags.no_history or flags.no_diff
        else pick_baseline(runs, ctx.fingerprint, flags.baseline, ctx.resolved_history_path)
    )
    shown = None if choice is None else choice.shown
    if scope.subset and choice is not None and choice.baseline is not None:
        # like for like: the same queries of the baseline, re-averaged
        shown = project_baseline(choice.baseline, scope.per_query)
    return runs, choice, shown


def _save(
    ctx: EvalContext, scope: _Scope, runs: list[RunRecord], run: RunRecord, warnings: list[str]
) -> tuple[StagedSave | None, str | None]:
    """Stage appending the run to the history when it is recorded: (the staged save,
    error message)."""
    if not scope.will_record:
        return None, None
    try:
        staged = stage_save(
            ctx.resolved_history_path,
            runs,
            run,
            ctx.settings.history_size,
            ctx.history_cap,
            freeze_baseline=ctx.flags.freeze_baseline,
        )
    except GrooveError as exc:
        return None, exc.message
    warnings += staged.messages
    return staged, None


def _reports(
    ctx: EvalContext,
    scope: _Scope,
    run: RunRecord,
    comparison: Comparison,
    choice: BaselineChoice | None,
    runs: Sequence[RunRecord],
    recorded: bool,
) -> tuple[str, dict[str, Any], str | None, list[str]]:
    """(text report, JSON report, first error writing the report files, a note per
    report file written)."""
    footer: str | None = None
    if scope.subset:
        footer = (
            f"Subset run ({len(scope.per_query)} of {len(ctx.golden.queries)} golden queries): "
            "not recorded in the history and not gated."
        )
    elif recorded and not comparison.compatible:
        footer = NEXT_RUN_HINT
    flags = ctx.flags
    text = render_text(
        run, comparison, color=flags.color, choice=choice, footer=footer, title=ctx.prog
    )
    report = build_json_report(run, comparison, recorded=recorded)
    # Each report is written even when an earlier write failed: CI should not lose its
    # JSON artefact because the history file could not be saved.  The first error wins.
    errors: list[str | None] = []
    written: list[str] = []
    if flags.json_path is not None:
        errors.append(_write_json(flags.json_path, report))
        if errors[-1] is None:
            written.append(f"JSON report written to {flags.json_path}")
    if flags.html_path is not None:
        errors.append(_write_html(flags.html_path, run, comparison, runs, f"{ctx.prog} report"))
        if errors[-1] is None:
            written.append(f"HTML report written to {flags.html_path}")
    for trec_path, what in ((flags.trec_run_path, "run"), (flags.trec_qrels_path, "qrels")):
        if trec_path is not None:
            errors.append(_write_trec(trec_path, what, run))
            if errors[-1] is None:
                written.append(f"TREC {what} file written to {trec_path}")
    return text, report, next((e for e in errors if e is not None), None), written


def _write_json(path: Path, report: dict[str, Any]) -> str | None:
    try:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps_json_report(report), encoding="utf-8")
    except OSError as exc:
        return f"could not write the JSON report {path}: {exc.strerror or exc}"
    return None


def _write_html(
    path: Path,
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    title: str,
) -> str | None:
    # imported here: the module is only needed when the report is asked for
    from pytest_groove.evaluation.report_html import write_html_report

    try:
        write_html_report(path, run, comparison, history, title=title)
    except GrooveError as exc:  # matplotlib went missing after the early check
        return exc.message
    except OSError as exc:
        return f"could not write the HTML report {path}: {exc.strerror or exc}"
    return None


def _write_trec(path: Path, what: str, run: RunRecord) -> str | None:
    # the qrels come from the run's queries too: a subset run's files then judge the
    # same queries our averages do
    from pytest_groove.interop.trec import write_trec_qrels, write_trec_run

    try:
        if what == "run":
            write_trec_run(path, run.per_query)
        else:
            write_trec_qrels(path, run.per_query)
    except GrooveError as exc:
        return exc.message
    return None
