"""Incremental indexing through the engine's public functions (hash embedder)."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.errors import GrooveError
from pytest_groove.kb import indexer
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings
from tests.helpers.embedders import RecordingEmbedder

SETTINGS = Settings(index=IndexSettings(model="hash"))


def write(kb: Path, rel: str, text: str) -> None:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_second_run_over_unchanged_kb_embeds_nothing(kb_eval_copy: Path) -> None:
    embedder = RecordingEmbedder()
    first = run_indexer(kb_eval_copy, SETTINGS, embedder=embedder, progress=False)
    assert first.added == 20
    # every chunk, and one note vector per document
    assert first.notes_embedded == 20
    assert len(embedder.passages) == first.chunks_embedded + 20 > 20
    before = len(embedder.passages)
    second = run_indexer(kb_eval_copy, SETTINGS, embedder=embedder, progress=False)
    assert len(embedder.passages) == before
    assert second.unchanged == 20
    assert (second.added, second.changed, second.removed) == (0, 0, 0)


def test_adding_a_section_embeds_only_that_section(kb_eval_copy: Path) -> None:
    embedder = RecordingEmbedder()
    run_indexer(kb_eval_copy, SETTINGS, embedder=embedder, progress=False)
    target = kb_eval_copy / "ref" / "rate-limiting.md"
    target.write_text(
        target.read_text(encoding="utf-8") + "\n\n## Burst credits\n\nA new section about "
        "bursts that is long enough to stay a chunk of its own.\n",
        encoding="utf-8",
    )
    before = len(embedder.passages)
    report = run_indexer(kb_eval_copy, SETTINGS, embedder=embedder, progress=False)
    assert report.changed == 1 and report.unchanged == 19
    store = Store.open(index_dir_for(kb_eval_copy.resolve(), SETTINGS, "hash"), create=False)
    try:
        n_chunks = len(store.stored_chunks("ref/rate-limiting.md"))
    finally:
        store.close()
    # the note's other sections and its note vector (same title and opening) are found
    assert embedder.passages[before:] == [
        "A new section about bursts that is long enough to stay a chunk of its own."
    ]
    assert (report.chunks_embedded, report.chunks_reused) == (1, n_chunks - 1)
    assert (report.notes_embedded, report.notes_reused) == (0, 1)


def test_frontmatter_only_edit_updates_row_without_embedding(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "---\ntitle: One\n---\n## Section\n\n" + "Body text long enough. " * 5)
    embedder = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    before = len(embedder.passages)
    write(
        kb,
        "a.md",
        "---\ntitle: One\ntags: [x]\n---\n## Section\n\n" + "Body text long enough. " * 5,
    )
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    assert report.changed == 1
    assert len(embedder.passages) == before


def test_a_title_edit_re_embeds_the_note_vector_only(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    body = "## Section\n\n" + "Body text long enough. " * 5
    write(kb, "a.md", "---\ntitle: One\n---\n" + body)
    embedder = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    before = len(embedder.passages)
    write(kb, "a.md", "---\ntitle: Two\n---\n" + body)
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    assert (report.changed, report.chunks_embedded, report.notes_embedded) == (1, 0, 1)
    assert embedder.passages[before:] == ["Two\n\n" + ("Body text long enough. " * 5).strip()]
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        stored = engine.store.note_vectors()
    assert len(stored) == 1
    expected = HashEmbedder().embed_passages(embedder.passages[before:])[0]
    assert np.array_equal(next(iter(stored.values())), expected)


def test_deleted_file_is_pruned_and_rename_keeps_embeddings(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    write(kb, "b.md", "## B\n\n" + "beta words " * 10)
    embedder = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    before = len(embedder.passages)
    (kb / "a.md").rename(kb / "renamed.md")
    (kb / "b.md").unlink()
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    assert report.renamed == 1 and report.removed == 1
    assert len(embedder.passages) == before
    with open_engine(kb, SETTINGS, embedder=embedder, reindex=False) as engine:
        paths = {c.path for c in engine.iter_chunk_texts()}
    assert paths == {"renamed.md"}


def test_no_file_s_bytes_are_held_once_it_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the writer's memory peaks at the end of the files: a KB's bytes must not add to it
    kb = tmp_path / "kb"
    for name in ("a", "b", "c"):
        write(kb, f"{name}.md", f"## {name}\n\n" + f"{name} words " * 10)
    held: list[int] = []
    prune = indexer._prune

    def recording(store: Store, scan: indexer._Scan, *args: object) -> None:
        held.extend(len(item.data) for item in scan.files)
        prune(store, scan, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer, "_prune", recording)
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.added == 3 and held == [0, 0, 0]


def test_force_rebuilds_everything(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    embedder = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    before = len(embedder.passages)
    report = run_indexer(kb, SETTINGS, embedder=embedder, force=True, progress=False)
    # rebuilt from the KB, with the vectors of the texts it embedded before
    assert report.added == 1 and (report.chunks_embedded, report.chunks_reused) == (0, 1)
    assert len(embedder.passages) == before


def test_groove_dir_is_never_indexed(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    run_indexer(kb, SETTINGS, progress=False)
    write(kb, ".groove/notes.md", "## Hidden\n\n" + "should never be indexed " * 5)
    run_indexer(kb, SETTINGS, progress=False)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert {c.path for c in engine.iter_chunk_texts()} == {"a.md"}


def test_undecodable_file_is_skipped_and_loses_its_old_rows(tmp_path: Path) -> None:
    # a fresh index of this tree would not hold it: neither does the cached one
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    run_indexer(kb, SETTINGS, progress=False)
    (kb / "a.md").write_bytes(b"## A\n\n\xff\xfe broken bytes")
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.skipped == 1 and report.removed == 1
    assert any("a.md" in w for w in report.warnings)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.corpus_snapshot().documents == 0


class OtherModel(RecordingEmbedder):
    """The hash embedder under another model's name."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "other-model"


def _indexed_in_a_shared_folder(tmp_path: Path, *names: str) -> tuple[Path, Settings]:
    """A KB of ``names`` indexed with ``hash`` into one ``--index-dir`` folder."""
    kb = tmp_path / "kb"
    for name in names:
        write(kb, f"{name}.md", f"## {name.upper()}\n\n" + f"{name} words " * 10)
    settings = replace(SETTINGS, index=replace(SETTINGS.index, index_dir=tmp_path / "index"))
    run_indexer(kb, settings, progress=False)
    return kb, settings


def test_model_mismatch_is_one_clear_error(tmp_path: Path) -> None:
    kb, settings = _indexed_in_a_shared_folder(tmp_path, "alpha")
    with pytest.raises(GrooveError, match=r"embedding model mismatch.*hash.*other-model"):
        open_engine(kb, settings, embedder=OtherModel(), reindex=False)


def test_an_index_of_another_model_is_rebuilt_by_the_indexer(tmp_path: Path) -> None:
    """A CI cache of one ``--index-dir`` restored after the model changed: the index is a
    cache, so the indexer builds the new model's (under pytest there is no --force)."""
    kb, settings = _indexed_in_a_shared_folder(tmp_path, "alpha", "beta")
    other = OtherModel()
    report = run_indexer(kb, settings, embedder=other, progress=False)
    (warning,) = report.warnings
    assert "was built with 'hash'" in warning and "rebuilt it for 'other-model'" in warning
    assert len(other.passages) >= 2  # every chunk again, by the new model
    with open_engine(kb, settings, embedder=OtherModel(), reindex=False) as engine:
        assert engine.corpus_snapshot().chunks == 2
    # the next run finds its own model's index: nothing to rebuild
    again = OtherModel()
    assert run_indexer(kb, settings, embedder=again, progress=False).warnings == []
    assert len(again.passages) == 0


def test_other_exclude_headings_rebuild_the_index_as_a_fresh_build_would_be(
    tmp_path: Path,
) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## Keep\n\n" + "alpha words " * 10 + "\n\n## Drafts\n\n" + "beta " * 20)
    run_indexer(kb, SETTINGS, progress=False)
    excluding = replace(SETTINGS, index=replace(SETTINGS.index, exclude_headings=("Drafts",)))
    report = run_indexer(kb, excluding, progress=False)
    assert any("exclude_headings" in w and "rebuilt" in w for w in report.warnings)
    with open_engine(kb, excluding, reindex=False) as cached:
        cached_corpus = cached.corpus_snapshot()
    fresh = replace(excluding, index=replace(excluding.index, index_dir=tmp_path / "fresh-index"))
    run_indexer(kb, fresh, progress=False)
    with open_engine(kb, fresh, reindex=False) as built:
        assert built.corpus_snapshot() == cached_corpus
    assert cached_corpus.chunks == 1


def test_missing_index_without_reindex_is_clear(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\nbody")
    with pytest.raises(GrooveError, match="No index found at"):
        open_engine(kb, SETTINGS, reindex=False)


def test_context_mode_switch_needs_force(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "guide.md", "---\ntitle: Guide\n---\n## Setup\n\n" + "install the tools " * 5)
    run_indexer(kb, SETTINGS, progress=False)
    ctx = replace(SETTINGS, index=replace(SETTINGS.index, contextual=True))
    report = run_indexer(kb, ctx, progress=False)
    assert any("--force" in w for w in report.warnings)
    with open_engine(kb, ctx, reindex=False) as engine:
        assert engine.context_mode == "off"
        assert engine.context_chunk_count() == 0
    run_indexer(kb, ctx, force=True, progress=False)
    with open_engine(kb, ctx, reindex=False) as engine:
        assert engine.context_mode == "static"
        texts = list(engine.iter_chunk_texts())
        assert texts[0].context == "Guide > Setup"


def test_concurrent_indexers_serialise(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for i in range(6):
        write(kb, f"n{i}.md", f"## Note {i}\n\n" + f"content number {i} " * 10)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            run_indexer(kb, SETTINGS, progress=False)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        snap = engine.corpus_snapshot()
    assert (snap.documents, snap.chunks) == (6, 6)


def test_corpus_digest_moves_with_chunk_text_only(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    run_indexer(kb, SETTINGS, progress=False)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        first = engine.corpus_snapshot()
    write(kb, "a.md", "## A\n\n" + "alpha wordz " * 10)
    with open_engine(kb, SETTINGS) as engine:
        second = engine.corpus_snapshot()
    assert (first.documents, first.chunks) == (second.documents, second.chunks)
    assert first.digest != second.digest
    assert len(first.digest) == 64


def test_vector_cache_file_is_reused(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    with open_engine(kb, SETTINGS) as engine:
        directory = engine.store.path.parent
        hits = engine.search("alpha", 3)
    caches = list(directory.glob("vectors-*.faiss"))
    assert len(caches) == 1
    stamp = os.stat(caches[0]).st_mtime_ns
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        again = engine.search("alpha", 3)
    assert os.stat(caches[0]).st_mtime_ns == stamp
    assert [h.path for h in hits] == [h.path for h in again]
    assert np.isclose(hits[0].score, again[0].score)


def test_recreated_database_never_reads_an_old_vector_cache(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for i in range(3):
        write(kb, f"z{i}.md", f"## Zebra {i}\n\n" + f"zebra stripes number {i} " * 8)
    with open_engine(kb, SETTINGS) as engine:
        directory = engine.store.path.parent
        engine.search("zebra", 3)
    for f in directory.glob("index.db*"):
        f.unlink()
    for i in range(3):
        write(kb, f"z{i}.md", f"## Penguin {i}\n\n" + f"penguin colony size {i} " * 8)
    with open_engine(kb, SETTINGS) as engine:
        ids, stored = engine.store.all_vectors()
        # the vector leg must hold the embeddings of this database, not a stale cache's
        for cid, row in zip(ids, stored, strict=True):
            assert np.array_equal(engine.vectors.vector(int(cid)), row)


def test_unlistable_folder_keeps_its_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    write(kb, "ops/a.md", "## A\n\n" + "alpha words " * 10)
    write(kb, "top.md", "## T\n\n" + "top words " * 10)
    run_indexer(kb, SETTINGS, progress=False)
    import pytest_groove.kb.source.walk as walk

    real_open_folder = walk.open_folder

    def refuse_ops(root_fd: int, root: Path, rel: str) -> int:
        if rel.rstrip("/").endswith("ops"):
            raise PermissionError(13, "Permission denied")
        return real_open_folder(root_fd, root, rel)

    monkeypatch.setattr(walk, "open_folder", refuse_ops)
    report = run_indexer(kb, SETTINGS, progress=False)
    monkeypatch.undo()
    assert report.removed == 0
    assert any("ops" in w for w in report.warnings)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert {c.path for c in engine.iter_chunk_texts()} == {"ops/a.md", "top.md"}


def test_index_with_another_schema_version_is_rebuilt_by_the_indexer(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", "## A\n\n" + "alpha words " * 10)
    run_indexer(kb, SETTINGS, progress=False)
    directory = index_dir_for(kb.resolve(), SETTINGS, "hash")
    store = Store.open(directory, create=False)
    with store.transaction():
        store.set_meta("schema_version", "999")
    store.close()
    with pytest.raises(GrooveError, match="schema 999"):
        open_engine(kb, SETTINGS, reindex=False)
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.added == 1
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.corpus_snapshot().documents == 1


def test_renames_with_duplicate_contents_pair_in_path_order(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    body = "## Same\n\n" + "identical words " * 10
    write(kb, "A.md", body)
    write(kb, "B.md", body)
    embedder = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        ids_before = {r.path: cid for cid, r in engine.store.chunk_rows([1, 2]).items()}
    (kb / "A.md").rename(kb / "C.md")
    (kb / "B.md").rename(kb / "D.md")
    before = len(embedder.passages)
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    assert report.renamed == 2 and len(embedder.passages) == before
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        ids_after = {r.path: cid for cid, r in engine.store.chunk_rows([1, 2]).items()}
    assert ids_after == {"C.md": ids_before["A.md"], "D.md": ids_before["B.md"]}
