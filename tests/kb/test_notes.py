"""Note vectors are embedded only while a configuration reads them (note order)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import pytest_groove.kb.indexer as indexer
from conftest import REPO_ROOT
from pytest_groove.embed.base import Matrix
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.errors import GrooveError
from pytest_groove.kb.store.database import NOTE_VECTORS_META, Store
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings

CORPORA = REPO_ROOT / "tests" / "corpora"
ON = Settings(index=IndexSettings(model="hash"))
OFF = replace(ON, search=SearchSettings(note_order=False))
QUERIES = ["database snapshot replay", "deploy", "rate limit headers", "バックアップ"]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, remembering every text it was asked to embed."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.fail_after = fail_after

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        if self.fail_after is not None and len(self.texts) + len(texts) > self.fail_after:
            raise KeyboardInterrupt  # what a killed run leaves behind, at a commit boundary
        self.texts.extend(texts)
        return super().embed_passages(texts)


def copy_kb(root: Path, name: str = "kb") -> Path:
    kb = root / name
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    return kb


def notes_by_path(kb: Path) -> dict[str, bytes | None]:
    """Every document's stored note vector (bytes, or None), by path."""
    store = Store.open(index_dir_for(kb, ON, "hash"), create=False)
    try:
        return {
            str(path): None if blob is None else bytes(blob)
            for path, blob in store.conn.execute("SELECT path, note_embedding FROM documents")
        }
    finally:
        store.close()


def meta(kb: Path) -> str | None:
    store = Store.open(index_dir_for(kb, ON, "hash"), create=False)
    try:
        return store.get_meta(NOTE_VECTORS_META)
    finally:
        store.close()


def ranked(kb: Path) -> list[list[tuple[str, str | None]]]:
    with open_engine(kb, ON, reindex=False) as engine:
        assert engine.note_vectors is not None
        return [[(h.path, h.heading) for h in engine.search(q, 10)] for q in QUERIES]


def new_opening(note: Path) -> None:
    head, _, body = note.read_text(encoding="utf-8").partition("\n## ")
    note.write_text(head + "\nA new opening about the nightly copies.\n\n## " + body)


def edit(kb: Path) -> None:
    """An opening edit, a new note and a removed one."""
    new_opening(kb / "ops" / "database-backup.md")
    (kb / "guide" / "fresh.md").write_text(
        "# Fresh\n\nA brand new note about canaries.\n\n## Rollout\n\nShip it slowly.\n"
    )
    victim = sorted((kb / "ref").glob("*.md"))[0]
    victim.unlink()


def test_without_note_order_no_note_is_embedded(tmp_path: Path) -> None:
    kb = copy_kb(tmp_path)
    embedder = CountingEmbedder()
    report = run_indexer(kb, OFF, embedder=embedder, progress=False)
    assert report.notes_embedded == 0
    assert len(embedder.texts) == report.chunks_embedded == 60
    assert meta(kb) == "off"
    assert set(notes_by_path(kb).values()) == {None}
    with open_engine(kb, OFF, reindex=False) as engine:
        assert engine.note_vectors is None
        assert engine.search("database snapshot replay", 1)


def test_the_default_embeds_one_note_per_document(tmp_path: Path) -> None:
    kb = copy_kb(tmp_path)
    embedder = CountingEmbedder()
    report = run_indexer(kb, ON, embedder=embedder, progress=False)
    assert (report.chunks_embedded, report.notes_embedded) == (60, 20)
    assert len(embedder.texts) == 80
    assert meta(kb) == "kept"
    assert None not in notes_by_path(kb).values()


def test_notes_embedded_later_equal_notes_embedded_from_the_start(tmp_path: Path) -> None:
    later = copy_kb(tmp_path, "later")
    run_indexer(later, OFF, progress=False)
    embedder = CountingEmbedder()
    report = run_indexer(later, ON, embedder=embedder, progress=False)
    # the stored titles and openings are embedded; no chunk, no file read again
    assert (report.chunks_embedded, report.notes_embedded, report.unchanged) == (0, 20, 20)
    assert len(embedder.texts) == 20
    assert meta(later) == "kept"
    from_start = copy_kb(tmp_path, "from-start")
    run_indexer(from_start, ON, progress=False)
    assert notes_by_path(later) == notes_by_path(from_start)
    assert ranked(later) == ranked(from_start)
    # and once kept, a run finds nothing more to embed
    assert run_indexer(later, ON, progress=False).notes_embedded == 0


def test_switching_on_while_files_change_embeds_each_note_once(tmp_path: Path) -> None:
    kb = copy_kb(tmp_path)
    run_indexer(kb, OFF, progress=False)
    edit(kb)
    embedder = CountingEmbedder()
    report = run_indexer(kb, ON, embedder=embedder, progress=False)
    assert (report.changed, report.added, report.removed) == (1, 1, 1)
    # 18 unchanged notes from the store, the changed and the new one as they are written
    assert report.notes_embedded == 20
    fresh = copy_kb(tmp_path, "fresh")
    edit(fresh)
    run_indexer(fresh, ON, progress=False)
    assert notes_by_path(kb) == notes_by_path(fresh)
    assert ranked(kb) == ranked(fresh)


def test_a_killed_switch_leaves_no_stale_note_and_the_next_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = copy_kb(tmp_path)
    run_indexer(kb, OFF, progress=False)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 4)
    with pytest.raises(KeyboardInterrupt):
        run_indexer(kb, ON, embedder=CountingEmbedder(fail_after=10), progress=False)
    partial = notes_by_path(kb)
    assert meta(kb) == "off" and 0 < sum(v is not None for v in partial.values()) < 20
    # a run without note order: an edited note's vector is dropped, not left stale
    embedded = sorted(path for path, vector in partial.items() if vector is not None)
    new_opening(kb / embedded[0])
    edit(kb)
    run_indexer(kb, OFF, progress=False)
    assert notes_by_path(kb)[embedded[0]] is None
    assert notes_by_path(kb)[embedded[1]] == partial[embedded[1]]
    with pytest.raises(GrooveError, match="has no note vectors"):
        open_engine(kb, ON, reindex=False)
    run_indexer(kb, ON, progress=False)
    fresh = copy_kb(tmp_path, "fresh")
    new_opening(fresh / embedded[0])
    edit(fresh)
    run_indexer(fresh, ON, progress=False)
    assert notes_by_path(kb) == notes_by_path(fresh)


def test_kept_notes_follow_edits_without_note_order_and_force_drops_them(
    tmp_path: Path,
) -> None:
    kb = copy_kb(tmp_path)
    run_indexer(kb, ON, progress=False)
    edit(kb)
    report = run_indexer(kb, OFF, progress=False)  # kept once kept
    assert report.notes_embedded == 2 and meta(kb) == "kept"
    fresh = copy_kb(tmp_path, "fresh")
    edit(fresh)
    run_indexer(fresh, ON, progress=False)
    assert notes_by_path(kb) == notes_by_path(fresh)
    report = run_indexer(kb, OFF, force=True, progress=False)
    assert report.notes_embedded == 0 and meta(kb) == "off"
    assert set(notes_by_path(kb).values()) == {None}


def test_reading_notes_an_index_does_not_keep_is_one_clear_error(tmp_path: Path) -> None:
    kb = copy_kb(tmp_path)
    run_indexer(kb, OFF, progress=False)
    with pytest.raises(GrooveError) as caught:
        open_engine(kb, ON, reindex=False)
    message = str(caught.value)
    assert "\n" not in message and str(index_dir_for(kb, ON, "hash")) in message
    assert "note_order" in message and "groove index" in message
    with open_engine(kb, ON, progress=False) as engine:  # indexing with it adds them
        assert engine.note_vectors is not None
        assert engine.note_vectors.size == 60


def test_an_index_from_before_the_key_keeps_its_notes(tmp_path: Path) -> None:
    kb = copy_kb(tmp_path)
    run_indexer(kb, ON, progress=False)
    store = Store.open(index_dir_for(kb, ON, "hash"), create=False)
    try:
        with store.transaction():
            store.conn.execute("DELETE FROM index_meta WHERE key=?", (NOTE_VECTORS_META,))
        assert store.keeps_note_vectors
    finally:
        store.close()
    before = notes_by_path(kb)
    embedder = CountingEmbedder()
    report = run_indexer(kb, ON, embedder=embedder, progress=False)
    assert report.notes_embedded == 0 and embedder.texts == []
    assert notes_by_path(kb) == before


def test_note_texts_from_the_store_are_the_parsed_ones(tmp_path: Path) -> None:
    from pytest_groove.kb.notes import note_text, note_text_of
    from pytest_groove.kb.source.parse import parse_document

    kb = copy_kb(tmp_path)
    (kb / "untitled.md").write_text("No title here, only an opening.\n\n## Part\n\nMore.\n")
    (kb / "日本語.md").write_text("---\ntitle: '  牛乳 '\n---\n\n牛乳は火曜日に発注する。\n")
    run_indexer(kb, OFF, progress=False)
    store = Store.open(index_dir_for(kb, ON, "hash"), create=False)
    try:
        stored = {
            str(path): note_text_of(title, opening)
            for path, (_, title, opening) in zip(
                [r[0] for r in store.conn.execute("SELECT path FROM documents ORDER BY id")],
                store.notes_to_embed(),
                strict=True,
            )
        }
    finally:
        store.close()
    parsed = {
        rel: note_text(parse_document(rel, (kb / rel).read_bytes(), ON.index)) for rel in stored
    }
    assert stored == parsed and len(stored) == 22
    assert np.all([bool(text.strip()) for text in stored.values()])
