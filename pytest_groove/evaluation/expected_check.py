"""Before any search: every expected path (and heading) of the golden set must exist.

An expected path that is not in the index -- a typo, a renamed or deleted file, a
file the indexer skipped -- would be scored as an ordinary miss, and the run would be
recorded as the next baseline.  That is a mistake in the golden file, not a retrieval
result, so both doors call :func:`check_expected_entries` after indexing and before
the first search, and stop with one line naming the golden file, the line, the
missing path or heading and the closest existing spellings.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from pathlib import Path

from pytest_groove.errors import GrooveError, clip
from pytest_groove.evaluation.metrics import normalise_heading
from pytest_groove.evaluation.records import ExpectedEntry, GoldenSet
from pytest_groove.files.beneath import Skipped, open_root, read_beneath
from pytest_groove.kb.markdown import MERGE_THRESHOLD_BYTES, merged_headings

#: suggestions shown after "did you mean"
_SUGGESTIONS = 3
#: how alike (difflib ratio) a suggestion must be
_CUTOFF = 0.6


def _did_you_mean(wanted: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(wanted, list(choices), n=_SUGGESTIONS, cutoff=_CUTOFF)
    if not close:
        return ""
    return " (did you mean " + ", ".join(f"`{clip(choice)}`" for choice in close) + "?)"


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name the OS refuses (too long, ...): no such file
        return False


def _problem(
    entry: ExpectedEntry, indexed: Mapping[str, Collection[str | None]], kb: Path
) -> str | None:
    headings = indexed.get(entry.path)
    if headings is None:
        why = "is not in the index"
        if _is_file(kb / entry.path):
            why += " (the file exists but was not indexed: see the indexing warnings)"
        return f"expected path `{clip(entry.path)}` {why}" + _did_you_mean(entry.path, indexed)
    if entry.heading is None:
        return None
    wanted = normalise_heading(entry.heading)
    named = {normalise_heading(h): h for h in headings if h is not None}
    if wanted in named:
        return None
    merged = _merged_into(kb, entry.path, wanted)
    if merged is not None:
        return (
            f"expected heading `{clip(entry.heading)}` of `{clip(entry.path)}` is no heading "
            f"in the index: its section is under {MERGE_THRESHOLD_BYTES} bytes, so it was "
            f"merged into the section before it ({merged}); pin that heading instead, or "
            "lengthen the section"
        )
    return (
        f"expected heading `{clip(entry.heading)}` is not a heading of `{clip(entry.path)}`"
        + _did_you_mean(entry.heading, list(named.values()))
    )


#: the most of a document read to tell a merged heading from an absent one
_MERGE_SCAN_BYTES = 4 * 1024 * 1024


def _merged_into(kb: Path, rel: str, wanted: str) -> str | None:
    """How the chunk that took in the short section ``wanted`` of ``rel`` is named
    (``heading `X``` or ``the document's opening text``); None when ``rel``'s own
    headings do not fold ``wanted`` away (or the file cannot be read: the plain
    "not a heading" message stands).  Only on the error path: the file is re-read.
    """
    if not rel.lower().endswith(".md"):
        return None
    try:
        root_fd = open_root(kb)
    except OSError:
        return None
    try:
        data = read_beneath(root_fd, kb, rel, None, _MERGE_SCAN_BYTES)
    except (Skipped, OSError):
        return None
    finally:
        os.close(root_fd)
    folded = merged_headings(data.decode("utf-8", "replace"))
    for heading, into in folded.items():
        if normalise_heading(heading) == wanted:
            return "the document's opening text" if into is None else f"heading `{clip(into)}`"
    return None


def unindexed_paths(golden: GoldenSet, indexed: Mapping[str, Collection[str | None]]) -> list[str]:
    """Expected paths that name no indexed document, in golden order, once each."""
    missing = [e.path for q in golden.queries for e in q.expected if e.path not in indexed]
    return list(dict.fromkeys(missing))


def check_expected_entries(
    golden: GoldenSet,
    indexed: Mapping[str, Collection[str | None]],
    kb: Path,
    removed: Collection[str] = (),
) -> None:
    """Raise :class:`GrooveError` unless every expected entry names indexed content.

    ``indexed`` maps each indexed path to the headings its chunks carry (``None``
    for a chunk without one), as :meth:`Engine.headings_by_path` returns it.  The
    message names the first problem and counts the others.  A path in ``removed``
    (it was in the baseline run's corpus) is no mistake of the golden file: the
    document was deleted since, and the query scores it as a miss.
    """
    problems: list[tuple[int, str]] = []
    for query in golden.queries:
        for entry in query.expected:
            if entry.path in removed and entry.path not in indexed:
                continue
            problem = _problem(entry, indexed, kb)
            if problem is not None:
                problems.append((entry.line or query.line, problem))
    if not problems:
        return
    line, first = problems[0]
    more = len(problems) - 1
    tail = f" (and {more} more expected entr{'y' if more == 1 else 'ies'} like it)" if more else ""
    raise GrooveError(
        f"golden file {golden.path}: line {line}: {first}{tail}; fix the golden file "
        "(nothing was searched or recorded)"
    )


def check_kb_has_documents(indexed: Collection[str], kb: Path, parsers: Collection[str]) -> None:
    """Refuse a knowledge base in which nothing was indexed.

    Every query of such a run fails with "no hits", and an all-zero run recorded as
    the baseline would make every later run look like an improvement.
    """
    if indexed:
        return
    kinds = ", ".join(f".{p}" for p in sorted(parsers)) or ".md"
    raise GrooveError(
        f"the knowledge base {kb} has no indexable document: only {kinds} files are "
        "indexed (Markdown by default; enable other kinds under [parsers] in groove.toml); "
        "nothing was recorded"
    )


def check_before_search(
    golden: GoldenSet,
    indexed: Mapping[str, Collection[str | None]],
    kb: Path,
    parsers: Collection[str],
    removed: Collection[str] = (),
) -> None:
    """Both checks, in the order a user fixes them: an empty KB, then the golden entries."""
    check_kb_has_documents(indexed, kb, parsers)
    check_expected_entries(golden, indexed, kb, removed)
