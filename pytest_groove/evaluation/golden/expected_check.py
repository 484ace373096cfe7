"""Before any search: every expected path (and heading) of the golden set must exist.

An expected path that is not in the index -- a typo, a renamed or deleted file, a
file the indexer skipped or an ignore rule leaves out -- would be scored as an
ordinary miss, and the run would be recorded as the next baseline.  That is a
mistake in the golden file, not a retrieval result, so both doors call
:func:`check_expected_entries` after indexing and before the first search, and stop
with one line naming the golden file, the line, the missing path or heading and the
closest existing spellings -- or, for a file still on disk, what leaves it out of the
index, and for a document a stored run indexed, that it was deleted since.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import difflib
import os
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from pytest_groove.errors import GrooveError, clip
from pytest_groove.files.beneath import Skipped, open_root, read_beneath
from pytest_groove.kb.source.markdown import MERGE_THRESHOLD_BYTES, merged_headings
from pytest_groove.kb.source.unindexed import SEE_WARNINGS, why_not_indexed
from pytest_groove.scoring.metrics import normalise_heading
from pytest_groove.scoring.records import ExpectedEntry, GoldenSet
from pytest_groove.text.plain import normalise_newlines, split_lines

#: suggestions shown after "did you mean"
_SUGGESTIONS = 3
#: how alike (difflib ratio) a suggestion must be
_CUTOFF = 0.6


def _other_normal_form(wanted: str, indexed: Collection[str]) -> str | None:
    """The indexed path that is ``wanted`` in another Unicode normal form (a macOS
    file name in NFD, a golden file typed in NFC), or None."""
    key = unicodedata.normalize("NFC", wanted)
    return next(
        (p for p in indexed if p != wanted and unicodedata.normalize("NFC", p) == key), None
    )


def _code_points(wanted: str, found: str) -> str:
    """Where the two spellings part: ``U+00E9 for U+0065 U+0301``."""
    start = next((i for i, (a, b) in enumerate(zip(wanted, found, strict=False)) if a != b), 0)
    end_w, end_f = len(wanted), len(found)
    while end_w > start and end_f > start and wanted[end_w - 1] == found[end_f - 1]:
        end_w, end_f = end_w - 1, end_f - 1

    def spelled(text: str) -> str:
        return " ".join(f"U+{ord(char):04X}" for char in text[:8])

    return f"{spelled(wanted[start:end_w])} for the file's {spelled(found[start:end_f])}"


def _did_you_mean(wanted: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(wanted, list(choices), n=_SUGGESTIONS, cutoff=_CUTOFF)
    if not close:
        return ""
    return " (did you mean " + ", ".join(f"`{clip(choice)}`" for choice in close) + "?)"


#: what the expected entries are looked for in: the built-in engine's index ...
INDEX = "the index"
#: ... or, for a custom retriever (which has no index of groove's), the KB's files
KB_FILES = "the knowledge base"

#: how the message ends when nothing says otherwise
_FIX = "fix the golden file"
#: ... when the expected document was deleted since a stored run had it
_FIX_DELETED = "update the golden file or restore the note"
#: ... when an edit of the note removed a heading a run of this golden file had
#: ... when the file is on disk and something leaves it out of the index
_FIX_UNINDEXED = "fix the golden file, or let the file be indexed"


def _problem(
    entry: ExpectedEntry,
    indexed: Mapping[str, Collection[str | None]],
    kb: Path,
    why_unindexed: Callable[[str], str | None],
    deleted: Mapping[str, str],
    where: str = INDEX,
) -> tuple[str, str] | None:
    """What is wrong with ``entry`` and how the message says to fix it (None: nothing);
    ``where`` names what the expected entries are looked for in."""
    headings = indexed.get(entry.path)
    if headings is None:
        absent = f"expected path `{clip(entry.path)}` is not in {where}"
        why = why_unindexed(entry.path)
        if why == SEE_WARNINGS:
            return f"{absent} ({why})" + _did_you_mean(entry.path, indexed), _FIX
        if why is not None:
            return f"{absent}: {why}", _FIX_UNINDEXED
        if entry.path in deleted:
            # no typo: a stored run had the document, and it is gone from the disk
            return f"{absent}: {deleted[entry.path]}", _FIX_DELETED
        twin = _other_normal_form(entry.path, indexed)
        if twin is not None:
            # looks identical, compares unequal: "did you mean `café.md`?" would puzzle
            return (
                f"{absent}: the file `{clip(twin)}` looks the same but spells it with other "
                f"Unicode code points (here {_code_points(entry.path, twin)}), and paths "
                "are compared code point for code point"
            ), "write the path as the file's name is written (copy it from the file system)"
        return absent + _did_you_mean(entry.path, indexed), _FIX
    if entry.heading is None:
        return None
    wanted = normalise_heading(entry.heading)
    named = {normalise_heading(h): h for h in headings if h is not None}
    if wanted in named:
        return None
    # only on the error path: the note is read again, once, for the two checks below
    note = _note_text(kb, entry.path)
    merged = None if note is None else _merged_into(note, wanted)
    if merged is not None:
        return (
            f"expected heading `{clip(entry.heading)}` of `{clip(entry.path)}` is no heading "
            f"in {where}: its section is under {MERGE_THRESHOLD_BYTES} bytes, so it was "
            f"merged into the section before it ({merged}); pin that heading instead, or "
            "lengthen the section"
        ), _FIX
    absent = f"expected heading `{clip(entry.heading)}` is not a heading of `{clip(entry.path)}`"
    written = None if note is None else _written_otherwise(note, wanted)
    if written is not None:
        # in the file, but in a form that starts no section: say which, not "did you mean"
        return (
            f"{absent}: it is written there {written}, and only `## ` and `### ` lines start "
            "a section (docs/retrieval-pipeline.md)"
        ), f"write it `## {clip(entry.heading)}` in the note, or pin a heading the note has"
    return absent + _did_you_mean(entry.heading, list(named.values())), _FIX


#: the most of a document read to tell a merged heading from an absent one
_MERGE_SCAN_BYTES = 4 * 1024 * 1024


def _note_text(kb: Path, rel: str) -> str | None:
    """The Markdown note ``rel`` as text, read below the KB as the indexer reads it;
    None when it is no Markdown note or cannot be read (the plain message stands)."""
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
    return data.decode("utf-8", "replace")


#: an ATX heading line: its marker and its text (a closing run of ``#`` kept, as the
#: chunker keeps it)
_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)\s*")
#: a setext underline: ``===`` or ``---`` alone on its line
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")


def _written_otherwise(note: str, wanted: str) -> str | None:
    """How ``note`` writes the heading ``wanted`` when it is there in a form that
    starts no section: a ``#`` title or a level other than 2 and 3 (``#### X``), or a
    setext heading (``X`` underlined with ``===`` or ``---``); None otherwise."""
    lines = split_lines(normalise_newlines(note))
    for number, line in enumerate(lines):
        atx = _ATX.fullmatch(line)
        if atx is not None and normalise_heading(atx.group(2)) == wanted:
            marks = atx.group(1)
            if len(marks) in (2, 3):
                continue  # a real heading: the index should have it (merged, say)
            kind = "a level-1 title" if len(marks) == 1 else f"a level-{len(marks)} heading"
            return f"as {kind} (`{clip(line.strip())}`)"
        if (
            number + 1 < len(lines)
            and line.strip()
            and normalise_heading(line) == wanted
            and _SETEXT.fullmatch(lines[number + 1]) is not None
        ):
            underline = lines[number + 1].strip()
            return f"as a setext heading (underlined with `{clip(underline[:3])}`)"
    return None


def _merged_into(note: str, wanted: str) -> str | None:
    """How the chunk that took in the short section ``wanted`` of ``note`` is named
    (``heading `X``` or ``the document's opening text``); None when the note's own
    headings do not fold ``wanted`` away (the plain "not a heading" message stands).
    """
    folded = merged_headings(note)
    for heading, into in folded.items():
        if normalise_heading(heading) == wanted:
            return "the document's opening text" if into is None else f"heading `{clip(into)}`"
    return None


def unindexed_paths(golden: GoldenSet, indexed: Mapping[str, Collection[str | None]]) -> list[str]:
    """Expected paths that name no indexed document, in golden order, once each."""
    missing = [e.path for q in golden.queries for e in q.expected if e.path not in indexed]
    return list(dict.fromkeys(missing))


def unmatched_headings(
    golden: GoldenSet, indexed: Mapping[str, Collection[str | None]]
) -> list[tuple[str, str]]:
    """The (path, normalised heading) of each expected entry whose indexed document
    has no chunk under that heading, in golden order, once each."""
    out: list[tuple[str, str]] = []
    for query in golden.queries:
        for entry in query.expected:
            headings = indexed.get(entry.path)
            if headings is None or entry.heading is None:
                continue
            named = {normalise_heading(h) for h in headings if h is not None}
            if (wanted := normalise_heading(entry.heading)) not in named:
                out.append((entry.path, wanted))
    return list(dict.fromkeys(out))


def check_expected_entries(
    golden: GoldenSet,
    indexed: Mapping[str, Collection[str | None]],
    kb: Path,
    removed: Collection[str] = (),
    why_unindexed: Callable[[str], str | None] | None = None,
    deleted: Mapping[str, str] | None = None,
    changed: Collection[str] = (),
    where: str = INDEX,
) -> None:
    """Raise :class:`GrooveError` unless every expected entry names indexed content
    (``where``: what the message calls it -- :data:`INDEX`, or :data:`KB_FILES` when a
    custom retriever answers).

    ``indexed`` maps each indexed path to the headings its chunks carry (``None``
    for a chunk without one), as :meth:`Engine.headings_by_path` returns it.  The
    message names the first problem and counts the others.  A path in ``removed``
    (the baseline run's corpus, or a trusted older run's, held it) is no mistake of the
    golden file: the document was deleted since, and the query scores it as a miss.  A
    path in ``deleted`` (only a run that cannot be trusted had it) is still refused, its
    phrase saying since when instead of suggesting a typo.  A heading missing from a
    path in ``changed`` (the document was edited since a run checked against this same
    golden file, so the heading was there) was lost to that edit: the query scores it
    as a miss, as it does a deleted document.  ``why_unindexed`` says why
    a file still on disk is not indexed (default: :func:`why_not_indexed` with the
    default settings).
    """
    if why_unindexed is None:

        def why_unindexed(rel: str) -> str | None:
            return why_not_indexed(kb, rel)

    problems: list[tuple[int, tuple[str, str]]] = []
    for query in golden.queries:
        for entry in query.expected:
            if entry.path in removed and entry.path not in indexed:
                continue
            if entry.path in changed and entry.path in indexed:
                continue  # only its heading can be missing: lost to the edit
            problem = _problem(entry, indexed, kb, why_unindexed, deleted or {}, where)
            if problem is not None:
                problems.append((entry.line or query.line, problem))
    if not problems:
        return
    line, (first, fix) = problems[0]
    more = len(problems) - 1
    tail = f" (and {more} more expected entr{'y' if more == 1 else 'ies'} like it)" if more else ""
    raise GrooveError(
        f"golden file {golden.path}: line {line}: {first}{tail}; {fix} "
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
    why_unindexed: Callable[[str], str | None] | None = None,
    deleted: Mapping[str, str] | None = None,
    changed: Collection[str] = (),
    where: str = INDEX,
) -> None:
    """Both checks, in the order a user fixes them: an empty KB, then the golden entries."""
    check_kb_has_documents(indexed, kb, parsers)
    check_expected_entries(golden, indexed, kb, removed, why_unindexed, deleted, changed, where)
