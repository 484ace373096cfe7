"""Fingerprint, per-query results and run records: building them and their JSON form."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.runs.record import (
    Fingerprint,
    QueryResult,
    RecordFormatError,
    RunRecord,
    TopHit,
    build_run,
    display_timestamp,
    evaluate_query,
    format_timestamp,
    parse_timestamp,
)
from pytest_groove.scoring.metrics import METRIC_VERSION, QueryMetrics, query_metrics
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.query.fts_query import FTS_QUERY_VERSION
from pytest_groove.settings.config import (
    FusionParams,
    MmrSettings,
    ParentRetrieverSettings,
    SearchSettings,
)
from tests.helpers.eval_factories import GOLDEN_HASH, corpus, finding, fingerprint, query, run


def build(search: SearchSettings | None = None, context_mode: str | None = "off") -> Fingerprint:
    return Fingerprint.build(
        "bge-m3", None, 10, (1, 5, 10), GOLDEN_HASH, search or SearchSettings(), context_mode
    )


# --------------------------------------------------------------------------- fingerprint


def test_fingerprint_carries_the_current_metric_and_query_versions() -> None:
    fp = build()
    assert fp.metric_version == METRIC_VERSION == 2
    assert fp.fts_query_version == FTS_QUERY_VERSION == 3


def test_fingerprint_normalises_k_and_reranker_none() -> None:
    fp = Fingerprint.build("m", "none", 5, (10, 1, 5, 5, 2000), "h", SearchSettings(), None)
    assert fp.k_values == (1, 5, 10, 1000)
    assert fp.reranker is None
    assert Fingerprint.build("m", "bge-base", 5, (1,), "h", SearchSettings(), None).reranker == (
        "bge-base"
    )


def test_mmr_recorded_only_when_enabled() -> None:
    assert build().mmr is None
    assert "mmr" not in build().to_json()
    on = build(SearchSettings(mmr=MmrSettings(enabled=True, lambda_=0.5, same_doc_penalty=0.1)))
    assert on.mmr == {"lambda": 0.5, "same_doc_penalty": 0.1}
    assert on != build()


def test_mmr_values_without_mmr_do_not_enter_the_fingerprint() -> None:
    off = build(SearchSettings(mmr=MmrSettings(enabled=False, lambda_=0.2)))
    assert off == build()


def test_parent_retriever_recorded_only_when_enabled() -> None:
    assert build().parent_retriever is None
    on = build(
        SearchSettings(
            parent_retriever=ParentRetrieverSettings(
                enabled=True, whole_doc_threshold_tokens=50, max_expanded_tokens=1500
            )
        )
    )
    assert on.parent_retriever == {"whole_doc_threshold_tokens": 50, "max_expanded_tokens": 1500}
    assert on.to_json()["parent_retriever"] == on.parent_retriever


def test_default_fusion_is_not_recorded_even_when_written_out() -> None:
    assert build().fusion is None
    explicit = build(SearchSettings(fusion=FusionParams(60.0, 2.0, 1.0, 1.0)))
    assert explicit.fusion is None
    assert explicit == build()


def test_tuned_fusion_records_all_four_values() -> None:
    fp = build(SearchSettings(fusion=FusionParams(rrf_k=10.0, bm25_heading_weight=4.0)))
    assert fp.fusion == {
        "rrf_k": 10.0,
        "bm25_heading_weight": 4.0,
        "bm25_context_weight": 1.0,
        "bm25_content_weight": 1.0,
    }


@pytest.mark.parametrize("mode", [None, "off", "unknown"])
def test_context_absent_unless_the_index_is_static(mode: str | None) -> None:
    fp = build(context_mode=mode)
    assert fp.context is None
    assert "context" not in fp.to_json()


def test_static_context_is_recorded_and_breaks_compatibility() -> None:
    static = build(context_mode="static")
    assert static.context == {"mode": "static"}
    assert static.to_json()["context"] == {"mode": "static"}
    assert static != build()


def test_custom_retriever_is_recorded_and_omitted_when_absent() -> None:
    assert "retriever" not in build().to_json()
    custom = Fingerprint.build(
        "custom", None, 10, (1,), "h", SearchSettings(), None, retriever="conftest.search"
    )
    assert custom.to_json()["retriever"] == "conftest.search"
    assert Fingerprint.from_json(custom.to_json()) == custom


def test_fingerprint_json_always_has_versions_and_reranker() -> None:
    data = build().to_json()
    assert data == {
        "model": "bge-m3",
        "reranker": None,
        "limit": 10,
        "k_values": [1, 5, 10],
        "golden_hash": GOLDEN_HASH,
        "metric_version": 2,
        "fts_query_version": 3,
        "chunker_version": 3,
        # the default search groups its fused list by document, in note order, and
        # weighs the full-text list's vote by what its best hit found of the query
        "document_first": True,
        "note_order": True,
        "fts_coverage_vote": True,
    }
    assert list(data) == [
        "model",
        "reranker",
        "limit",
        "k_values",
        "golden_hash",
        "metric_version",
        "fts_query_version",
        "chunker_version",
        "document_first",
        "note_order",
        "fts_coverage_vote",
    ]


def test_note_order_is_recorded_only_when_search_ordered_notes() -> None:
    """Runs in note order never compare with runs (or history) that did not use it."""

    def keys(search: SearchSettings, reranker: str | None = None) -> dict[str, Any]:
        return Fingerprint.build("m", reranker, 10, (1,), "h", search, None).to_json()

    assert "note_order" not in keys(SearchSettings(note_order=False))
    # it refines document-first ordering: off with it, under MMR or a reranker
    assert "note_order" not in keys(SearchSettings(document_first=False))
    assert "note_order" not in keys(SearchSettings(), "cross")
    without = keys(SearchSettings(note_order=False))
    assert without["document_first"] is True
    ordered = build()
    assert ordered != Fingerprint.from_json({**ordered.to_json(), "note_order": None})
    assert Fingerprint.from_json(ordered.to_json()) == ordered


def test_fts_coverage_vote_is_recorded_when_the_builtin_pipeline_weighed_the_vote() -> None:
    """Runs fused with the weighed full-text vote never compare with history fused
    with a full one (the rankings moved), nor with a run that turned it off."""

    def keys(search: SearchSettings, retriever: str | None = None) -> dict[str, Any]:
        return Fingerprint.build("m", None, 10, (1,), "h", search, None, retriever).to_json()

    assert keys(SearchSettings())["fts_coverage_vote"] is True
    assert "fts_coverage_vote" not in keys(SearchSettings(fts_coverage_vote=False))
    # a reranker or MMR still reorders a pool the weighed fusion chose
    mmr = replace(SearchSettings(), mmr=replace(SearchSettings().mmr, enabled=True))
    assert keys(mmr)["fts_coverage_vote"] is True
    # a retriever of your own ran no fusion at all
    assert "fts_coverage_vote" not in keys(SearchSettings(), "conftest.search")
    weighed = build()
    assert weighed != Fingerprint.from_json({**weighed.to_json(), "fts_coverage_vote": None})
    assert weighed != build(SearchSettings(fts_coverage_vote=False))
    assert Fingerprint.from_json(weighed.to_json()) == weighed


def test_document_first_is_recorded_only_when_search_grouped_by_document() -> None:
    """Runs that grouped by document never compare with runs (or history) that did not."""
    off = SearchSettings(document_first=False)
    assert "document_first" not in Fingerprint.build("m", None, 10, (1,), "h", off, None).to_json()
    mmr = replace(SearchSettings(), mmr=replace(SearchSettings().mmr, enabled=True))
    assert "document_first" not in Fingerprint.build("m", None, 10, (1,), "h", mmr, None).to_json()
    reranked = Fingerprint.build("m", "cross", 10, (1,), "h", SearchSettings(), None)
    assert "document_first" not in reranked.to_json()
    grouped = build()
    assert grouped != Fingerprint.from_json({**grouped.to_json(), "document_first": None})
    assert Fingerprint.from_json(grouped.to_json()) == grouped


def legacy(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": "bge-m3",
        "limit": 10,
        "k_values": [1, 5, 10],
        "golden_hash": GOLDEN_HASH,
    }
    data.update(extra)
    return data


def test_old_fingerprint_without_versions_reads_as_version_1() -> None:
    fp = Fingerprint.from_json(legacy())
    assert fp.metric_version == 1
    assert fp.fts_query_version == 1
    assert fp.chunker_version == 1
    assert fp.reranker is None
    assert fp != build()


def test_old_fingerprint_without_optional_objects_equals_one_without_grouping() -> None:
    fp = Fingerprint.from_json(
        legacy(metric_version=2, fts_query_version=3, chunker_version=3, reranker=None)
    )
    assert fp.mmr is None and fp.parent_retriever is None
    assert fp.fusion is None and fp.context is None and fp.retriever is None
    # history from before document-first ordering ranked like a run with it off
    assert fp == build(SearchSettings(document_first=False, fts_coverage_vote=False))
    assert fp == build(
        SearchSettings(document_first=False, note_order=False, fts_coverage_vote=False)
    )
    assert fp != build()


def test_unknown_fingerprint_keys_are_kept_and_written_back_verbatim() -> None:
    knob = {"depth": [1, 2], "mode": None, "nested": {"a": 1.5}}
    data = {**build().to_json(), "future_knob": knob, "zz_flag": True}
    fp = Fingerprint.from_json(json.loads(json.dumps(data)))
    assert fp.extra == {"future_knob": knob, "zz_flag": True}
    assert fp.to_json() == data
    assert list(fp.to_json()) == list(data)  # the unknown keys follow the known ones
    assert Fingerprint.from_json(fp.to_json()) == fp


def test_non_finite_numbers_in_unknown_fingerprint_keys_are_written_as_null() -> None:
    fp = Fingerprint.from_json(
        json.loads(
            '{"model": "m", "limit": 1, "k_values": [1], '
            '"golden_hash": "h", "knob": [NaN, {"x": Infinity}]}'
        )
    )
    assert fp.to_json()["knob"] == [None, {"x": None}]
    json.dumps(fp.to_json(), allow_nan=False)


def test_unknown_fingerprint_keys_make_a_run_incomparable() -> None:
    """A run recorded by a newer version measured something this one cannot see."""
    fp = Fingerprint.from_json({**build().to_json(), "future_knob": 7})
    assert fp != build()
    assert Fingerprint.from_json({**build().to_json(), "future_knob": 8}) != fp
    assert Fingerprint.from_json({**build().to_json(), "future_knob": 7}) == fp
    assert build().extra == {} and "extra" not in build().to_json()


@pytest.mark.parametrize(
    "data",
    [
        {"limit": 10, "k_values": [1], "golden_hash": "h"},
        legacy(limit="10"),
        legacy(k_values=[1, "5"]),
        legacy(mmr=[0.5]),
        legacy(limit=True),
        [],
    ],
)
def test_malformed_fingerprints_are_format_errors(data: Any) -> None:
    with pytest.raises(RecordFormatError):
        Fingerprint.from_json(data)


def test_fingerprint_round_trips_with_every_option() -> None:
    fp = build(
        SearchSettings(
            fusion=FusionParams(rrf_k=30.0),
            mmr=MmrSettings(enabled=True, lambda_=0.7, same_doc_penalty=0.25),
            parent_retriever=ParentRetrieverSettings(enabled=True),
        ),
        context_mode="static",
    )
    assert Fingerprint.from_json(json.loads(json.dumps(fp.to_json()))) == fp


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    ("micro", "text"),
    [
        (0, "2026-07-28T00:00:00Z"),
        (500_000, "2026-07-28T00:00:00.500Z"),
        (123_456, "2026-07-28T00:00:00.123456Z"),
    ],
)
def test_timestamps_use_z_and_0_3_or_6_fraction_digits(micro: int, text: str) -> None:
    moment = datetime(2026, 7, 28, tzinfo=UTC).replace(microsecond=micro)
    assert format_timestamp(moment) == text
    assert format_timestamp(moment, zulu=False) == text[:-1] + "+00:00"
    # people read the same spelling the history and `groove history` write
    assert display_timestamp(moment) == text
    assert parse_timestamp(text) == moment


def test_nanosecond_and_offset_timestamps_are_read() -> None:
    assert parse_timestamp("2026-04-24T05:32:01.123456789Z") == datetime(
        2026, 4, 24, 5, 32, 1, 123456, tzinfo=UTC
    )
    assert parse_timestamp("2026-04-24T07:32:01+02:00") == datetime(
        2026, 4, 24, 5, 32, 1, tzinfo=UTC
    )


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01", 5, None])
def test_bad_timestamps_are_format_errors(text: Any) -> None:
    with pytest.raises(RecordFormatError):
        parse_timestamp(text)


# --------------------------------------------------------------------------- per query


def golden_query(*expected: ExpectedEntry) -> GoldenQuery:
    return GoldenQuery(id="q1", query="what is rrf?", expected=expected)


def hit(rank: int, path: str, heading: str | None = None) -> SearchHit:
    return SearchHit(rank=rank, path=path, heading=heading, score=1.0 / (rank + 1), content="body")


def test_evaluate_query_keeps_the_whole_list_and_scores_it() -> None:
    q = golden_query(ExpectedEntry("a.md"), ExpectedEntry("b.md", "Data flow"))
    hits = [hit(1, "x.md"), hit(2, "a.md"), hit(3, "b.md", " data FLOW "), hit(4, "y.md")]
    result = evaluate_query(q, hits, (1, 3))
    assert [h.rank for h in result.top_k] == [1, 2, 3, 4]
    assert [h.path for h in result.top_k] == ["x.md", "a.md", "b.md", "y.md"]
    assert result.top_k[2].heading == " data FLOW "
    assert result.metrics == query_metrics(q.expected, hits, (1, 3))
    assert result.metrics.recall_at_k == {1: 0.0, 3: 1.0}
    assert result.metrics.reciprocal_rank == 0.5
    assert (result.id, result.query, result.expected) == ("q1", "what is rrf?", q.expected)


def test_evaluate_query_ranks_by_position_whatever_the_retriever_said() -> None:
    q = golden_query(ExpectedEntry("a.md"))
    result = evaluate_query(q, [hit(7, "x.md"), hit(0, "a.md")], (1, 5))
    assert [h.rank for h in result.top_k] == [1, 2]
    assert result.metrics.reciprocal_rank == 0.5


def test_query_result_survives_json_transport() -> None:
    q = golden_query(ExpectedEntry("a.md"), ExpectedEntry("b.md", "H"))
    result = evaluate_query(q, [hit(1, "a.md", "Intro"), hit(2, "c.md")], (1, 5, 10))
    shipped = json.loads(json.dumps(result.to_json()))
    assert QueryResult.from_json(shipped) == result
    assert shipped["expected"] == [
        {"path": "a.md", "heading": None},
        {"path": "b.md", "heading": "H"},
    ]
    assert shipped["top_k"][0] == {"rank": 1, "path": "a.md", "heading": "Intro", "score": 0.5}
    assert shipped["metrics"]["recall_at_k"] == {"1": 0.5, "5": 0.5, "10": 0.5}


# --------------------------------------------------------------------------- run record


def test_build_run_aggregates_in_the_given_order() -> None:
    fp = fingerprint()
    record = build_run(fp, [query("a", 1.0, 1.0), query("b", 0.0, 0.0)], corpus())
    assert record.aggregate.recall_at_k == {1: 0.5, 5: 0.5, 10: 0.5}
    assert record.aggregate.mrr == 0.5
    assert record.aggregate.query_count == 2
    assert record.timestamp.tzinfo is not None
    assert [q.id for q in record.per_query] == ["a", "b"]


def test_run_json_layout_follows_the_history_format() -> None:
    record = run(recall={10: 0.2, 1: 0.1, 5: 0.3}, corpus=corpus(), per_query=[query("a")])
    data = record.to_json()
    assert list(data) == ["timestamp", "fingerprint", "corpus", "per_query", "aggregate"]
    assert data["timestamp"] == "2026-04-24T05:32:01Z"
    assert list(data["aggregate"]["recall_at_k"]) == ["1", "5", "10"]
    assert data["corpus"] == {"documents": 4, "chunks": 5, "digest": "d" * 64}


def test_corpus_and_empty_findings_are_omitted_but_findings_kept_when_present() -> None:
    bare = run().to_json()
    assert "corpus" not in bare and "findings" not in bare
    with_finding = run(findings=[finding("n.md", ("a", None), ("b", 8))]).to_json()
    assert with_finding["findings"] == [
        {
            "check": "golden-queries-quoted",
            "path": "n.md",
            "quoted": [
                {"query_id": "a", "rank_in_top_k": None},
                {"query_id": "b", "rank_in_top_k": 8},
            ],
        }
    ]


def test_non_finite_numbers_are_written_as_null_and_read_back_as_nan() -> None:
    record = run(mrr=math.nan, per_query=[query("a", rr=math.inf)])
    text = json.dumps(record.to_json(), allow_nan=False)
    back = RunRecord.from_json(json.loads(text))
    assert math.isnan(back.aggregate.mrr)
    assert math.isnan(back.per_query[0].metrics.reciprocal_rank)


def test_run_without_corpus_or_findings_keys_loads() -> None:
    data = run(corpus=corpus()).to_json()
    del data["corpus"]
    back = RunRecord.from_json(data)
    assert back.corpus is None and back.findings == ()


@pytest.mark.parametrize(
    "breaks",
    [
        lambda d: d.pop("aggregate"),
        lambda d: d.pop("timestamp"),
        lambda d: d["aggregate"].pop("query_count"),
        lambda d: d["aggregate"]["recall_at_k"].update({"five": 0.5}),
        lambda d: d["per_query"][0].pop("metrics"),
        lambda d: d["per_query"][0]["top_k"][0].pop("score"),
        lambda d: d["per_query"][0]["expected"].append({"heading": "x"}),
        lambda d: d.update(findings=[{"check": "x", "path": 3, "quoted": []}]),
    ],
)
def test_missing_or_mistyped_required_keys_are_format_errors(breaks: Any) -> None:
    data = run(per_query=[query("a")]).to_json()
    breaks(data)
    with pytest.raises(RecordFormatError):
        RunRecord.from_json(data)


# --------------------------------------------------------------------------- round trip

_text = st.text(max_size=12)
_unit = st.floats(min_value=0.0, max_value=1.0)
_k = st.lists(st.integers(1, 1000), min_size=1, max_size=4, unique=True).map(sorted)


@st.composite
def run_records(draw: st.DrawFn) -> RunRecord:
    ks = draw(_k)
    k_map = st.fixed_dictionaries(dict.fromkeys(ks, _unit))
    per_query = [
        QueryResult(
            id=draw(_text),
            query=draw(_text),
            expected=tuple(
                draw(st.lists(st.builds(ExpectedEntry, _text, st.none() | _text), min_size=1))
            ),
            top_k=tuple(
                TopHit(rank, path, heading, score)
                for rank, (path, heading, score) in enumerate(
                    draw(st.lists(st.tuples(_text, st.none() | _text, st.floats(-1e9, 1e9)))),
                    start=1,
                )
            ),
            metrics=QueryMetrics(draw(k_map), draw(_unit), draw(k_map)),
        )
        for _ in range(draw(st.integers(0, 3)))
    ]
    fp = Fingerprint.build(
        draw(_text),
        draw(st.none() | _text),
        draw(st.integers(0, 1000)),
        ks,
        draw(_text),
        SearchSettings(
            mmr=MmrSettings(enabled=draw(st.booleans()), lambda_=draw(_unit)),
            fusion=FusionParams(rrf_k=draw(st.floats(1.0, 100.0))),
        ),
        draw(st.sampled_from(["off", "static"])),
        retriever=draw(st.none() | _text),
    )
    findings = [
        finding(draw(_text), (draw(_text), draw(st.none() | st.integers(1, 50))))
        for _ in range(draw(st.integers(0, 2)))
    ]
    moment = draw(
        st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1))
    ).replace(tzinfo=UTC)
    snapshot = draw(st.none() | st.builds(corpus, st.integers(0, 99), st.integers(0, 999), _text))
    return build_run(fp, per_query, snapshot, findings, timestamp=moment)


@settings(max_examples=50)
@given(run_records())
def test_run_record_json_round_trip(record: RunRecord) -> None:
    text = json.dumps(record.to_json(), allow_nan=False, ensure_ascii=False)
    assert RunRecord.from_json(json.loads(text)) == record
