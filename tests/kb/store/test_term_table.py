"""The word table (``fts_terms``) is filled only while a configuration reads it."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.errors import GrooveError
from pytest_groove.kb.store.database import DB_FILE_NAME, SCHEMA_VERSION, TERM_TABLE_META, Store
from pytest_groove.search.query.fts_query import build_terms_query
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from tests.helpers.kb_files import write_notes

V3 = Settings(index=IndexSettings(model="hash", contextual=True))
V4 = replace(V3, search=SearchSettings(fts_query_version=4))

NOTES = {
    "milk.md": "# 牛乳\n\n## 発注\n\n牛乳は毎週火曜日に発注します。在庫は冷蔵庫の棚で数える。\n",
    "brakes.md": "# Brakes\n\n## Squeal\n\nSqueaking brakes need new pads and a clean rotor.\n",
    "deploy/rollout.md": "# Rollout\n\n## Canary\n\nShip the canary first, then the fleet.\n"
    "\n## Rollback\n\nA rollback restores the previous release.\n",
}
QUERIES = [
    "牛乳はいつ発注すればいいですか",
    "squealing brake",
    "canary rollout",
    "rollback release",
]


def make_kb(root: Path) -> Path:
    return write_notes(root / "kb", NOTES)


def term_rows(kb: Path) -> list[tuple[object, ...]]:
    """Every (term, chunk's path and place, column, offset) the word table holds."""
    conn = apsw.Connection(str(index_dir_for(kb, V3, "hash") / DB_FILE_NAME))
    conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, fts_terms, instance)")
    rows = list(
        conn.execute(
            "SELECT v.term, d.path, c.chunk_index, v.col, v.offset FROM temp.v v "
            "LEFT JOIN chunks c ON c.id = v.doc LEFT JOIN documents d ON d.id = c.document_id "
            "ORDER BY 1, 2, 3, 4, 5"
        )
    )
    conn.close()
    return rows


def word_table_lists(kb: Path) -> list[list[int]]:
    with open_engine(kb, V4, reindex=False) as engine:
        out = []
        for query in QUERIES:
            expr = build_terms_query(query)
            assert expr is not None
            out.append(engine.store.fts_candidates(expr, (1.0, 1.0, 1.0), 10, "fts_terms"))
        return out


def meta(kb: Path, key: str) -> str | None:
    store = Store.open(index_dir_for(kb, V3, "hash"), create=False)
    try:
        return store.get_meta(key)
    finally:
        store.close()


def test_the_default_search_leaves_the_word_table_empty(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    run_indexer(kb, V3, progress=False)
    assert meta(kb, TERM_TABLE_META) == "off"
    assert term_rows(kb) == []
    with open_engine(kb, V3, reindex=False) as engine:
        assert engine.search("canary rollout", 3)[0].path == "deploy/rollout.md"


def test_a_table_filled_later_equals_one_fed_chunk_by_chunk(tmp_path: Path) -> None:
    later = make_kb(tmp_path / "later")
    run_indexer(later, V3, progress=False)
    run_indexer(later, V4, progress=False)  # fills it from the stored chunks
    assert meta(later, TERM_TABLE_META) == "kept"
    from_start = make_kb(tmp_path / "from-start")
    run_indexer(from_start, V4, progress=False)
    assert term_rows(later) == term_rows(from_start) != []
    assert word_table_lists(later) == word_table_lists(from_start)
    assert all(word_table_lists(later))


def test_a_kept_table_follows_edits_and_a_forced_rebuild_drops_it(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    run_indexer(kb, V4, progress=False)
    (kb / "brakes.md").write_text("# Brakes\n\n## Fluid\n\nBleed the fluid yearly.\n")
    (kb / "deploy/rollout.md").unlink()
    run_indexer(kb, V3, progress=False)  # a configuration that does not read it
    assert meta(kb, TERM_TABLE_META) == "kept"
    fresh = make_kb(tmp_path / "fresh")
    (fresh / "brakes.md").write_text("# Brakes\n\n## Fluid\n\nBleed the fluid yearly.\n")
    (fresh / "deploy/rollout.md").unlink()
    run_indexer(fresh, V4, progress=False)
    # the same terms, at the same rows: the kept table followed the edit and the delete
    assert term_rows(kb) == term_rows(fresh)
    assert all(path is not None for _, path, *_ in term_rows(kb))
    run_indexer(kb, V3, force=True, progress=False)
    assert meta(kb, TERM_TABLE_META) == "off" and term_rows(kb) == []


def test_searching_the_word_table_of_an_index_without_it_is_one_clear_error(
    tmp_path: Path,
) -> None:
    kb = make_kb(tmp_path)
    run_indexer(kb, V3, progress=False)
    with pytest.raises(
        GrooveError, match=r"has no word table.*fts_query_version = 4.*groove index"
    ):
        open_engine(kb, V4, reindex=False)
    with open_engine(kb, V4) as engine:  # indexing with the setting adds it
        assert engine.search("牛乳はいつ発注すればいいですか", 1)[0].path == "milk.md"


def test_a_version_4_index_is_upgraded_in_place_keeping_its_rows(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    run_indexer(kb, V4, progress=False)
    index_dir = index_dir_for(kb, V3, "hash")
    before = term_rows(kb)
    conn = apsw.Connection(str(index_dir / DB_FILE_NAME))
    # what a version-4 index looks like: its word table always filled, no meta key
    conn.execute("UPDATE index_meta SET value='4' WHERE key='schema_version'")
    conn.execute("DELETE FROM index_meta WHERE key=?", (TERM_TABLE_META,))
    index_id = conn.execute("SELECT value FROM index_meta WHERE key='index_id'").fetchone()
    conn.close()
    copy = tmp_path / "v4-copy"
    shutil.copytree(index_dir, copy)
    report = run_indexer(kb, V3, progress=False)
    assert report.chunks_embedded == 0 and report.unchanged == len(NOTES)
    assert meta(kb, "schema_version") == str(SCHEMA_VERSION)
    assert meta(kb, TERM_TABLE_META) == "kept"
    assert meta(kb, "index_id") == index_id[0]
    assert term_rows(kb) == before
    # a version-4 index is readable as it is where it cannot be written (immutable open)
    store = Store._open_immutable(copy / DB_FILE_NAME)
    try:
        assert store.keeps_term_table
    finally:
        store.close()
