"""Reading an index: the chunk openings the vector caches group by script."""

from __future__ import annotations

from pathlib import Path

from pytest_groove.engine.builtin import run_indexer
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings
from pytest_groove.text.scripts import script_group

SETTINGS = Settings(index=IndexSettings(model="hash"))


def test_the_openings_left_out_as_ascii_are_all_in_the_other_group(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "en.md").write_text("# Deploy\n\n## Steps\n\nRoll back the cache.\n", encoding="utf-8")
    (kb / "ja.md").write_text("# デプロイ\n\n## 手順\n\nキャッシュを戻す。\n", encoding="utf-8")
    # past the opening's 400 characters the script does not count; in a heading it does
    (kb / "mixed.md").write_text(
        "# Notes\n\n## Plain heading\n\n"
        + "a " * 250
        + "デプロイ\n\n## Café\n\n"
        + "Plain text about the menu and the opening hours. " * 4,
        encoding="utf-8",
    )
    run_indexer(kb, SETTINGS, progress=False)
    store = Store.open(kb / ".groove" / "hash", create=False)
    try:
        every = store.chunk_openings()
        some = store.chunk_openings(ascii_too=False)
    finally:
        store.close()
    assert set(some) < set(every)
    assert all(some[cid] == every[cid] for cid in some)
    assert all(not every[cid].isascii() for cid in some)
    assert all(script_group(every[cid]) == "other" for cid in set(every) - set(some))
    assert {script_group(text) for text in some.values()} == {"ja", "other"}


def test_reads_from_an_id_on_are_the_tail_of_the_full_reads(tmp_path: Path) -> None:
    # a cache update reads only the chunks added above every kept one
    kb = tmp_path / "kb"
    kb.mkdir()
    for number in range(6):
        heading = "手順" if number % 2 else "Steps"
        (kb / f"n{number}.md").write_text(
            f"# Note {number}\n\n## {heading}\n\nstep {number} text.\n\n## More\n\nmore.\n",
            encoding="utf-8",
        )
    run_indexer(kb, SETTINGS, progress=False)
    store = Store.open(kb / ".groove" / "hash", create=False)
    try:
        ids, vectors = store.all_vectors()
        middle = int(ids[len(ids) // 2])
        tail_ids, tail_vectors = store.vectors_from(middle)
        openings = store.chunk_openings(ascii_too=False)
        tail_openings = store.chunk_openings(ascii_too=False, from_id=middle)
        documents = store.chunk_documents()
        tail_documents = store.chunk_documents(from_id=middle)
        pairs = store.conn.execute("SELECT id, document_id FROM chunks ORDER BY id").fetchall()
        pair_ids, pair_documents = store.chunk_document_ids()
    finally:
        store.close()
    # read from the index, as the table holds them
    assert list(zip(pair_ids.tolist(), pair_documents.tolist(), strict=True)) == pairs
    at = len(ids) // 2
    assert tail_ids.tolist() == ids[at:].tolist()
    assert tail_vectors.tobytes() == vectors[at:].tobytes()
    assert tail_openings == {cid: text for cid, text in openings.items() if cid >= middle}
    assert tail_openings and len(tail_openings) < len(openings)
    assert tail_documents == {cid: doc for cid, doc in documents.items() if cid >= middle}
