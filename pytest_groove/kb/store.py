"""The SQLite side of an index: documents, chunks, vectors and the FTS5 table.

One database per (KB, model), opened with apsw.  Text and vectors live in the same
database so a single transaction keeps them consistent: a reader (WAL mode) sees a
document either entirely before or entirely after a re-index, never half of it.
The faiss index (:mod:`pytest_groove.kb.vectors`) is derived from the ``embedding``
column, never the other way round.

Durability: WAL with ``synchronous=NORMAL``.  A commit is not fsynced, so a power
cut may lose the last few transactions, but the database stays consistent and a
killed process loses nothing committed.  That trade is right here because the
whole database is derived from the KB: whatever a crash loses, the next indexer
run sees as "not indexed yet" (or as an old hash) and redoes.  The indexer writes
many documents per transaction (see :meth:`Store.write_documents`); each
document's rows still change together, because a transaction is all or nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw
import numpy as np
import numpy.typing as npt

from pytest_groove.errors import GrooveError, clip_repr
from pytest_groove.kb.bm25_sweep import PhraseHits, idf
from pytest_groove.kb.index_faults import apsw_fault, index_faults
from pytest_groove.kb.markdown import CHUNKER_VERSION
from pytest_groove.kb.records import ChunkText, CorpusSnapshot, ParsedDocument
from pytest_groove.kb.scripts import OPENING_CHARS, chunk_opening
from pytest_groove.kb.terms import term_text

#: bump when the table layout changes; an index with another version is rebuilt
#: (2: the ``fts_terms`` table; 3: the full-text tables' ``hashsize``; 4: each
#: document's note vector, ``documents.note_embedding``; 5: ``fts_terms`` filled only
#: while the index keeps it, see :data:`TERM_TABLE_META`)
SCHEMA_VERSION = 5
#: a version-4 index is a version-5 index that keeps its word table: it is upgraded in
#: place (two meta rows) rather than rebuilt, which would re-embed every chunk
_TERM_TABLE_ALWAYS_SCHEMA = 4
#: ``index_meta`` key: "kept" while ``fts_terms`` holds every chunk, "off" while it
#: holds none.  Only the version-4 full-text compiler reads that table, and feeding it
#: is about a fifth of what indexing costs SQLite, so an index fills it the first time
#: a configuration asks for it (:meth:`Store.keep_term_table`) and from then on.
TERM_TABLE_META = "term_table"
#: ``index_meta`` key: "kept" while every document has its note vector
#: (``documents.note_embedding``, :mod:`pytest_groove.kb.notes`), "off" while the
#: indexer does not embed them.  Only note order reads them, and they are about a
#: third more text for the model to embed, so an index embeds them the first time a
#: configuration with note order is indexed (:meth:`Store.notes_to_embed`) and from
#: then on.  No key: an index from before this key, which always kept them.
NOTE_VECTORS_META = "note_vectors"
DB_FILE_NAME = "index.db"
BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT UNIQUE NOT NULL,
    title TEXT, topic TEXT, category TEXT, depth TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    date TEXT,
    content_hash TEXT NOT NULL,
    size_bytes INTEGER,
    last_indexed TEXT NOT NULL,
    -- the embedding of the note's title and opening section (kb.notes.note_text)
    note_embedding BLOB
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    heading TEXT,
    level INTEGER,
    content TEXT NOT NULL,
    token_count INTEGER,
    quality_score REAL NOT NULL DEFAULT 1.0,
    context_text TEXT,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_chunks_doc_order ON chunks(document_id, chunk_index);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_chunks USING fts5(
    heading, context, content,
    content='', contentless_delete=1,
    tokenize='trigram remove_diacritics 1 case_sensitive 0'
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_terms USING fts5(
    heading, context, content,
    content='', contentless_delete=1,
    tokenize='porter unicode61 remove_diacritics 2'
);
"""

#: FTS5 settings stored with both full-text tables; they change how fast rows go in,
#: never what a query returns.  ``hashsize``: memory (bytes) for new entries before
#: FTS5 writes them out as a segment (default 1 MiB).  The trigram table makes about
#: one entry per character, so with the default a transaction of a few hundred chunks
#: wrote many small segments that FTS5 then merged again; with 16 MiB a transaction of
#: a few thousand chunks writes one.  ``automerge``: how many segments of one size pile
#: up before FTS5 merges them into a larger one (default 4); merging 8 at a time
#: rewrites each entry fewer times as the table grows (a 100k-chunk build: 21 s -> 17 s
#: of SQL).
FTS_TABLE_SETTINGS: tuple[tuple[str, int], ...] = (
    ("hashsize", 16 * 1024 * 1024),
    ("automerge", 8),
)
_FTS_SETTINGS = "".join(
    f"INSERT INTO {table}({table}, rank) VALUES ('{key}', {value});"
    for table in ("fts_chunks", "fts_terms")
    for key, value in FTS_TABLE_SETTINGS
)

#: the full-text tables a MATCH expression can be run against (see kb.terms)
FTS_TABLES = ("fts_chunks", "fts_terms")


@dataclass(frozen=True)
class ChunkRow:
    """A stored chunk joined with its document's path and title."""

    id: int
    document_id: int
    path: str
    title: str | None
    chunk_index: int
    heading: str | None
    level: int | None
    content: str
    context: str | None
    token_count: int | None


@dataclass(frozen=True)
class StoredChunk:
    """What the frontmatter-only fast path compares."""

    heading: str | None
    content: str
    context: str | None


@dataclass(frozen=True)
class DocumentWrite:
    """One document's new state, as the indexer hands it to :meth:`Store.write_documents`.

    ``vectors`` None means only the document row changes (a frontmatter-only edit:
    the chunks and their embeddings stay as stored).  ``note_vector`` replaces the
    document's note vector (:mod:`pytest_groove.kb.notes`); None keeps the stored one,
    unless ``drop_note`` (the document's title or opening changed and the index does
    not embed note vectors now): then it has none, never a stale one.
    """

    path: str
    content_hash: str
    size_bytes: int
    doc: ParsedDocument
    vectors: npt.NDArray[np.float32] | None = None
    token_counts: Sequence[int] = ()
    quality_scores: Sequence[float] = ()
    #: each chunk's (heading, context, content) as the term table indexes them
    #: (:func:`term_fields`); empty = worked out here.  The indexer renders them on
    #: its own thread, so the writer thread only runs SQLite.
    term_texts: Sequence[tuple[str | None, str | None, str | None]] = ()
    note_vector: npt.NDArray[np.float32] | None = None
    drop_note: bool = False


def term_fields(
    heading: str | None, context: str | None, content: str
) -> tuple[str | None, str | None, str | None]:
    """A chunk's three columns as the ``fts_terms`` table indexes them."""
    return term_text(heading), term_text(context), term_text(content)


def _sql_term_text(*args: Any) -> str | None:
    """:func:`term_text` as an SQL function of one argument (a column: text or NULL)."""
    (value,) = args
    return None if value is None else term_text(value if isinstance(value, str) else str(value))


def _category_from_path(path: str) -> str | None:
    parts = path.split("/")
    return parts[0] if len(parts) >= 2 else None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _PhraseHitCollector:
    """An FTS5 auxiliary function gathering what bm25 reads, one row per call."""

    def __init__(self) -> None:
        self.rowids: list[int] = []
        self.counts: list[list[list[int]]] = []
        self.row_tokens: list[int] = []
        self.idf: tuple[float, ...] = ()
        self.average_tokens = 1.0
        self.columns = 3
        self._phrases = range(0)

    def __call__(self, api: apsw.FTS5ExtensionApi, *_args: Any) -> None:
        if not self.rowids:
            # table-wide figures, once per statement (as FTS5's bm25 does)
            rows = api.row_count
            self.columns = api.column_count
            self.average_tokens = float(api.column_total_size(-1)) / float(rows)
            counts: list[float] = []
            for phrase in range(api.phrase_count):
                seen = [0]
                api.query_phrase(phrase, _count_row, seen)
                counts.append(idf(rows, seen[0]))
            self.idf = tuple(counts)
            self._phrases = range(api.phrase_count)
        self.rowids.append(api.rowid)
        locations = api.phrase_locations
        self.counts.append(
            [[len(offsets) for offsets in locations(phrase)] for phrase in self._phrases]
        )
        self.row_tokens.append(api.column_size(-1))

    def result(self) -> PhraseHits:
        if not self.rowids:
            return PhraseHits.empty(self.columns)
        return PhraseHits(
            rowids=np.asarray(self.rowids, dtype=np.int64),
            counts=np.asarray(self.counts, dtype=np.float64),
            row_tokens=np.asarray(self.row_tokens, dtype=np.float64),
            idf=self.idf,
            average_tokens=self.average_tokens,
        )


def _count_row(_api: apsw.FTS5ExtensionApi, seen: list[int]) -> None:
    seen[0] += 1


class Store:
    """An open index database."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, directory: Path, *, create: bool) -> Store:
        """Open ``<directory>/index.db``; with ``create`` make it if missing."""
        db_path = directory / DB_FILE_NAME
        if not create and not db_path.is_file():
            raise GrooveError(
                f"No index found at {db_path}. Run `groove index --kb-path <kb>` first."
            )
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not os.access(directory, os.W_OK):
            return cls._open_immutable(db_path)
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(str(db_path), flags=flags)
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            conn.execute("PRAGMA journal_mode=WAL")
            # derived data (see the module docstring): no fsync per commit
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(conn, db_path)
            version = store._schema_version()
            if version is None:
                with store.transaction():
                    conn.execute(_SCHEMA)
                    conn.execute(_FTS_SETTINGS)
                    store.set_meta("schema_version", str(SCHEMA_VERSION))
                    store.set_meta("chunker_version", str(CHUNKER_VERSION))
                    store.set_meta("generation", "0")
                    store.set_meta(TERM_TABLE_META, "off")
                    store.set_meta(NOTE_VECTORS_META, "off")
                    # names this database's vector caches: a re-created database restarts
                    # its generation count and must never pick up an old cache file
                    store.set_meta("index_id", uuid.uuid4().hex)
            elif (version, store._chunker_version()) == (
                _TERM_TABLE_ALWAYS_SCHEMA,
                CHUNKER_VERSION,
            ):
                with store.transaction():
                    store.set_meta(TERM_TABLE_META, "kept")
                    store.set_meta("schema_version", str(SCHEMA_VERSION))
            elif (version, chunker := store._chunker_version()) != (
                SCHEMA_VERSION,
                CHUNKER_VERSION,
            ):
                conn.close()
                if not create:
                    raise GrooveError(
                        f"index at {db_path} was built by another pytest-groove version "
                        f"(schema {version}, chunker {chunker}; this one uses "
                        f"{SCHEMA_VERSION}, {CHUNKER_VERSION}): rebuild it with "
                        "`groove index --kb-path <kb>`"
                    )
                # The index is derived data: an indexer (holding the index lock) simply
                # starts over rather than guessing how to migrate an unknown layout.
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db_path}{suffix}").unlink(missing_ok=True)
                return cls.open(directory, create=True)
        except apsw.Error as exc:
            fault = apsw_fault(exc, db_path, 0 if conn is None else conn.system_errno)
            if conn is not None:
                conn.close()
            raise fault from None
        except UnicodeDecodeError:
            if conn is not None:
                conn.close()
            with index_faults(db_path):
                raise
        return store

    @classmethod
    def _open_immutable(cls, db_path: Path) -> Store:
        """A read-only open of an index in a folder this process cannot write.

        SQLite needs to create the WAL's shared-memory file beside a WAL database even
        to read it; ``immutable=1`` skips that (and all locking), which is right for a
        read-only checkout or mount where nobody changes the file meanwhile.
        """
        uri = f"file:{quote(str(db_path))}?immutable=1"
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            store = cls(conn, db_path)
            version = store._schema_version()
            chunker = store._chunker_version()
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise apsw_fault(exc, db_path) from None
        if chunker != CHUNKER_VERSION or version not in (
            SCHEMA_VERSION,
            _TERM_TABLE_ALWAYS_SCHEMA,
        ):
            conn.close()
            raise GrooveError(
                f"index at {db_path} was built by another pytest-groove version (schema "
                f"{version}, chunker {chunker}; this one uses {SCHEMA_VERSION}, "
                f"{CHUNKER_VERSION}), and its folder is not writable: rebuild it elsewhere with "
                "`groove index --kb-path <kb> --index-dir <writable folder>`"
            )
        return store

    def _schema_version(self) -> int | None:
        row = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name='index_meta'"
        ).fetchone()
        if row is None:
            return None
        value = self.get_meta("schema_version")
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            return -1

    def _chunker_version(self) -> int:
        """Version of the chunking rules the stored chunks were cut by (absent = 1)."""
        value = self.get_meta("chunker_version")
        try:
            return 1 if value is None else int(value)
        except ValueError:
            return -1

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (BEGIN IMMEDIATE so writers queue up early)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read inside sees the same committed state (WAL snapshot)."""
        if not self.conn.getautocommit():
            yield  # already inside a transaction: that one is the snapshot
            return
        self.conn.execute("BEGIN")
        # a deferred transaction takes its snapshot at the first read
        self.conn.execute("SELECT count(*) FROM index_meta").fetchone()
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ metadata

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM index_meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO index_meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    @property
    def index_id(self) -> str:
        return self.get_meta("index_id") or "unknown"

    @property
    def generation(self) -> int:
        """Bumped by every write transaction; keys the cached faiss file."""
        return int(self.get_meta("generation") or "0")

    def _bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation + 1))

    @property
    def keeps_term_table(self) -> bool:
        """Whether ``fts_terms`` holds every chunk (a version-4 index, with no key, did)."""
        return self.get_meta(TERM_TABLE_META) != "off"

    def keep_term_table(self) -> None:
        """Fill ``fts_terms`` from the stored chunks and keep it filled.

        The term text is rendered by the same function the indexer uses, registered
        with SQLite for this one statement, so a table filled here holds exactly what
        one fed chunk by chunk would.
        """
        if self.keeps_term_table:
            return
        self.conn.create_scalar_function("groove_term_text", _sql_term_text, 1, deterministic=True)
        with self.transaction():
            self.conn.execute("INSERT INTO fts_terms(fts_terms) VALUES ('delete-all')")
            self.conn.execute(
                "INSERT INTO fts_terms(rowid, heading, context, content) "
                "SELECT id, groove_term_text(heading), groove_term_text(context_text), "
                "groove_term_text(content) FROM chunks ORDER BY id"
            )
            self.set_meta(TERM_TABLE_META, "kept")

    @property
    def keeps_note_vectors(self) -> bool:
        """Whether every document has its note vector and the indexer embeds new ones."""
        return self.get_meta(NOTE_VECTORS_META) != "off"

    def notes_to_embed(self) -> list[tuple[int, str | None, str]]:
        """(document id, title, first chunk's content) of every document without a note
        vector, in id order: what :func:`~pytest_groove.kb.notes.note_text_of` embeds."""
        return [
            (int(doc_id), None if title is None else str(title), str(opening))
            for doc_id, title, opening in self.conn.execute(
                "SELECT d.id, d.title, c.content FROM documents d "
                "JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0 "
                "WHERE d.note_embedding IS NULL ORDER BY d.id"
            )
        ]

    def set_note_vectors(
        self, vectors: Sequence[tuple[int, npt.NDArray[np.float32]]], *, complete: bool
    ) -> None:
        """Store documents' note vectors in one transaction; ``complete``: every
        document now has one, and the indexer keeps embedding them from here on."""
        with self.transaction():
            for doc_id, vector in vectors:
                self._set_note_vector(doc_id, vector)
            if complete:
                self.set_meta(NOTE_VECTORS_META, "kept")
            if vectors:
                self._bump_generation()

    # ------------------------------------------------------------------ writing

    def wipe(self, *, term_table: bool, note_vectors: bool) -> None:
        """Delete every document, chunk and FTS row (``--force``).

        The empty index goes on feeding the word table and embedding note vectors
        only if ``term_table`` / ``note_vectors``: a rebuild keeps what its
        configuration reads, nothing more.
        """
        with self.transaction():
            # the FTS5 command drops a whole full-text index at once instead of
            # deleting its entries row by row
            for table in FTS_TABLES:
                self.conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
            self.conn.execute("DELETE FROM chunks")
            self.conn.execute("DELETE FROM documents")
            # with no rows, "kept" (every row has it) and "off" are both true already
            self.set_meta(TERM_TABLE_META, "kept" if term_table else "off")
            self.set_meta(NOTE_VECTORS_META, "kept" if note_vectors else "off")
            self._bump_generation()

    def document_hashes(self) -> dict[str, str]:
        return {
            str(path): str(digest)
            for path, digest in self.conn.execute("SELECT path, content_hash FROM documents")
        }

    def document_title(self, path: str) -> str | None:
        """The stored title of ``path``'s document (None: no title, or no such document)."""
        row = self.conn.execute("SELECT title FROM documents WHERE path=?", (path,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def stored_chunks(self, path: str) -> list[StoredChunk]:
        rows = self.conn.execute(
            "SELECT c.heading, c.content, c.context_text FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE d.path=? ORDER BY c.chunk_index",
            (path,),
        )
        return [StoredChunk(h, c, x) for h, c, x in rows]

    def _delete_document_rows(self, doc_id: int) -> None:
        for table in FTS_TABLES if self.keeps_term_table else ("fts_chunks",):
            self.conn.execute(
                f"DELETE FROM {table} WHERE rowid IN (SELECT id FROM chunks WHERE document_id=?)",
                (doc_id,),
            )
        self.conn.execute("DELETE FROM chunks WHERE document_id=?", (doc_id,))

    def write_document(
        self,
        path: str,
        content_hash: str,
        size_bytes: int,
        doc: ParsedDocument,
        vectors: npt.NDArray[np.float32],
        *,
        store_context: bool,
        token_counts: Sequence[int],
        quality_scores: Sequence[float],
    ) -> None:
        """Replace ``path``'s document and chunks atomically (one transaction)."""
        self.write_documents(
            [
                DocumentWrite(
                    path, content_hash, size_bytes, doc, vectors, token_counts, quality_scores
                )
            ],
            store_context=store_context,
        )

    def write_documents(self, writes: Sequence[DocumentWrite], *, store_context: bool) -> None:
        """Apply many documents' new states in ONE transaction.

        A commit costs far more than the rows of a typical document, so the indexer
        groups documents; each document's rows still change all together (the
        transaction is all or nothing), and a killed run leaves the documents of the
        unfinished group at their old hashes, which the next run redoes.
        """
        for write in writes:
            if write.vectors is not None and not (
                len(write.vectors)
                == len(write.doc.chunks)
                == len(write.token_counts)
                == len(write.quality_scores)
            ):
                raise ValueError("one vector, token count and quality score per chunk expected")
        if not writes:
            return
        with self.transaction():
            term_table = self.keeps_term_table
            # AUTOINCREMENT: every chunk id written below is above this one
            first_new = self._scalar(
                "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name='chunks'"
            )
            chunks_written = False
            # a new note vector changes what the vector caches hold, as new chunks do
            notes_written = any(
                write.note_vector is not None or write.drop_note for write in writes
            )
            for write in writes:
                doc_id = self._upsert_document(write)
                if write.vectors is None:
                    continue
                self.conn.executemany(
                    "INSERT INTO chunks(document_id, chunk_index, heading, level, content, "
                    "token_count, quality_score, context_text, embedding) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            doc_id,
                            chunk.index,
                            chunk.heading,
                            chunk.level,
                            chunk.content,
                            tokens,
                            quality,
                            chunk.context if store_context else None,
                            np.ascontiguousarray(vector, dtype=np.float32).tobytes(),
                        )
                        for chunk, vector, tokens, quality in zip(
                            write.doc.chunks,
                            write.vectors,
                            write.token_counts,
                            write.quality_scores,
                            strict=True,
                        )
                    ],
                )
                chunks_written = True
            if chunks_written:
                # one statement feeds the full-text index every chunk of the group
                self.conn.execute(
                    "INSERT INTO fts_chunks(rowid, heading, context, content) "
                    "SELECT id, heading, context_text, content FROM chunks WHERE id > ? "
                    "ORDER BY id",
                    (first_new,),
                )
            if chunks_written and term_table:
                # the term table's text is rewritten in Python (Japanese bigrams); the
                # new ids come in insertion order, the order of the writes' chunks
                rendered = [
                    texts
                    for write in writes
                    if write.vectors is not None
                    for texts in (
                        write.term_texts
                        or [
                            term_fields(c.heading, c.context if store_context else None, c.content)
                            for c in write.doc.chunks
                        ]
                    )
                ]
                new_ids = [
                    int(r[0])
                    for r in self.conn.execute(
                        "SELECT id FROM chunks WHERE id > ? ORDER BY id", (first_new,)
                    )
                ]
                self.conn.executemany(
                    "INSERT INTO fts_terms(rowid, heading, context, content) VALUES (?, ?, ?, ?)",
                    [(cid, *texts) for cid, texts in zip(new_ids, rendered, strict=True)],
                )
            if chunks_written or notes_written:
                self._bump_generation()

    def _upsert_document(self, write: DocumentWrite) -> int:
        """Insert or update ``write``'s document row; a content change drops its chunks."""
        meta = self._doc_meta(write.path, write.content_hash, write.size_bytes, write.doc)
        row = self.conn.execute("SELECT id FROM documents WHERE path=?", (write.path,)).fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO documents(path, title, topic, category, depth, tags, date, "
                "content_hash, size_bytes, last_indexed) VALUES (:path, :title, :topic, "
                ":category, :depth, :tags, :date, :hash, :size, :now)",
                meta,
            )
            doc_id = self.conn.last_insert_rowid()
            if write.note_vector is not None:
                self._set_note_vector(doc_id, write.note_vector)
            return doc_id
        doc_id = int(row[0])
        if write.vectors is not None:
            self._delete_document_rows(doc_id)
        self.conn.execute(
            "UPDATE documents SET title=:title, topic=:topic, category=:category, "
            "depth=:depth, tags=:tags, date=:date, content_hash=:hash, "
            "size_bytes=:size, last_indexed=:now WHERE id=:id",
            {**meta, "id": doc_id},
        )
        if write.note_vector is not None:
            self._set_note_vector(doc_id, write.note_vector)
        elif write.drop_note:
            self.conn.execute("UPDATE documents SET note_embedding = NULL WHERE id=?", (doc_id,))
        return doc_id

    def _set_note_vector(self, doc_id: int, vector: npt.NDArray[np.float32]) -> None:
        self.conn.execute(
            "UPDATE documents SET note_embedding=? WHERE id=?",
            (np.ascontiguousarray(vector, dtype=np.float32).tobytes(), doc_id),
        )

    def update_document_meta(
        self, path: str, content_hash: str, size_bytes: int, doc: ParsedDocument
    ) -> None:
        """Frontmatter-only edit: chunks unchanged, refresh the document row."""
        self.write_documents(
            [DocumentWrite(path, content_hash, size_bytes, doc)], store_context=False
        )

    def rename_documents(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Move documents whose bytes did not change (rename detection)."""
        if not pairs:
            return
        with self.transaction():
            for old, new in pairs:
                self.conn.execute(
                    "UPDATE documents SET path=?, category=? WHERE path=?",
                    (new, _category_from_path(new), old),
                )
            self._bump_generation()

    def delete_documents(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        with self.transaction():
            for path in paths:
                row = self.conn.execute("SELECT id FROM documents WHERE path=?", (path,)).fetchone()
                if row is None:
                    continue
                self._delete_document_rows(int(row[0]))
                self.conn.execute("DELETE FROM documents WHERE id=?", (int(row[0]),))
            self._bump_generation()

    @staticmethod
    def _doc_meta(path: str, content_hash: str, size: int, doc: ParsedDocument) -> dict[str, Any]:
        return {
            "path": path,
            "title": doc.title,
            "topic": doc.topic,
            "category": _category_from_path(path),
            "depth": doc.depth,
            "tags": json.dumps(list(doc.tags), ensure_ascii=False),
            "date": doc.date,
            "hash": content_hash,
            "size": size,
            "now": _now(),
        }

    # ------------------------------------------------------------------ reading

    def _scalar(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        row = self.conn.execute(sql, params).fetchone()
        return 0 if row is None else int(row[0])

    def counts(self) -> tuple[int, int]:
        return (
            self._scalar("SELECT count(*) FROM documents"),
            self._scalar("SELECT count(*) FROM chunks"),
        )

    def context_chunk_count(self) -> int:
        return self._scalar(
            "SELECT count(*) FROM chunks WHERE context_text IS NOT NULL AND context_text != ''"
        )

    def all_vectors(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every chunk id with its stored embedding, in id order."""
        ids: list[int] = []
        blobs: list[bytes] = []
        for cid, blob in self.conn.execute("SELECT id, embedding FROM chunks ORDER BY id"):
            ids.append(int(cid))
            blobs.append(bytes(blob))
        dim = int(self.get_meta("embedding_dim") or "0")
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)
        return np.asarray(ids, dtype=np.int64), matrix.copy()

    def note_vectors(self) -> dict[int, npt.NDArray[np.float32]]:
        """Every document's note vector, by document id (documents without one are left out)."""
        return {
            int(doc_id): np.frombuffer(bytes(blob), dtype=np.float32).copy()
            for doc_id, blob in self.conn.execute(
                "SELECT id, note_embedding FROM documents WHERE note_embedding IS NOT NULL"
            )
        }

    def note_openings(self) -> dict[int, str]:
        """Each document's title and opening text (its note vector's script), by id."""
        return {
            int(doc_id): chunk_opening(
                None if title is None else bytes(title).decode("utf-8", "replace"),
                bytes(content).decode("utf-8", "replace"),
            )
            for doc_id, title, content in self.conn.execute(
                "SELECT d.id, CAST(d.title AS BLOB), CAST(substr(c.content, 1, ?) AS BLOB) "
                "FROM documents d JOIN chunks c ON c.document_id = d.id AND c.chunk_index = 0",
                (OPENING_CHARS,),
            )
        }

    def chunk_documents(self) -> dict[int, int]:
        """Every chunk's document id, by chunk id."""
        return {
            int(cid): int(doc_id)
            for cid, doc_id in self.conn.execute("SELECT id, document_id FROM chunks")
        }

    def chunk_openings(self) -> dict[int, str]:
        """:func:`~pytest_groove.kb.scripts.chunk_opening` of every chunk, by id."""
        # read as bytes: a damaged row must not stop the index from opening (the
        # search that reads it reports the corruption); only the script counts here
        return {
            int(cid): chunk_opening(
                bytes(heading).decode("utf-8", "replace") if heading is not None else None,
                bytes(content).decode("utf-8", "replace"),
            )
            for cid, heading, content in self.conn.execute(
                "SELECT id, CAST(heading AS BLOB), CAST(substr(content, 1, ?) AS BLOB) FROM chunks",
                (OPENING_CHARS,),
            )
        }

    def vectors_for(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        out: dict[int, npt.NDArray[np.float32]] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for cid, blob in self.conn.execute(
                f"SELECT id, embedding FROM chunks WHERE id IN ({marks})", batch
            ):
                out[int(cid)] = np.frombuffer(bytes(blob), dtype=np.float32)
        return out

    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        """The document id of each chunk of ``ids`` that exists (no text is read)."""
        out: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for cid, document_id in self.conn.execute(
                f"SELECT id, document_id FROM chunks WHERE id IN ({marks})", batch
            ):
                out[int(cid)] = int(document_id)
        return out

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        out: dict[int, ChunkRow] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            for row in self.conn.execute(
                "SELECT c.id, c.document_id, d.path, d.title, c.chunk_index, c.heading, c.level, "
                "c.content, c.context_text, c.token_count FROM chunks c "
                f"JOIN documents d ON d.id = c.document_id WHERE c.id IN ({marks})",
                batch,
            ):
                out[int(row[0])] = ChunkRow(*row)
        return out

    def document_chunk_rows(
        self, document_id: int, lo: int | None = None, hi: int | None = None, limit: int = -1
    ) -> list[ChunkRow]:
        """Chunks of one document in order, optionally only indices lo..hi."""
        sql = (
            "SELECT c.id, c.document_id, d.path, d.title, c.chunk_index, c.heading, c.level, "
            "c.content, c.context_text, c.token_count FROM chunks c "
            "JOIN documents d ON d.id = c.document_id WHERE c.document_id = ?"
        )
        params: list[Any] = [document_id]
        if lo is not None and hi is not None:
            sql += " AND c.chunk_index BETWEEN ? AND ?"
            params += [lo, hi]
        sql += " ORDER BY c.chunk_index LIMIT ?"
        params.append(limit)
        return [ChunkRow(*row) for row in self.conn.execute(sql, params)]

    def headings_by_path(self) -> dict[str, set[str | None]]:
        """Every indexed path with the headings its chunks carry (None: no heading)."""
        out: dict[str, set[str | None]] = {}
        for path, heading in self.conn.execute(
            "SELECT d.path, c.heading FROM documents d LEFT JOIN chunks c ON c.document_id = d.id"
        ):
            out.setdefault(str(path), set()).add(None if heading is None else str(heading))
        return out

    def fts_candidates(
        self,
        match_expr: str,
        weights: tuple[float, float, float],
        limit: int,
        table: str = "fts_chunks",
    ) -> list[int]:
        """Chunk ids matching ``match_expr`` in ``table``, best bm25 first (ties: lower id)."""
        if limit <= 0:
            return []
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        try:
            rows = self.conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? "
                f"ORDER BY bm25({table}, ?, ?, ?), rowid LIMIT ?",
                (match_expr, *weights, limit),
            )
            return [int(r[0]) for r in rows]
        except apsw.SQLError as exc:
            raise GrooveError(
                f"full-text query {clip_repr(match_expr)} was refused by SQLite: {exc}"
            ) from None

    def fts_term_stats(
        self, table: str, phrases: Sequence[str], chunk_id: int
    ) -> list[tuple[int, bool]]:
        """For each phrase: how many chunks match it, and whether ``chunk_id`` does."""
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        stats: list[tuple[int, bool]] = []
        for phrase in phrases:
            expr = '"' + phrase.replace('"', '""') + '"'
            try:
                row = self.conn.execute(
                    f"SELECT count(*), coalesce(max(rowid = ?), 0) FROM {table} "
                    f"WHERE {table} MATCH ?",
                    (chunk_id, expr),
                ).fetchone()
            except apsw.SQLError:
                continue  # a phrase FTS5 refuses on its own carries no evidence
            stats.append((int(row[0]), bool(row[1])) if row else (0, False))
        return stats

    def fts_phrase_hits(self, match_expr: str, table: str = "fts_chunks") -> PhraseHits:
        """Per matching row of ``table``, each phrase's occurrences per column (bm25_sweep)."""
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        collector = _PhraseHitCollector()
        name = f"groove_phrase_hits_{id(collector)}"
        self.conn.register_fts5_function(name, collector)
        try:
            for _ in self.conn.execute(
                f"SELECT {name}({table}) FROM {table} WHERE {table} MATCH ?", (match_expr,)
            ):
                pass
        except apsw.SQLError as exc:
            raise GrooveError(
                f"full-text query {clip_repr(match_expr)} was refused by SQLite: {exc}"
            ) from None
        return collector.result()

    def fts_match_count(self, match_expr: str, table: str = "fts_chunks") -> int:
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        return self._scalar(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match_expr,))

    def iter_chunk_texts(self) -> Iterator[ChunkText]:
        for path, index, heading, context, content in self.conn.execute(
            "SELECT d.path, c.chunk_index, c.heading, c.context_text, c.content FROM chunks c "
            "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"
        ):
            yield ChunkText(str(path), int(index), heading, context, str(content))

    def corpus_snapshot(self) -> CorpusSnapshot:
        """Counts and a digest over every indexed chunk (see docs/eval.md)."""
        digest = hashlib.sha256()
        chunks = 0
        # Python's str ordering is code-point order, the order the digest is defined in;
        # SQLite's default BINARY collation on UTF-8 gives the same order.
        for chunk in self.iter_chunk_texts():
            chunks += 1
            for field in (
                chunk.path,
                str(chunk.chunk_index),
                chunk.heading,
                chunk.content,
                chunk.context,
            ):
                if field is None:
                    digest.update(b"\x00")
                else:
                    data = field.encode("utf-8")
                    digest.update(b"\x01" + struct.pack("<Q", len(data)) + data)
        documents = self._scalar("SELECT count(*) FROM documents")
        return CorpusSnapshot(documents=documents, chunks=chunks, digest=digest.hexdigest())
