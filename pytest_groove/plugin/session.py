"""The plugin's per-process state: settings, golden set, engine or retriever, searches.

One :class:`GrooveSession` per pytest process is created by :func:`activate` (called
from ``pytest_configure`` in ``plugin/__init__.py`` when a knowledge base is
configured) and registered as a plugin object carrying the hooks every process needs
whatever its role -- the report header, collecting the golden file, putting each
query's result on its report, closing the engine.  It owns:

- the effective settings and the loaded golden set (both read at configure time, so
  a bad config or golden file stops the run with one usage-error line, exit 4);
- routing the golden file into collection (see the docstring of ``plugin/__init__.py``);
- *preparing* the evaluation (controller or single process): bringing the index up
  to date, building the run fingerprint, loading the history, choosing the baseline;
- searching and scoring each golden item (:meth:`GrooveSession.run_query`).

What only the controller does -- gathering results, the session end, the xdist
hand-off -- is in ``plugin/controller.py``, registered only where it applies.  An
xdist worker gets the baseline from ``workerinput`` at activation and opens the
index the controller already brought up to date.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_groove.errors import GrooveError, clip
from pytest_groove.evaluation.compare import Thresholds, match_queries, query_regressed
from pytest_groove.evaluation.expected_check import check_before_search
from pytest_groove.evaluation.finish import pick_baseline
from pytest_groove.evaluation.golden import load_golden, node_ids
from pytest_groove.evaluation.history import (
    BaselineChoice,
    history_path,
    load_history,
)
from pytest_groove.evaluation.run import (
    Fingerprint,
    QueryResult,
    RecordFormatError,
    RunRecord,
    evaluate_query,
)
from pytest_groove.evaluation.setup import EvalSetup, eval_request, resolve_eval_setup
from pytest_groove.options import pytest_flag_names
from pytest_groove.paths import resolve_path
from pytest_groove.plugin.items import (
    GROOVE_MARKER,
    SESSION_KEY,
    GrooveGoldenFile,
    GrooveQueryItem,
    tag_marker,
)
from pytest_groove.plugin.options import PluginOptions
from pytest_groove.plugin.retriever import plugin_retriever
from pytest_groove.search.hits import SearchHit

if TYPE_CHECKING:
    from pytest_groove.embed.base import Embedder
    from pytest_groove.engine import Engine
    from pytest_groove.search.retriever import ExternalRetriever

PLUGIN_NAME = "groove-session"
#: the name every message of the plugin starts with
PROG = "groove"
#: report attribute carrying a query's result (JSON-able, so xdist can ship it)
REPORT_RESULT = "groove_result"
#: report attribute carrying the item's name (the key results are stored under)
REPORT_NAME = "groove_name"
#: workerinput key: what the controller hands the workers
WORKER_INPUT = "groove"
#: set when ``--groove-kb`` without paths made the golden file pytest's only argument
GOLDEN_ONLY_KEY = pytest.StashKey[bool]()

#: golden queries embedded together at a time (see GrooveSession._embed_ahead)
EMBED_AHEAD = 64


def usage_error(exc: GrooveError) -> pytest.UsageError:
    """A GrooveError as the usage error pytest prints as one ``ERROR:`` line (exit 4)."""
    return pytest.UsageError(pytest_flag_names(exc.message))


def activate(config: pytest.Config, options: PluginOptions) -> GrooveSession:
    """Create the session, route the golden file into collection, register markers.

    In an xdist worker (``config.workerinput`` set) the session takes the baseline
    the controller handed over and searches the index the controller prepared.
    """
    try:
        session = GrooveSession(config, options)
    except GrooveError as exc:
        raise usage_error(exc) from None
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        session.become_worker(workerinput)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, PLUGIN_NAME)
    config.addinivalue_line(
        "markers", f"{GROOVE_MARKER}: a golden retrieval query collected by pytest-groove"
    )
    for marker in sorted(
        {m for q in session.golden.queries for m in map(tag_marker, q.tags) if m is not None}
    ):
        config.addinivalue_line("markers", f"{marker}{TAG_MARKER_SUFFIX}")
    _route_golden(config, options, session.golden_path)
    return session


#: the description of the markers golden tags become (how they are told from others')
TAG_MARKER_SUFFIX = ": golden query tag (pytest-groove)"


def _marker_names(lines: Iterable[str]) -> set[str]:
    """Marker names from ``markers`` ini lines (``name(args): description``)."""
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in lines if line.strip()}


def refuse_tags_naming_foreign_markers(config: pytest.Config, session: GrooveSession) -> None:
    """A golden tag must never become a marker pytest or another plugin registered.

    The golden loader already refuses pytest's built-in acting markers (``skip``,
    ``xfail`` ...).  Other plugins register markers that act too (``timeout``,
    ``flaky``, ``asyncio`` ...) and nothing says which do, so any marker registered
    by someone other than the user's own ini file is off limits for tags.  Markers
    the user registers in their ini file stay usable (``-m smoke``): they are the
    markers already known when the plugin was configured (:attr:`GrooveSession.
    markers_before`), which is before pytest's own plugins and the conftest files
    register theirs.
    """
    registered = [line for line in config.getini("markers") if not line.endswith(TAG_MARKER_SUFFIX)]
    foreign = _marker_names(registered) - session.markers_before - {GROOVE_MARKER}
    for query in session.golden.queries:
        for tag in query.tags:
            marker = tag_marker(tag)
            if marker is not None and marker in foreign:
                raise GrooveError(
                    f"golden file {session.golden_path}: line {query.line}: tag "
                    f"`{clip(tag)}` would become the `{marker}` marker, which pytest or a "
                    "plugin registered and which may change the query's outcome; "
                    "rename the tag"
                )


def _names_golden(arg: str, base: Path, golden: Path) -> bool:
    path_part = arg.split("::", 1)[0]
    try:
        return (base / path_part).resolve() == golden
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop before Python 3.13
        return False


def _walk_reaches(config: pytest.Config, arg: str, base: Path, golden: Path) -> bool:
    """Whether collecting the directory ``arg`` walks down to the golden file."""
    try:
        folder = (base / arg.split("::", 1)[0]).resolve()
        below = golden.parent.relative_to(folder)
    except (OSError, RuntimeError, ValueError):
        return False
    patterns = config.getini("norecursedirs")
    return folder.is_dir() and not any(
        fnmatch.fnmatch(part, pattern) for part in below.parts for pattern in patterns
    )


def _route_golden(config: pytest.Config, options: PluginOptions, golden: Path) -> None:
    """Make collection include the golden file (rules: ``plugin/__init__.py``).

    A directory among the paths that already walks down to the golden file collects
    it: naming the file as well would collect it twice on pytest 7 and, on pytest 8,
    makes pytest keep only the narrower path (the other tests of that directory
    vanish).  So the golden file is added only when no path reaches it.
    """
    args = config.args
    base = config.invocation_params.dir
    if any(_names_golden(arg, base, golden) for arg in args):
        return
    if options.kb_from_cli and config.args_source != pytest.Config.ArgsSource.ARGS:
        args[:] = [str(golden)]
        config.stash[GOLDEN_ONLY_KEY] = True
    elif not any(_walk_reaches(config, arg, base, golden) for arg in args):
        args.append(str(golden))


# --------------------------------------------------------------------------- session


@dataclass(frozen=True)
class Prepared:
    """What the controller (or a single process) knows before the first search."""

    fingerprint: Fingerprint
    #: None with --groove-no-history / --groove-no-diff
    choice: BaselineChoice | None
    #: baseline result per item name, for --groove-fail-on-regression item verdicts
    baseline_queries: dict[str, QueryResult]
    #: the history as read before the first search; the session end compares against
    #: the same runs, so item verdicts and the gate always share one baseline
    history: list[RunRecord] = field(default_factory=list)
    history_warnings: list[str] = field(default_factory=list)


def baseline_from_workerinput(workerinput: dict[str, Any]) -> dict[str, QueryResult]:
    """The per-item baseline the controller put in ``workerinput`` (bad entries skipped)."""
    payload = workerinput.get(WORKER_INPUT) or {}
    baseline: dict[str, QueryResult] = {}
    for name, raw in (payload.get("baseline") or {}).items():
        try:
            baseline[name] = QueryResult.from_json(raw)
        except RecordFormatError:
            continue
    return baseline


class GrooveSession:
    """Per-process state of an active plugin; also a pytest plugin object."""

    def __init__(self, config: pytest.Config, options: PluginOptions) -> None:
        self.config = config
        self.options = options
        #: the markers registered before this plugin's (first) ``pytest_configure``: the
        #: ini file's own; plugins and conftest files register theirs later
        self.markers_before = _marker_names(config.getini("markers"))
        kb = resolve_path(options.kb, "knowledge base", "--groove-kb / groove_kb")
        if not kb.is_dir():
            raise GrooveError(
                f"knowledge base {kb} is not a directory (check --groove-kb / groove_kb)"
            )
        self.setup: EvalSetup = resolve_eval_setup(eval_request(kb, options.run))
        # load first: a golden path that is no plain file gets the loader's own message
        self.golden = load_golden(self.setup.golden_path, kb)
        self.golden_path = resolve_path(self.setup.golden_path, "golden file", "--groove-golden")
        self.names: list[str] = node_ids(self.golden.queries)
        self._retriever: ExternalRetriever | None = None
        self._retriever_looked_up = False
        self.engine: Engine | None = None
        self.prepared: Prepared | None = None
        #: baseline result per item name (from :meth:`prepare`, or the controller's hand-off)
        self.baseline_queries: dict[str, QueryResult] = {}
        #: how the first search gets an engine: prepare here, or (worker) open the ready index
        self._ensure_engine: Callable[[], object] = self.prepare
        #: golden order of each query id, and the query texts already embedded
        self._position = {q.id: at for at, q in enumerate(self.golden.queries)}
        self._embedded: set[str] = set()

    def become_worker(self, workerinput: dict[str, Any]) -> None:
        """Take the xdist worker role: the controller prepared the index and the baseline."""
        self.baseline_queries = baseline_from_workerinput(workerinput)
        self._ensure_engine = self._open_ready_index
        _share_cores_between_workers()

    # ------------------------------------------------------------------ helpers

    @property
    def kb(self) -> Path:
        return self.setup.kb

    @property
    def thresholds(self) -> Thresholds:
        if self.setup.thresholds is not None:
            return self.setup.thresholds
        return Thresholds(self.setup.settings.eval.regression_threshold)

    def _write_line(self, text: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(text)
        else:
            sys.stderr.write(text + "\n")

    def retriever(self) -> ExternalRetriever | None:
        """The conftest hook's or ``--groove-retriever``'s retriever (looked up once)."""
        if not self._retriever_looked_up:
            try:
                self._retriever = plugin_retriever(self.config, self.options.run.retriever, self.kb)
            except GrooveError as exc:
                raise usage_error(exc) from None
            self._retriever_looked_up = True
        return self._retriever

    def _embedder(self) -> Embedder | None:
        embedder: Embedder | None = self.config.hook.pytest_groove_embedder(config=self.config)
        return embedder

    def _open_engine(self, *, reindex: bool) -> Engine:
        """Open the index, bringing it up to date first when ``reindex`` (and saying so)."""
        from pytest_groove.embed.registry import get_embedder
        from pytest_groove.engine import index_dir_for, open_engine
        from pytest_groove.kb.store import DB_FILE_NAME

        embedder = self._embedder() or get_embedder(self.setup.settings.index.model)
        if not reindex:
            db = index_dir_for(self.kb, self.setup.settings, embedder.name) / DB_FILE_NAME
            if not db.is_file():
                raise GrooveError(
                    f"No index found at {db}. Drop --groove-no-reindex (the plugin then "
                    f"builds it) or run `groove index --kb-path {self.kb}` first."
                )
        engine = open_engine(
            self.kb,
            self.setup.settings,
            embedder=embedder,
            reindex=reindex,
            log=lambda msg: self._write_line(f"{PROG}: {msg}"),
        )
        report = engine.index_report
        if report is not None and (
            report.added or report.changed or report.renamed or report.removed
        ):
            self._write_line(f"{PROG}: {report.summary()}")
        return engine

    def _open_ready_index(self) -> None:
        """Worker: open the index the controller brought up to date.

        Quietly -- no log, no progress bar: a worker's output would interleave with
        the controller's.
        """
        from pytest_groove.embed.registry import get_embedder
        from pytest_groove.engine import open_engine

        embedder = self._embedder() or get_embedder(self.setup.settings.index.model)
        self.engine = open_engine(
            self.kb, self.setup.settings, embedder=embedder, reindex=False, progress=False
        )

    # ------------------------------------------------------------------ prepare

    def prepare(self) -> Prepared:
        """Index (unless told not to), fingerprint, history, baseline.  Idempotent.

        Runs on the controller, or in the single process without xdist.  Raises
        :class:`pytest.UsageError` for bad input (missing index, unreadable history,
        model mismatch ...).
        """
        if self.prepared is not None:
            return self.prepared
        try:
            self.prepared = self._prepare()
        except GrooveError as exc:
            raise usage_error(exc) from None
        self.baseline_queries = self.prepared.baseline_queries
        return self.prepared

    def _fingerprint(self) -> Fingerprint:
        """Open the engine (unless a custom retriever answers) and fingerprint the run."""
        retriever = self.retriever()
        if retriever is not None:
            model, reranker_id, context_mode = "custom", None, None
            custom: str | None = retriever.name
            vector_index = None
        else:
            self.engine = self._open_engine(reindex=not self.options.run.no_reindex)
            # a golden entry naming nothing indexed, or an empty KB, is a mistake in
            # the input: stop before the first search (usage error), record nothing
            check_before_search(
                self.golden,
                self.engine.headings_by_path(),
                self.kb,
                self.setup.settings.index.parsers,
            )
            model = self.engine.model_name
            reranker_id = self.engine.reranker_id
            context_mode = self.engine.context_mode
            custom = None
            vector_index = self.setup.settings.index.vector_index
        setup = self.setup
        return Fingerprint.build(
            model=model,
            reranker_id=reranker_id,
            limit=setup.limit,
            k_values=setup.k_values,
            golden_hash=self.golden.hash,
            search=setup.settings.search,
            context_mode=context_mode,
            retriever=custom,
            vector_index=vector_index,
        )

    def _prepare(self) -> Prepared:
        fingerprint = self._fingerprint()
        run = self.options.run
        runs: list[RunRecord] = []
        history_warnings: list[str] = []
        if not run.no_history:
            # Read once, now: a refused or unreadable history stops the run before any
            # search (exit 4), and the session end reuses these runs.
            runs = load_history(history_path(self.kb), warnings=history_warnings)
        choice = (
            None
            if run.no_diff or run.no_history
            else pick_baseline(runs, fingerprint, run.baseline, history_path(self.kb))
        )
        baseline_queries: dict[str, QueryResult] = {}
        if choice is not None and choice.baseline is not None:
            paired = match_queries(self.golden.queries, choice.baseline)
            for name, previous in zip(self.names, paired, strict=True):
                if previous is not None:
                    baseline_queries[name] = previous
        return Prepared(
            fingerprint=fingerprint,
            choice=choice,
            baseline_queries=baseline_queries,
            history=runs,
            history_warnings=history_warnings,
        )

    # ------------------------------------------------------------------ per query

    def _search(self, text: str) -> list[SearchHit]:
        depth = self.setup.depth
        retriever = self.retriever()
        if retriever is not None:
            # cut to the depth: `limit` means the same for every retriever
            return retriever.search(text, depth)
        if self.engine is None:
            self._ensure_engine()
        assert self.engine is not None
        return self.engine.search(text, depth)

    def run_query(self, query: Any) -> QueryResult:
        """Search one golden query and score it."""
        self._embed_ahead(query)
        return evaluate_query(query, self._search(query.query), self.setup.k_values)

    def _embed_ahead(self, query: Any) -> None:
        """Embed this query with the next golden queries in one embedder call.

        One call per query pays the model's fixed cost per call every time; one call
        for the whole set would, under xdist, embed in every worker the queries the
        other workers run.  A window of the queries that follow is the middle way
        (items run in golden order, and xdist hands them out in runs).
        """
        if query.query in self._embedded or self.retriever() is not None:
            return
        if self.engine is None:
            self._ensure_engine()
        if self.engine is None:
            return
        at = self._position.get(query.id, 0)
        window = [q.query for q in self.golden.queries[at : at + EMBED_AHEAD]]
        self.engine.prepare_queries([query.query, *window])
        self._embedded.update(window)
        self._embedded.add(query.query)

    def query_regression(self, name: str, result: QueryResult) -> str | None:
        """The headline of an item's regression failure, or None when it did not regress.

        Only under ``--groove-fail-on-regression`` (and never with ``--groove-no-diff`` /
        ``--groove-no-history``, where there is nothing to compare with).
        """
        opts = self.options.run
        if not opts.fail_on_regression or opts.no_diff or opts.no_history:
            return None
        previous = self.baseline_queries.get(name)
        names = query_regressed(result, previous, self.thresholds)
        if not names or previous is None:
            return None
        parts = [
            f"{metric} {_metric_value(previous, metric):.2f} -> {_metric_value(result, metric):.2f}"
            for metric in names
        ]
        return (
            f"golden query {name!r} regressed by more than {self.thresholds.describe()} "
            "against the "
            f"baseline run: {', '.join(parts)}"
        )

    def junit_properties(self, result: QueryResult) -> list[tuple[str, object]]:
        """The query's metrics as JUnit ``<properties>`` (only with the ini switch)."""
        metrics = result.metrics
        props: list[tuple[str, object]] = [
            (f"groove.recall@{k}", f"{metrics.recall_at_k.get(k, 0.0):.4f}")
            for k in self.setup.k_values
        ]
        props.append(("groove.reciprocal_rank", f"{metrics.reciprocal_rank:.4f}"))
        props.extend(
            (f"groove.ndcg@{k}", f"{metrics.ndcg_at_k.get(k, 0.0):.4f}")
            for k in self.setup.k_values
        )
        return props

    # ------------------------------------------------------------------ hooks (every role)

    def pytest_sessionstart(self) -> None:
        # after every plugin's and conftest's pytest_configure: their markers are known
        try:
            refuse_tags_naming_foreign_markers(self.config, self)
        except GrooveError as exc:
            raise usage_error(exc) from None

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        retriever = self.retriever()
        if retriever is not None:
            engine = f"custom retriever {retriever.name}"
        elif config.hook.pytest_groove_embedder.get_hookimpls():
            # not called here: building an embedder can be expensive
            engine = "embedder from pytest_groove_embedder"
        else:
            engine = f"model {self.setup.settings.index.model}"
        lines = [
            f"groove: kb {self.kb}, golden {self.golden_path.name} "
            f"({len(self.golden.queries)} queries), {engine}"
        ]
        if config.stash.get(GOLDEN_ONLY_KEY, False):
            try:
                kb_arg = os.path.relpath(self.kb, config.invocation_params.dir)
            except ValueError:  # another drive on Windows
                kb_arg = str(self.kb)
            lines.append(
                "groove: running only the golden queries (no test paths given); to run your "
                f"own tests as well, name them: pytest --groove-kb {kb_arg} tests/"
            )
        return lines

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name != self.golden_path.name:
            return None
        try:
            if file_path.resolve() != self.golden_path:
                return None
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop before Python 3.13
            return None
        collector: pytest.Collector = GrooveGoldenFile.from_parent(parent, path=file_path)
        return collector

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if isinstance(item, GrooveQueryItem) and call.when == "call":
            setattr(report, REPORT_NAME, item.name)
            if item.groove_result is not None:
                setattr(report, REPORT_RESULT, item.groove_result.to_json())
        return report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None


def _share_cores_between_workers() -> None:
    """Give each xdist worker its share of the cores for OpenMP (unless the user chose).

    The embedding engine runs OpenMP threads; N workers each starting one thread per
    core oversubscribe the machine and spin against each other (measured on 2 cores,
    ``-n 2`` over the example KB: 5.5 s with the default, 1.9 s with one thread per
    worker).  OpenMP reads the variable when the engine library loads, which happens
    at the worker's first search, after this.
    """
    if "OMP_NUM_THREADS" in os.environ:
        return
    try:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    except ValueError:
        return
    cores = os.cpu_count() or 1
    os.environ["OMP_NUM_THREADS"] = str(max(1, cores // max(1, workers)))


def _metric_value(result: QueryResult, metric: str) -> float:
    metrics = result.metrics
    if metric.startswith("recall@"):
        return metrics.recall_at_k.get(int(metric.removeprefix("recall@")), 0.0)
    if metric.startswith("nDCG@"):
        return metrics.ndcg_at_k.get(int(metric.removeprefix("nDCG@")), 0.0)
    return metrics.reciprocal_rank
