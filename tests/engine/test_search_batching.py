"""Golden queries embedded in one batch, and single queries on one faiss thread:
the same results as one query at a time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import faiss

from pytest_groove.embed.base import Matrix
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.kb.derived.vectors import one_faiss_thread
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))
QUERIES = [
    "how do I roll back a deploy",
    "バックアップ",
    'deploy -"feature flag"',
    "how do I roll back a deploy",  # a duplicate is embedded once
    "-alone",  # refused by its own search, skipped when preparing
]


class QueryCounter:
    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.query_calls: list[int] = []

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.query_calls.append(len(texts))
        return self.inner.embed_queries(texts)


def _results(engine: Engine, queries: Sequence[str]) -> list[list[tuple[str, float]]]:
    return [[(h.path, h.score) for h in engine.search(q, 5)] for q in queries]


def test_prepared_queries_are_embedded_once_and_search_the_same(kb_eval_copy: Path) -> None:
    plain = QueryCounter()
    with open_engine(kb_eval_copy, SETTINGS, embedder=plain) as engine:
        expected = _results(engine, QUERIES[:3])
    assert plain.query_calls == [1, 1, 1]

    batched = QueryCounter()
    with open_engine(kb_eval_copy, SETTINGS, embedder=batched, reindex=False) as engine:
        engine.prepare_queries(QUERIES)
        assert batched.query_calls == [3]
        assert _results(engine, QUERIES[:3]) == expected
        assert batched.query_calls == [3]  # no further embedding
        engine.search("an unprepared query", 5)
        assert batched.query_calls == [3, 1]


def test_one_faiss_thread_restores_the_setting() -> None:
    before = faiss.omp_get_max_threads()
    with one_faiss_thread():
        assert faiss.omp_get_max_threads() == 1
    assert faiss.omp_get_max_threads() == before
