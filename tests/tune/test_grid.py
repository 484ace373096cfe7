"""The fusion grid: axes, condition identity, defaults and the TOML snippet."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.settings.config import FusionParams, parse_settings
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    DEFAULT_INDEX,
    N_CONDITIONS,
    RRF_K_VALUES,
    WEIGHT_VALUES,
    Condition,
    all_conditions,
    axis_indices,
    condition_index,
    toml_number,
    toml_snippet,
    weight_triples,
)


def test_grid_shape_matches_the_seed() -> None:
    assert RRF_K_VALUES == (5.0, 10.0, 20.0, 30.0, 60.0, 100.0)
    assert WEIGHT_VALUES == (0.5, 1.0, 2.0, 4.0)
    assert N_CONDITIONS == 384
    assert len(list(all_conditions())) == 384
    assert len(list(weight_triples())) == 64


def test_condition_index_is_a_bijection_in_grid_order() -> None:
    seen = [c.index for c in all_conditions()]
    assert seen == list(range(384))
    for index in range(384):
        assert condition_index(*axis_indices(index)) == index


def test_six_conditions_of_one_weight_triple_are_contiguous() -> None:
    for w, weights in weight_triples():
        block = [Condition.from_index(i) for i in range(w * 6, w * 6 + 6)]
        assert {c.weights for c in block} == {weights}
        assert [c.rrf_k for c in block] == list(RRF_K_VALUES)


def test_default_condition_is_226_and_equals_the_production_defaults() -> None:
    assert DEFAULT_INDEX == 226
    assert DEFAULT_CONDITION.index == 226
    assert DEFAULT_CONDITION.params == FusionParams()
    assert DEFAULT_CONDITION.params.is_default
    assert DEFAULT_CONDITION.is_default
    assert not Condition.from_index(225).is_default


def test_labels() -> None:
    assert DEFAULT_CONDITION.label == "h=2.0 ctx=1.0 content=1.0 k=60"
    assert Condition(0, 1, 3, 0).label == "h=0.5 ctx=1.0 content=4.0 k=5"


def test_centre_distance_in_index_units() -> None:
    assert DEFAULT_CONDITION.centre_distance() == 3.0
    assert Condition(1, 1, 1, 4).centre_distance() == 3.0
    assert Condition(0, 0, 0, 4).centre_distance() == 6.0
    assert Condition(1, 2, 1, 2).centre_distance() == 2.0


@pytest.mark.parametrize("bad", [-1, 384])
def test_out_of_range_indices_are_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        axis_indices(bad)
    with pytest.raises(ValueError):
        condition_index(0, 0, 0, 6)


def test_toml_numbers_always_carry_a_decimal_point() -> None:
    assert [toml_number(v) for v in (10, 4.0, 60.0, 100.0, 0.5)] == [
        "10.0",
        "4.0",
        "60.0",
        "100.0",
        "0.5",
    ]


def test_snippet_is_pasteable_and_round_trips() -> None:
    cond = Condition(3, 0, 1, 1)  # h=4.0 ctx=0.5 content=1.0 k=10
    snippet = toml_snippet(cond)
    assert snippet == (
        "[search.fusion]\n"
        "rrf_k = 10.0\n"
        "bm25_heading_weight = 4.0\n"
        "bm25_context_weight = 0.5\n"
        "bm25_content_weight = 1.0\n"
    )
    settings = parse_settings(tomllib.loads(snippet), Path("groove.toml"))
    assert settings.search.fusion == cond.params


@given(st.integers(min_value=0, max_value=383))
def test_every_snippet_parses_validates_and_reproduces_its_condition(index: int) -> None:
    cond = Condition.from_index(index)
    settings = parse_settings(tomllib.loads(toml_snippet(cond)), Path("groove.toml"))
    assert settings.search.fusion == cond.params
    data = tomllib.loads(toml_snippet(cond))["search"]["fusion"]
    assert all(isinstance(v, float) for v in data.values())
    assert cond.to_json() == data
