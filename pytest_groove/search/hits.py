"""What a search returns.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

from pytest_groove.errors import clip, one_line
from pytest_groove.scoring.metrics import RankedHit
from pytest_groove.scoring.records import ExpectedEntry

#: between a hit's path and its heading wherever people read one (pytest failures,
#: ``groove search``): the ``path#heading`` spelling of the TREC run and qrels files
#: (docs/interop.md), so a label copied from one matches the others
HEADING_SEPARATOR = "#"


def hit_label(path: str, heading: str | None) -> str:
    """``path#heading``, or ``path`` for a hit or expected entry without a heading, for
    people: a line break or control character in a note's name is escaped, so every
    report keeps one hit to a line."""
    label = path if not heading else f"{path}{HEADING_SEPARATOR}{heading}"
    return one_line(label)


#: said under a list of hits with their scores when document-first ordering put a
#: higher score below a lower one (``[search] document_first``)
GROUPED_BY_DOCUMENT = (
    "hits are grouped by document ([search] document_first): scores are not in rank order"
)


def hit_snippet(content: str, chars: int) -> str:
    """A hit's text for a terminal: on one line, at most ``chars`` characters counted
    after escaping, and every control character escaped -- a note's escape sequences
    (colours, OSC 8 links, a bell) never reach the terminal of whoever reads it."""
    return clip(" ".join(content.split()), chars)


def grouping_note(scores: Sequence[float], grouped: bool) -> str | None:
    """:data:`GROUPED_BY_DOCUMENT` when the search grouped its hits by document and the
    ``scores`` listed (in rank order) do not descend; None otherwise."""
    if grouped and any(later > earlier for earlier, later in pairwise(scores)):
        return GROUPED_BY_DOCUMENT
    return None


@dataclass
class SearchHit:
    """One ranked result.  ``rank`` is 1-based and contiguous."""

    rank: int
    path: str
    heading: str | None
    score: float
    content: str = ""
    title: str | None = None
    #: database id of the chunk (None for hits from a custom retriever)
    chunk_id: int | None = None
    #: set by the parent retriever: {"kind": "adjacent", "from_index", "to_index"} or
    #: {"kind": "whole_document", "total_chunks"}
    expanded_from: dict[str, Any] | None = None
    #: byte offsets of query terms in ``content`` (None = not computed)
    match_spans: list[tuple[int, int]] | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "path": self.path,
            "heading": self.heading,
            "score": self.score,
            "title": self.title,
            "content": self.content,
        }
        if self.match_spans is not None:
            out["match_spans"] = [list(span) for span in self.match_spans]
        if self.expanded_from is not None:
            out["expanded_from"] = self.expanded_from
        return out


class AnsweredQuery(Protocol):
    """A golden query with the hits that answered it, as a searcher's own answer checks
    read it (the evaluation's ``QueryResult`` is one): the search layer names what it
    reads, so it never imports the evaluation."""

    @property
    def id(self) -> str: ...

    @property
    def expected(self) -> Sequence[ExpectedEntry]: ...

    @property
    def top_k(self) -> Sequence[RankedHit]: ...
