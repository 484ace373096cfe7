"""``groove coverage``: what the golden set covers of the knowledge base.

Plans the run as ``groove eval`` does, opens the same searcher (the built-in engine,
refreshed unless ``--no-reindex``, or the ``--retriever``), begins the evaluation (the
golden file is checked against the index first) and searches every golden query; the
run is not recorded.  The numbers are :mod:`pytest_groove.evaluation.runs.coverage`'s.
Exit status: 0, or 1 on an error.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from pytest_groove.cli.args import (
    RETRIEVER_OPTIONS,
    add_format_argument,
    add_search_arguments,
    check_kb,
    run_options,
    run_reporting_errors,
)
from pytest_groove.cli.ending import EXIT_OK
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.lifecycle import begin_evaluation
from pytest_groove.evaluation.plan import plan_evaluation
from pytest_groove.evaluation.runs.coverage import Coverage, coverage_text, golden_coverage
from pytest_groove.text.console import write_json

PROG = "groove coverage"
_OPTIONS = (
    "golden",
    "k",
    "limit",
    "no-reindex",
    *RETRIEVER_OPTIONS,
)


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``coverage`` on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "coverage",
        help="what the golden set covers of the knowledge base",
        description=(
            "The share of documents and sections the golden queries expect, per folder; the "
            "documents no golden query's top k returns; and the documents many queries "
            "return without expecting them."
        ),
    )
    add_search_arguments(p, _OPTIONS)
    add_format_argument(p)
    p.set_defaults(func=run)
    return p


def measure(args: argparse.Namespace) -> Coverage:
    """Search every golden query as ``groove eval`` would and measure the coverage."""
    from pytest_groove.cli.evaluate import open_searcher
    from pytest_groove.engine.searcher import closing_searcher

    check_kb(args.kb_path)
    plan = plan_evaluation(args.kb_path, run_options(args), prog=PROG)
    with closing_searcher(open_searcher(plan)) as searcher, searcher.read_snapshot():
        evaluation = begin_evaluation(plan, searcher)
        queries = plan.golden.queries
        searcher.prepare_queries([q.query for q in queries])
        results = [evaluation.run_query(q) for q in queries]
        headings = searcher.headings_by_path()
        if headings is None:
            raise GrooveError(
                "coverage needs the knowledge base's documents, and this searcher names none"
            )
        indexed = {path: list(headings[path]) for path in headings}
    return golden_coverage(plan.golden, indexed, results, max(plan.k_values))


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    coverage = measure(args)
    if args.format == "json":
        write_json(out, json.dumps(coverage.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        out.write(coverage_text(coverage))
    return EXIT_OK


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove coverage`` for parsed ``args``; returns the exit status."""
    return run_reporting_errors(_run, args, out, err)
