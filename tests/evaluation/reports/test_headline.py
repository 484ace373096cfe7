"""The verdict the Markdown and HTML reports lead with (``evaluation/reports/headline.py``):
which door fails on what, and how the first line names queries."""

from __future__ import annotations

from dataclasses import replace

from pytest_groove.evaluation.reports.headline import ReportGate, headline
from tests.evaluation.reports.test_markdown_report import judged_inputs, whole
from tests.helpers.eval_factories import query


def test_a_miss_fails_pytest_but_not_groove_eval() -> None:
    now = whole([query("fine"), query("gone", recall=0.0, rr=0.0, top=("b.md",))])
    cli = headline(judged_inputs(now, now, applied=True))
    assert (cli.status, cli.missed) == ("passed", ("gone",))
    assert cli.first_line() == "groove eval: passed — the gate held; missed: gone"
    pytest_door = headline(replace(judged_inputs(now, now, applied=True), door="pytest"))
    assert pytest_door.status == "failed"
    assert pytest_door.failures == ("1 golden query missed",)


def test_a_known_miss_fails_neither_door() -> None:
    now = whole([query("fine"), query("gone", recall=0.0, rr=0.0, top=("b.md",))])
    inputs = judged_inputs(now, now, applied=True, known_misses=frozenset({1}))
    said = headline(replace(inputs, door="pytest"))
    assert (said.status, said.missed, said.known_misses) == ("passed", (), ("gone",))


def test_what_is_not_gated_says_why() -> None:
    now = whole([query("fine")])
    assert headline(judged_inputs(now, None, applied=True)).not_gated.startswith("nothing to")
    assert "no gate was asked for (--fail-on-regression, --fail-under)" in (
        headline(judged_inputs(now, now)).first_line()
    )
    accepting = headline(judged_inputs(now, now, accepting=True))
    assert accepting.not_gated.startswith("accepted as the baseline")
    subset = headline(judged_inputs(now, now, applied=True, subset=True))
    assert (
        subset.first_line() == "groove eval: not gated — a subset run: not recorded and not gated"
    )


def test_the_first_line_names_a_few_queries_and_counts_the_rest() -> None:
    queries = [query(f"q{i}", recall=0.0, rr=0.0, top=("b.md",)) for i in range(8)]
    now = whole(queries)
    gate = {"applied": True, "failures": ("recall@1", "recall@5", "recall@10", "MRR", "nDCG@10")}
    line = headline(judged_inputs(now, now, **gate)).first_line(lambda name: f"<{name}>")
    assert line == (
        "groove eval: failed — the gate failed on <recall@1>, <recall@5>, <recall@10>, <MRR> "
        "and 1 more; missed: <q0>, <q1>, <q2>, <q3>, <q4> and 3 more"
    )
    assert ReportGate().failures == ()
