"""The plugin's per-process runner: the plan, the searcher, one query at a time.

One :class:`ProcessRunner` per pytest process is created by :func:`activate` (called
from ``pytest_configure`` when a knowledge base is configured) and registered as a
plugin object with the hooks every process needs whatever its role: the report
header, the tag-marker check, putting each query's result on its report, closing the
searcher.  Items reach it through the small :class:`~pytest_groove.plugin.items.
QueryRunner` interface they are given at collection.

The plan (options, config, golden file) is made at configure time, so a bad config or
golden file stops the run with one usage-error line (exit 4).  The evaluation begins
(:func:`~pytest_groove.evaluation.lifecycle.begin_evaluation`: index, golden check,
fingerprint, history, baseline) in the controller or single process when the
controller asks (``plugin/controller.py``); an xdist worker is handed the fingerprint
and the baseline instead (``plugin/xdist.py``) and opens the index the controller
brought up to date.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_groove.engine.names import check_config_names
from pytest_groove.engine.searcher import (
    RetrieverSearcher,
    open_engine_searcher,
)
from pytest_groove.errors import (
    GrooveError,
    IndexCorrupt,
    IndexMissing,
    StopsTheRun,
    spell_flags,
)
from pytest_groove.evaluation.golden.file import node_ids
from pytest_groove.evaluation.lifecycle import Evaluation, begin_evaluation
from pytest_groove.evaluation.plan import EvalPlan, plan_evaluation
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.evaluation.searched import EvaluatedSearcher
from pytest_groove.files.paths import resolve_path
from pytest_groove.files.resource_limits import ResourceLimit, limits_as_errors
from pytest_groove.kb.progress import ProgressTo
from pytest_groove.plugin.collection import (
    GOLDEN_ONLY_KEY,
    GoldenCollector,
    marker_names,
    refuse_tags_naming_foreign_markers,
    register_markers,
    route_golden,
)
from pytest_groove.plugin.items import GrooveQueryItem
from pytest_groove.plugin.options import PluginOptions
from pytest_groove.plugin.retriever import plugin_retriever
from pytest_groove.scoring.records import GoldenQuery, GoldenSet

if TYPE_CHECKING:
    from pytest_groove.embed.base import Embedder
    from pytest_groove.search.retrievers.external import ExternalRetriever
    from pytest_groove.settings.options import RunOptions

RUNNER_NAME = "groove-runner"
COLLECTOR_NAME = "groove-collector"
#: the name every message of the plugin starts with
PROG = "groove"
#: report attribute carrying a query's result (JSON-able, so xdist can ship it)
REPORT_RESULT = "groove_result"
#: report attribute carrying the item's name (the key results are stored under)
REPORT_NAME = "groove_name"
#: report attribute set when the golden queries of the item's process had stopped: a
#: dict (JSON-able, so xdist can ship it) with the ``line`` that stopped them and
#: whether the process could not ``begin`` to search (its retriever or index failed)
REPORT_STOPPED = "groove_stopped"
#: report attribute on a worker's golden item: what its searches learned that the
#: controller's end-of-run checks need (``EvaluatedSearcher.search_notes``: the retriever's kind,
#: its warnings), set when it changed since the worker's last report
REPORT_NOTES = "groove_search_notes"
#: report attribute on a worker's golden item when the worker began the evaluation
#: itself (:attr:`ProcessRunner.begins_in_workers`): its retriever's name, which the
#: controller -- that never builds the retriever -- records the run under
REPORT_RETRIEVER = "groove_retriever_name"
#: where the active plugin keeps its runner
RUNNER_KEY = pytest.StashKey["ProcessRunner"]()

#: golden queries embedded together at a time (see ProcessRunner._embed_ahead)
EMBED_AHEAD = 64


def pytest_message(exc: GrooveError) -> str:
    """A library message with options spelled the pytest way (``--groove-<name>``)."""
    return exc.message_for("pytest")


def usage_message(exc: GrooveError, plan: EvalPlan | None = None) -> str:
    """A GrooveError's line for pytest; with the ``plan``, an indexing command it names
    is this run's (KB and model)."""
    message = pytest_message(exc)
    if plan is not None:
        from pytest_groove.engine.index_command import with_index_commands

        message = with_index_commands(message, plan.kb, plan.options)
    return message


def usage_error(exc: GrooveError, plan: EvalPlan | None = None) -> pytest.UsageError:
    """A GrooveError as the usage error pytest prints as one ``ERROR:`` line (exit 4)."""
    return pytest.UsageError(usage_message(exc, plan))


def activate(
    config: pytest.Config, options: PluginOptions, golden: GoldenSet | None = None
) -> ProcessRunner:
    """Create the runner, route the golden file into collection, register markers
    (``golden``: the set the xdist controller parsed and handed this worker)."""
    try:
        runner = ProcessRunner(config, options, golden)
    except GrooveError as exc:
        raise usage_error(exc) from None
    config.stash[RUNNER_KEY] = runner
    # registered now, from this plugin's first-run configure: cleanups run last-in
    # first-out, so the collector is given back after pytest's own last collections
    # (which skip what is frozen) rather than before them
    config.add_cleanup(runner.thaw_collector)
    config.pluginmanager.register(runner, RUNNER_NAME)
    config.pluginmanager.register(
        GoldenCollector(runner.golden_path, runner.plan.golden, runner), COLLECTOR_NAME
    )
    register_markers(config, runner.plan.golden)
    route_golden(config, options.kb_from_cli, runner.golden_path)
    return runner


def _check_index_exists(plan: EvalPlan, embedder_name: str) -> None:
    """``--groove-no-reindex``: the index must be there already."""
    from pytest_groove.engine.index_command import index_command
    from pytest_groove.engine.indexing import index_dir_for
    from pytest_groove.kb.store.database import DB_FILE_NAME

    db = index_dir_for(plan.kb, plan.settings, embedder_name) / DB_FILE_NAME
    if not db.is_file():
        raise IndexMissing(db, index_command(plan.kb, plan.options), no_reindex=True)


def _build(searcher: EvaluatedSearcher | None) -> None:
    """Build now a retriever known by its name alone, in a process about to search."""
    if isinstance(searcher, RetrieverSearcher):
        searcher.build()


def _note_engine_options(runner: ProcessRunner, run: RunOptions) -> None:
    """What the hook's retriever will not use: engine options, ``[retriever]`` keys and
    ``$GROOVE_RETRIEVER_TIMEOUT`` (the plan notes a spec's)."""
    if run.retriever is not None:
        return
    for note in runner.plan.retriever_notes:
        runner.write_line(f"{PROG}: {spell_flags(note, 'pytest')}")


def _retriever_searcher(
    runner: ProcessRunner, run: RunOptions, *, quiet: bool = False
) -> EvaluatedSearcher | None:
    """The retriever a name, ``--groove-retriever`` or the hook gives, None without one
    (``quiet``: the notes on engine options were said already)."""
    config = runner.config
    if run.retriever_name is not None and (
        run.retriever is not None or config.hook.pytest_groove_retriever.get_hookimpls()
    ):
        # named: built where it searches, once per process (an xdist controller
        # never builds it -- a retriever holding a lock stays usable under -n)
        def build() -> ExternalRetriever:
            built = plugin_retriever(config, run.retriever, runner.kb, run)
            if built is None:
                raise GrooveError(
                    "the pytest_groove_retriever hook returned no retriever, but "
                    "--groove-retriever-name names one: return a retriever, or drop the name"
                )
            return built

        if not quiet:
            _note_engine_options(runner, run)
        return RetrieverSearcher(build, runner.kb, runner.plan.settings, name=run.retriever_name)
    retriever = plugin_retriever(config, run.retriever, runner.kb, run)
    if retriever is not None:
        _note_engine_options(runner, run)
        return RetrieverSearcher(retriever, runner.kb, runner.plan.settings)
    return None


def _engine_searcher(runner: ProcessRunner, *, quiet: bool) -> EvaluatedSearcher:
    """The built-in engine over the index, brought up to date first unless ``quiet`` (a
    worker) or ``--groove-no-reindex``."""
    from pytest_groove.embed.registry import get_embedder

    config, plan = runner.config, runner.plan
    run, settings = plan.options, plan.settings
    embedder = runner.hook_embedder() or get_embedder(settings.index.model)
    if not quiet and run.retriever is None and config.hook.pytest_groove_retriever.get_hookimpls():
        # pluggy's "no answer", but whoever wrote the hook meant to be measured:
        # say whose numbers these are (a forgotten return would pass unseen)
        from pytest_groove.plugin.retriever import hook_files

        runner.write_line(
            f"{PROG}: the pytest_groove_retriever hook in {hook_files(config)} "
            f"returned None: measuring the built-in engine (model "
            f"{embedder.name}) instead; return a retriever to measure yours"
        )
    reindex = not quiet and not run.no_reindex
    if not reindex and not quiet:
        _check_index_exists(plan, embedder.name)
    searcher = open_engine_searcher(
        runner.kb,
        settings,
        reindex=reindex,
        embedder=embedder,
        progress=False if quiet else progress_to(runner.config),
        log=None
        if quiet
        else lambda msg: runner.write_line(f"{PROG}: {spell_flags(msg, 'pytest')}"),
    )
    report = searcher.engine.index_report
    if report is not None and (report.added or report.changed or report.renamed or report.removed):
        runner.write_line(f"{PROG}: {report.summary()}")
    return searcher


def write_line(config: pytest.Config, text: str) -> None:
    """One line on pytest's terminal (standard error without a terminal reporter)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text)
    else:
        sys.stderr.write(text + "\n")


def progress_to(config: pytest.Config) -> ProgressTo:
    """Where the indexer's progress goes: the bar when standard error is a terminal,
    else a line now and then through the terminal reporter, outside any capture."""
    if sys.stderr is not None and sys.stderr.isatty():
        return None
    return functools.partial(write_uncaptured, config)


def write_uncaptured(config: pytest.Config, text: str) -> None:
    """``groove: text`` on the terminal even while pytest captures output."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    suspended = capture.global_and_fixture_disabled() if capture is not None else None
    with suspended if suspended is not None else contextlib.nullcontext():
        write_line(config, f"{PROG}: {text}")


def _plan(config: pytest.Config, options: PluginOptions, golden: GoldenSet | None) -> EvalPlan:
    """The process's plan (``golden``: the set an xdist worker was handed, else None)."""
    kb = resolve_path(options.kb, "knowledge base", "--groove-kb / groove_kb")
    if not kb.is_dir():
        raise GrooveError(f"knowledge base {kb} is not a directory (check --groove-kb / groove_kb)")
    # a hook's embedder or retriever stands in for the names (the hook is asked
    # only when the evaluation begins), so those are checked only without one
    embedder_hook = bool(config.hook.pytest_groove_embedder.get_hookimpls())
    retriever_hook = bool(config.hook.pytest_groove_retriever.get_hookimpls())
    plan = plan_evaluation(
        kb,
        options.run,
        prog=PROG,
        check_model=not embedder_hook,
        retriever_hook=retriever_hook,
        golden=golden,
    )
    if options.run.retriever is None and not retriever_hook:
        check_config_names(plan.settings, model=not embedder_hook)
    return plan


class ProcessRunner:
    """Per-process state of an active plugin; also a pytest plugin object."""

    def __init__(
        self, config: pytest.Config, options: PluginOptions, golden: GoldenSet | None = None
    ) -> None:
        self.config = config
        self.options = options
        #: the markers registered before this plugin's (first) ``pytest_configure``: the
        #: ini file's own; plugins and conftest files register theirs later
        self.markers_before = marker_names(config.getini("markers"))
        self.plan: EvalPlan = _plan(config, options, golden)
        retriever_hook = bool(config.hook.pytest_groove_retriever.get_hookimpls())
        self.golden_path = resolve_path(
            Path(self.plan.golden.path), "golden file", "--groove-golden", require_utf8=False
        )
        self.names: list[str] = node_ids(self.plan.golden.queries)
        self.searcher: EvaluatedSearcher | None = None
        #: the begun evaluation (controller: :meth:`begin`; worker: handed over)
        self.evaluation: Evaluation | None = None
        #: how a worker's evaluation is made at its first query (None: begin here)
        self.worker_evaluation: Callable[[EvaluatedSearcher], Evaluation] | None = None
        self._embedded: set[str] = set()
        #: whether :meth:`_open_searcher` froze the collector (undone at the config's cleanup)
        self._collector_frozen = False
        #: the one line that stopped the golden queries in this process (a service
        #: down, hits no KB file holds): every later golden item is skipped with it
        self.stopped: str | None = None
        #: the golden item that failed with it (named by the skips of the later ones)
        self.stopped_at: str | None = None
        #: whether that line is why this process could not begin to search (its
        #: retriever or index failed to open): under xdist, a worker's usage error
        self.stopped_at_begin = False
        #: the search notes last put on a report (a worker: see REPORT_NOTES)
        self._notes_sent: dict[str, Any] = {}
        #: whether this process collected golden queries only (set at collection's end):
        #: only then may the collector be frozen -- see :meth:`_open_searcher`
        self._only_golden_items = False
        #: an xdist controller whose retriever is named by its spec alone: it never
        #: builds it (importing a user's module may load a model, or lock a store);
        #: each worker begins the evaluation itself, the controller at the end
        #: (:meth:`begin_named`) under the name the workers report
        self.begins_in_workers = False
        #: standard error as it was before pytest captured it (the hang watchdog's line)
        self._stderr_fd: int | None = None
        if options.run.retriever is not None or retriever_hook:
            self._stderr_fd = _stall_lines_past_capture()

    # ------------------------------------------------------------------ the searcher

    @property
    def kb(self) -> Path:
        return self.plan.kb

    @property
    def k_values(self) -> tuple[int, ...]:
        return self.plan.k_values

    @property
    def grouped_by_document(self) -> bool:
        """Whether the search grouped its hits by document, as the run records it."""
        evaluation = self.evaluation
        return evaluation is not None and bool(evaluation.fingerprint.document_first)

    def write_line(self, text: str) -> None:
        write_line(self.config, text)

    def hook_embedder(self) -> Embedder | None:
        """The ``pytest_groove_embedder`` hook's embedder, None without one."""
        embedder: Embedder | None = self.config.hook.pytest_groove_embedder(config=self.config)
        return embedder

    def _open_searcher(self, *, quiet: bool) -> EvaluatedSearcher:
        """The configured retriever, else the built-in engine.

        The controller (or single process) brings the index up to date first unless
        ``--groove-no-reindex``; a worker (``quiet``) opens the index as the controller
        left it, with no log and no progress bar (its output would interleave).
        """
        if self._only_golden_items and not self._collector_frozen and gc.get_freeze_count() == 0:
            # what is alive now (pytest, the plugins, the collected items) outlives the
            # evaluation: while it loads a model and reads the index, the collector's
            # full passes skip it (each walks every tracked object; at the README's
            # run they were a tenth of its time); given back by thaw_collector.  Never
            # beside other tests: a cycle their modules made at import and a test then
            # drops must still be collected when that test calls gc.collect()
            gc.freeze()
            self._collector_frozen = True
        searcher = _retriever_searcher(self, self.plan.options)
        return searcher if searcher is not None else _engine_searcher(self, quiet=quiet)

    def begin(self, *, searches: bool = False) -> Evaluation:
        """Controller or single process: open the searcher and begin the evaluation
        (index, golden check, fingerprint, history, baseline).  Idempotent.

        ``searches``: this process searches too (no xdist), so a retriever known by
        its name alone is built now -- one that cannot be is a usage error before any
        item, as an unnamed one is, not one identical failure per golden query.
        """
        try:
            with limits_as_errors():
                if self.evaluation is None:
                    self.searcher = self._open_searcher(quiet=False)
                    self.evaluation = begin_evaluation(self.plan, self.searcher)
                if searches:
                    _build(self.searcher)
        except GrooveError as exc:
            raise usage_error(exc, self.plan) from None
        assert self.evaluation is not None
        return self.evaluation

    def begin_named(self, name: str) -> Evaluation:
        """An xdist controller that left its retriever to the workers: begin now, the
        retriever known by the ``name`` they built it under (never built here)."""
        from dataclasses import replace

        plan = self.plan
        run = replace(plan.options, retriever_name=name)
        try:
            with limits_as_errors():
                self.searcher = _retriever_searcher(self, run, quiet=True)
                assert self.searcher is not None
                self.evaluation = begin_evaluation(plan, self.searcher)
        except GrooveError as exc:
            raise usage_error(exc, plan) from None
        return self.evaluation

    def _ready(self) -> Evaluation:
        if self.evaluation is not None:
            return self.evaluation
        if self.worker_evaluation is None:
            return self.begin(searches=True)
        from pytest_groove.plugin.worker_cores import share_cores_between_workers

        share_cores_between_workers()  # before the engine's libraries load
        try:
            with limits_as_errors():
                self.searcher = self._open_searcher(quiet=True)
                _build(self.searcher)
                self.evaluation = self.worker_evaluation(self.searcher)
        except GrooveError as exc:
            # an xdist worker whose retriever (or index) cannot be opened: every golden
            # item it is handed would fail the same way, so this one fails with the line
            # and the rest are skipped (items.py); the controller ends the session with
            # it as the usage error a single process stops with
            self.stopped_at_begin = True
            raise StopsTheRun(f"{PROG}: {usage_message(exc, self.plan)}") from None
        return self.evaluation

    # ------------------------------------------------------------------ per query

    def run_query(self, position: int, query: GoldenQuery) -> QueryResult:
        """Search one golden query and score it (the items' :class:`QueryRunner`)."""
        evaluation = self._ready()
        self._embed_ahead(position, query)
        try:
            with limits_as_errors():
                return evaluation.run_query(query)
        except StopsTheRun as exc:
            # spelled for pytest here; the item stops the session (items.py)
            raise StopsTheRun(f"{PROG}: {pytest_message(exc)}") from None
        except (IndexCorrupt, ResourceLimit) as exc:
            # every later search meets the same: one line naming this run's command
            raise StopsTheRun(f"{PROG}: {usage_message(exc, self.plan)}") from None

    def _embed_ahead(self, position: int, query: GoldenQuery) -> None:
        """Embed this query with the next golden queries in one embedder call.

        One call per query pays the model's fixed cost per call every time; one call
        for the whole set would, under xdist, embed in every worker the queries the
        other workers run.  A window of the queries that follow is the middle way
        (items run in golden order, and xdist hands them out in runs).
        """
        if query.query in self._embedded or self.searcher is None:
            return
        queries = self.plan.golden.queries
        window = [q.query for q in queries[position : position + EMBED_AHEAD]]
        self.searcher.prepare_queries([query.query, *window])
        self._embedded.update(window)
        self._embedded.add(query.query)

    def regression(self, name: str, position: int, result: QueryResult) -> str | None:
        """The headline of an item's regression failure, or None when it did not regress.

        Only under ``--groove-fail-on-regression`` (and never with ``--groove-no-diff`` /
        ``--groove-no-history``, where there is nothing to compare with).
        """
        evaluation = self._ready()
        if not evaluation.regressed_metrics(position, result):
            return None
        # the query's verdict: the same metrics, values and causes the reports show
        verdict = evaluation.query_verdict(position, result)
        parts = [f"{m.label} {m.before:.2f} -> {m.after:.2f}" for m in verdict.regressed]
        from pytest_groove.evaluation.reports.explain_text import causes

        return (
            f"golden query {name!r} regressed by more than "
            f"{self.plan.thresholds.describe()} against the "
            f"baseline run: {', '.join(parts)}" + "".join(f"; {c}" for c in causes(verdict))
        )

    def known_miss(self, position: int, result: QueryResult) -> str | None:
        """Why a query that missed in the accepted baseline too is an expected failure
        (None: it is not one, or ``--groove-strict`` fails it)."""
        if not self._ready().known_miss(position, result):
            return None
        if self.plan.options.accept:
            return "accepted as a known miss (--groove-accept)"
        return "known miss: it missed in the accepted baseline too (--groove-strict fails it)"

    def miss_causes(self, position: int, result: QueryResult) -> list[str]:
        """Why a missed query missed, as the reports say it (what displaced the answer,
        an expected document removed or renamed since the baseline run)."""
        from pytest_groove.evaluation.reports.explain_text import causes

        return causes(self._ready().query_verdict(position, result))

    def junit_properties(self, result: QueryResult) -> list[tuple[str, object]]:
        """The query's metrics as JUnit ``<properties>`` (only with the ini switch)."""
        if not self.plan.options.junit_properties:
            return []
        from pytest_groove.scoring.metric_table import junit_properties

        return [*junit_properties(result.metrics, self.plan.k_values)]

    # ------------------------------------------------------------------ hooks (every role)

    @pytest.hookimpl(tryfirst=True)  # before the controller's, which may begin the evaluation
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # an xdist controller collects nothing and runs no test: nothing to protect
        self._only_golden_items = all(isinstance(item, GrooveQueryItem) for item in session.items)

    def pytest_sessionstart(self) -> None:
        # after every plugin's and conftest's pytest_configure: their markers are known
        try:
            refuse_tags_naming_foreign_markers(self.config, self.plan.golden, self.markers_before)
        except GrooveError as exc:
            raise usage_error(exc) from None

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        run = self.plan.options
        # named, not loaded: building the retriever is the evaluation's business
        if run.retriever is not None:
            engine = f"custom retriever {run.retriever_name or run.retriever}"
        elif config.hook.pytest_groove_retriever.get_hookimpls():
            named = f" ({run.retriever_name})" if run.retriever_name else ""
            engine = f"custom retriever from pytest_groove_retriever{named}"
        elif config.hook.pytest_groove_embedder.get_hookimpls():
            # not called here: building an embedder can be expensive
            engine = "embedder from pytest_groove_embedder"
        else:
            engine = f"model {self.plan.settings.index.model}"
        lines = [
            f"groove: kb {self.kb}, golden {self.golden_path.name} "
            f"({len(self.plan.golden.queries)} queries), {engine}"
        ]
        only = self.golden_only_line()
        if only is not None:
            lines.append(only)
        try:
            self.golden_path.relative_to(config.rootpath)
        except ValueError:
            # pytest names a file outside its rootdir by nothing but "::<id>" (an empty
            # JUnit classname, node ids no IDE can run): say why, and the way out
            lines.append(
                f"groove: the golden file {self.golden_path} is outside pytest's rootdir "
                f"({config.rootpath}), so its items are named `::<id>`; run pytest from a "
                "folder above both (or pass --rootdir) for full node ids"
            )
        return lines

    def golden_only_line(self) -> str | None:
        """Said when ``--groove-kb`` without test paths replaced the project's own tests
        (None: it did not).  In the header, and under ``-q`` (no header) in the summary."""
        config = self.config
        if not config.stash.get(GOLDEN_ONLY_KEY, False):
            return None
        try:
            kb_arg = os.path.relpath(self.kb, config.invocation_params.dir)
        except ValueError:  # another drive on Windows
            kb_arg = str(self.kb)
        return (
            "groove: running only the golden queries (no test paths given); to run your "
            f"own tests as well, name them: pytest --groove-kb {kb_arg} {_test_paths(config)}"
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if isinstance(item, GrooveQueryItem) and call.when == "call":
            setattr(report, REPORT_NAME, item.name)
            if self.stopped is not None:
                stop = {"line": self.stopped, "begin": self.stopped_at_begin}
                setattr(report, REPORT_STOPPED, stop)
            if item.groove_result is not None:
                setattr(report, REPORT_RESULT, item.groove_result.to_json())
            evaluation = self.evaluation
            if self.worker_evaluation is not None and evaluation is not None:
                # a worker that began itself: the name the controller records under
                setattr(report, REPORT_RETRIEVER, evaluation.fingerprint.retriever)
            if self.worker_evaluation is not None and self.searcher is not None:
                # the controller never searches: it warns and advises from these
                notes = self.searcher.search_notes()
                if notes and notes != self._notes_sent:
                    setattr(report, REPORT_NOTES, notes)
                    self._notes_sent = notes
        return report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.searcher is not None:
            self.searcher.close()
            self.searcher = None
        if self._stderr_fd is not None:
            from pytest_groove.search.retrievers import watchdog

            watchdog.announce = watchdog.DEFAULT_ANNOUNCE
            with contextlib.suppress(OSError):
                os.close(self._stderr_fd)
            self._stderr_fd = None

    def thaw_collector(self) -> None:
        """Give the objects frozen at :meth:`_open_searcher` back to the collector."""
        if self._collector_frozen:
            gc.unfreeze()
            self._collector_frozen = False


def _stall_lines_past_capture() -> int | None:
    """Point the hang watchdog's line (``search/retrievers/watchdog.py``) at standard
    error as it is now -- at configure time, before pytest captures it around each
    test -- so a hanging retriever is told of on the terminal, not in a captured
    section nobody sees until it ends.  The descriptor it writes to (None: none)."""
    from pytest_groove.search.retrievers import watchdog

    try:
        fd = os.dup(2)
    except OSError:
        return None

    def announce(text: str) -> None:
        line = f"\n{PROG}: warning: {spell_flags(text, 'pytest')}\n"
        with contextlib.suppress(OSError):
            os.write(fd, line.encode("utf-8", "replace"))

    watchdog.announce = announce
    return fd


def _test_paths(config: pytest.Config) -> str:
    """The project's own test paths as it names them: ``testpaths``, else a ``tests``
    folder when there is one, else a placeholder."""
    with contextlib.suppress(ValueError, KeyError):
        named = [str(p) for p in config.getini("testpaths") or []]
        if named:
            return " ".join(shlex.quote(p) for p in named)
    if (config.invocation_params.dir / "tests").is_dir():
        return "tests/"
    return "<your test paths>"
