"""Checks on a whole run of a custom retriever's hits, before they are scored.

Mistakes that make every number of a run meaningless without any error along the way:

- **paths that name no KB file** -- typically paths relative to the working
  directory (``kb/guide/setup.md``) where the KB-relative ``guide/setup.md`` was
  meant: no hit can ever satisfy a golden entry, and the run scores 0;
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
its document is warned about).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pytest_groove.config import IndexSettings
from pytest_groove.errors import flag
from pytest_groove.evaluation.metric_table import RECALL, Metric
from pytest_groove.evaluation.metrics import normalise_heading
from pytest_groove.search.retriever import RetrieverKind
from pytest_groove.search.retriever_hits import URL_PATH


@dataclass(frozen=True)
class HitCheckReport:
    """What :func:`check_retriever_hits` found: an error stops the run, warnings do not."""

    error: str | None
    warnings: tuple[str, ...]


def _prefix_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """How ``path`` becomes a KB path by dropping leading folders, said as a fix."""
    parts = PurePosixPath(path).parts
    for cut in range(1, len(parts)):
        rest = PurePosixPath(*parts[cut:]).as_posix()
        if rest in kb_paths:
            prefix = PurePosixPath(*parts[:cut]).as_posix()
            kb_text = PurePosixPath(os.path.normpath(kb).replace(os.sep, "/")).as_posix()
            whence = (
                "relative to the working directory"
                if prefix == kb_text or prefix == kb.name
                else f"to start with {prefix}/"
            )
            return (
                f"the paths look {whence}: set each hit's path (LangChain metadata "
                f"['source'], LlamaIndex metadata['file_path']) to the KB-relative path "
                f"({rest!r}) or to an absolute path inside the KB"
            )
    return None


def _likely_fix(path: str, kb_paths: Collection[str], kb: Path) -> str:
    document, hash_mark, _fragment = path.partition("#")
    if hash_mark and document in kb_paths:
        return (
            f"the paths carry a #fragment ({path!r}): return the file's path alone "
            f"({document!r}) and the section as the hit's heading"
        )
    if URL_PATH.match(path):
        return (
            f"the hits carry URLs ({path!r}), not files of the KB: give each hit the "
            "KB-relative path of the note it came from (a metadata key such as "
            "LangChain's 'source' or LlamaIndex's 'file_path')"
        )
    fix = _prefix_fix(path, kb_paths, kb)
    if fix is not None:
        return fix
    lowered = {p.lower(): p for p in kb_paths}
    if path.lower() in lowered:
        return f"the KB has {lowered[path.lower()]!r}: paths are compared byte for byte"
    name = PurePosixPath(path).name
    same_name = sorted(p for p in kb_paths if PurePosixPath(p).name == name)
    if same_name:
        return f"the KB has {same_name[0]!r}: return paths relative to the KB, {kb}"
    return (
        f"no KB file has that name: is the retriever built over another folder than {kb}? "
        "Return paths relative to the KB (or absolute ones inside it)"
    )


def hits_outside_kb(
    retriever: str, hit_paths: Sequence[Sequence[str]], kb_paths: Collection[str], kb: Path
) -> str | None:
    """One error line when no hit, or most hits, of the run name no file of the KB.

    ``hit_paths`` holds each query's hit paths as normalised (KB-relative);
    ``kb_paths`` the KB's files as the index names them.  A run without hits is
    left to :func:`shallow_retriever`.
    """
    every = [path for paths in hit_paths for path in paths]
    outside = [path for path in every if path not in kb_paths]
    if not every or len(outside) * 2 <= len(every):
        return None
    sample = outside[0]
    share = "none" if len(outside) == len(every) else f"only {len(every) - len(outside)}"
    return (
        f"retriever {retriever}: {share} of its {len(every)} hits name a file of the "
        f"knowledge base {kb} (e.g. {sample!r}), so no golden entry can match; "
        f"{_likely_fix(sample, kb_paths, kb)}"
    )


#: hits outside the KB in more than this share of the queries are warned about
OUTSIDE_QUERY_SHARE = 0.25


def some_hits_outside_kb(
    retriever: str, hit_paths: Sequence[Sequence[str]], kb_paths: Collection[str], kb: Path
) -> str | None:
    """One warning line when more than a quarter of the queries have a hit outside the KB.

    Below :func:`hits_outside_kb`'s error (most hits outside), such hits still cost
    score silently: each takes a rank no golden entry can ever fill.
    """
    touched = [paths for paths in hit_paths if any(path not in kb_paths for path in paths)]
    if not touched or len(touched) <= OUTSIDE_QUERY_SHARE * len(hit_paths):
        return None
    every = [path for paths in hit_paths for path in paths]
    outside = [path for path in every if path not in kb_paths]
    sample = outside[0]
    return (
        f"retriever {retriever}: {len(outside)} of its {len(every)} hits, in {len(touched)} "
        f"of {len(hit_paths)} queries, name no file of the knowledge base {kb} (e.g. "
        f"{sample!r}) and can never match a golden entry; {_likely_fix(sample, kb_paths, kb)}"
    )


def no_hit_at_all(retriever: str, returned: Sequence[int]) -> str | None:
    """One error line when the retriever returned no hit for any query (an empty store)."""
    if not returned or any(returned):
        return None
    count = len(returned)
    queries = "the golden query" if count == 1 else f"any of the {count} golden queries"
    return (
        f"retriever {retriever} returned no hit for {queries}: is its store empty or "
        "pointed at the wrong collection?"
    )


#: a heading spelt as its Markdown line: ``## Schedule`` (and a closing run of ``#``)
_ATX = re.compile(r"#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
#: emphasis or code around a whole heading: ``**Schedule**``, ``_Schedule_``, `` `x` ``
_WRAPPED = re.compile(r"(\*\*|__|\*|_|`)(.+)\1")
#: the separator of a breadcrumb (``Release train > Schedule``), as the KB's own
_CRUMB = " > "


def _unmarked(heading: str) -> str:
    text = heading.strip()
    atx = _ATX.fullmatch(text)
    if atx is not None:
        text = atx.group(1).strip()
    while (wrapped := _WRAPPED.fullmatch(text)) is not None and wrapped.group(2).strip():
        text = wrapped.group(2).strip()
    return text


def document_headings(headings: Iterable[str | None], contexts: Iterable[str | None]) -> set[str]:
    """A document's headings (and its title, the first part of each chunk's breadcrumb),
    normalised as the hit rule compares them."""
    known = {normalise_heading(h) for h in headings if h}
    for context in contexts:
        if context:
            known.add(normalise_heading(context.split(_CRUMB)[0]))
    return known


def heading_spelling(heading: str, known: Collection[str]) -> tuple[str, bool]:
    """``heading`` as its document spells it, and whether it is one of ``known``
    (:func:`document_headings`).

    ``## Schedule`` and ``**Schedule**`` are read as ``Schedule``; a breadcrumb
    ``Doc > Schedule`` as its last part when the whole string is no heading.
    """
    if normalise_heading(heading) in known:
        return heading, True
    for candidate in (_unmarked(heading), _unmarked(heading.split(_CRUMB.strip())[-1])):
        if candidate and normalise_heading(candidate) in known:
            return candidate, True
    return heading, False


def unknown_heading(retriever: str, heading: str, path: str) -> str:
    """The warning for a hit whose heading is no heading of its document (told once)."""
    return (
        f"retriever {retriever} returned heading {heading!r} for {path!r}, which is not a "
        "heading of that document, so such hits never match a golden entry's heading; "
        f"return the heading's text as the document spells it (or set "
        f"{flag('retriever-heading-key')})"
    )


def _depth_advice(kind: RetrieverKind, k: int) -> str:
    if kind == "langchain":
        return (
            f"a LangChain retriever returns its own k hits: use "
            f"as_retriever(search_kwargs={{'k': {k}}}), or set BM25Retriever's k = {k}"
        )
    if kind == "llamaindex":
        return (
            f"a LlamaIndex retriever returns its own similarity_top_k hits: use "
            f"index.as_retriever(similarity_top_k={k})"
        )
    return f"it is asked for limit={k} hits: return up to that many"


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


def kb_file_set(kb: Path, settings: IndexSettings) -> frozenset[str]:
    """The KB's files as the index would name them (no index is opened or built)."""
    from pytest_groove.kb.walk import collect_files

    return frozenset(collect_files(kb, settings).files)


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
    "kb_file_set",
    "no_hit_at_all",
    "shallow_retriever",
    "some_hits_outside_kb",
    "unknown_heading",
]
