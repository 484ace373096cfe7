"""``groove eval``: measure retrieval quality on a golden set, diff it, gate on it.

The command plans the evaluation (flags > ``groove.toml`` > defaults, the golden file
and the history read before any index work), opens a searcher -- the built-in engine,
brought up to date first unless ``--no-reindex``, or the ``--retriever`` -- begins the
evaluation, searches every golden query and finishes it: the same library steps the
pytest plugin takes (:mod:`pytest_groove.evaluation.lifecycle`).  stdout gets the
report (text, JSON or Markdown); stderr gets notes, warnings, the findings block and errors.
Exit status: 0 fine, 1 regression gate failed or any error, 2 bad flag values.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import (
    RETRIEVER_OPTIONS,
    add_golden_arguments,
    add_kb_arguments,
    add_options,
    add_pipeline_arguments,
    check_kb,
    run_options,
    run_reporting_errors,
)
from pytest_groove.engine.index_command import missing_index
from pytest_groove.engine.names import check_config_names
from pytest_groove.engine.searcher import (
    EngineOpener,
    RetrieverSearcher,
    closing_searcher,
    open_engine_searcher,
)
from pytest_groove.errors import IndexMissing, spell_flags
from pytest_groove.evaluation.finish import EvalOutcome, finish_evaluation
from pytest_groove.evaluation.gate.compare import color_enabled
from pytest_groove.evaluation.lifecycle import begin_evaluation
from pytest_groove.evaluation.plan import EvalPlan, plan_evaluation
from pytest_groove.evaluation.reports.formats import PRINTABLE_FORMATS, REPORT_FORMATS
from pytest_groove.evaluation.reports.json_report import dumps_json_report
from pytest_groove.evaluation.searched import EvaluatedSearcher
from pytest_groove.settings.options import OPTIONS_BY_NAME
from pytest_groove.text.console import write_json

PROG = "groove eval"


# --------------------------------------------------------------------------- arguments


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="measure retrieval quality on a golden set and diff it against history",
        description=(
            "Search every golden query, report recall, MRR and nDCG at each k, compare with the "
            "last compatible run in <kb>/.groove-eval-history.json and record this run."
        ),
    )
    add_eval_arguments(p)
    add_options(p, ("accept",))
    p.set_defaults(func=run)
    return p


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of a run of the golden set (``groove eval``, ``groove baseline accept``)."""
    add_kb_arguments(p)
    add_pipeline_arguments(p)
    add_golden_arguments(p, formats=tuple(PRINTABLE_FORMATS))
    add_options(
        p,
        (
            "limit",
            "no-history",
            "no-diff",
            "fail-on-regression",
            "freeze-baseline",
            "baseline",
            "baseline-file",
            "strict",
            "threshold",
            "significance",
            "fail-under",
            "metrics",
            *RETRIEVER_OPTIONS,
            # the report files the command line spells (the JSON report is --format json)
            *(fmt.option for fmt in REPORT_FORMATS if OPTIONS_BY_NAME[fmt.option].cli),
            "badge-metric",
        ),
    )


# --------------------------------------------------------------------------- running


def _note(message: str, stream: TextIO, prog: str = PROG) -> None:
    stream.write(f"{prog}: {spell_flags(message)}\n")


def open_searcher(plan: EvalPlan, opener: EngineOpener | None = None) -> EvaluatedSearcher:
    """The ``--retriever``, else the built-in engine (refreshed unless ``--no-reindex``)."""
    options = plan.options
    if options.retriever is not None:
        from pytest_groove.search.retrievers.external import retriever_for_run

        retriever = retriever_for_run(options, plan.kb)
        assert retriever is not None
        return RetrieverSearcher(retriever, plan.kb, plan.settings)
    # a model or reranker groove.toml names that nothing knows: one line naming the
    # file, before any index work (a bad --model / --reranker was refused by the plan)
    check_config_names(plan.settings)

    def log(line: str) -> None:
        sys.stderr.write(f"{plan.prog}: {spell_flags(line)}\n")

    try:
        return open_engine_searcher(
            plan.kb, plan.settings, reindex=not options.no_reindex, log=log, opener=opener
        )
    except IndexMissing as exc:
        raise missing_index(exc, plan.kb, options, no_reindex=options.no_reindex) from None


def _evaluate(
    args: argparse.Namespace, out: TextIO, err: TextIO, opener: EngineOpener | None
) -> int:
    kb: Path = args.kb_path
    check_kb(kb)
    # the history is read now: a refused file stops the run before any index work
    # the command's name, as it words its lines (`groove baseline accept` runs this too)
    prog = getattr(args, "prog", PROG)
    plan = plan_evaluation(kb, run_options(args), prog=prog, read_history=True)
    for note in plan.notes:
        _note(note, err, prog)
    color = args.format == "text" and color_enabled(args.no_color, out)
    with closing_searcher(open_searcher(plan, opener)) as searcher, searcher.read_snapshot():
        # one read snapshot: the golden check, the searches, the corpus counts and the
        # quote scan all see one state of the index
        evaluation = begin_evaluation(plan, searcher)
        # every golden query in one embedder call, before the searches
        queries = plan.golden.queries
        searcher.prepare_queries([q.query for q in queries])
        results = [evaluation.run_query(q) for q in queries]
        outcome = finish_evaluation(evaluation, results, record=True, staged=True, color=color)
    return _deliver(outcome, args.format, out, err, prog)


def _deliver(
    outcome: EvalOutcome, report_format: str, out: TextIO, err: TextIO, prog: str = PROG
) -> int:
    """Print the report, then record the run; the notes and the verdict go to stderr."""
    # The run is saved only once its report is out: when standard output cannot take
    # it (a full device, a closed pipe) the history stays exactly as it was.
    try:
        if report_format == "json":
            write_json(out, dumps_json_report(outcome.json_report))
        elif report_format in PRINTABLE_FORMATS:
            render = PRINTABLE_FORMATS[report_format].render
            assert render is not None and outcome.report_inputs is not None
            out.write(render(outcome.report_inputs))
        else:
            out.write(outcome.text_report)
        out.flush()
    except BaseException:
        outcome.discard()
        raise
    commit_error = outcome.commit()
    for warning in outcome.warnings:
        _note(f"warning: {warning}", err, prog)
    for note in outcome.notes:
        _note(note, err, prog)
    if outcome.findings_warning:
        err.write(outcome.findings_warning)
    # a failed save ends the run before the gate speaks (the run was not recorded)
    error = outcome.error or commit_error
    if error:
        err.write(f"Error: {error}\n")
    elif outcome.gate_message:
        err.write(outcome.gate_message + "\n")
    return 1 if commit_error else outcome.exit_code


def run(
    args: argparse.Namespace,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    open_engine: EngineOpener | None = None,
) -> int:
    """Execute ``groove eval`` for parsed ``args``; returns the exit status.

    ``open_engine`` replaces :func:`pytest_groove.engine.builtin.open_engine` (tests).
    """

    def body(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        return _evaluate(args, out, err, open_engine)

    return run_reporting_errors(body, args, out, err)
