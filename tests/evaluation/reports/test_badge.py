"""The badge file (``evaluation/reports/badge.py``): a shields.io endpoint document,
checked against the endpoint badge's schema."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from pytest_groove.errors import UsageError
from pytest_groove.evaluation.reports.badge import badge_metric_problem, render_badge
from pytest_groove.evaluation.runs.gate_record import GateRecord
from pytest_groove.settings.options import RunOptions
from tests.evaluation.reports.test_markdown_report import judged_inputs, pair

#: the endpoint schema: required keys and their types, then the optional ones
REQUIRED = {"schemaVersion": int, "label": str, "message": str}
OPTIONAL = {
    "color": str,
    "labelColor": str,
    "isError": bool,
    "namedLogo": str,
    "logoSvg": str,
    "logoColor": str,
    "logoWidth": int,
    "style": str,
    "cacheSeconds": int,
}


def check_endpoint_schema(document: Any) -> None:
    assert isinstance(document, dict)
    assert document.get("schemaVersion") == 1
    assert set(REQUIRED) <= set(document)
    types = {**REQUIRED, **OPTIONAL}
    for key, value in document.items():
        assert key in types, f"not an endpoint key: {key}"
        assert type(value) is types[key], key  # exactly: a bool is no int here
    assert document["message"] and document["label"]


def badge(**gate: Any) -> dict[str, Any]:
    now, before = pair()
    options = gate.pop("options", None)
    inputs = replace(judged_inputs(now, before, **gate), options=options)
    text = render_badge(inputs)
    assert text.endswith("\n") and text.count("\n") == 1
    document: dict[str, Any] = json.loads(text)
    check_endpoint_schema(document)
    return document


def test_a_failed_gate_is_red_and_says_so() -> None:
    found = badge(applied=True, failures=("recall@1",))
    assert found == {
        "schemaVersion": 1,
        "label": "recall@10",
        "message": "1.000 (failed)",
        "color": "red",
    }


def test_a_passing_gate_is_green_and_an_ungated_run_grey() -> None:
    assert badge(applied=True)["color"] == "brightgreen"
    assert badge()["color"] == "lightgrey"


def test_the_metric_is_the_one_asked_for_else_the_first_floor() -> None:
    asked = badge(applied=True, options=RunOptions(badge_metric="MRR"))
    assert (asked["label"], asked["message"]) == ("MRR", "0.833")
    now, before = pair()
    floored = replace(now, gate=GateRecord(threshold=0.05, floors=(("recall@1", 0.5),)))
    inputs = judged_inputs(floored, before, applied=True)
    assert json.loads(render_badge(inputs))["label"] == "recall@1"


def test_a_badge_metric_the_run_cannot_show_is_refused() -> None:
    assert badge_metric_problem("recall@5", (1, 5), ()) is None
    assert "no metric" in str(badge_metric_problem("speed", (1, 5), ()))
    assert "k this run does not measure" in str(badge_metric_problem("recall@3", (1, 5), ()))
    assert "does not measure" in str(badge_metric_problem("map", (1, 5), ()))


def test_the_plan_refuses_a_bad_badge_metric_before_any_index_work(tmp_path: Any) -> None:
    from pytest_groove.evaluation.plan import plan_evaluation

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - query: q\n    expected:\n      - path: a.md\n", encoding="utf-8"
    )
    with pytest.raises(UsageError, match="badge-metric 'recall@3' is at a k"):
        plan_evaluation(kb, RunOptions(badge=tmp_path / "b.json", badge_metric="recall@3"))
