"""Reading an index: documents, chunks, vectors and the corpus snapshot.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_groove.kb.source.corpus_digest import DIGEST_VERSION, corpus_digest, document_digest
from pytest_groove.kb.source.records import ChunkText, CorpusSnapshot
from pytest_groove.kb.store.schema import StoreConnection
from pytest_groove.text.scripts import OPENING_CHARS, chunk_opening

#: keys looked up per statement (well below SQLite's limit on bound values)
_KEYS_PER_QUERY = 500


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


class StoreReader(StoreConnection):
    """The read side of an index database (full-text search aside)."""

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

    def vectors_by_key(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vector (its bytes) of each of ``keys`` that a chunk, a note vector
        or a retired vector carries (:mod:`pytest_groove.kb.reuse`); others are left out."""
        tables = [
            ("key, vector FROM retired_vectors", "key"),
            ("note_key, note_embedding FROM documents", "note_embedding IS NOT NULL AND note_key"),
        ]
        if self.has_key_index:  # without it (a build writing every chunk) this would scan
            tables.append(("embed_key, embedding FROM chunks", "embed_key"))
        found: dict[bytes, bytes] = {}
        wanted = list(dict.fromkeys(keys))
        for start in range(0, len(wanted), _KEYS_PER_QUERY):
            batch = wanted[start : start + _KEYS_PER_QUERY]
            marks = ",".join("?" * len(batch))
            for columns, where in tables:
                for key, blob in self.conn.execute(
                    f"SELECT {columns} WHERE {where} IN ({marks})", batch
                ):
                    found.setdefault(bytes(key), bytes(blob))
        return found

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
        return self.vectors_from(0)

    def vectors_from(self, from_id: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every chunk id from ``from_id`` on with its stored embedding, in id order."""
        ids: list[int] = []
        data = bytearray()  # the rows' bytes end to end: one copy of them, not three
        sql = "SELECT id, embedding FROM chunks WHERE id >= ? ORDER BY id"
        for cid, blob in self.conn.execute(sql, (from_id,)):
            ids.append(cid)
            data += blob
        dim = int(self.get_meta("embedding_dim") or "0")
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        matrix = np.frombuffer(data, dtype=np.float32).reshape(len(ids), -1)
        return np.fromiter(ids, dtype=np.int64, count=len(ids)), matrix

    def note_vectors(self) -> dict[int, npt.NDArray[np.float32]]:
        """Every document's note vector, by document id (documents without one are left out)."""
        return {
            int(doc_id): np.frombuffer(bytes(blob), dtype=np.float32).copy()
            for doc_id, blob in self.conn.execute(
                "SELECT id, note_embedding FROM documents WHERE note_embedding IS NOT NULL"
            )
        }

    def note_matrix(
        self, documents: Sequence[int] | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every note vector (or those of ``documents`` that have one) as one matrix,
        with its document ids (ascending)."""
        ids: list[int] = []
        data = bytearray()  # the rows' bytes end to end: one copy of them, not three
        sql = "SELECT id, note_embedding FROM documents WHERE note_embedding IS NOT NULL"
        rows: Iterator[tuple[Any, ...]]
        if documents is None:
            rows = self.conn.execute(sql + " ORDER BY id")
        else:  # ascending batches of ascending ids: the rows come in id order
            wanted = sorted({int(d) for d in documents})
            rows = self._rows_where_in(sql + " AND id IN ({}) ORDER BY id", wanted)
        for doc_id, blob in rows:
            ids.append(int(doc_id))
            data += blob
        dim = int(self.get_meta("embedding_dim") or "0")
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        matrix = np.frombuffer(data, dtype=np.float32).reshape(len(ids), -1)
        return np.asarray(ids, dtype=np.int64), matrix

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

    def chunk_documents(self, from_id: int = 0) -> dict[int, int]:
        """Every chunk's document id, by chunk id (of the chunks from ``from_id`` on)."""
        ids, documents = self.chunk_document_ids(from_id)
        return dict(zip(ids.tolist(), documents.tolist(), strict=True))

    def chunk_document_ids(
        self, from_id: int = 0
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every chunk id from ``from_id`` on (ascending) and its document id, read from
        the index that holds both as two strings (not a Python step per row)."""
        row = self.conn.execute(
            "SELECT group_concat(id), group_concat(document_id) "
            "FROM chunks INDEXED BY idx_chunks_doc_order WHERE id >= ?",
            (from_id,),
        ).fetchone()
        if row is None or row[0] is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        ids, docs = concat_integers(str(row[0])), concat_integers(str(row[1]))
        order = np.argsort(ids, kind="stable")
        return ids[order], docs[order]

    def chunk_ids(self) -> npt.NDArray[np.int64]:
        """Every chunk id, ascending (read from the primary key, no row is read); read
        once per read snapshot (the vector caches and the word postings both ask)."""
        memo = self.snapshot_memo
        if memo is not None and "chunk_ids" in memo:
            kept: npt.NDArray[np.int64] = memo["chunk_ids"]
            return kept.copy()
        # read from the (document, chunk order) index, which holds every id: the
        # table's own pages hold the text and embeddings, the whole index's size;
        # one string of every id, since a Python step per row costs more than reading
        row = self.conn.execute(
            "SELECT group_concat(id) FROM chunks INDEXED BY idx_chunks_doc_order"
        ).fetchone()
        if row is None or row[0] is None:
            ids = np.zeros(0, dtype=np.int64)
        else:
            ids = concat_integers(str(row[0]))
            ids.sort()
        if memo is not None:
            memo["chunk_ids"] = ids.copy()
        return ids

    def chunk_openings(self, *, ascii_too: bool = True, from_id: int = 0) -> dict[int, str]:
        """:func:`~pytest_groove.text.scripts.chunk_opening` of every chunk from id
        ``from_id`` on, by id; without ``ascii_too``, only of those whose heading or
        opening is not all ASCII (an ASCII opening is in the "other" script group:
        SQLite leaves those rows out, where a character count differs from the byte
        count)."""
        where = (
            ""
            if ascii_too
            else " AND (length(CAST(coalesce(heading, '') AS BLOB))"
            " != length(coalesce(heading, ''))"
            " OR length(CAST(substr(content, 1, ?1) AS BLOB)) != length(substr(content, 1, ?1)))"
        )
        # read as bytes: a damaged row must not stop the index from opening (the
        # search that reads it reports the corruption); only the script counts here
        return {
            int(cid): chunk_opening(
                bytes(heading).decode("utf-8", "replace") if heading is not None else None,
                bytes(content).decode("utf-8", "replace"),
            )
            for cid, heading, content in self.conn.execute(
                "SELECT id, CAST(heading AS BLOB), CAST(substr(content, 1, ?1) AS BLOB) FROM chunks"
                " WHERE id >= ?2" + where,
                (OPENING_CHARS, from_id),
            )
        }

    def vectors_for(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        return {
            int(cid): np.frombuffer(bytes(blob), dtype=np.float32)
            for cid, blob in self._rows_where_in(
                "SELECT id, embedding FROM chunks WHERE id IN ({})", ids
            )
        }

    def documents_of(self, ids: Sequence[int]) -> dict[int, int]:
        """The document id of each chunk of ``ids`` that exists (no text is read)."""
        return {
            int(cid): int(document_id)
            for cid, document_id in self._rows_where_in(
                "SELECT id, document_id FROM chunks WHERE id IN ({})", ids
            )
        }

    def chunk_fields(
        self, ids: Sequence[int]
    ) -> dict[int, tuple[str | None, str | None, str | None]]:
        """(heading, context, content) of each chunk of ``ids``, as ``fts_chunks`` holds
        them."""
        return {
            int(cid): (heading, context, content)
            for cid, heading, context, content in self._rows_where_in(
                "SELECT id, heading, context_text, content FROM chunks WHERE id IN ({})", ids
            )
        }

    def chunk_rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        return {
            int(row[0]): ChunkRow(*row)
            for row in self._rows_where_in(
                "SELECT c.id, c.document_id, d.path, d.title, c.chunk_index, c.heading, c.level, "
                "c.content, c.context_text, c.token_count FROM chunks c "
                "JOIN documents d ON d.id = c.document_id WHERE c.id IN ({})",
                ids,
            )
        }

    def _rows_where_in(self, sql: str, values: Sequence[int]) -> Iterator[tuple[Any, ...]]:
        """The rows of ``sql`` (its ``IN ({})`` filled) for ``values``, 500 at a time:
        SQLite caps the parameters of one statement."""
        for start in range(0, len(values), 500):
            batch = list(values[start : start + 500])
            yield from self.conn.execute(sql.format(",".join("?" * len(batch))), batch)

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

    def document_ids(self) -> list[tuple[str, int]]:
        """(path, document id) of every indexed document."""
        return [(str(p), int(i)) for p, i in self.conn.execute("SELECT path, id FROM documents")]

    def document_headings(self, doc_id: int) -> set[str | None]:
        """The headings one document's chunks carry (None: a chunk without one, or a
        document without chunks)."""
        found: set[str | None] = {
            None if heading is None else str(heading)
            for (heading,) in self.conn.execute(
                "SELECT heading FROM chunks WHERE document_id = ?", (doc_id,)
            )
        }
        return found or {None}

    def iter_chunk_texts(self) -> Iterator[ChunkText]:
        for path, index, heading, context, content in self.conn.execute(
            "SELECT d.path, c.chunk_index, c.heading, c.context_text, c.content FROM chunks c "
            "JOIN documents d ON d.id = c.document_id ORDER BY d.path, c.chunk_index"
        ):
            yield ChunkText(str(path), int(index), heading, context, str(content))

    def corpus_snapshot(self) -> CorpusSnapshot:
        """Counts and a digest over every indexed chunk (see docs/eval.md).

        The digest is made from each document's stored digest of its chunks, one
        small row per document; a document without one (an index of schema 5 opened
        read-only) has it worked out from its chunks.
        """
        digest = corpus_digest(
            (path, digest) for path, _doc_id, digest in self.document_chunk_digests()
        )
        return CorpusSnapshot(
            documents=self._scalar("SELECT count(*) FROM documents"),
            chunks=self._scalar("SELECT count(*) FROM chunks"),
            digest=digest,
            digest_version=DIGEST_VERSION,
        )

    def document_chunk_digests(self) -> list[tuple[str, int, str]]:
        """(path, document id, document digest) of every document with chunks.

        The digest is the one stored with the document's chunks (one small row a
        document); a document without one (an index of schema 5 opened read-only) has
        it worked out from its chunks.  Read once per read snapshot (the corpus
        snapshot and the quote scan both ask).
        """
        memo = self.snapshot_memo
        if memo is not None and "document_chunk_digests" in memo:
            return list(memo["document_chunk_digests"])
        rows: list[Any] = self.conn.execute(
            f"SELECT d.path, d.id, {self._document_digest_column()} FROM documents d"
        ).fetchall()
        # a digest is written with a document's chunks: one without is a document
        # without chunks (left out) or of an index from before the column
        worked_out = self._document_digests_of([i for _path, i, digest in rows if digest is None])
        out = [
            (path, doc_id, worked_out[doc_id] if digest is None else digest)
            for path, doc_id, digest in rows
            if digest is not None or doc_id in worked_out
        ]
        if memo is not None:
            memo["document_chunk_digests"] = out
        return list(out)

    def _document_digest_column(self) -> str:
        """``d.chunk_digest``, or NULL in an index from before that column."""
        columns = {str(row[1]) for row in self.conn.execute("PRAGMA table_info(documents)")}
        return "d.chunk_digest" if "chunk_digest" in columns else "NULL"

    def _document_digests_of(self, documents: Sequence[int]) -> dict[int, str]:
        """:func:`document_digest` of these documents' stored chunks, by document id
        (a document without chunks is left out)."""
        out: dict[int, str] = {}
        for doc_id in documents:
            fields = [
                (int(index), heading, str(content), context)
                for index, heading, content, context in self.conn.execute(
                    "SELECT chunk_index, heading, content, context_text FROM chunks "
                    "WHERE document_id = ? ORDER BY chunk_index",
                    (doc_id,),
                )
            ]
            if fields:
                out[doc_id] = document_digest(fields)
        return out


def concat_integers(text: str) -> npt.NDArray[np.int64]:
    """The comma-separated integers of a ``group_concat`` (numpy's text parser: a
    seventh of the time of one Python string per id); split in Python if it reads
    anything else."""
    parse = getattr(np, "fromstring", None)  # text mode; a numpy without it splits
    values = None
    if parse is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a partial read warns: never take one
            try:
                values = parse(text, dtype=np.int64, sep=",")
            except (ValueError, DeprecationWarning):
                values = None
    if values is None or len(values) != text.count(",") + 1:
        values = np.asarray(text.split(","), dtype=np.int64)
    return values
