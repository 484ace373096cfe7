"""The ``groove`` subcommands' arguments: the shared option table spelled ``--<name>``.

The options both doors share are declared once, in :mod:`pytest_groove.settings.options`;
the groups below only pick which of them a subcommand takes.  Options that exist
only on the command line (``--kb-path``, ``--format``, ``--no-color``) are declared
here, each with its help text.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TextIO

from pytest_groove.errors import GrooveError, UsageError, clip_path
from pytest_groove.files.paths import check_os_path, foreign_name_encoding, locale_advice
from pytest_groove.files.resource_limits import limits_as_errors
from pytest_groove.search.retrievers.run_options import (
    ENGINE_PIPELINE_OPTIONS,
    RETRIEVER_DETAILS,
)
from pytest_groove.settings.config import Settings
from pytest_groove.settings.options import (
    LIST_KINDS,
    OPTIONS_BY_NAME,
    Option,
    RunOptions,
    read_run_options,
    settings_for,
)

#: the flags every subcommand takes besides ``--kb-path``: where the KB, config and index are
KB_OPTIONS = ("model", "config", "index-dir")
#: the search-pipeline overrides ``search`` and ``eval`` share
PIPELINE_OPTIONS = ENGINE_PIPELINE_OPTIONS
#: the options that name a retriever of the team's own and describe it
RETRIEVER_OPTIONS = ("retriever", *RETRIEVER_DETAILS)
#: the golden-set flags ``eval`` and ``tune`` share (with --format / --no-color)
GOLDEN_OPTIONS = ("golden", "k")


#: the exit status of a bad flag value (argparse's own)
EXIT_USAGE = 2


#: the words argparse puts before a refused value's message
_ARGUMENT_PREFIX = re.compile(r"argument (--[\w-]+): ")


class GrooveParser(argparse.ArgumentParser):
    """argparse, with a refused flag as one line: ``groove eval: error: ...``, exit 2.

    The same line a bad value found later (:class:`UsageError`, e.g. ``--threshold``
    naming a k the run does not measure) is printed as (:func:`error_line`), so every
    bad flag value reads alike; the usage is one ``--help`` away.
    """

    def error(self, message: str) -> NoReturn:
        # argparse says "argument --k: " before a message that names the flag itself
        named = _ARGUMENT_PREFIX.match(message)
        if named is not None and message[named.end() :].startswith(named.group(1)):
            message = message[named.end() :]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


#: the code points Python's file-system decoding gives the bytes it cannot decode
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def typed_text(value: str, what: str) -> str:
    """Text from the command line as it was typed.

    Python decodes the arguments with the locale's encoding and keeps each byte it
    cannot decode as a lone surrogate (under ``LC_ALL=C``, every byte of ``切り戻し``):
    searched as they are, those match nothing the index holds, and strict JSON refuses
    them.  The bytes are read as UTF-8 instead, the encoding every KB file is read in;
    bytes that are not UTF-8 either are refused with one line.  Under a locale whose
    codec cannot give the bytes back (UTF-8 typed under ``ja_JP.EUC-JP``: the C library
    decoded the arguments, Python's codec cannot encode what it made of them), the
    text typed is lost: one line names the locale and the fix.
    """
    if value.isascii():
        return value
    try:
        raw = os.fsencode(value)
    except UnicodeEncodeError:
        encoding = foreign_name_encoding() or sys.getfilesystemencoding()
        raise UsageError(
            f"the {what} cannot be read as typed: {locale_advice(encoding, 'its command line')}"
        ) from None
    if _ESCAPED_BYTE.search(value) is None:
        return value
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"the {what} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start}); "
            "type it in a UTF-8 terminal, or under a UTF-8 locale (LC_ALL=C.UTF-8)"
        ) from None


def error_line(exc: GrooveError, args: argparse.Namespace) -> str:
    """The line ``groove`` prints for ``exc``: a bad flag value (:class:`UsageError`) as
    argparse words its refusals (``groove eval: error: ...``), anything else ``Error: ...``."""
    message = exc.message
    kb = getattr(args, "kb_path", None)
    if isinstance(kb, Path):
        from pytest_groove.engine.index_command import with_index_commands

        message = with_index_commands(message, kb, run_options(args))
    if isinstance(exc, UsageError):
        command = getattr(args, "command", None)
        prog = f"groove {command}" if command else "groove"
        return f"{prog}: error: {message}"
    return f"Error: {message}"


def _argparse_type(option: Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = option.parse(option.cli_flag, text)
        except ValueError as exc:
            # "groove eval: error: <message>", exit 2 (GrooveParser)
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
        elif option.kind in LIST_KINDS:
            # may repeat: --k 1,5 --k 10 is --k 1,5,10 (--metrics alike)
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


def add_search_arguments(parser: argparse.ArgumentParser, names: tuple[str, ...] = ()) -> None:
    """The flags of a command that searches the KB: where it is, the pipeline overrides,
    then the table's options ``names``."""
    add_kb_arguments(parser)
    add_pipeline_arguments(parser)
    add_options(parser, names)


def add_golden_arguments(
    parser: argparse.ArgumentParser,
    *,
    k_help: str | None = None,
    formats: tuple[str, ...] = (),
) -> None:
    """Flags ``eval`` and ``tune`` share: the golden set, the cut-offs, output, reindexing
    (``formats``: the report formats ``--format`` takes besides text and JSON)."""
    add_options(parser, (*GOLDEN_OPTIONS, "no-reindex"), help={"k": k_help} if k_help else {})
    add_format_argument(parser, formats)
    parser.add_argument(
        "--no-color", action="store_true", help="no ANSI colour in the report (also: NO_COLOR)"
    )


def add_format_argument(parser: argparse.ArgumentParser, formats: tuple[str, ...] = ()) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json", *formats),
        default="text",
        help="report format on stdout (default: text)",
    )


def run_options(args: argparse.Namespace) -> RunOptions:
    """The table's options as this subcommand was given them (absent ones: not given)."""
    return read_run_options(lambda option: getattr(args, option.dest, None))


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``/``<kb>/groove.toml`` with CLI overrides applied."""
    run = run_options(args)
    # a path the OS would refuse is one line before anything looks at it
    check_os_path(args.kb_path, "knowledge base", "--kb-path")
    if run.config is not None:
        check_os_path(run.config, "config file", "--config")
    return settings_for(args.kb_path, run)


def option_type(name: str) -> Callable[[str], Any]:
    """The argparse type of the table's option ``name`` (``groove search --limit`` takes
    the ``--limit`` of ``eval``, checked alike)."""
    return _argparse_type(OPTIONS_BY_NAME[name])


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
        # out of open files or memory where no caller said so: the same one line
        with limits_as_errors():
            return body(args, out, err)
    except GrooveError as exc:
        # the report may be what failed (a full or closed output): the error line wins
        with contextlib.suppress(GrooveError, OSError, ValueError):
            out.flush()
        err.write(error_line(exc, args) + "\n")
        return exc.exit_code
