"""The optional HTML report: content, escaping, plots, and both doors' ``--html`` options.

Unit tests build records with ``eval_factories``; the end-to-end tests run
``groove eval --html`` in a subprocess and ``pytest --groove-html`` through pytester
on a copy of the shipped example KB (hash model: lexical and instant).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example_kb
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.finish import finish_evaluation
from pytest_groove.evaluation.gate.compare import compare
from pytest_groove.evaluation.lifecycle import Evaluation, pick_baseline_for
from pytest_groove.evaluation.plan import plan_evaluation, read_stored_runs
from pytest_groove.evaluation.reports.headline import ReportGate
from pytest_groove.evaluation.reports.html_report import (
    MAX_DELTA_ROWS,
    PLOTS_EXTRA,
    check_html_available,
    render_html_report,
    write_html_report,
)
from pytest_groove.evaluation.runs.record import Finding, QueryResult, RunRecord, TopHit
from pytest_groove.scoring.metrics import QueryMetrics, aggregate
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
from pytest_groove.search.hits import GROUPED_BY_DOCUMENT
from pytest_groove.settings.options import RunOptions
from tests.helpers import eval_factories as f
from tests.helpers.cli_invoke import Groove
from tests.helpers.eval_factories import StaticSearcher
from tests.helpers.kb_files import write_invoices_kb

try:
    import matplotlib.backends.backend_agg
    import matplotlib.figure
    import matplotlib.style  # noqa: F401

    HAVE_MATPLOTLIB = True
except ImportError:  # pragma: no cover - the plots extra is part of the dev setup
    HAVE_MATPLOTLIB = False

needs_matplotlib = pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="needs pytest-groove[plots]")

pytest_plugins = ["pytester"]

_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')
#: trend plots for k = 1, 5, 10: recall@1/5/10, MRR, nDCG@1/5/10
TREND_PLOTS = 7


def pngs(html: str) -> list[bytes]:
    return [base64.b64decode(data) for data in _PNG.findall(html)]


def scored(minutes: int, values: list[float], **changes: object) -> RunRecord:
    """A run whose aggregate really is the mean of its per-query metrics."""
    per_query = [
        f.query(f"q{i}", recall=v, rr=v, text=f"question number {i}") for i, v in enumerate(values)
    ]
    record = f.run(minutes=minutes, per_query=per_query, corpus=f.corpus(), **changes)  # type: ignore[arg-type]
    return replace(record, aggregate=aggregate([q.metrics for q in per_query]))


def with_query(record: RunRecord, index: int, result: QueryResult) -> RunRecord:
    per_query = list(record.per_query)
    per_query[index] = result
    return replace(record, per_query=tuple(per_query))


# --------------------------------------------------------------------------- rendering


@needs_matplotlib
def test_a_report_with_a_baseline_has_trends_deltas_and_every_section() -> None:
    history = [scored(2, [1.0, 1.0, 0.0]), scored(1, [1.0, 0.0, 0.0])]
    run = scored(5, [1.0, 0.0, 1.0])
    html = render_html_report(run, compare(run, history[0], 0.05), history, title="my report")

    images = pngs(html)
    assert len(images) == TREND_PLOTS + 1  # + the per-query delta chart
    assert all(image.startswith(b"\x89PNG\r\n\x1a\n") for image in images)
    assert html.startswith("<!DOCTYPE html>")
    assert "<h1>my report</h1>" in html
    for text in ("bge-m3", "4 docs / 5 chunks", "golden 9c1e00000000", "Per-query change"):
        assert text in html
    assert "Compared with the run of 2026-04-24T05:34:01Z." in html
    # self-contained: nothing fetched, nothing executed
    assert "<script" not in html and "<link" not in html and "http" not in html
    # the aggregate diff read from the comparison: recall@10 went 0.667 -> 0.667, q1 dropped
    assert "<td>recall@10</td><td class='num'>0.667</td><td class='num'>0.667</td>" in html
    assert (
        '<tr class="miss"><td class=\'num\' data-label="#">2</td><td data-label="id">'
        '<code>q1</code></td><td data-label="verdict" class="verdict-missed">missed'
    ) in html
    assert '<td class="up" data-label="Δ recall@10">↑ 1.000</td>' in html  # q2: 0 -> 1
    assert "3 run(s) with this fingerprint" in html


@needs_matplotlib
def test_a_second_import_of_markupsafe_leaves_the_markup_unescaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest's inline runs forget the modules imported inside them: the next import of
    # markupsafe is a second module with a second Markup class, while the template
    # compiled before still makes the first one's; its macros' tags must stay tags
    history = [scored(2, [1.0, 1.0, 0.0])]
    run = scored(5, [1.0, 0.0, 1.0])
    render_html_report(run, compare(run, history[0], 0.05), history, title="first")
    monkeypatch.delitem(sys.modules, "markupsafe")
    html = render_html_report(run, compare(run, history[0], 0.05), history, title="again")
    assert '<table class="metric-grid">' in html
    assert "&lt;table" not in html and "&lt;tr&gt;" not in html


@needs_matplotlib
def test_without_a_baseline_there_is_no_delta_chart_and_no_diff_column() -> None:
    run = scored(5, [1.0, 0.0])
    html = render_html_report(run, compare(run, None, 0.05), [], title="t")
    assert len(pngs(html)) == TREND_PLOTS
    assert "Per-query change" not in html
    assert "<th>Δ</th>" not in html and "Δ recall@10" not in html
    assert "No previous run to compare with." in html
    assert "1 run(s) with this fingerprint" in html


@needs_matplotlib
def test_incompatible_runs_are_left_out_of_the_trend_and_counted() -> None:
    other = f.fingerprint(model="e5-small")
    history = [
        scored(3, [0.0, 0.0], fp=other),
        scored(2, [1.0, 1.0]),
        scored(1, [1.0, 1.0], fp=other),
    ]
    run = scored(5, [1.0, 0.0])
    # the newest stored run is incompatible: no diff, no delta chart
    html = render_html_report(run, compare(run, history[0], 0.05), history, title="t")
    assert len(pngs(html)) == TREND_PLOTS
    assert "2 run(s) with this fingerprint" in html
    assert "2 stored run(s) with another fingerprint left out." in html
    assert "⚠️ config or metric version changed since last run (" in html
    assert "differ" in html and ", diff disabled" in html


@needs_matplotlib
def test_every_user_string_is_escaped() -> None:
    hostile = "<script>alert('x')</script>"
    result = f.query(
        'id"><b>',
        text=f"why {hostile} & $math$?",
        expected=("docs/<a>.md",),
        top=("docs/<a>.md", "x&y.md"),
    )
    run = replace(
        scored(5, [1.0]),
        fingerprint=f.fingerprint(model="<i>model</i>", retriever="mod:<fn>"),
    )
    run = with_query(run, 0, result)
    html = render_html_report(run, compare(run, None, 0.05), [], title="<title>&")
    assert "<script>" not in html and "<i>" not in html and "<b>" not in html
    assert "why &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; $math$?" in html
    assert "id&quot;&gt;&lt;b&gt;" in html
    assert "docs/&lt;a&gt;.md" in html and "x&amp;y.md" in html
    assert "&lt;i&gt;model&lt;/i&gt;" in html and "mod:&lt;fn&gt;" in html
    assert "<h1>&lt;title&gt;&amp;</h1>" in html


#: what a hostile golden file, KB or configuration might put in any field
HOSTILE = (
    "<script>alert(1)</script>\"onload=alert(2) x='</style><img src=x onerror=alert(3)>"
    "javascript:alert(4)"
)
#: every element and attribute the report itself writes
PAGE_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "img"),
    *("table", "colgroup", "col", "tr", "th", "td", "ul", "ol", "li", "code", "span"),
    *("details", "summary", "thead", "wbr", "section"),
}
PAGE_ATTRIBUTES = {
    *("lang", "charset", "name", "content", "class", "value", "style", "alt", "src"),
    "data-label",
}


class PageParser(HTMLParser):
    """Every start tag with its attributes, the text, and the stylesheet's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.style: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        (self.style if self._in_style else self.text).append(data)


def hostile_runs() -> tuple[RunRecord, RunRecord, list[Finding]]:
    """A baseline and a run with the hostile text in every user-supplied field."""
    heading = f"Part {HOSTILE}"

    def one(minutes: int, value: float) -> RunRecord:
        result = QueryResult(
            id=f"id-{HOSTILE}",
            query=f"why {HOSTILE}?",
            expected=(ExpectedEntry(f"docs/{HOSTILE}.md", heading), ExpectedEntry(HOSTILE)),
            top_k=(
                TopHit(rank=1, path=f"docs/{HOSTILE}.md", heading=heading, score=0.9),
                TopHit(rank=2, path=HOSTILE, heading=None, score=0.5),
                TopHit(rank=3, path="javascript:void(0)", heading=HOSTILE, score=0.1),
            ),
            metrics=f.query("x", recall=value, rr=value).metrics,
        )
        return replace(
            scored(minutes, [value, 1.0]),
            fingerprint=f.fingerprint(
                model=f"model {HOSTILE}", reranker=f"rerank {HOSTILE}", retriever=HOSTILE
            ),
            per_query=(result, scored(minutes, [1.0]).per_query[0]),
        )

    findings = [f.finding(f"notes/{HOSTILE}.md", (f"id-{HOSTILE}", 1), (HOSTILE, None))]
    return one(1, 1.0), one(5, 0.0), findings


@needs_matplotlib
def test_hostile_values_in_every_field_stay_text() -> None:
    before, run, findings = hostile_runs()
    run = replace(run, findings=tuple(findings))
    html = render_html_report(run, compare(run, before, 0.05), [before], title=f"t {HOSTILE}")
    page = PageParser()
    page.feed(html)
    page.close()
    assert {tag for tag, _ in page.tags} <= PAGE_TAGS
    assert [tag for tag, _ in page.tags].count("style") == 1
    assert "Per-query change" in html  # the delta chart (ids on its axis) was drawn
    for tag, attrs in page.tags:
        assert {name for name, _ in attrs} <= PAGE_ATTRIBUTES, tag
        for name, value in attrs:
            assert "javascript:" not in (value or "").lower(), (tag, name, value)
            if name == "src":
                assert (value or "").startswith("data:image/png;base64,")
            if name == "style":
                assert re.fullmatch(r"width: [0-9.a-z]+", value or ""), value
    # the stylesheet is the shipped one, never closed early by a value
    assert HOSTILE not in "".join(page.style) and "</style>" not in "".join(page.style)
    # and every field shows the hostile text as text
    text = "".join(page.text)
    for shown in (
        f"t {HOSTILE}",
        f"model {HOSTILE}",
        f"rerank {HOSTILE}",
        f"id-{HOSTILE}",
        f"why {HOSTILE}?",
        f"docs/{HOSTILE}.md#Part {HOSTILE}",
        f"javascript:void(0)#{HOSTILE}",
        f"notes/{HOSTILE}.md",
        f"{HOSTILE} (not in top_k)",
    ):
        assert shown in text, shown


@needs_matplotlib
def test_ids_are_drawn_as_text_not_mathtext() -> None:
    # "$\\frac{$" is malformed mathtext: parsed as such, drawing the axis would raise
    odd = f.query("q-$\\frac{$", recall=0.0, rr=0.0)
    before = with_query(scored(1, [1.0]), 0, replace(odd, metrics=f.query("x").metrics))
    run = with_query(scored(5, [0.0]), 0, odd)
    html = render_html_report(run, compare(run, before, 0.05), [before], title="t")
    assert len(pngs(html)) == TREND_PLOTS + 1


@needs_matplotlib
def test_the_same_run_gives_the_same_bytes() -> None:
    history = [scored(2, [1.0, 0.5])]
    run = scored(5, [0.5, 1.0])
    comparison = compare(run, history[0], 0.05)
    first = render_html_report(run, comparison, history, title="t")
    assert render_html_report(run, comparison, history, title="t") == first


@needs_matplotlib
def test_the_per_query_table_shows_ranks_hits_and_findings() -> None:
    result = QueryResult(
        id="deep",
        query="where is it",
        expected=(ExpectedEntry("b.md", "Part"), ExpectedEntry("z.md")),
        top_k=tuple(
            TopHit(rank=i, path=p, heading=h, score=1.0 / i)
            for i, (p, h) in enumerate(
                [("a.md", None), ("b.md", "part"), *((f"n{j}.md", None) for j in range(10))], 1
            )
        ),
        metrics=f.query("deep").metrics,
    )
    run = with_query(scored(5, [1.0]), 0, result)
    run = replace(run, findings=(f.finding("notes/leak.md", ("deep", 2), ("other", None)),))
    html = render_html_report(run, compare(run, None, 0.05), [], title="t")
    assert '<code>b.md#Part</code> <span class="note">(rank 2)</span>' in html
    assert '<code>z.md</code> <span class="note">(not retrieved)</span>' in html
    assert "<td class='num' data-label=\"first expected rank\">2</td>" in html
    assert "<li value='2' class=\"expected-hit\">✓ <code>b.md#part</code>" in html
    assert "2 more not shown" in html  # 12 hits, top 10 shown
    assert "<code>notes/leak.md</code>: deep (rank 2), other (not in top_k)" in html


def _metric_grid(html: str) -> list[list[str]]:
    """The first query's metrics cell: the grid's rows, then the single metrics' line."""
    cell = html.split('<td class="metrics" data-label="metrics">', 1)[1]
    cell = cell.split('<td data-label="hits">', 1)[0]
    rows = [re.findall(r"<t[hd]>([^<]*)</t[hd]>", row) for row in cell.split("<tr>")[1:]]
    single = re.findall(r'<span class="metric-name">([^<]*)</span> ([^<]*)</span>', cell)
    return [*rows, [part for pair in single for part in pair]]


@needs_matplotlib
def test_the_per_query_table_shows_every_metric_the_run_measured() -> None:
    values = QueryMetrics(
        recall_at_k={1: 0.0, 5: 0.5, 10: 1.0},
        reciprocal_rank=0.25,
        ndcg_at_k={1: 0.11, 5: 0.55, 10: 0.77},
    )
    result = replace(f.query("q"), metrics=values)
    run = with_query(scored(5, [1.0]), 0, result)
    html = render_html_report(run, compare(run, None, 0.05), [], title="t")
    assert _metric_grid(html) == [
        ["", "@1", "@5", "@10"],
        ["recall", "0.00", "0.50", "1.00"],
        ["nDCG", "0.11", "0.55", "0.77"],  # nDCG at every k, not only the largest
        ["RR", "0.25"],
    ]
    # (the optional metrics are not there: they show only when the run measured them)
    # a run that asked for the optional metrics shows them too
    measured = replace(
        values,
        precision_at_k={1: 0.0, 5: 0.2, 10: 0.1},
        hit_rate_at_k={1: 0.0, 5: 1.0, 10: 1.0},
        average_precision=0.31,
        r_precision=0.0,
    )
    fp = f.fingerprint(metrics=("precision", "hit_rate", "map", "r_precision"))
    run = replace(run, fingerprint=fp, per_query=(replace(result, metrics=measured),))
    html = render_html_report(run, compare(run, None, 0.05), [], title="t")
    assert _metric_grid(html)[3:] == [
        ["P", "0.00", "0.20", "0.10"],
        ["success", "0.00", "1.00", "1.00"],
        ["RR", "0.25", "AP", "0.31", "R-prec", "0.00"],
    ]


@needs_matplotlib
def test_the_hits_summary_names_the_top_hits_heading() -> None:
    top = (TopHit(1, "ops/deploy.md", "Roll back", 0.9), TopHit(2, "a.md", None, 0.5))
    with_heading = replace(f.query("h", expected=("a.md",)), top_k=top)
    without = replace(with_heading, id="p", top_k=(TopHit(1, "a.md", None, 0.9),))
    run = replace(scored(5, [1.0, 1.0]), per_query=(with_heading, without))
    html = render_html_report(run, compare(run, None, 0.05), [], title="t")
    assert "2 hits, top: <code>ops/deploy.md#Roll back</code>" in html
    assert "✓ 1 hits, top: <code>a.md</code>" in html


@needs_matplotlib
def test_the_delta_chart_keeps_the_queries_that_moved_most() -> None:
    n = MAX_DELTA_ROWS + 5
    before = scored(1, [1.0] * n)
    run = scored(5, [1.0] * (n - 1) + [0.0])
    html = render_html_report(run, compare(run, before, 0.05), [before], title="t")
    assert f"Showing the {MAX_DELTA_ROWS} of {n} queries that moved most." in html


@needs_matplotlib
def test_a_subset_run_trends_against_the_same_queries_and_counts_itself_once() -> None:
    stored = scored(1, [1.0, 0.0, 0.0])
    subset_queries = stored.per_query[:1]
    run = replace(stored, timestamp=f.at(5), per_query=subset_queries)
    run = replace(run, aggregate=aggregate([q.metrics for q in subset_queries]))
    history = [stored, run]  # the run itself is in the history: not plotted twice
    html = render_html_report(run, compare(run, None, 0.05), history, title="t")
    assert "2 run(s) with this fingerprint" in html
    assert "restricted to the queries of this subset run" in html


@needs_matplotlib
def test_write_html_report_creates_the_directory(tmp_path: Path) -> None:
    run = scored(5, [1.0])
    target = tmp_path / "out" / "deeper" / "report.html"
    write_html_report(target, run, compare(run, None, 0.05), [], title="t")
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# --------------------------------------------------------------------------- session


def golden_for(run: RunRecord) -> GoldenSet:
    return GoldenSet(
        path="golden.yml",
        hash=f.GOLDEN_HASH,
        queries=tuple(
            GoldenQuery(
                id=q.id, query=q.query, expected=q.expected, tags=(), line=1, explicit_id=True
            )
            for q in run.per_query
        ),
    )


def session_ctx(tmp_path: Path, run: RunRecord, **options: Any) -> Evaluation:
    """An evaluation of ``run``'s queries begun as a door would (history read, baseline
    picked); the HTML option is set after planning, so a missing extra reaches the end."""
    html = options.pop("html", None)
    plan = plan_evaluation(tmp_path, RunOptions(**options), golden=golden_for(run))
    plan = replace(plan, options=replace(plan.options, html=html))
    stored = read_stored_runs(plan)
    return Evaluation(
        plan=plan,
        fingerprint=run.fingerprint,
        stored=stored,
        choice=pick_baseline_for(plan, stored, run.fingerprint),
        searcher=StaticSearcher(corpus=run.corpus),
    )


@needs_matplotlib
def test_finish_evaluation_writes_the_html_with_the_history_trend(tmp_path: Path) -> None:
    run = scored(0, [1.0, 0.0])
    target = tmp_path / "report.html"
    first = finish_evaluation(session_ctx(tmp_path, run, html=target), run.per_query, record=True)
    assert first.error is None and first.exit_code == 0
    assert len(pngs(target.read_text(encoding="utf-8"))) == TREND_PLOTS

    second = finish_evaluation(session_ctx(tmp_path, run, html=target), run.per_query, record=True)
    assert second.error is None
    html = target.read_text(encoding="utf-8")
    assert len(pngs(html)) == TREND_PLOTS + 1
    assert "2 run(s) with this fingerprint" in html
    assert "<title>groove eval report — " in html


def test_an_unwritable_html_report_is_reported_like_the_json_one(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = scored(0, [1.0])
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    outcome = finish_evaluation(
        session_ctx(tmp_path, run, html=blocker / "report.html"), run.per_query, record=True
    )
    assert outcome.exit_code == 1
    assert outcome.error is not None
    assert outcome.error.startswith(f"could not write the HTML report {blocker / 'report.html'}")
    assert not outcome.recorded  # a run whose report failed is not recorded


# --------------------------------------------------------------------------- missing extra


def _refused_without(extra: str, tmp_path: Path) -> RunRecord:
    """Without ``extra``, --html is refused up front and writing the report fails with
    the install advice; the run it tried to write back."""
    with pytest.raises(GrooveError) as raised:
        check_html_available("--html")
    assert raised.value.message == (
        f"--html needs {extra}, which is an optional extra: install it with "
        'pip install "pytest-groove[plots]" (or drop --html)'
    )
    run = scored(0, [1.0])
    with pytest.raises(GrooveError, match=re.escape(PLOTS_EXTRA)):
        write_html_report(tmp_path / "r.html", run, compare(run, None, 0.05), [], title="t")
    return run


def test_missing_jinja2_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_groove.evaluation.reports import html_report as report_html

    monkeypatch.setitem(sys.modules, "jinja2", None)
    monkeypatch.setattr(report_html, "_template", report_html._template.__wrapped__)
    _refused_without("Jinja2", tmp_path)
    assert not (tmp_path / "r.html").exists()


def test_missing_matplotlib_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    run = _refused_without("matplotlib", tmp_path)
    # at session end it is an error in the outcome, not an exception
    outcome = finish_evaluation(
        session_ctx(tmp_path, run, html=tmp_path / "r.html"), run.per_query, record=True
    )
    assert outcome.exit_code == 1 and outcome.error is not None
    assert PLOTS_EXTRA in outcome.error
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- groove eval


@pytest.fixture
def example_kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    copy_example_kb(kb)
    return kb


@needs_matplotlib
def test_groove_eval_writes_the_html_report(
    example_kb: Path, tmp_path: Path, groove: Groove
) -> None:
    target = tmp_path / "out.html"
    done = groove.process("eval", "--kb-path", example_kb, "--model", "hash", "--html", target)
    assert done.returncode == 0, done.stderr
    assert "groove eval — " in done.stdout  # the text report still goes to stdout
    html = target.read_text(encoding="utf-8")
    assert len(pngs(html)) == TREND_PLOTS
    assert "<h1>groove eval report</h1>" in html
    assert "ja-postmortem-deadline" in html
    assert "Traceback" not in done.stderr


def test_groove_eval_without_matplotlib_stops_before_indexing(
    example_kb: Path, tmp_path: Path, groove: Groove
) -> None:
    hide = tmp_path / "hide-matplotlib"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['matplotlib'] = None\n", encoding="utf-8"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hide), os.environ.get("PYTHONPATH", "")]),
    }
    done = groove.process(
        "eval", "--kb-path", example_kb, "--model", "hash", "--html", tmp_path / "o.html", env=env
    )
    assert done.returncode == 1
    assert done.stderr == (
        "Error: --html needs matplotlib, which is an optional extra: install it with "
        'pip install "pytest-groove[plots]" (or drop --html)\n'
    )
    assert done.stdout == ""
    assert not (example_kb / ".groove").exists()  # nothing indexed, nothing searched
    assert not (example_kb / ".groove-eval-history.json").exists()


# --------------------------------------------------------------------------- pytest plugin


@pytest.fixture
def plugin_kb(pytester: pytest.Pytester) -> Path:
    kb = pytester.path / "kb"
    copy_example_kb(kb)
    return kb


@needs_matplotlib
def test_the_plugin_writes_the_html_report(pytester: pytest.Pytester, plugin_kb: Path) -> None:
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-model", "hash", "--groove-html", "r.html"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ja-postmortem-deadline misses
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert len(pngs(html)) == TREND_PLOTS
    assert "<h1>groove report</h1>" in html
    assert 'class="miss"' in html


@needs_matplotlib
def test_the_ini_key_works_and_creates_the_directory(
    pytester: pytest.Pytester, plugin_kb: Path
) -> None:
    pytester.makeini("[pytest]\ngroove_html = reports/quality.html\n")
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-model", "hash", "--groove-no-history"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stderr.str()
    assert (pytester.path / "reports" / "quality.html").is_file()


def test_the_plugin_without_matplotlib_is_a_usage_error(
    pytester: pytest.Pytester, plugin_kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-model", "hash", "--groove-html", "r.html"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --groove-html needs matplotlib, which is an optional extra: install it "
            'with pip install "pytest-groove[plots]" (or drop --groove-html)'
        ]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (plugin_kb / ".groove").exists()  # no index built, no query searched


# --------------------------------------------------------------------------- layout and fonts

JAPANESE_IDS = ["戻し方", "カナリア-停止", "費用の見張り"]


def japanese_runs() -> tuple[RunRecord, RunRecord]:
    """A baseline and a run whose query ids, text and headings are Japanese."""

    def one(minutes: int, values: list[float]) -> RunRecord:
        per_query = [
            replace(
                f.query(
                    qid,
                    recall=v,
                    rr=v,
                    text=f"{qid}について本番に出した変更を前のバージョンへ戻したい",
                    expected=("ops/deploy-rollback.ja.md",),
                    top=tuple(f"ops/document-number-{j}.ja.md" for j in range(10)),
                ),
            )
            for qid, v in zip(JAPANESE_IDS, values, strict=True)
        ]
        record = f.run(minutes=minutes, per_query=per_query, corpus=f.corpus())
        return replace(record, aggregate=aggregate([q.metrics for q in per_query]))

    return one(1, [1.0, 1.0, 0.0]), one(5, [1.0, 0.0, 1.0])


@needs_matplotlib
def test_plots_draw_japanese_with_the_cjk_font_found_on_the_system() -> None:
    import numpy as np
    from matplotlib import font_manager, ft2font

    from pytest_groove.evaluation.reports.html_plots import Plotter, cjk_font_family

    family = cjk_font_family()
    if family is None:
        pytest.skip("no CJK-capable font installed (Debian: fonts-noto-cjk)")
    path = font_manager.findfont(
        font_manager.FontProperties(family=family), fallback_to_default=False
    )
    assert all(ord(ch) in ft2font.FT2Font(path).get_charmap() for ch in "戻し方カナリア費用")

    def pixels(plotter: Plotter, **font: str) -> Any:
        fig = plotter.new(1.0, 1.0)
        fig.text(0.1, 0.3, "戻し方", fontsize=20, **font)
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()

    with Plotter() as plotter:
        drawn = pixels(plotter)  # the report's own font settings
        with_cjk = pixels(plotter, family=family)
        without = pixels(plotter, family="DejaVu Sans")  # boxes: DejaVu has no kana
    assert np.array_equal(drawn, with_cjk)
    assert not np.array_equal(drawn, without)


@needs_matplotlib
def test_without_a_cjk_font_the_report_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_groove.evaluation.reports import html_plots

    before, run = japanese_runs()
    monkeypatch.setattr(html_plots, "cjk_font_family", lambda: None)
    html = render_html_report(run, compare(run, before, 0.05), [before], title="t")
    assert "fonts-noto-cjk" in html
    assert len(pngs(html)) == TREND_PLOTS + 1  # the plots are still drawn
    # Latin ids need no such note
    plain_before, plain = scored(1, [1.0, 0.0]), scored(5, [0.0, 1.0])
    html = render_html_report(plain, compare(plain, plain_before, 0.05), [], title="t")
    assert "fonts-noto-cjk" not in html


#: the height of a first screen (a laptop's window, a phone's), in pixels
FIRST_SCREEN = 700
#: a run whose regression gate failed
FAILED_GATE = ReportGate(applied=True, failures=("recall@10", "MRR"))


def chromium() -> str | None:
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    return next((found for name in names if (found := shutil.which(name))), None)


#: where the verdict is: the bottom of its first line, and the width a failing query's
#: reason has (its list item), in pixels
_VERDICT_AT = """
function verdictAt() {
  const line = document.querySelector("section.verdict .verdict-line").getBoundingClientRect();
  const reason = document.querySelector("section.verdict ul.failing li");
  const width = reason ? reason.getBoundingClientRect().width : 0;
  return Math.round(line.bottom) + "x" + Math.round(width);
}
"""

#: appended to a copy of the report (the report itself runs no script): it writes
#: the page's width, its tallest per-query row and where the verdict is
#: (:data:`_VERDICT_AT`) where --dump-dom prints them
_MEASURE = (
    """<script>"""
    + _VERDICT_AT
    + """
window.addEventListener("load", () => {
  const rows = [...document.querySelectorAll("table.queries tr")].slice(1);
  const tallest = Math.max(...rows.map((r) => r.getBoundingClientRect().height));
  document.body.dataset.measure =
    document.documentElement.scrollWidth + "x" + Math.round(tallest) + "x" + verdictAt();
});
</script>"""
)


def _report_with_a_long_id(tmp_path: Path) -> Path:
    """``report.html`` in ``tmp_path``: the Japanese runs, failed, the first query's id
    made long enough to push a narrow layout wide."""
    before, run = japanese_runs()
    long_id = "a-very-long-query-identifier-" * 3
    run = with_query(run, 0, replace(run.per_query[0], id=long_id))
    page = tmp_path / "report.html"
    write_html_report(
        page, run, compare(run, before, 0.05), [before], title="groove report", gate=FAILED_GATE
    )
    return page


def browse(html_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = chromium()
    assert browser is not None
    # a profile of its own: two browsers of two xdist workers must not share one
    profile = html_file.parent / f"chromium-profile-{html_file.stem}"
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            # nothing to fetch: the machine may have no network at all
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--window-size=1280,2400",
            *args,
            html_file.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow  # the default run renders the phone layout in a real browser
@needs_matplotlib
@pytest.mark.skipif(chromium() is None, reason="no headless Chromium installed (Debian: chromium)")
def test_the_report_fits_a_1280_pixel_window_in_chromium(tmp_path: Path) -> None:
    page = _report_with_a_long_id(tmp_path)
    shot = tmp_path / "report.png"
    done = browse(page, f"--screenshot={shot}")
    assert shot.is_file(), done.stderr
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text(encoding="utf-8") + _MEASURE, encoding="utf-8")
    dom = browse(measured, "--dump-dom").stdout
    found = re.search(r'data-measure="(\d+)x(\d+)x(\d+)x(\d+)"', dom)
    assert found is not None, dom[-500:]
    width, tallest_row, verdict_bottom, reason_width = (int(found.group(i)) for i in range(1, 5))
    assert width <= 1280  # nothing scrolls sideways
    assert tallest_row <= 160  # hits are folded: a row is a few lines, not a page
    assert verdict_bottom <= FIRST_SCREEN  # the verdict is on the first screen
    assert reason_width >= 900  # a failing query's reason reads across the page


#: Chromium's headless window is never narrower than 500 pixels, so a phone's width
#: is given to the report by an iframe; the report's own copy measures itself there
_PHONE_MEASURE = (
    """<script>"""
    + _VERDICT_AT
    + """
window.addEventListener("load", async () => {
  // measured once fonts are in and the layout has had time to settle
  await document.fonts.ready;
  await new Promise((done) => setTimeout(done, 300));
  const rows = [...document.querySelectorAll("table.queries tr")].slice(1);
  const tallest = Math.max(...rows.map((r) => r.getBoundingClientRect().height));
  parent.document.body.dataset.measure = innerWidth + "x" +
    document.documentElement.scrollWidth + "x" + Math.round(tallest) + "x" + verdictAt();
});
</script>"""
)


def phone_frame(report: str, width: int) -> str:
    from html import escape

    return (
        '<!DOCTYPE html><html><body style="margin:0"><iframe style="border:0" '
        f'width="{width}" height="2400" srcdoc="{escape(report, quote=True)}"></iframe>'
        "</body></html>"
    )


@needs_matplotlib
@pytest.mark.skipif(chromium() is None, reason="no headless Chromium installed (Debian: chromium)")
def test_the_report_fits_a_390_pixel_phone_in_chromium(tmp_path: Path) -> None:
    page = _report_with_a_long_id(tmp_path)
    report = page.read_text(encoding="utf-8")
    framed = tmp_path / "phone.html"
    framed.write_text(phone_frame(report, 390), encoding="utf-8")
    shot = tmp_path / "phone.png"
    done = browse(framed, "--window-size=500,2400", f"--screenshot={shot}")
    assert shot.is_file(), done.stderr
    measured = tmp_path / "measured.html"
    measured.write_text(phone_frame(report + _PHONE_MEASURE, 390), encoding="utf-8")
    tallest_card = None
    # on a loaded machine the frame can be measured before its layout settles (a card
    # then reads 900 pixels tall once in a while): a settled layout is never taller, so
    # the smallest of up to three readings is the layout's own
    for _attempt in range(3):
        # virtual time lets the frames above pass before the DOM is dumped
        dom = browse(
            measured, "--window-size=500,2400", "--virtual-time-budget=5000", "--dump-dom"
        ).stdout
        found = re.search(r'<body[^>]*data-measure="(\d+)x(\d+)x(\d+)x(\d+)x(\d+)"', dom)
        assert found is not None, dom[-500:]
        viewport, width, tallest, verdict_bottom, reason_width = (
            int(found.group(i)) for i in range(1, 6)
        )
        assert viewport == 390  # the frame really is a phone's width
        assert width <= viewport  # nothing scrolls sideways
        assert verdict_bottom <= FIRST_SCREEN  # the verdict is on a phone's first screen
        assert reason_width >= 300  # the reason has the card's width, not a column's
        tallest_card = tallest if tallest_card is None else min(tallest_card, tallest)
        if tallest_card <= 400:
            break
    # a query is a card of a few lines, not 700 pixels of air
    assert tallest_card is not None and tallest_card <= 400, tallest_card


#: a second query without `id:` opening with the same 32 characters as the example's
#: `what to do after receiving status 429`
STATUS_401 = """
  - query: "what to do after receiving status 401 from the API"
    expected:
      - path: "api/authentication.md"
"""


@needs_matplotlib
def test_queries_sharing_a_derived_id_get_their_node_ids_in_groove_eval_reports(
    tmp_path: Path,
) -> None:
    """`groove eval`: the text report, the gate line and the HTML name the two queries
    as pytest names their items; the JSON keeps the shared `id` and adds `name`."""
    from pytest_groove.evaluation.golden.file import load_golden, node_ids
    from pytest_groove.evaluation.history.file import load_history
    from tests.helpers.cli_invoke import invoke

    kb = tmp_path / "kb"
    copy_example_kb(kb)
    golden = kb / ".groove-eval.yml"
    golden.write_text(golden.read_text(encoding="utf-8") + STATUS_401, encoding="utf-8")
    queries = load_golden(golden, kb).queries
    names = dict(zip((q.query for q in queries), node_ids(queries), strict=True))
    n429 = names["what to do after receiving status 429"]
    n401 = names["what to do after receiving status 401 from the API"]
    shared = "what to do after receiving statu"
    first = invoke("eval", "--kb-path", kb, "--model", "hash")
    assert first.returncode == 0, first.stderr
    assert f"the queries at lines 47 and 95 share the id `{shared}`" in first.stderr
    assert f"pytest node ids ({n429}, {n401}); give each an `id:`" in first.stderr
    (kb / "api" / "errors.md").unlink()  # the 429 query's answer is deleted
    page = tmp_path / "r.html"
    done = invoke(
        "eval", "--kb-path", kb, "--model", "hash", "--fail-on-regression", "--html", page
    )
    assert done.returncode == 1, done.stderr
    assert f"answer of {n429} removed (api/errors.md)" in done.stderr
    assert f"  ✗ {n429} recall@10: 1.00 → 0.00" in done.stdout
    assert f"  {shared} " not in done.stdout
    html = page.read_text(encoding="utf-8")
    assert f"<code>{n429}</code>" in html and f"<code>{n401}</code>" in html
    (stored, _) = load_history(kb / ".groove-eval-history.json")
    assert stored.gate is not None
    assert f"answer of {n429} removed (api/errors.md)" in stored.gate.failed


# --------------------------------------------------------------------------- HTML fingerprint


def test_html_fingerprint_of_a_retriever_run_shows_no_search_pipeline_keys(
    tmp_path: Path, groove: Groove
) -> None:
    kb = write_invoices_kb(tmp_path / "kb")
    pytest.importorskip("matplotlib")
    (tmp_path / "team_search.py").write_text(
        "def search(query, limit):\n"
        "    return [{'path': 'ops/deploy.md', 'heading': 'Canary', 'score': 1.0}]\n",
        encoding="utf-8",
    )
    own = tmp_path / "own.html"
    done = groove.process(
        "eval", "--kb-path", kb, "--retriever", "team_search:search", "--no-history",
        "--html", own, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = own.read_text(encoding="utf-8")
    assert "team_search:search" in html and "metric_version" in html
    assert "fts_query_version" not in html
    engine = tmp_path / "engine.html"
    done = groove.process(
        "eval", "--kb-path", kb, "--model", "hash", "--no-history", "--html", engine
    )
    assert done.returncode == 0, done.stderr
    assert "fts_query_version" in engine.read_text(encoding="utf-8")


@needs_matplotlib
def test_the_page_leads_with_the_verdict_before_the_metadata(tmp_path: Path) -> None:
    from pytest_groove.evaluation.gate.verdict import comparison_verdicts
    from pytest_groove.evaluation.reports.formats import ReportInputs
    from pytest_groove.evaluation.reports.html_report import write_report

    before, run = japanese_runs()
    comparison = compare(run, before, 0.05)
    inputs = ReportInputs(
        run, comparison, [before], comparison_verdicts(comparison), (), "groove eval",
        gate=FAILED_GATE,
    )  # fmt: skip
    page = tmp_path / "r.html"
    write_report(page, inputs)
    html = page.read_text(encoding="utf-8")
    verdict = html.index('<section class="verdict verdict-failed">')
    assert verdict < html.index('<table class="meta">') < html.index("<h2>Aggregate</h2>")
    line = re.search(r'<p class="verdict-line">([^<]*)</p>', html)
    assert line is not None
    assert line.group(1).startswith("groove eval: failed — the gate failed on recall@10, MRR")
    assert f"missed: {JAPANESE_IDS[1]}" in line.group(1)
    assert '<span class="reason">recall@10: 1.00 → 0.00</span>' in html
    known = replace(inputs, gate=ReportGate(applied=True, known_misses=frozenset({1})))
    write_report(page, known)
    html = page.read_text(encoding="utf-8")
    assert '<section class="verdict verdict-passed">' in html
    assert f"groove eval: passed — the gate held; known misses: {JAPANESE_IDS[1]}" in html
    assert '<span class="verdict-known-miss">known miss</span>' in html


@pytest.mark.parametrize("document_first", [True, False])
def test_hits_out_of_score_order_say_they_are_grouped_by_document(document_first: bool) -> None:
    base = scored(5, [1.0, 1.0])
    reordered = replace(
        base.per_query[0],
        top_k=(
            TopHit(rank=1, path="a.md", heading=None, score=0.0285),
            TopHit(rank=2, path="a.md", heading="Two", score=0.0201),
            TopHit(rank=3, path="b.md", heading=None, score=0.0289),
        ),
    )
    run = with_query(base, 0, reordered)
    run = replace(run, fingerprint=replace(run.fingerprint, document_first=document_first))
    html = render_html_report(run, compare(run, None, 0.05), [], title="grouped")
    assert (GROUPED_BY_DOCUMENT in html) is document_first
