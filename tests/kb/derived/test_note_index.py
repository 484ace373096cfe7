"""The flat note-carrying index answered from the chunk index: the same results as a
second faiss index of the note-carrying rows, with one copy of the vectors."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO_ROOT
from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.kb.derived import note_index
from pytest_groove.kb.derived.note_index import (
    NoteCarryingIndex,
    NoteRows,
    keeps_note_rows,
    kept_note_rows,
)
from pytest_groove.kb.derived.vectors import NoteVectors, VectorIndex
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from pytest_groove.text.scripts import script_group

CORPORA = REPO_ROOT / "tests" / "corpora"
SETTINGS = Settings(index=IndexSettings(model="hash"))


def golden_queries(name: str) -> list[str]:
    raw = yaml.safe_load((CORPORA / f"{name}-golden.yml").read_text(encoding="utf-8"))
    entries = raw["queries"] if isinstance(raw, dict) else raw
    return [str(entry["query"]) for entry in entries]


def second_index(engine: Engine) -> VectorIndex:
    """The note-carrying index as its own faiss index, built in full from the store."""
    store = engine.store
    with store.read_snapshot():
        ids, matrix = store.all_vectors()
        groups = None
        if engine.settings.search.vector_centring:
            openings = store.chunk_openings()
            groups = [script_group(openings.get(int(c), "")) for c in ids]
        return VectorIndex.build_with_notes(
            ids, matrix, int(matrix.shape[1]), groups, NoteVectors.of(store)
        )


@pytest.mark.parametrize("corpus", ["kb-eval", "kb-bilingual"])
@pytest.mark.parametrize("centring", [True, False], ids=["centring", "no-centring"])
def test_the_same_results_as_a_second_index(tmp_path: Path, corpus: str, centring: bool) -> None:
    kb = tmp_path / corpus
    shutil.copytree(CORPORA / corpus, kb, ignore=shutil.ignore_patterns(".groove*"))
    settings = replace(SETTINGS, search=SearchSettings(vector_centring=centring))
    with open_engine(kb, settings) as engine:
        derived = engine.note_vectors
        assert isinstance(derived, NoteCarryingIndex)
        full = second_index(engine)
        assert derived.means.keys() == full.means.keys()
        assert bool(full.means) == centring  # both corpora hold two script groups
        assert derived.size == full.size
        # the rows themselves, bit for bit
        rows = derived.rows()
        assert all(
            np.array_equal(rows[i], full.vector(int(cid))) for i, cid in enumerate(derived._ids)
        )
        for text in golden_queries(corpus):
            query = engine.embedder.embed_queries([text])[0]
            for n in (1, 5, 50, derived.size + 3):
                want = full.search(full.prepare_query(query, text), n)
                assert derived.search(derived.prepare_query(query, text), n) == want, text


def test_the_engine_maps_one_vector_index_and_the_rows_live_in_index_db(tmp_path: Path) -> None:
    kb = tmp_path / "kb-eval"
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    with open_engine(kb, SETTINGS) as engine:
        store = engine.store
        directory = store.path.parent
        assert engine.note_vectors is not None and engine.note_vectors.size > 0
        with store.read_snapshot():
            kept = kept_note_rows(store, centre=True, dim=engine.vectors.dimension)
            assert kept is not None and kept[0] == store.generation
            assert keeps_note_rows(store, centre=True)
            assert not keeps_note_rows(store, centre=False)  # only the mode searched
    assert len(list(directory.glob("*.faiss"))) == 1
    assert not list(directory.glob("notevectors-*"))  # no file of their own


def no_build(*_: object) -> NoteRows:
    raise AssertionError("the rows were built, not read from index.db")


def test_a_search_reads_the_rows_the_indexer_kept(tmp_path: Path) -> None:
    kb = tmp_path / "kb-eval"
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    with open_engine(kb, SETTINGS) as engine:
        want = engine.search("rollback a release", 5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(note_index, "_LAST", None)  # nothing this process made
        patch.setattr(note_index, "build_rows", no_build)
        patch.setattr(note_index, "updated_rows", no_build)
        with open_engine(kb, SETTINGS, reindex=False) as engine:
            assert engine.search("rollback a release", 5) == want


def test_an_index_without_kept_rows_is_searched_alike_and_the_indexer_keeps_them(
    tmp_path: Path,
) -> None:
    """An index an earlier version wrote has no ``note_rows`` table: a search makes the
    rows in memory (and writes nothing), the next indexer keeps them."""
    kb = tmp_path / "kb-eval"
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    with open_engine(kb, SETTINGS) as engine:
        want = engine.search("rollback a release", 5)
        engine.store.conn.execute("DROP TABLE note_rows")
    note_index._LAST = None
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.search("rollback a release", 5) == want
        with engine.store.read_snapshot():
            assert not keeps_note_rows(engine.store, centre=True)
    note_index._LAST = None
    with open_engine(kb, SETTINGS) as engine:
        assert engine.search("rollback a release", 5) == want
        with engine.store.read_snapshot():
            assert keeps_note_rows(engine.store, centre=True)


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE note_rows SET ids = substr(ids, 1, length(ids) - 8)",  # one id short
        "UPDATE note_rows SET scale = substr(scale, 1, length(scale) - 1)",  # not whole
        "UPDATE note_rows SET notes = substr(notes, 1, length(notes) - 4)",  # another shape
    ],
)
def test_kept_rows_that_do_not_add_up_are_made_again(tmp_path: Path, change: str) -> None:
    kb = tmp_path / "kb-eval"
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    with open_engine(kb, SETTINGS) as engine:
        want = engine.search("rollback a release", 5)
        store, dim = engine.store, engine.vectors.dimension
        with store.read_snapshot():
            kept = kept_note_rows(store, centre=True, dim=dim)
            assert kept is not None
            assert kept_note_rows(store, centre=True, dim=dim * 2) is None  # another model's
        store.conn.execute(change)
        with store.read_snapshot():
            assert kept_note_rows(store, centre=True, dim=dim) is None
    note_index._LAST = None
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.search("rollback a release", 5) == want


def test_an_update_gives_the_numbers_a_full_build_gives(tmp_path: Path) -> None:
    kb = tmp_path / "kb-eval"
    shutil.copytree(CORPORA / "kb-eval", kb, ignore=shutil.ignore_patterns(".groove*"))
    settings = replace(SETTINGS, search=SearchSettings(vector_centring=False))
    with open_engine(kb, settings):
        pass
    notes = sorted(p for p in kb.rglob("*.md") if ".groove" not in p.parts)
    with notes[0].open("a", encoding="utf-8") as handle:
        handle.write("\nOne more line about rollbacks.\n")
    text = notes[1].read_text(encoding="utf-8")
    assert text.startswith("---\ntitle: ")
    # a new title, the same chunks: only the note vector (so its rows' norms) changes
    notes[1].write_text(text.replace("title: ", "title: Another ", 1), encoding="utf-8")
    notes[2].unlink()

    def no_full_build(*_: object) -> NoteRows:
        raise AssertionError("the rows were built in full")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(note_index, "build_rows", no_full_build)
        with open_engine(kb, settings) as engine:
            derived = engine.note_vectors
            assert isinstance(derived, NoteCarryingIndex)
            updated = derived._rows
            assert engine.index_report is not None
            assert (engine.index_report.changed, engine.index_report.removed) == (2, 1)
            assert engine.index_report.chunks_embedded < 10  # one note's chunks
    with open_engine(kb, settings, reindex=False) as engine, engine.store.read_snapshot():
        full = note_index.build_rows(engine.store, engine.vectors)
    for name in ("ids", "docs", "scale", "inv_norm", "note_docs", "notes"):
        assert np.array_equal(getattr(updated, name), getattr(full, name)), name


@pytest.mark.parametrize("centred", [True, False])
def test_the_row_numbers_are_the_norms_numpy_gives_bit_for_bit(centred: bool) -> None:
    # the numbers are worked out in place, a block at a time; a search compares them
    # with rows made the long way, so they must be the same floats
    rng = np.random.default_rng(7)
    chunks = rng.standard_normal((9000, 48)).astype(np.float32)
    chunks[::97] = 0.0  # zero rows keep a norm of 1
    notes = rng.standard_normal((40, 48)).astype(np.float32)
    for codes in (rng.integers(0, 40, 9000), np.where(rng.random(9000) < 0.2, 40, 7)):
        scale, inv_norm = note_index._row_numbers(chunks, codes, notes, centred)
        plain = chunks if centred else chunks / _norms_or_one(chunks)[:, None]
        rows = plain + np.vstack([notes, np.zeros((1, 48), np.float32)])[codes]
        expected_scale = 1.0 if centred else 1.0 / _norms_or_one(chunks)
        assert np.array_equal(scale, np.broadcast_to(expected_scale, scale.shape))
        assert inv_norm.tobytes() == (1.0 / _norms_or_one(rows)).astype(np.float32).tobytes()


def _norms_or_one(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1)
    norms[norms == 0] = 1.0
    return norms
