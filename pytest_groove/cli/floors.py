"""``groove floors``: the floors of ``[eval] fail_under`` against the latest run.

``groove floors --kb-path KB`` shows each floor beside what the latest recorded run
measured and what ``--raise`` would make of it; ``--raise`` edits groove.toml in place
(comments and layout kept) and prints what changed.  A floor is never lowered.  The
latest run is the newest one measured with the golden file and the settings the
configuration names now (``--model`` names the model when groove.toml does not); the
output names its model and counts the newer runs passed over.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import check_kb, run_reporting_errors
from pytest_groove.text.list_values import ascii_float

PROG = "groove floors"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "floors",
        help="show the metric floors against the latest run; --raise ratchets them up",
        description=(
            "Each floor of [eval] fail_under in groove.toml beside the latest recorded "
            "run's value. --raise raises a floor to that value, rounded down to --step, "
            "when it is higher; floors are never lowered."
        ),
    )
    p.add_argument("--kb-path", type=Path, required=True, metavar="DIR", help="the KB folder")
    p.add_argument("--config", type=Path, default=None, metavar="FILE", help="groove.toml")
    p.add_argument(
        "--model",
        default=None,
        metavar="NAME",
        help=(
            "the embedding model of the runs the floors guard (default: model in "
            "groove.toml); runs of other models are passed over"
        ),
    )
    p.add_argument(
        "--raise",
        dest="raise_floors",
        action="store_true",
        help="edit groove.toml: raise each floor the latest run exceeds",
    )
    p.add_argument(
        "--step",
        type=_step,
        default=0.01,
        metavar="X",
        help="round a raised floor down to a multiple of X (default: 0.01)",
    )
    p.set_defaults(func=run)
    return p


def _step(text: str) -> float:
    try:
        value = ascii_float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 0.5:
        raise argparse.ArgumentTypeError(f"--step takes a number in (0, 0.5] (got {text!r})")
    return value


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    return run_reporting_errors(_floors, args, out, err)


def _floors(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pytest_groove.evaluation.floor_raise import apply_raise, floor_text, plan_raise
    from pytest_groove.evaluation.runs.record import display_timestamp

    check_kb(args.kb_path)
    act = apply_raise if args.raise_floors else plan_raise
    report = act(args.kb_path, args.config, args.step, args.model)
    when = display_timestamp(report.run.timestamp)
    config = _as_given(report.config, args)
    # one-off runs of another golden file, model or settings (a smoke set, an experiment)
    skipped = report.passed_over_phrase()
    passed_over = "" if skipped is None else f" ({skipped})"
    out.write(
        f"floors in {config}, against the run of {when}, {report.measured_with}{passed_over}:\n"
    )
    for floor in report.floors:
        line = f"  {floor.label}: floor {floor_text(floor.floor)}, measured {floor.measured:.3f}"
        if floor.raised is not None:
            verb = "raised to" if args.raise_floors else "--raise would raise it to"
            line += f" -> {verb} {floor_text(floor.raised)}"
        out.write(line + "\n")
    if not report.changed:
        out.write(f"{PROG}: no floor to raise\n")
    elif args.raise_floors:
        out.write(f"{PROG}: raised {len(report.changed)} floor(s) in {config}\n")
    return 0


def _as_given(config: Path, args: argparse.Namespace) -> Path:
    """The config file as the command line named it: ``--config`` itself, or the
    KB's file under ``--kb-path`` as typed (relative stays relative)."""
    if args.config is not None:
        return Path(args.config)
    kb: Path = args.kb_path
    try:
        return kb / config.relative_to(kb.resolve())
    except ValueError:
        return config
