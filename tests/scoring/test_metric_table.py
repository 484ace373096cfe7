"""The metric table: every spelling of every metric, and the helpers the doors call."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from conftest import REPO_ROOT
from pytest_groove.evaluation.gate.compare import query_regressed
from pytest_groove.evaluation.runs.record import aggregate_to_json, metrics_to_json
from pytest_groove.scoring.metric_table import (
    METRIC_KINDS,
    NDCG,
    RECALL,
    RR,
    THRESHOLD_EXAMPLE,
    Metric,
    aggregate_metrics_to_json,
    aggregate_summary,
    all_metrics,
    junit_properties,
    metric_names_hint,
    metric_value,
    parse_metric,
    query_summary,
    summary_metrics,
    values_to_json,
)
from pytest_groove.scoring.metrics import AggregateMetrics, QueryMetrics
from tests.helpers import eval_factories as f


def query_metrics_to_json(metrics: QueryMetrics) -> dict[str, object]:
    """``{"recall_at_k": {...}, "reciprocal_rank": .., "ndcg_at_k": {...}}``."""
    return {
        kind.query_json_key: values_to_json(found)
        for kind in METRIC_KINDS
        if (found := kind.of_query(metrics)) is not None
    }


PACKAGE = REPO_ROOT / "pytest_groove"

METRICS = QueryMetrics(
    recall_at_k={1: 0.0, 5: 0.5, 10: 1.0},
    reciprocal_rank=0.25,
    ndcg_at_k={1: 0.0, 5: 0.4307, 10: 0.6131},
)
AGGREGATE = AggregateMetrics(
    recall_at_k={1: 0.25, 5: 0.5, 10: 0.75},
    mrr=0.5,
    ndcg_at_k={1: 0.25, 5: 0.4, 10: 0.46},
    query_count=4,
)


@pytest.mark.parametrize(
    ("name", "kind", "k"),
    [
        ("recall@5", RECALL, 5),
        ("Recall@10", RECALL, 10),
        ("  recall@9999 ", RECALL, 9999),
        ("mrr", RR, None),
        ("MRR", RR, None),
        ("RR", RR, None),
        ("reciprocal rank", RR, None),
        ("ndcg@10", NDCG, 10),
        ("nDCG@1", NDCG, 1),
    ],
)
def test_every_spelling_parses_to_its_metric(name: str, kind: object, k: int | None) -> None:
    assert parse_metric(name) == Metric(kind, k)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["recall", "recall@", "recall@0", "recall@05", "recall@10000", "f1@5", "mrr@5", "map@5"]
)
def test_names_that_are_no_metric_are_refused(name: str) -> None:
    assert parse_metric(name) is None
    with pytest.raises(ValueError, match="unknown metric"):
        metric_value(METRICS, name)


def test_every_label_of_every_metric_parses_back_to_it() -> None:
    for metric in all_metrics((1, 5, 10)):
        labels = (
            metric.label,
            metric.query_label,
            metric.query_regression_label,
            metric.threshold_key,
        )
        assert {parse_metric(label) for label in labels} == {metric}


def test_the_labels_users_read_are_the_seeds() -> None:
    assert [m.label for m in all_metrics((1, 5))] == [
        "recall@1",
        "recall@5",
        "MRR",
        "nDCG@1",
        "nDCG@5",
    ]
    assert [m.query_label for m in summary_metrics((1, 5))] == [
        "recall@1",
        "recall@5",
        "RR",
        "nDCG@5",
    ]
    assert [m.threshold_key for m in all_metrics((10,))] == ["recall@10", "mrr", "ndcg@10"]
    assert metric_names_hint() == "recall@K, mrr or ndcg@K"
    assert THRESHOLD_EXAMPLE == "recall@5=0.02,mrr=0.05"


def test_summary_without_k_values_keeps_recall_and_rank_only() -> None:
    assert summary_metrics(()) == [Metric(RR)]


def test_junit_properties_are_todays() -> None:
    assert junit_properties(METRICS, (1, 5, 10)) == [
        ("groove.recall@1", "0.0000"),
        ("groove.recall@5", "0.5000"),
        ("groove.recall@10", "1.0000"),
        ("groove.reciprocal_rank", "0.2500"),
        ("groove.ndcg@1", "0.0000"),
        ("groove.ndcg@5", "0.4307"),
        ("groove.ndcg@10", "0.6131"),
    ]


def test_item_and_history_lines_are_todays() -> None:
    assert query_summary(METRICS, (1, 5, 10)) == (
        "recall@1 0.00  recall@5 0.50  recall@10 1.00  RR 0.25  nDCG@10 0.61"
    )
    assert aggregate_summary(AGGREGATE, (1, 5, 10)) == (
        "recall@1 0.250  recall@5 0.500  recall@10 0.750  MRR 0.500  nDCG@10 0.460"
    )


def test_metric_value_reads_every_name_a_regression_reports() -> None:
    before = f.query("q", {1: 1.0, 5: 1.0}, rr=1.0, ndcg={1: 1.0, 5: 1.0}, k_values=(1, 5))
    after = f.query("q", {1: 0.0, 5: 1.0}, rr=0.5, ndcg={1: 0.0, 5: 0.63}, k_values=(1, 5))
    names = query_regressed(after, before, 0.0)
    assert names == ["recall@1", "reciprocal rank", "nDCG@1", "nDCG@5"]
    assert [metric_value(after.metrics, n) for n in names] == [0.0, 0.5, 0.0, 0.63]
    assert [metric_value(before.metrics, n) for n in names] == [1.0, 1.0, 1.0, 1.0]


def test_a_k_the_metrics_lack_reads_as_zero() -> None:
    assert metric_value(METRICS, "recall@3") == 0.0
    assert Metric(NDCG, 3).of_aggregate(AGGREGATE) == 0.0


def test_json_forms_match_the_run_records() -> None:
    nan = dataclasses.replace(METRICS, reciprocal_rank=math.nan)
    assert query_metrics_to_json(nan) == metrics_to_json(nan)
    expected = aggregate_to_json(AGGREGATE)
    del expected["query_count"]
    assert aggregate_metrics_to_json(AGGREGATE) == expected
    assert list(aggregate_metrics_to_json(AGGREGATE)) == list(expected)


def test_json_keys_are_the_record_field_names() -> None:
    # a decoder can build the records from the table's keys
    query_fields = [field.name for field in dataclasses.fields(QueryMetrics)]
    aggregate_fields = [field.name for field in dataclasses.fields(AggregateMetrics)]
    assert [kind.query_json_key for kind in METRIC_KINDS] == query_fields
    assert [kind.json_key for kind in METRIC_KINDS] == [
        name for name in aggregate_fields if name != "query_count"
    ]


#: modules still spelling the metric names by hand; the list only shrinks (each
#: one should call the table instead), and no other module may start doing it
NOT_YET_ON_THE_TABLE = {
    "settings/options.py",  # help texts (the option table imports nothing heavy)
    "evaluation/history/codec.py",  # the stored layout's error message
}


def test_metric_names_are_spelled_in_the_table_only() -> None:
    spelled = re.compile(r"recall@|nDCG@")
    modules = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if spelled.search(path.read_text(encoding="utf-8"))
    }
    assert modules - NOT_YET_ON_THE_TABLE == {"scoring/metric_table.py"}


def test_the_plugin_items_use_the_table() -> None:
    from pytest_groove.plugin.items import describe_result

    result = f.query("q", {1: 0.0, 5: 0.5}, rr=0.25, ndcg={1: 0.0, 5: 0.4307}, k_values=(1, 5))
    text = describe_result(result, (1, 5), "headline")
    assert f"  metrics:  {query_summary(result.metrics, (1, 5))}" in text.splitlines()
    assert metric_value(result.metrics, "recall@5") == 0.5
    assert metric_value(result.metrics, "reciprocal rank") == 0.25
