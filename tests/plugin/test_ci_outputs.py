"""``--groove-markdown`` and ``--groove-badge`` under pytest: a passing session's
summary says passed, a failing one says failed and names the regressed query, both
render with their tables, and the badge is a shields.io endpoint document."""

from __future__ import annotations

import json

import pytest

from tests.evaluation.reports.test_badge import check_endpoint_schema
from tests.evaluation.reports.test_markdown_report import details, parser, raw_html
from tests.helpers.kb_files import golden_yaml, write_notes

pytest_plugins = ["pytester"]

GOLDEN = golden_yaml(
    ("ship-days", "which days do we ship", "ops/deploys.md"),
    ("flaky", "a check that fails then passes", "practices/testing.md"),
)

#: the retriever answers each query first; with GROOVE_TEST_DROP set, flaky's answer
#: falls to rank 3 behind a new note
CONFTEST = """\
import os


def retrieve(query, limit):
    if query.startswith("which days"):
        paths = ["ops/deploys.md", "misc/a.md"]
    elif os.environ.get("GROOVE_TEST_DROP"):
        paths = ["misc/a.md", "ops/deploys.md", "practices/testing.md"]
    else:
        paths = ["practices/testing.md", "misc/a.md"]
    return [{"path": p, "score": 1.0 / rank} for rank, p in enumerate(paths, 1)][:limit]


retrieve.groove_name = "fake"


def pytest_groove_retriever(config):
    return retrieve
"""

NOTES = {
    "misc/a.md": "# A\n\nUnrelated notes about the office kitchen.\n",
    "ops/deploys.md": "# Deploys\n\nWe ship on Tuesdays and Thursdays only.\n",
    "practices/testing.md": "# Testing\n\nA check that fails then passes is quarantined.\n",
}


def test_the_summary_and_badge_say_the_verdict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = pytester.path / "kb"
    write_notes(kb, NOTES)
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    args = (
        "--groove-kb", "kb", "--groove-k", "1,3", "--groove-fail-on-regression",
        "--groove-markdown", "out/summary.md", "--groove-badge", "out/badge.json",
    )  # fmt: skip
    pytester.runpytest(*args).assert_outcomes(passed=2)  # recorded: the baseline
    pytester.runpytest(*args).assert_outcomes(passed=2)
    summary = pytester.path / "out" / "summary.md"
    text = summary.read_text(encoding="utf-8")
    assert text.splitlines()[0].startswith("✅ **groove: passed — the gate held")
    # the aggregate, the coverage of the KB, every query
    assert parser().render(text).count("<table>") == 3
    assert "Coverage of the knowledge base: documents expected" in text
    badge = json.loads((pytester.path / "out" / "badge.json").read_text(encoding="utf-8"))
    check_endpoint_schema(badge)
    assert badge == {
        "schemaVersion": 1,
        "label": "recall@3",
        "message": "1.000",
        "color": "brightgreen",
    }

    monkeypatch.setenv("GROOVE_TEST_DROP", "1")
    result = pytester.runpytest(*args, "--groove-badge-metric", "mrr")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = summary.read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first.startswith("❌ **groove: failed — the gate failed on")
    assert "regressed: flaky" in first
    assert "nDCG\\@3 and 1 more" in first  # the fifth: "query flaky regressed"
    html = parser().render(text)
    assert html.count("<table>") == 4
    assert "displaced by misc/a.md" in html
    blocks = set(raw_html(text))
    assert {details(2), "</details>"} <= blocks
    assert all(b.startswith("<details><summary>") or b == "</details>" for b in blocks)
    badge = json.loads((pytester.path / "out" / "badge.json").read_text(encoding="utf-8"))
    check_endpoint_schema(badge)
    assert badge["label"] == "MRR" and badge["color"] == "red"
    assert badge["message"] == "0.667 (failed)"


def test_a_bad_badge_metric_stops_the_session_with_one_line(pytester: pytest.Pytester) -> None:
    kb = pytester.path / "kb"
    write_notes(kb, NOTES)
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-badge", "b.json", "--groove-badge-metric", "speed"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groove-badge-metric 'speed' is no metric*"])
