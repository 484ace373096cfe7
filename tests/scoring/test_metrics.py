"""Metrics: the hit rule, recall@k, RR/MRR, nDCG@k (metric_version 2), aggregation."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.scoring.metrics import (
    METRIC_VERSION,
    AggregateMetrics,
    QueryMetrics,
    aggregate,
    entry_satisfied,
    expected_ranks,
    heading_matches,
    is_miss,
    ndcg_at_k,
    query_metrics,
    recall_at_k,
    reciprocal_rank,
)
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.search.hits import SearchHit


@dataclass(frozen=True)
class Hit:
    rank: int
    path: str
    heading: str | None = None


def hits(*labels: str) -> list[Hit]:
    """``"a"`` is a hit on path a without heading; ``"a/X"`` has heading X."""
    out = []
    for position, label in enumerate(labels, start=1):
        path, _, heading = label.partition("/")
        out.append(Hit(position, path, heading or None))
    return out


def exp(*labels: str) -> list[ExpectedEntry]:
    out = []
    for label in labels:
        path, _, heading = label.partition("/")
        out.append(ExpectedEntry(path, heading or None))
    return out


def idcg(n: int) -> float:
    total = 0.0
    for i in range(1, n + 1):
        total += 1 / math.log2(i + 1)
    return total


def test_metric_version_is_two() -> None:
    assert METRIC_VERSION == 2


# ----------------------------------------------------------------- hit rule (15-17)


def test_path_only_entry_matches_any_heading_of_that_path_only() -> None:
    entry = ExpectedEntry("docs/a.md")
    assert entry_satisfied(entry, "docs/a.md", "Anything")
    assert entry_satisfied(entry, "docs/a.md", None)
    assert not entry_satisfied(entry, "docs/b.md", "Anything")


def test_heading_match_ignores_case_and_outer_whitespace() -> None:
    assert entry_satisfied(ExpectedEntry("a.md", "Data Flow"), "a.md", "  data flow ")


def test_different_headings_do_not_match() -> None:
    assert not entry_satisfied(ExpectedEntry("a.md", "Data flow"), "a.md", "Control flow")


def test_path_compare_is_exact() -> None:
    entry = ExpectedEntry("docs/a.md")
    assert not entry_satisfied(entry, "Docs/a.md", None)
    assert not entry_satisfied(entry, "./docs/a.md", None)


def test_inner_whitespace_is_significant() -> None:
    assert not heading_matches("Data  flow", "Data flow")


def test_expected_heading_never_matches_missing_hit_heading() -> None:
    assert not heading_matches("", None)
    assert not heading_matches("X", None)
    assert heading_matches("", "   ")
    assert heading_matches(None, None)


def test_heading_trim_is_unicode_white_space() -> None:
    # U+3000 and NBSP are White_Space; U+001F (unit separator) is not, although
    # Python's str.isspace() says it is.
    assert heading_matches("\u3000Überblick\xa0", "überblick")
    assert not heading_matches("\x1fIntro", "intro")


def test_heading_lowercase_is_full_unicode() -> None:
    assert heading_matches("ΟΔΟΣ", "οδος")
    assert heading_matches("STRASSE", "strasse")
    assert heading_matches("ÉTÉ", "été")


# ----------------------------------------------------------------- recall (18-21)


def test_recall_is_one_when_both_expected_in_top_three() -> None:
    assert recall_at_k(exp("a", "b"), hits("b", "x", "a"), 5) == 1.0


def test_recall_at_two_is_half_when_second_expected_at_rank_three() -> None:
    assert recall_at_k(exp("a", "b"), hits("a", "x", "b"), 2) == 0.5


def test_recall_empty_expected_is_zero() -> None:
    assert recall_at_k([], hits("a"), 5) == 0.0


def test_recall_empty_hits_is_zero() -> None:
    assert recall_at_k(exp("a"), [], 5) == 0.0


def test_recall_at_zero_is_zero() -> None:
    assert recall_at_k(exp("a"), hits("a"), 0) == 0.0


def test_recall_has_no_one_to_one_consumption() -> None:
    # one chunk satisfies both a duplicate pair and a path-only + heading pair
    assert recall_at_k(exp("a", "a"), hits("a"), 5) == 1.0
    assert recall_at_k(exp("a", "a/X"), hits("a/X"), 5) == 1.0


def test_recall_window_shorter_than_k() -> None:
    assert recall_at_k(exp("a", "b"), hits("a"), 10) == 0.5


# ----------------------------------------------------------------- reciprocal rank (22-25)


def test_rr_half_when_first_match_at_rank_two() -> None:
    assert reciprocal_rank(exp("a"), hits("x", "a")) == 0.5


def test_rr_zero_without_match() -> None:
    assert reciprocal_rank(exp("a"), hits("x", "y")) == 0.0


def test_rr_zero_for_empty_inputs() -> None:
    assert reciprocal_rank([], hits("a")) == 0.0
    assert reciprocal_rank(exp("a"), []) == 0.0


def test_rr_rank_zero_is_finite_zero() -> None:
    assert reciprocal_rank(exp("a"), [Hit(0, "a")]) == 0.0


def test_rr_is_not_cut_at_any_k() -> None:
    deep = hits(*(["x"] * 14), "a")
    assert reciprocal_rank(exp("a"), deep) == pytest.approx(1 / 15)


# ----------------------------------------------------------------- nDCG (26-34, §5.3 table)


def test_ndcg_one_for_ideal_order() -> None:
    assert ndcg_at_k(exp("a", "b"), hits("a", "b", "x"), 5) == 1.0


def test_ndcg_answers_at_two_and_three() -> None:
    value = ndcg_at_k(exp("a", "b"), hits("x", "a", "b"), 5)
    assert 0.0 < value < 1.0
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert value == expected
    assert value == pytest.approx(0.6934, abs=1e-4)


def test_ndcg_worked_value_k3() -> None:
    assert ndcg_at_k(exp("a", "b"), hits("a", "x", "b"), 3) == 1.5 / 1.6309297535714575
    assert ndcg_at_k(exp("a", "b"), hits("a", "x", "b"), 3) == 0.9197207891481876


def test_ndcg_zero_without_match() -> None:
    assert ndcg_at_k(exp("a"), hits("x", "y"), 5) == 0.0


def test_ndcg_zero_with_empty_expected_or_hits_or_k_zero() -> None:
    assert ndcg_at_k([], hits("a"), 5) == 0.0
    assert ndcg_at_k(exp("a"), [], 5) == 0.0
    assert ndcg_at_k(exp("a"), hits("a"), 0) == 0.0


def test_ndcg_three_chunks_of_one_file_for_one_entry_is_exactly_one() -> None:
    value = ndcg_at_k(exp("X.md"), hits("X.md/A", "X.md/B", "X.md/C", "o", "o2"), 10)
    assert value == 1.0


def test_ndcg_two_entries_first_file_twice_at_most_one() -> None:
    value = ndcg_at_k(exp("a", "b"), hits("a", "a", "b"), 5)
    assert value <= 1.0
    assert value == (1 + 1 / math.log2(4)) / idcg(2)


def test_ndcg_duplicate_entries_need_distinct_hits() -> None:
    value = ndcg_at_k(exp("a", "a"), hits("a"), 5)
    assert value == 1 / (1 + 1 / math.log2(3))
    assert value == 0.6131471927654584
    assert recall_at_k(exp("a", "a"), hits("a"), 5) == 1.0


def test_ndcg_path_only_and_heading_sharing_one_hit_at_most_one() -> None:
    value = ndcg_at_k(exp("a", "a/X"), hits("a/X"), 5)
    assert value <= 1.0
    assert value == 1 / idcg(2)


def test_ndcg_heading_entry_takes_rank_one_path_only_takes_rank_two() -> None:
    assert ndcg_at_k(exp("a", "a/X"), hits("a/X", "a/Y"), 5) == 1.0


def test_ndcg_equivalent_heading_entries_need_distinct_hits() -> None:
    # The loader refuses such a pair; the metric must still credit one hit once.
    value = ndcg_at_k(exp("a/X", "a/ x"), hits("a/X", "b"), 5)
    assert value == 1 / idcg(2)


# ----------------------------------------------------------------- per query + aggregate (38-39)


def test_query_metrics_k_1_3_5() -> None:
    metrics = query_metrics(exp("a", "b"), hits("a", "x", "b"), [1, 3, 5])
    assert metrics.recall_at_k == {1: 0.5, 3: 1.0, 5: 1.0}
    assert metrics.reciprocal_rank == 1.0
    assert 0.7 < metrics.ndcg_at_k[3] < 1.0
    assert set(metrics.ndcg_at_k) == {1, 3, 5}


def test_aggregate_one_perfect_one_missed() -> None:
    perfect = query_metrics(exp("a"), hits("a"), [1])
    missed = query_metrics(exp("b"), hits("x"), [1])
    agg = aggregate([perfect, missed])
    assert agg.recall_at_k == {1: 0.5}
    assert agg.mrr == 0.5
    assert agg.ndcg_at_k == {1: 0.5}
    assert agg.query_count == 2


def test_aggregate_empty() -> None:
    assert aggregate([]) == AggregateMetrics(recall_at_k={}, mrr=0.0, ndcg_at_k={}, query_count=0)


def test_aggregate_missing_k_counts_as_zero_and_keys_sorted() -> None:
    first = QueryMetrics(recall_at_k={5: 1.0, 1: 1.0}, reciprocal_rank=1.0, ndcg_at_k={5: 1.0})
    second = QueryMetrics(recall_at_k={1: 0.0}, reciprocal_rank=0.25, ndcg_at_k={})
    agg = aggregate([first, second])
    assert list(agg.recall_at_k) == [1, 5]
    assert agg.recall_at_k == {1: 0.5, 5: 0.5}
    assert agg.ndcg_at_k == {5: 0.5}
    assert agg.mrr == 0.625


def test_aggregate_sums_left_to_right() -> None:
    values = [0.1, 0.2, 0.3, 1e-17, 0.7]
    metrics = [QueryMetrics({1: v}, v, {1: v}) for v in values]
    total = 0.0
    for v in values:
        total += v
    agg = aggregate(metrics)
    assert agg.recall_at_k[1] == total / len(values)
    assert agg.mrr == total / len(values)


# ----------------------------------------------------------------- helpers


def test_expected_ranks_first_satisfying_rank() -> None:
    assert expected_ranks(exp("a", "b/H", "c"), hits("x", "b/h", "a", "a")) == [3, 2, None]


def test_is_miss_uses_largest_k() -> None:
    metrics = query_metrics(exp("a"), hits("x", "x", "a"), [1, 5])
    assert not is_miss(metrics, [1, 5])
    assert is_miss(metrics, [1])
    assert is_miss(metrics, [])  # fallback k 10 is absent from the map → miss


def test_search_hit_satisfies_protocol() -> None:
    result = [SearchHit(rank=1, path="a.md", heading="Intro", score=0.5)]
    assert recall_at_k(exp("a.md/intro"), result, 1) == 1.0
    assert ndcg_at_k(exp("a.md"), result, 1) == 1.0


# ----------------------------------------------------------------- properties (35-37 and more)

_PATHS = st.sampled_from(["a", "b", "c", "d"])
_HEADINGS = st.sampled_from([None, "X", " x", "Y", ""])
_ENTRIES = st.lists(st.builds(ExpectedEntry, _PATHS, _HEADINGS), max_size=6)
_LABELS = st.lists(st.tuples(_PATHS, _HEADINGS), max_size=12)
_K = st.integers(min_value=0, max_value=15)


def _ranked(labels: list[tuple[str, str | None]]) -> list[Hit]:
    return [Hit(i, path, heading) for i, (path, heading) in enumerate(labels, start=1)]


def _in_unit_interval(value: float) -> bool:
    return math.isfinite(value) and 0.0 <= value <= 1.0


@settings(max_examples=256, deadline=None)
@given(_ENTRIES, _LABELS, _K)
def test_property_metrics_finite_in_unit_interval(
    entries: list[ExpectedEntry], labels: list[tuple[str, str | None]], k: int
) -> None:
    ranked = _ranked(labels)
    assert _in_unit_interval(recall_at_k(entries, ranked, k))
    assert _in_unit_interval(ndcg_at_k(entries, ranked, k))
    assert _in_unit_interval(reciprocal_rank(entries, ranked))


@settings(max_examples=256, deadline=None)
@given(_ENTRIES, _LABELS)
def test_property_recall_and_ndcg_bounded_recall_monotone(
    entries: list[ExpectedEntry], labels: list[tuple[str, str | None]]
) -> None:
    ranked = _ranked(labels)
    previous = 0.0
    for k in range(0, 16):
        value = recall_at_k(entries, ranked, k)
        assert value >= previous
        previous = value
        assert ndcg_at_k(entries, ranked, k) <= 1.0


@settings(max_examples=256, deadline=None)
@given(st.lists(st.builds(ExpectedEntry, _PATHS, _HEADINGS), min_size=1, max_size=4), _K)
def test_property_duplicated_entries_never_exceed_one(entries: list[ExpectedEntry], k: int) -> None:
    doubled = entries + entries
    # every hit that can satisfy anything, twice over
    labels: list[tuple[str, str | None]] = [
        (e.path, e.heading if e.heading is not None else "H") for e in doubled
    ]
    ranked = _ranked(labels * 2)
    assert ndcg_at_k(doubled, ranked, k) <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(ExpectedEntry, _PATHS, _HEADINGS), min_size=1, max_size=5))
def test_property_ideal_ranking_scores_one(entries: list[ExpectedEntry]) -> None:
    # One exact hit per entry, in golden order, is the ideal list.
    ranked = _ranked([(e.path, e.heading) for e in entries])
    k = len(entries)
    assert ndcg_at_k(entries, ranked, k) == pytest.approx(1.0)
    assert recall_at_k(entries, ranked, k) == 1.0
    assert reciprocal_rank(entries, ranked) == 1.0


@settings(max_examples=200, deadline=None)
@given(_ENTRIES, _LABELS)
def test_property_rr_matches_first_expected_rank(
    entries: list[ExpectedEntry], labels: list[tuple[str, str | None]]
) -> None:
    ranked = _ranked(labels)
    ranks = [r for r in expected_ranks(entries, ranked) if r is not None]
    assert reciprocal_rank(entries, ranked) == (1 / min(ranks) if ranks else 0.0)
