"""The golden-quote scan kept beside the index: the same findings as a full scan, an
unchanged index read once, and after edits only the changed documents read again."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.embed.registry import model_slug
from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.evaluation.runs.findings import (
    golden_quote_findings,
    quote_findings,
    scan_golden_quotes,
)
from pytest_groove.evaluation.runs.record import Finding, QueryResult
from pytest_groove.kb.derived import quote_cache
from pytest_groove.kb.indexer import default_index_dir
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
    store = Store.open(default_index_dir(kb, model_slug("hash")), create=False)
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


def test_another_golden_set_keeps_its_own_scan_and_expected_edits_reuse_it(kb: Path) -> None:
    _both(kb, RESULTS)
    # the same wordings with other labels: the same needles, the same file
    relabelled = [query(r.id, text=r.query, expected=("leak.md",)) for r in RESULTS]
    kept, full = _both(kb, relabelled)
    assert kept == full == []  # every quote is now a labelled answer
    index_dir = default_index_dir(kb, model_slug("hash"))
    assert len(list(index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json"))) == 1
    other = [*RESULTS, query("q-d", text="plain words here and there")]
    assert _both(kb, other)[0] == _both(kb, other)[1]
    assert len(list(index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json"))) == 2


def test_old_scan_files_are_dropped_past_the_limit(kb: Path) -> None:
    for n in range(quote_cache.KEEP_FILES + 3):
        results = [*RESULTS, query("extra", text=f"an extra golden query {n}")]
        _both(kb, results)
    index_dir = default_index_dir(kb, model_slug("hash"))
    assert len(list(index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json"))) == quote_cache.KEEP_FILES


@pytest.mark.parametrize("damage", ["{not json", '{"format": 1}', "[]", ""])
def test_a_damaged_scan_file_is_scanned_again_and_rewritten(kb: Path, damage: str) -> None:
    first, _ = _both(kb, RESULTS)
    index_dir = default_index_dir(kb, model_slug("hash"))
    (cache,) = index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json")
    cache.write_text(damage, encoding="utf-8")
    assert _both(kb, RESULTS)[0] == first
    assert cache.read_text(encoding="utf-8") != damage


@pytest.mark.parametrize(
    "field, value",
    [
        ("quoted", {"notes/a.md": "a string, not a list"}),
        ("quoted", {"notes/a.md": ["no golden query says this"]}),
        ("quoted", ["not", "a", "mapping"]),
        ("paths", "one string"),
        ("paths", [1, 2]),
        ("signatures", ["not", "a", "string"]),
    ],
)
def test_a_kept_scan_of_the_right_state_but_wrong_shape_is_scanned_again(
    kb: Path, field: str, value: object
) -> None:
    first, _ = _both(kb, RESULTS)
    index_dir = default_index_dir(kb, model_slug("hash"))
    (cache,) = index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json")
    data = json.loads(cache.read_text(encoding="utf-8"))
    data[field] = value  # the index state it names is still the current one
    cache.write_text(json.dumps(data), encoding="utf-8")
    assert _both(kb, RESULTS)[0] == first


def test_an_unwritable_index_folder_still_gives_the_findings(
    kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(quote_cache.os, "replace", refuse)
    kept, full = _both(kb, RESULTS)
    assert kept == full != []
    index_dir = default_index_dir(kb, model_slug("hash"))
    assert list(index_dir.glob(f"*{quote_cache.CACHE_PREFIX}*")) == []


def test_no_long_query_means_no_scan_and_no_file(kb: Path) -> None:
    assert _both(kb, [query("short", text="rrf")]) == ([], [])
    index_dir = default_index_dir(kb, model_slug("hash"))
    assert list(index_dir.glob(f"{quote_cache.CACHE_PREFIX}*.json")) == []


def test_the_engine_door_gives_the_full_scans_findings(kb: Path) -> None:
    with open_engine(kb, SETTINGS, progress=False) as engine, engine.read_snapshot():
        kept = quote_findings(RESULTS, engine)
        assert kept == scan_golden_quotes(RESULTS, engine.iter_chunk_texts())
        assert [f.path for f in kept] == ["leak.md"]
        assert quote_findings(RESULTS, engine) == kept  # from the kept file
