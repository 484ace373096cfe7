"""The headings map the golden check reads before any search (:class:`IndexedHeadings`).

It is not kept: it holds every path and reads a document's headings only when asked.
(The corpus snapshot each eval records is kept in ``index.db`` by the indexer:
:mod:`~pytest_groove.kb.store.kept_snapshot`.)

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager

from pytest_groove.kb.store.database import Store

__all__ = ["IndexedHeadings"]


class IndexedHeadings(Mapping[str, set[str | None]]):
    """Every indexed path, and a path's headings read from the index when first asked.

    The pre-search golden check needs every path (is the expected one indexed, which
    spellings are close) but the headings of the expected documents only.  Reading
    every chunk's heading touches every page of the chunk table, and a map of them
    all kept in a file had to be read, compared and rewritten in full after any edit
    (a third of a second at 10,000 documents).  So the paths come from the documents
    table (one small row each) and a document's headings from its own chunks.  Ask for
    the paths you need inside the read snapshot the paths came from.
    """

    def __init__(
        self,
        store: Store,
        guard: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self._store = store
        self._guard = guard  # what a read of the index runs under (its fault translation)
        with guard():
            self._ids = dict(store.document_ids())
        self._headings: dict[str, set[str | None]] = {}

    def __getitem__(self, path: str) -> set[str | None]:
        found = self._headings.get(path)
        if found is None:
            doc_id = self._ids[path]  # KeyError: not indexed
            with self._guard():
                found = self._store.document_headings(doc_id)
            self._headings[path] = found
        return found

    def __contains__(self, path: object) -> bool:
        return path in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)
