"""The full-text leg ranked from kept per-phrase bm25 terms equals FTS5's ORDER BY bm25."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import KB_EVAL, KB_EVAL_GOLDEN, LOCAL_STATE, REPO_ROOT
from pytest_groove.engine.builtin import Engine, open_engine, run_indexer
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.kb.derived.phrase_scores import PhraseScores, or_phrases
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings

KB_BILINGUAL = REPO_ROOT / "tests" / "corpora" / "kb-bilingual"
KB_BILINGUAL_GOLDEN = REPO_ROOT / "tests" / "corpora" / "kb-bilingual-golden.yml"
#: the static context mode fills the ``context`` column too, so all three weights count
SETTINGS = Settings(index=IndexSettings(model="hash", contextual=True))
V4 = replace(SETTINGS, search=SearchSettings(fts_query_version=4))
WEIGHTS = [(2.0, 1.0, 1.0), (1.0, 1.0, 1.0), (0.5, 3.0, 1.5), (1.0, 0.0, 0.25)]


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Engine]]:
    """kb-eval and kb-bilingual, indexed with both full-text tables."""
    opened: dict[str, Engine] = {}
    for name, source in (("kb-eval", KB_EVAL), ("kb-bilingual", KB_BILINGUAL)):
        kb = tmp_path_factory.mktemp(name) / name
        shutil.copytree(source, kb, ignore=LOCAL_STATE)
        opened[name] = open_engine(kb, V4, progress=False)
    yield opened
    for engine in opened.values():
        engine.close()


def golden_queries() -> list[str]:
    queries = [q.query for q in load_golden(KB_EVAL_GOLDEN, KB_EVAL).queries]
    queries += [q.query for q in load_golden(KB_BILINGUAL_GOLDEN, KB_BILINGUAL).queries]
    # exclusions and the whole-query fallback take the other two expression shapes
    queries += [f"{q} -the -設定" for q in queries[:10]]
    return [*queries, "xy", '"rolling back" deploy', "そう"]


def expressions(query: str) -> list[tuple[str, str]]:
    out = []
    for version in (3, 4):
        parsed = parse_query(query, require_positive=False, version=version)
        if parsed.fts is not None:
            out.append((parsed.fts, parsed.fts_table))
    return out


def golden_expressions(
    engines: dict[str, Engine],
) -> Iterator[tuple[Engine, PhraseScores, str, str]]:
    """Every corpus's golden queries compiled by both compilers, with fresh kept scores."""
    for engine in engines.values():
        scores = PhraseScores(engine.store)
        for query in golden_queries():
            for expression, table in expressions(query):
                yield engine, scores, expression, table


def test_golden_queries_rank_exactly_as_fts5_does(engines: dict[str, Engine]) -> None:
    compared = 0
    for engine, scores, expression, table in golden_expressions(engines):
        for weights in WEIGHTS:
            for limit in (1, 7, 50, 10_000):
                expected = engine.store.fts_candidates(expression, weights, limit, table)
                assert scores.candidates(expression, weights, limit, table) == expected
                compared += bool(expected)
    assert compared > 1000


#: English words common and rare, Japanese runs of each script, case and accents
_VOCABULARY = (
    "backup restore deploy rollback index search query the and with for from "
    "vector embedding pipeline 設定 検索 牛乳 バックアップ 再ランキング "
    "Restore DEPLOY rôle naïve co-op e-mail x y"
)
_WORDS = st.sampled_from(_VOCABULARY.split())
_QUERIES = st.lists(
    st.one_of(_WORDS, _WORDS.map(lambda w: f"-{w}"), _WORDS.map(lambda w: f'"{w} data"')),
    min_size=1,
    max_size=8,
).map(" ".join)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=_QUERIES, weights=st.sampled_from(WEIGHTS), limit=st.integers(1, 60))
def test_generated_queries_rank_exactly_as_fts5_does(
    engines: dict[str, Engine], query: str, weights: tuple[float, float, float], limit: int
) -> None:
    for engine in engines.values():
        scores = PhraseScores(engine.store)
        try:
            shapes = expressions(query)
        except GrooveError:
            return  # only exclusions: refused before any search
        for expression, table in shapes:
            expected = engine.store.fts_candidates(expression, weights, limit, table)
            assert scores.candidates(expression, weights, limit, table) == expected
            # and again from the kept phrases
            assert scores.candidates(expression, weights, limit, table) == expected


def test_scores_are_fts5_bm25_bit_for_bit(engines: dict[str, Engine]) -> None:
    checked = 0
    for engine, scores, expression, table in golden_expressions(engines):
        phrases = or_phrases(expression)
        assert phrases is not None
        for weights in WEIGHTS:
            scored = scores._scored(*phrases, weights, table)
            assert scored is not None
            rows = engine.store.conn.execute(
                f"SELECT rowid, bm25({table}, ?, ?, ?) FROM {table} "
                f"WHERE {table} MATCH ? ORDER BY rowid",
                (*weights, expression),
            ).fetchall()
            assert scored[0].tolist() == [r[0] for r in rows]
            assert scored[1].tolist() == [r[1] for r in rows]  # exact, not approx
            checked += len(rows)
    assert checked > 10_000


def test_kept_phrases_stay_within_their_budget_and_still_rank_exactly(
    engines: dict[str, Engine],
) -> None:
    store = engines["kb-eval"].store
    scores = PhraseScores(store, budget_bytes=4096)
    for query in golden_queries():
        for expression, table in expressions(query):
            want = store.fts_candidates(expression, WEIGHTS[0], 10, table)
            assert scores.candidates(expression, WEIGHTS[0], 10, table) == want
            assert 0 < scores._bytes <= 4096


def test_a_write_to_the_index_empties_the_kept_phrases(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\n## One\n\nbackup the database nightly\n")
    (kb / "b.md").write_text("# B\n\n## Two\n\nrestore the database from a backup\n")
    with open_engine(kb, SETTINGS, progress=False) as engine:
        scores = PhraseScores(engine.store)
        expression = parse_query("database backup").fts
        assert expression is not None
        before = scores.candidates(expression, WEIGHTS[0], 10)
        assert len(before) == 2
        (kb / "c.md").write_text("# C\n\n## Three\n\ndatabase database backup backup\n")
        run_indexer(kb, SETTINGS, progress=False)  # another connection writes
        after = scores.candidates(expression, WEIGHTS[0], 10)
        assert after == engine.store.fts_candidates(expression, WEIGHTS[0], 10)
        assert len(after) == 3


def test_other_shapes_and_refused_phrases_go_to_sqlite_as_before(
    engines: dict[str, Engine],
) -> None:
    store = engines["kb-eval"].store
    scores = PhraseScores(store)
    for expression in ["NEAR(backup restore)", "backup AND restore", '"backup" OR restore']:
        assert or_phrases(expression) is None
        assert scores.candidates(expression, WEIGHTS[0], 5) == store.fts_candidates(
            expression, WEIGHTS[0], 5
        )
    with pytest.raises(GrooveError, match="refused by SQLite"):
        scores.candidates("(((", WEIGHTS[0], 5)


@pytest.mark.parametrize(
    ("expression", "phrases"),
    [
        ('"a"', (['"a"'], [])),
        ('"a b" OR "c""d"', (['"a b"', '"c""d"'], [])),
        ('("a" OR "b") NOT ("c")', (['"a"', '"b"'], ['"c"'])),
        ('"a" OR', None),
        ('("a") NOT "c"', None),
        ("a", None),
    ],
)
def test_or_phrases(expression: str, phrases: tuple[list[str], list[str]] | None) -> None:
    assert or_phrases(expression) == phrases
