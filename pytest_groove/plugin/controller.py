"""The hooks of the process that owns the run: the controller, or a single process.

Registered by ``pytest_configure`` only where ``config.workerinput`` is absent (an
xdist worker never gets them), and not under ``--collect-only``, where nothing is
evaluated.  :class:`~.xdist.XdistHandOff` is registered besides, only when
pytest-xdist is loaded.  So no hook here asks which role it plays.

What happens here:

- *begin* the evaluation (index, golden check, fingerprint, history, baseline:
  :meth:`~.runner.ProcessRunner.begin`) before the first search: when the collection
  holds a golden query, or -- under xdist, where the controller collects nothing --
  just before the workers start;
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
neither written to the history nor allowed to fail the session.  A run whose golden
queries stopped (a line every later query would repeat: ``errors.StopsTheRun``, in
this process or a worker) is not reported at all: the summary says why it stopped
(``unscored.py``), exit status 1 -- or 4 with one ``ERROR:`` line when a worker could
not open its retriever, as a single process that cannot stops the session.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_groove.engine.searcher import RetrieverSearcher
from pytest_groove.errors import GrooveError, spell_flags
from pytest_groove.evaluation.finish import EvalOutcome, finish_evaluation
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.plan import EvalPlan
from pytest_groove.evaluation.runs.record import QueryResult, RecordFormatError
from pytest_groove.files.resource_limits import limits_as_errors
from pytest_groove.plugin import interrupt
from pytest_groove.plugin.items import GrooveQueryItem
from pytest_groove.plugin.output import StdoutGuard
from pytest_groove.plugin.runner import (
    PROG,
    REPORT_NAME,
    REPORT_NOTES,
    REPORT_RESULT,
    REPORT_RETRIEVER,
    REPORT_STOPPED,
    ProcessRunner,
    usage_message,
)
from pytest_groove.plugin.unscored import (
    BUILT_ELSEWHERE_HINT,
    BUILT_HERE_HINT,
    Stop,
    gates_asked,
    no_report_line,
    nothing_ran_line,
    stopped_line,
)

CONTROLLER_NAME = "groove-controller"
JUNIT_NAMES_NAME = "groove-junit-names"
#: the JUnit test case a failed gate is written as (see JUnitClassName.gate_failed)
GATE_CASE = "groove-gate"


#: pytest options under which no test is called: the session lists (collection, fixtures)
#: or plans set-ups, so there is nothing to evaluate and no index work to do
_LISTING_ONLY = ("collectonly", "showfixtures", "show_fixtures_per_test", "setupplan", "setuponly")


def register_controller(
    config: pytest.Config, runner: ProcessRunner, output: StdoutGuard | None = None
) -> None:
    """Register the controller's hooks (and the xdist hand-off when xdist is loaded).

    ``output`` watches pytest's standard output (:mod:`.output`): a run is recorded
    only when its report went out.
    """
    if any(config.getoption(name, False) for name in _LISTING_ONLY):
        if output is not None:
            output.restore()  # nothing is recorded: pytest's own stream will do
        if config.getoption("setuponly", False) or config.getoption("setupplan", False):
            # these look like a run (set-ups happen, the exit status is 0) and call no
            # test: a gate asked for must not seem to have passed
            config.pluginmanager.register(_SetupOnlyNotice(runner.plan), CONTROLLER_NAME)
        return
    config.pluginmanager.register(GrooveController(runner, output), CONTROLLER_NAME)
    interrupt.arm()
    if config.pluginmanager.hasplugin("xdist"):
        from pytest_groove.plugin.xdist import XDIST_HANDOFF_NAME, XdistHandOff

        config.pluginmanager.register(XdistHandOff(runner), XDIST_HANDOFF_NAME)
    if config.getoption("xmlpath", None):
        config.pluginmanager.register(JUnitClassName(runner), JUNIT_NAMES_NAME)


class _SetupOnlyNotice:
    """Under ``--setup-only`` / ``--setup-plan``: says that an asked-for gate did not run."""

    def __init__(self, plan: EvalPlan) -> None:
        self.plan = plan

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        asked = gates_asked(self.plan)
        if asked:
            terminalreporter.write_line(
                f"{PROG}: WARNING: --setup-only and --setup-plan call no test: "
                f"{' and '.join(asked)} did NOT run"
            )


# --------------------------------------------------------------------------- finish


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
    #: why the gate failed the session (None: it did not), for reports that list tests
    gate_failure: str | None = None


def finish(
    plan: EvalPlan,
    evaluation: Evaluation | None,
    results: Sequence[QueryResult],
    *,
    interrupted: bool,
    exitstatus: int,
    color: bool = False,
    stop: Stop | None = None,
    unscored: int = 0,
) -> Finished:
    """Evaluate what ran: the summary, the stderr lines and the session's exit status.

    ``evaluation`` is None when it never began (no golden query was selected);
    ``results`` are in golden order (queries that did not run are left out);
    ``interrupted``: Ctrl-C was seen, or pytest's exit status says the run broke;
    ``stop``: the golden queries stopped at a line every later one would repeat;
    ``unscored``: golden items that ran and failed without a score.
    """
    if stop is not None:
        return _stopped(plan, stop, exitstatus)
    if evaluation is None or not results:
        return Finished(nothing_ran_line(plan, unscored) + no_report_line(plan), (), exitstatus)
    plan = evaluation.plan
    stderr = [f"{PROG}: {spell_flags(note, 'pytest')}" for note in plan.notes]
    complete = len(results) == len(plan.golden.queries) and not interrupted
    try:
        with limits_as_errors():
            outcome = finish_evaluation(
                evaluation, results, record=complete, staged=True, color=color, door="pytest"
            )
    except GrooveError as exc:
        # an indexing command it names is this run's (a damaged index met at the end)
        stderr.append(f"ERROR: {usage_message(exc, plan)}")
        return Finished(None, tuple(stderr), pytest.ExitCode.USAGE_ERROR)
    stderr += _outcome_messages(outcome)
    failed = None
    if outcome.gate_failures:
        failed = (
            outcome.gate_message or f"retrieval gate failed: {', '.join(outcome.gate_failures)}"
        )
    summary = _summary(outcome, interrupted)
    if not complete:
        summary += _gate_dropped_line(plan, len(results), interrupted)
    return Finished(
        summary,
        tuple(stderr),
        _exit_status(outcome, exitstatus),
        pending=outcome if outcome.staged is not None else None,
        gate_failure=failed,
    )


def _stopped(plan: EvalPlan, stop: Stop, exitstatus: int) -> Finished:
    """The end of a run whose golden queries stopped: the one line, and nothing
    recorded, gated or reported -- with or without xdist (whose workers each stop on
    their own).  The results of the queries before the stop are no subset anyone
    chose, so they are not summed up as one."""
    if stop.begin:
        # as a single process that cannot open its retriever stops: one ERROR: line
        summary = no_report_line(plan, "the run stopped") or None
        return Finished(summary, (f"ERROR: {stop.reason}",), pytest.ExitCode.USAGE_ERROR)
    # the stopped item failed: a session that says otherwise is not to be believed
    status = pytest.ExitCode.TESTS_FAILED if exitstatus == pytest.ExitCode.OK else exitstatus
    return Finished(stopped_line(plan, stop) + no_report_line(plan, "the run stopped"), (), status)


def _gate_dropped_line(plan: EvalPlan, ran: int, interrupted: bool) -> str:
    """Said when a gate was asked for and the run is not whole (a skip, a deselect, -x):
    its exit status would otherwise read as "retrieval passed its gate"."""
    asked = gates_asked(plan)
    if not asked:
        return ""
    total = len(plan.golden.queries)
    why = (
        "the session stopped early"
        if interrupted or ran == total
        else f"only {ran} of {total} golden queries ran"
    )
    return (
        f"{PROG}: WARNING: {why}: {' and '.join(asked)} did NOT run (only a whole "
        "run is gated; a skipped or deselected golden item makes a subset)\n"
    )


def _summary(outcome: EvalOutcome, interrupted: bool) -> str:
    summary = outcome.text_report
    if interrupted:
        summary += f"{PROG}: the session was interrupted, so this run is not recorded.\n"
    regressed = [f for f in outcome.gate_failures if f not in outcome.floor_failures]
    if regressed:
        threshold = outcome.comparison.limits.describe()
        # metrics that dropped, then the answers deleted since the baseline
        dropped = [f for f in regressed if f in outcome.comparison.regressions]
        parts = [f"{', '.join(dropped)} dropped by more than {threshold}"] if dropped else []
        parts += [f for f in regressed if f not in dropped]
        summary += f"{PROG}: regression gate FAILED ({'; '.join(parts)}); exit status 1\n"
    if outcome.floor_failures:
        summary += (
            f"{PROG}: floor gate FAILED ({', '.join(outcome.floor_failures)}); exit status 1\n"
        )
    return summary


def _outcome_messages(outcome: EvalOutcome) -> list[str]:
    # the outcome's messages are spelled for pytest already (finish_evaluation's door)
    lines = [f"{PROG}: warning: {w}" for w in outcome.warnings]
    lines += [f"{PROG}: {note}" for note in outcome.notes]
    if outcome.findings_warning:
        lines.append(outcome.findings_warning)
    if outcome.gate_message:
        lines.append(outcome.gate_message)
    if outcome.error is not None:
        lines.append(f"ERROR: {outcome.error}")
    return lines


def _exit_status(outcome: EvalOutcome, exitstatus: int) -> int:
    if outcome.error is not None:
        return pytest.ExitCode.USAGE_ERROR
    if outcome.gate_failures and exitstatus == pytest.ExitCode.OK:
        return pytest.ExitCode.TESTS_FAILED
    return exitstatus


# --------------------------------------------------------------------------- hooks


def _use_color(config: pytest.Config) -> bool:
    with contextlib.suppress(Exception):
        return bool(config.get_terminal_writer().hasmarkup)
    return False


def _built_here(runner: ProcessRunner) -> bool:
    """Whether this process built a retriever (unnamed: to learn its name)."""
    searcher = runner.searcher
    return isinstance(searcher, RetrieverSearcher) and searcher.built


class GrooveController:
    """The controller's (or single process's) hooks: prepare, gather, finish."""

    def __init__(self, runner: ProcessRunner, output: StdoutGuard | None = None) -> None:
        self.runner = runner
        self.output = output
        #: results seen on reports, by item name
        self.results: dict[str, QueryResult] = {}
        self.interrupted = False
        #: the first golden item that reported its process's golden queries stopped
        self.stop: Stop | None = None
        #: golden items that ran and failed without a result
        self.unscored = 0
        #: node ids of the items (of any kind) that ran to their teardown
        self.ran: set[str] = set()
        self.finished: Finished | None = None
        #: messages for stderr not yet written
        self.pending_stderr: list[str] = []
        #: the pytest session, to change its exit status after the summary
        self.pytest_session: pytest.Session | None = None
        #: what the workers' searches learned, kept until this process has a searcher
        #: (one whose workers begin themselves gets it at the end)
        self.worker_notes: list[dict[str, Any]] = []
        #: the retriever's name as the workers that began themselves built it
        self.worker_retriever: str | None = None

    def ordered_results(self) -> list[QueryResult]:
        """Results in golden order (queries that did not run are left out)."""
        return [self.results[name] for name in self.runner.names if name in self.results]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Begin only when a golden query was selected, so that `pytest -m "not groove"`
        # in a project with groove_kb set does no index work.  Items collected here are
        # searched here (an xdist controller collects none): the retriever is built now.
        if any(isinstance(item, GrooveQueryItem) for item in session.items):
            self.runner.begin(searches=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.ran.add(report.nodeid)  # any item, ours or not: it ran to its end
        if report.when != "call":
            return
        self._note_stop(getattr(report, REPORT_STOPPED, None))
        notes = getattr(report, REPORT_NOTES, None)
        if isinstance(notes, dict):
            # a worker's retriever kind and warnings, for the checks at the end
            self.worker_notes.append(notes)
        name = getattr(report, REPORT_RETRIEVER, None)
        if self.worker_retriever is None and isinstance(name, str):
            self.worker_retriever = name
        raw = getattr(report, REPORT_RESULT, None)
        name = getattr(report, REPORT_NAME, None)
        if raw is None and isinstance(name, str) and report.failed:
            self.unscored += 1
        if raw is None or not isinstance(name, str):
            return
        try:
            self.results[name] = QueryResult.from_json(raw)
        except RecordFormatError:
            return

    def _begin_named(self) -> Stop | None:
        """Begin now when the workers began themselves and some scored a query (a
        usage error doing so -- the history refused -- stops the run as one would)."""
        runner, name = self.runner, self.worker_retriever
        if not runner.begins_in_workers or runner.evaluation is not None or name is None:
            return None
        if self.stop is not None or not self.results:
            return None
        try:
            runner.begin_named(name)
        except pytest.UsageError as exc:
            return Stop(str(exc), begin=True)
        return None

    def _note_stop(self, raw: Any) -> None:
        """Keep the first stop a report carries (from this process or an xdist worker);
        a worker that could not begin outweighs a stop found by searching."""
        if not isinstance(raw, dict) or not isinstance(raw.get("line"), str):
            return
        stop = Stop(raw["line"], begin=raw.get("begin") is True)
        if self.stop is None or (stop.begin and not self.stop.begin):
            self.stop = stop

    def _broken(self, session: pytest.Session, exitstatus: int) -> bool:
        """The session did not end as a whole run does: an internal or usage error, or
        a stop (-x, --maxfail, --sw; xdist ends those "interrupted") before some item
        ran, so the rest of the session is missing whatever the golden queries did.
        Stopped after the last item ran, nothing is missing."""
        if exitstatus in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
            return True
        stopped = bool(session.shouldfail or session.shouldstop)
        if not stopped and exitstatus != pytest.ExitCode.INTERRUPTED:
            return False
        return len(self.ran) < session.testscollected

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        if type(excinfo.value).__module__.startswith("xdist."):
            return  # xdist's own stop after -x / --maxfail: judged by what ran (_broken)
        self.interrupted = True

    @pytest.hookimpl(tryfirst=True)  # before the JUnit writer writes its file
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.finished is not None:
            return
        self.pytest_session = session
        runner = self.runner
        stop = self._begin_named() or self.stop
        if runner.searcher is not None:
            for notes in self.worker_notes:
                runner.searcher.add_search_notes(notes)
        if stop is not None and stop.begin:
            # a worker could not build the retriever that another process of the session
            # did build (this controller, or a worker whose results came in): say so
            if _built_here(runner):
                stop = replace(stop, line=stop.line + BUILT_HERE_HINT)
            elif self.results and (
                runner.begins_in_workers or isinstance(runner.searcher, RetrieverSearcher)
            ):
                stop = replace(stop, line=stop.line + BUILT_ELSEWHERE_HINT)
        self.finished = finish(
            runner.plan,
            runner.evaluation,
            self.ordered_results(),
            interrupted=self.interrupted or self._broken(session, exitstatus),
            exitstatus=exitstatus,
            color=_use_color(runner.config),
            stop=stop,
            unscored=self.unscored,
        )
        self.pending_stderr.extend(self.finished.stderr)
        if self.finished.exitstatus != exitstatus:
            session.exitstatus = self.finished.exitstatus
        junit = runner.config.pluginmanager.get_plugin(JUNIT_NAMES_NAME)
        if isinstance(junit, JUnitClassName) and self.finished.gate_failure is not None:
            junit.gate_failed(self.finished.gate_failure)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = None if self.finished is None else self.finished.summary
        if summary is not None:
            terminalreporter.write_sep("=", "groove retrieval quality")
            for line in summary.rstrip("\n").split("\n"):
                terminalreporter.write_line(line)
            only = self.runner.golden_only_line()
            if only is not None and self.runner.config.getoption("verbose", 0) < 0:
                # -q prints no header, where this line is: the project's own tests
                # not running must not go unsaid
                terminalreporter.write_line(only)
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
        interrupt.note_run("the run was recorded" if error is None else "the run was not recorded")
        if error is not None:
            self.pending_stderr.append(f"ERROR: {error}")
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

    def __init__(self, runner: ProcessRunner) -> None:
        self.runner = runner
        self._prefix: str | None = None

    def _golden_nodeid(self) -> str:
        if self._prefix is None:
            config = self.runner.config
            try:
                relative = self.runner.golden_path.relative_to(config.rootpath).as_posix()
            except ValueError:
                relative = self.runner.golden_path.as_posix()
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

            xml = self.runner.config.stash.get(xml_key, None)
            if xml is not None:
                xml.node_reporter(report).add_attribute("classname", junit_classname(golden))
        except (ImportError, AttributeError):
            return  # another pytest: keep its own classname

    def gate_failed(self, message: str) -> None:
        """Put the failed gate in the JUnit file as one failing test case, ``<golden
        file>::groove-gate``: a CI page that counts failed test cases must not show
        green for a session the gate failed (exit status 1)."""
        golden = self._golden_nodeid()
        nodeid = f"{golden}::{GATE_CASE}"
        location = (golden, 0, GATE_CASE)
        reports = [
            pytest.TestReport(nodeid, location, {}, "failed", message, "call"),
            pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"),
        ]
        try:
            from _pytest.junitxml import xml_key

            xml = self.runner.config.stash.get(xml_key, None)
            if xml is None:
                return
            for report in reports:
                # to the writer alone (for the terminal and other plugins no test ran),
                # with the classname the golden items have
                self.pytest_runtest_logreport(report)
                xml.pytest_runtest_logreport(report)
        except (ImportError, AttributeError):
            return  # another pytest's writer: the exit status still says it
