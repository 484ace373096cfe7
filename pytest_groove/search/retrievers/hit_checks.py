"""Checks on a whole run of a custom retriever's hits, before they are scored.

Mistakes that make every number of a run meaningless without any error along the way:

- **paths that name no KB file** -- typically paths relative to the working
  directory (``kb/guide/setup.md``) where the KB-relative ``guide/setup.md`` was
  meant: no hit can ever satisfy a golden entry, and the run scores 0.  Only a run
  where no hit names a KB file, or most hits are KB paths spelt another way, is
  stopped: a store that holds other sources too (``tickets/2.md`` beside the KB's
  notes) is measured, its other documents scored as misses and counted in a warning;
- **no hit at all** -- an empty store, or a collection name with a typo: every query
  answers ``[]`` and the run scores 0;
- **a shallow retriever** -- LangChain's retrievers return 4 documents unless told
  otherwise, LlamaIndex's 2: recall at 10 then counts what was never returned as misses.

:func:`hits_outside_kb` turns the first into one error line, :func:`no_hit_at_all` the
second, :func:`shallow_retriever` the third into one warning line;
:func:`check_retriever_hits` runs them.  Smaller losses are warnings:
:func:`some_hits_outside_kb` (hits outside the KB in more than a quarter of the
queries) and :func:`heading_spelling` (a heading spelt ``## Schedule``, ``**Schedule**``
or ``Doc > Schedule`` read as the document's ``Schedule``; one that is no heading of
its document is warned about).  The fix each path message suggests is
:mod:`~pytest_groove.search.retrievers.path_advice`'s; entries pinned to a heading lost to
headingless hits are :mod:`~pytest_groove.search.retrievers.headingless`'s warning.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.errors import flag
from pytest_groove.kb.source.heading_lines import readings, without_closing_hashes
from pytest_groove.scoring.metric_table import RECALL, Metric
from pytest_groove.scoring.metrics import normalise_heading
from pytest_groove.search.retrievers.adapters.base import echo
from pytest_groove.search.retrievers.external import RetrieverKind
from pytest_groove.search.retrievers.path_advice import PathJudge


@dataclass(frozen=True)
class HitCheckReport:
    """What :func:`check_retriever_hits` found: an error stops the run, warnings do not."""

    error: str | None
    warnings: tuple[str, ...]


def _outside(hit_paths: Sequence[Sequence[str]], kb_paths: Collection[str]) -> list[str]:
    return [path for paths in hit_paths for path in paths if path not in kb_paths]


def hits_outside_kb(
    retriever: str,
    hit_paths: Sequence[Sequence[str]],
    kb_paths: Collection[str],
    kb: Path,
    *,
    scope: str = "",
    misnamed_only: bool = False,
) -> str | None:
    """One error line when the hits show that the retriever's paths are mapped wrong.

    That is: no hit of the run names a file of the KB, or most hits are KB files' paths
    spelt another way (leading folders too many, a suffix, another case: ``PathJudge.
    misnamed``).  Hits that name no KB file and look like nothing of the KB's -- another
    source's documents in a shared store -- are no error however many there are, as
    long as some hit names a KB file (:func:`some_hits_outside_kb` warns about them).
    With ``misnamed_only`` (the early stop) a run without a KB hit stops only when most
    of its hits are misnamed too.

    ``hit_paths`` holds each query's hit paths as normalised (KB-relative);
    ``kb_paths`` the KB's files as the index names them; ``scope`` says which hits
    were looked at when not the whole run's (`` in the first 3 queries it answered``).  A run
    without hits is left to :func:`shallow_retriever`.
    """
    every = [path for paths in hit_paths for path in paths]
    outside = _outside(hit_paths, kb_paths)
    if not outside:
        return None
    judge = PathJudge(kb_paths, kb)
    misnamed = [path for path in outside if judge.misnamed(path) is not None]
    most_misnamed = len(misnamed) * 2 > len(every)
    if len(outside) == len(every) and (most_misnamed or not misnamed_only):
        sample = misnamed[0] if misnamed else outside[0]
        return (
            f"retriever {retriever}: none of its {len(every)} hits{scope} name a file of "
            f"the knowledge base {kb} (e.g. {echo(sample)}), so no golden entry can match; "
            f"{judge.likely_fix(sample)}"
        )
    if not most_misnamed or misnamed_only:
        return None
    sample = misnamed[0]
    return (
        f"retriever {retriever}: only {len(every) - len(outside)} of its {len(every)} "
        f"hits{scope} name a file of the knowledge base {kb}, and {len(misnamed)} look like "
        f"paths of its files spelt another way (e.g. {echo(sample)}), which no golden entry can "
        f"match; {judge.misnamed(sample)}"
    )


#: hits outside the KB in more than this share of the queries are warned about
OUTSIDE_QUERY_SHARE = 0.25


def some_hits_outside_kb(
    retriever: str, hit_paths: Sequence[Sequence[str]], kb_paths: Collection[str], kb: Path
) -> str | None:
    """One warning line when more than a quarter of the queries have a hit outside the KB.

    Below :func:`hits_outside_kb`'s error, such hits cost score: each takes a rank no
    golden entry can ever fill.  The line says how many there were, and either the fix
    (some look like KB files' paths spelt another way) or that they were scored as
    misses, as another source's documents in a shared store are.
    """
    touched = [paths for paths in hit_paths if any(path not in kb_paths for path in paths)]
    if not touched or len(touched) <= OUTSIDE_QUERY_SHARE * len(hit_paths):
        return None
    every = [path for paths in hit_paths for path in paths]
    outside = _outside(hit_paths, kb_paths)
    judge = PathJudge(kb_paths, kb)
    misnamed = [path for path in outside if judge.misnamed(path) is not None]
    counted = (
        f"retriever {retriever}: {len(outside)} of its {len(every)} hits, in {len(touched)} "
        f"of {len(hit_paths)} queries, name no file of the knowledge base {kb}"
    )
    if misnamed:
        sample = misnamed[0]
        some = "it looks" if len(misnamed) == 1 else f"{len(misnamed)} of them look"
        return (
            f"{counted}; {some} like a path of its files spelt another way (e.g. "
            f"{echo(sample)}), which can never match a golden entry; {judge.misnamed(sample)}"
        )
    return (
        f"{counted} (e.g. {echo(outside[0])}) and were scored as misses, as documents of other "
        "sources in a shared store are; if they are notes of the knowledge base, return "
        "their paths relative to it"
    )


def no_hit_at_all(retriever: str, returned: Sequence[int], *, first: bool = False) -> str | None:
    """One error line when the retriever returned no hit for any query (an empty store);
    ``first``: ``returned`` are the run's first queries (the early stop's evidence)."""
    if not returned or any(returned):
        return None
    count = len(returned)
    queries = "the golden query" if count == 1 else f"any of the {count} golden queries"
    if first:
        queries = f"any of the first {count} golden queries it was asked"
    return (
        f"retriever {retriever} returned no hit for {queries}: is its store empty or "
        "pointed at the wrong collection?"
    )


#: emphasis or code around a whole heading: ``**Schedule**``, ``_Schedule_``, `` `x` ``
_WRAPPED = re.compile(r"(\*\*|__|\*|_|`)(.+)\1")
#: the separator of a breadcrumb (``Release train > Schedule``), as the KB's own
_CRUMB = " > "


def _unwrapped(text: str) -> str:
    while (wrapped := _WRAPPED.fullmatch(text)) is not None and wrapped.group(2).strip():
        text = wrapped.group(2).strip()
    return text


def _unmarked(heading: str) -> list[str]:
    """The spellings ``heading`` may stand for: its Markdown line read the KB's way
    (a closing ``##`` kept), then CommonMark's (dropped), each also unwrapped."""
    found: list[str] = []
    for reading in readings(heading):
        for text in (reading, _unwrapped(reading)):
            if text and text not in found:
                found.append(text)
    return found


def document_headings(
    headings: Iterable[str | None], contexts: Iterable[str | None]
) -> dict[str, str]:
    """A document's headings (and its title, the first part of each chunk's breadcrumb)
    as the hit rule compares them, each mapped to the document's spelling.

    A heading the KB reads with a closing run of ``#`` (``## Limits ##`` is
    ``Limits ##``) is also known without it, as CommonMark reads the line.
    """
    spelt = [h for h in headings if h]
    spelt += [context.split(_CRUMB)[0] for context in contexts if context]
    known: dict[str, str] = {}
    for heading in spelt:
        known.setdefault(normalise_heading(heading), heading)
    for heading in spelt:
        bare = without_closing_hashes(heading)
        if bare:
            known.setdefault(normalise_heading(bare), heading)
    return known


def heading_spelling(heading: str, known: Mapping[str, str]) -> tuple[str, bool]:
    """``heading`` as its document spells it, and whether it is one of ``known``
    (:func:`document_headings`).

    ``## Schedule`` and ``**Schedule**`` are read as ``Schedule``; a breadcrumb
    ``Doc > Schedule`` as its last part when the whole string is no heading; a
    heading line with a closing ``##`` both as the KB reads it and as CommonMark
    does, so whichever the document holds matches.
    """
    spelt = known.get(normalise_heading(heading))
    if spelt is not None:
        # as given when it is the document's heading (case and spaces aside), else the
        # document's spelling it stands for (``Limits`` for the document's ``Limits ##``)
        return (heading if normalise_heading(spelt) == normalise_heading(heading) else spelt), True
    for candidate in (*_unmarked(heading), *_unmarked(heading.split(_CRUMB.strip())[-1])):
        found = known.get(normalise_heading(candidate))
        if found is not None:
            return found, True
    return heading, False


def unknown_heading(retriever: str, heading: str, path: str) -> str:
    """The warning for a hit whose heading is no heading of its document (told once)."""
    return (
        f"retriever {retriever} returned heading {echo(heading)} for {echo(path)}, which is not a "
        "heading of that document, so such hits never match a golden entry's heading; "
        f"return the heading's text as the document spells it (or set "
        f"{flag('retriever-heading-key')})"
    )


def _depth_advice(kind: RetrieverKind, k: int) -> str:
    """How the retriever's framework is asked for ``k`` hits (its adapter's words)."""
    from pytest_groove.search.retrievers.adapters.table import adapter_of

    return adapter_of(kind).depth_advice(k)


def shallow_retriever(
    retriever: str,
    kind: RetrieverKind,
    returned: Sequence[int],
    deepest_k: int,
    kb_files: int | None = None,
) -> str | None:
    """One warning line when most queries got fewer hits than the largest k.

    ``returned`` holds each query's hit count.  A retriever that returned at least
    ``kb_files`` hits returned everything a document-level search can, so it is not
    shallow however small the KB.
    """
    if not returned or deepest_k <= 0:
        return None
    enough = deepest_k if kb_files is None else min(deepest_k, max(kb_files, 1))
    short = [count for count in returned if count < enough]
    if len(short) * 2 <= len(returned):
        return None
    return (
        f"retriever {retriever} returned fewer than {deepest_k} hits for {len(short)} of "
        f"{len(returned)} queries (at most {max(short)}), and {Metric(RECALL, deepest_k).label} "
        "counts the "
        f"missing ones as misses; {_depth_advice(kind, deepest_k)}"
    )


def check_retriever_hits(
    name: str,
    kind: RetrieverKind,
    kb: Path,
    hit_paths: Sequence[Sequence[str]],
    kb_paths: Collection[str],
    deepest_k: int,
) -> HitCheckReport:
    """The checks over one run's hits: each golden query's hit paths, best first."""
    counts = [len(paths) for paths in hit_paths]
    error = no_hit_at_all(name, counts) or hits_outside_kb(name, hit_paths, kb_paths, kb)
    # below the error, a share of hits outside the KB still costs score
    found = [] if error else [some_hits_outside_kb(name, hit_paths, kb_paths, kb)]
    found.append(shallow_retriever(name, kind, counts, deepest_k, len(kb_paths)))
    return HitCheckReport(error=error, warnings=tuple(w for w in found if w))


__all__ = [
    "HitCheckReport",
    "check_retriever_hits",
    "document_headings",
    "heading_spelling",
    "hits_outside_kb",
    "no_hit_at_all",
    "shallow_retriever",
    "some_hits_outside_kb",
    "unknown_heading",
]
