"""Grades and the optional metrics through the records, the loader, the options, the
fingerprint, thresholds, the gate and the reports."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.compare import compare, gate_failures
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.evaluation.reports.text_report import render_text
from pytest_groove.evaluation.runs.record import Fingerprint, QueryResult, RunRecord
from pytest_groove.scoring.metric_names import OPTIONAL_METRICS, parse_metric_names
from pytest_groove.scoring.metric_table import (
    MAP,
    PRECISION,
    Metric,
    aggregate_summary,
    parse_metric,
    query_summary,
)
from pytest_groove.scoring.metrics import (
    AggregateMetrics,
    aggregate,
    average_precision,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    query_metrics,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.scoring.thresholds import parse_thresholds
from pytest_groove.settings.config import load_settings
from pytest_groove.settings.options import OPTIONS_BY_NAME
from tests.evaluation.reports.test_trec import _ranked
from tests.helpers.eval_factories import fingerprint, query, run

A, B, C = ExpectedEntry("a.md"), ExpectedEntry("b.md"), ExpectedEntry("c.md")


# --------------------------------------------------------------------------- formulas


def test_the_formulas_on_a_worked_example() -> None:
    hits = _ranked([("x.md", None), ("a.md", None), ("a.md", "Two"), ("b.md", None)])
    expected = (A, B, C)
    assert precision_at_k(expected, hits, 2) == 0.5
    assert precision_at_k(expected, hits, 4) == 0.5  # the second a.md chunk earns nothing
    assert precision_at_k(expected, hits, 10) == 0.2  # divided by k, not by the hits
    assert hit_rate_at_k(expected, hits, 1) == 0.0 and hit_rate_at_k(expected, hits, 2) == 1.0
    assert average_precision(expected, hits) == (1 / 2 + 2 / 4) / 3
    assert r_precision(expected, hits) == 1 / 3


def test_grade_zero_is_not_expected_and_grades_are_the_gain() -> None:
    hits = _ranked([("b.md", None), ("a.md", None)])
    graded = (replace(A, grade=3), replace(B, grade=0))
    assert recall_at_k(graded, hits, 1) == 0.0 and recall_at_k(graded, hits, 2) == 1.0
    assert reciprocal_rank(graded, hits) == 0.5
    assert r_precision(graded, hits) == 0.0
    # DCG = 3 / log2(3), IDCG = 3
    assert ndcg_at_k(graded, hits, 2) == pytest.approx(1 / 1.584962500721156, abs=1e-15)
    assert ndcg_at_k((replace(A, grade=2), B), hits, 2) < ndcg_at_k(
        (A, replace(B, grade=2)), hits, 2
    )


def test_default_metrics_measure_nothing_optional() -> None:
    metrics = query_metrics((A,), _ranked([("a.md", None)]), (1, 5))
    assert metrics.precision_at_k is None and metrics.average_precision is None
    agg = aggregate([metrics])
    assert agg.map is None and agg.precision_at_k is None
    full = aggregate([query_metrics((A,), _ranked([("a.md", None)]), (1, 5), OPTIONAL_METRICS)])
    assert full.precision_at_k == {1: 1.0, 5: 0.2} and full.map == 1.0 and full.r_precision == 1.0


# --------------------------------------------------------------------------- records


def _result(entries: tuple[ExpectedEntry, ...], optional: tuple[str, ...] = ()) -> QueryResult:
    hits = _ranked([("a.md", None)])
    return replace(
        query("q"), expected=entries, metrics=query_metrics(entries, hits, (1, 5), optional)
    )


def test_grade_one_keeps_the_record_bytes_and_other_grades_round_trip() -> None:
    binary = _result((A,)).to_json()
    assert binary["expected"] == [{"path": "a.md", "heading": None}]
    assert set(binary["metrics"]) == {"recall_at_k", "reciprocal_rank", "ndcg_at_k"}
    graded = _result((replace(A, grade=2), replace(B, grade=0)), OPTIONAL_METRICS)
    data = json.loads(json.dumps(graded.to_json()))
    assert data["expected"][0]["grade"] == 2 and data["expected"][1]["grade"] == 0
    assert data["metrics"]["average_precision"] == 1.0
    assert QueryResult.from_json(data) == graded


def test_a_negative_stored_grade_is_a_format_error() -> None:
    data = _result((A,)).to_json()
    data["expected"][0]["grade"] = -1
    with pytest.raises(ValueError, match="grade"):
        QueryResult.from_json(data)


def test_the_aggregate_and_fingerprint_round_trip_with_optional_metrics() -> None:
    fp = replace(fingerprint(), metrics=("precision", "map"), gain="grade")
    assert fingerprint().to_json().keys().isdisjoint({"metrics", "gain"})
    assert fp.to_json()["metrics"] == ["precision", "map"] and fp.to_json()["gain"] == "grade"
    assert Fingerprint.from_json(json.loads(json.dumps(fp.to_json()))) == fp
    record = replace(
        run(fp=fp),
        aggregate=AggregateMetrics({1: 0.5}, 0.5, {1: 0.5}, 2, precision_at_k={1: 0.25}, map=0.4),
    )
    again = RunRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert again.aggregate == record.aggregate


# --------------------------------------------------------------------------- golden file


def _golden(tmp_path: Path, grade_line: str) -> Path:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    path = tmp_path / ".groove-eval.yml"
    path.write_text(f"queries:\n- query: alpha\n  expected:\n  - path: a.md\n{grade_line}")
    return path


def test_the_loader_reads_grades(tmp_path: Path) -> None:
    golden = load_golden(_golden(tmp_path, "    grade: 4\n"), tmp_path)
    assert golden.queries[0].expected[0].grade == 4
    assert load_golden(_golden(tmp_path, ""), tmp_path).queries[0].expected[0].grade == 1


@pytest.mark.parametrize("value", ["-1", "'2'", "true", "1.5"])
def test_a_grade_that_is_no_whole_number_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(GrooveError, match=r"expected\[0\]\.grade: invalid value.*at line 5"):
        load_golden(_golden(tmp_path, f"    grade: {value}\n"), tmp_path)


def test_a_query_judged_only_not_relevant_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GrooveError, match="every entry has grade 0"):
        load_golden(_golden(tmp_path, "    grade: 0\n"), tmp_path)


# --------------------------------------------------------------------------- options


def test_metric_names_in_the_config_and_on_the_command_line(tmp_path: Path) -> None:
    config = tmp_path / "groove.toml"
    config.write_text('[eval]\nmetrics = ["MAP", "success", "ndcg"]\n', encoding="utf-8")
    assert load_settings(None, config).eval.metrics == ("hit_rate", "map")
    assert load_settings(None, None).eval.metrics == ()
    config.write_text('[eval]\nmetrics = ["f1"]\n', encoding="utf-8")
    with pytest.raises(GrooveError, match=r"eval\.metrics must be a list of metric names"):
        load_settings(None, config)
    option = OPTIONS_BY_NAME["metrics"]
    assert option.parse("--groove-metrics", "r-precision, precision") == (
        "precision",
        "r_precision",
    )
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        option.parse("--groove-metrics", "f1")
    assert parse_metric_names(["recall", "mrr"], "x") == ()


# --------------------------------------------------------------------------- table, gate, reports


def test_the_new_metrics_have_threshold_names() -> None:
    assert parse_metric("precision@5") == Metric(PRECISION, 5)
    assert parse_metric("MAP") == Metric(MAP)
    assert parse_metric("r_precision") is not None and parse_metric("hit_rate@3") is not None
    spec = parse_thresholds("map=0.01,precision@5=0.02", 0.05)
    assert spec.for_metric("map") == 0.01


def _run_with_map(value: float, minutes: int) -> RunRecord:
    fp = replace(fingerprint(), metrics=("map",))
    agg = AggregateMetrics({1: 0.5, 5: 0.5, 10: 0.5}, 0.5, {1: 0.5, 5: 0.5, 10: 0.5}, 2, map=value)
    return replace(run(minutes=minutes, fp=fp), aggregate=agg)


def test_a_map_drop_fails_the_gate_and_shows_in_the_report() -> None:
    before, after = _run_with_map(0.6, 0), _run_with_map(0.4, 1)
    comparison = compare(after, before, 0.05)
    assert gate_failures(comparison, 0.05) and "MAP" in " ".join(comparison.regressions)
    assert comparison.diff is not None and comparison.diff.map == pytest.approx(-0.2)
    text = render_text(after, comparison)
    assert "MAP" in text and "0.400" in text
    assert "MAP 0.400" in aggregate_summary(after.aggregate, (1, 5, 10))
    assert not gate_failures(compare(before, before, 0.05), 0.05)


def test_a_query_summary_names_only_the_measured_metrics() -> None:
    plain = _result((A,)).metrics
    assert "AP" not in query_summary(plain, (1, 5))
    assert "AP 1.00" in query_summary(_result((A,), ("map",)).metrics, (1, 5))


def test_the_compact_history_keeps_grades_and_optional_metrics() -> None:
    from pytest_groove.evaluation.history.codec import decode_run, encode_run

    graded = _result((replace(A, grade=2), replace(B, grade=0)), OPTIONAL_METRICS)
    plain = _result((A,))
    record = replace(run(), per_query=(graded, plain))
    encoded = json.loads(json.dumps(encode_run(record)))
    assert encoded["queries"][1]["expected"] == [[0, None]]  # grade 1: as before
    assert isinstance(encoded["queries"][1]["metrics"], list)  # the compact form
    again = decode_run(encoded)
    assert again.per_query == record.per_query
    assert [e.grade for e in again.per_query[0].expected] == [2, 0]
