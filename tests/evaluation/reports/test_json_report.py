"""The JSON report: keys always present, null rules, diff, findings."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT
from pytest_groove.evaluation.gate.compare import compare
from pytest_groove.evaluation.reports.json_report import build_json_report, dumps_json_report
from pytest_groove.evaluation.runs.record import RunRecord
from tests.helpers.cli_invoke import invoke
from tests.helpers.eval_factories import corpus, finding, fingerprint, query, run

T = 0.05
#: the top-level keys, in the order the report writes them
KEYS = [
    "timestamp",
    "fingerprint",
    "corpus",
    "corpus_changed",
    "aggregate",
    "per_query",
    "moved",
    "findings",
    "previous",
    "diff",
    "diff_p",
    "recorded",
    "gate",
    "gate_loosened",
    "baseline",
    "coverage",
]


def report(now: RunRecord, previous: RunRecord | None = None, recorded: bool = True) -> Any:
    """The report as a consumer sees it: through the printed text."""
    built = build_json_report(now, compare(now, previous, T), recorded=recorded)
    return json.loads(dumps_json_report(built))


def test_first_run_has_every_key_with_nulls_where_nothing_compares() -> None:
    data = report(run(recall={1: 0.25, 5: 0.5, 10: 0.5}, corpus=corpus(), per_query=[query("a")]))
    assert list(data) == KEYS
    assert data["previous"] is None and data["diff"] is None
    assert data["corpus_changed"] is None
    assert data["findings"] == []
    assert data["aggregate"]["recall_at_k"]["5"] == 0.5
    assert data["fingerprint"]["model"] == "bge-m3"
    assert data["corpus"] == {"chunks": 5, "digest": "d" * 64, "documents": 4}
    assert data["timestamp"] == "2026-04-24T05:32:01Z"
    assert data["recorded"] is True


def test_compatible_previous_gives_a_raw_diff_for_every_k() -> None:
    data = report(run(minutes=1, recall=0.8, mrr=0.5), run(minutes=0, recall=0.6, mrr=0.75))
    assert data["diff"]["recall_at_k"]["5"] == pytest.approx(0.2)
    assert data["diff"]["mrr"] == -0.25
    assert set(data["diff"]["ndcg_at_k"]) == {"1", "5", "10"}
    assert data["previous"]["timestamp"] == "2026-04-24T05:32:01Z"


def test_incompatible_previous_is_shown_but_not_diffed() -> None:
    previous = run(minutes=0, fp=fingerprint(metric_version=1))
    data = report(run(minutes=1), previous)
    assert data["diff"] is None
    assert data["previous"]["fingerprint"]["metric_version"] == 1


def test_previous_keeps_record_rules_for_corpus_and_findings() -> None:
    data = report(run(minutes=1, corpus=corpus()), run(minutes=0))
    assert "corpus" not in data["previous"] and "findings" not in data["previous"]


@pytest.mark.parametrize(
    ("previous_corpus", "expected"),
    [(corpus(4, 5, "a" * 64), True), (corpus(), False), (None, None)],
)
def test_corpus_changed_is_true_false_or_null(previous_corpus: Any, expected: Any) -> None:
    data = report(run(minutes=1, corpus=corpus()), run(minutes=0, corpus=previous_corpus))
    assert data["corpus_changed"] is expected


def test_findings_carry_explicit_null_ranks() -> None:
    now = run(findings=[finding("notes/eval-log.md", ("rrf-basics", 9), ("dedup", None))])
    assert report(now)["findings"] == [
        {
            "check": "golden-queries-quoted",
            "path": "notes/eval-log.md",
            "quoted": [
                {"query_id": "rrf-basics", "rank_in_top_k": 9},
                {"query_id": "dedup", "rank_in_top_k": None},
            ],
        }
    ]


def test_per_query_echoes_expected_and_the_whole_retrieved_list() -> None:
    now = run(per_query=[query("q", 0.5, expected=("a.md", "b.md"), top=("x.md", "a.md", "y.md"))])
    (row,) = report(now)["per_query"]
    assert row["expected"] == [{"heading": None, "path": "a.md"}, {"heading": None, "path": "b.md"}]
    assert [hit["rank"] for hit in row["top_k"]] == [1, 2, 3]
    assert set(row["metrics"]) == {"ndcg_at_k", "recall_at_k", "reciprocal_rank"}


def test_output_is_indented_strict_json_in_a_fixed_key_order() -> None:
    now = run(mrr=math.nan, per_query=[query("q", rr=math.inf)])
    printed = dumps_json_report(build_json_report(now, compare(now, None, T), recorded=False))
    assert printed.endswith("}\n")
    assert printed.startswith('{\n  "timestamp": "2026-04-24T05:32:01Z",\n  "fingerprint": {\n')
    assert "NaN" not in printed and "Infinity" not in printed
    data = json.loads(printed)
    assert data["aggregate"]["mrr"] is None
    assert data["recorded"] is False
    assert list(data) == KEYS
    # the run's own objects keep the history file's field order
    # (then the verdict's keys)
    assert list(data["per_query"][0]) == [
        "id",
        "query",
        "expected",
        "top_k",
        "metrics",
        "verdict",
        "first_rank",
        "baseline_first_rank",
        "regressed",
        "removed",
        "headings_removed",
        "lost",
        "changed",
        "displaced_by",
        "violations",
    ]


def test_k_maps_print_in_numeric_order_everywhere() -> None:
    fp = fingerprint(k_values=(1, 5, 10))
    k_map = {10: 0.3, 1: 0.1, 5: 0.2}
    q = query("q", k_map, ndcg=k_map)
    now = run(minutes=1, fp=fp, recall=k_map, ndcg=k_map, per_query=[q])
    prev = run(minutes=0, fp=fp, recall=k_map, ndcg=k_map, per_query=[q])
    printed = dumps_json_report(build_json_report(now, compare(now, prev, T), recorded=True))
    data = json.loads(printed)
    maps = [
        data["aggregate"]["recall_at_k"],
        data["aggregate"]["ndcg_at_k"],
        data["per_query"][0]["metrics"]["recall_at_k"],
        data["previous"]["aggregate"]["ndcg_at_k"],
        data["diff"]["recall_at_k"],
        data["diff"]["ndcg_at_k"],
    ]
    for k_map_json in maps:
        assert list(k_map_json) == ["1", "5", "10"]
    assert printed.count('"1": ') == printed.count('"10": ') > 0
    assert printed.index('"5": ') < printed.index('"10": ')


def test_the_printed_report_is_stable() -> None:
    now = run(minutes=1, corpus=corpus(), per_query=[query("a"), query("b", 0.0)])
    built = build_json_report(now, compare(now, run(minutes=0), T), recorded=True)
    assert dumps_json_report(built) == dumps_json_report(json.loads(dumps_json_report(built)))


# --------------------------------------------------------------------------- the page

JSON_DOC = REPO_ROOT / "docs" / "json-report.md"
_ROW_KEY = re.compile(r"^\| `([a-z_]+)` \|")


def documented_keys(section: str) -> list[str]:
    """The keys the table under ``## <section>`` of docs/json-report.md lists, in order."""
    text = JSON_DOC.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for line in body.splitlines() if (m := _ROW_KEY.match(line))]


def test_the_page_lists_the_top_level_keys_in_the_order_written() -> None:
    assert documented_keys("Top level") == KEYS


def test_every_key_of_a_real_report_is_on_the_page(example_kb_copy: Path) -> None:
    """A run with every optional metric, the significance test, the approximate vector
    index and a baseline: each key it writes is documented (sqlite-utils' way)."""
    args = [
        "eval", "--kb-path", example_kb_copy, "--model", "hash", "--vector-index", "hnsw",
        "--metrics", "precision,hit_rate,map,r_precision", "--significance", "0.05",
    ]  # fmt: skip
    assert invoke(*args).returncode == 0
    run_ = invoke(*args, "--format", "json")
    assert run_.returncode == 0, run_.stderr
    data = json.loads(run_.stdout)
    assert data["previous"] is not None and data["diff_p"] is not None
    for section, keys in (
        ("`fingerprint`", data["fingerprint"]),
        ("`aggregate`", data["aggregate"]),
        ("`per_query[]`", data["per_query"][0]),
    ):
        missing = sorted(set(keys) - set(documented_keys(section)))
        assert not missing, f"docs/json-report.md ## {section} does not list {missing}"
    # `name` is written only for a query whose id another query shares (none here),
    # `not_expected` and `within` only for a query that has them (none here)
    optional = {"name", "not_expected", "within"}
    assert set(documented_keys("`per_query[]`")) - optional == set(data["per_query"][0])
