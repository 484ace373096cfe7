"""The corpus snapshot and the headings map of an index state, kept beside the index.

Every eval run records :meth:`~pytest_groove.kb.store.Store.corpus_snapshot`: counts
and a SHA-256 over every indexed chunk's path, position, heading, content and
context.  Computing it reads all the chunk text, which made a no-op eval's fixed cost
grow with the corpus.  The snapshot depends only on the index state, so it is kept
in ``corpus-snapshot.json`` in the index folder with the database's random id and
write generation (any write to the chunks bumps the generation): while they match,
it is returned without reading a chunk.  The file is replaced atomically and is only
an optimisation: one that cannot be written or read costs a recomputation.

The same goes for :meth:`~pytest_groove.kb.store.Store.headings_by_path` (every path
with its chunks' headings, which the golden check reads before any search): reading
one column of every chunk row touches every page of the chunk table, embeddings and
all.  It is kept in ``headings.json``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from pytest_groove.files.atomic import write_atomic_with
from pytest_groove.kb.records import CorpusSnapshot
from pytest_groove.kb.store import Store

__all__ = ["CACHE_NAME", "HEADINGS_NAME", "cached_corpus_snapshot", "cached_headings_by_path"]

CACHE_NAME = "corpus-snapshot.json"
HEADINGS_NAME = "headings.json"
_FORMAT = 1


def cached_corpus_snapshot(store: Store) -> CorpusSnapshot:
    """The store's corpus snapshot, from the kept file while the index is unchanged.

    The generation and the chunks are read in one snapshot: the caller's
    (``store.read_snapshot()``), else one of its own.
    """
    with store.read_snapshot():
        path = store.path.parent / CACHE_NAME
        state = {"format": _FORMAT, "index_id": store.index_id, "generation": store.generation}
        kept = _read(path, state)
        if kept is not None:
            return kept
        snapshot = store.corpus_snapshot()
    record = {
        **state,
        "documents": snapshot.documents,
        "chunks": snapshot.chunks,
        "digest": snapshot.digest,
    }
    data = json.dumps(record, separators=(",", ":")).encode("utf-8")
    # a read-only or full index folder recomputes it every time
    with contextlib.suppress(OSError):
        write_atomic_with(path, lambda handle: handle.write(data), mode=0o644, sync=False)
    return snapshot


def _read(path: Path, state: dict[str, Any]) -> CorpusSnapshot | None:
    try:
        data: Any = json.loads(path.read_bytes())
        if any(data[key] != value for key, value in state.items()):
            return None
        return CorpusSnapshot(
            documents=int(data["documents"]), chunks=int(data["chunks"]), digest=str(data["digest"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, damaged or of another state: computed again


def cached_headings_by_path(store: Store) -> dict[str, set[str | None]]:
    """The store's headings by path, from the kept file while the index is unchanged."""
    with store.read_snapshot():
        path = store.path.parent / HEADINGS_NAME
        state = {"format": _FORMAT, "index_id": store.index_id, "generation": store.generation}
        try:
            data: Any = json.loads(path.read_bytes())
            if all(data[key] == value for key, value in state.items()):
                return {
                    str(doc): {None if h is None else str(h) for h in headings}
                    for doc, headings in data["paths"].items()
                }
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # missing, damaged or of another state: read again
        headings = store.headings_by_path()
    record = {
        **state,
        "paths": {
            doc: sorted(found, key=lambda h: (h is not None, h or ""))
            for doc, found in headings.items()
        },
    }
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with contextlib.suppress(OSError):
        write_atomic_with(path, lambda handle: handle.write(data), mode=0o644, sync=False)
    return headings
