"""Golden entries pinned to a heading, lost because the hits of their file carry none.

An expected entry with a heading is only satisfied by a hit carrying that heading.  A
retriever that returns whole files (ParentDocumentRetriever, MultiVectorRetriever),
chunks cut without regard to headings (RecursiveCharacterTextSplitter, SentenceSplitter)
or an HTTP answer without ``heading`` can find the right file at rank 1 and still score
0 on such an entry, with nothing said.  :func:`headingless_hits` says it once a run:
how many entries, in how many queries, one of them, and the fix.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_groove.errors import flag
from pytest_groove.search.hits import AnsweredQuery
from pytest_groove.search.retrievers.adapters.base import echo


@dataclass(frozen=True)
class _Lost:
    query: str
    path: str
    heading: str
    #: the rank of the file's first hit
    rank: int


def _lost_entries(result: AnsweredQuery) -> list[_Lost]:
    """The query's entries pinned to a heading whose file came back, never with one."""
    lost: list[_Lost] = []
    for entry in result.expected:
        if entry.heading is None or not entry.relevant:
            continue
        of_file = [hit for hit in result.top_k if hit.path == entry.path]
        if of_file and all(hit.heading is None for hit in of_file):
            lost.append(_Lost(result.id, entry.path, entry.heading, of_file[0].rank))
    return lost


def headingless_hits(retriever: str, results: Sequence[AnsweredQuery]) -> str | None:
    """One warning line when golden entries pinned to a heading had their file among
    the hits, but no hit of that file carried a heading (so none could match).

    Said only of a retriever none of whose hits carried a heading: one whose other
    hits do split at headings returned a note's opening (its front matter, the text
    before its first heading) as a headingless chunk, and the entry was an ordinary
    miss -- advice to split at headings would be wrong.
    """
    if any(hit.heading is not None for result in results for hit in result.top_k):
        return None
    by_query = [_lost_entries(result) for result in results]
    lost = [item for items in by_query for item in items]
    if not lost:
        return None
    queries = sum(1 for items in by_query if items)
    sample = lost[0]
    entries = "1 golden entry" if len(lost) == 1 else f"{len(lost)} golden entries"
    their, scored = (
        ("its", "it was scored as a miss")
        if len(lost) == 1
        else ("their", "they were scored as misses")
    )
    return (
        f"retriever {retriever}: {entries} pinned to a heading, in {queries} of "
        f"{len(results)} queries, had {their} file among the hits but no hit of that "
        f"file carried a heading, so {scored} (e.g. query {echo(sample.query)} expects "
        f"{echo(sample.path)} heading {echo(sample.heading)}; the file "
        f"came back at rank {sample.rank} without one); return each chunk's section "
        "heading: split the notes at their headings (LangChain's "
        "MarkdownHeaderTextSplitter, LlamaIndex's MarkdownNodeParser) or keep the "
        f"heading in a metadata key and name it with {flag('retriever-heading-key')} "
        "(docs/retrievers.md); a retriever that returns whole files (ParentDocumentRetriever, "
        "MultiVectorRetriever) can only satisfy entries without a heading"
    )


__all__ = ["headingless_hits"]
