"""``groove golden add``: add a query to the golden file from the search's own hits.

The command searches the query -- with the built-in engine, or the ``--retriever``,
opened as ``groove eval`` opens it -- shows the top hits (rank, ``path # heading``, a
short snippet, escaped), and asks at the terminal which of them answer it (``1,3``);
``--pick 1,3`` answers for a script.  The picked hits become the query's ``expected``
entries (path and heading), and the query is appended to the golden file, every byte
already there kept (:mod:`pytest_groove.evaluation.golden.append`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import (
    RETRIEVER_OPTIONS,
    add_search_arguments,
    check_kb,
    run_options,
    run_reporting_errors,
    typed_text,
)
from pytest_groove.cli.ending import EXIT_OK
from pytest_groove.errors import GrooveError, clip, clip_path
from pytest_groove.evaluation.golden.append import (
    NewQuery,
    append_query,
    entries_for,
    refuse_taken_id,
)
from pytest_groove.evaluation.golden.expected_check import check_expected_entries
from pytest_groove.evaluation.golden.file import query_text_problem
from pytest_groove.evaluation.plan import plan_evaluation
from pytest_groove.scoring.records import GoldenSet
from pytest_groove.search.hits import SearchHit, hit_snippet

PROG = "groove golden add"
#: hits shown by default
SHOWN = 10
#: characters of a hit's text shown under it
SNIPPET_CHARS = 100
#: the options the search takes, as ``groove eval`` spells them
_SEARCH_OPTIONS = (
    "golden",
    "no-reindex",
    *RETRIEVER_OPTIONS,
)


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``golden`` (with ``add``) on the ``groove`` command's sub-parsers."""
    golden: argparse.ArgumentParser = subparsers.add_parser(
        "golden", help="edit the golden file: add a query from the search's hits"
    )
    actions = golden.add_subparsers(dest="golden_command", metavar="ACTION", help="what to do: add")
    actions.required = True
    p: argparse.ArgumentParser = actions.add_parser(
        "add",
        help="search a query, pick its answers among the hits, append it to the golden file",
        description=(
            "Search QUERY, show the top hits and append the query with the hits you pick "
            "as its expected answers to the golden file (its existing bytes are kept)."
        ),
    )
    add_search_arguments(p, _SEARCH_OPTIONS)
    p.add_argument(
        "--pick",
        metavar="N,M",
        help="the hits that answer the query, by rank (1,3); without it you are asked",
    )
    p.add_argument("--id", help="the query's id (default: derived from its text)")
    p.add_argument("--tag", action="append", default=[], metavar="TAG", help="a tag; may repeat")
    p.add_argument(
        "--show", type=_positive, default=SHOWN, metavar="N", help=f"hits shown (default {SHOWN})"
    )
    p.add_argument("query", help="the query text, as a user would type it")
    p.set_defaults(func=run)
    return p


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 1000, got {text!r}")
    return value


def parse_picks(text: str, count: int) -> list[int]:
    """The 1-based ranks in ``text`` (``1,3`` or ``1 3``), once each, in the order given;
    :class:`GrooveError` for anything else."""
    picks: list[int] = []
    for part in text.replace(",", " ").split():
        if not part.isdigit() or not 1 <= int(part) <= count:
            raise GrooveError(
                f"pick `{clip(part)}` is not a hit's number; pick among 1 to {count} (e.g. 1,3)"
            )
        if int(part) not in picks:
            picks.append(int(part))
    if not picks:
        raise GrooveError(f"no hit picked; pick among 1 to {count} (e.g. 1,3)")
    return picks


def hit_lines(hits: Sequence[SearchHit]) -> list[str]:
    """Each hit as ``  1. path # heading`` and a short escaped snippet under it."""
    lines = []
    for hit in hits:
        label = hit.path if hit.heading is None else f"{hit.path} # {hit.heading}"
        lines.append(f"{hit.rank:>3}. {clip(label, 200)}")
        snippet = hit_snippet(hit.content, SNIPPET_CHARS)
        if snippet:
            lines.append(f"     {snippet}")
    return lines


def ask_picks(count: int, ask: Callable[[str], str], err: TextIO) -> list[int] | None:
    """Ask at the terminal until a valid answer; None when the user enters nothing."""
    while True:
        try:
            answer = ask(f"answers (numbers 1-{count}, e.g. 1,3; empty to cancel): ")
        except EOFError:
            return None
        if not answer.strip():
            return None
        try:
            return parse_picks(answer, count)
        except GrooveError as exc:
            err.write(f"{exc.message}\n")


def _search(args: argparse.Namespace, query: str) -> tuple[list[SearchHit], Any, Any]:
    """The hits, the plan and the indexed headings (None: the searcher knows none)."""
    from pytest_groove.cli.evaluate import open_searcher
    from pytest_groove.engine.searcher import closing_searcher

    plan = plan_evaluation(args.kb_path, run_options(args), prog=PROG)
    refuse_taken_id(plan.golden, args.id)
    with closing_searcher(open_searcher(plan)) as searcher, searcher.read_snapshot():
        hits = searcher.search(query, args.show)
        headings = searcher.headings_by_path()
        known = None
        if headings is not None:
            # the picked paths the index has, with their headings (a retriever's path
            # the index lacks is refused by the golden check, as eval would)
            known = {h.path: found for h in hits if (found := headings.get(h.path)) is not None}
    return hits, plan, known


def _add(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    check_kb(args.kb_path)
    query = typed_text(args.query, "query")
    problem = query_text_problem(query)
    if problem is not None:
        raise GrooveError(f"{problem}; nothing was added")
    picks = None if args.pick is None else args.pick
    hits, plan, known = _search(args, query)
    if not hits:
        raise GrooveError(
            "the search returned no hits: nothing to pick; the golden file is unchanged"
        )
    out.write("\n".join(hit_lines(hits)) + "\n")
    out.flush()
    if picks is not None:
        ranks = parse_picks(picks, len(hits))
    elif sys.stdin is None or not sys.stdin.isatty():
        raise GrooveError("no terminal to ask at: pass --pick with the hits' numbers (1,3)")
    else:
        asked = ask_picks(len(hits), input, err)
        if asked is None:
            out.write("nothing picked; the golden file is unchanged\n")
            return EXIT_OK
        ranks = asked
    picked = [hits[rank - 1] for rank in ranks]
    new = NewQuery(
        query=query,
        expected=entries_for([(hit.path, hit.heading) for hit in picked]),
        id=args.id,
        tags=tuple(args.tag),
    )

    def check(golden: GoldenSet) -> None:
        if known is not None:
            only = GoldenSet(golden.path, golden.hash, golden.queries[-1:])
            check_expected_entries(only, known, args.kb_path)

    golden = append_query(Path(plan.golden.path), args.kb_path, new, check)
    added = golden.queries[-1]
    out.write(
        f"added `{clip(added.id)}` to {clip_path(Path(golden.path))} (line {added.line}, "
        f"{len(added.expected)} expected)\n"
    )
    return EXIT_OK


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Execute ``groove golden add`` for parsed ``args``; returns the exit status."""
    return run_reporting_errors(_add, args, out, err)
