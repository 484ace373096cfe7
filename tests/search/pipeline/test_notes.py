"""Note order: documents ordered by note-carrying vectors, sections by the fused list."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT
from pytest_groove.engine.builtin import Engine, open_engine, run_indexer
from pytest_groove.kb.derived.vectors import NoteVectors, VectorIndex
from pytest_groove.search.pipeline.documents import documents_first
from pytest_groove.search.pipeline.notes import notes_first
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings, load_settings

SETTINGS = Settings(index=IndexSettings(model="hash"))
CORPORA = REPO_ROOT / "tests" / "corpora"


def _doc(item: tuple[str, int]) -> str:
    return item[0]


def _key(item: tuple[str, int]) -> tuple[str, int]:
    return item


def test_documents_follow_the_note_list_and_keep_their_best_fused_section() -> None:
    fused = [("a", 1), ("a", 2), ("b", 1), ("c", 1), ("b", 2)]
    note_fused = [("c", 1), ("b", 2), ("a", 2), ("b", 1)]
    assert notes_first(fused, note_fused, _doc, _key) == [
        # c, b, a as the note list has them; each by its first chunk in the fused list
        ("c", 1),
        ("b", 1),
        ("a", 1),
        # then the other chunks in fused order
        ("a", 2),
        ("b", 2),
    ]


def test_documents_and_chunks_only_one_list_holds_are_kept() -> None:
    fused = [("a", 1), ("b", 1)]
    note_fused = [("d", 3), ("a", 1), ("a", 4)]
    # d only in the note list: represented by its note-list chunk; b only in the
    # fused list: after every note-listed document; a's 4 only in the note list: last
    assert notes_first(fused, note_fused, _doc, _key) == [("d", 3), ("a", 1), ("b", 1), ("a", 4)]


def test_with_the_same_list_twice_it_is_document_first_ordering() -> None:
    fused = [("a", 1), ("a", 2), ("b", 1), ("a", 3), ("c", 1), ("b", 2)]
    assert notes_first(fused, fused, _doc, _key) == documents_first(fused, _doc)
    assert notes_first([], [], _doc, _key) == []


@pytest.fixture
def engine(kb_eval_copy: Path) -> Engine:
    eng = open_engine(kb_eval_copy, SETTINGS, progress=False)
    yield eng  # type: ignore[misc]
    eng.close()


def test_every_document_has_a_note_vector_and_the_note_index_covers_every_chunk(
    engine: Engine,
) -> None:
    documents, chunks = engine.store.counts()
    assert len(engine.store.note_vectors()) == documents == 20
    assert engine.note_vectors is not None and engine.note_vectors.size == chunks


def test_note_order_is_on_by_default_and_off_is_document_first(engine: Engine) -> None:
    query = "bring the database back to the state it was in before a bad write"
    ordered = engine.search(query, 10)
    grouped = engine.search(query, 10, SearchSettings(note_order=False))
    plain = engine.search(query, 50, SearchSettings(document_first=False))
    assert [h.chunk_id for h in grouped] == [
        h.chunk_id for h in documents_first(plain, lambda h: h.path)[:10]
    ]
    # both list every document once before any second section, in another order
    for hits in (ordered, grouped):
        paths = [h.path for h in hits]
        assert len(set(paths[: len(set(paths))])) == len(set(paths))
    assert [h.path for h in ordered] != [h.path for h in grouped]


def test_a_document_is_shown_by_its_best_fused_section(engine: Engine) -> None:
    for query in ("database snapshot replay", "how long are database backups kept"):
        ordered = engine.search(query, 10)
        plain = engine.search(query, 50, SearchSettings(document_first=False))
        best: dict[str, int | None] = {}
        for hit in plain:
            best.setdefault(hit.path, hit.chunk_id)
        firsts: dict[str, int | None] = {}
        for hit in ordered:
            firsts.setdefault(hit.path, hit.chunk_id)
        assert all(best[path] == chunk for path, chunk in firsts.items() if path in best)


def test_the_low_confidence_flag_judges_the_fused_scores(engine: Engine) -> None:
    for query in ("database snapshot replay", "deploy", "rate limit headers"):
        on = engine.search_response(query, 10)
        off = engine.search_response(query, 10, SearchSettings(note_order=False))
        assert on.low_confidence == off.low_confidence


def test_an_engine_opened_without_it_loads_no_note_index(kb_eval_copy: Path) -> None:
    off = Settings(index=SETTINGS.index, search=SearchSettings(note_order=False))
    with open_engine(kb_eval_copy, off, progress=False) as engine:
        assert engine.note_vectors is None
        assert not list(engine.store.path.parent.glob("notevectors-*.faiss"))


def test_note_vectors_follow_edits_renames_and_removals(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(CORPORA / "kb-eval", kb)
    run_indexer(kb, SETTINGS, progress=False)

    def state() -> dict[str, np.ndarray]:
        with open_engine(kb, SETTINGS, reindex=False) as engine:
            ids = {
                row.document_id: row.path
                for row in engine.store.chunk_rows(list(range(1, 1000))).values()
            }
            return {ids[doc]: vector for doc, vector in engine.store.note_vectors().items()}

    before = state()
    backup = kb / "ops" / "database-backup.md"
    # an edit of the opening section re-embeds that note's vector only
    text = backup.read_text(encoding="utf-8")
    head, _, body = text.partition("\n## ")
    backup.write_text(head + "\nA new opening line about the nightly copies.\n\n## " + body)
    report = run_indexer(kb, SETTINGS, progress=False)
    assert (report.changed, report.notes_embedded) == (1, 1)
    after = state()
    assert not np.array_equal(after["ops/database-backup.md"], before["ops/database-backup.md"])
    assert all(
        np.array_equal(after[p], v) for p, v in before.items() if p != "ops/database-backup.md"
    )
    # a rename keeps it (no title is made from the file name for it)
    backup.rename(kb / "ops" / "backups.md")
    report = run_indexer(kb, SETTINGS, progress=False)
    assert (report.renamed, report.notes_embedded) == (1, 0)
    assert np.array_equal(state()["ops/backups.md"], after["ops/database-backup.md"])
    # a removed note drops its vector, and search never meets its chunks again
    (kb / "ops" / "backups.md").unlink()
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.removed == 1
    remaining = state()
    assert len(remaining) == 19 and "ops/backups.md" not in remaining
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.note_vectors is not None
        assert engine.note_vectors.size == engine.store.counts()[1]
        hits = engine.search("how long are database backups kept", 10)
        assert "ops/backups.md" not in {h.path for h in hits}


def test_a_title_edit_bumps_the_generation_so_no_stale_note_index_is_read(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    body = "## Section\n\n" + "Body text long enough to be a chunk. " * 4
    kb.mkdir()
    (kb / "a.md").write_text("---\ntitle: Alpha\n---\n" + body, encoding="utf-8")
    (kb / "b.md").write_text("---\ntitle: Beta\n---\n" + body, encoding="utf-8")
    with open_engine(kb, SETTINGS, progress=False) as engine:
        generation = engine.store.generation
        assert engine.note_vectors is not None
        old = engine.note_vectors.vector(1)
    (kb / "a.md").write_text("---\ntitle: Gamma\n---\n" + body, encoding="utf-8")
    with open_engine(kb, SETTINGS, progress=False) as engine:
        assert engine.store.generation > generation
        assert engine.note_vectors is not None
        assert not np.array_equal(engine.note_vectors.vector(1), old)


def test_build_with_notes_adds_each_chunks_note_vector() -> None:
    ids = np.asarray([1, 2, 3], dtype=np.int64)
    chunks = np.eye(3, dtype=np.float32)
    note = np.asarray([0.0, 0.0, 1.0], dtype=np.float32)
    notes = NoteVectors(vectors={7: (note, "other")}, document_of={1: 7, 2: 7})
    index = VectorIndex.build_with_notes(ids, chunks, 3, None, notes)
    half = 1 / np.sqrt(2)
    assert np.allclose(index.vector(1), [half, 0, half])
    assert np.allclose(index.vector(2), [0, half, half])
    assert np.allclose(index.vector(3), [0, 0, 1])  # no note vector: its own


def test_config_switch(tmp_path: Path) -> None:
    (tmp_path / "groove.toml").write_text("[search]\nnote_order = false\n", encoding="utf-8")
    assert load_settings(tmp_path).search.note_order is False
    assert SearchSettings().note_order is True
