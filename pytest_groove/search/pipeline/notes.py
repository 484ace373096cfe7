"""Note order: which note from the note-carrying vectors, which section from the fused list.

Document-first ordering (:mod:`pytest_groove.search.pipeline.documents`) lists each
document's best chunk before any second chunk, in the order of the fused list.
A section's own words often leave implicit what its note is about, so that order
can put the right note too low.  Here the *documents* are ordered by a second
fused list -- the same full-text list fused with a vector list over chunk vectors
that carry their note's vector
(:meth:`~pytest_groove.kb.derived.vectors.VectorIndex.build_with_notes`)
-- while each document is still represented by its best chunk of the ordinary
fused list, and every further chunk follows in that list's order.  The section a
golden entry names is chosen by what the section says; the note by what the
section and its note say together.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item")


def notes_first(
    fused: Sequence[Item],
    note_fused: Sequence[Item],
    document_of: Callable[[Item], Hashable],
    key: Callable[[Item], Hashable],
) -> list[Item]:
    """Each document's best item of ``fused``, documents in ``note_fused`` order.

    Documents are ordered by their first appearance in ``note_fused``, then those
    only in ``fused`` in its order.  A document is represented by its first item in
    ``fused`` (its first in ``note_fused`` when ``fused`` has none); the remaining
    items follow in ``fused`` order, then the items only ``note_fused`` holds.
    ``key`` identifies an item across the two lists (the chunk id).
    """
    documents: dict[Hashable, None] = {}
    for item in [*note_fused, *fused]:
        documents.setdefault(document_of(item), None)
    best: dict[Hashable, Item] = {}
    for item in [*fused, *note_fused]:
        best.setdefault(document_of(item), item)
    first = [best[document] for document in documents]
    taken = {key(item) for item in first}
    in_fused = {key(item) for item in fused}
    rest = [item for item in fused if key(item) not in taken]
    rest += [item for item in note_fused if key(item) not in taken and key(item) not in in_fused]
    return first + rest
