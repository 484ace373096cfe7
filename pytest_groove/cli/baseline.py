"""``groove baseline accept``: write the accepted baseline, on purpose.

Without ``--run`` it runs the evaluation as ``groove eval --accept`` does (the same
flags, the same report) and writes the run as ``<kb>/.groove-baseline.json``; with
``--run RUN`` it accepts a run of the local log instead and searches nothing (the way
a project that committed its history moves to an accepted baseline).  The file
changes only when the results did.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pytest_groove.cli import evaluate
from pytest_groove.cli.args import check_kb, run_options, run_reporting_errors

PROG = "groove baseline"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``baseline`` (and its action) on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "baseline",
        help="accept a run as the baseline the gate compares with (committed with the code)",
        description=(
            "The accepted baseline, <kb>/.groove-baseline.json, is the gate's baseline in "
            "both doors when it exists; it is written only by this command, "
            "`groove eval --accept` and `pytest --groove-accept`."
        ),
    )
    actions = p.add_subparsers(
        dest="baseline_action", metavar="ACTION", required=True, help="what to do: accept"
    )
    accept = actions.add_parser(
        "accept",
        help="run the golden set and accept the run (or accept a run of the log: --run)",
        description=(
            "Run every golden query as `groove eval` does and write the run as the accepted "
            "baseline; review and commit the file's diff. With --run, accept that run of "
            "the local log instead, searching nothing."
        ),
    )
    evaluate.add_eval_arguments(accept)
    accept.add_argument(
        "--run",
        metavar="RUN",
        help="accept this run of <kb>/.groove-eval-history.json (its timestamp as "
        "`groove history` prints it, or a unique prefix) instead of running the golden set",
    )
    accept.set_defaults(func=run, accept=True, prog=f"{PROG} accept")
    return p


def _accept_logged_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Accept the run of the local log that ``--run`` names."""
    from pytest_groove.evaluation.accept import accept_logged_run

    check_kb(args.kb_path)
    done = accept_logged_run(args.kb_path, run_options(args), args.run)
    for warning in done.warnings:
        err.write(f"{args.prog}: warning: {warning}\n")
    what = "written" if done.changed else "unchanged: that run is the one already accepted"
    err.write(
        f"{args.prog}: accepted baseline: {done.path} ({len(done.run.per_query)} queries; {what})\n"
    )
    return 0


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove baseline accept``; returns the exit status."""
    if args.run is None:
        return evaluate.run(args, out=out, err=err)
    return run_reporting_errors(_accept_logged_run, args, out, err)
