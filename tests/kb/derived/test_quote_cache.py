"""The golden-quote scan kept in the index: the same findings as a full scan, an
unchanged index read once, after edits only the changed documents read again, and a
write that cannot be made only a full scan next time."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.embed.registry import model_slug
from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.errors import IndexUnwritable
from pytest_groove.evaluation.runs.findings import (
    golden_quote_findings,
    quote_findings,
    scan_golden_quotes,
)
from pytest_groove.evaluation.runs.record import Finding, QueryResult
from pytest_groove.files.seal import write_sealed
from pytest_groove.kb.derived import quote_cache
from pytest_groove.kb.indexer import default_index_dir
from pytest_groove.kb.store.damage import needs_check
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings
from tests.helpers.eval_factories import query

SETTINGS = Settings(index=IndexSettings(model="hash"))
LONG_A = "how does reciprocal rank fusion work"
LONG_B = "what is the retention period for backups"
LONG_C = "which port does the staging server use"
RESULTS = [
    query("q-a", text=LONG_A, expected=("answer.md",)),
    query("q-b", text=LONG_B, expected=("answer.md",), top=("leak.md",)),
    query("q-c", text=LONG_C, expected=("c.md",)),
    query("q-a2", text=LONG_A.upper(), expected=("b.md",)),
]
#: what the documents are made of: golden wordings, their pieces, other words
_PIECE = st.sampled_from(
    [LONG_A, LONG_B, LONG_C, "reciprocal rank", "staging server", "backups", "notes", "über"]
)
_BODY = st.lists(_PIECE, min_size=1, max_size=4).map(" ".join)
_PATHS = ["a.md", "b.md", "c.md", "sub/d.md", "leak.md"]


def _document(heading: str, body: str) -> str:
    return f"# Title\n\n## {heading}\n\n{body}\n\n## Other\n\nplain words here\n"


@contextmanager
def _store(kb: Path) -> Iterator[Store]:
    run_indexer(kb, SETTINGS, progress=False)
    with _store_unindexed(default_index_dir(kb, model_slug("hash"))) as store:
        yield store


@contextmanager
def _store_unindexed(index_dir: Path) -> Iterator[Store]:
    store = Store.open(index_dir, create=False)
    try:
        with store.read_snapshot():
            yield store
    finally:
        store.close()


def _both(kb: Path, results: list[QueryResult]) -> tuple[list[Finding], list[Finding]]:
    with _store(kb) as store:
        return (
            golden_quote_findings(results, store),
            scan_golden_quotes(results, store.iter_chunk_texts()),
        )


_EDIT = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(_PATHS), _PIECE, _BODY),
    st.tuples(st.just("delete"), st.sampled_from(_PATHS), st.just(""), st.just("")),
    st.tuples(st.just("rename"), st.sampled_from(_PATHS), st.sampled_from(_PATHS), st.just("")),
    st.tuples(st.just("frontmatter"), st.sampled_from(_PATHS), st.just(""), st.just("")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(st.lists(_EDIT, min_size=1, max_size=3), min_size=1, max_size=4))
def test_after_random_edits_the_kept_scan_finds_what_a_full_scan_finds(
    edits: list[list[tuple[str, str, str, str]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        (kb / "sub").mkdir(parents=True)
        for path in _PATHS[:3]:
            (kb / path).write_text(_document("Start", f"{LONG_A} {LONG_B}"), encoding="utf-8")
        kept, full = _both(kb, RESULTS)
        assert kept == full
        for batch in edits:
            for kind, path, first, second in batch:
                target = kb / path
                if kind == "write":
                    target.write_text(_document(first, second), encoding="utf-8")
                elif kind == "delete":
                    target.unlink(missing_ok=True)
                elif kind == "rename" and target.exists() and not (kb / first).exists():
                    target.rename(kb / first)
                elif kind == "frontmatter" and target.exists():
                    text = target.read_text(encoding="utf-8")
                    target.write_text(f"---\ntags: [x]\n---\n{text}", encoding="utf-8")
            kept, full = _both(kb, RESULTS)
            assert kept == full


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "leak.md").write_text(_document("Notes", f"{LONG_A}. {LONG_B}. {LONG_C}."), "utf-8")
    for n in range(6):
        (kb / f"plain{n}.md").write_text(_document("Plain", f"words {n}"), "utf-8")
    return kb


def test_an_unchanged_index_is_answered_without_reading_a_chunk(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, full = _both(kb, RESULTS)
    assert first == full
    assert [f.path for f in first] == ["leak.md"]

    def no_reads(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("the kept scan should have answered")

    monkeypatch.setattr(quote_cache, "_signatures", no_reads)
    monkeypatch.setattr(quote_cache, "_chunks_of", no_reads)
    with _store(kb) as store:
        assert golden_quote_findings(RESULTS, store) == first


def test_after_an_edit_only_the_changed_documents_are_read(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _both(kb, RESULTS)
    (kb / "plain3.md").write_text(_document("Now", f"{LONG_B} and {LONG_C}"), "utf-8")
    (kb / "plain5.md").unlink()
    read: list[str] = []
    chunks_of = quote_cache._chunks_of

    def recording(store: Store, documents: dict[str, int], *, everything: bool) -> object:
        read.extend(["<all>"] if everything else documents)
        return chunks_of(store, documents, everything=everything)

    monkeypatch.setattr(quote_cache, "_chunks_of", recording)
    kept, full = _both(kb, RESULTS)
    assert read == ["plain3.md"]
    assert kept == full
    assert [f.path for f in kept] == ["leak.md", "plain3.md"]


def _kept(kb: Path) -> list[tuple[str, int, int]]:
    """(key, used, generation) of each kept scan, most recently used first."""
    store = Store.open(default_index_dir(kb, model_slug("hash")), create=False)
    try:
        return [
            (str(key), int(used), int(generation))
            for key, used, generation in store.conn.execute(
                f"SELECT key, used, generation FROM {quote_cache.QUOTE_SCANS_TABLE} "
                "ORDER BY used DESC"
            )
        ]
    except apsw.SQLError:
        return []  # no table: nothing kept
    finally:
        store.close()


def test_another_golden_set_keeps_its_own_scan_and_expected_edits_reuse_it(kb: Path) -> None:
    _both(kb, RESULTS)
    # the same wordings with other labels: the same needles, the same row
    relabelled = [query(r.id, text=r.query, expected=("leak.md",)) for r in RESULTS]
    kept, full = _both(kb, relabelled)
    assert kept == full == []  # every quote is now a labelled answer
    assert len(_kept(kb)) == 1
    other = [*RESULTS, query("q-d", text="plain words here and there")]
    assert _both(kb, other)[0] == _both(kb, other)[1]
    assert len(_kept(kb)) == 2


def test_the_most_recently_used_scans_are_kept(kb: Path) -> None:
    _both(kb, RESULTS)
    (first_key, _, _), *_ = _kept(kb)
    for n in range(quote_cache.KEEP_SCANS + 3):
        _both(kb, [*RESULTS, query("extra", text=f"an extra golden query {n}")])
        _both(kb, RESULTS)  # used again: the newest once more, read not rescanned
    rows = _kept(kb)
    assert len(rows) == quote_cache.KEEP_SCANS
    assert rows[0][0] == first_key
    assert [used for _, used, _ in rows] == sorted({used for _, used, _ in rows}, reverse=True)


def test_keeping_a_scan_is_no_write_to_the_index_state(kb: Path) -> None:
    with _store(kb) as store:
        generation, index_id = store.generation, store.index_id
    _both(kb, RESULTS)
    ((_, _, kept_generation),) = _kept(kb)
    with _store(kb) as store:
        assert (store.generation, store.index_id) == (generation, index_id)
    assert kept_generation == generation


def test_keeping_a_scan_leaves_the_database_as_the_indexer_checked_it(kb: Path) -> None:
    db_path = default_index_dir(kb, model_slug("hash")) / "index.db"
    run_indexer(kb, SETTINGS, progress=False)
    assert not needs_check(db_path)
    _both(kb, RESULTS)  # the scan kept: a write by the eval
    (kb / "plain3.md").write_text(_document("Now", f"{LONG_B} and {LONG_C}"), "utf-8")
    _both(kb, RESULTS)  # the index written, the scan kept again
    assert len(_kept(kb)) == 1
    # the next indexer reads no page to check it (a write of its own, checkpointed)
    assert not needs_check(db_path)


def test_the_scan_files_of_an_earlier_version_are_removed_by_the_indexer(kb: Path) -> None:
    index_dir = default_index_dir(kb, model_slug("hash"))
    _both(kb, RESULTS)
    old = index_dir / "quote-scan-0123456789abcdef0123456789abcdef.json"
    write_sealed(old, lambda handle: handle.write(b'{"format": 3}'))
    _both(kb, RESULTS)
    assert list(index_dir.glob("quote-scan-*")) == []


def test_a_locked_index_still_gives_the_findings_and_keeps_nothing(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_cache, "WRITE_WAIT_MS", 50)
    run_indexer(kb, SETTINGS, progress=False)
    other = Store.open(default_index_dir(kb, model_slug("hash")), create=False)
    other.conn.execute("BEGIN IMMEDIATE")  # another writer, for longer than the wait
    try:
        with _store(kb) as store:
            kept = golden_quote_findings(RESULTS, store)
            assert kept == scan_golden_quotes(RESULTS, store.iter_chunk_texts()) != []
    finally:
        other.conn.execute("ROLLBACK")
        other.close()
    assert _kept(kb) == []
    assert _both(kb, RESULTS)[0] == kept  # kept by the next run
    assert len(_kept(kb)) == 1


def test_a_write_waits_for_another_writer(kb: Path) -> None:
    run_indexer(kb, SETTINGS, progress=False)
    other = Store.open(default_index_dir(kb, model_slug("hash")), create=False)
    other.conn.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.2, lambda: other.conn.execute("COMMIT"))
    timer.start()
    try:
        with _store(kb) as store:
            golden_quote_findings(RESULTS, store)
    finally:
        timer.join()
        other.close()
    assert len(_kept(kb)) == 1


def test_a_read_only_index_folder_still_gives_the_findings(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_indexer(kb, SETTINGS, progress=False)
    # a folder this process cannot write: the store opens the database immutable
    monkeypatch.setattr(os, "access", lambda *_args, **_kwargs: False)
    with _store_unindexed(default_index_dir(kb, model_slug("hash"))) as store:
        kept = golden_quote_findings(RESULTS, store)
        assert kept == scan_golden_quotes(RESULTS, store.iter_chunk_texts()) != []
    monkeypatch.undo()
    assert _kept(kb) == []


def test_an_index_that_cannot_be_opened_for_the_write_still_gives_the_findings(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> Store:
        raise IndexUnwritable("read-only")

    run_indexer(kb, SETTINGS, progress=False)
    with _store(kb) as store:
        monkeypatch.setattr(quote_cache.Store, "open", refuse)
        kept = golden_quote_findings(RESULTS, store)
        assert kept == scan_golden_quotes(RESULTS, store.iter_chunk_texts()) != []
    monkeypatch.undo()
    assert _kept(kb) == []


def test_no_long_query_means_no_scan_and_no_row(kb: Path) -> None:
    assert _both(kb, [query("short", text="rrf")]) == ([], [])
    assert _kept(kb) == []


def test_the_engine_door_gives_the_full_scans_findings(kb: Path) -> None:
    with open_engine(kb, SETTINGS, progress=False) as engine, engine.read_snapshot():
        kept = quote_findings(RESULTS, engine)
        assert kept == scan_golden_quotes(RESULTS, engine.iter_chunk_texts())
        assert [f.path for f in kept] == ["leak.md"]
        assert quote_findings(RESULTS, engine) == kept  # from the kept row
