"""``--groove-trec-run`` / ``--groove-trec-qrels`` under pytest (one process and xdist):
the files agree with the run's JSON report when trec_eval's own code reads them."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from tests.helpers.kb_files import write_notes

pytest_plugins = ["pytester"]

GOLDEN = """\
queries:
  - id: ship days
    query: "which days do we ship"
    expected:
      - path: "ops/deploys.md"
  - id: flaky
    query: "a check that fails then passes"
    expected:
      - path: "practices/testing.md"
        heading: "Flaky tests"
      - path: "practices/review.md"
  - id: nothing
    query: "a query nothing answers"
    expected:
      - path: "ops/oncall.md"
"""

CONFTEST = """\
ANSWERS = {
    "which days do we ship": [("misc/a.md", None), ("ops/deploys.md", "Intro"),
                              ("ops/deploys.md", "Schedule")],
    "a check that fails then passes": [("practices/testing.md", "Intro"),
                                       ("practices/review.md", None),
                                       ("practices/testing.md", "flaky tests ")],
}


def retrieve(query, limit):
    return [
        {"path": path, "heading": heading, "score": 0.1 * rank}  # scores rise: out of order
        for rank, (path, heading) in enumerate(ANSWERS.get(query, []), start=1)
    ][:limit]


retrieve.groove_name = "fake"


def pytest_groove_retriever(config):
    return retrieve
"""


NOTES = {
    "misc/a.md": "# A\n\nUnrelated notes about the office kitchen.\n",
    "ops/deploys.md": "# Deploys\n\n## Intro\n\nHow releases go out, step by step.\n\n"
    "## Schedule\n\nWe ship on Tuesdays and Thursdays only.\n",
    "practices/testing.md": "# Testing\n\n## Intro\n\nWhat every change is checked with.\n\n"
    "## Flaky tests\n\nA check that fails then passes is quarantined.\n",
    "practices/review.md": "# Review\n\nEvery change is read by a second person.\n",
    "ops/oncall.md": "# On call\n\nThe pager goes to the engineer of the week.\n",
}


@pytest.mark.parametrize(
    "extra",
    [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)],  # xdist: in the slow run
    ids=["one-process", "xdist"],
)
def test_the_plugin_writes_files_trec_eval_scores_like_us(
    pytester: pytest.Pytester, extra: list[str]
) -> None:
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    # the KB on disk is what the golden set is judged against, whoever answers
    write_notes(kb, NOTES)
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest(
        "--groove-kb", "kb", "--groove-k", "1,3", "--groove-no-history",
        "--groove-json", "report.json",
        "--groove-trec-run", "run.trec", "--groove-trec-qrels", "qrels.trec", *extra,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the "nothing" query misses
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    with open(pytester.path / "qrels.trec", encoding="utf-8") as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(pytester.path / "run.trec", encoding="utf-8") as handle:
        run = pytrec_eval.parse_run(handle)
    assert sorted(qrels) == ["flaky", "nothing", "ship%20days"]
    assert sorted(run) == ["flaky", "ship%20days"]  # no hits, no lines
    found = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "ndcg_cut.1,3"}).evaluate(run)

    def mean(name: str) -> float:
        return sum(found.get(q, {}).get(name, 0.0) for q in qrels) / len(qrels)

    aggregate = report["aggregate"]
    assert mean("recip_rank") == pytest.approx(aggregate["mrr"], abs=1e-12)
    assert mean("ndcg_cut_3") == pytest.approx(aggregate["ndcg_at_k"]["3"], abs=1e-12)
    assert 0.0 < aggregate["ndcg_at_k"]["3"] < 1.0
    lines = (pytester.path / "run.trec").read_text(encoding="utf-8").splitlines()
    assert lines[3:] == [
        "flaky Q0 practices/testing.md#intro 1 3 groove",
        "flaky Q0 practices/review.md 2 2 groove",
        "flaky Q0 practices/testing.md#flaky%20tests 3 1 groove",
    ]


#: two queries whose first 32 characters agree: the same derived id
TWINS = """\
queries:
  - query: "which days of the week do we ship releases"
    expected:
      - path: "ops/deploys.md"
  - query: "which days of the week do we ship hotfixes"
    expected:
      - path: "practices/review.md"
"""


def test_a_subset_runs_files_name_each_query_as_the_whole_run_does(
    pytester: pytest.Pytester,
) -> None:
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(TWINS, encoding="utf-8")
    write_notes(kb, NOTES)
    args = ("--groove-kb", "kb", "--groove-model", "hash", "--groove-no-history")
    whole = pytester.runpytest(*args, "--groove-trec-qrels", "whole.trec")
    assert whole.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    listed = pytester.runpytest(*args, "--collect-only", "-q")
    second = [line for line in listed.stdout.lines if "::" in line][1]
    subset = pytester.runpytest(*args, second, "--groove-trec-qrels", "subset.trec")
    assert subset.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    whole_lines = (pytester.path / "whole.trec").read_text(encoding="utf-8").splitlines()
    subset_lines = (pytester.path / "subset.trec").read_text(encoding="utf-8").splitlines()
    # the second query alone keeps the qid (and so the judgement) the whole run gave it
    assert subset_lines == [whole_lines[1]]
    assert whole_lines[1].split()[0].endswith("@2")
