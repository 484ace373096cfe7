"""The sweep against a real index (hash embedder, the kb-eval corpus).

The central check: the shared-list sweep gives, cell for cell, the metrics of
running ``engine.search`` with that condition's ``[search.fusion]`` -- the door
``groove eval`` uses -- so tune measures exactly what eval would.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import replace

import pytest

from conftest import REPO_ROOT
from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.scoring.metrics import query_metrics
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from pytest_groove.tune.grid import Condition, all_conditions
from pytest_groove.tune.sweep import (
    MetricTable,
    Preflight,
    build_metric_table,
    run_preflight,
)

CORPORA = REPO_ROOT / "tests" / "corpora"
SETTINGS = Settings(index=IndexSettings(model="hash"))
K_VALUES = (1, 5, 10)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    kb = tmp_path_factory.mktemp("tune") / "kb"
    shutil.copytree(CORPORA / "kb-eval", kb)
    eng = open_engine(kb, SETTINGS, progress=False)
    yield eng
    eng.close()


def _sweep(
    engine: Engine,
    queries: list[GoldenQuery],
    limit: int,
    document_first: bool = True,
    note_order: bool = True,
) -> tuple[Preflight, MetricTable]:
    source = engine
    with engine.read_snapshot():
        pre = run_preflight(
            source, queries, limit, K_VALUES, document_first=document_first, note_order=note_order
        )
        table = build_metric_table(source, pre)
    return pre, table


def _assert_matches_search(
    engine: Engine,
    queries: list[GoldenQuery],
    table: MetricTable,
    conditions: list[Condition],
    limit: int,
    document_first: bool = True,
    note_order: bool = True,
) -> None:
    for row, query in enumerate(queries):
        for cond in conditions:
            search = replace(
                SearchSettings(),
                fusion=cond.params,
                document_first=document_first,
                note_order=note_order,
            )
            hits = engine.search(query.query, limit, search)
            want = query_metrics(query.expected, hits, K_VALUES)
            for k in K_VALUES:
                assert table.ndcg[k][row, cond.index] == want.ndcg_at_k[k], (query.id, cond.label)
                assert table.recall[k][row, cond.index] == want.recall_at_k[k]
            assert table.rr[row, cond.index] == want.reciprocal_rank


def _q(ident: str, text: str, *paths: str) -> GoldenQuery:
    return GoldenQuery(id=ident, query=text, expected=tuple(ExpectedEntry(p) for p in paths))


SAMPLE = [
    _q("en", "how long are database backups kept", "ops/database-backup.md"),
    _q("excl", "database -snapshot", "ops/database-restore.md"),
    _q("ja", "本番に出した変更を前のバージョンへ戻したい", "ops/deploy-rollback.ja.md"),
    # two answers: where each document's second chunk goes decides recall@k
    _q("multi", "database snapshot replay", "ops/database-backup.md", "ops/database-restore.md"),
    # its full-text list matches only common words: a partial vote in both fusions
    _q(
        "vote",
        "what should happen after something goes wrong in production",
        "ops/incident-postmortem.md",
    ),
]


@pytest.mark.parametrize(
    ("document_first", "note_order"), [(True, True), (True, False), (False, False)]
)
def test_sweep_equals_engine_search_for_every_condition(
    engine: Engine, document_first: bool, note_order: bool
) -> None:
    pre, table = _sweep(engine, SAMPLE, 10, document_first, note_order)
    assert pre.note_order == note_order
    assert pre.chunk_total == 60
    assert pre.pool_size == 50
    # every seventh condition (all six k and all weights get visited) keeps this in
    # the default run; the slow test below checks every cell of the golden set
    conditions = list(all_conditions())[::7]
    _assert_matches_search(engine, SAMPLE, table, conditions, 10, document_first, note_order)


@pytest.mark.parametrize(
    ("document_first", "note_order"), [(True, True), (True, False), (False, False)]
)
def test_sweep_weighs_the_full_text_vote_as_search_does(
    engine: Engine, document_first: bool, note_order: bool
) -> None:
    pre, table = _sweep(engine, SAMPLE[-1:], 10, document_first, note_order)
    assert 0.0 < pre.queries[0].fts_vote_default < 1.0
    conditions = list(all_conditions())
    _assert_matches_search(engine, SAMPLE[-1:], table, conditions, 10, document_first, note_order)


def test_sweep_equals_engine_search_at_a_longer_limit(engine: Engine) -> None:
    pre, table = _sweep(engine, SAMPLE[:1], 12)
    assert pre.pool_size == 60
    picks = [c for c in all_conditions() if c.index % 37 == 0]
    _assert_matches_search(engine, SAMPLE[:1], table, picks, 12)


def test_exclusion_is_applied_to_both_legs(engine: Engine) -> None:
    pre, _ = _sweep(engine, SAMPLE[1:2], 10)
    prepared = pre.queries[0]
    labels = engine.chunk_labels(prepared.vec_ids + prepared.fts_default)
    texts = {
        (t.path, t.heading): " ".join(filter(None, [t.heading, t.context, t.content])).lower()
        for t in engine.iter_chunk_texts()
    }
    for cid in prepared.vec_ids + prepared.fts_default:
        assert "snapshot" not in texts[labels[cid]]


def test_effective_queries_on_the_golden_set(engine: Engine) -> None:
    golden = load_golden(CORPORA / "kb-eval-golden.yml", engine.kb)
    source = engine
    with engine.read_snapshot():
        pre = run_preflight(source, list(golden.queries), 10, K_VALUES)
    assert len(pre.queries) == 30
    assert 0 < len(pre.effective) < 30
    assert pre.context_axis_noop  # kb-eval is indexed with [contextual] off here
    for q in pre.queries:
        d = q.diagnostics
        assert d.fts_candidates <= pre.pool_size
        assert d.vec_fts_overlap <= d.fts_candidates
        assert d.fts_total_matches >= d.fts_candidates


@pytest.mark.slow
def test_sweep_equals_engine_search_on_the_whole_golden_set(engine: Engine) -> None:
    golden = load_golden(CORPORA / "kb-eval-golden.yml", engine.kb)
    queries = list(golden.queries)
    _, table = _sweep(engine, queries, 10)
    _assert_matches_search(engine, queries, table, list(all_conditions()), 10)
