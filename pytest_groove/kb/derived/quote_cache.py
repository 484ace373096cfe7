"""Per-document results of a text scan over the indexed chunks, kept in ``index.db``.

The golden-quote scan (:mod:`pytest_groove.evaluation.runs.findings`) asks which of a set of
needles each document quotes.  Its answer depends only on the needles and on each
document's chunk fields, yet reading every field of a large corpus in Python is most
of a no-op eval's cost.  So the answer is kept, per document, in a row of the index's
``quote_scans`` table, and reused:

- while the index is in the state it was scanned in (the same database, so the same
  index id, and the same write generation: any write to the chunks bumps it), the
  kept answer is returned without reading a chunk;
- after writes, only the documents whose chunks changed are read and scanned again:
  the index stores with each document a digest of its chunks' fields (the text the
  scan reads, :mod:`~pytest_groove.kb.source.corpus_digest`), so a document whose path and
  digest are unchanged holds exactly the text it held, and telling which changed
  reads one small row a document.

A row is keyed by a hash of the scan's version and its needles, so each golden set
keeps its own; the :data:`KEEP_SCANS` most recently used stay (``used`` counts up
across the table's writes).  The eval process writes it, not the indexer, so it holds
no index lock: once the read snapshot that answered the searches has ended, a
connection of its own writes the row in one short transaction, waiting for another
writer -- the indexer's group, another worker's scan -- at most :data:`WRITE_WAIT_MS`,
and checkpoints it, so that the database stays the one the indexer left checked.
SQLite commits the row whole or not at all, and checks it as it checks the database:
no temporary file, seal or format check of its own.  An index without the table (no
scan kept in it yet: the first write makes it) has kept nothing; a folder that cannot
be written, a database locked past the wait or a write that fails only means the next
run scans in full.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from pytest_groove.errors import GrooveError
from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.kb.source.records import ChunkText
from pytest_groove.kb.store.damage import needs_check, record_checked
from pytest_groove.kb.store.database import Store

__all__ = ["KEEP_SCANS", "QUOTE_SCANS_TABLE", "WRITE_WAIT_MS", "cached_scan", "scan_key"]

#: kept scans (one per golden set, the most recently used)
KEEP_SCANS = 8
#: how long the row's write waits for another writer before it gives up
WRITE_WAIT_MS = 1_000
#: the table (a new layout takes a new name: an old table is then never read)
QUOTE_SCANS_TABLE = "quote_scans"
_CREATE_TABLE = f"""
CREATE TABLE IF NOT EXISTS {QUOTE_SCANS_TABLE} (
    key TEXT PRIMARY KEY,
    used INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    -- JSON: path -> the sorted needle texts it quotes (a document quoting none is left out)
    quoted TEXT NOT NULL,
    -- JSON: every scanned document's path; its signature at the same place in signatures
    paths TEXT NOT NULL,
    signatures TEXT NOT NULL
)
"""
#: the layout of a row's values, hashed into its key (3: the layout of the earlier files)
_FORMAT = 4
#: hex characters of a document's digest kept as its signature (64 bits)
_SIGNATURE_CHARS = 16

#: needles -> the chunks to scan -> document path -> indices of the needles it quotes
Scan = Callable[[Iterable[ChunkText]], dict[str, set[int]]]


def scan_key(version: str, needles: Sequence[str]) -> str:
    """What a kept scan answers: the scan rule's version and its set of needles."""
    digest = hashlib.sha256(f"{_FORMAT}\x00{version}".encode())
    for text in sorted(set(needles)):
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


@dataclass(frozen=True)
class _Kept:
    generation: int
    #: path -> the sorted needle texts it quotes (a document quoting none is left out)
    quoted: dict[str, tuple[str, ...]]
    #: whether it is the most recently used row
    newest: bool


def cached_scan(
    store: Store, needles: Sequence[str], version: str, scan: Scan
) -> dict[str, set[int]]:
    """``scan`` over every indexed chunk, answered from the kept row where it can be.

    ``needles`` are the texts ``scan`` looks for (its indices refer to this list) and
    ``version`` names the scan rule: a changed rule must change it.  The generation
    and the chunks are read in one snapshot: the caller's (``store.read_snapshot()``,
    the one that answered the searches), else one of its own.
    """
    if not needles:
        return {}
    key = scan_key(version, needles)
    with store.read_snapshot():  # the caller's, else one of its own
        generation = store.generation
        kept = _read(store, key)
        if kept is not None and kept.generation == generation:
            if not kept.newest:
                _write(store, "UPDATE {table} SET used = {next_used} WHERE key = ?", (key,))
            return _as_indices(kept.quoted, needles)
        quoted, signatures = _rescan(store, key, kept, needles, scan)
    row = (
        key,
        generation,
        json.dumps(quoted, ensure_ascii=False, separators=(",", ":")),
        json.dumps(list(signatures), ensure_ascii=False, separators=(",", ":")),
        "".join(signature for _doc_id, signature in signatures.values()),
    )
    _write(
        store,
        "INSERT OR REPLACE INTO {table}(key, used, generation, quoted, paths, signatures) "
        "VALUES (?1, {next_used}, ?2, ?3, ?4, ?5)",
        row,
    )
    return _as_indices(quoted, needles)


def _rescan(
    store: Store, key: str, kept: _Kept | None, needles: Sequence[str], scan: Scan
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[int, str]]]:
    """(the quotes of every document, :func:`_signatures`): the kept quotes of the
    documents whose signature is the kept one, ``scan`` over the others."""
    signatures = _signatures(store)
    old = {} if kept is None else _kept_signatures(store, key)
    quoted: dict[str, tuple[str, ...]] = {}
    stale: dict[str, int] = {}
    for doc_path, (doc_id, signature) in signatures.items():
        if old.get(doc_path) == signature:
            if kept is not None and doc_path in kept.quoted:
                quoted[doc_path] = kept.quoted[doc_path]
        else:
            stale[doc_path] = doc_id
    found = scan(_chunks_of(store, stale, everything=len(stale) == len(signatures)))
    for doc_path in stale:
        texts = tuple(sorted({needles[i] for i in found.get(doc_path, ())}))
        if texts:
            quoted[doc_path] = texts
    return quoted, signatures


def _as_indices(quoted: dict[str, tuple[str, ...]], needles: Sequence[str]) -> dict[str, set[int]]:
    positions: dict[str, int] = {}
    for position, text in enumerate(needles):
        positions.setdefault(text, position)
    return {doc_path: {positions[text] for text in texts} for doc_path, texts in quoted.items()}


def _signatures(store: Store) -> dict[str, tuple[int, str]]:
    """Every document with chunks: path -> (document id, its signature: the first
    :data:`_SIGNATURE_CHARS` hex characters of the digest of its chunks' fields, the
    text the scan reads): one small row a document, no pass over the chunks."""
    width = _SIGNATURE_CHARS
    return {
        doc_path: (doc_id, digest[:width].ljust(width, "-"))
        for doc_path, doc_id, digest in store.document_chunk_digests()
    }


def _chunks_of(store: Store, documents: dict[str, int], *, everything: bool) -> Iterator[ChunkText]:
    """The chunks of ``documents`` (all of them with ``everything``: one pass)."""
    if everything:
        yield from store.iter_chunk_texts()
        return
    for doc_path, doc_id in sorted(documents.items()):
        for index, heading, context, content in store.conn.execute(
            "SELECT chunk_index, heading, context_text, content FROM chunks "
            "WHERE document_id = ? ORDER BY chunk_index",
            (doc_id,),
        ):
            yield ChunkText(doc_path, int(index), heading, context, str(content))


def _read(store: Store, key: str) -> _Kept | None:
    """The kept scan of ``key`` (its generation and quotes, not its signatures); None
    when there is none, or no table yet."""
    try:
        row = store.conn.execute(
            f"SELECT generation, quoted, used >= (SELECT max(used) FROM {QUOTE_SCANS_TABLE}) "
            f"FROM {QUOTE_SCANS_TABLE} WHERE key = ?",
            (key,),
        ).fetchone()
    except apsw.SQLError:
        return None  # no scan kept in this index yet
    if row is None:
        return None
    generation, quoted, newest = row
    data: Any = json.loads(quoted)
    return _Kept(int(generation), {path: tuple(texts) for path, texts in data.items()}, newest == 1)


def _kept_signatures(store: Store, key: str) -> dict[str, str]:
    """Each document of the kept scan of ``key`` and its signature then."""
    row = store.conn.execute(
        f"SELECT paths, signatures FROM {QUOTE_SCANS_TABLE} WHERE key = ?", (key,)
    ).fetchone()
    if row is None:
        return {}
    paths, signatures = json.loads(row[0]), str(row[1])
    width = _SIGNATURE_CHARS
    return {
        doc_path: signatures[at * width : (at + 1) * width] for at, doc_path in enumerate(paths)
    }


def _write(store: Store, statement: str, values: tuple[object, ...]) -> None:
    """Run ``statement`` on the table, once the read snapshot in progress has ended."""
    db_path = store.path
    store.after_snapshot(lambda: _write_now(db_path, statement, values))


def _write_now(db_path: Path, statement: str, values: tuple[object, ...]) -> None:
    """Run ``statement`` on the table in a write transaction of a connection of its own,
    and drop the rows past the :data:`KEEP_SCANS` most recently used; nothing when the
    index cannot be written now (read-only, locked past :data:`WRITE_WAIT_MS`, failing).

    A database the indexer left checked (:mod:`~pytest_groove.kb.store.damage`) stays
    so: the write is checkpointed into it at once and its identity sealed again, as
    only SQLite wrote to it since.  Where the checkpoint cannot copy every page (another
    process reads an older state), the next indexer checks the database once."""
    sql = statement.format(
        table=QUOTE_SCANS_TABLE,
        next_used=f"(SELECT coalesce(max(used), 0) + 1 FROM {QUOTE_SCANS_TABLE})",
    )
    checked = not needs_check(db_path)
    try:
        writer = Store.open(db_path.parent, create=False)
    except ResourceLimit:
        raise  # out of open files or memory: the run cannot go on either
    except (GrooveError, apsw.Error, OSError):
        return
    try:
        conn = writer.conn
        conn.set_busy_timeout(WRITE_WAIT_MS)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_CREATE_TABLE)
            conn.execute(sql, values)
            conn.execute(
                f"DELETE FROM {QUOTE_SCANS_TABLE} WHERE key NOT IN "
                f"(SELECT key FROM {QUOTE_SCANS_TABLE} ORDER BY used DESC LIMIT ?)",
                (KEEP_SCANS,),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if checked:
            outcome = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            checked = outcome is not None and outcome[0] == 0 and outcome[1] == outcome[2]
    except apsw.Error:
        return  # an optimisation only: the next run scans in full
    finally:
        writer.close()
    if checked:
        record_checked(db_path)
