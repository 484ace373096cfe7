"""``groove init``: starter files for a knowledge base.

Writes ``<kb>/.groove-eval.yml`` (a commented golden file listing the KB's documents
and headings, with one example of each kind of entry) and ``<kb>/groove.toml``
(every setting at its default, commented out).  An existing file is never
overwritten: it is left alone and named.  Adds the index and the local run log to
``<kb>/.gitignore`` (appended, every existing byte kept).  Ends with the next
command to run.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from pytest_groove.cli.args import check_kb, run_reporting_errors
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import DEFAULT_GOLDEN_NAME
from pytest_groove.evaluation.starter import (
    GITIGNORE_LINES,
    golden_starter,
    missing_gitignore_lines,
    outline,
    toml_starter,
)
from pytest_groove.files.atomic import open_new
from pytest_groove.settings.config import CONFIG_FILE_NAME, Settings

PROG = "groove init"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``init`` on the ``groove`` command's sub-parsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "init",
        help="write a commented starter golden file and groove.toml into a knowledge base",
        description=(
            f"Write <kb>/{DEFAULT_GOLDEN_NAME} (listing the KB's documents and headings) and "
            f"<kb>/{CONFIG_FILE_NAME} (every default, commented out). Existing files are "
            "never overwritten."
        ),
    )
    p.add_argument(
        "--kb-path", type=Path, required=True, metavar="DIR", help="the knowledge base folder"
    )
    p.set_defaults(func=run)
    return p


def _write_new(path: Path, text: str) -> bool:
    """Create ``path`` with ``text``; False when it already exists (left untouched)."""
    try:
        handle = open_new(path)
    except OSError as exc:
        raise GrooveError(
            f"could not create {path}: {exc.strerror or exc} (make the knowledge base "
            "folder writable, or write the two starter files by hand: docs/cli.md#groove-init)"
        ) from None
    if handle is None:
        return False
    try:
        with handle:
            handle.write(text.encode("utf-8"))
    except BaseException as exc:
        # the file is ours (created just now): a cut-short starter is removed, or the
        # next `groove init` would keep it as "exists" and eval would refuse it
        path.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise GrooveError(
                f"could not write {path}: {exc.strerror or exc}; nothing was kept"
            ) from None
        raise
    return True


def _init(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    kb: Path = args.kb_path
    check_kb(kb)
    documents, total = outline(kb, Settings())
    written: list[Path] = []
    for name, text in (
        (DEFAULT_GOLDEN_NAME, golden_starter(documents, total)),
        (CONFIG_FILE_NAME, toml_starter(Settings())),
    ):
        path = kb / name
        if _write_new(path, text):
            written.append(path)
            out.write(f"wrote {path}\n")
        else:
            out.write(f"kept {path} (it exists; groove init never overwrites a file)\n")
    _update_gitignore(kb, out)
    out.write(
        f"{total} document(s) listed. Next: write a few queries in {kb / DEFAULT_GOLDEN_NAME}, "
        f"then run: groove eval --kb-path {kb}   (or: pytest --groove-kb {kb})\n"
    )
    return 0


#: the most of an existing .gitignore read to see which lines it already has
_GITIGNORE_SCAN_BYTES = 1024 * 1024


def _update_gitignore(kb: Path, out: TextIO) -> None:
    """Add the lines the KB's ``.gitignore`` lacks (created when absent), keeping every
    byte it holds: an ordinary run then never modifies a tracked file."""
    path = kb / ".gitignore"
    try:
        with path.open("rb") as handle:
            data = handle.read(_GITIGNORE_SCAN_BYTES)
    except FileNotFoundError:
        data = b""
    except OSError as exc:
        out.write(f"left {path} alone ({exc.strerror or exc}); add: {' '.join(GITIGNORE_LINES)}\n")
        return
    missing = missing_gitignore_lines(data.decode("utf-8", "replace"))
    if not missing:
        return
    block = "# pytest-groove: the index and the local run log (the baseline is committed)\n"
    block += "".join(f"{line}\n" for line in missing)
    if data and not data.endswith(b"\n"):
        block = "\n" + block
    try:
        with path.open("ab") as handle:
            handle.write(block.encode("utf-8"))
    except OSError as exc:
        out.write(f"could not add to {path} ({exc.strerror or exc}); add: {' '.join(missing)}\n")
        return
    done = "updated" if data else "wrote"
    out.write(f"{done} {path} ({len(missing)} line(s) for groove's local files)\n")


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    return run_reporting_errors(_init, args, out, err)
