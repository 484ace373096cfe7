"""Language centring of the vector leg (kb.vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_groove.engine.builtin import open_engine
from pytest_groove.kb.derived import vectors
from pytest_groove.kb.derived.vectors import VectorIndex, group_means
from pytest_groove.settings.config import IndexSettings, Settings


def _unit(*rows: list[float]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# axis 0 says which language a text is in; axes 1-3 are three topics A, B, C
JA_B, JA_A = [2.0, 0.0, 1.0, 0.0], [2.0, 1.0, 0.0, 0.0]
EN_A, EN_C = [-2.0, 1.0, 0.0, 0.0], [-2.0, 0.0, 0.0, 1.0]
IDS = np.asarray([1, 2, 3, 4], dtype=np.int64)
MATRIX = _unit(JA_B, JA_A, EN_A, EN_C)
GROUPS = ["ja", "ja", "other", "other"]
EN_QUERY_ABOUT_B = _unit([-2.0, 0.0, 1.0, 0.0])[0]


def test_uncentred_index_prefers_the_query_language() -> None:
    index = VectorIndex.build(IDS, MATRIX, 4)
    assert index.means == {}
    query = index.prepare_query(EN_QUERY_ABOUT_B, "topic b in english")
    assert index.search(query, 1) == [3]  # an English chunk about the wrong topic


def test_centring_finds_the_answer_in_the_other_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vectors, "CENTRING_PRIOR_CHUNKS", 0.0)
    index = VectorIndex.build(IDS, MATRIX, 4, GROUPS)
    assert sorted(index.means) == ["ja", "other"]
    query = index.prepare_query(EN_QUERY_ABOUT_B, "topic b in english")
    assert index.search(query, 1) == [1]


def test_one_group_is_not_centred() -> None:
    index = VectorIndex.build(IDS, MATRIX, 4, ["other"] * 4)
    assert index.means == {}
    assert np.array_equal(index.vector(3), MATRIX[2])


def test_a_small_group_is_pulled_towards_the_overall_mean() -> None:
    matrix = _unit(*([EN_A] * 3), JA_B)
    means = group_means(matrix, ["other"] * 3 + ["ja"])
    overall = matrix.mean(axis=0)
    # one Japanese chunk: its group mean is mostly the overall mean, not the chunk itself
    assert np.linalg.norm(means["ja"] - overall) < np.linalg.norm(means["ja"] - matrix[3])


def test_a_minority_language_leaves_the_index_uncentred() -> None:
    # 3 of 16 chunks (under a quarter) in a second language: searched as stored
    matrix = _unit(*([EN_A] * 13), *([JA_B] * 3))
    assert group_means(matrix, ["other"] * 13 + ["ja"] * 3) == {}
    assert sorted(group_means(matrix, ["other"] * 12 + ["ja"] * 4)) == ["ja", "other"]


def test_centred_cache_is_reused_with_its_means(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "en.md").write_text("## Brakes\nBleeding hydraulic disc brakes step by step.\n")
    (kb / "ja.md").write_text("## ブレーキ\n油圧ディスクブレーキのエア抜きの手順です。\n")
    settings = Settings(index=IndexSettings(model="hash"))
    with open_engine(kb, settings, progress=False) as first:
        means = first.vectors.means
        hits = [h.path for h in first.search("ブレーキのエア抜き", 2)]
    assert sorted(means) == ["ja", "other"]
    with open_engine(kb, settings, progress=False) as second:
        assert sorted(second.vectors.means) == ["ja", "other"]
        assert all(np.array_equal(means[k], second.vectors.means[k]) for k in means)
        assert [h.path for h in second.search("ブレーキのエア抜き", 2)] == hits
