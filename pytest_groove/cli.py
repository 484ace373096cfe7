"""The ``groove`` command line: ``index``, ``search``, ``eval`` and ``tune``.

Every subcommand is a thin door onto the same engine the pytest plugin uses.  Input
problems end as one ``Error: ...`` line on stderr and a non-zero exit status, never
a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from pytest_groove.config import Settings
from pytest_groove.errors import GrooveError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def _bool_arg(name: str) -> Callable[[str], bool]:
    def parse(text: str) -> bool:
        from pytest_groove.config import parse_bool_flag

        try:
            return parse_bool_flag(name, text)
        except GrooveError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    return parse


def _unit_float(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} takes a number in [0, 1]") from None
        if not 0.0 <= value <= 1.0:
            raise argparse.ArgumentTypeError(f"{name} must be in [0, 1] (got {text})")
        return value

    return parse


def _whole_number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    return parse


#: ``groove search --limit 0`` is a valid (empty) request
non_negative_int = _whole_number(0)
#: an evaluation with no hits per query measures nothing: eval and tune need >= 1
positive_int = _whole_number(1)


def add_kb_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags every subcommand shares: where the KB, config and index are."""
    parser.add_argument("--kb-path", type=Path, required=True, help="the knowledge base folder")
    parser.add_argument("--model", default=None, help="embedding model (default: e5-small)")
    parser.add_argument("--config", type=Path, default=None, help="groove.toml to read")
    parser.add_argument("--index-dir", type=Path, default=None, help="where the index lives")


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The search-pipeline overrides shared by ``search`` and ``eval``."""
    parser.add_argument("--reranker", default=None, help="cross-encoder reranker (default none)")
    parser.add_argument("--mmr", type=_bool_arg("--mmr"), default=None, metavar="BOOL")
    parser.add_argument("--mmr-lambda", type=_unit_float("--mmr-lambda"), default=None)
    parser.add_argument(
        "--mmr-same-doc-penalty", type=_unit_float("--mmr-same-doc-penalty"), default=None
    )
    parser.add_argument(
        "--parent-retriever", type=_bool_arg("--parent-retriever"), default=None, metavar="BOOL"
    )


def load_cli_settings(args: argparse.Namespace) -> Settings:
    """Settings from ``--config``/``<kb>/groove.toml`` with CLI overrides applied."""
    from pytest_groove.config import SearchOverrides, load_settings, with_overrides

    return with_overrides(
        load_settings(args.kb_path, getattr(args, "config", None)),
        model=getattr(args, "model", None),
        index_dir=getattr(args, "index_dir", None),
        overrides=SearchOverrides(
            reranker=getattr(args, "reranker", None),
            mmr=getattr(args, "mmr", None),
            mmr_lambda=getattr(args, "mmr_lambda", None),
            mmr_same_doc_penalty=getattr(args, "mmr_same_doc_penalty", None),
            parent_retriever=getattr(args, "parent_retriever", None),
        ),
    )


def k_list_arg(text: str) -> tuple[int, ...]:
    """``--k 1,5,10`` for argparse (bad values become argparse's usage error)."""
    from pytest_groove.config import parse_k_list

    try:
        return parse_k_list("--k", text)
    except GrooveError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_golden_arguments(parser: argparse.ArgumentParser, *, k_help: str) -> None:
    """Flags ``eval`` and ``tune`` share: the golden set, the cut-offs, output, reindexing."""
    parser.add_argument("--golden", type=Path, help="golden file (default: <kb>/.groove-eval.yml)")
    parser.add_argument("--k", type=k_list_arg, action="append", metavar="1,5,10", help=k_help)
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format")
    parser.add_argument("--no-color", action="store_true", help="no ANSI colour (also: NO_COLOR)")
    parser.add_argument(
        "--no-reindex",
        action="store_true",
        help="use the index as it is instead of bringing it up to date first",
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
        out.flush()
        err.write(f"Error: {exc.message}\n")
        return exc.exit_code


# --------------------------------------------------------------------------- index


def _run_index(args: argparse.Namespace) -> int:
    from pytest_groove.engine import run_indexer

    settings = load_cli_settings(args)
    report = run_indexer(
        args.kb_path,
        settings,
        force=args.force,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(report.summary())
    return EXIT_OK


# --------------------------------------------------------------------------- search


def _run_search(args: argparse.Namespace) -> int:
    from pytest_groove.engine import open_engine

    settings = load_cli_settings(args)
    with open_engine(args.kb_path, settings, reindex=False) as engine:
        response = engine.search_response(args.query, args.limit)
    if args.format == "json":
        payload = {
            "query": args.query,
            "results": [hit.to_json() for hit in response.hits],
            "low_confidence": response.low_confidence,
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return EXIT_OK
    if not response.hits:
        print("no results")
        return EXIT_OK
    for hit in response.hits:
        heading = f" > {hit.heading}" if hit.heading else ""
        print(f"{hit.rank:>3}. {hit.path}{heading}  (score {hit.score:.4f})")
        snippet = " ".join(hit.content.split())
        if snippet:
            print(f"     {snippet[:160]}{'...' if len(snippet) > 160 else ''}")
    if response.low_confidence:
        print("(low confidence: no result stands out from the rest)")
    return EXIT_OK


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="groove",
        description="Index a Markdown knowledge base, search it, and measure retrieval quality.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p_index = sub.add_parser("index", help="build or update the index of a knowledge base")
    add_kb_arguments(p_index)
    p_index.add_argument("--force", action="store_true", help="rebuild from scratch")
    p_index.set_defaults(func=_run_index)

    p_search = sub.add_parser("search", help="run one query through the hybrid search")
    add_kb_arguments(p_search)
    add_pipeline_arguments(p_search)
    p_search.add_argument("--limit", type=non_negative_int, default=5)
    p_search.add_argument("--format", choices=("text", "json"), default="text")
    p_search.add_argument("query", help="the query text (prefix a word with - to exclude it)")
    p_search.set_defaults(func=_run_search)

    from pytest_groove.evaluation import command as eval_command
    from pytest_groove.tune import command as tune_command

    eval_command.add_arguments(sub)
    tune_command.add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = int(args.func(args))
    except GrooveError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
