"""``groove history``: the recorded runs, one run's report, a diff, freezing a baseline.

- ``groove history --kb-path KB``: the runs, newest first (``--format json`` too);
- ``groove history show RUN``: that run's report, diffed as it was when recorded
  (against the frozen or newest compatible run older than it);
- ``groove history diff RUN_A RUN_B``: the diff the gate computes, B against A;
- ``groove history freeze RUN``: make that run the frozen baseline;
- ``groove history delete RUN``: remove that run;
- ``groove history verify``: check every run against its digest and date (exit 1 when
  one was edited or is dated in the future).

``RUN`` is a run's timestamp as the listing prints it (as stored) or a prefix of it
that only one run has.  Reading never writes; only ``freeze`` and ``delete`` change
the file.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import check_kb, run_reporting_errors
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.accepted import compare_across
from pytest_groove.evaluation.gate.compare import compare
from pytest_groove.evaluation.gate.verdict import comparison_verdicts, removed_answer_failures
from pytest_groove.evaluation.history.file import (
    choose_baseline,
    find_run,
    freeze_run,
    history_path,
    load_history,
    run_label,
)
from pytest_groove.evaluation.history.save import delete_run
from pytest_groove.evaluation.history.vouch import UnreadableRun
from pytest_groove.evaluation.reports.json_report import build_json_report, dumps_json_report
from pytest_groove.evaluation.reports.text_report import render_text
from pytest_groove.evaluation.runs.record import RunRecord, aggregate_to_json, display_timestamp
from pytest_groove.evaluation.runs.trust import untrusted
from pytest_groove.scoring.metric_table import aggregate_summary
from pytest_groove.scoring.thresholds import Thresholds
from pytest_groove.text.console import write_json

PROG = "groove history"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``history`` (and its actions) on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "history",
        help="list the recorded eval runs, show or diff them, freeze a baseline",
        description=(
            "The runs recorded in <kb>/.groove-eval-history.json, newest first. RUN is a "
            "run's timestamp as listed, or a prefix of it that only one run has."
        ),
    )
    _add_common(p)
    p.set_defaults(func=_run(_list), history_action="list")
    actions = p.add_subparsers(
        dest="history_action", metavar="ACTION", help="what to do (default: list the runs)"
    )

    show = actions.add_parser("show", help="print a recorded run's report")
    show.add_argument("run", metavar="RUN", help="timestamp (or unique prefix) of the run")
    _add_common(show)
    show.set_defaults(func=_run(_show))

    diff = actions.add_parser("diff", help="compare two recorded runs as the gate does")
    diff.add_argument("run_a", metavar="RUN_A", help="the earlier run (the baseline)")
    diff.add_argument("run_b", metavar="RUN_B", help="the later run (compared with RUN_A)")
    _add_common(diff)
    diff.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit status 1 when B fails the gate against A (a metric regressed past the "
        "threshold, or an expected document was removed)",
    )
    diff.set_defaults(func=_run(_diff))

    freeze = actions.add_parser("freeze", help="make a recorded run the frozen baseline")
    freeze.add_argument("run", metavar="RUN", help="timestamp (or unique prefix) of the run")
    _add_common(freeze, with_format=False)
    freeze.set_defaults(func=_run(_freeze))

    delete = actions.add_parser("delete", help="remove a recorded run from the history")
    delete.add_argument("run", metavar="RUN", help="timestamp (or unique prefix) of the run")
    _add_common(delete, with_format=False)
    delete.set_defaults(func=_run(_delete))

    verify = actions.add_parser(
        "verify", help="check every run against its digest; exit 1 when one was edited"
    )
    _add_common(verify, with_format=False)
    verify.set_defaults(func=_run(_verify))
    return p


def _add_common(parser: argparse.ArgumentParser, *, with_format: bool = True) -> None:
    # SUPPRESS: the flags may come before or after the action, and an action's parser
    # must not overwrite what the outer parser read with its defaults
    parser.add_argument(
        "--kb-path",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="the knowledge base folder (its history file is read)",
    )
    if with_format:
        parser.add_argument(
            "--format",
            choices=("text", "json"),
            default=argparse.SUPPRESS,
            help="output format (default: text)",
        )
        parser.add_argument(
            "--no-color",
            action="store_true",
            default=argparse.SUPPRESS,
            help="no ANSI colour (also: NO_COLOR)",
        )


def _run(body: Any) -> Any:
    def run(
        args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
    ) -> int:
        return run_reporting_errors(body, args, out, err)

    return run


def _kb(args: argparse.Namespace) -> Path:
    kb: Path | None = getattr(args, "kb_path", None)
    if kb is None:
        raise GrooveError("groove history needs --kb-path DIR (the knowledge base folder)")
    check_kb(kb)
    return kb


def _runs(args: argparse.Namespace, err: TextIO) -> tuple[Path, list[RunRecord]]:
    path = history_path(_kb(args))
    warnings: list[str] = []
    runs = load_history(path, warnings=warnings)
    for warning in warnings:
        err.write(f"{PROG}: warning: {warning}\n")
    return path, runs


def _thresholds(args: argparse.Namespace) -> Thresholds:
    """The KB's ``[eval].regression_threshold`` (what its gate uses)."""
    from pytest_groove.settings.config import load_settings

    return Thresholds(load_settings(_kb(args), None).eval.regression_threshold)


def _format(args: argparse.Namespace) -> str:
    return str(getattr(args, "format", "text"))


# --------------------------------------------------------------------------- list


def _engine_label(run: RunRecord) -> str:
    fp = run.fingerprint
    if fp.retriever is not None:
        return f"retriever {fp.retriever}"
    return fp.model if fp.reranker is None else f"{fp.model} + {fp.reranker}"


def _metrics_line(run: RunRecord) -> str:
    return aggregate_summary(run.aggregate, run.fingerprint.k_values)


def _list(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path, runs = _runs(args, err)
    if _format(args) == "json":
        rows = [
            {
                "run": run_label(r),
                "frozen": r.frozen,
                "model": r.fingerprint.model,
                "retriever": r.fingerprint.retriever,
                "corpus": None
                if r.corpus is None
                else {"documents": r.corpus.documents, "chunks": r.corpus.chunks},
                "aggregate": aggregate_to_json(r.aggregate),
                "fingerprint": r.fingerprint.to_json(),
            }
            for r in runs
        ]
        write_json(out, json.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not runs:
        out.write(f"no recorded runs in {path}\n")
        return 0
    out.write(f"{len(runs)} run(s) in {path}, newest first; * = frozen baseline\n")
    for r in runs:
        corpus = "" if r.corpus is None else f"  {r.corpus.documents} docs"
        out.write(
            f"{'*' if r.frozen else ' '} {run_label(r)}  {_engine_label(r)}{corpus}  "
            f"{r.aggregate.query_count} queries  {_metrics_line(r)}\n"
        )
    return 0


# --------------------------------------------------------------------------- show, diff


def _color(args: argparse.Namespace, out: TextIO) -> bool:
    from pytest_groove.evaluation.gate.compare import color_enabled

    return color_enabled(bool(getattr(args, "no_color", False)), out)


def _older(runs: Sequence[RunRecord], run: RunRecord) -> list[RunRecord]:
    """The runs recorded before ``run`` (the history is newest first)."""
    position = next(i for i, r in enumerate(runs) if r is run)
    return list(runs[position + 1 :])


def _show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path, runs = _runs(args, err)
    run = find_run(runs, args.run, path)
    choice = choose_baseline(_older(runs, run), run.fingerprint)
    comparison = compare(run, choice.shown, _thresholds(args))
    if _format(args) == "json":
        report = build_json_report(run, comparison, recorded=True)
        write_json(out, dumps_json_report(report))
        return 0
    out.write(
        render_text(
            run,
            comparison,
            color=_color(args, out),
            choice=choice,
            title=f"recorded run{' (frozen baseline)' if run.frozen else ''}",
        )
    )
    return 0


def _diff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path, runs = _runs(args, err)
    before = find_run(runs, args.run_a, path)
    after = find_run(runs, args.run_b, path)
    gating = bool(getattr(args, "fail_on_regression", False))
    for name, run in (("RUN_A", before), ("RUN_B", after)):
        why = untrusted(run)
        if why is None:
            continue
        # an edited run's numbers are not what was measured: the gate (eval --baseline,
        # history freeze) never uses one, and the diff says so
        if gating:
            raise GrooveError(
                f"--fail-on-regression: {name} {run_label(run)} in {path} cannot be "
                f"trusted: {why}; name another run (`groove history verify` lists them)"
            )
        err.write(
            f"{PROG}: warning: {name} {run_label(run)} cannot be trusted: {why}; "
            "the diff below is not what was measured\n"
        )
    comparison = compare(after, before, _thresholds(args))
    if not comparison.compatible:
        # two runs of other settings or golden sets: compared all the same, over the
        # queries they share, each difference named (the accepted baseline's rule)
        comparison = compare_across(after, before, _thresholds(args))
    # the verdicts (moved, displaced, removed answers) the eval's reports show
    verdicts = comparison_verdicts(comparison)
    failures = [*comparison.regressions, *removed_answer_failures(verdicts)]
    status = 1 if failures and gating else 0
    if _format(args) == "json":
        report = build_json_report(after, comparison, recorded=True, verdicts=verdicts)
        write_json(out, dumps_json_report(report))
        return status
    out.write(
        render_text(
            after,
            comparison,
            color=_color(args, out),
            title=f"diff against {run_label(before)}",
            verdicts=verdicts,
        )
    )
    if failures:
        out.write(f"Regressed by more than {comparison.threshold:g}: {', '.join(failures)}\n")
    return status


# --------------------------------------------------------------------------- freeze


def _freeze(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = history_path(_kb(args))
    frozen = freeze_run(path, args.run)
    out.write(
        f"frozen baseline: the run of {display_timestamp(frozen.timestamp)}; "
        "later runs are compared with it while they are comparable\n"
    )
    return 0


def _delete(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = history_path(_kb(args))
    deleted = delete_run(path, args.run)
    note = " (it was the frozen baseline: none is frozen now)" if deleted.frozen else ""
    shown, label = display_timestamp(deleted.timestamp), run_label(deleted)
    # the label (as stored, what RUN names) only when it reads otherwise
    named = shown if shown == label else f"{shown} ({label})"
    out.write(f"deleted the run of {named} from {path}{note}\n")
    return 0


def _unreadable(run: RunRecord) -> str | None:
    """Why a run's queries cannot be read (a run is listed before they are read)."""
    try:
        len(run.per_query)
    except UnreadableRun as exc:
        return f"its digest matches, but its queries cannot be read ({exc.reason})"
    return None


def _verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    path = history_path(_kb(args))
    damage: list[str] = []
    runs = load_history(path, warnings=damage)
    for warning in damage:
        err.write(f"{PROG}: warning: {warning}\n")
    problems = [(run, untrusted(run) or _unreadable(run)) for run in runs]
    bad = [(run, why) for run, why in problems if why is not None]
    for run, why in bad:
        out.write(f"{run_label(run)}: {why}\n")
    if damage:
        # what could not be read cannot be vouched for: the warning above says what
        out.write(
            f"{PROG}: {path} is damaged (see the warning): {len(runs)} run(s) read, "
            f"{len(bad)} of them untrusted; the next save keeps a copy of the file\n"
        )
        return 1
    if bad:
        out.write(
            f"{PROG}: {len(bad)} of {len(runs)} run(s) in {path} cannot be trusted; "
            "they are never used as the baseline (`groove history delete RUN` "
            "removes one)\n"
        )
        return 1
    out.write(f"{PROG}: {len(runs)} run(s) in {path}, each as it was recorded\n")
    return 0
