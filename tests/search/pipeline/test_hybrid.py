"""The hybrid search pipeline end to end through the engine facade."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.errors import GrooveError
from pytest_groove.search.pipeline.hybrid import coverage_vote
from pytest_groove.search.pipeline.rerank import register_reranker, unregister_reranker
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import (
    IndexSettings,
    MmrSettings,
    ParentRetrieverSettings,
    SearchSettings,
    Settings,
)

SETTINGS = Settings(index=IndexSettings(model="hash"))


@pytest.fixture
def engine(kb_eval_copy: Path) -> Engine:
    eng = open_engine(kb_eval_copy, SETTINGS, progress=False)
    yield eng  # type: ignore[misc]
    eng.close()


def test_ranks_are_contiguous_and_scores_descend(engine: Engine) -> None:
    # in fused order: grouping by document moves second chunks behind other documents
    hits = engine.search("rate limit headers", 10, SearchSettings(document_first=False))
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len(hits) == 10
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_exact_term_is_found_by_the_fts_leg(engine: Engine) -> None:
    hits = engine.search("Retry-After", 5)
    assert hits[0].path == "ref/rate-limiting.md"


def test_japanese_query_reaches_japanese_document(engine: Engine) -> None:
    hits = engine.search("パーセント", 5)
    assert hits and hits[0].path == "ops/deploy-canary.ja.md"


def test_limit_is_respected_and_zero_returns_nothing(engine: Engine) -> None:
    assert len(engine.search("deploy", 3)) == 3
    assert engine.search("deploy", 0) == []


def test_excluded_term_removes_chunks_from_both_legs(engine: Engine) -> None:
    plain = engine.search("database snapshot", 20)
    assert any("snapshot" in h.content.lower() for h in plain)
    hits = engine.search("database -snapshot", 20)
    assert hits
    for hit in hits:
        text = " ".join(filter(None, [hit.heading, hit.content])).lower()
        assert "snapshot" not in text


@pytest.mark.parametrize(
    "query",
    ["database -snapshot", "deploy -canary -rollback", "rate limit -headers", "the -a -e"],
)
@pytest.mark.parametrize("limit", [1, 5, 20, 60])
def test_exclusions_checked_lazily_give_the_lists_of_checking_every_candidate(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, query: str, limit: int
) -> None:
    lazy = [(h.chunk_id, h.score) for h in engine.search(query, limit)]
    searcher = type(engine._searcher)

    def every_candidate(self: object, ids: Sequence[int], parsed: object, n: int) -> list[int]:
        return searcher._drop_excluded(self, ids, parsed)[:n]  # type: ignore[arg-type]

    monkeypatch.setattr(searcher, "_first_kept", every_candidate)
    assert [(h.chunk_id, h.score) for h in engine.search(query, limit)] == lazy


def test_query_with_only_exclusions_is_an_error(engine: Engine) -> None:
    with pytest.raises(GrooveError):
        engine.search("-snapshot", 5)


def test_short_query_falls_back_to_vector_only(engine: Engine) -> None:
    hits = engine.search("ab", 3, SearchSettings(note_order=False))
    assert len(hits) == 3
    assert hits[0].score == pytest.approx(1 / 61, rel=1e-6)


def test_mmr_at_lambda_one_keeps_the_relevance_order(engine: Engine) -> None:
    base = engine.search("deploy rollback", 5, SearchSettings(note_order=False))
    mmr = SearchSettings(mmr=MmrSettings(enabled=True, lambda_=1.0))
    with_mmr = engine.search("deploy rollback", 5, mmr)
    assert [(h.path, h.heading) for h in with_mmr] == [(h.path, h.heading) for h in base]
    assert [h.score for h in with_mmr] == [h.score for h in base]


def test_mmr_same_doc_penalty_diversifies_documents(engine: Engine) -> None:
    diverse = SearchSettings(mmr=MmrSettings(enabled=True, lambda_=0.5, same_doc_penalty=1.0))
    hits = engine.search("database backup restore", 5, diverse)
    assert len({h.path for h in hits}) == len(hits)


def test_parent_retriever_expands_content(engine: Engine) -> None:
    parent = SearchSettings(parent_retriever=ParentRetrieverSettings(enabled=True))
    plain = engine.search("Retry-After", 1)
    expanded = engine.search("Retry-After", 1, parent)
    assert expanded[0].path == plain[0].path
    assert expanded[0].expanded_from is not None
    assert len(expanded[0].content) >= len(plain[0].content)


def test_search_is_deterministic_across_engines(kb_eval_copy: Path) -> None:
    with open_engine(kb_eval_copy, SETTINGS, progress=False) as first:
        a = [(h.path, h.heading, h.score) for h in first.search("how do I rotate keys", 10)]
    with open_engine(kb_eval_copy, SETTINGS, reindex=False) as second:
        b = [(h.path, h.heading, h.score) for h in second.search("how do I rotate keys", 10)]
    assert a == b


def test_fusion_weights_reach_the_fts_leg(engine: Engine) -> None:
    parsed = parse_query("review test")
    heading_heavy = engine.fts_leg(parsed, (8.0, 0.5, 0.5), 20)
    content_heavy = engine.fts_leg(parsed, (0.5, 0.5, 8.0), 20)
    assert heading_heavy and heading_heavy != content_heavy
    weights = SearchSettings(
        fusion=replace(SearchSettings().fusion, bm25_heading_weight=8.0, bm25_content_weight=0.5)
    )
    default = [(h.path, h.heading) for h in engine.search("review test", 10)]
    moved = [
        (h.path, h.heading) for h in engine.search("deploy rollback canary database", 10, weights)
    ]
    assert moved != default


def test_full_text_vote_is_what_its_best_hit_holds_of_the_query(engine: Engine) -> None:
    """A best hit holding half the query's idf weight or more votes in full; one that
    matched only the question's common words votes in part, which moves the ranking."""
    rare = parse_query("error 3007")
    assert engine.fts_vote(rare, engine.fts_leg(rare, (2.0, 1.0, 1.0), 50)) == 1.0
    question = "what should happen after something goes wrong in production"
    common = parse_query(question)
    vote = engine.fts_vote(common, engine.fts_leg(common, (2.0, 1.0, 1.0), 50))
    assert 0.0 < vote < 1.0
    assert engine.fts_vote(common, []) == 1.0  # no list, nothing to weigh
    full = SearchSettings(fts_coverage_vote=False)
    weighed = [(h.path, h.heading) for h in engine.search(question, 10)]
    assert weighed != [(h.path, h.heading) for h in engine.search(question, 10, full)]


def test_coverage_vote_is_full_from_half_the_query() -> None:
    assert [coverage_vote(c) for c in (0.0, 0.2, 0.5, 0.9, 1.0)] == [0.0, 0.4, 1.0, 1.0, 1.0]


def test_full_text_vote_is_full_when_switched_off(kb_eval_copy: Path) -> None:
    off = replace(SETTINGS, search=SearchSettings(fts_coverage_vote=False))
    with open_engine(kb_eval_copy, off, progress=False) as eng:
        common = parse_query("what should happen after something goes wrong in production")
        assert eng.fts_vote(common, eng.fts_leg(common, (2.0, 1.0, 1.0), 50)) == 1.0


def test_rrf_k_reaches_fusion(engine: Engine) -> None:
    k_small = SearchSettings(fusion=replace(SearchSettings().fusion, rrf_k=5.0))
    default = engine.search("deploy", 5)
    assert engine.search("deploy", 5, k_small)[0].score > default[0].score + 1e-3


@pytest.mark.parametrize("query", ["", "   ", '""'])
def test_empty_query_is_an_error(engine: Engine, query: str) -> None:
    with pytest.raises(GrooveError, match="empty"):
        engine.search(query, 5)


def test_accented_exclusion_is_applied_to_both_legs(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("## Menu\n\nThe café menu lists coffee and cake.\n", encoding="utf-8")
    (kb / "b.md").write_text("## Menu\n\nThe bar menu lists coffee and beer.\n", encoding="utf-8")
    with open_engine(kb, SETTINGS, progress=False) as eng:
        assert {h.path for h in eng.search("menu", 5)} == {"a.md", "b.md"}
        assert [h.path for h in eng.search("menu -cafe", 5)] == ["b.md"]
        assert [h.path for h in eng.search("menu -CAFÉ", 5)] == ["b.md"]


class _FlakyReranker:
    name = "flaky-test-reranker"

    def __init__(self, short: bool = False) -> None:
        self.short = short

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        scores = [float("nan") if i % 2 else float(i) for i in range(len(documents))]
        return scores[:-1] if self.short else scores


def test_reranker_scores_order_hits_and_nan_sorts_last(kb_eval_copy: Path) -> None:
    register_reranker("flaky", _FlakyReranker)
    try:
        settings = replace(SETTINGS, search=replace(SETTINGS.search, reranker="flaky"))
        with open_engine(kb_eval_copy, settings, progress=False) as eng:
            hits = eng.search("deploy", 10)
    finally:
        unregister_reranker("flaky")
    scores = [h.score for h in hits]
    finite = [s for s in scores if not math.isnan(s)]
    assert finite == sorted(finite, reverse=True) and len(finite) == 10
    assert [h.rank for h in hits] == list(range(1, 11))


def test_reranker_returning_too_few_scores_is_one_clear_error(kb_eval_copy: Path) -> None:
    register_reranker("short", lambda: _FlakyReranker(short=True))
    try:
        settings = replace(SETTINGS, search=replace(SETTINGS.search, reranker="short"))
        with (
            open_engine(kb_eval_copy, settings, progress=False) as eng,
            pytest.raises(GrooveError, match="one score per document"),
        ):
            eng.search("deploy", 5)
    finally:
        unregister_reranker("short")
