"""The corpus snapshot of an index state, kept beside the index; the headings map.

Every eval run records :meth:`~pytest_groove.kb.store.database.Store.corpus_snapshot`: counts
and a SHA-256 over every indexed document's path and stored digest of its chunks
(:mod:`~pytest_groove.kb.source.corpus_digest`), one row per document.  The snapshot depends
only on the index state, so it is kept in ``corpus-snapshot.json`` in the index
folder with the database's random id and write generation (any write to the chunks
bumps the generation): while they match, it is returned without reading a row.  The
file is replaced atomically and sealed (:mod:`~pytest_groove.files.seal`), and is
only an optimisation: one that cannot be written, read or vouched for costs a
recomputation.

The headings map the golden check reads before any search (:class:`IndexedHeadings`)
is not kept: it holds every path and reads a document's headings only when asked.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import open_vouched, write_sealed
from pytest_groove.kb.derived.family import DerivedFamily, Retention
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.kb.store.database import Store

__all__ = ["CACHE_NAME", "DERIVED_FILES", "IndexedHeadings", "cached_corpus_snapshot"]

CACHE_NAME = "corpus-snapshot.json"
#: the kept snapshot's layout (2: the digest of :data:`DIGEST_VERSION`, recorded with it)
_SNAPSHOT_FORMAT = 2
#: a kept snapshot is a few hundred bytes; anything longer is not one
_CAP = 64 * 1024
#: that file, in the table of derived files (:mod:`.families`)
DERIVED_FILES = (
    DerivedFamily(
        "corpus snapshot",
        prefix=CACHE_NAME,
        suffixes=(".json",),
        retention=Retention.ONE_FILE,
        format=_SNAPSHOT_FORMAT,
    ),
)


def cached_corpus_snapshot(store: Store) -> CorpusSnapshot:
    """The store's corpus snapshot, from the kept file while the index is unchanged.

    The generation and the chunks are read in one snapshot: the caller's
    (``store.read_snapshot()``), else one of its own.
    """
    with store.read_snapshot():
        path = store.path.parent / CACHE_NAME
        state = {
            "format": _SNAPSHOT_FORMAT,
            "index_id": store.index_id,
            "generation": store.generation,
        }
        kept = _read(path, state)
        if kept is not None:
            return kept
        snapshot = store.corpus_snapshot()
    record = {
        **state,
        "documents": snapshot.documents,
        "chunks": snapshot.chunks,
        "digest": snapshot.digest,
        "digest_version": snapshot.digest_version,
    }
    data = json.dumps(record, separators=(",", ":")).encode("utf-8")
    # a read-only or full index folder recomputes it every time
    with contextlib.suppress(OSError):
        write_sealed(path, lambda handle: handle.write(data))
    return snapshot


def _read(path: Path, state: dict[str, Any]) -> CorpusSnapshot | None:
    try:
        handle = open_vouched(path)  # only a file its seal vouches for
        if handle is None:
            return None
        with handle:
            data: Any = json.loads(handle.read(_CAP))
        if any(data[key] != value for key, value in state.items()):
            return None
        return CorpusSnapshot(
            documents=int(data["documents"]),
            chunks=int(data["chunks"]),
            digest=str(data["digest"]),
            digest_version=int(data["digest_version"]),
        )
    except ResourceLimit:
        raise  # out of open files or memory: no damage
    except Exception:
        return None  # missing, damaged in any way or of another state: computed again


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
