"""Document-first ordering: every document's best chunk before any second chunk.

A fused list of chunks often spends several of its first places on one document
(its sections all share the query's words and topic), which pushes a second
relevant document out of the first few results.  This stage keeps the fused order
but lists each document's best chunk first and the remaining chunks after them,
again in fused order -- the "one result per site" grouping web search engines
apply (field collapsing).  It never drops a chunk from the pool, so within the
returned limit a document's second section only moves behind other documents'
best sections.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item")


def documents_first(ranked: Sequence[Item], document_of: Callable[[Item], Hashable]) -> list[Item]:
    """``ranked`` with each document's first item moved ahead of every repeat.

    Stable: the first items keep their relative order, and so do the repeats.
    """
    seen: set[Hashable] = set()
    first: list[Item] = []
    repeats: list[Item] = []
    for item in ranked:
        document = document_of(item)
        if document in seen:
            repeats.append(item)
        else:
            seen.add(document)
            first.append(item)
    return first + repeats
