"""Parent retriever: widen a final hit's displayed content to its surroundings.

Display only: the hit's rank, score, path, title and heading never change, only
its ``content`` (and the ``expanded_from`` note saying where the text came from).

* A *small* hit (stored ``token_count`` below ``whole_doc_threshold_tokens``)
  is replaced by its whole document, when the document fits the token cap.
* Otherwise, or when the whole document is too big, the hit is merged with its
  neighbours ``chunk_index - 1 .. chunk_index + 1`` of the same document.  The
  heading level is not consulted (the reference code ignores it too), and
  low-quality neighbours are included.
* When even the neighbours exceed the cap the hit keeps its own text, marked
  as an adjacent expansion of itself.

This module does no database access: the pipeline passes two fetch callables.
Token counts come from the chunk rows; a row without one (or with 0) is
estimated at UTF-8 bytes / 4 so that it cannot slip past the cap.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_groove.search.hits import SearchHit
from pytest_groove.settings.config import ParentRetrieverSettings

#: neighbours on each side of the hit in the adjacent path
ADJACENT_SPAN = 1
#: separator placed between merged chunk contents
JOIN = "\n\n"


@dataclass(frozen=True)
class ParentChunk:
    """The columns of one stored chunk the parent retriever needs.

    ``level`` and ``quality`` are carried only so callers can pass whole rows;
    the expansion deliberately ignores both.
    """

    document_id: int
    chunk_index: int
    content: str
    token_count: int | None
    level: int | None = None
    quality: float | None = None


@dataclass(frozen=True)
class Expansion:
    """New display content for a hit and the ``expanded_from`` record describing it."""

    content: str
    expanded_from: dict[str, Any]


#: (document_id, row_cap) -> the document's chunks ordered by chunk_index, at most row_cap
FetchDocumentChunks = Callable[[int, int], list[ParentChunk]]
#: (document_id, first_index, last_index) -> that document's chunks in the inclusive range
FetchAdjacent = Callable[[int, int, int], list[ParentChunk]]


def is_small(token_count: int | None, threshold: int) -> bool:
    """Whole-document candidate: a stored count strictly below the threshold (None is not small)."""
    return token_count is not None and token_count < threshold


def estimated_tokens(chunk: ParentChunk) -> int:
    """Tokens charged against the cap: the stored count if positive, else bytes / 4."""
    if chunk.token_count is not None and chunk.token_count > 0:
        return chunk.token_count
    return len(chunk.content.encode("utf-8")) // 4


def _total_tokens(chunks: Sequence[ParentChunk]) -> int:
    return sum(estimated_tokens(chunk) for chunk in chunks)


def whole_document_row_cap(settings: ParentRetrieverSettings) -> int:
    """Rows read for the whole-document path; reading this many means "too long"."""
    return settings.max_expanded_tokens * 2 + 64


def _whole_document(
    rows: Sequence[ParentChunk], settings: ParentRetrieverSettings
) -> Expansion | None:
    """All of the document's chunks, or ``None`` when the document is too long."""
    if len(rows) >= whole_document_row_cap(settings):
        return None
    if _total_tokens(rows) > settings.max_expanded_tokens:
        return None
    return Expansion(
        content=JOIN.join(chunk.content for chunk in rows),
        expanded_from={"kind": "whole_document", "total_chunks": len(rows)},
    )


def _adjacent(
    hit: ParentChunk,
    fetch_adjacent: FetchAdjacent,
    settings: ParentRetrieverSettings,
) -> Expansion | None:
    index = hit.chunk_index
    first, last = max(index - ADJACENT_SPAN, 0), index + ADJACENT_SPAN
    rows = sorted(
        (c for c in fetch_adjacent(hit.document_id, first, last) if first <= c.chunk_index <= last),
        key=lambda c: c.chunk_index,
    )
    if not rows:
        return None
    if _total_tokens(rows) > settings.max_expanded_tokens:
        # Over the cap: show the hit's own stored text; if the row vanished
        # (a gap), the content the hit already has stays.
        own = next((c.content for c in rows if c.chunk_index == index), hit.content)
        return Expansion(
            content=own,
            expanded_from={"kind": "adjacent", "from_index": index, "to_index": index},
        )
    return Expansion(
        content=JOIN.join(chunk.content for chunk in rows),
        expanded_from={
            "kind": "adjacent",
            "from_index": rows[0].chunk_index,
            "to_index": rows[-1].chunk_index,
        },
    )


def expand_parent(
    hit_chunk: ParentChunk,
    fetch_document_chunks: FetchDocumentChunks,
    fetch_adjacent: FetchAdjacent,
    settings: ParentRetrieverSettings,
    *,
    tolerate: tuple[type[Exception], ...] = (),
) -> Expansion | None:
    """The expansion for one final hit, or ``None`` to leave the hit as it is.

    ``None`` when the stage is disabled, when no rows come back, or when a fetch
    raises one of the ``tolerate`` exception types (the pipeline passes its
    database error class: a read failure must not lose the hit).
    """
    if not settings.enabled:
        return None
    try:
        if is_small(hit_chunk.token_count, settings.whole_doc_threshold_tokens):
            rows = sorted(
                fetch_document_chunks(hit_chunk.document_id, whole_document_row_cap(settings)),
                key=lambda c: c.chunk_index,
            )
            if not rows:
                return None
            whole = _whole_document(rows, settings)
            if whole is not None:
                return whole
            # too long for the cap: fall back to the neighbours
        return _adjacent(hit_chunk, fetch_adjacent, settings)
    except tolerate:
        return None


def apply_expansion(hit: SearchHit, expansion: Expansion | None) -> SearchHit:
    """The hit with expanded content; its match spans are cleared for recomputation.

    ``None`` returns the hit untouched (content, ``expanded_from`` and spans).
    """
    if expansion is None:
        return hit
    return replace(
        hit,
        content=expansion.content,
        expanded_from=dict(expansion.expanded_from),
        match_spans=None,
    )
