"""``groove eval``: measure retrieval quality on a golden set, diff it, gate on it.

The command resolves settings (flags > ``groove.toml`` > defaults), loads the golden
file, opens (and by default refreshes) the index, searches every golden query inside
one read snapshot, and hands the results to
:func:`~pytest_groove.evaluation.session.finish_evaluation` — the same function the
pytest plugin calls.  stdout gets the report (text or JSON); stderr gets notes,
warnings, the findings block and errors.  Exit status: 0 fine, 1 regression gate
failed or any error, 2 bad flag values.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TextIO

from pytest_groove._eval_setup import EvalRequest, EvalSetup, resolve_eval_setup
from pytest_groove.config import SearchOverrides, SearchSettings, Settings
from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.evaluation.compare import color_enabled
from pytest_groove.evaluation.golden import load_golden
from pytest_groove.evaluation.history import history_path, load_history
from pytest_groove.evaluation.report_html import check_html_available
from pytest_groove.evaluation.report_json import dumps_json_report
from pytest_groove.evaluation.run import Fingerprint, QueryResult, evaluate_query
from pytest_groove.evaluation.session import EvalContext, EvalFlags, finish_evaluation
from pytest_groove.kb.records import ChunkText, CorpusSnapshot
from pytest_groove.search.hits import SearchHit

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
    # the flags `groove search` shares are defined once, in cli.py (which imports us)
    from pytest_groove.cli import (
        add_golden_arguments,
        add_kb_arguments,
        add_pipeline_arguments,
        positive_int,
    )

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
    add_golden_arguments(p, k_help="k values for recall@k and nDCG@k (comma-separated; may repeat)")
    p.add_argument(
        "--limit", type=positive_int, help="results fetched per query (default: the largest k)"
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="neither read nor write the history (no diff, no gate)",
    )
    p.add_argument(
        "--no-diff",
        action="store_true",
        help="do not compare with a previous run (the run is still recorded)",
    )
    p.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a metric dropped by more than [eval].regression_threshold",
    )
    p.add_argument(
        "--freeze-baseline",
        action="store_true",
        help="make this run the baseline later runs are compared with",
    )
    p.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write an HTML report with plots to PATH (needs pytest-groove[plots])",
    )
    p.set_defaults(func=run)
    return p


# --------------------------------------------------------------------------- running


def _note(message: str, stream: TextIO) -> None:
    stream.write(f"{PROG}: {message}\n")


def _setup(args: argparse.Namespace) -> EvalSetup:
    k_values = None if not args.k else tuple(k for ks in args.k for k in ks)
    return resolve_eval_setup(
        EvalRequest(
            kb=args.kb_path,
            golden=args.golden,
            config_file=args.config,
            k_values=k_values,
            limit=args.limit,
            model=args.model,
            reranker=args.reranker,
            overrides=SearchOverrides(
                mmr=args.mmr,
                mmr_lambda=args.mmr_lambda,
                mmr_same_doc_penalty=args.mmr_same_doc_penalty,
                parent_retriever=args.parent_retriever,
            ),
            index_dir=args.index_dir,
        )
    )


def _evaluate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    kb: Path = args.kb_path
    if not kb.is_dir():
        raise GrooveError(f"knowledge base not found: {kb} is not a directory (check --kb-path)")
    if args.no_history and args.freeze_baseline:
        raise UsageError("--freeze-baseline needs the history: drop --no-history")
    if args.html is not None:
        # before any index work or search: a missing extra should not cost a run
        check_html_available("--html")
    setup = _setup(args)
    for note in setup.notes:
        _note(note, err)
    golden = load_golden(setup.golden_path, kb)
    search = setup.settings.search
    flags = EvalFlags(
        no_history=args.no_history,
        no_diff=args.no_diff,
        fail_on_regression=args.fail_on_regression,
        freeze_baseline=args.freeze_baseline,
        color=args.format == "text" and color_enabled(args.no_color, out),
        html_path=args.html,
    )

    # Read the history before indexing and searching: a refused file stops the run
    # before any expensive work, and the same runs are compared at the end.
    history_warnings: list[str] = []
    history = [] if args.no_history else load_history(history_path(kb), warnings=history_warnings)
    engine = _open_engine(kb, setup.settings, reindex=not args.no_reindex)
    try:
        # one read snapshot: searches, corpus counts and the quote scan see one index
        with engine.read_snapshot():
            results: list[QueryResult] = [
                evaluate_query(q, engine.search(q.query, setup.depth, search), setup.k_values)
                for q in golden.queries
            ]
            ctx = EvalContext(
                kb=kb,
                golden=golden,
                fingerprint=Fingerprint.build(
                    engine.model_name,
                    engine.reranker_id,
                    setup.limit,
                    setup.k_values,
                    golden.hash,
                    search,
                    engine.context_mode,
                ),
                corpus=engine.corpus_snapshot(),
                settings=setup.settings.eval,
                flags=flags,
                chunk_texts=engine.iter_chunk_texts(),
                history=history,
                history_warnings=history_warnings,
                prog=PROG,
            )
            outcome = finish_evaluation(ctx, results, record=True)
    finally:
        engine.close()

    out.write(
        dumps_json_report(outcome.json_report) if args.format == "json" else outcome.text_report
    )
    out.flush()
    for warning in outcome.warnings:
        _note(f"warning: {warning}", err)
    if outcome.findings_warning:
        err.write(outcome.findings_warning)
    # a failed save ends the run before the gate speaks (the run was not recorded)
    if outcome.error:
        err.write(f"Error: {outcome.error}\n")
    elif outcome.gate_message:
        err.write(outcome.gate_message + "\n")
    return outcome.exit_code


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove eval`` for parsed ``args``; returns the exit status."""
    from pytest_groove.cli import run_reporting_errors

    return run_reporting_errors(_evaluate, args, out, err)
