"""``groove import beir``: a BEIR-format dataset as a knowledge base to evaluate.

The work is in :mod:`pytest_groove.interop.beir`; this module reads the arguments and
prints what was written, then the next command to run.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import run_reporting_errors
from pytest_groove.files.paths import check_os_path

PROG = "groove import"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``import`` (and its one format, ``beir``) on ``groove``'s sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "import",
        help="turn a public IR dataset (BEIR format) into a knowledge base with a golden file",
        description="Write a dataset's documents as Markdown notes and its judgements as the "
        "KB's .groove-eval.yml.",
    )
    formats = p.add_subparsers(
        dest="format", metavar="FORMAT", help="the dataset's format (beir is the one there is)"
    )
    formats.required = True
    beir = formats.add_parser(
        "beir",
        help="a BEIR dataset folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv",
        description="Import a BEIR dataset folder (corpus.jsonl, queries.jsonl, "
        "qrels/<split>.tsv) into a new knowledge base folder.",
    )
    beir.add_argument("source", type=Path, metavar="DIR", help="the unzipped BEIR dataset folder")
    beir.add_argument(
        "--kb-path",
        type=Path,
        required=True,
        metavar="OUT",
        help="the knowledge base folder to write (new or empty)",
    )
    beir.add_argument(
        "--split",
        default="test",
        metavar="NAME",
        help="which qrels/<NAME>.tsv judges the queries (default: test)",
    )
    beir.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty OUT, over files of the same name (others stay)",
    )
    beir.set_defaults(func=run)
    return p


def _import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pytest_groove.interop.beir import first_and_more, import_beir, note_cap_text

    # a path the OS would refuse (a NUL, a name the locale cannot write) is one line
    check_os_path(args.source, "dataset", "the DIR argument", require_utf8=False)
    check_os_path(args.kb_path, "knowledge base", "--kb-path")
    summary = import_beir(args.source, args.kb_path, split=args.split, force=args.force)
    skipped = (
        f" ({summary.unjudged_queries} without a judged document in {args.split} left out)"
        if summary.unjudged_queries
        else ""
    )
    out.write(
        f"wrote {summary.documents} note(s) and {summary.queries} golden query(ies){skipped} "
        f"into {args.kb_path}\n"
    )
    if summary.empty_documents:
        out.write(f"  {summary.empty_documents} document(s) with no text not written\n")
    if summary.oversized_documents:
        out.write(
            f"  {summary.oversized_documents} document(s) over the {note_cap_text()} a note "
            "may hold not written\n"
        )
    if summary.left_out:
        # judged queries eval could not run: named, since the set is no longer the
        # dataset's whole split (figures are not comparable with published ones)
        out.write(
            f"  {len(summary.left_out)} judged query(ies) left out, which groove eval "
            f"would refuse: {first_and_more(summary.left_out)}\n"
        )
    out.write(f"Next: groove eval --kb-path {args.kb_path}\n")
    return 0


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    return run_reporting_errors(_import, args, out, err)
