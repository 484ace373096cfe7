"""The faiss caches are kept current at index time, updated rather than rebuilt.

Every check compares the updated cache with the index a full build makes from the
store (same ids, same vectors bit for bit, same order) and the search results.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.kb.derived import note_index
from pytest_groove.kb.derived.note_index import NoteCarryingIndex, kept_note_rows
from pytest_groove.kb.derived.vector_cache import cache_path
from pytest_groove.kb.derived.vectors import VectorIndex
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from tests.helpers.kb_files import TOPIC_WORDS as WORDS

SETTINGS = Settings(index=IndexSettings(model="hash"))


def write_kb(kb: Path, docs: int = 12) -> None:
    kb.mkdir(exist_ok=True)
    for d in range(docs):
        sections = "\n\n".join(
            f"## Part {s}\n\n" + " ".join(WORDS[(d * 3 + s + k) % len(WORDS)] for k in range(30))
            for s in range(3)
        )
        (kb / f"note{d:02}.md").write_text(f"# Note {d}\n\nAbout {WORDS[d % 12]}.\n\n{sections}\n")


def state(kb: Path, settings: Settings, *, notes: bool) -> tuple[bytes, bytes]:
    """(id map bytes, vector bytes) of the current cache, and the same of a full build."""
    store = Store.open(index_dir_for(kb, settings, "hash"), create=False)
    try:
        with store.read_snapshot():
            centre = settings.search.vector_centring
            if notes:
                # the flat note-carrying index is the chunk index and its rows in index.db
                plain = VectorIndex.load_for(store, store.path.parent, centre=centre)
                kept = kept_note_rows(store, centre=centre, dim=plain.dimension)
                assert kept is not None and kept[0] == store.generation, (
                    "the indexer kept no rows for the index's state"
                )
                derived = NoteCarryingIndex(plain, kept[1])
                got = derived._ids, derived.rows().tobytes()
            cached = cache_path(store, store.path.parent, centre=centre, kind="flat", notes=False)
            assert cached.is_file(), "the indexer wrote no cache for the index's state"
            index: Any = faiss.read_index(str(cached))
            ids, matrix = store.all_vectors()
            if notes:
                from pytest_groove.kb.derived.vectors import NoteVectors

                groups = None
                if centre:
                    from pytest_groove.text.scripts import script_group

                    openings = store.chunk_openings()
                    groups = [script_group(openings.get(int(c), "")) for c in ids]
                full = VectorIndex.build_with_notes(
                    ids, matrix, int(matrix.shape[1]), groups, NoteVectors.of(store)
                )
            else:
                full = VectorIndex.build(ids, matrix, int(matrix.shape[1]), None)
        assert faiss.vector_to_array(index.id_map).tolist() == ids.tolist()
        built = full._index
        if notes:
            assert got[0].tolist() == ids.tolist()
            return got[1], rows_of(built)
        return rows_of(index), rows_of(built)
    finally:
        store.close()


def rows_of(index: Any) -> bytes:
    flat: Any = faiss.downcast_index(index.index)
    return np.asarray(faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d)).tobytes()


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """A KB of twelve notes, indexed once with the hash model."""
    kb = tmp_path / "kb"
    write_kb(kb)
    run_indexer(kb, SETTINGS)
    return kb


def searches(kb: Path, settings: Settings) -> list[list[tuple[str, str | None]]]:
    with open_engine(kb, settings, reindex=False) as engine:
        return [
            [(h.path, h.heading) for h in engine.search(q, 10)]
            for q in ("cache replica", "retry budget window", "quorum lease")
        ]


@pytest.mark.parametrize("notes", [True, False])
def test_an_edit_updates_the_caches_to_what_a_full_build_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notes: bool
) -> None:
    settings = replace(SETTINGS, search=SearchSettings(note_order=notes))
    kb = tmp_path / "kb"
    write_kb(kb)
    run_indexer(kb, settings)
    got, want = state(kb, settings, notes=notes)
    assert got == want
    with (kb / "note03.md").open("a") as handle:
        handle.write("\nOne more line about shards.\n")
    (kb / "note05.md").unlink()
    (kb / "new.md").write_text("# New\n\n## Fresh\n\nreplica quorum lease window\n")
    text = (kb / "note07.md").read_text()
    (kb / "note07.md").write_text(text.replace("# Note 7", "# Note seven", 1))  # title only

    def no_full_read(self: Store) -> object:
        raise AssertionError("the cache was rebuilt from every stored vector")

    with monkeypatch.context() as patch:
        patch.setattr(Store, "all_vectors", no_full_read)
        patch.setattr(note_index, "build_rows", no_full_read)
        report = run_indexer(kb, settings)
    assert report.changed == 2 and report.added == 1 and report.removed == 1
    got, want = state(kb, settings, notes=notes)
    assert got == want
    if notes:
        got, want = state(kb, settings, notes=False)
        assert got == want
    updated = searches(kb, settings)
    for old in kb.joinpath(".groove").rglob("*vectors*"):
        old.unlink()
    assert searches(kb, settings) == updated  # rebuilt in full by the engine


def test_a_no_op_index_rewrites_no_cache(indexed: Path) -> None:
    kb = indexed
    caches = sorted(kb.joinpath(".groove").rglob("*.faiss"))
    stamps = [p.stat().st_mtime_ns for p in caches]
    run_indexer(kb, SETTINGS)
    assert sorted(kb.joinpath(".groove").rglob("*.faiss")) == caches
    assert [p.stat().st_mtime_ns for p in caches] == stamps


def test_a_centred_index_is_built_in_full(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_kb(kb, docs=6)
    for d in range(6):
        text = f"# 日本語 {d}\n\n## 節\n\nバックアップの設定と復元の手順 {d}\n"
        (kb / f"ja{d}.md").write_text(text)
    run_indexer(kb, SETTINGS)
    assert list(kb.joinpath(".groove").rglob("vectors-*.npz"))  # means: centred
    with (kb / "ja2.md").open("a") as handle:
        handle.write("\n追加の行\n")
    run_indexer(kb, SETTINGS)
    got, want = state(kb, SETTINGS, notes=True)
    assert got == want


def test_note_rows_read_only_the_note_vectors_written_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = replace(SETTINGS, search=SearchSettings(note_order=True))
    kb = tmp_path / "kb"
    write_kb(kb)
    (kb / "meta.md").write_text("---\ntitle: Leases\n---\n\n## Body\n\nquorum lease window\n")
    run_indexer(kb, settings)
    read: list[list[int] | None] = []
    real = Store.note_matrix

    def counted(self: Store, documents: list[int] | None = None) -> object:
        read.append(None if documents is None else list(documents))
        return real(self, documents)

    # the title only (the chunks stay as stored, the note vector is embedded anew),
    # one body edit, one new note and one deleted
    (kb / "meta.md").write_text(
        "---\ntitle: Quorum leases\n---\n\n## Body\n\nquorum lease window\n"
    )
    with (kb / "note04.md").open("a") as handle:
        handle.write("\nAnother line about tokens.\n")
    (kb / "fresh.md").write_text("# Fresh\n\nreplica shard budget\n")
    (kb / "note05.md").unlink()
    with monkeypatch.context() as patch:
        patch.setattr(Store, "note_matrix", counted)
        run_indexer(kb, settings)
    assert read and all(docs is not None and len(docs) <= 4 for docs in read)
    got, want = state(kb, settings, notes=True)
    assert got == want
    store = Store.open(index_dir_for(kb, settings, "hash"), create=False)
    try:
        with store.read_snapshot():
            kept = kept_note_rows(store, centre=True, dim=256)
            assert kept is not None  # every note vector kept, the deleted note's gone
            assert kept[1].note_docs.tolist() == store.note_matrix()[0].tolist()
    finally:
        store.close()


def test_notes_written_since_is_unknown_once_another_connection_wrote(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write_kb(kb, docs=3)
    run_indexer(kb, SETTINGS)
    folder = index_dir_for(kb, SETTINGS, "hash")
    first, second = Store.open(folder, create=False), Store.open(folder, create=False)
    try:
        start = first.generation
        assert first.notes_written_since(start) is None  # it wrote nothing yet
        with first.transaction():
            dim = int(first.get_meta("embedding_dim") or "0")
            first._set_note_vector(1, np.ones(dim, np.float32))
            first._bump_generation()
        assert first.notes_written_since(start) == {1}
        assert first.notes_written_since(start + 1) is None  # not where its writes began
        with second.transaction():
            second._bump_generation()
        assert first.notes_written_since(start) is None  # the index moved on without it
        with first.transaction():
            first._bump_generation()
        assert first.notes_written_since(start) is None  # and that is remembered
    finally:
        first.close()
        second.close()


def _edit(kb: Path, line: str) -> None:
    with (kb / "note03.md").open("a") as handle:
        handle.write(f"\n{line}\n")
    (kb / "note06.md").unlink(missing_ok=True)


def _assert_cache_is_the_full_builds(kb: Path) -> None:
    """The current flat cache file holds faiss's serialisation of a full build, byte for
    byte."""
    store = Store.open(index_dir_for(kb, SETTINGS, "hash"), create=False)
    try:
        with store.read_snapshot():
            cached = cache_path(store, store.path.parent, centre=True, kind="flat", notes=False)
            ids, matrix = store.all_vectors()
            full = VectorIndex.build(ids, matrix, int(matrix.shape[1]), None)
        assert cached.read_bytes() == bytes(faiss.serialize_index(full._index))
    finally:
        store.close()


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_the_updated_cache_file_is_the_full_builds_byte_for_byte(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool
) -> None:
    kb = indexed
    if not kernel_copy:  # another file system, an old kernel: copied through the process
        monkeypatch.delattr("os.copy_file_range", raising=False)
    _edit(kb, "One more line about shards.")
    run_indexer(kb, SETTINGS)
    _assert_cache_is_the_full_builds(kb)


def test_a_cache_of_an_unknown_layout_is_built_in_full(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = indexed
    for cache in kb.joinpath(".groove").rglob("vectors-*.faiss"):
        with cache.open("ab") as handle:
            handle.write(b"\0" * 8)  # a layout this faiss version does not write
    built: list[int] = []
    real = Store.all_vectors

    def counted(self: Store) -> object:
        built.append(1)
        return real(self)

    _edit(kb, "A line about queues.")
    with monkeypatch.context() as patch:
        patch.setattr(Store, "all_vectors", counted)
        run_indexer(kb, SETTINGS)
    assert built
    _assert_cache_is_the_full_builds(kb)


def test_a_folder_that_takes_no_file_gets_the_same_index_in_memory(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = indexed
    _edit(kb, "A line about tokens.")
    from pytest_groove.kb.derived import vectors

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(vectors, "write_sealed", full_disk)
        patch.setattr(Store, "all_vectors", lambda self: pytest.fail("built in full"))
        run_indexer(kb, SETTINGS)
        got = searches(kb, SETTINGS)  # the older cache, updated in memory
    store = Store.open(index_dir_for(kb, SETTINGS, "hash"), create=False)
    try:
        current = cache_path(store, store.path.parent, centre=True, kind="flat", notes=False)
        assert not current.is_file()
    finally:
        store.close()
    for old in kb.joinpath(".groove").rglob("*vectors*"):
        old.unlink()
    assert searches(kb, SETTINGS) == got  # what a full build answers


def test_an_update_that_fails_midway_is_built_in_full(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = indexed
    _edit(kb, "A line about windows.")
    from pytest_groove.kb.derived import vector_cache

    def cut_short(*args: object) -> None:
        raise OSError("the older vector cache ended 4096 bytes early")

    def unreadable(self: object) -> None:
        raise RuntimeError("Error in faiss::read_index: unexpected end of file")

    with monkeypatch.context() as patch:
        patch.setattr(vector_cache, "_copy_range", cut_short)
        patch.setattr(vector_cache.Update, "index", unreadable)
        run_indexer(kb, SETTINGS)  # no traceback: the cache is built from the store
    _assert_cache_is_the_full_builds(kb)
    assert not list(kb.joinpath(".groove").rglob("*.tmp"))  # no half-written file left


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["append", "delete", "add", "retitle", "duplicate"]),
            st.integers(min_value=0, max_value=11),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_edits_leave_the_caches_a_full_build_would_make(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int]]
) -> None:
    settings_ = replace(SETTINGS, search=SearchSettings(note_order=True))
    kb = tmp_path_factory.mktemp("kb")
    write_kb(kb, docs=8)
    run_indexer(kb, settings_)
    for number, (step, which) in enumerate(steps):
        notes = sorted(kb.glob("*.md"))
        target = notes[which % len(notes)]
        if step == "append":
            with target.open("a") as handle:
                handle.write(f"\nOne more line {number} about {WORDS[which]}.\n")
        elif step == "delete" and len(notes) > 1:
            target.unlink()
        elif step == "add":
            (kb / f"new{number}.md").write_text(f"# New {number}\n\n{WORDS[which]} quorum\n")
        elif step == "retitle":
            text = target.read_text()
            target.write_text(text.replace("# ", f"# Renamed {number} ", 1))
        else:  # a second copy of a note: exact ties between its chunks and the original's
            (kb / f"copy{number}.md").write_text(target.read_text())
        run_indexer(kb, settings_)
        _assert_cache_is_the_full_builds(kb)
        rows_got, rows_want = state(kb, settings_, notes=True)
        assert rows_got == rows_want
