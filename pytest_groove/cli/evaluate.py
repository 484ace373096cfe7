"""``groove eval``: measure retrieval quality on a golden set, diff it, gate on it.

The command resolves settings (flags > ``groove.toml`` > defaults), loads the golden
file, opens (and by default refreshes) the index, searches every golden query inside
one read snapshot, and hands the results to
:func:`~pytest_groove.evaluation.finish.finish_evaluation` — the same function the
pytest plugin calls.  stdout gets the report (text or JSON); stderr gets notes,
warnings, the findings block and errors.  Exit status: 0 fine, 1 regression gate
failed or any error, 2 bad flag values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from pytest_groove.cli.args import (
    add_golden_arguments,
    add_kb_arguments,
    add_options,
    add_pipeline_arguments,
    check_kb,
    run_options,
    run_reporting_errors,
)
from pytest_groove.config import SearchSettings, Settings
from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.evaluation.compare import color_enabled
from pytest_groove.evaluation.expected_check import check_before_search
from pytest_groove.evaluation.finish import (
    EvalFlags,
    EvalOutcome,
    finish_evaluation,
    pick_baseline,
)
from pytest_groove.evaluation.golden import load_golden
from pytest_groove.evaluation.history import find_run, history_path, load_history
from pytest_groove.evaluation.records import GoldenSet
from pytest_groove.evaluation.report_html import check_html_available
from pytest_groove.evaluation.report_json import dumps_json_report
from pytest_groove.evaluation.run import Fingerprint, QueryResult, RunRecord, evaluate_query
from pytest_groove.evaluation.setup import (
    EvalSetup,
    eval_context,
    eval_flags,
    eval_request,
    resolve_eval_setup,
)
from pytest_groove.kb.records import ChunkText, CorpusSnapshot
from pytest_groove.options import RunOptions
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retriever import CUSTOM_MODEL, load_retriever

PROG = "groove eval"


class EvalEngine(Protocol):
    """The part of :class:`pytest_groove.engine.Engine` this command uses."""

    @property
    def model_name(self) -> str: ...

    @property
    def reranker_id(self) -> str | None: ...

    @property
    def context_mode(self) -> str: ...

    def search(
        self, query: str, limit: int, search: SearchSettings | None = None
    ) -> list[SearchHit]: ...

    def corpus_snapshot(self) -> CorpusSnapshot: ...

    def iter_chunk_texts(self) -> Iterator[ChunkText]: ...

    def headings_by_path(self) -> dict[str, set[str | None]]: ...

    def prepare_queries(self, queries: Sequence[str]) -> None: ...

    def read_snapshot(self) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...


def _open_engine(kb: Path, settings: Settings, *, reindex: bool) -> EvalEngine:
    # imported here: the engine pulls in apsw, faiss and the embedder
    from pytest_groove.engine import open_engine

    def log(line: str) -> None:
        sys.stderr.write(f"{PROG}: {line}\n")

    return open_engine(kb, settings, reindex=reindex, log=log)


# --------------------------------------------------------------------------- arguments


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="measure retrieval quality on a golden set and diff it against history",
        description=(
            "Search every golden query, report recall@k / MRR / nDCG@k, compare with the "
            "last compatible run in <kb>/.groove-eval-history.json and record this run."
        ),
    )
    add_kb_arguments(p)
    add_pipeline_arguments(p)
    add_golden_arguments(p)
    add_options(
        p,
        (
            "limit",
            "no-history",
            "no-diff",
            "fail-on-regression",
            "freeze-baseline",
            "baseline",
            "threshold",
            "retriever",
            "html",
            "trec-run",
            "trec-qrels",
        ),
    )
    p.set_defaults(func=run)
    return p


# --------------------------------------------------------------------------- running


def _note(message: str, stream: TextIO) -> None:
    stream.write(f"{PROG}: {message}\n")


def _check_config_model(kb: Path, run: RunOptions, model: str) -> None:
    """A model named in ``groove.toml`` that no backend knows is a config error (exit 1)
    naming the file, found before any index work; a bad ``--model`` stays a usage error."""
    if run.model is not None:
        return
    from pytest_groove.config import CONFIG_FILE_NAME
    from pytest_groove.embed.registry import check_model_name

    path = run.config if run.config is not None else kb / CONFIG_FILE_NAME
    try:
        check_model_name(model)
    except UsageError as exc:
        if not path.is_file():
            raise
        raise GrooveError(f"invalid config {path}: {exc.message}") from None


@dataclass(frozen=True)
class _EvalInputs:
    """What both ways of searching (engine, user's retriever) evaluate against."""

    setup: EvalSetup
    golden: GoldenSet
    flags: EvalFlags
    history: list[RunRecord]
    history_warnings: list[str]

    def check_named_baseline(self, fingerprint: Fingerprint) -> None:
        """``--baseline RUN`` must name a run comparable with this one (checked again,
        the same way, when the run is finished)."""
        flags = self.flags
        if flags.baseline is not None and not (flags.no_history or flags.no_diff):
            pick_baseline(self.history, fingerprint, flags.baseline, history_path(self.setup.kb))

    def finish(
        self,
        fingerprint: Fingerprint,
        results: list[QueryResult],
        corpus: CorpusSnapshot | None,
        chunk_texts: Iterable[ChunkText] | None,
    ) -> EvalOutcome:
        ctx = eval_context(
            self.setup,
            self.golden,
            fingerprint,
            self.flags,
            history=self.history,
            history_warnings=self.history_warnings,
            corpus=corpus,
            chunk_texts=chunk_texts,
            prog=PROG,
        )
        return finish_evaluation(ctx, results, record=True, staged=True)


def _evaluate_engine(run: RunOptions, inputs: _EvalInputs) -> EvalOutcome:
    """Search with the built-in engine (indexing first unless --no-reindex)."""
    setup, golden = inputs.setup, inputs.golden
    search = setup.settings.search
    _check_config_model(setup.kb, run, setup.settings.index.model)
    engine = _open_engine(setup.kb, setup.settings, reindex=not run.no_reindex)
    try:
        # one read snapshot: searches, corpus counts and the quote scan see one index
        with engine.read_snapshot():
            # a golden entry naming nothing indexed, or an empty KB, is a mistake in
            # the input: stop before the first search, record nothing
            check_before_search(
                golden, engine.headings_by_path(), setup.kb, setup.settings.index.parsers
            )
            fingerprint = Fingerprint.build(
                engine.model_name,
                engine.reranker_id,
                setup.limit,
                setup.k_values,
                golden.hash,
                search,
                engine.context_mode,
                vector_index=setup.settings.index.vector_index,
            )
            # a --baseline run measured with other settings stops us before any search
            inputs.check_named_baseline(fingerprint)
            # every golden query in one embedder call, before the searches
            engine.prepare_queries([q.query for q in golden.queries])
            results: list[QueryResult] = [
                evaluate_query(q, engine.search(q.query, setup.depth, search), setup.k_values)
                for q in golden.queries
            ]
            return inputs.finish(
                fingerprint, results, engine.corpus_snapshot(), engine.iter_chunk_texts()
            )
    finally:
        engine.close()


def _evaluate_retriever(spec: str, inputs: _EvalInputs) -> EvalOutcome:
    """Search with the user's retriever (``--retriever``): no index, no embedder."""
    setup, golden = inputs.setup, inputs.golden
    retriever = load_retriever(spec, setup.kb)
    fingerprint = Fingerprint.build(
        CUSTOM_MODEL,
        None,
        setup.limit,
        setup.k_values,
        golden.hash,
        setup.settings.search,
        None,
        retriever=retriever.name,
    )
    inputs.check_named_baseline(fingerprint)
    results = [
        evaluate_query(q, retriever.search(q.query, setup.depth), setup.k_values)
        for q in golden.queries
    ]
    return inputs.finish(fingerprint, results, None, None)


def _evaluate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    kb: Path = args.kb_path
    check_kb(kb)
    run = run_options(args)
    if run.no_history and run.freeze_baseline:
        raise UsageError("--freeze-baseline needs the history: drop --no-history")
    if run.html is not None:
        # before any index work or search: a missing extra should not cost a run
        check_html_available("--html")
    setup = resolve_eval_setup(eval_request(kb, run))
    for note in setup.notes:
        _note(note, err)
    golden = load_golden(setup.golden_path, kb)
    flags = eval_flags(run, color=args.format == "text" and color_enabled(args.no_color, out))

    # Read the history before indexing and searching: a refused file stops the run
    # before any expensive work, and the same runs are compared at the end.
    history_warnings: list[str] = []
    history = [] if run.no_history else load_history(history_path(kb), warnings=history_warnings)
    if run.baseline is not None and not (run.no_history or run.no_diff):
        find_run(history, run.baseline, history_path(kb))  # an unknown RUN stops us now
    inputs = _EvalInputs(setup, golden, flags, history, history_warnings)
    if run.retriever is not None:
        outcome = _evaluate_retriever(run.retriever, inputs)
    else:
        outcome = _evaluate_engine(run, inputs)

    # The run is saved only once its report is out: when standard output cannot take
    # it (a full device, a closed pipe) the history stays exactly as it was.
    try:
        out.write(
            dumps_json_report(outcome.json_report) if args.format == "json" else outcome.text_report
        )
        out.flush()
    except BaseException:
        outcome.discard()
        raise
    commit_error = outcome.commit()
    for warning in outcome.warnings:
        _note(f"warning: {warning}", err)
    for note in outcome.notes:
        _note(note, err)
    if outcome.findings_warning:
        err.write(outcome.findings_warning)
    # a failed save ends the run before the gate speaks (the run was not recorded)
    error = outcome.error or commit_error
    if error:
        err.write(f"Error: {error}\n")
    elif outcome.gate_message:
        err.write(outcome.gate_message + "\n")
    return 1 if commit_error else outcome.exit_code


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove eval`` for parsed ``args``; returns the exit status."""
    return run_reporting_errors(_evaluate, args, out, err)
