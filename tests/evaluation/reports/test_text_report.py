"""The text report: the seed's layout, diff arrows, warnings, per-query rows."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from pytest_groove.evaluation.gate.compare import compare
from pytest_groove.evaluation.history.file import BaselineChoice
from pytest_groove.evaluation.reports.text_report import NEXT_RUN_HINT, render_text
from pytest_groove.evaluation.runs.record import Fingerprint, RunRecord
from tests.helpers.eval_factories import corpus, fingerprint, query, run

T = 0.05
DEDUP = "How are chunks deduplicated?"


def text(now: RunRecord, previous: RunRecord | None = None, **kw: object) -> str:
    return render_text(now, compare(now, previous, T), **kw)  # type: ignore[arg-type]


def test_seed_quick_start_sample_is_reproduced_exactly() -> None:
    now = run(
        recall={1: 0.25, 5: 0.5, 10: 0.5},
        mrr=0.5,
        ndcg={1: 0.25, 5: 0.45, 10: 0.46},
        corpus=corpus(646, 11215),
        per_query=[query("rrf-basics", 1.0), query(DEDUP, 0.0, text=DEDUP)],
    )
    assert text(now, footer=NEXT_RUN_HINT) == (
        "groove eval — 2026-04-24T05:32:01Z\n"
        "  model: bge-m3    reranker: none    limit: 10    queries: 2\n"
        "  corpus: 646 docs / 11215 chunks\n"
        "\n"
        "Aggregate\n"
        "  recall@1   0.250\n"
        "  recall@5   0.500\n"
        "  recall@10  0.500\n"
        "  MRR        0.500\n"
        "  nDCG@10    0.460\n"
        "\n"
        "Per-query (regressions and misses, 1 of 2)\n"
        "  ✗ How are chunks deduplicated? recall@10: 0.00\n"
        "\n"
        "On the next run it will automatically show a diff against this one.\n"
    )


def test_full_diff_example_is_reproduced_exactly() -> None:
    fp = fingerprint(limit=3, k_values=(1, 3))
    k13 = (1, 3)
    now = RunRecord(
        timestamp=datetime(2026, 4, 24, 5, 32, 1, 123456, tzinfo=UTC),
        fingerprint=fp,
        corpus=corpus(4, 5, "5be1" * 16),
        per_query=(
            query("rrf-basics", {1: 0.5, 3: 1.0}, k_values=k13),
            query(DEDUP, {1: 0.0, 3: 0.0}, k_values=k13),
        ),
        aggregate=run(
            recall={1: 0.25, 3: 0.5}, mrr=0.5, ndcg={1: 0.5, 3: 0.4598603945740938}, fp=fp
        ).aggregate,
    )
    previous = RunRecord(
        timestamp=datetime(2026, 4, 23, 9, 10, 11, 500000, tzinfo=UTC),
        fingerprint=fp,
        corpus=corpus(4, 5, "0d4a" * 16),
        per_query=(
            query("rrf-basics", {1: 0.5, 3: 1.0}, k_values=k13),
            query(DEDUP, {1: 0.0, 3: 1.0}, k_values=k13),
        ),
        aggregate=run(
            recall={1: 0.25, 3: 1.0}, mrr=0.75, ndcg={1: 0.5, 3: 0.7753252713598225}, fp=fp
        ).aggregate,
    )
    assert text(now, previous) == (
        "groove eval — 2026-04-24T05:32:01.123456Z\n"
        "  model: bge-m3    reranker: none    limit: 3    queries: 2\n"
        "  corpus: 4 docs / 5 chunks\n"
        "    ⚠️ corpus changed since last run (same document and chunk counts, different "
        "contents)\n"
        "       a delta below may reflect that, not retrieval\n"
        "\n"
        "Aggregate (previous run: 2026-04-23T09:10:11.500Z)\n"
        "  recall@1   0.250  (—)\n"
        "  recall@3   0.500  (↓ 0.500, p=1.00)\n"
        "  MRR        0.500  (↓ 0.250, p=1.00)\n"
        "  nDCG@3     0.460  (↓ 0.315, p=1.00)\n"
        "  with 2 queries, no drop in any metric can be told from chance (p < 0.05)\n"
        "\n"
        "Per-query (regressions and misses, 1 of 2)\n"
        "  ✗ How are chunks deduplicated? recall@3: 1.00 → 0.00\n"
    )


def test_single_run_shows_every_recall_and_the_largest_ndcg_only() -> None:
    fp = fingerprint(k_values=(1, 5))
    out = text(run(fp=fp, per_query=[query("a"), query("b")]))
    assert "model: bge-m3" in out and "queries: 2" in out
    assert "  recall@1   0.500\n" in out and "  recall@5   0.500\n" in out
    assert "  MRR        0.500\n" in out and "  nDCG@5     0.500\n" in out
    assert "nDCG@1 " not in out
    assert "previous run" not in out
    assert "Per-query" not in out


def test_compatible_previous_shows_arrows_and_its_timestamp() -> None:
    out = text(run(minutes=1, recall=0.8), run(minutes=0, recall=0.6))
    assert "Aggregate (previous run: 2026-04-24T05:32:01Z)" in out
    assert "  recall@5   0.800  (↑ 0.200, p=1.00)\n" in out
    assert "  MRR        0.500  (—)\n" in out


def test_golden_change_disables_the_diff() -> None:
    out = text(run(minutes=1), run(minutes=0, fp=fingerprint(golden_hash="e" * 64)))
    assert "\n⚠️ golden changed since last run, diff disabled\nAggregate\n" in out
    assert "(" not in out.split("Aggregate", 1)[1]


def test_metric_version_change_says_config_changed_not_golden() -> None:
    out = text(
        run(minutes=1, recall=0.1), run(minutes=0, recall=0.9, fp=fingerprint(metric_version=1))
    )
    assert (
        "⚠️ config or metric version changed since last run (metric_version differs), "
        "diff disabled" in out
    )
    assert "golden changed" not in out
    assert "↓" not in out


def test_previous_run_with_unknown_fingerprint_keys_says_config_changed() -> None:
    newer = Fingerprint.from_json({**fingerprint().to_json(), "future_knob": 7})
    out = text(run(minutes=1, recall=0.1), run(minutes=0, recall=0.9, fp=newer))
    assert (
        "⚠️ config or metric version changed since last run (future_knob differs), "
        "diff disabled" in out
    )
    assert "↓" not in out


def test_corpus_change_keeps_the_diff() -> None:
    out = text(
        run(minutes=1, recall=0.4, corpus=corpus(646, 11215)),
        run(minutes=0, recall=0.5, corpus=corpus(642, 11090)),
    )
    assert "  corpus: 646 docs / 11215 chunks\n" in out
    assert (
        "    ⚠️ corpus changed since last run (642 -> 646 documents, 11090 -> 11215 chunks)\n"
        "       a delta below may reflect that, not retrieval\n"
    ) in out
    assert "↓ 0.100" in out
    assert "diff disabled" not in out


def test_identical_corpus_prints_only_the_header_line() -> None:
    out = text(run(minutes=1, corpus=corpus()), run(minutes=0, corpus=corpus()))
    assert "  corpus: 4 docs / 5 chunks\n" in out
    assert "corpus changed" not in out


def test_legacy_previous_without_corpus_is_not_a_change() -> None:
    out = text(run(minutes=1, corpus=corpus()), run(minutes=0))
    assert "corpus changed" not in out and "previous run" in out


def test_regressed_query_row_shows_previous_and_current_values() -> None:
    previous = run(minutes=0, per_query=[query("steady", 1.0), query("slipped", 0.8)])
    now = run(minutes=1, per_query=[query("steady", 1.0), query("slipped", 0.6)])
    out = text(now, previous)
    assert "Per-query (regressions and misses, 1 of 2)\n" in out
    # every metric past its threshold, one entry per kind that moved alike
    assert (
        "  ↓ slipped                  recall@1/5/10: 0.80 → 0.60, nDCG@1/5/10: 0.80 → 0.60\n" in out
    )


def test_small_drop_is_not_listed_and_ids_are_never_truncated() -> None:
    long_id = "a-very-long-query-identifier-over-24"
    previous = run(minutes=0, per_query=[query("small", 0.8), query(long_id, 1.0)])
    now = run(minutes=1, per_query=[query("small", 0.78), query(long_id, 0.0)])
    out = text(now, previous)
    assert "small" not in out
    assert f"  ✗ {long_id} recall@10: 1.00 → 0.00\n" in out


def test_colour_codes_only_when_asked() -> None:
    now, previous = run(minutes=1, recall=0.9), run(minutes=0, recall=0.5)
    assert "\x1b[32m↑ 0.400\x1b[0m" in text(now, previous, color=True)
    assert "\x1b[" not in text(now, previous, color=False)


def test_frozen_and_search_back_are_named_in_the_header() -> None:
    previous = run(minutes=0)
    frozen = BaselineChoice(previous, previous, frozen=True, skipped=0)
    out = text(run(minutes=1), previous, choice=frozen)
    assert "Aggregate (previous run: 2026-04-24T05:32:01Z, frozen baseline)" in out
    skipped = BaselineChoice(previous, run(minutes=5), frozen=False, skipped=2)
    out = text(run(minutes=6), previous, choice=skipped)
    assert "; 2 newer run(s) with another fingerprint skipped)" in out


def test_custom_retriever_and_reranker_are_shown() -> None:
    fp = fingerprint(reranker="bge-reranker-v2-m3", retriever="conftest.search")
    out = text(run(fp=fp))
    assert (
        "reranker: bge-reranker-v2-m3    limit: 10    queries: 2    retriever: conftest.search"
        in out
    )


def test_a_custom_retrievers_corpus_line_counts_the_kb_documents_not_chunks() -> None:
    """The chunks are groove's own chunking of the KB files, not the retriever's: a
    run measured with a custom retriever counts the documents it is judged against."""
    fp = fingerprint(retriever="team_search:search")
    out = text(run(fp=fp, corpus=corpus(11, 34)))
    assert (
        "  corpus: 11 docs in the knowledge base (the hits are judged against them; the "
        "retriever's own chunks are not counted)\n"
    ) in out
    assert "34 chunks" not in out
    assert "  corpus: 11 docs / 34 chunks\n" in text(run(corpus=corpus(11, 34)))


def test_wide_labels_keep_a_space_before_the_value() -> None:
    fp = fingerprint(k_values=(1000,))
    out = text(run(fp=fp, recall=1.0))
    assert "  recall@1000 1.000\n" in out


def test_title_and_footer_are_the_callers() -> None:
    out = text(replace(run(), findings=()), footer="Subset run.", title="groove")
    assert out.startswith("groove — ")
    assert out.endswith("\n\nSubset run.\n")


def test_a_corpus_change_beside_a_disabled_diff_promises_no_delta() -> None:
    other = fingerprint(limit=12)
    out = text(
        run(minutes=1, recall=0.4, corpus=corpus(646, 11215)),
        run(minutes=0, recall=0.5, corpus=corpus(642, 11090), fp=other),
    )
    assert "corpus changed since last run (642 -> 646 documents" in out
    assert "diff disabled" in out
    assert "a delta below" not in out
