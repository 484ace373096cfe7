"""The SQLite side of an index: documents, chunks, vectors and the FTS5 table.

One database per (KB, model), opened with apsw.  Text and vectors live in the same
database so a single transaction keeps them consistent: a reader (WAL mode) sees a
document either entirely before or entirely after a re-index, never half of it.
The faiss index (:mod:`pytest_groove.kb.derived.vectors`) is derived from the ``embedding``
column, never the other way round.

Durability: WAL with ``synchronous=NORMAL``.  A commit is not fsynced, so a power
cut may lose the last few transactions, but the database stays consistent and a
killed process loses nothing committed.  That trade is right here because the
whole database is derived from the KB: whatever a crash loses, the next indexer
run sees as "not indexed yet" (or as an old hash) and redoes.  The indexer writes
many documents per transaction (see :meth:`Store.write_documents`); each
document's rows still change together, because a transaction is all or nothing.

The store is built in parts: :mod:`.store_schema` (the layout, opening, transactions,
metadata), :mod:`.store_writer`, :mod:`.store_reader`, :mod:`.store_ties` (the kept tie
order), :mod:`.kept_snapshot` (the kept corpus snapshot) and :mod:`.store_fulltext`;
:class:`Store` joins them, and every name stays importable from here.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.kb.store.fulltext import StoreFullText
from pytest_groove.kb.store.kept_snapshot import StoreCorpusSnapshot
from pytest_groove.kb.store.reader import ChunkRow, StoredChunk, StoreReader
from pytest_groove.kb.store.schema import (
    _TERM_TABLE_ALWAYS_SCHEMA,
    BUSY_TIMEOUT_MS,
    DB_FILE_NAME,
    DB_FILE_NAMES,
    FTS_TABLE_SETTINGS,
    FTS_TABLES,
    NOTE_VECTORS_META,
    SCHEMA_VERSION,
    TERM_TABLE_META,
    StoreConnection,
)
from pytest_groove.kb.store.ties import StoreTieOrder
from pytest_groove.kb.store.writer import DocumentWrite, StoreWriter, chunk_digest_of, term_fields

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DB_FILE_NAME",
    "DB_FILE_NAMES",
    "FTS_TABLES",
    "FTS_TABLE_SETTINGS",
    "NOTE_VECTORS_META",
    "SCHEMA_VERSION",
    "TERM_TABLE_META",
    "_TERM_TABLE_ALWAYS_SCHEMA",
    "ChunkRow",
    "DocumentWrite",
    "Store",
    "StoreConnection",
    "StoredChunk",
    "chunk_digest_of",
    "term_fields",
]


class Store(StoreWriter, StoreCorpusSnapshot, StoreReader, StoreTieOrder, StoreFullText):
    """An open index database: :meth:`open` it, then write, read and search it."""
