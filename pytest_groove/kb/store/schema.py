"""The index database's layout, and opening it: the base every part of the store shares.

:class:`StoreConnection` opens ``index.db`` (creating, upgrading or refusing it by its
schema and chunker versions), and holds the connection, the transactions, the read
snapshot and the ``index_meta`` rows.  The writer, reader and full-text parts
(:mod:`.store_writer`, :mod:`.store_reader`, :mod:`.store_fulltext`) build on it, and
:class:`pytest_groove.kb.store.database.Store` joins them.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

import apsw

from pytest_groove.errors import (
    GENERIC_INDEX_COMMAND,
    GrooveError,
    IndexMissing,
    IndexUnwritable,
    clip_path,
    flag,
)
from pytest_groove.kb.source.corpus_digest import ChunkFields, document_digest
from pytest_groove.kb.source.markdown import CHUNKER_VERSION
from pytest_groove.kb.store.faults import apsw_fault, index_dir_faults, index_faults
from pytest_groove.kb.store.files import check_unchanged, identity_of, refuse_planted
from pytest_groove.kb.store.tie_order import TieOrder

#: bump when the table layout changes; an index with another version is rebuilt
#: (2: the ``fts_terms`` table; 3: the full-text tables' ``hashsize``; 4: each
#: document's note vector, ``documents.note_embedding``; 5: ``fts_terms`` filled only
#: while the index keeps it, see :data:`TERM_TABLE_META`; 6: each document's digest of
#: its chunks, ``documents.chunk_digest``, see :mod:`pytest_groove.kb.source.corpus_digest`;
#: 7: the key of what each vector embeds, ``chunks.embed_key`` and ``documents.note_key``,
#: and the ``retired_vectors`` table, see :mod:`pytest_groove.kb.reuse`)
SCHEMA_VERSION = 7
#: a version-4 index is a version-5 index that keeps its word table: it is upgraded in
#: place (two meta rows) rather than rebuilt, which would re-embed every chunk
_TERM_TABLE_ALWAYS_SCHEMA = 4
#: a version-5 index is a version-6 index without the document digests: they are
#: added in place from the stored chunks (one read of the chunk text, no embedding)
_NO_DOCUMENT_DIGEST_SCHEMA = 5
#: a version-6 index is a version-7 index whose vectors carry no key: the columns are
#: added in place (empty: those vectors are found again once their notes are rewritten)
_NO_EMBED_KEY_SCHEMA = 6
#: the versions upgraded in place to :data:`SCHEMA_VERSION`
_UPGRADED_SCHEMAS = (_TERM_TABLE_ALWAYS_SCHEMA, _NO_DOCUMENT_DIGEST_SCHEMA, _NO_EMBED_KEY_SCHEMA)
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
#: the database and the files SQLite keeps beside it: each is checked before SQLite
#: opens it by name (:mod:`pytest_groove.kb.store.files`)
DB_FILE_NAMES = tuple(f"{DB_FILE_NAME}{suffix}" for suffix in ("", "-wal", "-shm", "-journal"))
#: SQLite refuses a database reached through a symbolic link (SQLite >= 3.31)
_NOFOLLOW = getattr(apsw, "SQLITE_OPEN_NOFOLLOW", 0)
BUSY_TIMEOUT_MS = 30_000


def sqlite_name(db_path: Path) -> str:
    """The file name to give SQLite for ``db_path``.

    SQLite takes a name as UTF-8 and hands those bytes to the operating system, while
    Python writes a name in the locale's encoding: under a Latin-1 locale the folder
    ``Notizen-ü`` (UTF-8 bytes, read by Python as ``Notizen-Ã¼``) would reach SQLite
    as other bytes, a folder that does not exist.  So SQLite gets the path's own bytes
    read as UTF-8 (the same text under a UTF-8 locale); a path whose bytes are not
    UTF-8 cannot be named to SQLite at all.
    """
    try:
        return os.fsencode(db_path).decode("utf-8")
    except UnicodeError:
        raise GrooveError(
            f"the index folder {clip_path(db_path.parent)} has a path that is not UTF-8, "
            f"which SQLite cannot open; pass {flag('index-dir')} a folder whose path is UTF-8"
        ) from None


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
    note_embedding BLOB,
    -- kb.corpus_digest.document_digest of its chunks, written with them
    chunk_digest TEXT,
    -- kb.reuse.embed_key of the text note_embedding embeds (NULL: not known)
    note_key BLOB
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
    embedding BLOB NOT NULL,
    -- kb.reuse.embed_key of the text embedding embeds (NULL: not known)
    embed_key BLOB
);
CREATE INDEX IF NOT EXISTS idx_chunks_doc_order ON chunks(document_id, chunk_index);
CREATE INDEX IF NOT EXISTS idx_documents_digest ON documents(path, chunk_digest);
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

#: the index that finds a chunk by its key.  Keys are digests, so each new chunk lands
#: on a random page of it: an indexer that writes every chunk (a new index, a rebuild)
#: drops it and makes it again at the end, in one sorted pass (``StoreWriter.keep_key_index``)
CHUNK_KEY_INDEX = "idx_chunks_embed_key"
CREATE_CHUNK_KEY_INDEX = (
    f"CREATE INDEX IF NOT EXISTS {CHUNK_KEY_INDEX} ON chunks(embed_key) WHERE embed_key IS NOT NULL"
)
#: what finds a vector by its key (:mod:`pytest_groove.kb.reuse`): the key columns'
#: indexes, and the vectors a run's rewrites and wipes removed, kept until it ends
_EMBED_KEY_TABLES = f"""
{CREATE_CHUNK_KEY_INDEX};
CREATE INDEX IF NOT EXISTS idx_documents_note_key ON documents(note_key)
    WHERE note_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS retired_vectors (
    key BLOB PRIMARY KEY, vector BLOB NOT NULL
) WITHOUT ROWID;
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


#: what the corpus snapshot reads, apart from the document rows (which hold the note
#: vectors: reading one column of them reads every page of the table)
_DOCUMENT_DIGEST_INDEX = (
    "CREATE INDEX IF NOT EXISTS idx_documents_digest ON documents(path, chunk_digest)"
)


def add_document_digests(conn: apsw.Connection) -> None:
    """Add ``documents.chunk_digest`` to an index of schema 4 or 5 and fill it from the
    stored chunks (inside the caller's transaction)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(documents)")}
    if "chunk_digest" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN chunk_digest TEXT")
    fill_document_digests(conn)
    conn.execute(_DOCUMENT_DIGEST_INDEX)


def add_embed_keys(conn: apsw.Connection) -> None:
    """Add the key columns and the retired vectors of schema 7 to an older index (inside
    the caller's transaction); the vectors stored before carry no key."""
    for table, column in (("chunks", "embed_key"), ("documents", "note_key")):
        columns = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} BLOB")
    conn.execute(_EMBED_KEY_TABLES)


def fill_document_digests(conn: apsw.Connection, document_ids: list[int] | None = None) -> None:
    """Write each document's :func:`document_digest` from its stored chunks (all
    documents with chunks, or only ``document_ids``)."""
    sql = (
        "SELECT document_id, chunk_index, heading, content, context_text FROM chunks "
        "{where} ORDER BY document_id, chunk_index"
    )
    if document_ids is None:
        rows = conn.execute(sql.format(where=""))
    else:
        marks = ",".join("?" * len(document_ids))
        rows = conn.execute(sql.format(where=f"WHERE document_id IN ({marks})"), document_ids)
    digests = [(document_digest(fields), doc_id) for doc_id, fields in _by_document(rows)]
    conn.executemany("UPDATE documents SET chunk_digest=? WHERE id=?", digests)


def _by_document(rows: Any) -> Iterator[tuple[int, list[ChunkFields]]]:
    """(document id, its chunks' fields) of rows ordered by document and chunk."""
    current: int | None = None
    fields: list[ChunkFields] = []
    for doc_id, index, heading, content, context in rows:
        if doc_id != current:
            if current is not None:
                yield current, fields
            current, fields = int(doc_id), []
        fields.append((int(index), heading, str(content), context))
    if current is not None:
        yield current, fields


def _holds_no_index(db_path: Path) -> GrooveError:
    """An ``index.db`` without our tables (SQLite reads an empty or cut-short file so)."""
    try:
        size = os.lstat(db_path).st_size
    except OSError:
        size = 0
    return GrooveError(
        f"the index file {clip_path(db_path)} holds no index (an empty or cut-short file of "
        f"{size:,} bytes); build it with `{GENERIC_INDEX_COMMAND}`"
    )


def _wal_is_empty(db_path: Path) -> bool:
    """No write of the database waits in its WAL (absent, or checkpointed to nothing)."""
    try:
        return os.lstat(f"{db_path}-wal").st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _configure(store: StoreConnection, before: tuple[int, int] | None, *, create: bool) -> None:
    """Set up the connection SQLite just opened by name, once it is known to be the file
    that was checked (``before``); a reader's file that holds no index is refused."""
    conn, db_path = store.conn, store.path
    # SQLite has the file open now (by name): still the one that was checked?
    check_unchanged(db_path, before)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if not create and store._schema_version() is None:
        # before the pragma below, which would write a header into an empty file
        conn.close()
        raise _holds_no_index(db_path)
    conn.execute("PRAGMA journal_mode=WAL")
    # derived data (see the module docstring): no fsync per commit
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")


class StoreConnection:
    """An open index database: the connection, its transactions and its metadata."""

    def __init__(self, conn: apsw.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        #: answers kept for the length of one read snapshot (None outside one): the
        #: committed state cannot change under it, so a second asker reads nothing
        self.snapshot_memo: dict[str, Any] | None = None
        #: (generation, the tie order of that state): see StoreReader.tie_order
        self.tie_order_kept: tuple[int, TieOrder] | None = None
        #: (generation its first write began at, generation its last write left) while
        #: every write since the first was this connection's (None: none yet, or
        #: another writer's came in between), and the documents whose note vector it
        #: set or removed in them
        self._own_writes: tuple[int, int] | None = None
        self._writes_interleaved = False
        self.notes_written: set[int] = set()
        #: what waits for the read snapshot in progress to end (:meth:`after_snapshot`)
        self._after_snapshot: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, directory: Path, *, create: bool) -> Self:
        """Open ``<directory>/index.db``; with ``create`` make it if missing."""
        db_path = directory / DB_FILE_NAME
        # nothing planted at the database's names is ever opened (the indexer cleared
        # what it may before calling this; whatever is left, or appeared since, is refused)
        with index_dir_faults(directory):
            refuse_planted(directory, DB_FILE_NAMES)
        if not create and not db_path.is_file():
            raise IndexMissing(db_path)  # the door names the KB and the command
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not os.access(directory, os.W_OK):
            return cls._open_immutable(db_path)
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0) | _NOFOLLOW
        conn: apsw.Connection | None = None
        before = identity_of(db_path)
        try:
            conn = apsw.Connection(sqlite_name(db_path), flags=flags)
            store = cls(conn, db_path)
            _configure(store, before, create=create)
            if not store._settle_schema(create=create):
                # The index is derived data: an indexer (holding the index lock) simply
                # starts over rather than guessing how to migrate an unknown layout.
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db_path}{suffix}").unlink(missing_ok=True)
                return cls.open(directory, create=True)
        except apsw.Error as exc:
            fault = apsw_fault(exc, db_path, 0 if conn is None else conn.system_errno)
            if conn is not None:
                conn.close()
            if os.path.lexists(db_path):
                # SQLite may fail on what was swapped in (a pipe): name that, not the disk
                check_unchanged(db_path, before)
            if not create and isinstance(fault, IndexUnwritable) and _wal_is_empty(db_path):
                # a reader that cannot write beside the database (a full disk: SQLite
                # could not make the WAL's shared-memory file) reads the file as it is,
                # which holds every committed write once the WAL is checkpointed away
                return cls._open_immutable(db_path)
            raise fault from None
        except GrooveError:
            if conn is not None:
                conn.close()  # closing twice is harmless
            raise
        except UnicodeDecodeError:
            if conn is not None:
                conn.close()
            with index_faults(db_path):
                raise
        return store

    def _settle_schema(self, *, create: bool) -> bool:
        """Lay out a new database, or upgrade one of a schema this version upgrades in
        place; False (the connection closed) when an indexer (``create``) is to start
        over on a database of another version, which a reader refuses."""
        version = self._schema_version()
        if version is None:
            with self.transaction():
                self.conn.execute(_SCHEMA)
                self.conn.execute(_EMBED_KEY_TABLES)
                self.conn.execute(_FTS_SETTINGS)
                self.set_meta("schema_version", str(SCHEMA_VERSION))
                self.set_meta("chunker_version", str(CHUNKER_VERSION))
                self.set_meta("generation", "0")
                self.set_meta(TERM_TABLE_META, "off")
                self.set_meta(NOTE_VECTORS_META, "off")
                # names this database's vector caches: a re-created database restarts
                # its generation count and must never pick up an old cache file
                self.set_meta("index_id", uuid.uuid4().hex)
        elif self._chunker_version() == CHUNKER_VERSION and version in _UPGRADED_SCHEMAS:
            with self.transaction():
                if version == _TERM_TABLE_ALWAYS_SCHEMA:
                    self.set_meta(TERM_TABLE_META, "kept")
                if version != _NO_EMBED_KEY_SCHEMA:
                    add_document_digests(self.conn)
                add_embed_keys(self.conn)
                self.set_meta("schema_version", str(SCHEMA_VERSION))
            self.forget_own_writes()  # an upgrade's writes are not listed one by one
        elif (version, chunker := self._chunker_version()) != (SCHEMA_VERSION, CHUNKER_VERSION):
            self.conn.close()
            if not create:
                raise GrooveError(
                    f"index at {clip_path(self.path)} was built by another pytest-groove "
                    f"version (schema {version}, chunker {chunker}; this one uses "
                    f"{SCHEMA_VERSION}, {CHUNKER_VERSION}): rebuild it with "
                    f"`{GENERIC_INDEX_COMMAND}`"
                )
            return False
        return True

    @classmethod
    def _open_immutable(cls, db_path: Path) -> Self:
        """A read-only open of an index in a folder this process cannot write.

        SQLite needs to create the WAL's shared-memory file beside a WAL database even
        to read it; ``immutable=1`` skips that (and all locking), which is right for a
        read-only checkout or mount where nobody changes the file meanwhile.
        """
        uri = f"file:{quote(sqlite_name(db_path))}?immutable=1"
        conn: apsw.Connection | None = None
        try:
            conn = apsw.Connection(
                uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI | _NOFOLLOW
            )
            store = cls(conn, db_path)
            version = store._schema_version()
            chunker = store._chunker_version()
        except apsw.Error as exc:
            if conn is not None:
                conn.close()
            raise apsw_fault(exc, db_path) from None
        if version is None:
            conn.close()
            raise _holds_no_index(db_path)
        if chunker != CHUNKER_VERSION or version not in (SCHEMA_VERSION, *_UPGRADED_SCHEMAS):
            conn.close()
            raise GrooveError(
                f"index at {clip_path(db_path)} was built by another pytest-groove version (schema "
                f"{version}, chunker {chunker}; this one uses {SCHEMA_VERSION}, "
                f"{CHUNKER_VERSION}), and its folder is not writable: rebuild it elsewhere with "
                f"`{GENERIC_INDEX_COMMAND} --index-dir <writable folder>`"
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
            began = self._generation_if_any()
            if began is None or (self._own_writes is not None and self._own_writes[1] != began):
                self._writes_interleaved = True  # not known, or another connection wrote
            yield
            left = self._generation_if_any()
            if began is None or left is None:
                self._writes_interleaved = True
            else:
                first = began if self._own_writes is None else self._own_writes[0]
                self._own_writes = (first, left)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def forget_own_writes(self) -> None:
        """From here on, what this connection wrote is not known document by document
        (a wipe, an upgrade): :meth:`notes_written_since` answers None."""
        self._writes_interleaved = True

    def _generation_if_any(self) -> int | None:
        """The generation, or None before the metadata table exists (a new index)."""
        try:
            return self.generation
        except (apsw.SQLError, ValueError):
            return None

    def notes_written_since(self, generation: int) -> set[int] | None:
        """The documents whose note vector this connection set or removed (their own
        or by deleting the document) since the index was at ``generation``, when every
        write since was this connection's and the index is still where its last write
        left it; None when that is not known (the caller compares every note vector
        instead).  A superset at worst: a rolled-back write stays listed."""
        if self._own_writes is None or self._writes_interleaved:
            return None
        first, last = self._own_writes
        if first != generation or last != self.generation:
            return None
        return set(self.notes_written)

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read inside sees the same committed state (WAL snapshot)."""
        if not self.conn.getautocommit():
            yield  # already inside a transaction: that one is the snapshot
            return
        self.conn.execute("BEGIN")
        try:
            # a deferred transaction takes its snapshot at the first read
            self.conn.execute("SELECT count(*) FROM index_meta").fetchone()
            self.snapshot_memo = {}
            yield
        except BaseException:
            # the block's error is the one to report: SQLite repeats a damaged page's
            # error when the transaction ends, and that must not replace it
            self.snapshot_memo = None
            self._after_snapshot = []
            self._end_quietly()
            raise
        self.snapshot_memo = None
        try:
            self.conn.execute("COMMIT")
        except apsw.Error:
            self._after_snapshot = []
            self._end_quietly()
            raise
        pending, self._after_snapshot = self._after_snapshot, []
        for action in pending:
            action()

    def after_snapshot(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the read snapshot in progress has ended (at once outside
        one): a write that must not run inside it, such as the kept quote scan's, whose
        checkpoint the snapshot would hold back."""
        if self.conn.getautocommit():
            action()
        else:
            self._after_snapshot.append(action)

    def _end_quietly(self) -> None:
        """End the open read transaction, whatever SQLite says meanwhile."""
        for statement in ("COMMIT", "ROLLBACK"):
            if self.conn.getautocommit():
                return
            with contextlib.suppress(apsw.Error):
                self.conn.execute(statement)

    # ------------------------------------------------------------------ metadata

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM index_meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def get_meta_blob(self, key: str) -> bytes | None:
        """``key``'s value if it is stored as bytes (None: absent, or text)."""
        row = self.conn.execute("SELECT value FROM index_meta WHERE key=?", (key,)).fetchone()
        return row[0] if row is not None and isinstance(row[0], bytes) else None

    def set_meta(self, key: str, value: str | bytes) -> None:
        """Set ``key``; bytes are stored as a BLOB (read with :meth:`get_meta_blob`)."""
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

    @property
    def has_key_index(self) -> bool:
        """Whether chunks are found by their key now (:data:`CHUNK_KEY_INDEX`)."""
        sql = "SELECT 1 FROM sqlite_master WHERE type='index' AND name=?"
        return self.conn.execute(sql, (CHUNK_KEY_INDEX,)).fetchone() is not None

    @property
    def has_retired_vectors(self) -> bool:
        """Whether ``retired_vectors`` holds any (a rebuild's wipe, or a killed run's)."""
        return self.conn.execute("SELECT 1 FROM retired_vectors LIMIT 1").fetchone() is not None

    @property
    def keeps_note_vectors(self) -> bool:
        """Whether every document has its note vector and the indexer embeds new ones."""
        return self.get_meta(NOTE_VECTORS_META) != "off"

    def chunk_sequence(self) -> int:
        """The highest chunk id ever given: AUTOINCREMENT gives the chunks written next
        the ids after it, in the order they are written."""
        return self._scalar("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name='chunks'")

    def _scalar(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        row = self.conn.execute(sql, params).fetchone()
        return 0 if row is None else int(row[0])
