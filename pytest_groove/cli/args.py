"""The ``groove`` subcommands' arguments: the shared option table spelled ``--<name>``.

The options both doors share are declared once, in :mod:`pytest_groove.options`;
the groups below only pick which of them a subcommand takes.  Options that exist
only on the command line (``--kb-path``, ``--format``, ``--no-color``) are declared
here, each with its help text.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.config import Settings
from pytest_groove.errors import GrooveError, clip_path, clip_repr
from pytest_groove.options import OPTIONS_BY_NAME, Option, RunOptions, read_run_options
from pytest_groove.paths import check_os_path

#: the flags every subcommand takes besides ``--kb-path``: where the KB, config and index are
KB_OPTIONS = ("model", "config", "index-dir")
#: the search-pipeline overrides ``search`` and ``eval`` share
PIPELINE_OPTIONS = (
    "reranker",
    "mmr",
    "mmr-lambda",
    "mmr-same-doc-penalty",
    "parent-retriever",
    "vector-index",
)
#: the golden-set flags ``eval`` and ``tune`` share (with --format / --no-color)
GOLDEN_OPTIONS = ("golden", "k")


def _argparse_type(option: Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = option.parse(option.cli_flag, text)
        except ValueError as exc:
            # argparse prints "groove eval: error: argument --k: <message>", exit 2
            raise argparse.ArgumentTypeError(str(exc)) from None
        return Path(value) if option.kind == "path" else value

    convert.__name__ = option.dest
    return convert


def add_options(
    parser: argparse.ArgumentParser, names: tuple[str, ...], *, help: Mapping[str, str] = {}
) -> None:
    """Add the table's options ``names`` as ``--<name>``; ``help`` overrides per command."""
    for name in names:
        option = OPTIONS_BY_NAME[name]
        if not option.cli:
            raise ValueError(f"option {name!r} has no command-line spelling")
        text = help.get(name, option.help)
        if option.kind == "flag":
            parser.add_argument(option.cli_flag, action="store_true", help=text)
        elif option.kind == "klist":
            # may repeat: --k 1,5 --k 10 is --k 1,5,10
            parser.add_argument(
                option.cli_flag,
                type=_argparse_type(option),
                action="extend",
                metavar=option.metavar,
                help=f"{text}; may repeat",
            )
        else:
            parser.add_argument(
                option.cli_flag, type=_argparse_type(option), metavar=option.metavar, help=text
            )


def add_kb_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags every subcommand shares: where the KB, config and index are."""
    parser.add_argument(
        "--kb-path", type=Path, required=True, metavar="DIR", help="the knowledge base folder"
    )
    add_options(parser, KB_OPTIONS)


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The search-pipeline overrides shared by ``search`` and ``eval``."""
    add_options(parser, PIPELINE_OPTIONS)


def add_golden_arguments(parser: argparse.ArgumentParser, *, k_help: str | None = None) -> None:
    """Flags ``eval`` and ``tune`` share: the golden set, the cut-offs, output, reindexing."""
    add_options(parser, (*GOLDEN_OPTIONS, "no-reindex"), help={"k": k_help} if k_help else {})
    add_format_argument(parser)
    parser.add_argument(
        "--no-color", action="store_true", help="no ANSI colour in the report (also: NO_COLOR)"
    )


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="report format on stdout (default: text)",
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    """The table's options as this subcommand was given them (absent ones: not given)."""
    return read_run_options(lambda option: getattr(args, option.dest, None))


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``/``<kb>/groove.toml`` with CLI overrides applied."""
    from pytest_groove.evaluation.plan import settings_for

    run = run_options(args)
    # a path the OS would refuse is one line before anything looks at it
    check_os_path(args.kb_path, "knowledge base", "--kb-path")
    if run.config is not None:
        check_os_path(run.config, "config file", "--config")
    return settings_for(args.kb_path, run)


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type for a whole number >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number, got {clip_repr(text)}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    return parse


def check_kb(kb: Path) -> None:
    """The knowledge base must be a folder: one line naming the flag otherwise."""
    check_os_path(kb, "knowledge base", "--kb-path")
    try:
        is_dir = kb.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        raise GrooveError(
            f"knowledge base not found: {clip_path(kb)} is not a directory (check --kb-path)"
        )


def run_reporting_errors(
    body: Callable[[argparse.Namespace, TextIO, TextIO], int],
    args: argparse.Namespace,
    out: TextIO | None,
    err: TextIO | None,
) -> int:
    """Run a subcommand body; a :class:`GrooveError` becomes one ``Error:`` line."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        return body(args, out, err)
    except GrooveError as exc:
        # the report may be what failed (a full or closed output): the error line wins
        with contextlib.suppress(GrooveError, OSError, ValueError):
            out.flush()
        err.write(f"Error: {exc.message}\n")
        return exc.exit_code
