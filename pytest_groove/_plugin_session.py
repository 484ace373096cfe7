"""The plugin's per-run state and the hooks that only run when the plugin is active.

One :class:`GrooveSession` per pytest process is registered as a plugin by
:func:`activate` (called from ``plugin.pytest_configure`` when a knowledge base is
configured).  It owns:

- the effective settings and the loaded golden set (both read at configure time, so
  a bad config or golden file stops the run with one usage-error line, exit 4);
- routing the golden file into collection (see ``plugin.py``'s docstring);
- *preparing* the evaluation on the controller: bringing the index up to date,
  building the run fingerprint, loading the history and choosing the baseline;
- searching and scoring each golden item, and putting the result on its report;
- at session end, on the controller only, once: the text report, the history, the
  JSON report, the findings and the regression gate (via ``session.exitstatus``).

pytest-xdist: the controller collects nothing and runs nothing, so it prepares in
``pytest_sessionstart`` -- before xdist's own (``trylast``) sessionstart launches the
workers -- and hands each worker the baseline through ``workerinput``.  Workers open
the ready index without re-indexing, search their share of the queries, and ship each
:class:`QueryResult` as JSON on the test report; the controller rebuilds them in
``pytest_runtest_logreport`` and finishes exactly as a single process would.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_groove._eval_setup import EvalRequest, EvalSetup, resolve_eval_setup
from pytest_groove._plugin_items import (
    GROOVE_MARKER,
    GrooveGoldenFile,
    GrooveQueryItem,
    tag_marker,
)
from pytest_groove._plugin_options import PluginOptions, pytest_flag_names
from pytest_groove.config import SearchOverrides
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.compare import match_queries, query_regressed
from pytest_groove.evaluation.golden import load_golden, node_ids
from pytest_groove.evaluation.history import (
    BaselineChoice,
    choose_baseline,
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
from pytest_groove.search.hits import SearchHit

if TYPE_CHECKING:
    from pytest_groove._plugin_hooks import Retriever
    from pytest_groove.embed.base import Embedder
    from pytest_groove.engine import Engine

SESSION_KEY = pytest.StashKey["GrooveSession"]()
PLUGIN_NAME = "groove-session"
#: the name every message of the plugin starts with
PROG = "groove"
#: report attribute carrying a query's result (JSON-able, so xdist can ship it)
REPORT_RESULT = "groove_result"
#: report attribute carrying the item's name (the key results are stored under)
REPORT_NAME = "groove_name"
#: workerinput key: what the controller hands the workers
WORKER_INPUT = "groove"


def usage_error(exc: GrooveError) -> pytest.UsageError:
    """A GrooveError as the usage error pytest prints as one ``ERROR:`` line (exit 4)."""
    return pytest.UsageError(pytest_flag_names(exc.message))


def activate(config: pytest.Config, options: PluginOptions) -> None:
    """Create the session, route the golden file into collection, register markers."""
    try:
        session = GrooveSession(config, options)
    except GrooveError as exc:
        raise usage_error(exc) from None
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, PLUGIN_NAME)
    config.addinivalue_line(
        "markers", f"{GROOVE_MARKER}: a golden retrieval query collected by pytest-groove"
    )
    for marker in sorted(
        {m for q in session.golden.queries for m in map(tag_marker, q.tags) if m is not None}
    ):
        config.addinivalue_line("markers", f"{marker}: golden query tag (pytest-groove)")
    _route_golden(config, options, session.golden_path)


def _names_golden(arg: str, base: Path, golden: Path) -> bool:
    path_part = arg.split("::", 1)[0]
    try:
        return (base / path_part).resolve() == golden
    except OSError:
        return False


def _route_golden(config: pytest.Config, options: PluginOptions, golden: Path) -> None:
    """Make collection include the golden file (see ``plugin.py`` for the rules)."""
    args = config.args
    base = config.invocation_params.dir
    if any(_names_golden(arg, base, golden) for arg in args):
        return
    if options.kb_from_cli and config.args_source != pytest.Config.ArgsSource.ARGS:
        args[:] = [str(golden)]
    else:
        args.append(str(golden))


# --------------------------------------------------------------------------- hits


def _field(hit: Any, name: str) -> Any:
    if isinstance(hit, dict):
        return hit.get(name)
    return getattr(hit, name, None)


def normalise_hits(raw: Any, retriever: str) -> list[SearchHit]:
    """A custom retriever's answer as ranked :class:`SearchHit` s (order kept).

    Each hit needs a string ``path``; ``heading`` may be missing or None; ``score``
    may be missing (then 0.0) but must be a number when given.
    """
    if raw is None or isinstance(raw, str | bytes | dict):
        raise GrooveError(
            f"custom retriever {retriever} must return a sequence of hits, got {type(raw).__name__}"
        )
    hits: list[SearchHit] = []
    for position, hit in enumerate(raw, start=1):
        if isinstance(hit, SearchHit):
            hits.append(hit)
            continue
        path = _field(hit, "path")
        heading = _field(hit, "heading")
        score = _field(hit, "score")
        if not isinstance(path, str) or not path:
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has no string `path` "
                f"(got {path!r}); return SearchHit objects or dicts with path/heading/score"
            )
        if heading is not None and not isinstance(heading, str):
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has a non-string "
                f"`heading` ({heading!r}); use a string or None"
            )
        if score is None:
            score = 0.0
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has a non-numeric "
                f"`score` ({score!r})"
            )
        hits.append(SearchHit(rank=position, path=path, heading=heading, score=float(score)))
    return hits


def retriever_name(retriever: Callable[..., Any]) -> str:
    """How a custom retriever is named in the fingerprint and the report."""
    explicit = getattr(retriever, "groove_name", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    target: Any = retriever
    if not hasattr(target, "__qualname__"):
        target = type(retriever)
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", repr(target))
    return f"{module}.{qualname}" if module else str(qualname)


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


class GrooveSession:
    """Per-process state of an active plugin; also a pytest plugin object."""

    def __init__(self, config: pytest.Config, options: PluginOptions) -> None:
        self.config = config
        self.options = options
        self.is_worker = hasattr(config, "workerinput")
        self.collect_only = bool(config.getoption("collectonly", False))
        kb = options.kb.resolve()
        if not kb.is_dir():
            raise GrooveError(
                f"knowledge base {kb} is not a directory (check --groove-kb / groove_kb)"
            )
        self.setup: EvalSetup = resolve_eval_setup(
            EvalRequest(
                kb=kb,
                golden=options.golden,
                config_file=options.config_file,
                k_values=options.k_values,
                limit=options.limit,
                model=options.model,
                reranker=options.reranker,
                overrides=SearchOverrides(
                    mmr=options.mmr,
                    mmr_lambda=options.mmr_lambda,
                    mmr_same_doc_penalty=options.mmr_same_doc_penalty,
                    parent_retriever=options.parent_retriever,
                ),
                index_dir=options.index_dir,
            )
        )
        self.golden_path = self.setup.golden_path.resolve()
        self.golden = load_golden(self.setup.golden_path, kb)
        self.names: list[str] = node_ids(self.golden.queries)
        self._retriever: Retriever | None = None
        self._retriever_looked_up = False
        self.engine: Engine | None = None
        self.prepared: Prepared | None = None
        #: results seen on reports, by item name (controller / single process)
        self.results: dict[str, QueryResult] = {}
        self.interrupted = False
        #: lines for the terminal summary, filled at session end
        self.summary: str | None = None
        #: messages for stderr, written after the summary section
        self.pending_stderr: list[str] = []
        self.finished = False
        self._worker_baseline: dict[str, QueryResult] | None = None
        if self.is_worker:
            self._worker_baseline = self._baseline_from_workerinput()
            _share_cores_between_workers()

    # ------------------------------------------------------------------ helpers

    @property
    def kb(self) -> Path:
        return self.setup.kb

    @property
    def threshold(self) -> float:
        return self.setup.settings.eval.regression_threshold

    def _write_line(self, text: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(text)
        else:
            sys.stderr.write(text + "\n")

    def retriever(self) -> Retriever | None:
        """The conftest-supplied retriever, if any (looked up once)."""
        if not self._retriever_looked_up:
            self._retriever = self.config.hook.pytest_groove_retriever(config=self.config)
            self._retriever_looked_up = True
        return self._retriever

    def _embedder(self) -> Embedder | None:
        embedder: Embedder | None = self.config.hook.pytest_groove_embedder(config=self.config)
        return embedder

    def _open_engine(self, *, reindex: bool) -> Engine:
        from pytest_groove.embed.registry import get_embedder
        from pytest_groove.engine import index_dir_for, open_engine
        from pytest_groove.kb.store import DB_FILE_NAME

        embedder = self._embedder() or get_embedder(self.setup.settings.index.model)
        if not reindex and not self.is_worker:
            db = index_dir_for(self.kb, self.setup.settings, embedder.name) / DB_FILE_NAME
            if not db.is_file():
                raise GrooveError(
                    f"No index found at {db}. Drop --groove-no-reindex (the plugin then "
                    f"builds it) or run `groove index --kb-path {self.kb}` first."
                )
        log = None if self.is_worker else (lambda msg: self._write_line(f"{PROG}: {msg}"))
        engine = open_engine(
            self.kb,
            self.setup.settings,
            embedder=embedder,
            reindex=reindex,
            progress=None if not self.is_worker else False,
            log=log,
        )
        report = engine.index_report
        if (
            report is not None
            and not self.is_worker
            and (report.added or report.changed or report.renamed or report.removed)
        ):
            self._write_line(f"{PROG}: {report.summary()}")
        return engine

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
        return self.prepared

    def _prepare(self) -> Prepared:
        setup = self.setup
        retriever = self.retriever()
        if retriever is not None:
            name = retriever_name(retriever)
            model, reranker_id, context_mode, custom = "custom", None, None, name
        else:
            self.engine = self._open_engine(reindex=not self.options.no_reindex)
            model = self.engine.model_name
            reranker_id = self.engine.reranker_id
            context_mode = self.engine.context_mode
            custom = None
        fingerprint = Fingerprint.build(
            model=model,
            reranker_id=reranker_id,
            limit=setup.limit,
            k_values=setup.k_values,
            golden_hash=self.golden.hash,
            search=setup.settings.search,
            context_mode=context_mode,
            retriever=custom,
        )
        runs: list[RunRecord] = []
        history_warnings: list[str] = []
        if not self.options.no_history:
            # Read once, now: a refused or unreadable history stops the run before any
            # search (exit 4), and the session end reuses these runs.
            runs = load_history(history_path(self.kb), warnings=history_warnings)
        choice = (
            None
            if self.options.no_diff or self.options.no_history
            else (choose_baseline(runs, fingerprint))
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

    def _baseline_from_workerinput(self) -> dict[str, QueryResult]:
        workerinput: dict[str, Any] = getattr(self.config, "workerinput", {})
        payload = workerinput.get(WORKER_INPUT) or {}
        baseline: dict[str, QueryResult] = {}
        for name, raw in (payload.get("baseline") or {}).items():
            try:
                baseline[name] = QueryResult.from_json(raw)
            except RecordFormatError:
                continue
        return baseline

    # ------------------------------------------------------------------ per query

    def _search(self, text: str) -> list[SearchHit]:
        depth = self.setup.depth
        retriever = self.retriever()
        if retriever is not None:
            name = retriever_name(retriever)
            # a retriever that returns more than it was asked for is cut to the depth,
            # so `limit` means the same for every retriever
            return normalise_hits(retriever(text, depth), name)[:depth]
        if self.engine is None:
            if self.is_worker:
                # the controller brought the index up to date before we started
                self.engine = self._open_engine(reindex=False)
            else:
                self.prepare()
        assert self.engine is not None
        return self.engine.search(text, depth)

    def run_query(self, query: Any) -> QueryResult:
        """Search one golden query and score it."""
        return evaluate_query(query, self._search(query.query), self.setup.k_values)

    def _baseline_for(self, name: str) -> QueryResult | None:
        if self.is_worker:
            return (self._worker_baseline or {}).get(name)
        prepared = self.prepared
        return None if prepared is None else prepared.baseline_queries.get(name)

    def query_regression(self, name: str, result: QueryResult) -> str | None:
        """The headline of an item's regression failure, or None when it did not regress.

        Only under ``--groove-fail-on-regression`` (and never with ``--groove-no-diff`` /
        ``--groove-no-history``, where there is nothing to compare with).
        """
        opts = self.options
        if not opts.fail_on_regression or opts.no_diff or opts.no_history:
            return None
        previous = self._baseline_for(name)
        names = query_regressed(result, previous, self.threshold)
        if not names or previous is None:
            return None
        parts = [
            f"{metric} {_metric_value(previous, metric):.2f} -> {_metric_value(result, metric):.2f}"
            for metric in names
        ]
        return (
            f"golden query {name!r} regressed by more than {self.threshold:g} against the "
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

    # ------------------------------------------------------------------ hooks

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        retriever = self.retriever()
        if retriever is not None:
            engine = f"custom retriever {retriever_name(retriever)}"
        elif config.hook.pytest_groove_embedder.get_hookimpls():
            # not called here: building an embedder can be expensive
            engine = "embedder from pytest_groove_embedder"
        else:
            engine = f"model {self.setup.settings.index.model}"
        return [
            f"groove: kb {self.kb}, golden {self.golden_path.name} "
            f"({len(self.golden.queries)} queries), {engine}"
        ]

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name != self.golden_path.name:
            return None
        try:
            if file_path.resolve() != self.golden_path:
                return None
        except OSError:
            return None
        collector: pytest.Collector = GrooveGoldenFile.from_parent(parent, path=file_path)
        return collector

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        """xdist controller, just before the workers start: bring the index up to date.

        The workers search; they must find the index built, and building it once here
        (under the indexer's file lock) keeps them from racing to do it.
        """
        if not self.is_worker and not self.collect_only:
            self.prepare()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # Without xdist, prepare only when a golden query was selected, so that
        # `pytest -m "not groove"` in a project with groove_kb set does no index work.
        if self.is_worker or self.collect_only:
            return
        if any(isinstance(item, GrooveQueryItem) for item in session.items):
            self.prepare()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: hand each worker the baseline of each query."""
        prepared = self.prepared
        baseline = {} if prepared is None else prepared.baseline_queries
        node.workerinput[WORKER_INPUT] = {
            "baseline": {name: result.to_json() for name, result in baseline.items()}
        }

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        if isinstance(item, GrooveQueryItem) and call.when == "call":
            setattr(report, REPORT_NAME, item.name)
            if item.groove_result is not None:
                setattr(report, REPORT_RESULT, item.groove_result.to_json())
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker or report.when != "call":
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
        if self.is_worker or self.collect_only or self.finished:
            return
        self.finished = True
        from pytest_groove._plugin_finish import finish

        finish(self, session, exitstatus)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        if self.summary is not None:
            terminalreporter.write_sep("=", "groove retrieval quality")
            for line in self.summary.rstrip("\n").split("\n"):
                terminalreporter.write_line(line)
        from pytest_groove._plugin_finish import flush_stderr

        flush_stderr(self)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.pending_stderr:
            from pytest_groove._plugin_finish import flush_stderr

            flush_stderr(self)
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


def ordered_results(session: GrooveSession) -> list[QueryResult]:
    """Results in golden order (queries that did not run are left out)."""
    return [session.results[name] for name in session.names if name in session.results]
