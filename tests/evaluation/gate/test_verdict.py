"""The per-query verdict: one computation, and every output agreeing with it.

A property test generates before/after rankings and checks that the pytest item's
rule, the text report, the JSON report and the HTML report give every query the same
verdict; unit tests pin what moved, what displaced the answer and the removed /
renamed answers."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.gate.compare import compare, query_regressed
from pytest_groove.evaluation.gate.verdict import comparison_verdicts, query_verdict, run_verdicts
from pytest_groove.evaluation.reports.json_report import build_json_report, dumps_json_report
from pytest_groove.evaluation.reports.text_report import render_text
from pytest_groove.evaluation.runs.corpus_files import CorpusDelta, with_document_digests
from pytest_groove.evaluation.runs.record import RunRecord, build_run, evaluate_query
from pytest_groove.scoring.metrics import is_miss
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.scoring.thresholds import Thresholds
from pytest_groove.search.hits import SearchHit
from tests.helpers.eval_factories import corpus, fingerprint

K_VALUES = (1, 5, 10)
POOL = tuple(f"doc{i}.md" for i in range(14))
T = Thresholds(0.05)


def golden(i: int, expected: str) -> GoldenQuery:
    return GoldenQuery(id=f"q{i}", query=f"question {i}", expected=(ExpectedEntry(expected),))


def ranked(paths: list[str]) -> list[SearchHit]:
    return [SearchHit(rank, path, None, 1.0 / rank) for rank, path in enumerate(paths, 1)]


def make_run(
    queries: list[GoldenQuery], rankings: list[list[str]], minutes: int, files: dict[str, str]
) -> RunRecord:
    results = [
        evaluate_query(q, ranked(r), K_VALUES) for q, r in zip(queries, rankings, strict=True)
    ]
    run = build_run(fingerprint(), results, with_document_digests(corpus(), files))
    return replace(run, timestamp=run.timestamp.replace(year=2026) + timedelta(minutes=minutes))


rankings = st.lists(st.sampled_from(POOL), max_size=12, unique=True)


@st.composite
def before_after(draw: st.DrawFn) -> tuple[RunRecord, RunRecord]:
    count = draw(st.integers(1, 5))
    queries = [golden(i, draw(st.sampled_from(POOL))) for i in range(count)]
    before = draw(st.lists(rankings, min_size=count, max_size=count))
    after = draw(st.lists(rankings, min_size=count, max_size=count))
    files_before = {path: f"{i:012x}" for i, path in enumerate(POOL)}
    edited = draw(st.sets(st.sampled_from(POOL)))
    files_after = {p: ("f" * 12 if p in edited else d) for p, d in files_before.items()}
    return make_run(queries, before, 0, files_before), make_run(queries, after, 1, files_after)


def text_verdicts(text: str, ids: list[str]) -> list[str]:
    marks = {qid: mark for mark, qid in re.findall(r"^  ([✗↓]) (\S+) ", text, flags=re.M)}
    return [{"✗": "missed", "↓": "regressed"}.get(marks.get(qid, ""), "pass") for qid in ids]


def html_verdicts(html: str) -> list[str]:
    return re.findall(r'data-label="verdict" class="verdict-(\w+)"', html)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before_after())
def test_the_item_the_text_and_the_json_agree_on_every_verdict(
    runs: tuple[RunRecord, RunRecord],
) -> None:
    before, after = runs
    comparison = compare(after, before, T)
    verdicts = comparison_verdicts(comparison)
    ids = [q.id for q in after.per_query]
    expected = [v.verdict for v in verdicts.queries]
    # the pytest item: fails on a miss, and on its own metrics' regression (the gate)
    for result, previous, verdict in zip(after.per_query, before.per_query, expected, strict=True):
        fails = is_miss(result.metrics, K_VALUES) or bool(query_regressed(result, previous, T))
        assert fails == (verdict != "pass")
    assert text_verdicts(render_text(after, comparison), ids) == expected
    report = json.loads(dumps_json_report(build_json_report(after, comparison, recorded=True)))
    assert [q["verdict"] for q in report["per_query"]] == expected
    assert [m["id"] for m in report["moved"]] == [v.id for v in verdicts.moved]


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before_after())
def test_the_html_report_agrees_too(runs: tuple[RunRecord, RunRecord]) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    from pytest_groove.evaluation.reports.html_report import render_html_report

    before, after = runs
    comparison = compare(after, before, T)
    html = render_html_report(after, comparison, [before], title="t")
    assert html_verdicts(html) == [v.verdict for v in comparison_verdicts(comparison).queries]


def one(expected: str, before: list[str], after: list[str], **files: dict[str, str]) -> object:
    q = golden(0, expected)
    now = make_run([q], [after], 1, files.get("now", {}))
    then = make_run([q], [before], 0, files.get("then", {}))
    return run_verdicts(now, then, T).queries[0]


def test_displaced_by_lists_only_the_documents_that_newly_outrank_the_answer() -> None:
    verdict = one(
        "a.md",
        before=["x.md", "a.md", "b.md"],
        after=["x.md", "new.md", "b.md", "a.md"],
        now={"x.md": "1", "new.md": "2", "b.md": "3", "a.md": "4"},
        then={"x.md": "1", "b.md": "9", "a.md": "4"},
    )
    assert verdict.verdict == "regressed"  # type: ignore[attr-defined]
    assert (verdict.baseline_first_rank, verdict.first_rank) == (2, 4)  # type: ignore[attr-defined]
    assert [(d.path, d.change) for d in verdict.displaced_by] == [  # type: ignore[attr-defined]
        ("new.md", "added"),
        ("b.md", "changed"),
    ]


def test_a_removed_answer_and_a_renamed_one() -> None:
    delta = CorpusDelta(now={"b.md": "1", "cache.md": "7"}, before={"a.md": "7", "b.md": "1"})
    assert delta.removed("a.md") and delta.renamed_to("a.md") == "cache.md"
    assert not delta.removed("b.md") and delta.change("b.md") == "unchanged"
    gone = CorpusDelta(now={"b.md": "1"}, before={"a.md": "7", "b.md": "1"})
    assert gone.renamed_to("a.md") is None
    q = golden(0, "a.md")
    now = evaluate_query(q, ranked(["b.md"]), K_VALUES)
    then = evaluate_query(q, ranked(["a.md"]), K_VALUES)
    verdict = query_verdict(now, then, T, K_VALUES, delta)
    assert verdict.verdict == "missed" and verdict.removed == ("a.md",)
    assert verdict.renamed == (("a.md", "cache.md"),)
    assert verdict.displaced_by == ()  # nothing pushed a deleted answer down


def test_moved_is_worst_first_and_without_a_baseline_nothing_moved() -> None:
    qs = [golden(0, "a.md"), golden(1, "a.md"), golden(2, "a.md")]
    then = make_run(qs, [["a.md"], ["a.md"], ["x.md", "a.md"]], 0, {})
    now = make_run(qs, [["x.md", "a.md"], ["x.md"], ["a.md"]], 1, {})
    moved = run_verdicts(now, then, T).moved
    assert [(v.id, v.baseline_first_rank, v.first_rank) for v in moved] == [
        ("q1", 1, None),
        ("q0", 1, 2),
        ("q2", 2, 1),
    ]
    assert run_verdicts(now, None, T).moved == ()


def test_a_broken_constraint_is_violated_and_new_only_when_the_baseline_kept_it() -> None:
    query = replace(golden(0, "doc1.md"), not_expected=(ExpectedEntry("doc9.md"),), within=1)
    before = evaluate_query(query, ranked(["doc2.md", "doc1.md", "doc9.md"]), K_VALUES)
    after = evaluate_query(query, ranked(["doc9.md", "doc1.md"]), K_VALUES)
    verdict = query_verdict(after, before, T, K_VALUES)
    assert verdict.verdict == "violated" and verdict.failed
    assert [v.text(10) for v in verdict.violations] == [
        "not expected `doc9.md` at rank 1 in the top 10",
        "first expected hit at rank 2, within 1",
    ]
    # the baseline broke both too (doc9 at rank 3, the answer at rank 2): none is new
    assert verdict.new_violations == ()
    fresh = query_verdict(after, evaluate_query(query, ranked(["doc1.md"]), K_VALUES), T, K_VALUES)
    assert len(fresh.new_violations) == 2
    assert query_verdict(after, None, T, K_VALUES).new_violations == verdict.violations
