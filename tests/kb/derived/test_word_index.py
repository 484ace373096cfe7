"""The trigram table's phrase terms from word postings equal FTS5's bm25, bit for bit,
on generated text, on the real corpora, and across edits of the index."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import KB_EVAL, LOCAL_STATE
from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.kb.derived import word_index
from pytest_groove.kb.derived.phrase_scores import PhraseScores
from pytest_groove.kb.derived.word_index import (
    MANIFEST_PREFIX,
    WORD_POSTINGS_META,
    WordIndex,
    WrittenRows,
    _fts5_totals,
    _varints,
    refresh_word_index,
)
from pytest_groove.kb.derived.word_postings import build_segment, merge_segments, read_segment
from pytest_groove.kb.derived.word_postings import write_segment as write_segment_file
from pytest_groove.kb.store.schema import _SCHEMA as SCHEMA
from pytest_groove.settings.config import IndexSettings, Settings
from pytest_groove.text.trigram_fold import FOLD, FOLD_EXACT, TRIGRAM_ARGS, fold_phrase
from tests.kb.derived.test_phrase_scores import golden_queries


def folded_tokens(text: str | None) -> int:
    """How many trigram tokens FTS5 stores for one column holding ``text``."""
    return max(0, len(text.translate(FOLD_EXACT)) - 2) if text else 0


SETTINGS = Settings(index=IndexSettings(model="hash", contextual=True))
WEIGHTS = [(2.0, 1.0, 1.0), (1.0, 1.0, 1.0), (0.5, 3.0, 1.5), (1.0, 0.0, 0.25), (0.7, 1.3, 0.1)]

# letters in both cases, accents precomposed and combining, Japanese, digits, separators
_ALPHABET = (
    "abcABCxyzÉéèßẞİıΣσς"
    + "\u0301\u0308"
    + "日本語キャッシュのを"
    + "0129"
    + " -_.,\t\n/#'\""
    + "😀"
)
_TEXT = st.text(alphabet=_ALPHABET, max_size=60)


class _Table:
    """A throwaway ``fts_chunks`` with the index's own definition."""

    def __init__(self) -> None:
        self.conn = apsw.Connection(":memory:")
        definition = re.search(
            r"CREATE VIRTUAL TABLE IF NOT EXISTS fts_chunks .*?\);", SCHEMA, re.S
        )
        assert definition is not None
        self.conn.execute(definition.group(0))

    def insert(self, rows: list[tuple[int, str | None, str | None, str | None]]) -> None:
        self.conn.executemany(
            "INSERT INTO fts_chunks(rowid, heading, context, content) VALUES (?, ?, ?, ?)", rows
        )

    def terms(
        self, phrase: str, weights: tuple[float, float, float]
    ) -> tuple[list[int], list[float]]:
        rows = list(
            self.conn.execute(
                "SELECT rowid, -bm25(fts_chunks, ?, ?, ?) FROM fts_chunks WHERE fts_chunks MATCH ? "
                "ORDER BY rowid",
                (*weights, phrase),
            )
        )
        return [int(r[0]) for r in rows], [float(r[1]) for r in rows]


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@pytest.fixture
def kb_eval_indexed(tmp_path: Path) -> Path:
    """A copy of kb-eval, indexed once with the hash model."""
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    run_indexer(kb, SETTINGS, progress=False)
    return kb


def test_the_tokenizer_arguments_are_the_tables_own() -> None:
    assert "tokenize='trigram " + " ".join(TRIGRAM_ARGS) + "'" in SCHEMA


def test_a_folded_character_that_is_not_a_separator_is_never_whitespace() -> None:
    # words are cut with str.split(): only the spaces the fold table writes may cut them
    for code in range(0x10000):
        folded = FOLD[code]
        assert folded is None or folded == " " or not folded.isspace(), hex(code)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(_TEXT, _TEXT, _TEXT), min_size=1, max_size=8),
    picks=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 2), st.integers(0, 60), st.integers(3, 8)),
        min_size=1,
        max_size=6,
    ),
    weights=st.sampled_from(WEIGHTS),
)
def test_generated_text_scores_exactly_as_fts5(
    rows: list[tuple[str, str, str]],
    picks: list[tuple[int, int, int, int]],
    weights: tuple[float, float, float],
) -> None:
    table = _Table()
    numbered = [(i * 3 + 1, h or None, c or None, b) for i, (h, c, b) in enumerate(rows)]
    table.insert(numbered)
    segment = build_segment(numbered)
    texts = {row_id: (h, c, b) for row_id, h, c, b in numbered}
    index = WordIndex([segment], np.zeros(0, dtype=np.int64), numbered[-1][0], lambda _: texts)
    assert (index.row_count, index.token_total) == _fts5_totals(table)  # type: ignore[arg-type]
    # phrases within words, and phrases spanning words (counted in the text)
    phrases = {"abc", "AAA", "éé", "キャッ", "ßs", "abc abc", "c-x", "xyz.ABC", " abc"}
    for row, column, start, size in picks:
        text = rows[row % len(rows)][column]
        phrases.add(text[start : start + size])
    compared = 0
    for phrase in phrases:
        if not phrase or "\x00" in phrase:
            continue
        counted = index.phrase_terms(_quoted(phrase), weights)
        if counted is None:
            # only phrases it cannot narrow to words: too short, or no word-sized piece
            assert fold_phrase(phrase) is None
            assert all(len(p) < 3 for p in phrase.translate(FOLD).split(" ")), phrase
            continue
        rowids, terms = table.terms(_quoted(phrase), weights)
        assert counted.rowids.tolist() == rowids, phrase
        assert counted.terms.tolist() == terms, phrase  # bit for bit
        compared += 1
    assert compared >= 1


def test_column_sizes_are_fts5s() -> None:
    table = _Table()
    texts = ["", "ab", "abc", "a\u0301bc", "日本語です", "x" * 50, "\u0301\u0301\u0301", "Ab\x00cd"]
    table.insert([(i + 1, t[:2] or None, None, t) for i, t in enumerate(texts)])
    # FTS5's own per-row, per-column sizes (the docsize table's varints)
    sizes = {
        int(r[0]): _varints(bytes(r[1]))
        for r in table.conn.execute("SELECT id, sz FROM fts_chunks_docsize")
    }
    assert sizes == {
        i + 1: [folded_tokens(t[:2] or None), 0, folded_tokens(t)] for i, t in enumerate(texts)
    }
    rows = [(i + 1, t[:2] or None, None, t) for i, t in enumerate(texts)]
    index = WordIndex([build_segment(rows)], np.zeros(0, dtype=np.int64), len(texts))
    assert (index.row_count, index.token_total) == _fts5_totals(table)  # type: ignore[arg-type]


def test_a_segment_survives_its_file_and_a_merge(tmp_path: Path) -> None:
    rows = [(1, "Heading", None, "the cache of the caches"), (2, None, "ctx", "other text")]
    first = build_segment(rows)
    write_segment_file(first, tmp_path / "a.seg")
    again = read_segment(tmp_path / "a.seg")
    # "cache" and "caches" are two words of row 1's content (key 1 * 3 + 2)
    for segment in (first, again):
        keys, counts = segment.postings_of("cache")
        assert sorted(zip(keys.tolist(), counts.tolist(), strict=True)) == [(5, 1), (5, 1)]
    merged = merge_segments([again, build_segment([(5, None, None, "caches")])], np.array([2]))
    assert merged.rows.tolist() == [1, 5]
    keys, counts = merged.postings_of("cache")
    assert sorted(zip((keys // 3).tolist(), counts.tolist(), strict=True)) == [
        (1, 1),
        (1, 1),
        (5, 1),
    ]


def test_a_damaged_segment_file_is_refused(tmp_path: Path) -> None:
    write_segment_file(build_segment([(1, None, None, "some words here")]), tmp_path / "a.seg")
    data = (tmp_path / "a.seg").read_bytes()
    (tmp_path / "a.seg").write_bytes(data[:100])
    with pytest.raises(ValueError):
        read_segment(tmp_path / "a.seg")


# ---------------------------------------------------------------- through the engine


def _expressions() -> list[str]:
    from pytest_groove.search.query.fts_query import parse_query

    out = []
    for query in golden_queries():
        parsed = parse_query(query, require_positive=False)
        if parsed.fts is not None and parsed.fts_table == "fts_chunks":
            out.append(parsed.fts)
    return out


def _assert_ranked_as_fts5(kb: Path) -> int:
    with open_engine(kb, SETTINGS, progress=False, reindex=False) as engine:
        store = engine.store
        scores = PhraseScores(store, read_kept=False)
        with store.read_snapshot():
            row = store.conn.execute("SELECT max(id), count(*) FROM chunks").fetchone()
            assert WordIndex.open(store, int(row[0]), int(row[1])) is not None
        compared = 0
        for expression in _expressions():
            for weights in WEIGHTS:
                for limit in (1, 10, 50):
                    expected = store.fts_candidates(expression, weights, limit)
                    assert scores.candidates(expression, weights, limit) == expected, expression
                    compared += bool(expected)
        return compared


def _manifest(kb: Path) -> dict[str, object]:
    """The manifest the indexer kept in ``index_meta``."""
    db = kb / ".groove" / "hash" / "index.db"
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (value,) = conn.execute(
            "SELECT value FROM index_meta WHERE key = ?", (WORD_POSTINGS_META,)
        ).fetchone()
    finally:
        conn.close()
    manifest: dict[str, object] = json.loads(value)
    return manifest


def test_the_engine_ranks_as_fts5_across_edits_and_deletions(kb_eval_indexed: Path) -> None:
    kb = kb_eval_indexed
    assert _assert_ranked_as_fts5(kb) > 200
    assert len(_manifest(kb)["segments"]) == 1  # type: ignore[arg-type]
    files = sorted(kb.rglob("*.md"))
    # an edit adds a small segment and lists the old rows as dead
    with files[0].open("a", encoding="utf-8") as handle:
        handle.write("\n\nOne more line about the rollback of the cache.\n")
    run_indexer(kb, SETTINGS, progress=False)
    manifest = _manifest(kb)
    assert len(manifest["segments"]) == 2 and manifest["dead"]  # type: ignore[arg-type]
    _assert_ranked_as_fts5(kb)
    # a deletion only lists dead rows; many edits keep the segments few
    files[1].unlink()
    for round_ in range(7):
        with files[2 + round_ % 3].open("a", encoding="utf-8") as handle:
            handle.write(f"\n\nEdit number {round_} of the deploy notes.\n")
        run_indexer(kb, SETTINGS, progress=False)
    assert len(_manifest(kb)["segments"]) <= 6  # type: ignore[arg-type]
    _assert_ranked_as_fts5(kb)
    # the segment files the manifest names are the only ones left
    folder = kb / ".groove" / "hash"
    named = set(_manifest(kb)["segments"])  # type: ignore[arg-type]
    assert {p.name for p in folder.glob("*.seg")} == named


def test_the_manifest_is_a_row_of_the_index_and_old_manifest_files_go(
    kb_eval_indexed: Path,
) -> None:
    kb = kb_eval_indexed
    folder = kb / ".groove" / "hash"
    manifest = _manifest(kb)
    assert not list(folder.glob("*.json"))
    # what an earlier version kept: a sealed JSON manifest per state
    old = folder / f"{MANIFEST_PREFIX}{manifest['index_id']}-gen1.json"
    old.write_text('{"format": 1}')
    (folder / (old.name + ".seal")).write_bytes(b"seal")
    with sorted(kb.rglob("*.md"))[0].open("a", encoding="utf-8") as handle:
        handle.write("\n\nA line that makes a new state.\n")
    run_indexer(kb, SETTINGS, progress=False)
    assert not list(folder.glob("*.json")) and not list(folder.glob("*.json.seal"))
    newer = _manifest(kb)
    assert newer["generation"] > manifest["generation"]  # type: ignore[operator]
    assert {p.name for p in folder.glob("*.seg")} == set(newer["segments"])  # type: ignore[arg-type]
    _assert_ranked_as_fts5(kb)


def test_a_manifest_of_another_state_is_never_read(kb_eval_indexed: Path) -> None:
    kb = kb_eval_indexed
    db = kb / ".groove" / "hash" / "index.db"
    manifest = _manifest(kb)
    for key, value in (("generation", int(manifest["generation"]) + 1), ("index_id", "other")):  # type: ignore[call-overload]
        conn = apsw.Connection(str(db))
        changed = json.dumps({**manifest, key: value})
        conn.execute("UPDATE index_meta SET value = ? WHERE key = ?", (changed, WORD_POSTINGS_META))
        conn.close()
        assert _assert_ranked_as_fts5_without_words(kb)
    # the next indexer run keeps a manifest of its own state again
    run_indexer(kb, SETTINGS, progress=False)
    assert _assert_ranked_as_fts5(kb) > 200


def test_damaged_or_missing_postings_fall_back_to_sqlite(kb_eval_indexed: Path) -> None:
    kb = kb_eval_indexed
    folder = kb / ".groove" / "hash"
    (segment,) = folder.glob("*.seg")
    segment.write_bytes(segment.read_bytes()[:200])
    assert _assert_ranked_as_fts5_without_words(kb)
    for path in folder.glob(f"{MANIFEST_PREFIX}*"):
        path.unlink()
    assert _assert_ranked_as_fts5_without_words(kb)
    # the next indexer run builds them again
    run_indexer(kb, SETTINGS, progress=False)
    assert _assert_ranked_as_fts5(kb) > 200


def _assert_ranked_as_fts5_without_words(kb: Path) -> bool:
    with open_engine(kb, SETTINGS, progress=False, reindex=False) as engine:
        store = engine.store
        with store.read_snapshot():
            row = store.conn.execute("SELECT max(id), count(*) FROM chunks").fetchone()
            assert WordIndex.open(store, int(row[0]), int(row[1])) is None
        scores = PhraseScores(store, read_kept=False)
        for expression in _expressions()[:40]:
            expected = store.fts_candidates(expression, (2.0, 1.0, 1.0), 10)
            assert scores.candidates(expression, (2.0, 1.0, 1.0), 10) == expected
    return True


def test_weights_add_instance_by_instance_as_fts5_adds_them() -> None:
    # ten instances at weight 0.1: one by one the sum is 0.9999999999999999, not 1.0
    table = _Table()
    rows = [(1, "abc " * 3, None, "abc " * 10), (2, None, None, "zzz abc"), (3, None, None, "q")]
    table.insert(rows)
    index = WordIndex([build_segment(rows)], np.zeros(0, dtype=np.int64), 3)
    for weights in ((0.3, 1.0, 0.1), (0.1, 0.7, 0.1), (2.0, 1.0, 1.0)):
        counted = index.phrase_terms('"abc"', weights)
        assert counted is not None
        assert (counted.rowids.tolist(), counted.terms.tolist()) == table.terms('"abc"', weights)


def test_a_link_planted_at_a_segment_is_never_followed(
    kb_eval_indexed: Path, tmp_path: Path
) -> None:
    kb = kb_eval_indexed
    folder = kb / ".groove" / "hash"
    (segment,) = folder.glob("*.seg")
    outside = tmp_path / "outside.seg"
    shutil.copyfile(segment, outside)  # a valid segment: only not following keeps it unread
    segment.unlink()
    segment.symlink_to(outside)
    assert _assert_ranked_as_fts5_without_words(kb)
    before = outside.read_bytes()
    run_indexer(kb, SETTINGS, progress=False)  # the indexer builds them again, beside it
    assert outside.read_bytes() == before
    assert not any(p.is_symlink() for p in folder.glob("*.seg"))
    assert _assert_ranked_as_fts5(kb) > 200


def test_a_phrase_spanning_words_is_counted_in_the_text_as_fts5_counts_it() -> None:
    table = _Table()
    rows: list[tuple[int, str | None, str | None, str | None]] = [
        (1, "Abc abc", None, "abc abc abc abc abc"),  # overlapping instances: 3, not 1
        (2, None, "ABC-abc", "xabc abcx and abc.abc"),
        (3, None, None, "abc only"),
        (4, None, None, "abc\u0301 abc"),  # the combining mark folds to nothing
    ]
    table.insert(rows)
    texts = {r[0]: r[1:] for r in rows}
    index = WordIndex([build_segment(rows)], np.zeros(0, dtype=np.int64), 4, lambda _: texts)
    for phrase in ("abc abc abc", "abc abc", "abc-a", "c abc", "abc.abc", "bc abc"):
        counted = index.phrase_terms(_quoted(phrase), (2.0, 1.0, 1.0))
        assert counted is not None, phrase
        rowids, terms = table.terms(_quoted(phrase), (2.0, 1.0, 1.0))
        assert rowids, phrase
        assert (counted.rowids.tolist(), counted.terms.tolist()) == (rowids, terms), phrase


def _postings_by_word(kb: Path) -> tuple[dict[str, list[tuple[int, int]]], list[tuple[int, int]]]:
    """Every live posting (key, count) by word, and every live row with its tokens."""
    folder = kb / ".groove" / "hash"
    manifest = _manifest(kb)
    dead = set(manifest["dead"])  # type: ignore[call-overload]
    by_word: dict[str, list[tuple[int, int]]] = {}
    rows: list[tuple[int, int]] = []
    for name in manifest["segments"]:  # type: ignore[attr-defined]
        segment = read_segment(folder / name)
        ends = segment.word_ends.tolist()
        for number, word in enumerate(segment.vocabulary.words):
            start = ends[number - 1] if number else 0
            keys = segment.keys[start : ends[number]].tolist()
            counts = segment.counts[start : ends[number]].tolist()
            live = [(k, c) for k, c in zip(keys, counts, strict=True) if k // 3 not in dead]
            by_word.setdefault(word, []).extend(live)
        live_rows = zip(segment.rows.tolist(), segment.row_tokens.tolist(), strict=True)
        rows.extend(row for row in live_rows if row[0] not in dead)
    return {w: sorted(p) for w, p in by_word.items() if p}, sorted(rows)


def _postings_of_the_table(
    kb: Path,
) -> tuple[dict[str, list[tuple[int, int]]], list[tuple[int, int]]]:
    connection = apsw.Connection(str(kb / ".groove" / "hash" / "index.db"))
    rows = [
        (int(r[0]), r[1], r[2], r[3])
        for r in connection.execute(
            "SELECT id, heading, context_text, content FROM chunks ORDER BY id"
        )
    ]
    segment = build_segment(rows)
    ends = segment.word_ends.tolist()
    by_word = {
        word: sorted(
            zip(
                segment.keys[(ends[n - 1] if n else 0) : ends[n]].tolist(),
                segment.counts[(ends[n - 1] if n else 0) : ends[n]].tolist(),
                strict=True,
            )
        )
        for n, word in enumerate(segment.vocabulary.words)
    }
    pairs = zip(segment.rows.tolist(), segment.row_tokens.tolist(), strict=True)
    return {w: p for w, p in by_word.items() if p}, sorted(pairs)


def test_the_indexer_counts_the_postings_of_what_it_writes_without_reading_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    read_back: list[int] = []
    original = word_index._build

    def spy(store: object, ids: np.ndarray, folder: Path) -> object:
        read_back.append(len(ids))
        return original(store, ids, folder)  # type: ignore[arg-type]

    monkeypatch.setattr(word_index, "_build", spy)
    run_indexer(kb, SETTINGS, progress=False)
    assert _postings_by_word(kb) == _postings_of_the_table(kb)
    files = sorted(kb.rglob("*.md"))
    with files[0].open("a", encoding="utf-8") as handle:
        handle.write("\n\n## Quartzite\n\nA new section about the quartzite cache.\n")
    files[1].unlink()
    run_indexer(kb, SETTINGS, progress=False)
    assert _postings_by_word(kb) == _postings_of_the_table(kb)
    run_indexer(kb, SETTINGS, progress=False, force=True)
    assert _postings_by_word(kb) == _postings_of_the_table(kb)
    assert read_back == []


def test_rows_counted_under_other_ids_are_read_from_the_table(kb_eval_indexed: Path) -> None:
    kb = kb_eval_indexed
    for path in (kb / ".groove" / "hash").glob(f"{MANIFEST_PREFIX}*"):
        path.unlink()
    written = WrittenRows(after=0)
    written.add("A heading", None, "words that no chunk of the table holds: quartzite")
    with open_engine(kb, SETTINGS, progress=False, reindex=False) as engine:
        with engine.store.read_snapshot():
            kept = refresh_word_index(engine.store, written)
        assert kept is not None
        with engine.store.transaction():  # as the indexer keeps it
            engine.store.set_meta(WORD_POSTINGS_META, kept.manifest)
        kept.remove_others()
    assert _postings_by_word(kb) == _postings_of_the_table(kb)


def test_rows_counted_in_batches_are_kept_in_scratch_files_and_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    monkeypatch.setattr(word_index, "_BUILD_ROWS", 7)
    batches: list[int] = []
    original = WrittenRows._close_batch

    def counted(self: WrittenRows) -> None:
        original(self)
        batches.append(self.batched_rows)
        assert self.batches[-1][1] is not None  # a scratch file, mapped

    monkeypatch.setattr(WrittenRows, "_close_batch", counted)
    monkeypatch.setattr(word_index, "_build", lambda *_: pytest.fail("read back"))
    run_indexer(kb, SETTINGS, progress=False)
    assert len(batches) > 3
    assert _postings_by_word(kb) == _postings_of_the_table(kb)
    assert not list((kb / ".groove" / "hash").glob(f".{MANIFEST_PREFIX}*"))
