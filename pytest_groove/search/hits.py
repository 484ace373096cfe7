"""What a search returns.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_groove.errors import one_line

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
