"""Writing documents: many to a transaction, the same rows as one at a time.

The writer inserts a transaction's new documents together and its chunk rows many to
a statement (not a statement, or a step, per row: see ``StoreWriter._insert_rows``).
Whatever the grouping -- new and known documents mixed, a path written twice in one
transaction, SQLite allowing few parameters per statement -- the rows must be the ones
writing each document in its own transaction leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from pytest_groove.kb.source.parse import parse_document
from pytest_groove.kb.source.quality import quality_score, token_count
from pytest_groove.kb.store.database import DocumentWrite, Store, chunk_digest_of
from pytest_groove.settings.records import IndexSettings

DIM = 8


def write_of(path: str, text: str, *, seed: int, note: bool = True) -> DocumentWrite:
    """``path`` holding ``text``, with vectors (and a note vector) drawn from ``seed``."""
    doc = parse_document(path, text.encode("utf-8"), IndexSettings())
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((len(doc.chunks), DIM)).astype(np.float32)
    return DocumentWrite(
        path,
        f"hash-{seed}",
        len(text),
        doc,
        vectors,
        [token_count(c.content) for c in doc.chunks],
        [quality_score(c.content) for c in doc.chunks],
        note_vector=rng.standard_normal(DIM).astype(np.float32) if note else None,
        embed_keys=[bytes([seed % 256, at]) * 4 for at in range(len(doc.chunks))],
        note_key=bytes([seed % 256]) * 8 if note else None,
    )


def note_text(number: int, sections: int) -> str:
    body = "\n\n".join(
        f"## Step {s}\n\nnote {number} step {s} restarts the queue {number * 3 + s} times."
        for s in range(sections)
    )
    return f"# Note {number}\n\n{body}\n"


def rows_of(store: Store) -> dict[str, Any]:
    """Every stored row, ids included (they must come out the same too)."""
    documents = [
        row
        for row in store.conn.execute(
            "SELECT id, path, title, content_hash, size_bytes, chunk_digest, note_embedding, "
            "note_key FROM documents ORDER BY id"
        )
    ]
    chunks = [
        row
        for row in store.conn.execute(
            "SELECT id, document_id, chunk_index, heading, level, content, token_count, "
            "quality_score, context_text, embedding, embed_key FROM chunks ORDER BY id"
        )
    ]
    fulltext = list(store.conn.execute("SELECT rowid, content FROM fts_chunks ORDER BY rowid"))
    return {"documents": documents, "chunks": chunks, "fulltext": fulltext}


def written(
    directory: Path, batches: Sequence[Sequence[DocumentWrite]], *, parameters: int | None = None
) -> dict[str, Any]:
    store = Store.open(directory, create=True)
    try:
        if parameters is not None:
            store.conn.limit(apsw.SQLITE_LIMIT_VARIABLE_NUMBER, parameters)
        for batch in batches:
            store.write_documents(batch, store_context=True)
        return rows_of(store)
    finally:
        store.close()


def one_at_a_time(directory: Path, batches: Sequence[Sequence[DocumentWrite]]) -> dict[str, Any]:
    return written(directory, [[write] for batch in batches for write in batch])


def test_new_documents_written_together_get_the_rows_of_one_at_a_time(tmp_path: Path) -> None:
    batch = [write_of(f"team/note-{n}.md", note_text(n, 1 + n % 5), seed=n) for n in range(40)]
    together = written(tmp_path / "together", [batch])
    assert together == one_at_a_time(tmp_path / "alone", [batch])
    assert len(together["documents"]) == 40
    assert len(together["chunks"]) == sum(len(w.doc.chunks) for w in batch)


def test_few_parameters_a_statement_still_write_every_row(tmp_path: Path) -> None:
    # 25 parameters: one document row (13 values) or two chunk rows (10) a statement
    batch = [write_of(f"n{n}.md", note_text(n, 3), seed=n) for n in range(7)]
    assert written(tmp_path / "few", [batch], parameters=25) == written(tmp_path / "many", [batch])


def test_known_and_new_documents_and_a_path_written_twice_in_one_transaction(
    tmp_path: Path,
) -> None:
    first = [write_of(f"n{n}.md", note_text(n, 2), seed=n) for n in range(5)]
    second = [
        write_of("n1.md", note_text(101, 4), seed=101),  # known: its chunks replaced
        write_of("new-a.md", note_text(200, 2), seed=200),
        write_of("n3.md", note_text(103, 1), seed=103, note=False),  # keeps its note vector
        write_of("new-a.md", note_text(201, 3), seed=201),  # again, in the same transaction
        write_of("new-b.md", note_text(202, 2), seed=202),
    ]
    together = written(tmp_path / "together", [first, second])
    assert together == one_at_a_time(tmp_path / "alone", [first, second])
    paths = [row[1] for row in together["documents"]]
    assert paths == ["n0.md", "n1.md", "n2.md", "n3.md", "n4.md", "new-a.md", "new-b.md"]


def test_chunk_ids_follow_the_order_of_the_writes(tmp_path: Path) -> None:
    # the indexer counts each written chunk's words as chunk ``after + 1 + i``
    batch = [write_of(f"z{9 - n}.md", note_text(n, 2 + n % 3), seed=n) for n in range(10)]
    rows = written(tmp_path, [batch])
    expected = [c.content for w in batch for c in w.doc.chunks]
    assert [row[5] for row in rows["chunks"]] == expected
    assert [row[0] for row in rows["chunks"]] == list(range(1, len(expected) + 1))


def test_a_document_row_carries_its_digest_note_and_vectors(tmp_path: Path) -> None:
    write = write_of("runbook.md", note_text(7, 3), seed=7)
    rows = written(tmp_path, [[write]])
    (document,) = rows["documents"]
    assert document[5] == chunk_digest_of(write.doc, True)
    assert write.note_vector is not None and document[6] == write.note_vector.tobytes()
    assert document[7] == write.note_key
    assert write.vectors is not None
    assert [row[9] for row in rows["chunks"]] == [v.tobytes() for v in write.vectors]
    assert [row[10] for row in rows["chunks"]] == list(write.embed_keys)


@pytest.mark.parametrize("given", [True, False])
def test_a_digest_worked_out_by_the_indexer_is_the_one_stored(tmp_path: Path, given: bool) -> None:
    write = write_of("runbook.md", note_text(7, 3), seed=7)
    if given:
        write = replace(write, chunk_digest="from-the-indexer")
    (document,) = written(tmp_path, [[write]])["documents"]
    assert document[5] == ("from-the-indexer" if given else chunk_digest_of(write.doc, True))
