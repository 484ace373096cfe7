"""The corpus snapshot and the headings map of an index state, kept beside the index.

Every eval run records :meth:`~pytest_groove.kb.store.Store.corpus_snapshot`: counts
and a SHA-256 over every indexed document's path and stored digest of its chunks
(:mod:`~pytest_groove.kb.corpus_digest`), one row per document.  The snapshot depends
only on the index state, so it is kept in ``corpus-snapshot.json`` in the index
folder with the database's random id and write generation (any write to the chunks
bumps the generation): while they match, it is returned without reading a row.  The
file is replaced atomically and is only an optimisation: one that cannot be written
or read costs a recomputation.

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
#: the kept snapshot's layout (2: the digest of :data:`DIGEST_VERSION`, recorded with it)
_SNAPSHOT_FORMAT = 2


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
        write_atomic_with(path, lambda handle: handle.write(data), mode=0o644, sync=False)
    return snapshot


def _read(path: Path, state: dict[str, Any]) -> CorpusSnapshot | None:
    try:
        data: Any = json.loads(path.read_bytes())
        if any(data[key] != value for key, value in state.items()):
            return None
        return CorpusSnapshot(
            documents=int(data["documents"]),
            chunks=int(data["chunks"]),
            digest=str(data["digest"]),
            digest_version=int(data["digest_version"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, damaged or of another state: computed again


def cached_headings_by_path(store: Store) -> dict[str, set[str | None]]:
    """The store's headings by path, from the kept file where it can be.

    While the index is unchanged, the kept map is returned as it is; after writes,
    only the documents whose chunks changed are read again.  A document's chunks are
    written all together under fresh ids (AUTOINCREMENT never reuses one), so a
    document whose lowest and highest chunk id and chunk count are unchanged holds
    the chunks it held (the rule :mod:`~pytest_groove.kb.quote_cache` relies on too).
    """
    with store.read_snapshot():
        path = store.path.parent / HEADINGS_NAME
        state = {"format": _FORMAT, "index_id": store.index_id, "generation": store.generation}
        kept = _read_headings(path, str(state["index_id"]))
        if kept is not None and kept[0] == state["generation"]:
            return {doc: headings for doc, (_, headings) in kept[1].items()}
        documents: dict[str, tuple[str, set[str | None]]] = {}
        stale: dict[str, tuple[int, str]] = {}
        for doc, (doc_id, signature) in _signatures(store).items():
            old = None if kept is None else kept[1].get(doc)
            if old is not None and old[0] == signature:
                documents[doc] = old
            else:
                stale[doc] = (doc_id, signature)
        if kept is None or len(stale) > len(documents):
            fresh = store.headings_by_path()
        else:
            fresh = _headings_of(store, {doc: doc_id for doc, (doc_id, _) in stale.items()})
        for doc, (_, signature) in stale.items():
            documents[doc] = (signature, fresh.get(doc, {None}))
    record = {
        **state,
        "paths": {
            # the headings are read back into a set, so their order in the file does
            # not matter (sorting them all cost a tenth of a second at 10,000 notes)
            doc: [signature, list(found)]
            for doc, (signature, found) in documents.items()
        },
    }
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with contextlib.suppress(OSError):
        write_atomic_with(path, lambda handle: handle.write(data), mode=0o644, sync=False)
    return {doc: headings for doc, (_, headings) in documents.items()}


def _read_headings(
    path: Path, index_id: str
) -> tuple[int, dict[str, tuple[str, set[str | None]]]] | None:
    """(generation, path -> (chunk signature, headings)) of the kept map of this index."""
    try:
        data: Any = json.loads(path.read_bytes())
        if data["format"] != _FORMAT or data["index_id"] != index_id:
            return None
        return int(data["generation"]), {
            str(doc): (str(signature), {None if h is None else str(h) for h in headings})
            for doc, (signature, headings) in data["paths"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: read again


def _signatures(store: Store) -> dict[str, tuple[int, str]]:
    """Every document: path -> (id, what identifies its chunks): the digest of its
    chunks stored with it (one small row a document, not a pass over the chunks'
    index); a document without one is read again at every new index state."""
    generation = store.generation
    rows = store.conn.execute("SELECT path, id, chunk_digest FROM documents")
    return {
        str(p): (int(i), f"d:{digest}" if digest is not None else f"g:{generation}")
        for p, i, digest in rows
    }


def _headings_of(store: Store, documents: dict[str, int]) -> dict[str, set[str | None]]:
    out: dict[str, set[str | None]] = {}
    for doc, doc_id in documents.items():
        found = out.setdefault(doc, set())
        for (heading,) in store.conn.execute(
            "SELECT heading FROM chunks WHERE document_id = ?", (doc_id,)
        ):
            found.add(None if heading is None else str(heading))
        if not found:
            found.add(None)  # a document without chunks, as the LEFT JOIN gives it
    return out
