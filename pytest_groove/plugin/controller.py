"""The hooks of the process that owns the run: the controller, or a single process.

Registered by ``pytest_configure`` only where ``config.workerinput`` is absent (an
xdist worker never gets them), and not under ``--collect-only``, where nothing is
evaluated.  :class:`XdistHandOff` is registered besides, only when pytest-xdist is
loaded.  So no hook here asks which role it plays.

What happens here:

- *prepare* (index, fingerprint, history, baseline) before the first search: when
  the collection holds a golden query, or -- under xdist, where the controller
  collects nothing -- just before the workers start;
- *gather* each query's result from its test report (the workers ship them as JSON);
- *finish* once at session end: :func:`finish` turns what was gathered into plain
  values -- the summary text, the lines for stderr, the exit status -- through
  :func:`pytest_groove.evaluation.finish.finish_evaluation`, the same function
  ``groove eval`` calls; the hooks only put them where they belong.

Where each piece of output goes:

- the text report goes to the terminal summary (``pytest_terminal_summary``);
- notes, history warnings, the findings block and the gate message go to stderr,
  written after the summary section (queued until ``pytest_terminal_summary``, or
  ``pytest_unconfigure`` when there is no terminal);
- a regression under ``--groove-fail-on-regression`` turns an otherwise passing
  session into exit status 1 (``ExitCode.TESTS_FAILED``); nothing is raised from a
  hook, because pytest does not catch exceptions around ``pytest_sessionfinish``;
- an error at this stage (the history refused or not writable, the JSON or HTML
  report not writable) is printed as one ``ERROR:`` line and the exit status becomes
  4, like a usage error found earlier.

Only a complete run is recorded and gated: every golden query produced a result and
the session was not interrupted.  A ``-k`` / ``-m`` / ``--lf`` selection, ``-x`` or
Ctrl-C gives a subset that is reported against the same queries of the baseline, but
neither written to the history nor allowed to fail the session.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.finish import EvalOutcome, finish_evaluation
from pytest_groove.evaluation.records import GoldenSet
from pytest_groove.evaluation.run import QueryResult, RecordFormatError
from pytest_groove.evaluation.setup import EvalSetup, eval_context, eval_flags
from pytest_groove.kb.records import ChunkText, CorpusSnapshot
from pytest_groove.options import RunOptions, pytest_flag_names
from pytest_groove.plugin.items import GrooveQueryItem
from pytest_groove.plugin.output import StdoutGuard
from pytest_groove.plugin.session import (
    PROG,
    REPORT_NAME,
    REPORT_RESULT,
    WORKER_INPUT,
    GrooveSession,
    Prepared,
)

CONTROLLER_NAME = "groove-controller"
XDIST_HANDOFF_NAME = "groove-xdist-handoff"
JUNIT_NAMES_NAME = "groove-junit-names"

#: exit statuses after which a run counts as interrupted, whatever results arrived
_BROKEN = (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)


def register_controller(
    config: pytest.Config, session: GrooveSession, output: StdoutGuard | None = None
) -> None:
    """Register the controller's hooks (and the xdist hand-off when xdist is loaded).

    ``output`` watches pytest's standard output (:mod:`.output`): a run is recorded
    only when its report went out.
    """
    if config.getoption("collectonly", False):
        if output is not None:
            output.restore()  # nothing is recorded: pytest's own stream will do
        return
    config.pluginmanager.register(GrooveController(session, output), CONTROLLER_NAME)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHandOff(session), XDIST_HANDOFF_NAME)
    if config.getoption("xmlpath", None):
        config.pluginmanager.register(JUnitClassName(session), JUNIT_NAMES_NAME)


# --------------------------------------------------------------------------- finish


class IndexSnapshot(Protocol):
    """The part of the engine the session end reads (corpus counts, quote scan)."""

    def read_snapshot(self) -> AbstractContextManager[Any]: ...

    def corpus_snapshot(self) -> CorpusSnapshot: ...

    def iter_chunk_texts(self) -> Iterator[ChunkText]: ...


@dataclass(frozen=True)
class SessionEnd:
    """Everything the session end needs, as plain values (no pytest session)."""

    setup: EvalSetup
    golden: GoldenSet
    run: RunOptions
    #: results in golden order (queries that did not run are left out)
    results: Sequence[QueryResult]
    #: None when nothing was prepared (no golden query selected)
    prepared: Prepared | None
    #: --groove-kb was on the command line (an empty run is then worth a line)
    kb_from_cli: bool
    #: Ctrl-C was seen, or pytest's exit status says the run broke
    interrupted: bool
    #: the session's exit status so far
    exitstatus: int
    color: bool = False
    #: the index the searches read (None when a custom retriever answered)
    index: IndexSnapshot | None = None


@dataclass(frozen=True)
class Finished:
    """What the session end prints and the exit status it leaves."""

    #: the terminal summary section (None = no section)
    summary: str | None
    #: messages for stderr, in order, written after the summary section
    stderr: tuple[str, ...]
    exitstatus: int
    #: the evaluation whose history save waits until the summary is out (None = none)
    pending: EvalOutcome | None = None


def finish(end: SessionEnd) -> Finished:
    """Evaluate what ran: the summary, the stderr lines and the session's exit status."""
    total = len(end.golden.queries)
    if not end.results or end.prepared is None:
        summary = None
        if end.kb_from_cli and end.prepared is not None:
            summary = f"{PROG}: no golden query produced a result (0 of {total})\n"
        return Finished(summary, (), end.exitstatus)
    stderr = [f"{PROG}: {note}" for note in end.setup.notes]
    complete = len(end.results) == total and not end.interrupted
    try:
        outcome = _evaluate(end, end.prepared, record=complete)
    except GrooveError as exc:
        stderr.append(f"ERROR: {pytest_flag_names(exc.message)}")
        return Finished(None, tuple(stderr), pytest.ExitCode.USAGE_ERROR)
    stderr += _outcome_messages(outcome)
    return Finished(
        _summary(end, outcome),
        tuple(stderr),
        _exit_status(end, outcome),
        pending=outcome if outcome.staged is not None else None,
    )


def _evaluate(end: SessionEnd, prepared: Prepared, *, record: bool) -> EvalOutcome:
    # Corpus and quote scan read one snapshot of the index the searches used; nothing
    # writes the index during the session (it was brought up to date before the first
    # search).
    index = end.index
    with index.read_snapshot() if index is not None else nullcontext():
        ctx = eval_context(
            end.setup,
            end.golden,
            prepared.fingerprint,
            eval_flags(end.run, color=end.color),
            history=prepared.history,
            history_warnings=prepared.history_warnings,
            corpus=None if index is None else index.corpus_snapshot(),
            chunk_texts=None if index is None else index.iter_chunk_texts(),
            prog=PROG,
            fail_flag=pytest_flag_names("--fail-on-regression"),
        )
        return finish_evaluation(ctx, end.results, record=record, staged=True)


def _summary(end: SessionEnd, outcome: EvalOutcome) -> str:
    summary = outcome.text_report
    if end.interrupted:
        summary += f"{PROG}: the session was interrupted, so this run is not recorded.\n"
    if outcome.gate_failures:
        threshold = outcome.comparison.limits.describe()
        summary += (
            f"{PROG}: regression gate FAILED ({', '.join(outcome.gate_failures)} dropped by "
            f"more than {threshold}); exit status 1\n"
        )
    return summary


def _outcome_messages(outcome: EvalOutcome) -> list[str]:
    lines = [f"{PROG}: warning: {pytest_flag_names(w)}" for w in outcome.warnings]
    lines += [f"{PROG}: {note}" for note in outcome.notes]
    if outcome.findings_warning:
        lines.append(outcome.findings_warning)
    if outcome.gate_message:
        lines.append(outcome.gate_message)
    if outcome.error is not None:
        lines.append(f"ERROR: {pytest_flag_names(outcome.error)}")
    return lines


def _exit_status(end: SessionEnd, outcome: EvalOutcome) -> int:
    if outcome.error is not None:
        return pytest.ExitCode.USAGE_ERROR
    if outcome.gate_failures and end.exitstatus == pytest.ExitCode.OK:
        return pytest.ExitCode.TESTS_FAILED
    return end.exitstatus


# --------------------------------------------------------------------------- hooks


def _use_color(config: pytest.Config) -> bool:
    with contextlib.suppress(Exception):
        return bool(config.get_terminal_writer().hasmarkup)
    return False


class GrooveController:
    """The controller's (or single process's) hooks: prepare, gather, finish."""

    def __init__(self, session: GrooveSession, output: StdoutGuard | None = None) -> None:
        self.session = session
        self.output = output
        #: results seen on reports, by item name
        self.results: dict[str, QueryResult] = {}
        self.interrupted = False
        self.finished: Finished | None = None
        #: messages for stderr not yet written
        self.pending_stderr: list[str] = []
        #: the pytest session, to change its exit status after the summary
        self.pytest_session: pytest.Session | None = None

    def ordered_results(self) -> list[QueryResult]:
        """Results in golden order (queries that did not run are left out)."""
        return [self.results[name] for name in self.session.names if name in self.results]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Prepare only when a golden query was selected, so that `pytest -m "not groove"`
        # in a project with groove_kb set does no index work.
        if any(isinstance(item, GrooveQueryItem) for item in session.items):
            self.session.prepare()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        raw = getattr(report, REPORT_RESULT, None)
        name = getattr(report, REPORT_NAME, None)
        if raw is None or not isinstance(name, str):
            return
        try:
            self.results[name] = QueryResult.from_json(raw)
        except RecordFormatError:
            return

    def pytest_keyboard_interrupt(self) -> None:
        self.interrupted = True

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.finished is not None:
            return
        self.pytest_session = session
        state = self.session
        self.finished = finish(
            SessionEnd(
                setup=state.setup,
                golden=state.golden,
                run=state.options.run,
                results=self.ordered_results(),
                prepared=state.prepared,
                kb_from_cli=state.options.kb_from_cli,
                interrupted=self.interrupted or exitstatus in _BROKEN,
                exitstatus=exitstatus,
                color=_use_color(state.config),
                index=state.engine,
            )
        )
        self.pending_stderr.extend(self.finished.stderr)
        if self.finished.exitstatus != exitstatus:
            session.exitstatus = self.finished.exitstatus

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = None if self.finished is None else self.finished.summary
        if summary is not None:
            terminalreporter.write_sep("=", "groove retrieval quality")
            for line in summary.rstrip("\n").split("\n"):
                terminalreporter.write_line(line)
        self.record()
        self.flush_stderr()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.record()  # no terminal summary (``-p no:terminal``)
        self.flush_stderr()
        if self.output is not None:
            self.output.restore()

    def record(self) -> None:
        """Save the run once the summary is out, or leave the history as it was.

        The save was staged at session finish (the lock is held and the new file
        written); it is committed only when everything pytest wrote so far reached
        standard output.
        """
        pending = None if self.finished is None else self.finished.pending
        if pending is None or pending.staged is None or not pending.staged.pending:
            return
        failure: str | None = None
        if self.output is not None:
            self.output.flush()
            failure = self.output.failure
        error: str | None
        if failure is not None:
            pending.discard()
            error = f"{failure}; this run was not recorded"
        else:
            error = pending.commit()
        if error is not None:
            self.pending_stderr.append(f"ERROR: {pytest_flag_names(error)}")
            if self.pytest_session is not None:
                self.pytest_session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def flush_stderr(self) -> None:
        """Write the messages queued for stderr (after the terminal's own output so far).

        They are queued rather than written in ``pytest_sessionfinish`` because that
        runs before pytest ends the progress line, so a message would be glued to it.
        """
        if not self.pending_stderr:
            return
        sys.stdout.flush()
        for text in self.pending_stderr:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")
        self.pending_stderr.clear()
        sys.stderr.flush()


def junit_classname(golden_nodeid: str) -> str:
    """How CI viewers should group the golden queries: ``kb/.groove-eval.yml`` ->
    ``kb.groove-eval`` (pytest's own rule gives ``kb..groove-eval.yml``)."""
    parts = [part.lstrip(".") for part in golden_nodeid.split("/") if part.strip(".")]
    if parts:
        stem, dot, suffix = parts[-1].rpartition(".")
        if dot and suffix.lower() in ("yml", "yaml"):
            parts[-1] = stem
    return ".".join(parts) or "groove"


class JUnitClassName:
    """``--junitxml`` on the controller: give golden queries a classname that reads well.

    pytest's JUnit writer turns the node id's path into the classname by replacing
    ``/`` with ``.``, which makes ``kb..groove-eval.yml`` of the golden file.  An
    attribute set on the test case before the writer sees the first report is kept
    (the writer restores attributes set earlier, as ``record_xml_attribute`` does).
    """

    def __init__(self, session: GrooveSession) -> None:
        self.session = session
        self._prefix: str | None = None

    def _golden_nodeid(self) -> str:
        if self._prefix is None:
            config = self.session.config
            try:
                relative = self.session.golden_path.relative_to(config.rootpath).as_posix()
            except ValueError:
                relative = self.session.golden_path.as_posix()
            self._prefix = relative
        return self._prefix

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        golden = self._golden_nodeid()
        if not report.nodeid.startswith(golden + "::"):
            return
        try:
            # pytest's JUnit writer has no public API for a non-Python item's classname
            from _pytest.junitxml import xml_key

            xml = self.session.config.stash.get(xml_key, None)
            if xml is not None:
                xml.node_reporter(report).add_attribute("classname", junit_classname(golden))
        except (ImportError, AttributeError):
            return  # another pytest: keep its own classname


class XdistHandOff:
    """pytest-xdist on the controller: prepare before the workers start, hand them the
    baseline.  Registered only when xdist is loaded."""

    def __init__(self, session: GrooveSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        """Just before the workers start: bring the index up to date.

        The workers search; they must find the index built, and building it once here
        (under the indexer's file lock) keeps them from racing to do it.
        """
        self.session.prepare()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Hand each worker the baseline of each query."""
        baseline = self.session.baseline_queries
        node.workerinput[WORKER_INPUT] = {
            "baseline": {name: result.to_json() for name, result in baseline.items()}
        }
