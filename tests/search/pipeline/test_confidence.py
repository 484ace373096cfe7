"""The low_confidence flag."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.search.pipeline.confidence import DEFAULT_MIN_CONFIDENCE_RATIO, low_confidence
from pytest_groove.settings.config import SearchSettings


def test_dominant_top_hit_is_confident() -> None:
    # 0.6 / 0.225 = 2.67 >= 1.5
    assert low_confidence([0.6, 0.1, 0.1, 0.1], 1.5) is False


def test_flat_scores_are_low_confidence() -> None:
    assert low_confidence([0.3, 0.3, 0.3, 0.3], 1.5) is True


def test_fewer_than_two_hits_is_never_flagged() -> None:
    assert low_confidence([], 1.5) is False
    assert low_confidence([0.3], 1.5) is False


def test_zero_or_negative_mean_is_never_flagged() -> None:
    assert low_confidence([0.0, 0.0], 1.5) is False
    assert low_confidence([-2.0, -3.5, -7.0], 1.5) is False  # typical reranker logits
    assert low_confidence([1.0, -1.0], 1.5) is False


def test_ratio_zero_disables_the_check() -> None:
    assert low_confidence([0.3, 0.3, 0.3], 0.0) is False
    assert low_confidence([0.3, 0.3, 0.3], math.nan) is False


def test_threshold_is_strict() -> None:
    # max / mean = 0.75 / 0.5 = 1.5 exactly: not below 1.5
    assert low_confidence([0.75, 0.25], 1.5) is False
    assert low_confidence([0.75, 0.25], 1.5000001) is True


def test_non_finite_scores_are_not_flagged() -> None:
    assert low_confidence([math.nan, 0.3], 1.5) is False
    assert low_confidence([math.inf, 0.3], 1.5) is False


def test_default_ratio() -> None:
    assert DEFAULT_MIN_CONFIDENCE_RATIO == SearchSettings().min_confidence_ratio == 1.1


@settings(deadline=None)  # no per-example deadline: CI machines are busy
@given(
    scores=st.lists(st.floats(-10, 10, allow_nan=False), min_size=0, max_size=12),
    ratio=st.floats(0.0, 5.0),
    data=st.data(),
)
def test_property_order_independent(scores: list[float], ratio: float, data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(scores))
    assert low_confidence(scores, ratio) is low_confidence(shuffled, ratio)


@settings(deadline=None)
@given(scores=st.lists(st.floats(0.001, 10), min_size=2, max_size=12), ratio=st.floats(0.1, 5))
def test_property_matches_the_definition_for_positive_scores(
    scores: list[float], ratio: float
) -> None:
    mean = math.fsum(scores) / len(scores)
    assert low_confidence(scores, ratio) is (max(scores) / mean < ratio)


@pytest.mark.parametrize("ratio", [1.0, 1.5, 3.0])
def test_single_positive_score_among_zeros(ratio: float) -> None:
    # [1, 0, 0, 0]: max / mean = 4
    assert low_confidence([1.0, 0.0, 0.0, 0.0], ratio) is (ratio > 4.0)
