"""The ``groove`` commands behind :func:`pytest_groove.cli.main`: ``index`` and
``search`` themselves, the parser that wires every subcommand, and the run of one
parsed command line (its errors spelled as one line each).

Imported by ``main`` inside its error boundary, so a Ctrl-C while these modules load
is reported like one during the command.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_groove import __version__
from pytest_groove.cli.args import (
    GrooveParser,
    add_format_argument,
    add_kb_arguments,
    add_search_arguments,
    error_line,
    load_cli_settings,
    option_type,
    run_options,
    typed_text,
)
from pytest_groove.cli.ending import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, report_line
from pytest_groove.engine.names import check_config_names, check_flag_names
from pytest_groove.errors import GrooveError, IndexMissing, OutputFailed, spell_flags
from pytest_groove.files.resource_limits import resource_limit_of
from pytest_groove.search.hits import grouping_note, hit_label, hit_snippet
from pytest_groove.settings.config import Settings
from pytest_groove.text.console import write_json

#: characters of a hit's text ``groove search`` shows under it
SNIPPET_CHARS = 160

# --------------------------------------------------------------------------- index


def _run_index(args: argparse.Namespace) -> int:
    from pytest_groove.embed.registry import get_embedder
    from pytest_groove.engine.indexing import run_indexer

    check_flag_names(run_options(args))  # an unknown --model is named first
    settings = load_cli_settings(args)
    check_config_names(settings, reranker=False)  # ... then one groove.toml names
    embedder = get_embedder(settings.index.model)
    _refuse_an_empty_kb(args.kb_path, settings)
    report = run_indexer(
        args.kb_path,
        settings,
        embedder=embedder,
        force=args.force,
        log=lambda line: print(spell_flags(line), file=sys.stderr),
    )
    print(report.summary())
    return EXIT_OK


def _refuse_an_empty_kb(kb: Path, settings: Settings) -> None:
    """A KB without one indexable file is almost always the wrong ``--kb-path``: say so
    instead of "0 chunks embedded", and leave no ``.groove/`` folder behind.

    An index that already exists is still brought up to date (its notes were deleted),
    so the KB is walked only when there is none: a re-index walks it once, not twice.
    """
    from pytest_groove.kb.indexer import GROOVE_DIR_NAME
    from pytest_groove.kb.source.walk import collect_files

    index = settings.index.index_dir or kb / GROOVE_DIR_NAME
    if os.path.exists(index):  # False, not an error, for a name the OS refuses
        return
    collected = collect_files(kb, settings.index)
    if collected.files or collected.unlisted:
        return
    kinds = ", ".join(f".{p}" for p in sorted(settings.index.parsers)) or ".md"
    raise GrooveError(
        f"no indexable file under {kb}: only {kinds} files are indexed (Markdown by "
        "default; other kinds under [parsers] in groove.toml); check --kb-path. Nothing "
        f"was indexed and no {GROOVE_DIR_NAME}/ folder was created"
    )


# --------------------------------------------------------------------------- search


def _run_search(args: argparse.Namespace) -> int:
    from pytest_groove.engine.builtin import open_engine
    from pytest_groove.engine.index_command import missing_index

    run = run_options(args)
    query = typed_text(args.query, "query")
    check_flag_names(run)  # a bad --model / --reranker before the config is read
    settings = load_cli_settings(args)
    check_config_names(settings)
    try:
        engine = open_engine(args.kb_path, settings, reindex=False)
    except IndexMissing as exc:
        raise missing_index(exc, args.kb_path, run) from None
    with engine:
        response = engine.search_response(query, args.limit)
    if args.format == "json":
        payload = {
            "query": query,
            "results": [hit.to_json() for hit in response.hits],
            "low_confidence": response.low_confidence,
        }
        write_json(sys.stdout, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return EXIT_OK
    if not response.hits:
        print("no results")
        return EXIT_OK
    for hit in response.hits:
        print(f"{hit.rank:>3}. {hit_label(hit.path, hit.heading)}  (score {hit.score:.4f})")
        snippet = hit_snippet(hit.content, SNIPPET_CHARS)
        if snippet:
            print(f"     {snippet}")
    # judged on the scores as printed: the note explains what the reader sees
    shown = [round(hit.score, 4) for hit in response.hits]
    note = grouping_note(shown, response.grouped_by_document)
    if note is not None:
        print(note)
    if response.low_confidence:
        print("(low confidence: no result stands out from the rest)")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


#: the commands this module runs itself (their parsers need no other command's module)
_BUILT_IN = frozenset({"index", "search"})


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``groove`` parser; given the ``command`` a command line names, the other
    commands' modules are left unimported when it is one this module runs."""
    parser = GrooveParser(
        prog="groove",
        description="Index a Markdown knowledge base, search it, and measure retrieval quality.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p_index = sub.add_parser("index", help="build or update the index of a knowledge base")
    add_kb_arguments(p_index)
    p_index.add_argument("--force", action="store_true", help="rebuild the index from scratch")
    p_index.set_defaults(func=_run_index)

    p_search = sub.add_parser("search", help="run one query through the hybrid search")
    add_search_arguments(p_search)
    p_search.add_argument(
        "--limit",
        type=option_type("limit"),
        default=5,
        metavar="N",
        help="how many hits to show (default: 5; capped at 1000)",
    )
    add_format_argument(p_search)
    p_search.add_argument("query", help="the query text (prefix a word with - to exclude it)")
    p_search.set_defaults(func=_run_search)

    if command in _BUILT_IN:
        # `groove index` and `groove search` need none of the other commands' parsers,
        # and importing those loads the whole evaluation stack (about 0.15 s of CPU:
        # a tenth of a no-op re-index of 10,000 files)
        return parser
    from pytest_groove.cli import (
        baseline,
        coverage,
        evaluate,
        floors,
        golden,
        history,
        importer,
        init,
        tune,
    )

    evaluate.add_arguments(sub)
    baseline.add_arguments(sub)
    tune.add_arguments(sub)
    history.add_arguments(sub)
    init.add_arguments(sub)
    importer.add_arguments(sub)
    floors.add_arguments(sub)
    golden.add_arguments(sub)
    coverage.add_arguments(sub)
    return parser


def run_command_line(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run its command; its status."""
    words = list(sys.argv[1:] if argv is None else argv)
    # a command line that starts with a command's name (`groove -h index` asks for
    # every command: it gets them all)
    parser = build_parser(words[0] if words else None)
    if not words:
        # `groove` alone asks what there is: the commands, not an error about one
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise  # argparse refused a flag: its own line and status 2
        # --help or --version printed and stops: output that cannot be written (a full
        # device, a reader gone) is an error here too, not a silent success
        try:
            sys.stdout.flush()
        except OutputFailed as exc:
            report_line(f"Error: {exc.message}")
            return EXIT_ERROR
        raise
    # the modules a command runs are imported by now: their objects live as long as
    # the process, so the collector stops walking them (a full collection walks every
    # tracked object, and an eval that reads kept files builds enough to trigger a few);
    # left alone when the caller froze some already (the freeze does not nest)
    freezes = gc.get_freeze_count() == 0
    if freezes:
        gc.freeze()
    try:
        code = int(args.func(args))
        # inside the boundary: a report still buffered can fail here (/dev/full)
        sys.stdout.flush()
    except GrooveError as exc:
        report_line(error_line(exc, args))
        return exc.exit_code
    except (OSError, MemoryError) as exc:
        # out of open files or memory where no caller said so (groove index, search)
        limit = resource_limit_of(exc)
        if limit is None:
            raise
        report_line(error_line(limit, args))
        return limit.exit_code
    except KeyboardInterrupt:
        report_line("interrupted")
        return EXIT_INTERRUPTED
    finally:
        # a caller that goes on in this process (a test, a tool calling main()) gets
        # its collector back as it was
        if freezes:
            gc.unfreeze()
    return code
