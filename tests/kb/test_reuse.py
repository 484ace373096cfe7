"""Vectors found by what they embed (kb/reuse.py): an edit embeds only the texts it
changed, and the index it leaves equals a full rebuild of the same files, byte for byte."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_groove.embed.e5 import E5SmallEmbedder
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.kb.index_group import IndexReport
from pytest_groove.kb.reuse import KeyedEmbedder, embed_key, embedder_identity
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings
from tests.helpers.embedders import RecordingEmbedder

OFF = Settings(index=IndexSettings(model="hash"))
EMBEDDED = Settings(index=IndexSettings(model="hash", contextual=True, contextual_full_text=False))
STATIC = Settings(index=IndexSettings(model="hash", contextual=True))
QUERIES = ("rotate the signing keys", "drain a node before the upgrade", "page 7 of the runbook")

# --------------------------------------------------------------------------- the keys


def test_a_key_names_the_model_its_dimension_the_role_and_the_text() -> None:
    hashed = HashEmbedder()
    identity = embedder_identity(hashed)
    keys = {
        embed_key(identity, "text"),
        embed_key(identity, "text "),
        embed_key(embedder_identity(hashed, role="query"), "text"),
        embed_key(embedder_identity(replace_name(hashed, "other")), "text"),
        embed_key(embedder_identity(replace_dimension(hashed, 8)), "text"),
        embed_key(identity, "te\udcffxt"),  # a lone surrogate of an undecodable byte
    }
    assert len(keys) == 6 and all(len(k) == 16 for k in keys)


class _Named(HashEmbedder):
    def __init__(self, name: str, dimension: int) -> None:
        self.name = name
        self.dimension = dimension


def replace_name(embedder: HashEmbedder, name: str) -> HashEmbedder:
    return _Named(name, embedder.dimension)


def replace_dimension(embedder: HashEmbedder, dimension: int) -> HashEmbedder:
    return _Named(embedder.name, dimension)


def test_found_texts_are_not_embedded_and_equal_texts_once() -> None:
    recording = RecordingEmbedder()
    stored = HashEmbedder().embed_passages(["kept"])[0].tobytes()
    keyed = KeyedEmbedder(recording, lambda keys: {k: stored for k in keys[:1]})
    got = keyed.passages(["kept", "new", "other", "new"])
    assert recording.passages == ["new", "other"]
    assert got.embedded == [False, True, True, False]
    assert (
        got.matrix.tobytes()
        == HashEmbedder().embed_passages(["kept", "new", "other", "new"]).tobytes()
    )


def test_a_stored_vector_of_another_length_is_embedded_again() -> None:
    recording = RecordingEmbedder()
    keyed = KeyedEmbedder(recording, lambda keys: {k: b"\0" * 8 for k in keys})
    assert keyed.passages(["text"]).embedded == [True]
    assert recording.passages == ["text"]


# --------------------------------------------------------------------------- a KB of long notes


def section(note: int, number: int) -> str:
    return (
        f"## Step {number} of runbook {note}\n\nRunbook {note}, step {number}: rotate the "
        f"signing keys on node {note * 100 + number}, drain it before the upgrade, and "
        f"record page {number} of the runbook in the change log."
    )


def write_note(kb: Path, rel: str, title: str, sections: list[str]) -> None:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def long_notes(kb: Path) -> dict[str, list[str]]:
    notes = {
        "ops/a.md": [section(1, s) for s in range(40)],
        "ops/b.md": [section(2, s) for s in range(25)],
        "ref/c.md": [section(3, s) for s in range(12)],
    }
    for rel, sections in notes.items():
        write_note(kb, rel, f"Runbook {rel}", sections)
    return notes


def state(kb: Path, settings: Settings) -> dict[str, Any]:
    """Every chunk's and note's stored vector, and what the searches answer."""
    with open_engine(kb, settings, reindex=False) as engine:
        store: Store = engine.store
        chunks = sorted(
            (str(path), int(index), str(content), bytes(vector))
            for path, index, content, vector in store.conn.execute(
                "SELECT d.path, c.chunk_index, c.content, c.embedding FROM chunks c "
                "JOIN documents d ON d.id = c.document_id"
            )
        )
        notes = sorted(
            (str(path), None if vector is None else bytes(vector))
            for path, vector in store.conn.execute("SELECT path, note_embedding FROM documents")
        )
        hits = {
            query: [(h.path, h.heading, h.score) for h in engine.search(query, 10)]
            for query in QUERIES
        }
    return {"chunks": chunks, "notes": notes, "hits": hits}


def fresh_state(kb: Path, settings: Settings, tmp_path: Path, name: str) -> dict[str, Any]:
    """:func:`state` of a full index of a copy of ``kb``'s notes."""
    copy = tmp_path / f"fresh-{name}"
    shutil.copytree(kb, copy, ignore=shutil.ignore_patterns(".groove"))
    run_indexer(copy, settings, progress=False)
    try:
        return state(copy, settings)
    finally:
        shutil.rmtree(copy)


def reindexed(kb: Path, settings: Settings, **options: Any) -> tuple[IndexReport, list[str]]:
    embedder = RecordingEmbedder()
    report = run_indexer(kb, settings, embedder=embedder, progress=False, **options)
    return report, embedder.passages


def edit_sections(notes: dict[str, list[str]], step: str) -> None:
    """One change a pull request makes to the notes (in memory)."""
    a, b = notes["ops/a.md"], notes["ops/b.md"]
    if step == "edit one section":
        a[17] += " Check the replica lag first."
    elif step == "reorder":
        a[5], a[30] = a[30], a[5]
    elif step == "move to a later note":
        b.insert(3, a.pop(9))
    elif step == "move to an earlier note":
        a.insert(12, b.pop(20))


#: texts each step may embed: (chunks, notes)
EMBEDS = {
    "edit one section": (1, 0),
    "reorder": (0, 0),
    "move to a later note": (0, 0),
    "move to an earlier note": (0, 0),
    "rename": (0, 0),
    "move and rename": (0, 0),
    "edit the opening": (1, 1),
}


@pytest.mark.parametrize("settings", [OFF, EMBEDDED, STATIC], ids=["off", "embedded", "static"])
def test_each_change_embeds_only_what_it_changed_and_equals_a_full_rebuild(
    tmp_path: Path, settings: Settings
) -> None:
    kb = tmp_path / "kb"
    notes = long_notes(kb)
    run_indexer(kb, settings, progress=False)
    for step, (chunks, note_vectors) in EMBEDS.items():
        if step == "rename":
            (kb / "ref/c.md").rename(kb / "ref/renamed.md")
        elif step == "move and rename":  # a new path and new bytes: no file-level match
            notes["new/a.md"] = notes.pop("ops/a.md")
            notes["ops/b.md"].append(notes["new/a.md"].pop(25))
            (kb / "ops/a.md").unlink()
            write_note(kb, "ops/b.md", "Runbook ops/b.md", notes["ops/b.md"])
            write_note(kb, "new/a.md", "Runbook ops/a.md", notes["new/a.md"])
        elif step == "edit the opening":
            notes["ops/b.md"][0] += " Start here."
            write_note(kb, "ops/b.md", "Runbook ops/b.md", notes["ops/b.md"])
        else:
            edit_sections(notes, step)
            for rel in ("ops/a.md", "ops/b.md"):
                write_note(kb, rel, f"Runbook {rel}", notes[rel])
        report, texts = reindexed(kb, settings)
        if settings is not OFF and step.startswith("move"):
            chunks = 1  # the breadcrumb embedded with a chunk names its note: a new text
        assert (report.chunks_embedded, report.notes_embedded) == (chunks, note_vectors), step
        assert len(texts) == chunks + note_vectors, step
        assert state(kb, settings) == fresh_state(kb, settings, tmp_path, step), step


def test_an_edit_of_one_section_of_a_40_section_note_embeds_at_most_2_texts(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    notes = long_notes(kb)
    run_indexer(kb, OFF, progress=False)
    notes["ops/a.md"][22] = notes["ops/a.md"][22].replace("drain", "cordon and drain")
    write_note(kb, "ops/a.md", "Runbook ops/a.md", notes["ops/a.md"])
    report, texts = reindexed(kb, OFF)
    assert len(texts) <= 2 and (report.chunks_embedded, report.chunks_reused) == (1, 39)
    assert (report.changed, report.notes_embedded, report.notes_reused) == (1, 0, 1)


def test_force_embeds_nothing_when_no_embedded_text_changed(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    long_notes(kb)
    run_indexer(kb, OFF, progress=False)
    report, texts = reindexed(kb, OFF, force=True)
    assert texts == [] and report.added == 3 and report.chunks_reused == 77
    assert state(kb, OFF) == fresh_state(kb, OFF, tmp_path, "force")


def test_a_rebuild_for_other_exclude_headings_embeds_nothing_new(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    long_notes(kb)
    run_indexer(kb, OFF, progress=False)
    excluding = Settings(index=replace(OFF.index, exclude_headings=("Step 3 of runbook 1",)))
    report, texts = reindexed(kb, excluding)
    assert any("exclude_headings" in w for w in report.warnings)
    assert texts == [] and report.chunks_reused == 76
    assert state(kb, excluding) == fresh_state(kb, excluding, tmp_path, "excluding")


def test_another_model_finds_no_vector_of_the_first(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    long_notes(kb)
    shared = Settings(index=replace(OFF.index, index_dir=tmp_path / "index"))
    run_indexer(kb, shared, progress=False)
    other = _Named("hash-other", HashEmbedder.dimension)
    report = run_indexer(kb, shared, embedder=other, progress=False)
    assert (report.chunks_embedded, report.chunks_reused) == (77, 0)


def test_the_vectors_a_run_removed_are_not_kept_after_it(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    notes = long_notes(kb)
    run_indexer(kb, OFF, progress=False)
    notes["ops/a.md"][3] += " Changed."
    write_note(kb, "ops/a.md", "Runbook ops/a.md", notes["ops/a.md"])
    run_indexer(kb, OFF, progress=False, force=True)
    store = Store.open(index_dir_for(kb.resolve(), OFF, "hash"), create=False)
    try:
        retired = store.conn.execute("SELECT count(*) FROM retired_vectors").fetchone()[0]
        keyed = store.conn.execute(
            "SELECT count(*) FROM chunks WHERE embed_key IS NOT NULL"
        ).fetchone()[0]
    finally:
        store.close()
    assert (retired, keyed) == (0, 77)


def test_an_index_of_schema_6_is_upgraded_in_place_and_reuses_once_rewritten(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    notes = long_notes(kb)
    run_indexer(kb, OFF, progress=False)
    folder = index_dir_for(kb.resolve(), OFF, "hash")
    store = Store.open(folder, create=False)
    try:  # the layout of version 6: no keys, no retired vectors
        with store.transaction():
            for statement in (
                "DROP INDEX idx_chunks_embed_key",
                "DROP INDEX idx_documents_note_key",
                "DROP TABLE retired_vectors",
                "ALTER TABLE chunks DROP COLUMN embed_key",
                "ALTER TABLE documents DROP COLUMN note_key",
            ):
                store.conn.execute(statement)
            store.set_meta("schema_version", "6")
    finally:
        store.close()
    notes["ops/a.md"][3] += " Changed."
    write_note(kb, "ops/a.md", "Runbook ops/a.md", notes["ops/a.md"])
    # kept (no rebuild): the edited note is embedded whole, as before keys
    report, _ = reindexed(kb, OFF)
    assert (report.unchanged, report.chunks_embedded) == (2, 40)
    notes["ops/a.md"][4] += " Changed too."
    write_note(kb, "ops/a.md", "Runbook ops/a.md", notes["ops/a.md"])
    report, _ = reindexed(kb, OFF)
    assert (report.chunks_embedded, report.chunks_reused) == (1, 39)
    assert state(kb, OFF) == fresh_state(kb, OFF, tmp_path, "upgraded")


def test_the_default_model_updated_by_section_equals_its_full_rebuild(tmp_path: Path) -> None:
    """A few texts through the real model: found vectors are its very bytes."""
    settings = Settings(index=IndexSettings(model="e5-small"))
    kb = tmp_path / "kb"
    sections = [section(1, s) for s in range(3)]
    write_note(kb, "a.md", "Keys", sections)
    write_note(kb, "b.md", "Nodes", [section(2, 0)])
    run_indexer(kb, settings, progress=False)
    sections[2] += " Then page the owner."
    write_note(kb, "a.md", "Keys", [sections[0], sections[2], sections[1]])
    report = run_indexer(kb, settings, progress=False)
    assert (report.chunks_embedded, report.chunks_reused, report.notes_embedded) == (1, 2, 0)
    updated = state(kb, settings)
    fresh = fresh_state(kb, settings, tmp_path, "e5")
    assert updated == fresh
    assert np.frombuffer(fresh["chunks"][0][3], dtype=np.float32).shape == (
        E5SmallEmbedder.dimension,
    )
