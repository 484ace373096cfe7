"""The Markdown report (``evaluation/reports/markdown_report.py``), read back by a real
CommonMark parser with GitHub's tables: the verdict on the first line, tables that
render as tables, no HTML but ``<details>``/``<summary>``, a bounded size, and outside
values that cannot break out of their cell."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_groove.evaluation.gate.compare import compare
from pytest_groove.evaluation.gate.verdict import comparison_verdicts
from pytest_groove.evaluation.reports.formats import ReportInputs
from pytest_groove.evaluation.reports.headline import ReportGate
from pytest_groove.evaluation.reports.markdown_report import MAX_CHARS, md, render_markdown
from pytest_groove.evaluation.runs.coverage import Coverage, Displacer, FolderCoverage
from pytest_groove.evaluation.runs.record import RunRecord
from pytest_groove.scoring.metrics import aggregate
from tests.helpers.eval_factories import query, run

GITHUB_COMMENT_LIMIT = 65_536
#: a query text and id that try every way out of a table cell and into markup
HOSTILE = (
    "a | b <script>alert(1)</script> `tick` \n# heading\x1b[31m **bold** [x](http://e) "
    "@team #12 $x$ </details>"
)


def parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def tokens(text: str) -> list[Token]:
    """Every token of ``text``, inline children included."""
    out: list[Token] = []
    for token in parser().parse(text):
        out.append(token)
        out.extend(token.children or ())
    return out


def raw_html(text: str) -> list[str]:
    return [t.content.strip() for t in tokens(text) if t.type in ("html_block", "html_inline")]


def details(queries: int) -> str:
    return f"<details><summary>Per query ({queries} queries)</summary>"


def tables(text: str) -> list[list[int]]:
    """Each table as the number of cells of each of its rows."""
    found: list[list[int]] = []
    cells = 0
    for token in parser().parse(text):
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            cells = 0
        elif token.type in ("th_open", "td_open"):
            cells += 1
        elif token.type == "tr_close":
            found[-1].append(cells)
    return found


def judged_inputs(now: RunRecord, before: RunRecord | None, **gate: Any) -> ReportInputs:
    comparison = compare(now, before, 0.05)
    return ReportInputs(
        run=now,
        comparison=comparison,
        history=(),
        verdicts=comparison_verdicts(comparison),
        golden=(),
        prog="groove eval",
        gate=ReportGate(**gate),
    )


def whole(queries: list[Any]) -> RunRecord:
    """A run whose aggregate is its queries' average."""
    return replace(run(per_query=queries), aggregate=aggregate([q.metrics for q in queries]))


def pair(drop: bool = True) -> tuple[RunRecord, RunRecord]:
    names = ["ship-days", "pager-swap", "flaky"]
    before = whole([query(n, top=("a.md",)) for n in names])
    now_queries = [query(n, top=("a.md",)) for n in names]
    if drop:
        now_queries[1] = query("pager-swap", recall={1: 0.0, 5: 1.0, 10: 1.0}, rr=0.5,
                               top=("new.md", "a.md"))  # fmt: skip
    return whole(now_queries), before


def test_a_failing_gate_says_failed_on_the_first_line_and_names_the_regressed_query() -> None:
    now, before = pair()
    inputs = judged_inputs(now, before, applied=True, failures=("recall@1", "MRR"))
    text = render_markdown(inputs)
    first = text.splitlines()[0]
    assert "failed" in first and "pager-swap" in first
    assert "the gate failed on recall@1, MRR; regressed: pager-swap" in parser().renderInline(first)
    html = parser().render(text)
    assert html.count("<table>") == 3  # aggregate, failing queries, per-query detail
    assert all(len(set(rows)) == 1 for rows in tables(text))
    assert "displaced by new.md" in html
    assert "<th>p</th>" in html
    assert set(raw_html(text)) <= {details(3), "</details>"}


def test_a_passing_run_says_passed_first() -> None:
    now, before = pair(drop=False)
    text = render_markdown(judged_inputs(now, before, applied=True))
    assert text.splitlines()[0].startswith("✅ **groove eval: passed")
    assert "Regressed" not in text
    assert parser().render(text).count("<table>") == 2


def test_known_misses_are_named_and_do_not_fail() -> None:
    missing = query("pager-swap", recall=0.0, rr=0.0, top=("b.md",))
    now = whole([query("ship-days"), missing])
    text = render_markdown(judged_inputs(now, now, applied=True, known_misses=frozenset({1})))
    first = text.splitlines()[0]
    assert "passed" in first and "known misses: pager-swap" in first
    assert "| pager-swap | known miss |" in text


def test_what_changed_is_listed() -> None:
    now, before = pair(drop=False)
    inputs = judged_inputs(now, before, applied=True)
    changed = replace(inputs.comparison, settings_changes=("model bge-m3 -> hash",))
    text = render_markdown(replace(inputs, comparison=changed))
    assert "### What changed since the baseline" in text
    assert "<li>settings changed: model bge-m3 -&gt; hash</li>" in parser().render(text)


def test_hostile_query_text_cannot_break_the_table_or_inject_html() -> None:
    bad = query(HOSTILE, recall=0.0, rr=0.0, text=HOSTILE, expected=(HOSTILE,), top=(HOSTILE,))
    now = whole([bad, query("fine")])
    text = render_markdown(judged_inputs(now, None, applied=True, failures=(HOSTILE,)))
    html = parser().render(text)
    assert "<script" not in html and "\x1b" not in text
    assert "&lt;script&gt;" in html  # shown as text
    assert set(raw_html(text)) <= {details(2), "</details>"}
    for rows in tables(text):
        assert len(set(rows)) == 1, rows  # no pipe split a cell
    assert html.count("<h1>") == 0 and "<strong>bold</strong>" not in html
    assert 'href="http://e"' not in html and "<code>" not in html


def test_md_escapes_to_text_that_renders_as_itself() -> None:
    for value in ["1. first", "- item", "+ x", "> quote", "a_b_c", "x\\|y", "&amp;", "~~s~~"]:
        rendered = parser().renderInline(md(value))
        assert rendered == value.replace("&", "&amp;").replace(">", "&gt;"), value


def test_a_huge_golden_set_stays_under_a_github_comment_and_says_what_was_left_out() -> None:
    long = "why " * 200
    queries = [
        query(f"q{i:05d}-{long[:60]}", recall=0.0, rr=0.0, text=long, top=(f"{long[:80]}.md",))
        for i in range(5000)
    ]
    now = whole(queries)
    text = render_markdown(judged_inputs(now, None, applied=True, failures=("recall@1",)))
    assert len(text) <= MAX_CHARS < GITHUB_COMMENT_LIMIT
    assert re.search(r"\d+ of 5000 queries left out", text)
    assert "… and " in text and "more (the JSON report has every query)" in text
    assert text.rstrip().endswith("_")  # the footer made it
    assert all(len(set(rows)) == 1 for rows in tables(text))


@pytest.fixture
def example_kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    shutil.copytree(Path(__file__).parents[3] / "examples" / "kb", kb)
    for state in kb.glob(".groove-eval-history*"):
        state.unlink()
    shutil.rmtree(kb / ".groove", ignore_errors=True)
    return kb


def test_groove_eval_prints_and_writes_the_markdown(example_kb: Path, groove: Any) -> None:
    kb, cwd = example_kb, example_kb.parent
    base = ("eval", "--kb-path", str(kb), "--model", "hash", "--fail-on-regression")
    assert groove(*base, cwd=cwd).returncode == 0  # recorded: the baseline
    same = groove(*base, "--format", "markdown", cwd=cwd)
    assert same.returncode == 0
    first = same.stdout.splitlines()[0]
    assert first.startswith("✅ **groove eval: passed") and "missed: ship\\-days" not in first
    assert parser().render(same.stdout).count("<table>") >= 2
    (kb / "ops" / "rollback.md").unlink()
    failed = groove(*base, "--markdown", "summary.md", cwd=cwd)
    assert failed.returncode == 1
    text = (cwd / "summary.md").read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert "groove eval: failed" in first
    assert "regressed: schema-changes, after-incident" in first
    assert "<table>" in parser().render(text)
    assert "Markdown report written to summary.md" in failed.stderr


def test_the_coverage_section_is_folded_escaped_and_bounded() -> None:
    now, before = pair(drop=False)
    hostile = "notes/<script>|`x`.md"
    coverage = Coverage(
        k=10,
        query_count=3,
        folders=tuple(FolderCoverage(f"f{i}|<b>", 2, 1, 4, 1) for i in range(30)),
        never_returned=tuple(f"{hostile}{i}" for i in range(25)),
        displacers=(Displacer("README.md", 3),),
    )
    text = render_markdown(replace(judged_inputs(now, before), coverage=coverage))
    summary = "<details><summary>Coverage of the knowledge base: documents expected 30/60 (50%)"
    assert summary in text
    blocks = raw_html(text)
    assert all(b == "</details>" or b.startswith("<details><summary>") for b in blocks), blocks
    coverage_table = tables(text)[-2]  # the per-query table is last
    assert coverage_table == [3] * 11  # header + 10 folders, 3 cells each
    assert "… and 20 more folders." in text and "… and 15 more" in text
    assert "<script>" not in text and "README.md (3 queries)" in text
