"""Compatibility, corpus change, deltas, the regression gate and per-query regressions."""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import Any

import pytest

from pytest_groove.evaluation.gate.compare import (
    CONFIG_CHANGED,
    GOLDEN_CHANGED,
    color_enabled,
    compare,
    corpus_change,
    find_query,
    format_delta,
    gate_failures,
    match_queries,
    project_baseline,
    query_regressed,
)
from pytest_groove.evaluation.runs.record import Fingerprint, QueryResult, RunRecord
from pytest_groove.scoring.thresholds import ThresholdError, Thresholds, parse_thresholds
from tests.helpers.eval_factories import corpus, fingerprint, query, run

T = 0.05


def gate(before: dict[str, Any], after: dict[str, Any], threshold: float = T) -> list[str]:
    """Failures when only the named aggregate metrics differ (others stay 0.5)."""
    prev = run(minutes=0, **before)
    now = run(minutes=1, **after)
    return gate_failures(compare(now, prev, threshold), threshold)


# --------------------------------------------------------------------------- gate


def test_improvement_is_not_a_regression() -> None:
    assert gate({"recall": 0.6}, {"recall": 0.8}) == []


def test_equal_is_not_a_regression() -> None:
    assert gate({"mrr": 0.7}, {"mrr": 0.7}) == []


def test_drop_within_threshold_is_not_a_regression() -> None:
    assert gate({"recall": 0.70}, {"recall": 0.66}) == []


def test_recall_drop_is_a_regression_for_every_k() -> None:
    assert gate({"recall": 0.8}, {"recall": 0.6}) == ["recall@1", "recall@5", "recall@10"]


def test_mrr_drop_is_a_regression() -> None:
    assert gate({"mrr": 0.9}, {"mrr": 0.8}) == ["MRR"]


def test_ndcg_drop_is_checked_at_every_k_not_only_the_largest() -> None:
    assert gate({"ndcg": {1: 0.9, 5: 0.5, 10: 0.5}}, {"ndcg": {1: 0.7, 5: 0.5, 10: 0.5}}) == [
        "nDCG@1"
    ]


def test_non_finite_previous_value_is_not_a_regression() -> None:
    assert gate({"mrr": math.nan}, {"mrr": 0.1}) == []
    assert gate({"mrr": 0.9}, {"mrr": math.inf}) == []


def test_threshold_arithmetic_is_taken_literally() -> None:
    # 0.80 - 0.75 = 0.05000000000000004 > 0.05, while 0.70 - 0.65 = 0.04999999999999993
    assert gate({"mrr": 0.80}, {"mrr": 0.75}) == ["MRR"]
    assert gate({"mrr": 0.70}, {"mrr": 0.65}) == []


def test_a_k_missing_from_the_baseline_counts_as_zero() -> None:
    assert gate({"recall": {1: 0.5}}, {"recall": {1: 0.5, 5: 0.5, 10: 0.5}}) == []


def test_gate_uses_the_threshold_it_is_given() -> None:
    prev, now = run(minutes=0, mrr=0.9), run(minutes=1, mrr=0.8)
    comparison = compare(now, prev, 0.5)
    assert comparison.regressions == ()
    assert gate_failures(comparison, 0.05) == ["MRR"]


def test_gate_returns_what_the_comparison_stored() -> None:
    prev, now = run(minutes=0, mrr=0.9, recall=0.9), run(minutes=1, mrr=0.8, recall=0.5)
    comparison = compare(now, prev, T)
    assert comparison.regressions == ("recall@1", "recall@5", "recall@10", "MRR")
    assert gate_failures(comparison) == gate_failures(comparison, T) == list(comparison.regressions)
    # the stored tuple is the answer: nothing is recomputed for the same threshold
    doctored = replace(comparison, regressions=("nDCG@10",))
    assert gate_failures(doctored, T) == ["nDCG@10"]


def _run_of_one(minutes: int, fp: Fingerprint, result: QueryResult) -> RunRecord:
    """A run of the one query ``result``, its aggregates that query's numbers."""
    metrics = result.metrics
    return run(
        minutes=minutes,
        fp=fp,
        per_query=[result],
        recall=dict(metrics.recall_at_k),
        mrr=metrics.reciprocal_rank,
        ndcg=dict(metrics.ndcg_at_k),
    )


def test_aggregate_and_query_regressions_follow_one_rule() -> None:
    before = query("q", {1: 1.0, 5: 1.0}, rr=1.0, ndcg={1: 1.0, 5: 1.0}, k_values=(1, 5))
    after = query("q", {1: 0.0, 5: 1.0}, rr=0.5, ndcg={1: 0.0, 5: 0.63}, k_values=(1, 5))
    fp = fingerprint(k_values=(1, 5))
    prev, now = _run_of_one(0, fp, before), _run_of_one(1, fp, after)
    per_query = query_regressed(after, before, T)
    aggregate = list(compare(now, prev, T).regressions)
    assert [n.replace("reciprocal rank", "MRR") for n in per_query] == aggregate


def test_gate_is_a_no_op_without_a_compatible_baseline() -> None:
    now = run(minutes=1, mrr=0.0)
    assert gate_failures(compare(now, None, T), T) == []
    other = run(minutes=0, mrr=1.0, fp=fingerprint(model="bge-small-en-v1.5"))
    comparison = compare(now, other, T)
    assert not comparison.compatible and comparison.diff is None
    assert gate_failures(comparison, T) == []


# --------------------------------------------------------------------------- compatibility


def test_equal_fingerprints_are_compatible() -> None:
    comparison = compare(run(minutes=1, recall=0.8), run(minutes=0, recall=0.6), T)
    assert comparison.compatible and comparison.reason is None
    assert comparison.diff is not None
    assert comparison.diff.recall_at_k[5] == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"golden_hash": "f" * 64}, GOLDEN_CHANGED),
        ({"golden_hash": "f" * 64, "model": "other"}, GOLDEN_CHANGED),
        ({"metric_version": 1}, CONFIG_CHANGED),
        ({"fts_query_version": 1}, CONFIG_CHANGED),
        ({"fts_query_version": 2}, CONFIG_CHANGED),
        ({"model": "bge-small-en-v1.5"}, CONFIG_CHANGED),
        ({"reranker": "bge-reranker-v2-m3"}, CONFIG_CHANGED),
        ({"limit": 20}, CONFIG_CHANGED),
        ({"k_values": (1, 3)}, CONFIG_CHANGED),
        ({"mmr": {"lambda": 0.7, "same_doc_penalty": 0.0}}, CONFIG_CHANGED),
        ({"context": {"mode": "static"}}, CONFIG_CHANGED),
        ({"retriever": "conftest.my_search"}, CONFIG_CHANGED),
    ],
)
def test_any_fingerprint_difference_disables_the_diff(
    change: dict[str, object], reason: str
) -> None:
    previous = run(minutes=0, fp=fingerprint(**change))
    comparison = compare(run(minutes=1), previous, T)
    assert not comparison.compatible
    assert comparison.reason is not None and comparison.reason.startswith(reason)
    assert comparison.diff is None
    assert comparison.baseline is previous
    if reason == CONFIG_CHANGED:  # the keys that differ are named as the reason
        for key in change:
            assert key in comparison.reason


def test_switching_the_retriever_names_the_keys_that_differ() -> None:
    previous = run(minutes=0, fp=fingerprint(retriever="conftest.mine", model="custom"))
    comparison = compare(run(minutes=1), previous, T)
    assert comparison.reason is not None
    assert comparison.reason.startswith(CONFIG_CHANGED + " (")
    assert "retriever" in comparison.reason and "model" in comparison.reason
    assert comparison.reason.endswith(" differ)")
    one = compare(run(minutes=1), run(minutes=0, fp=fingerprint(limit=20)), T).reason
    assert one == f"{CONFIG_CHANGED} (limit differs)"


def test_legacy_fingerprint_from_json_is_not_compatible() -> None:
    data = fingerprint().to_json()
    del data["fts_query_version"]
    previous = run(minutes=0, fp=Fingerprint.from_json(data))
    reason = compare(run(minutes=1), previous, T).reason
    assert reason == f"{CONFIG_CHANGED} (fts_query_version differs)"
    data["fts_query_version"] = 3
    assert compare(run(minutes=1), run(fp=Fingerprint.from_json(data)), T).compatible


# --------------------------------------------------------------------------- corpus


def test_count_change_phrase() -> None:
    changed, phrase = corpus_change(corpus(646, 11215), corpus(642, 11090))
    assert changed is True
    assert phrase == "642 -> 646 documents, 11090 -> 11215 chunks"


def test_content_change_with_equal_counts() -> None:
    changed, phrase = corpus_change(corpus(4, 5, "a" * 64), corpus(4, 5, "b" * 64))
    assert (changed, phrase) == (True, "same document and chunk counts, different contents")


def test_identical_corpus_is_unchanged_and_unknown_sides_cannot_tell() -> None:
    assert corpus_change(corpus(), corpus()) == (False, None)
    assert corpus_change(corpus(), None) == (None, None)
    assert corpus_change(None, corpus()) == (None, None)


def test_a_corpus_change_keeps_runs_compatible() -> None:
    previous = run(minutes=0, recall=0.9, corpus=corpus(642, 11090))
    comparison = compare(run(minutes=1, recall=0.5, corpus=corpus(646, 11215)), previous, T)
    assert comparison.compatible
    assert comparison.corpus_changed is True
    assert "recall@5" in comparison.regressions


def test_corpus_is_compared_even_when_incompatible() -> None:
    previous = run(minutes=0, corpus=corpus(1, 1), fp=fingerprint(limit=3))
    comparison = compare(run(minutes=1, corpus=corpus(2, 2)), previous, T)
    assert not comparison.compatible and comparison.corpus_changed is True


def test_legacy_run_without_corpus_is_never_reported_changed() -> None:
    comparison = compare(run(minutes=1, corpus=corpus()), run(minutes=0), T)
    assert comparison.compatible and comparison.corpus_changed is None


# --------------------------------------------------------------------------- per query


def test_per_query_rows_mark_misses_and_regressions() -> None:
    previous = run(minutes=0, per_query=[query("a", 1.0), query("b", 1.0), query("c", 0.0)])
    now = run(minutes=1, per_query=[query("a", 1.0), query("b", 0.5), query("c", 0.0)])
    rows = {row.id: row for row in compare(now, previous, T).queries}
    assert not rows["a"].miss and not rows["a"].regressed
    assert rows["b"].regressed and not rows["b"].miss
    assert (rows["b"].previous, rows["b"].now, rows["b"].k) == (1.0, 0.5, 10)
    assert rows["c"].miss and not rows["c"].regressed


def test_per_query_rows_without_baseline_have_no_previous() -> None:
    rows = compare(run(per_query=[query("a", 0.0)]), None, T).queries
    assert rows[0].previous is None and rows[0].miss and not rows[0].regressed


#: two queries whose first 32 code points agree: without explicit ids they share an id
SHARED_ID = "How does the indexer handle the "
BIG = SHARED_ID + "chunks of a big file?"
SMALL = SHARED_ID + "chunks of a small file?"


def colliding(big: float, small: float, rr_small: float = 0.5) -> list[QueryResult]:
    return [
        query(SHARED_ID, big, 1.0, text=BIG, expected=("big.md",)),
        query(SHARED_ID, small, rr_small, text=SMALL, expected=("small.md",)),
    ]


def test_queries_sharing_a_derived_id_pair_with_their_own_baseline() -> None:
    previous = run(minutes=0, per_query=colliding(1.0, 0.5))
    now = run(minutes=1, per_query=colliding(1.0, 0.5))
    rows = compare(now, previous, T).queries
    assert [(r.previous, r.now, r.regressed) for r in rows] == [
        (1.0, 1.0, False),
        (0.5, 0.5, False),
    ]


def test_shared_id_pairing_follows_text_not_position() -> None:
    previous = run(minutes=0, per_query=colliding(1.0, 0.5))
    # the same queries, the other way round: each still meets its own baseline
    now = run(minutes=1, per_query=list(reversed(colliding(1.0, 0.5))))
    rows = compare(now, previous, T).queries
    assert [(r.previous, r.now) for r in rows] == [(0.5, 0.5), (1.0, 1.0)]


def test_exact_duplicates_pair_in_order() -> None:
    previous = run(minutes=0, per_query=[query("dup", 1.0), query("dup", 0.0)])
    now = run(minutes=1, per_query=[query("dup", 1.0), query("dup", 0.0)])
    assert [r.previous for r in compare(now, previous, T).queries] == [1.0, 0.0]
    assert not any(r.regressed for r in compare(now, previous, T).queries)


def test_a_query_missing_from_the_baseline_has_no_previous() -> None:
    previous = run(minutes=0, per_query=[query("dup", 1.0)])
    now = run(minutes=1, per_query=[query("dup", 1.0), query("dup", 0.0)])
    assert [r.previous for r in compare(now, previous, T).queries] == [1.0, None]


def test_match_queries_is_the_one_pairing_rule() -> None:
    baseline = run(per_query=colliding(1.0, 0.5))
    big, small = baseline.per_query
    assert match_queries([small, big], baseline) == [small, big]
    assert find_query(baseline, small) is small
    assert find_query(baseline, query("other", text=SMALL)) is None


def test_query_regressed_names_each_metric_that_dropped() -> None:
    before = query("q", {1: 1.0, 5: 1.0}, rr=1.0, ndcg={1: 1.0, 5: 1.0}, k_values=(1, 5))
    after = query("q", {1: 0.0, 5: 1.0}, rr=0.5, ndcg={1: 0.0, 5: 0.63}, k_values=(1, 5))
    assert query_regressed(after, before, T) == ["recall@1", "reciprocal rank", "nDCG@1", "nDCG@5"]
    assert query_regressed(before, after, T) == []
    assert query_regressed(after, None, T) == []


def test_project_baseline_reaggregates_the_selected_queries() -> None:
    baseline = run(per_query=[query("a", 1.0, 1.0), query("b", 0.0, 0.0), query("c", 0.5, 0.5)])
    projected = project_baseline(baseline, ["c", "a", "missing"])
    assert [q.id for q in projected.per_query] == ["c", "a"]
    assert projected.aggregate.query_count == 2
    assert projected.aggregate.mrr == 0.75
    assert projected.timestamp == baseline.timestamp


def test_project_baseline_picks_the_query_with_the_same_text_under_a_shared_id() -> None:
    baseline = run(per_query=colliding(1.0, 0.5, rr_small=0.25))
    small = colliding(1.0, 0.5)[1]
    projected = project_baseline(baseline, [small])
    assert [q.query for q in projected.per_query] == [SMALL]
    assert projected.aggregate.mrr == 0.25


def test_query_regressed_sees_no_drop_for_an_unchanged_shared_id_query() -> None:
    baseline = run(per_query=colliding(1.0, 0.5))
    small = colliding(1.0, 0.5)[1]
    assert query_regressed(small, find_query(baseline, small), T) == []


def test_a_baseline_with_unknown_fingerprint_keys_is_a_config_change() -> None:
    newer = fingerprint(extra={"future_knob": 7})
    comparison = compare(run(minutes=1), run(minutes=0, fp=newer), T)
    assert (
        not comparison.compatible and comparison.reason == f"{CONFIG_CHANGED} (future_knob differs)"
    )
    assert comparison.diff is None and gate_failures(comparison, T) == []


# --------------------------------------------------------------------------- display


def test_delta_rendering_without_colour() -> None:
    assert format_delta(0.2, T, color=False) == "  (↑ 0.200)"
    assert format_delta(-0.0561, T, color=False) == "  (↓ 0.056)"
    assert format_delta(1e-12, T, color=False) == "  (—)"
    assert format_delta(math.nan, T, color=False) == "  (n/a)"


@pytest.mark.parametrize(
    ("delta", "code"),
    [(0.2, "\x1b[32m"), (0.01, "\x1b[90m"), (-0.01, "\x1b[90m"), (-0.2, "\x1b[31m")],
)
def test_delta_colours_wrap_arrow_and_number(delta: float, code: str) -> None:
    arrow = "↑" if delta > 0 else "↓"
    assert format_delta(delta, T, color=True) == f"  ({code}{arrow} {abs(delta):.3f}\x1b[0m)"


def test_exactly_the_threshold_is_gray() -> None:
    assert "\x1b[90m" in format_delta(0.05, 0.05, color=True)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert color_enabled(False, Tty())
    assert not color_enabled(True, Tty())
    assert not color_enabled(False, io.StringIO())
    assert not color_enabled(False, None)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not color_enabled(False, Tty())
    monkeypatch.setenv("NO_COLOR", "")
    assert color_enabled(False, Tty())


# --------------------------------------------------------------------------- per-metric thresholds


def test_one_number_is_the_threshold_of_every_metric() -> None:
    assert parse_thresholds("0.03", 0.05) == Thresholds(0.03)
    assert parse_thresholds(" 0 ", 0.05).for_metric("recall@5") == 0.0


def test_named_metrics_get_their_own_threshold_and_the_rest_keep_the_default() -> None:
    limits = parse_thresholds("recall@5=0.02, MRR=0.1,nDCG@10=0", 0.05)
    assert limits.for_metric("recall@5") == 0.02
    assert limits.for_metric("MRR") == limits.for_metric("reciprocal rank") == 0.1
    assert limits.for_metric("nDCG@10") == 0.0
    assert limits.for_metric("recall@1") == 0.05
    assert limits.describe() == "0.05 (recall@5: 0.02, mrr: 0.1, ndcg@10: 0)"
    assert limits.unknown_k((1, 5)) == ["ndcg@10"]


def test_any_name_the_reports_print_names_its_metric() -> None:
    limits = parse_thresholds("reciprocal rank=0.1, Recall@5=0.2", 0.05)
    assert limits.per_metric == (("mrr", 0.1), ("recall@5", 0.2))
    with pytest.raises(ThresholdError, match="mrr is named twice"):
        parse_thresholds("RR=0.1,mrr=0.2", 0.05)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty: give one number"),
        ("fast", "is not a number"),
        ("1.5", "from 0 to 1"),
        ("nan", "from 0 to 1"),
        ("f1@5=0.1", "unknown metric 'f1@5'"),
        ("recall=0.1", "unknown metric 'recall'"),
        ("recall@5", "is not a number"),
        ("recall@5=0.1,mrr", "expected metric=number"),
        ("mrr=0.1,MRR=0.2", "mrr is named twice"),
        ("mrr=-0.1", "from 0 to 1"),
    ],
)
def test_bad_threshold_specifications_are_refused(spec: str, message: str) -> None:
    with pytest.raises(ThresholdError, match=message):
        parse_thresholds(spec, 0.05)


def test_the_gate_applies_each_metric_its_own_threshold() -> None:
    before = run(recall=0.80, mrr=0.80, ndcg=0.80)
    now = run(minutes=1, recall=0.77, mrr=0.77, ndcg=0.77)
    assert compare(now, before, T).regressions == ()
    strict = parse_thresholds("recall@5=0.02,mrr=0.01", T)
    comparison = compare(now, before, strict)
    assert comparison.regressions == ("recall@5", "MRR")
    assert gate_failures(comparison) == ["recall@5", "MRR"]
    assert comparison.limits is strict and comparison.threshold == T


def test_a_query_regresses_against_its_metric_threshold() -> None:
    before = query("q", recall=1.0, rr=1.0)
    now = query("q", recall=1.0, rr=0.97)
    assert query_regressed(now, before, T) == []
    assert query_regressed(now, before, parse_thresholds("mrr=0.01", T)) == ["reciprocal rank"]


def test_a_retriever_run_stored_with_engine_settings_compares_with_one_without() -> None:
    # written before custom retriever runs left the built-in pipeline's keys out
    stored = fingerprint(retriever="team_search:search").to_json()
    stored["fusion"] = {
        "rrf_k": 30.0,
        "bm25_heading_weight": 1.0,
        "bm25_context_weight": 1.0,
        "bm25_content_weight": 1.0,
    }
    stored["mmr"] = {"lambda": 0.7, "same_doc_penalty": 0.1}
    stored["vector_centring"] = False
    read = Fingerprint.from_json(stored)
    assert read == fingerprint(retriever="team_search:search")
    assert "fusion" not in read.to_json() and "mmr" not in read.to_json()
    # the engine's own runs keep every key
    engine = replace(fingerprint(), vector_centring=False)
    assert Fingerprint.from_json(engine.to_json()).vector_centring is False
