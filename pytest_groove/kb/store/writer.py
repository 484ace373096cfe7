"""Writing an index: documents, chunks, vectors and their full-text rows.

Every method runs in one transaction and bumps the write generation when what the
vector caches hold changes (:attr:`StoreConnection.generation`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from pytest_groove.kb.source.corpus_digest import document_digest
from pytest_groove.kb.source.records import ParsedDocument
from pytest_groove.kb.store.schema import (
    CHUNK_KEY_INDEX,
    CREATE_CHUNK_KEY_INDEX,
    FTS_TABLES,
    NOTE_VECTORS_META,
    TERM_TABLE_META,
    StoreConnection,
)
from pytest_groove.text.terms import term_text


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
    #: each chunk's key of the text its vector embeds (:mod:`pytest_groove.kb.reuse`);
    #: empty: not known (the chunks carry none), and likewise ``note_key``
    embed_keys: Sequence[bytes] = ()
    note_key: bytes | None = None
    #: :func:`chunk_digest_of` the chunks (None: worked out here); the indexer works
    #: it out on its own thread, like ``term_texts``
    chunk_digest: str | None = None


def term_fields(
    heading: str | None, context: str | None, content: str
) -> tuple[str | None, str | None, str | None]:
    """A chunk's three columns as the ``fts_terms`` table indexes them."""
    return term_text(heading), term_text(context), term_text(content)


def _sql_term_text(*args: Any) -> str | None:
    """:func:`term_text` as an SQL function of one argument (a column: text or NULL)."""
    (value,) = args
    return None if value is None else term_text(value if isinstance(value, str) else str(value))


def chunk_digest_of(doc: ParsedDocument, store_context: bool) -> str:
    """The document digest of ``doc``'s chunks as a write stores them
    (``documents.chunk_digest``)."""
    return document_digest(
        (chunk.index, chunk.heading, chunk.content, chunk.context if store_context else None)
        for chunk in doc.chunks
    )


def _category_from_path(path: str) -> str | None:
    parts = path.split("/")
    return parts[0] if len(parts) >= 2 else None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


#: the chunk columns a write fills
_INSERT_CHUNKS = (
    "INSERT INTO chunks(document_id, chunk_index, heading, level, content, token_count, "
    "quality_score, context_text, embedding, embed_key) VALUES"
)
#: a new document's columns: :data:`_DOCUMENT_FIELDS`, then its chunks' digest and note
_INSERT_DOCUMENTS = (
    "INSERT INTO documents(path, title, topic, category, depth, tags, date, content_hash, "
    "size_bytes, last_indexed, chunk_digest, note_embedding, note_key) VALUES"
)
#: the keys of ``StoreWriter._doc_meta`` in :data:`_INSERT_DOCUMENTS`'s order
_DOCUMENT_FIELDS = (
    "path",
    "title",
    "topic",
    "category",
    "depth",
    "tags",
    "date",
    "hash",
    "size",
    "now",
)
#: rows inserted by one statement (SQLite's limit on parameters may lower it)
_ROWS_PER_INSERT = 500


def _vector_bytes(vector: npt.NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def _document_ids(conn: apsw.Connection, paths: Sequence[str]) -> dict[str, int]:
    """The id of each of ``paths`` that has a document row (one statement per few
    hundred paths: a step per row would give up the GIL per row, see _insert_rows)."""
    found: dict[str, int] = {}
    per = _rows_per_statement(conn, 1)
    for at in range(0, len(paths), per):
        part = paths[at : at + per]
        found.update(
            _pairs(
                conn,
                "SELECT json_group_array(json_array(path, id)) FROM documents "
                f"WHERE path IN ({', '.join('?' * len(part))})",
                tuple(part),
            )
        )
    return found


def _insert_documents(conn: apsw.Connection, rows: Sequence[tuple[Any, ...]]) -> dict[str, int]:
    """Insert new document rows (``StoreWriter._new_document_row``); their ids by path."""
    if not rows:
        return {}
    # AUTOINCREMENT: every id given below is above every id there is now
    row = conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()
    before = 0 if row is None else int(row[0])
    _insert_rows(conn, _INSERT_DOCUMENTS, rows)
    return _pairs(
        conn,
        "SELECT json_group_array(json_array(path, id)) FROM documents WHERE id > ?",
        (before,),
    )


def _pairs(conn: apsw.Connection, sql: str, params: tuple[Any, ...]) -> dict[str, int]:
    """The (path, id) pairs of a query's one JSON array, by path."""
    row = conn.execute(sql, params).fetchone()
    pairs = json.loads(row[0]) if row is not None else []
    return {str(path): int(doc_id) for path, doc_id in pairs}


def _rows_per_statement(conn: apsw.Connection, width: int) -> int:
    """Rows of ``width`` values bound by one statement (within SQLite's limit)."""
    places = conn.limit(apsw.SQLITE_LIMIT_VARIABLE_NUMBER)
    return max(1, min(_ROWS_PER_INSERT, places // width))


def _insert_rows(conn: apsw.Connection, insert: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """``insert`` (``INSERT INTO table(columns) VALUES``) of ``rows``, in order, many
    to a statement.

    Not ``executemany``: it gives up the GIL around every row, and while the indexer's
    own thread runs Python, getting it back costs up to the switch interval (5 ms)
    each time -- about a tenth of a second per 10,000 rows, on the writer thread
    that a full index waits for.
    """
    if not rows:
        return
    width = len(rows[0])
    places = "(" + ", ".join("?" * width) + ")"
    per = _rows_per_statement(conn, width)
    for at in range(0, len(rows), per):
        part = rows[at : at + per]
        conn.execute(
            f"{insert} {', '.join([places] * len(part))}",
            [value for row in part for value in row],
        )


def _runs_of_distinct_paths(writes: Sequence[DocumentWrite]) -> list[Sequence[DocumentWrite]]:
    """``writes`` cut, in order, where a path comes again (a run inserts its new documents
    together, so it must not hold one twice)."""
    runs: list[Sequence[DocumentWrite]] = []
    start, seen = 0, set[str]()
    for at, write in enumerate(writes):
        if write.path in seen:
            runs.append(writes[start:at])
            start, seen = at, set()
        seen.add(write.path)
    runs.append(writes[start:])
    return runs


def _chunk_rows(
    doc_id: int, write: DocumentWrite, vectors: npt.NDArray[np.float32], store_context: bool
) -> list[tuple[Any, ...]]:
    """The values :data:`_INSERT_CHUNKS` inserts for each chunk of ``write``."""
    chunks = write.doc.chunks
    keys: Sequence[bytes | None] = write.embed_keys or [None] * len(chunks)
    # one copy of the document's vectors, cut into rows (not a copy per row)
    blob = _vector_bytes(vectors)
    width = len(blob) // len(chunks) if chunks else 0
    return [
        (
            doc_id,
            chunk.index,
            chunk.heading,
            chunk.level,
            chunk.content,
            tokens,
            quality,
            chunk.context if store_context else None,
            blob[at * width : (at + 1) * width],
            key,
        )
        for at, (chunk, tokens, quality, key) in enumerate(
            zip(chunks, write.token_counts, write.quality_scores, keys, strict=True)
        )
    ]


def _check_per_chunk(writes: Sequence[DocumentWrite]) -> None:
    """Every write with vectors has one vector, token count and quality score per chunk."""
    for write in writes:
        if write.vectors is not None and not (
            len(write.vectors)
            == len(write.doc.chunks)
            == len(write.token_counts)
            == len(write.quality_scores)
        ):
            raise ValueError("one vector, token count and quality score per chunk expected")


class StoreWriter(StoreConnection):
    """The write side of an index database."""

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

    def set_note_vectors(
        self,
        vectors: Sequence[tuple[int, npt.NDArray[np.float32], bytes | None]],
        *,
        complete: bool,
    ) -> None:
        """Store documents' note vectors (with their keys) in one transaction;
        ``complete``: every document now has one, and the indexer keeps embedding them
        from here on."""
        with self.transaction():
            for doc_id, vector, key in vectors:
                self._set_note_vector(doc_id, vector, key)
            if complete:
                self.set_meta(NOTE_VECTORS_META, "kept")
            if vectors:
                self._bump_generation()

    def wipe(self, *, term_table: bool, note_vectors: bool, retire: bool = False) -> None:
        """Delete every document, chunk and FTS row (``--force``).

        The empty index goes on feeding the word table and embedding note vectors
        only if ``term_table`` / ``note_vectors``: a rebuild keeps what its
        configuration reads, nothing more.  ``retire``: the vectors that carry a key
        are kept in ``retired_vectors`` for the rebuild to find (same model).
        """
        with self.transaction():
            if retire:
                self._retire_chunks("", ())
                self._retire_notes(None)
            # the FTS5 command drops a whole full-text index at once instead of
            # deleting its entries row by row
            for table in FTS_TABLES:
                self.conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
            self.conn.execute("DELETE FROM chunks")
            self.conn.execute("DELETE FROM documents")
            self.forget_own_writes()
            # with no rows, "kept" (every row has it) and "off" are both true already
            self.set_meta(TERM_TABLE_META, "kept" if term_table else "off")
            self.set_meta(NOTE_VECTORS_META, "kept" if note_vectors else "off")
            self._bump_generation()

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
        _check_per_chunk(writes)
        if not writes:
            return
        with self.transaction():
            term_table = self.keeps_term_table
            # AUTOINCREMENT: every chunk id written below is above this one
            first_new = self.chunk_sequence()
            # a new note vector changes what the vector caches hold, as new chunks do
            notes_written = any(
                write.note_vector is not None or write.drop_note for write in writes
            )
            chunks_written = self._write_rows(writes, store_context)
            if chunks_written:
                # one statement feeds the full-text index every chunk of the group
                self.conn.execute(
                    "INSERT INTO fts_chunks(rowid, heading, context, content) "
                    "SELECT id, heading, context_text, content FROM chunks WHERE id > ? "
                    "ORDER BY id",
                    (first_new,),
                )
            if chunks_written and term_table:
                self._feed_term_table(writes, first_new, store_context)
            if chunks_written or notes_written:
                self._bump_generation()

    def _write_rows(self, writes: Sequence[DocumentWrite], store_context: bool) -> bool:
        """Each write's document row (with its chunks' digest where it has vectors) and
        its chunks; whether any chunk was written."""
        written = False
        for run in _runs_of_distinct_paths(writes):
            written = self._write_run(run, store_context) or written
        return written

    def _write_run(self, writes: Sequence[DocumentWrite], store_context: bool) -> bool:
        """:meth:`_write_rows` of writes of distinct paths: the known documents updated one
        by one, the new ones inserted together, then every chunk row."""
        known = _document_ids(self.conn, [write.path for write in writes])
        new_rows: list[tuple[Any, ...]] = []
        for write in writes:
            digest = None
            if write.vectors is not None:
                digest = write.chunk_digest or chunk_digest_of(write.doc, store_context)
            doc_id = known.get(write.path)
            if doc_id is None:
                new_rows.append(self._new_document_row(write, digest))
            else:
                self._update_document(doc_id, write, digest)
        known.update(_insert_documents(self.conn, new_rows))
        rows: list[tuple[Any, ...]] = []
        for write in writes:
            doc_id = known[write.path]
            if write.note_vector is not None:
                self.notes_written.add(doc_id)
            if write.vectors is not None:
                rows.extend(_chunk_rows(doc_id, write, write.vectors, store_context))
        _insert_rows(self.conn, _INSERT_CHUNKS, rows)
        return any(write.vectors is not None for write in writes)

    def _feed_term_table(
        self, writes: Sequence[DocumentWrite], first_new: int, store_context: bool
    ) -> None:
        """Add the chunks written above ``first_new`` to ``fts_terms``."""
        # the term table's text is rewritten in Python (Japanese bigrams); the new ids
        # come in insertion order, the order of the writes' chunks
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
        _insert_rows(
            self.conn,
            "INSERT INTO fts_terms(rowid, heading, context, content) VALUES",
            [(cid, *texts) for cid, texts in zip(new_ids, rendered, strict=True)],
        )

    def _new_document_row(self, write: DocumentWrite, chunk_digest: str | None) -> tuple[Any, ...]:
        """The values :data:`_INSERT_DOCUMENTS` inserts for a new document."""
        meta = self._doc_meta(write.path, write.content_hash, write.size_bytes, write.doc)
        note = write.note_vector
        return (
            *(meta[name] for name in _DOCUMENT_FIELDS),
            chunk_digest,
            None if note is None else _vector_bytes(note),
            None if note is None else write.note_key,
        )

    def _update_document(self, doc_id: int, write: DocumentWrite, chunk_digest: str | None) -> None:
        """Update a known document's row, setting ``chunk_digest`` unless it is None; a
        content change drops its chunks."""
        meta = self._doc_meta(write.path, write.content_hash, write.size_bytes, write.doc)
        # what the document's rows embedded stays findable until the run ends
        if write.vectors is not None:
            self._retire_chunks("WHERE document_id=?", (doc_id,))
            self._delete_document_rows(doc_id)
        if write.note_vector is not None or write.drop_note:
            self._retire_notes(doc_id)
        self.conn.execute(
            "UPDATE documents SET title=:title, topic=:topic, category=:category, "
            "depth=:depth, tags=:tags, date=:date, content_hash=:hash, "
            "size_bytes=:size, last_indexed=:now, chunk_digest=coalesce(:digest, chunk_digest) "
            "WHERE id=:id",
            {**meta, "digest": chunk_digest, "id": doc_id},
        )
        if write.note_vector is not None:
            self._set_note_vector(doc_id, write.note_vector, write.note_key)
        elif write.drop_note:
            self.notes_written.add(doc_id)
            self.conn.execute(
                "UPDATE documents SET note_embedding = NULL, note_key = NULL WHERE id=?", (doc_id,)
            )

    def _set_note_vector(
        self, doc_id: int, vector: npt.NDArray[np.float32], key: bytes | None = None
    ) -> None:
        self.notes_written.add(doc_id)
        self.conn.execute(
            "UPDATE documents SET note_embedding=?, note_key=? WHERE id=?",
            (_vector_bytes(vector), key, doc_id),
        )

    def _retire_chunks(self, where: str, params: tuple[Any, ...]) -> None:
        """Keep the keyed vectors of the chunks ``where`` selects (all: empty) in
        ``retired_vectors``, for the rest of the run to find (:mod:`pytest_groove.kb.reuse`)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO retired_vectors(key, vector) SELECT embed_key, embedding "
            f"FROM chunks {where or 'WHERE 1'} AND embed_key IS NOT NULL",
            params,
        )

    def _retire_notes(self, doc_id: int | None) -> None:
        """Likewise the keyed note vector of document ``doc_id`` (None: of every one)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO retired_vectors(key, vector) SELECT note_key, "
            "note_embedding FROM documents WHERE note_key IS NOT NULL "
            f"AND note_embedding IS NOT NULL {'' if doc_id is None else 'AND id = ?'}",
            () if doc_id is None else (doc_id,),
        )

    def drop_key_index(self) -> None:
        """Drop the chunk key index while every chunk is written anew (see
        :data:`~.schema.CHUNK_KEY_INDEX`); look-ups then find chunks by key no more."""
        with self.transaction():
            self.conn.execute(f"DROP INDEX IF EXISTS {CHUNK_KEY_INDEX}")

    def keep_key_index(self) -> None:
        """Make the chunk key index if it is missing (one sorted pass over the keys)."""
        if not self.has_key_index:
            with self.transaction():
                self.conn.execute(CREATE_CHUNK_KEY_INDEX)

    def clear_retired(self) -> None:
        """Forget the retired vectors (the run that may look them up is over)."""
        if not self.has_retired_vectors:
            return
        with self.transaction():
            self.conn.execute("DELETE FROM retired_vectors")

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
                self.notes_written.add(int(row[0]))  # its note vector goes with it
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
