"""The optional approximate vector index (HNSW): reproducible, cached per kind,
and close to the exact one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_groove.engine.builtin import index_dir_for, open_engine
from pytest_groove.kb.derived.vectors import VectorIndex
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))
HNSW = replace(SETTINGS, index=replace(SETTINGS.index, vector_index="hnsw"))


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_hnsw_builds_the_same_graph_every_time_and_finds_most_true_neighbours() -> None:
    matrix = _random(3000, 32, 1)
    ids = np.arange(10, 3010, dtype=np.int64)
    queries = _random(40, 32, 2)
    exact = VectorIndex.build(ids, matrix, 32)
    first = VectorIndex.build(ids, matrix, 32, kind="hnsw")
    second = VectorIndex.build(ids, matrix, 32, kind="hnsw")
    found = 0
    for query in queries:
        truth = exact.search(query, 10)
        approx = first.search(query, 10)
        assert approx == second.search(query, 10)
        found += len(set(truth) & set(approx))
    assert found / (10 * len(queries)) > 0.9


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown vector index kind 'ivf'"):
        VectorIndex.build(np.zeros(0, dtype=np.int64), np.zeros((0, 4), np.float32), 4, kind="ivf")


def test_engine_opens_each_kind_with_its_own_cache(kb_eval_copy: Path) -> None:
    with open_engine(kb_eval_copy, SETTINGS) as engine:
        assert engine.vectors.kind == "flat"
        exact = [h.path for h in engine.search("rollback", 5)]
    with open_engine(kb_eval_copy, HNSW, reindex=False) as engine:
        assert engine.vectors.kind == "hnsw"
        # 60 chunks: the graph's search breadth covers all of them
        assert [h.path for h in engine.search("rollback", 5)] == exact
    caches = sorted(
        p.name
        for p in index_dir_for(kb_eval_copy.resolve(), SETTINGS, "hash").glob("vectors*.faiss")
    )
    assert len(caches) == 1 and caches[0].startswith("vectors-hnsw-")
    with open_engine(kb_eval_copy, HNSW, reindex=False) as engine:  # read from the cache
        assert engine.vectors.kind == "hnsw" and engine.vectors.size == 60
