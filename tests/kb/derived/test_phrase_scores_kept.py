"""Per-phrase full-text scores kept beside the index between processes: the next engine
on the same index state ranks exactly as FTS5 without asking SQLite again, and a file
of another state, a damaged one or an unwritable folder changes nothing; the file is
the one ``np.savez`` writes, written without a second copy of the kept phrases."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from conftest import KB_EVAL, KB_EVAL_GOLDEN
from pytest_groove.engine.builtin import Engine, open_engine, run_indexer
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.kb.derived.phrase_scores import (
    CACHE_PREFIX,
    PhraseScores,
    _PhraseRows,
    _write_npz,
)
from pytest_groove.kb.store.database import Store
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash", contextual=True))
WEIGHTS = (2.0, 1.0, 1.0)


def expressions() -> list[tuple[str, str]]:
    out = []
    for golden in load_golden(KB_EVAL_GOLDEN, KB_EVAL).queries:
        parsed = parse_query(golden.query, require_positive=False)
        if parsed.fts is not None:
            out.append((parsed.fts, parsed.fts_table))
    return out


def ranked(engine: Engine) -> list[list[int]]:
    scores = engine._searcher.phrase_scores
    return [scores.candidates(e, WEIGHTS, 50, t) for e, t in expressions()]


def fts5(engine: Engine) -> list[list[int]]:
    return [engine.store.fts_candidates(e, WEIGHTS, 50, t) for e, t in expressions()]


def kept_files(kb: Path) -> list[Path]:
    return sorted(kb.rglob(f"{CACHE_PREFIX}*.npz"))


def kept_after_a_search(kb: Path) -> Path:
    """Rank the golden set once, so that its scores are kept; the one file holding them."""
    with open_engine(kb, SETTINGS, progress=False) as engine:
        ranked(engine)
    (kept,) = kept_files(kb)
    return kept


class Fetches:
    """Counts the phrases asked of SQLite."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        fetch = PhraseScores._fetch

        def counting(scores: PhraseScores, *args: object) -> object:
            self.count += 1
            return fetch(scores, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(PhraseScores, "_fetch", counting)


def test_the_next_engine_on_the_same_index_asks_sqlite_nothing(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetches = Fetches(monkeypatch)
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        first = ranked(engine)
        assert first == fts5(engine)
    assert fetches.count > 20
    assert len(kept_files(kb_eval_copy)) == 1
    fetches.count = 0
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        assert ranked(engine) == first
        # the searches of the golden set (both legs, fusion) are the same too
        assert fetches.count == 0


def test_after_a_write_the_old_state_file_is_not_read_and_is_replaced(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = kept_after_a_search(kb_eval_copy)
    note = sorted(kb_eval_copy.rglob("*.md"))[0]
    note.write_text(note.read_text(encoding="utf-8") + "\n## More\n\nbackup restore the\n")
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    fetches = Fetches(monkeypatch)
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        assert ranked(engine) == fts5(engine)
        assert fetches.count > 20
    (new,) = kept_files(kb_eval_copy)
    assert new != old


@pytest.mark.parametrize("damage", [b"", b"not a zip", b"PK\x03\x04broken"])
def test_a_damaged_file_is_ignored(kb_eval_copy: Path, damage: bytes) -> None:
    kept = kept_after_a_search(kb_eval_copy)
    kept.write_bytes(damage)
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        assert ranked(engine) == fts5(engine)


def test_a_file_whose_rows_do_not_fit_the_index_is_ignored(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = kept_after_a_search(kb_eval_copy)
    with kept.open("rb") as source:
        saved = dict(np.load(source))
    saved["rowids"] = saved["rowids"] + 10_000  # ids above every chunk
    np.savez(kept, **saved)
    fetches = Fetches(monkeypatch)
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        assert ranked(engine) == fts5(engine)
        assert fetches.count > 20


def test_one_more_phrase_does_not_rewrite_the_file(kb_eval_copy: Path) -> None:
    kept = kept_after_a_search(kb_eval_copy)
    written = kept.stat().st_mtime_ns
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        ranked(engine)
        expression = parse_query("xylophone").fts
        assert expression is not None
        engine._searcher.phrase_scores.candidates(expression, WEIGHTS, 50)
    assert kept.stat().st_mtime_ns == written


def test_an_unwritable_folder_keeps_nothing_and_still_ranks(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object) -> None:
        raise PermissionError("read-only")

    # every rename into place refused, as a folder that takes no file does
    monkeypatch.setattr(os, "replace", refuse)
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as engine:
        assert ranked(engine) == fts5(engine)
    assert kept_files(kb_eval_copy) == []
    assert list(kb_eval_copy.rglob("*phrases-*")) == []  # no temporary file left


def test_saving_holds_no_second_copy_of_the_kept_phrases(tmp_path: Path) -> None:
    """The file is written a phrase at a time (30 MiB of kept phrases, a few MiB traced
    while they are saved: joined first, they were held twice) and reads back as kept."""
    scores = PhraseScores(cast(Store, None))
    rng = np.random.default_rng(5)
    kept = []
    for number in range(32):
        rowids = np.sort(rng.choice(1_000_000, 60_000, replace=False)).astype(np.int64)
        kept.append(
            (("fts_chunks", f'"w{number}"', WEIGHTS), _PhraseRows(rowids, rng.random(60_000)))
        )
        scores._keep(*kept[-1])
    scores._state = (3, 1_000_000, 1_000_000)
    scores._path = tmp_path / f"{CACHE_PREFIX}x-gen3.npz"
    scores._unsaved = scores._bytes
    tracemalloc.start()
    try:
        scores.save()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < scores._bytes / 8
    with np.load(scores._path) as saved:
        assert saved["rowids"].dtype == np.int32  # ids below 2**31 take four bytes
    again = PhraseScores(cast(Store, None))
    again._state, again._path = scores._state, scores._path
    again._load()
    assert list(again._kept) == [key for key, _ in kept]
    for (_, rows), back in zip(kept, again._kept.values(), strict=True):
        assert np.array_equal(back.rowids, rows.rowids)
        assert back.terms.tobytes() == rows.terms.tobytes()


@pytest.mark.parametrize("sizes", [[], [0], [5, 0, 1000, 3]])
def test_the_file_is_the_one_numpy_savez_writes(sizes: list[int]) -> None:
    rng = np.random.default_rng(len(sizes))
    pieces = [(np.sort(rng.integers(0, 10**6, n)), rng.random(n)) for n in sizes]
    header = np.array(json.dumps({"format": 1, "keys": [["fts_chunks", '"a"', [1.0]]]}))
    written = io.BytesIO()
    _write_npz(written, header, pieces, np.dtype(np.int32))
    joined = io.BytesIO()
    np.savez(
        joined,
        header=header,
        rowids=np.concatenate([p[0] for p in pieces] or [np.zeros(0, np.int64)]).astype(np.int32),
        terms=np.concatenate([p[1] for p in pieces] or [np.zeros(0)]),
    )
    assert written.getvalue() == joined.getvalue()
