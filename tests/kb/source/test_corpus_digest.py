"""The corpus digest of per-document digests (version 2): defined once, kept per document,
upgraded in place, and never compared with a version-1 digest."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import apsw
import pytest

from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.evaluation.finish import finish_evaluation
from pytest_groove.evaluation.gate.compare import corpus_change
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from pytest_groove.evaluation.runs.record import corpus_from_json, corpus_to_json, evaluate_query
from pytest_groove.kb.source.corpus_digest import (
    DIGEST_VERSION,
    chunk_digest,
    corpus_digest,
    document_digest,
)
from pytest_groove.kb.source.disk_view import read_kb_view
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.kb.store.database import DB_FILE_NAME, SCHEMA_VERSION, Store
from pytest_groove.kb.store.kept_snapshot import CORPUS_SNAPSHOT_META
from pytest_groove.search.hits import SearchHit
from pytest_groove.settings.config import IndexSettings, Settings
from tests.helpers.eval_factories import begun
from tests.helpers.kb_files import write_notes

SETTINGS = Settings(index=IndexSettings(model="hash"))
STATIC = Settings(index=IndexSettings(model="hash", contextual=True, contextual_full_text=True))

NOTES = {
    "a.md": "# Alpha\n\n## Retry\n\nretry budget for the lease\n\n## Lease\n\nthe lease holder\n",
    "b/c.md": "# Gamma\n\nno heading at all, only text about gamma rays\n",
    "ü.md": "# Umlaut\n\n## Ä\n\nnon-ASCII paths sort by code point\n",
    "z.md": "---\ntitle: Zed\n---\n\n## Zed\n\nthe last one\n",
}


def make_kb(root: Path) -> Path:
    return write_notes(root / "kb", NOTES)


def snapshot(kb: Path, settings: Settings = SETTINGS) -> CorpusSnapshot:
    with open_engine(kb, settings) as engine, engine.read_snapshot():
        return engine.corpus_snapshot()


def every_chunk(kb: Path, settings: Settings = SETTINGS) -> tuple[str, int]:
    """The digest's definition applied to every stored chunk."""
    with open_engine(kb, settings, reindex=False) as engine, engine.read_snapshot():
        return chunk_digest(engine.store.iter_chunk_texts())


def fresh_build(kb: Path, root: Path, settings: Settings = SETTINGS) -> CorpusSnapshot:
    """The snapshot of the same files indexed from nothing."""
    copy = root / "fresh"
    shutil.copytree(kb, copy, ignore=shutil.ignore_patterns(".groove"))
    return replace(snapshot(copy, settings))


EMBEDDED = Settings(index=IndexSettings(model="hash", contextual=True, contextual_full_text=False))


@pytest.mark.parametrize(
    "settings", [SETTINGS, STATIC, EMBEDDED], ids=["plain", "static-context", "embedded-context"]
)
def test_the_engine_and_the_files_read_directly_agree(tmp_path: Path, settings: Settings) -> None:
    kb = make_kb(tmp_path)
    indexed = snapshot(kb, settings)
    direct = read_kb_view(kb, settings.index).corpus
    assert indexed.digest_version == direct.digest_version == DIGEST_VERSION
    # one digest for one KB whichever searcher answered: a built-in run and a custom
    # retriever's run on unchanged files never say the corpus changed between them
    assert indexed == direct
    assert (indexed.digest, indexed.chunks) == every_chunk(kb, settings)


def test_edits_renames_and_deletions_give_a_full_builds_digest(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    seen = {snapshot(kb).digest}
    steps = [
        lambda: (kb / "a.md").open("a", encoding="utf-8").write("\none more line\n"),
        lambda: (kb / "b" / "c.md").rename(kb / "b" / "moved.md"),
        lambda: (kb / "z.md").write_text("---\ntitle: Zed 2\n---\n\n## Zed\n\nthe last one\n"),
        lambda: (kb / "ü.md").unlink(),
    ]
    for number, step in enumerate(steps):
        step()
        now = snapshot(kb)
        assert now == fresh_build(kb, tmp_path / str(number))
        assert (now.digest, now.chunks) == every_chunk(kb)
        seen.add(now.digest)
    # a frontmatter-only edit (z.md's title) keeps the chunks, so the digest
    assert len(seen) == len(steps)


def drop_document_digests(index_dir: Path) -> None:
    """Make the index what a schema-5 index looked like: no ``chunk_digest`` column."""
    conn = apsw.Connection(str(index_dir / DB_FILE_NAME))
    conn.execute("DROP INDEX idx_documents_digest")
    conn.execute("ALTER TABLE documents DROP COLUMN chunk_digest")
    conn.execute("UPDATE index_meta SET value='5' WHERE key='schema_version'")
    conn.close()


def meta(index_dir: Path, key: str) -> str | None:
    conn = apsw.Connection(str(index_dir / DB_FILE_NAME))
    try:
        row = conn.execute("SELECT value FROM index_meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def test_a_schema_5_index_is_upgraded_in_place_and_read_as_it_is(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    before = snapshot(kb)
    index_dir = index_dir_for(kb, SETTINGS, "hash")
    generation = meta(index_dir, "generation")
    drop_document_digests(index_dir)
    copy = tmp_path / "v5-copy"
    shutil.copytree(index_dir, copy)
    # where the folder cannot be written, the digests are worked out from the chunks
    store = Store._open_immutable(copy / DB_FILE_NAME)
    try:
        assert store.corpus_snapshot() == before
    finally:
        store.close()
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.chunks_embedded == 0 and report.unchanged == len(NOTES)
    assert meta(index_dir, "schema_version") == str(SCHEMA_VERSION)
    # the faiss caches stay valid: the upgrade is no write to the chunks
    assert meta(index_dir, "generation") == generation
    conn = apsw.Connection(str(index_dir / DB_FILE_NAME))
    assert (
        conn.execute("SELECT count(*) FROM documents WHERE chunk_digest IS NULL").fetchone()[0] == 0
    )
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT id, path, chunk_digest FROM documents")
    assert "idx_documents_digest" in str(list(plan))
    conn.close()
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.store.corpus_snapshot() == before


def test_a_kept_snapshot_of_the_older_format_is_not_reused(tmp_path: Path) -> None:
    kb = make_kb(tmp_path)
    now = snapshot(kb)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        record = json.loads(engine.store.get_meta(CORPUS_SNAPSHOT_META) or "{}")
        # what an older digest said for this very index state: version 1, no version
        old = {key: value for key, value in record.items() if key != "digest_version"}
        with engine.store.transaction():
            engine.store.set_meta(CORPUS_SNAPSHOT_META, json.dumps({**old, "digest": "e" * 64}))
    assert snapshot(kb) == now


def test_digests_of_two_definitions_are_unknown_never_changed() -> None:
    old = CorpusSnapshot(documents=4, chunks=5, digest="a" * 64)
    new = CorpusSnapshot(documents=4, chunks=5, digest="b" * 64, digest_version=DIGEST_VERSION)
    assert corpus_change(new, old) == (None, None)
    assert corpus_change(replace(new, digest="a" * 64), old) == (None, None)
    # different counts are a change whatever the digests' definitions
    changed, phrase = corpus_change(replace(new, chunks=6), old)
    assert changed is True and phrase == "4 -> 4 documents, 5 -> 6 chunks"
    assert corpus_change(new, replace(old, digest_version=DIGEST_VERSION))[0] is True


def test_the_run_record_says_which_definition_its_digest_uses() -> None:
    new = CorpusSnapshot(documents=4, chunks=5, digest="b" * 64, digest_version=DIGEST_VERSION)
    assert corpus_to_json(new)["digest_version"] == DIGEST_VERSION
    assert corpus_from_json(corpus_to_json(new)) == new
    # a run of an older version has no key: version 1, and keeps its bytes
    old = {"documents": 4, "chunks": 5, "digest": "a" * 64}
    assert corpus_from_json(old).digest_version == 1
    assert corpus_to_json(corpus_from_json(old)) == old


GOLDEN = """\
queries:
  - query: "How are chunks deduplicated?"
    expected:
      - path: "src/indexer.md"
"""


def recorded_run(kb: Path, snapshot: CorpusSnapshot, fail_on_regression: bool = False) -> Any:
    """One evaluation through the library's session steps, its history saved."""
    evaluation = begun(kb, corpus=snapshot, fail_on_regression=fail_on_regression)
    hits = [SearchHit(rank=1, path="README.md", heading=None, score=1.0)]
    if not fail_on_regression:
        hits.insert(0, SearchHit(rank=1, path="src/indexer.md", heading=None, score=2.0))
    scored = [
        evaluate_query(q, hits, evaluation.fingerprint.k_values)
        for q in evaluation.plan.golden.queries
    ]
    return finish_evaluation(evaluation, scored, record=True)


def test_a_baseline_of_the_older_definition_is_never_a_corpus_change(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    # what an older version recorded: a version-1 digest, no digest_version key
    recorded_run(kb, CorpusSnapshot(documents=3, chunks=7, digest="a" * 64))
    stored = (kb / HISTORY_FILE_NAME).read_text(encoding="utf-8")
    assert '"digest_version"' not in stored
    now = CorpusSnapshot(documents=3, chunks=7, digest="b" * 64, digest_version=DIGEST_VERSION)
    outcome = recorded_run(kb, now, fail_on_regression=True)
    assert outcome.json_report["corpus_changed"] is None
    assert outcome.json_report["corpus"]["digest_version"] == DIGEST_VERSION
    assert "corpus changed" not in outcome.text_report
    assert outcome.exit_code == 1 and "corpus changed" not in (outcome.gate_message or "")
    # the next run compares digests of one definition again
    later = replace(now, digest="c" * 64)
    outcome = recorded_run(kb, later)
    assert outcome.json_report["corpus_changed"] is True
    assert "corpus changed since last run (same document and chunk counts" in (outcome.text_report)


def test_the_digests_bytes_are_pinned() -> None:
    """Stored runs and baselines keep these digests: their definition never drifts
    (values from the field-by-field definition of version 2)."""
    document = document_digest(
        [
            (0, None, "preamble text", None),
            (1, "Retry", "retry budget — ü", "Alpha > Retry"),
            (2, "", "", ""),
        ]
    )
    assert document == "072b30198406428772d1c02f5cf853929a2d66f72cf0e4dfe99b215a950eadcc"
    assert (
        corpus_digest([("b/ü.md", document), ("a.md", "00" * 32)])
        == "7f479c319a2c2b58d87be64b46974e47508a92a98d900cebf03d9c694541b0db"
    )
