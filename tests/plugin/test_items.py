"""A golden item's failure text: short when the search returned nothing."""

from __future__ import annotations

from pytest_groove.plugin.items import describe_result
from tests.helpers import eval_factories as f


def test_a_query_answered_with_no_hit_is_three_lines() -> None:
    """An empty answer ranks nothing: no per-entry ranks, no all-zero metrics line --
    an empty store's first golden items (before the run stops) stay short."""
    result = f.query("q", 0.0, rr=0.0, expected=("a.md", "b.md"), top=())
    text = describe_result(result, (1, 5), "golden query 'q' missed: nothing expected in the top 5")
    assert text.splitlines() == [
        "golden query 'q' missed: nothing expected in the top 5",
        "  query:    query text of q",
        "  the search returned no hits (expected: a.md, b.md)",
    ]


def test_a_query_with_hits_lists_ranks_hits_and_metrics() -> None:
    result = f.query("q", 0.0, rr=0.0, top=("c.md",))
    lines = describe_result(result, (1, 5), "headline").splitlines()
    assert lines[2:4] == ["  expected:", "    a.md  not retrieved (searched 1)"]
    assert lines[4:6] == ["  top 1 of 1 hits:", "      1. c.md  (1.0000)"]
    assert lines[6].startswith("  metrics:  ")
