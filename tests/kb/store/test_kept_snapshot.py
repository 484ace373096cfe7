"""The corpus snapshot is kept in index.db by the indexer, per index state."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.kb.source.corpus_digest import DIGEST_VERSION
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.kb.store.database import DB_FILE_NAME, Store
from pytest_groove.kb.store.kept_snapshot import (
    CORPUS_SNAPSHOT_META,
    decode_snapshot,
    encode_snapshot,
)
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))


def write_kb(kb: Path) -> None:
    kb.mkdir()
    for d in range(4):
        (kb / f"n{d}.md").write_text(f"# N{d}\n\n## A\n\nretry budget {d}\n\n## B\n\nlease {d}\n")


def snapshot(kb: Path) -> CorpusSnapshot:
    with open_engine(kb, SETTINGS, reindex=False) as engine, engine.read_snapshot():
        return engine.corpus_snapshot()


def kept_value(kb: Path) -> str | None:
    db = index_dir_for(kb, SETTINGS, get_embedder("hash").name) / DB_FILE_NAME
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(
            "SELECT value FROM index_meta WHERE key = ?", (CORPUS_SNAPSHOT_META,)
        ).fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def no_read(self: Store) -> CorpusSnapshot:
    raise AssertionError("every document row was read again")


def test_a_search_of_the_indexed_state_reads_the_kept_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    write_kb(kb)
    run_indexer(kb, SETTINGS)
    assert kept_value(kb) is not None
    # no file beside the index holds it
    assert not [p for p in kb.joinpath(".groove").rglob("*") if "snapshot" in p.name]
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        computed = engine.store.corpus_snapshot()
    with monkeypatch.context() as patch:
        patch.setattr(Store, "corpus_snapshot", no_read)
        assert snapshot(kb) == computed


def test_each_write_keeps_the_snapshot_of_the_state_it_leaves(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_kb(kb)
    run_indexer(kb, SETTINGS)
    first = snapshot(kb)
    with (kb / "n2.md").open("a") as handle:
        handle.write("\nmore\n")
    run_indexer(kb, SETTINGS)
    second = snapshot(kb)
    assert second != first and second.chunks == first.chunks
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert second == engine.store.corpus_snapshot()
    (kb / "n3.md").unlink()
    run_indexer(kb, SETTINGS, force=True)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert snapshot(kb) == engine.store.corpus_snapshot()
        assert snapshot(kb).documents == 3


def test_a_value_of_another_state_or_digest_is_not_used() -> None:
    now = CorpusSnapshot(documents=4, chunks=8, digest="d" * 64, digest_version=DIGEST_VERSION)
    assert decode_snapshot(encode_snapshot(now, 7), 7) == now
    assert decode_snapshot(encode_snapshot(now, 6), 7) is None  # a write since
    older = CorpusSnapshot(documents=4, chunks=8, digest="e" * 64, digest_version=1)
    assert decode_snapshot(encode_snapshot(older, 7), 7) is None
    for kept in (None, "", "{not json", "[]", '{"generation": 7}'):
        assert decode_snapshot(kept, 7) is None


def test_an_index_without_a_kept_value_computes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an index an older version wrote, opened without re-indexing
    kb = tmp_path / "kb"
    write_kb(kb)
    run_indexer(kb, SETTINGS)
    before = snapshot(kb)
    with open_engine(kb, SETTINGS, reindex=False) as engine, engine.store.transaction():
        engine.store.conn.execute("DELETE FROM index_meta WHERE key = ?", (CORPUS_SNAPSHOT_META,))
    computed: list[int] = []
    real = Store.corpus_snapshot

    def counted(self: Store) -> CorpusSnapshot:
        computed.append(1)
        return real(self)

    monkeypatch.setattr(Store, "corpus_snapshot", counted)
    assert snapshot(kb) == before and computed == [1]
    run_indexer(kb, SETTINGS)  # a no-op run keeps it again
    assert kept_value(kb) is not None
