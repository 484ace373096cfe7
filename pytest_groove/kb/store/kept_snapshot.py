"""The corpus snapshot of an index state, kept in ``index_meta`` by the indexer.

Every eval run records the corpus snapshot (:meth:`~.reader.StoreReader.corpus_snapshot`:
counts and a SHA-256 over every indexed document's path and stored digest of its
chunks, one row per document).  It depends only on the index state, so the indexer
works it out after its writes, in the transaction that keeps the tie order
(:mod:`.ties`), and keeps it in ``index_meta`` with the write generation it answers
for; a search of that state reads one value.  An index no writer kept it for (one
built by an older version and opened read-only) has it computed, by each reader.

A row of the database, it is written atomically with the state it describes and
checked as the database is: no file of its own, no seal, no format check.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
from typing import Any

from pytest_groove.kb.source.corpus_digest import DIGEST_VERSION
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.kb.store.reader import StoreReader

__all__ = ["CORPUS_SNAPSHOT_META", "StoreCorpusSnapshot", "decode_snapshot", "encode_snapshot"]

#: the ``index_meta`` key of the kept snapshot
CORPUS_SNAPSHOT_META = "corpus_snapshot"


def encode_snapshot(snapshot: CorpusSnapshot, generation: int) -> str:
    """The kept value: the snapshot and the generation it answers for."""
    record = {
        "generation": generation,
        "documents": snapshot.documents,
        "chunks": snapshot.chunks,
        "digest": snapshot.digest,
        "digest_version": snapshot.digest_version,
    }
    return json.dumps(record, separators=(",", ":"))


def decode_snapshot(kept: str | None, generation: int) -> CorpusSnapshot | None:
    """The kept snapshot when it answers for ``generation`` with this version's digest;
    None for anything else (none kept, another state's, another digest's)."""
    if kept is None:
        return None
    try:
        data: Any = json.loads(kept)
        if data["generation"] != generation or data["digest_version"] != DIGEST_VERSION:
            return None
        return CorpusSnapshot(
            documents=int(data["documents"]),
            chunks=int(data["chunks"]),
            digest=str(data["digest"]),
            digest_version=int(data["digest_version"]),
        )
    except (ValueError, TypeError, KeyError):
        return None  # not a value this module wrote: computed instead


class StoreCorpusSnapshot(StoreReader):
    """Reading and keeping the corpus snapshot of the index's state."""

    def kept_corpus_snapshot(self) -> CorpusSnapshot:
        """This state's corpus snapshot: the value the indexer kept for it, else
        worked out from every document's row.  Call it inside one read snapshot."""
        kept = decode_snapshot(self.get_meta(CORPUS_SNAPSHOT_META), self.generation)
        return kept if kept is not None else self.corpus_snapshot()

    def keep_corpus_snapshot(self) -> None:
        """Store the snapshot of the index as it is now (the indexer calls this after
        its writes, in a transaction)."""
        self.set_meta(
            CORPUS_SNAPSHOT_META, encode_snapshot(self.corpus_snapshot(), self.generation)
        )

    def keeps_corpus_snapshot(self) -> bool:
        """Whether the kept snapshot is this state's (see :meth:`keep_corpus_snapshot`)."""
        return decode_snapshot(self.get_meta(CORPUS_SNAPSHOT_META), self.generation) is not None
