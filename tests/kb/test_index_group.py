"""Grouped indexing: many documents per embedder call and per transaction, yet every
document's rows change together and an interrupted run is completed by the next one."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.embed.base import Matrix
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.kb import index_group, indexer
from pytest_groove.kb.derived import word_index
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))


class RecordingEmbedder:
    """The hash embedder, recording each call's size; fails on call number ``fail_on``,
    and is slow on call number ``slow_on``."""

    def __init__(self, fail_on: int | None = None, slow_on: int | None = None) -> None:
        self.inner = HashEmbedder()
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.calls: list[int] = []
        self.fail_on = fail_on
        #: this call takes a fifth of a second
        self.slow_on = slow_on

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(len(texts))
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise RuntimeError("embedder went away")
        if len(self.calls) == self.slow_on:
            time.sleep(0.2)
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)


def make_kb(root: Path, docs: int, sections: int = 3) -> Path:
    for number in range(docs):
        body = "\n\n".join(
            f"## Part {s} of note {number}\n\nnote {number} section {s} talks about "
            f"{'alpha' if number % 2 else 'beta'} things and backups number {number * 7 + s}."
            for s in range(sections)
        )
        path = root / f"folder{number % 4}" / f"note-{number:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n", encoding="utf-8")
    return root


def around_writes(
    monkeypatch: pytest.MonkeyPatch,
    before: Callable[[Sequence[object]], None],
    after: Callable[[Sequence[object]], None] = lambda writes: None,
) -> None:
    """Run ``before(writes)`` on the writer thread ahead of each transaction (it may wait,
    or raise as a failed write does) and ``after(writes)`` once it is written."""
    write = Store.write_documents

    def hooked(self: Store, writes: Sequence[object], *, store_context: bool) -> None:
        before(writes)
        write(self, writes, store_context=store_context)  # type: ignore[arg-type]
        after(writes)

    monkeypatch.setattr(Store, "write_documents", hooked)


def test_chunks_of_many_documents_go_to_the_embedder_together(kb_eval_copy: Path) -> None:
    embedder = RecordingEmbedder()
    report = run_indexer(kb_eval_copy, SETTINGS, embedder=embedder, progress=False)
    assert report.added == 20
    # kb-eval's 60 chunks fit in one group: one call, not one per document (with
    # each document's note vector)
    assert embedder.calls == [report.chunks_embedded + report.notes_embedded]


def test_groups_are_bounded_and_the_result_equals_one_document_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 40)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 10)
    grouped = RecordingEmbedder()
    run_indexer(kb, SETTINGS, embedder=grouped, progress=False)
    # a group: four 3-chunk documents reach the bound of 10 chunks; their notes (no
    # title: the opening section's text) are embedded once with it
    assert max(grouped.calls) == 12 and len(grouped.calls) == 10
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        snapshot = engine.corpus_snapshot()
        hits = [(h.path, h.heading) for h in engine.search("alpha backups 77", 5)]

    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 1)
    single = RecordingEmbedder()
    # a new index (--force would find every vector in the old one)
    shutil.rmtree(index_dir_for(kb.resolve(), SETTINGS, "hash"))
    run_indexer(kb, SETTINGS, embedder=single, progress=False)
    assert single.calls == [3] * 40
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.corpus_snapshot() == snapshot
        assert [(h.path, h.heading) for h in engine.search("alpha backups 77", 5)] == hits


def test_groups_queue_behind_a_busy_writer_and_commit_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 40)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 3)  # one document per group
    monkeypatch.setattr(indexer, "WRITE_QUEUE_CHUNKS", 12)
    write = Store.write_documents
    transactions: list[int] = []

    def slow(writes: Sequence[object]) -> None:
        time.sleep(0.05)  # a writer slower than the embedder
        transactions.append(len(writes))

    around_writes(monkeypatch, slow)
    embedder = RecordingEmbedder()
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    assert embedder.calls == [3] * 40 and report.added == 40
    # fewer transactions than groups, none above the queue bound (+ the group that filled it)
    assert sum(transactions) == 40 and len(transactions) < 40
    assert max(transactions) <= 12 // 3 + 1
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        grouped = (engine.corpus_snapshot(), engine.fts_match_count('"alpha"'))

    monkeypatch.setattr(Store, "write_documents", write)
    run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(), force=True, progress=False)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert (engine.corpus_snapshot(), engine.fts_match_count('"alpha"')) == grouped


def test_a_failed_group_leaves_earlier_groups_stored_and_the_next_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 12)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 9)  # three documents per group
    with pytest.raises(RuntimeError, match="went away"):
        run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(fail_on=2), progress=False)
    store = Store.open(index_dir_for(kb.resolve(), SETTINGS, "hash"), create=False)
    try:
        docs, chunks = store.counts()
    finally:
        store.close()
    # the first group committed whole; nothing of the failed group was written
    assert (docs, chunks) == (3, 9)

    again = RecordingEmbedder()
    report = run_indexer(kb, SETTINGS, embedder=again, progress=False)
    assert (report.added, report.unchanged, report.chunks_embedded) == (9, 3, 27)


def test_frontmatter_only_edits_join_the_group_without_embedding_chunks(tmp_path: Path) -> None:
    kb = make_kb(tmp_path / "kb", 6)
    run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(), progress=False)
    for path in sorted(kb.rglob("*.md"))[:3]:
        path.write_text("---\ntitle: Renamed\n---\n" + path.read_text(encoding="utf-8"))
    embedder = RecordingEmbedder()
    report = run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    # a new title: only the three note vectors are embedded, in one call
    assert (report.changed, report.chunks_embedded, embedder.calls) == (3, 0, [3])
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        titles = {h.title for h in engine.search("note section", 50)}
    assert "Renamed" in titles


def test_the_writer_thread_gets_the_gil_back_within_a_millisecond_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 12)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 9)
    seen: list[float] = []
    around_writes(monkeypatch, lambda writes: seen.append(sys.getswitchinterval()))
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.004)
        run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(), progress=False)
        # shorter while the writer runs, the caller's own again after
        assert seen and set(seen) == {0.001}
        assert sys.getswitchinterval() == 0.004
        # a caller's shorter interval is left as it is
        sys.setswitchinterval(0.0002)
        shorter = sys.getswitchinterval()
        seen.clear()
        run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(), force=True, progress=False)
        assert seen and set(seen) == {shorter} and sys.getswitchinterval() == shorter
    finally:
        sys.setswitchinterval(before)


def test_the_rest_sent_behind_a_failing_transaction_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 60)
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 90)
    calls: list[int] = []

    def failing_first(writes: Sequence[object]) -> None:
        calls.append(len(writes))
        if len(calls) == 1:
            time.sleep(0.2)  # still writing when the second group is sent behind it
            raise RuntimeError("disk went away")

    around_writes(monkeypatch, failing_first)
    with pytest.raises(RuntimeError, match="disk went away"):
        run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(), progress=False)
    assert calls == [30]
    store = Store.open(index_dir_for(kb.resolve(), SETTINGS, "hash"), create=False)
    try:
        assert store.counts() == (0, 0)
    finally:
        store.close()


def test_the_word_segment_is_made_while_the_last_transaction_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 60)  # 180 chunks: two groups, two transactions
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 90)
    segment_made = threading.Event()
    committed: list[int] = []

    def gated(writes: Sequence[object]) -> None:
        if committed:  # the last one commits once the segment is made
            segment_made.wait(timeout=10)

    segment = word_index.WrittenRows.segment
    made_with: list[int] = []

    def recording_segment(self: word_index.WrittenRows) -> object:
        made_with.append(len(committed))
        try:
            return segment(self)
        finally:
            segment_made.set()

    around_writes(monkeypatch, gated, lambda writes: committed.append(len(writes)))
    monkeypatch.setattr(word_index.WrittenRows, "segment", recording_segment)
    # the second group is embedded once the first is committed: it is the last write
    run_indexer(kb, SETTINGS, embedder=RecordingEmbedder(slow_on=2), progress=False)
    # made once, before the last transaction committed; the refresh took it
    assert made_with[0] == 1 and committed == [30, 30]
    manifest = _kept_word_manifest(kb)
    assert len(manifest["segments"]) == 1 and manifest["state"] == [180, 180]


def test_words_wait_to_be_counted_until_this_thread_would_wait_for_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 40)  # 120 chunks
    monkeypatch.setattr(indexer, "EMBED_GROUP_CHUNKS", 3)  # one document per group
    monkeypatch.setattr(indexer, "WRITE_QUEUE_CHUNKS", 12)
    monkeypatch.setattr(index_group, "_UNCOUNTED_CHUNKS", 6)
    around_writes(monkeypatch, lambda writes: time.sleep(0.02))  # slower than the embedder
    counted: list[int] = []
    add = word_index.WrittenRows.add

    def counting(self: word_index.WrittenRows, *row: str | None) -> None:
        counted.append(1)
        add(self, *row)

    monkeypatch.setattr(word_index.WrittenRows, "add", counting)
    embedder = RecordingEmbedder()
    embed = embedder.embed_passages
    # at each embedder call: chunks of the groups before it not counted yet
    behind: list[int] = []

    def embedding(texts: Sequence[str]) -> Matrix:
        behind.append(3 * len(embedder.calls) - len(counted))
        return embed(texts)

    monkeypatch.setattr(embedder, "embed_passages", embedding)
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    # the next group is embedded before the last one's words are counted, never more
    # than the bound behind; every chunk is counted once, and the refresh took them
    assert max(behind) > 0 and max(behind) <= 6 + 3
    assert len(counted) == 120
    manifest = _kept_word_manifest(kb)
    assert len(manifest["segments"]) == 1 and manifest["state"] == [120, 120]


def _kept_word_manifest(kb: Path) -> dict[str, Any]:
    """The word postings' manifest the indexer kept in ``kb``'s index."""
    store = Store.open(index_dir_for(kb.resolve(), SETTINGS, "hash"), create=False)
    try:
        manifest: dict[str, Any] = json.loads(store.get_meta(word_index.WORD_POSTINGS_META) or "{}")
        return manifest
    finally:
        store.close()


def _index_state(kb: Path) -> tuple[object, ...]:
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        store = engine.store
        integrity = store.conn.execute("PRAGMA integrity_check").fetchone()
        fts_ok = store.conn.execute(
            "INSERT INTO fts_chunks(fts_chunks, rank) VALUES ('integrity-check', 0)"
        ).fetchall()
        return (
            integrity,
            fts_ok,
            engine.corpus_snapshot(),
            engine.vectors.size,
            engine.fts_match_count('"alpha"'),
            [(h.path, h.heading) for h in engine.search("beta backups 140", 8)],
        )


@pytest.mark.slow
def test_kill_9_at_any_point_leaves_an_index_the_next_run_completes(tmp_path: Path) -> None:
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs SIGKILL")
    kb = make_kb(tmp_path / "kb", 600, sections=4)
    run_indexer(kb, SETTINGS, progress=False)
    expected = _index_state(kb)
    shutil.rmtree(kb / ".groove")

    groove = shutil.which("groove", path=str(Path(sys.executable).parent)) or "groove"
    command = [groove, "index", "--kb-path", str(kb), "--model", "hash"]
    started = time.monotonic()
    subprocess.run([*command, "--force"], check=True, capture_output=True)
    full = time.monotonic() - started
    for attempt, share in enumerate((0.15, 0.3, 0.45, 0.6, 0.7, 0.8, 0.9, 0.97)):
        force = ["--force"] if attempt % 2 else []
        process = subprocess.Popen(
            command + force, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(full * share)
        process.send_signal(signal.SIGKILL)
        process.wait()
        subprocess.run(command, check=True, capture_output=True)
        assert _index_state(kb) == expected, f"killed at {share:.0%} of a run"
