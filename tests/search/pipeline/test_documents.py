"""Document-first ordering: each document's best chunk ahead of any second chunk."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.search.pipeline.documents import documents_first
from pytest_groove.settings.config import IndexSettings, MmrSettings, SearchSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))
QUERY = "database snapshot replay"


def test_first_chunks_keep_their_order_and_repeats_follow_in_order() -> None:
    ranked = [("a", 1), ("a", 2), ("b", 1), ("a", 3), ("c", 1), ("b", 2)]
    assert documents_first(ranked, lambda item: item[0]) == [
        ("a", 1),
        ("b", 1),
        ("c", 1),
        ("a", 2),
        ("a", 3),
        ("b", 2),
    ]


def test_nothing_is_dropped_or_added() -> None:
    assert documents_first([], lambda item: item) == []
    assert documents_first([3, 3, 3], lambda item: item) == [3, 3, 3]


@pytest.fixture
def engine(kb_eval_copy: Path) -> Engine:
    eng = open_engine(kb_eval_copy, SETTINGS, progress=False)
    yield eng  # type: ignore[misc]
    eng.close()


def _repeats_before_new(paths: list[str]) -> bool:
    seen: set[str] = set()
    repeated = False
    for path in paths:
        if path in seen:
            repeated = True
        elif repeated:
            return True  # a new document after a repeat
        seen.add(path)
    return False


def test_search_lists_every_document_before_a_second_chunk(engine: Engine) -> None:
    plain = engine.search(QUERY, 10, SearchSettings(document_first=False))
    grouped = engine.search(QUERY, 10)
    # the fused list itself repeats a document before a new one (else nothing to test)
    assert _repeats_before_new([h.path for h in plain])
    assert not _repeats_before_new([h.path for h in grouped])
    # the grouped list draws on the whole fused pool, so it reaches more documents
    assert len({h.path for h in grouped}) > len({h.path for h in plain})
    assert grouped[0].chunk_id == plain[0].chunk_id
    assert [h.rank for h in grouped] == list(range(1, 11))


def test_low_confidence_flag_judges_the_fused_scores(engine: Engine) -> None:
    for query in (QUERY, "deploy", "rate limit headers"):
        plain = engine.search_response(query, 10, SearchSettings(document_first=False))
        grouped = engine.search_response(query, 10)
        assert grouped.low_confidence == plain.low_confidence


def test_mmr_orders_the_pool_its_own_way(engine: Engine) -> None:
    mmr = replace(SearchSettings(), mmr=MmrSettings(enabled=True))
    on = engine.search(QUERY, 10, mmr)
    off = engine.search(QUERY, 10, replace(mmr, document_first=False))
    assert [h.chunk_id for h in on] == [h.chunk_id for h in off]
