"""Helpers of the ``groove tune`` command (its behaviour is tested in tests/cli/test_tune.py)."""

from __future__ import annotations

import pytest

from pytest_groove.cli.tune import (
    CONTEXT_NOOP_WARNING,
    not_measurable_message,
    tune_k_values,
    tune_limit,
)
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.tune.sweep import run_preflight
from tests.tune.test_sweep import FakeSource, fixed


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ((1, 10), (1, 5, 10)),
        ((10, 5, 1, 5), (1, 5, 10)),
        ((3,), (3, 5)),
        ((5,), (5,)),
        ((1, 20), (1, 5, 20)),
        ((2000,), (5, 1000)),
    ],
)
def test_k_list_always_holds_the_primary_k(
    given: tuple[int, ...], expected: tuple[int, ...]
) -> None:
    assert tune_k_values(given) == expected


@pytest.mark.parametrize(
    ("limit", "k_values", "expected"),
    [(1, (1, 5, 10), 10), (100, (1, 5), 100), (3, (5,), 5), (10, (1, 5, 10), 10)],
)
def test_limit_is_never_below_the_largest_k(
    limit: int, k_values: tuple[int, ...], expected: int
) -> None:
    assert tune_limit(limit, k_values) == expected


def test_not_measurable_message_lists_every_query() -> None:
    src = FakeSource(vec={"alpha": [1], "beta": [2]}, fts={"alpha": fixed([1]), "beta": fixed([])})
    queries = [
        GoldenQuery(id="a-id", query="alpha", expected=(ExpectedEntry("x.md"),)),
        GoldenQuery(id="b-id", query="beta", expected=(ExpectedEntry("y.md"),)),
    ]
    text = not_measurable_message(run_preflight(src, queries, 10, (5,)))
    lines = text.splitlines()
    assert lines[0].startswith("groove tune: none of the 2 golden queries")
    assert "fewer than 2 FTS candidates" in lines[0]
    assert lines[-2:] == ["  a-id: FTS candidates = 1", "  b-id: FTS candidates = 0"]
    assert text.isascii()


def test_context_warning_is_the_seed_text() -> None:
    """groove-eval.md spells it ``WARNING —`` (an em dash, which a terminal that cannot
    show it gets as ``-``); the rest is ASCII."""
    assert CONTEXT_NOOP_WARNING.replace("\u2014", "").isascii()
    assert CONTEXT_NOOP_WARNING.splitlines() == [
        "groove tune: WARNING \u2014 every chunk has an empty context column, so the",
        "bm25_context_weight axis is a no-op on this KB (contextual retrieval is off).",
        'Its rows below mean "not measured", not "has no effect".',
    ]
