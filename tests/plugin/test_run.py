"""pytest-groove plugin: item outcomes, session report, history, diff, gate, xdist.

The golden queries are answered by a conftest-supplied retriever reading
``answers.json``, so a test can make retrieval better or worse by rewriting that file
between runs.  Key scenarios run twice: in one process and with ``-n 2``.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT

PYTEST_9 = int(pytest.__version__.split(".", 1)[0]) >= 9

#: what running the example leaves in a KB (index, history); never copied into tests
LOCAL_STATE = shutil.ignore_patterns(".groove", ".groove-eval-history.json*")

pytest_plugins = ["pytester"]


GOLDEN = """\
queries:
  - id: ship-days
    query: "which days do we ship"
    expected:
      - path: "ops/deploys.md"
  - id: rotate-tokens
    query: "how are tokens rotated"
    expected:
      - path: "api/auth.md"
  - id: pager
    query: "who carries the pager"
    expected:
      - path: "ops/oncall.md"
  - id: flaky
    query: "a check that fails then passes"
    expected:
      - path: "practices/testing.md"
        heading: "Flaky tests"
"""

RETRIEVER_CONFTEST = """\
import json
import shutil
import pathlib

ANSWERS = pathlib.Path(__file__).parent / "answers.json"


def retrieve(query, limit):
    table = json.loads(ANSWERS.read_text(encoding="utf-8"))
    if query in table.get("__raise__", []):
        raise RuntimeError("search backend down")
    hits = [
        {"path": path, "heading": heading, "score": round(1.0 / rank, 4)}
        for rank, (path, heading) in enumerate(table.get(query, []), start=1)
    ]
    return hits if table.get("__ignore_limit__") else hits[:limit]


retrieve.groove_name = "fake"


def pytest_groove_retriever(config):
    return retrieve
"""

NOISE = [["misc/other.md", None], ["misc/more.md", "Intro"]]

GOOD: dict[str, Any] = {
    "which days do we ship": [["ops/deploys.md", "Schedule"], *NOISE],
    "how are tokens rotated": [["api/auth.md", "Rotation"], *NOISE],
    "who carries the pager": [["ops/oncall.md", None], *NOISE],
    "a check that fails then passes": [["practices/testing.md", "Flaky tests"], *NOISE],
}

#: the pager query's answer drops from rank 1 to rank 3
WORSE = {**GOOD, "who carries the pager": [*NOISE, ["ops/oncall.md", None]]}
#: the pager query finds nothing expected
MISSING = {**GOOD, "who carries the pager": NOISE}

IDS = ["ship-days", "rotate-tokens", "pager", "flaky"]

#: the notes the answers name (headings as the answers give them)
KB_FILES = {
    "ops/deploys.md": "# Deploys\n\n## Schedule\n\nWe ship on Tuesdays and Thursdays only.\n",
    "api/auth.md": "# Auth\n\n## Rotation\n\nTokens are rotated every ninety days.\n",
    "ops/oncall.md": "# On call\n\nThe pager is carried by the on-call engineer of the week.\n",
    "practices/testing.md": (
        "# Testing\n\n## Flaky tests\n\nA check that fails then passes is quarantined "
        "and fixed within a week.\n"
    ),
    "misc/other.md": "# Other\n\nUnrelated notes about the office plants and the kitchen.\n",
    "misc/more.md": "# More\n\n## Intro\n\nMore unrelated notes about lunch and coffee.\n",
}
XDIST = ["-n", "2"]


@pytest.fixture(params=["one-process", "xdist"])
def dist(request: pytest.FixtureRequest) -> list[str]:
    """Extra arguments: none, or two xdist workers."""
    return [] if request.param == "one-process" else list(XDIST)


#: the same two variants with the xdist one in the slow run (the heaviest sessions; the
#: default run keeps xdist through `dist` and test_xdist_gives_the_same_numbers_as_one_process)
xdist_in_slow_run = pytest.mark.parametrize(
    "dist", [[], pytest.param(XDIST, marks=pytest.mark.slow)], ids=["one-process", "xdist"]
)


class Project:
    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.kb = pytester.path / "kb"
        self.kb.mkdir()
        (self.kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
        # the KB on disk is what the golden set is judged against, whoever answers
        for rel, text in KB_FILES.items():
            (self.kb / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.kb / rel).write_text(text, encoding="utf-8")
        pytester.makeconftest(RETRIEVER_CONFTEST)
        self.answer(GOOD)

    def notes(self, *paths: str) -> None:
        """Put a short note at each KB-relative path (the golden set is judged on disk)."""
        for rel in paths:
            (self.kb / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.kb / rel).write_text(f"# {rel}\n\nA note kept for the tests.\n", "utf-8")

    def answer(self, table: dict[str, Any]) -> None:
        (self.pytester.path / "answers.json").write_text(json.dumps(table), encoding="utf-8")

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest("--groove-kb", "kb", *args)

    @property
    def history_file(self) -> Path:
        return self.kb / ".groove-eval-history.json"

    def history(self) -> list[dict[str, Any]]:
        if not self.history_file.exists():
            return []
        # the stored runs in their full JSON form, whatever the file's compact form
        from pytest_groove.evaluation.history.file import load_history

        return [r.to_json() for r in load_history(self.history_file)]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    return Project(pytester)


# --------------------------------------------------------------------------- items


def test_each_query_is_an_item_and_a_miss_fails_with_a_readable_text(
    project: Project, dist: list[str]
) -> None:
    project.answer(MISSING)
    result = project.run(*dist)
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*golden query 'pager' missed: nothing expected in the top 10",
            "  query:    who carries the pager",
            "  expected:",
            "    ops/oncall.md  not retrieved (searched 2)",
            "  top 2 of 2 hits:",
            "      1. misc/other.md  (1.0000)",
            "      2. misc/more.md#Intro  (0.5000)",
            "  metrics:  recall@1 0.00  recall@5 0.00  recall@10 0.00  RR 0.00  nDCG@10 0.00",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # pytest 9 added the first line of a non-Python item's failure to the short summary
    failed = "FAILED kb/.groove-eval.yml::pager"
    result.stdout.fnmatch_lines([f"{failed} - *" if PYTEST_9 else failed])


def test_expected_entry_beyond_the_largest_k_shows_its_rank(project: Project) -> None:
    project.answer(WORSE)
    result = project.run("--groove-k", "1,2", "--groove-limit", "5")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["    ops/oncall.md  rank 3 (outside the top 2)"])


def test_a_retriever_error_stops_the_run_at_its_query_and_nothing_is_recorded(
    project: Project,
) -> None:
    # the retriever raising is one failure, the later golden items skipped with its line
    # (the next query would raise it again), and the queries before it no subset run
    project.answer({**GOOD, "__raise__": ["who carries the pager"]})
    result = project.run()
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "groove: retriever fake failed on query 'who carries the pager': RuntimeError: "
            "search backend down",
            "groove: the run stopped: retriever fake failed on query 'who carries the "
            "pager': RuntimeError: search backend down; nothing was recorded and the "
            "retrieval gate did not run",
        ]
    )
    result.stdout.no_fnmatch_line("*Subset run*")
    assert project.history() == []


def test_hits_beyond_the_depth_are_cut(project: Project) -> None:
    many = [[f"misc/{i}.md", None] for i in range(30)]
    project.notes(*(path for path, _ in many))  # the KB holds what the retriever names
    project.answer({**GOOD, "__ignore_limit__": True, "who carries the pager": many})
    project.run("--groove-limit", "5", "--groove-k", "1,3", "--groove-json", "r.json")
    report = json.loads((project.pytester.path / "r.json").read_text())
    assert [len(q["top_k"]) for q in report["per_query"]] == [3, 3, 5, 3]


def test_malformed_hits_fail_the_item_with_one_line(project: Project) -> None:
    project.answer({**GOOD, "who carries the pager": [[None, None]]})
    result = project.run()
    # an answer of no hit shape stops the run at that query (the later one is skipped)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["groove: retriever fake: hit 1 has no path (got None)*"])
    # the fix it names is pytest's spelling of the option (it once named groove's)
    result.stdout.fnmatch_lines(["*or name the key with --groove-retriever-path-key"])
    result.stdout.no_fnmatch_line("* --retriever-path-key*")


# --------------------------------------------------------------------------- session


@xdist_in_slow_run
def test_report_history_and_diff_on_the_second_run(project: Project, dist: list[str]) -> None:
    first = project.run(*dist)
    assert first.ret == pytest.ExitCode.OK
    first.stdout.fnmatch_lines(
        [
            "*= groove retrieval quality =*",
            "groove — *",
            "  model: custom    reranker: none    limit: 10    queries: 4    retriever: fake",
            "",
            "Aggregate",
            "  recall@1   1.000",
            "  recall@5   1.000",
            "  recall@10  1.000",
            "  MRR        1.000",
            "  nDCG@10    1.000",
            "",
            "On the next run it will automatically show a diff against this one.",
        ]
    )
    assert len(project.history()) == 1

    project.answer(WORSE)
    second = project.run(*dist)
    assert second.ret == pytest.ExitCode.OK  # no gate asked for, nothing missed
    second.stdout.fnmatch_lines(
        [
            "Aggregate (previous run: *)",
            "  recall@1   0.750  (↓ 0.250, p=1.00)",
            "  recall@5   1.000  (—)",
            "  recall@10  1.000  (—)",
            "  MRR        0.833  (↓ 0.167, p=1.00)",
            "  nDCG@10    0.875  (↓ 0.125, p=1.00)",
        ]
    )
    runs = project.history()
    assert len(runs) == 2
    assert [q["id"] for q in runs[0]["per_query"]] == IDS


def test_xdist_gives_the_same_numbers_as_one_process(project: Project) -> None:
    project.answer(WORSE)
    one = project.run("--groove-json", "one.json", "--groove-no-history")
    two = project.run("--groove-json", "two.json", "--groove-no-history", *XDIST)
    assert one.ret == two.ret == pytest.ExitCode.OK
    a = json.loads((project.pytester.path / "one.json").read_text())
    b = json.loads((project.pytester.path / "two.json").read_text())
    for key in ("aggregate", "per_query", "fingerprint", "findings"):
        assert a[key] == b[key], key
    assert a["recorded"] is False


@xdist_in_slow_run
def test_regression_gate_fails_the_session_and_names_the_metrics(
    project: Project, dist: list[str]
) -> None:
    assert project.run(*dist).ret == pytest.ExitCode.OK

    project.answer(WORSE)
    result = project.run("--groove-fail-on-regression", *dist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # the query whose own numbers dropped fails as an item
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "golden query 'pager' regressed by more than 0.05 against the baseline run: "
            "recall@1 1.00 -> 0.00, reciprocal rank 1.00 -> 0.33, nDCG@1 1.00 -> 0.00, "
            "nDCG@5 1.00 -> 0.50, nDCG@10 1.00 -> 0.50; rank 1 → 3; "
            "displaced by misc/other.md (unchanged), misc/more.md (unchanged)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["groove: regression gate FAILED (recall@1, MRR, nDCG@1, nDCG@5, nDCG@10 dropped*"]
    )
    result.stderr.fnmatch_lines(
        [
            "groove: retrieval quality regressed by more than 0.050 since the run of * "
            "(recall@1, MRR, nDCG@1, nDCG@5, nDCG@10).*--groove-fail-on-regression was set."
        ]
    )
    assert len(project.history()) == 2  # recorded even though the gate failed

    project.answer(GOOD)
    restored = project.run("--groove-fail-on-regression", *dist)
    assert restored.ret == pytest.ExitCode.OK
    restored.assert_outcomes(passed=4)


#: two queries without ids whose derived ids (first 32 code points) are equal
SHARED_PREFIX_GOLDEN = """\
queries:
  - query: "How does the indexer handle the chunks of a big file?"
    expected:
      - path: "big.md"
  - query: "How does the indexer handle the chunks of a small file?"
    expected:
      - path: "small.md"
"""
#: both pass; the second finds its answer at rank 2, so its numbers are lower
SHARED_PREFIX_ANSWERS = {
    "How does the indexer handle the chunks of a big file?": [["big.md", None]],
    "How does the indexer handle the chunks of a small file?": [["x.md", None], ["small.md", None]],
}


@xdist_in_slow_run
def test_queries_sharing_a_derived_id_do_not_regress_when_nothing_changed(
    project: Project, dist: list[str]
) -> None:
    (project.kb / ".groove-eval.yml").write_text(SHARED_PREFIX_GOLDEN, encoding="utf-8")
    project.notes("big.md", "small.md", "x.md")
    project.answer(SHARED_PREFIX_ANSWERS)
    assert project.run(*dist).ret == pytest.ExitCode.OK
    result = project.run("--groove-fail-on-regression", *dist)
    assert "regressed by more than" not in result.stdout.str()
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK


def test_queries_sharing_a_derived_id_are_told_apart_in_every_report(
    project: Project,
) -> None:
    """Two queries without `id:` opening with the same 32 characters share their id:
    the history and the JSON `id` keep it, but every report names each row as pytest
    names its item, so a failure in CI is matched to its report row."""
    from pytest_groove.evaluation.golden.file import load_golden, node_ids

    golden = project.kb / ".groove-eval.yml"
    golden.write_text(SHARED_PREFIX_GOLDEN, encoding="utf-8")
    big, small = node_ids(load_golden(golden, project.kb).queries)
    shared = "How does the indexer handle the "  # 32 code points, the space included
    assert big != small and big.startswith("How-does-the-indexer-handle-the-")
    project.notes("big.md", "small.md", "x.md", "y.md")
    answers = {
        "How does the indexer handle the chunks of a big file?": [["big.md", None]],
        "How does the indexer handle the chunks of a small file?": [["small.md", None]],
    }
    project.answer(answers)
    first = project.run()
    assert first.ret == pytest.ExitCode.OK
    warning = (
        "groove: warning: golden file *kb/.groove-eval.yml: the queries at lines 2 and 5 share "
        f"the id `{shared}` (a query without `id:` is named by the first 32 characters of its "
        f"text), so the reports name them by their pytest node ids ({big}, {small}); give each "
        "an `id:` to name them yourself (the edited golden file starts a new line of "
        "comparable runs)"
    )
    first.stderr.fnmatch_lines([warning])
    # the small-file query's answer drops from rank 1 to 3
    small_text = "How does the indexer handle the chunks of a small file?"
    project.answer({**answers, small_text: [["x.md", None], ["y.md", None], ["small.md", None]]})
    result = project.run("--groove-fail-on-regression", "--groove-json", "r.json")
    result.assert_outcomes(passed=1, failed=1)
    failed = f"FAILED kb/.groove-eval.yml::{small}"
    result.stdout.fnmatch_lines([f"{failed} - *" if PYTEST_9 else failed])
    result.stdout.fnmatch_lines(
        [
            "Per-query (regressions and misses, 1 of 2)",
            f"  ↓ {small} recall@1: 1.00 → 0.00*",
            "Moved (rank of the first expected hit, baseline → now; 1 of 2, worst first)",
            f"  {small} 1 → 3",
        ]
    )
    assert f"  ↓ {shared}" not in result.stdout.str()
    report = json.loads((project.pytester.path / "r.json").read_text(encoding="utf-8"))
    # the id is the seed's (the first 32 characters); `name` tells the rows apart
    assert [(q["id"], q["name"]) for q in report["per_query"]] == [(shared, big), (shared, small)]
    assert list(report["per_query"][0])[:3] == ["id", "name", "query"]
    assert report["moved"] == [{"id": shared, "name": small, "before": 1, "after": 3}]
    (stored, _) = project.history()
    assert stored["gate"]["failed"][-1] == f"query {small} regressed"  # after the averages
    assert [q["id"] for q in stored["per_query"]] == [shared, shared]  # history unchanged


def test_a_k_over_the_cap_alone_gives_the_limit_note(project: Project) -> None:
    """As ``groove eval --k 2000``: the default limit is the largest k as requested."""
    result = project.run("--groove-k", "2000", "--groove-no-history")
    assert result.ret == pytest.ExitCode.OK
    result.stderr.fnmatch_lines(
        [
            "groove: note: k 2000 exceeds the retrieval cap; using 1000 (for that k and for the "
            "limit, which defaults to the largest k)"
        ]
    )
    result.stdout.fnmatch_lines(["  model: custom    reranker: none    limit: 1000    *"])


def test_without_the_flag_a_regression_is_reported_but_passes(project: Project) -> None:
    project.run()
    project.answer(WORSE)
    result = project.run()
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4)
    assert "regression gate FAILED" not in result.stdout.str()


@xdist_in_slow_run
def test_subset_is_reported_but_neither_recorded_nor_gated(
    project: Project, dist: list[str]
) -> None:
    project.run(*dist)
    project.answer(WORSE)
    result = project.run("-k", "pager or flaky", "--groove-fail-on-regression", *dist)
    result.stdout.fnmatch_lines(
        [
            "*queries: 2*",
            "Aggregate (previous run: *)",
            "  recall@1   0.500  (↓ 0.500, p=1.00)",
            "*Subset run (2 of 4 golden queries): not recorded in the history and not gated.",
        ]
    )
    # the regressed query still fails as an item; the session gate does not run
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed")) == (1, 1)
    assert "retrieval quality regressed" not in result.stderr.str()
    assert "regression gate FAILED" not in result.stdout.str()
    assert len(project.history()) == 1


def test_subset_without_failures_exits_zero_and_keeps_history(project: Project) -> None:
    project.run()
    result = project.run("-k", "flaky")
    assert result.ret == pytest.ExitCode.OK
    assert len(project.history()) == 1


def test_a_run_stopped_early_is_not_recorded(project: Project) -> None:
    project.answer({**GOOD, "which days do we ship": NOISE})
    result = project.run("-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert project.history() == []
    assert "not recorded" in result.stdout.str()


def test_no_history_neither_reads_nor_writes(project: Project) -> None:
    project.run()
    before = project.history_file.read_bytes()
    project.answer(WORSE)
    result = project.run("--groove-no-history", "--groove-fail-on-regression")
    # no baseline: neither the items nor the session are gated
    assert result.ret == pytest.ExitCode.OK
    assert "previous run" not in result.stdout.str()
    assert project.history_file.read_bytes() == before


def test_no_diff_records_but_does_not_compare(project: Project) -> None:
    project.run()
    project.answer(WORSE)
    result = project.run("--groove-no-diff", "--groove-fail-on-regression")
    assert result.ret == pytest.ExitCode.OK
    assert "previous run" not in result.stdout.str()
    assert len(project.history()) == 2


def test_ini_switches_work_like_flags(project: Project) -> None:
    project.pytester.makeini(
        "[pytest]\ngroove_kb = kb\ngroove_fail_on_regression = true\ngroove_k = 1,3\n"
    )
    assert project.pytester.runpytest().ret == pytest.ExitCode.OK
    project.answer(WORSE)
    result = project.pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["  recall@3   1.000  (—)"])


def test_frozen_baseline_is_compared_while_compatible(project: Project) -> None:
    assert project.run("--groove-freeze-baseline").ret == pytest.ExitCode.OK
    project.answer(WORSE)
    project.run()
    result = project.run()  # still compared with the frozen (better) run
    result.stdout.fnmatch_lines(["Aggregate (previous run: *, frozen baseline*"])
    result.stdout.fnmatch_lines(["  recall@1   0.750  (↓ 0.250, p=1.00)"])


def test_json_report(project: Project) -> None:
    project.answer(MISSING)
    project.run("--groove-json", "out/report.json")
    report = json.loads((project.pytester.path / "out" / "report.json").read_text())
    assert report["recorded"] is True
    assert report["aggregate"]["query_count"] == 4
    assert report["findings"] == []
    assert [q["id"] for q in report["per_query"]] == IDS
    assert report["per_query"][2]["metrics"]["reciprocal_rank"] == 0.0
    # what the pytest_groove_retriever hook's docstring promises
    assert (report["fingerprint"]["model"], report["fingerprint"]["retriever"]) == (
        "custom",
        "fake",
    )


def _junit_properties(path: Path) -> dict[str, dict[str, str]]:
    tree = ET.parse(path)
    out: dict[str, dict[str, str]] = {}
    for case in tree.iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        out[case.get("name", "")] = props
    return out


@xdist_in_slow_run
def test_junit_properties_only_when_asked(project: Project, dist: list[str]) -> None:
    project.answer(WORSE)
    project.run("--junitxml=plain.xml", "--groove-no-history", *dist)
    plain = _junit_properties(project.pytester.path / "plain.xml")
    assert set(plain) == {"ship-days", "rotate-tokens", "pager", "flaky"}
    assert all(props == {} for props in plain.values())

    project.run(
        "--junitxml=props.xml", "--groove-no-history", "-o", "groove_junit_properties=true", *dist
    )
    props = _junit_properties(project.pytester.path / "props.xml")
    assert props["pager"]["groove.recall@1"] == "0.0000"
    assert props["pager"]["groove.reciprocal_rank"] == "0.3333"
    assert props["ship-days"]["groove.ndcg@10"] == "1.0000"


@xdist_in_slow_run
def test_junit_classname_reads_well(project: Project, dist: list[str]) -> None:
    project.run("--junitxml=plain.xml", "--groove-no-history", *dist)
    cases = list(ET.parse(project.pytester.path / "plain.xml").iter("testcase"))
    assert len(cases) == 4
    # pytest's own rule would give "kb..groove-eval.yml"
    assert {case.get("classname") for case in cases} == {"kb.groove-eval"}


def test_results_travel_on_the_test_reports(project: Project, dist: list[str]) -> None:
    """A conftest on the controller sees each query's result on its report."""
    conftest = project.pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text() + "\n\nSEEN = pathlib.Path(__file__).parent / 'seen.txt'\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    result = getattr(report, 'groove_result', None)\n"
        "    if result is not None:\n"
        "        with SEEN.open('a') as fh:\n"
        "            rr = result['metrics']['reciprocal_rank']\n"
        "            fh.write(f\"{result['id']} {rr}\\n\")\n"
    )
    project.answer(WORSE)
    project.run("--groove-no-history", *dist)
    seen = sorted((project.pytester.path / "seen.txt").read_text().split("\n")[:-1])
    # a line per query per process that saw the report (worker and controller under xdist)
    assert set(seen) == {
        "flaky 1.0",
        "pager 0.3333333333333333",
        "rotate-tokens 1.0",
        "ship-days 1.0",
    }


def test_the_own_retriever_example(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/own-retriever measures a keyword search over examples/kb."""
    examples = REPO_ROOT / "examples"
    shutil.copytree(examples / "kb", pytester.path / "kb", ignore=LOCAL_STATE)
    shutil.copytree(examples / "own-retriever", pytester.path / "own-retriever")
    monkeypatch.chdir(pytester.path / "own-retriever")
    result = pytester.runpytest("--groove-kb", "../kb")
    # word overlap cannot match the Japanese paraphrases: that is the point of the demo
    result.assert_outcomes(passed=12, failed=2)
    result.stdout.fnmatch_lines(["*retriever: keyword-example", "  ✗ ja-postmortem-deadline *"])
    assert (pytester.path / "kb" / ".groove-eval-history.json").exists()
    assert not (pytester.path / "kb" / ".groove").exists()  # no index was built


# --------------------------------------------------------------------------- nothing ran


@pytest.mark.parametrize(
    "selection",
    [
        ["test_unit.py", "kb", "-k", "test_unit"],
        ["test_unit.py", "kb", "-m", "not groove"],
        [".", "--collect-ignore-conftest"],
    ],
)
def test_other_tests_ran_but_no_golden_query_says_so(
    project: Project, selection: list[str]
) -> None:
    project.pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    if "--collect-ignore-conftest" in selection:
        selection = selection[:-1]
        project.pytester.makeconftest(RETRIEVER_CONFTEST + '\ncollect_ignore = ["kb"]\n')
    result = project.pytester.runpytest(
        "--groove-kb", "kb", "--groove-fail-on-regression", *selection
    )
    result.assert_outcomes(passed=1)
    lines = [line for line in result.stdout.lines if line.startswith("groove:")]
    # the groove section's last line, in capitals under the gate
    assert lines[-1] == (
        "groove: WARNING: no golden query ran (0 of 4): the retrieval gate asked for by "
        "--groove-fail-on-regression did NOT run"
    )
    assert not project.history_file.exists()


def test_every_golden_item_skipped_by_a_conftest_says_so(project: Project) -> None:
    project.pytester.makeconftest(
        RETRIEVER_CONFTEST + "\n\ndef pytest_collection_modifyitems(items):\n"
        "    import pytest\n"
        "    for item in items:\n"
        "        item.add_marker(pytest.mark.skip(reason='not today'))\n"
    )
    result = project.run()
    result.assert_outcomes(skipped=4)
    assert "groove: no golden query ran (0 of 4); the retrieval gate did not run" in (
        result.stdout.lines
    )


def test_an_in_process_run_leaves_the_collector_as_it_found_it(project: Project) -> None:
    import gc

    frozen_before = gc.get_freeze_count()
    result = project.run()
    result.assert_outcomes(passed=4)
    # the objects frozen while the evaluation ran are given back to the collector
    assert gc.get_freeze_count() == frozen_before


@xdist_in_slow_run
def test_a_test_beside_the_golden_queries_sees_the_collector_work(
    project: Project, dist: list[str]
) -> None:
    # a cycle made when its module was imported (at collection, before the evaluation
    # began) and dropped by the test: gc.collect() must still find it
    project.pytester.makepyfile(
        test_cycles="""
        import gc
        import weakref

        class Node:
            pass

        def made_at_import():
            node = Node()
            node.itself = node
            return weakref.ref(node), [node]

        alive, holder = made_at_import()

        def test_a_dropped_cycle_is_collected():
            holder.clear()
            gc.collect()
            assert alive() is None
        """
    )
    result = project.run(".", *dist)
    result.assert_outcomes(passed=5)


@pytest.mark.slow  # a two-worker session of its own; the default run keeps other xdist ones
def test_a_worker_that_runs_no_golden_query_leaves_the_environment_alone(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    project.pytester.makepyfile(
        test_env="""
        import os

        def test_the_thread_count_is_unset():
            assert "OMP_NUM_THREADS" not in os.environ
        """
    )
    result = project.run(".", "-n", "2", "-m", "not groove")
    result.assert_outcomes(passed=1)  # xdist counts no deselected items on the controller


def test_unbuffered_output_of_a_test_beside_the_golden_queries_keeps_its_order(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # under -s the plugin watches standard output; a test's prints must still go out
    # as the interpreter would send them (PYTHONUNBUFFERED: at once, between writes to
    # the descriptor itself)
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    project.pytester.makepyfile(
        test_order="""
        import os

        def test_prints_in_order():
            print("first-line")
            os.write(1, b"second-line\\n")
            print("third-line")
        """
    )
    result = project.pytester.runpytest_subprocess("--groove-kb", "kb", ".", "-s", "-q")
    result.assert_outcomes(passed=5)
    lines = [line.lstrip(".") for line in result.outlines if line.endswith("-line")]
    assert lines == ["first-line", "second-line", "third-line"]


@xdist_in_slow_run
def test_a_failed_gate_is_a_failing_case_in_the_junit_file(
    project: Project, dist: list[str]
) -> None:
    # a CI page that counts failed test cases must not show green for exit status 1
    project.run("--junitxml=first.xml")
    first = ET.parse(project.pytester.path / "first.xml").getroot()
    assert "groove-gate" not in ET.tostring(first, encoding="unicode")
    project.answer(WORSE)
    result = project.run("--junitxml=gated.xml", "--groove-fail-on-regression", *dist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    root = ET.parse(project.pytester.path / "gated.xml").getroot()
    cases = {case.get("name"): case for case in root.iter("testcase")}
    gate = cases["groove-gate"]
    assert gate.get("classname") == "kb.groove-eval"
    (failure,) = gate.iter("failure")
    assert "retrieval quality regressed by more than" in (failure.get("message") or "") + (
        failure.text or ""
    )
    suite = root if root.tag == "testsuite" else next(root.iter("testsuite"))
    failed_items = sum(1 for c in cases.values() if list(c.iter("failure")) and c is not gate)
    assert int(suite.get("failures", "0")) == failed_items + 1
    # the terminal counts only the items that ran
    assert "groove-gate" not in result.stdout.str()
    # a floor fails no item at all: the gate case is then the only failure
    project.answer(MISSING)
    floor = project.run("--junitxml=floor.xml", "--groove-fail-under", "recall@10=0.9", *dist)
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    floor_root = ET.parse(project.pytester.path / "floor.xml").getroot()
    failing = [c.get("name") for c in floor_root.iter("testcase") if list(c.iter("failure"))]
    assert "groove-gate" in failing


@pytest.mark.parametrize("stop", ["--sw", "-x", "--maxfail=1"])
def test_a_session_stopped_after_every_golden_query_says_interrupted_not_subset(
    project: Project, stop: str
) -> None:
    # -x / --maxfail end with exit status 1, not "interrupted": the stop is seen all
    # the same (pytest's shouldfail, and an item left unrun), so the run is not
    # recorded as a whole one
    project.pytester.makepyfile(
        test_zz_fails="def test_fails():\n    assert 0\n\ndef test_left_unrun():\n    pass\n"
    )
    result = project.run(".", stop)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "Interrupted run (all 4 golden queries ran, but the session stopped early): not "
            "recorded in the history and not gated."
        ]
    )
    assert "Subset run" not in result.stdout.str()
    assert not project.history_file.exists()


def test_a_skipped_golden_item_under_a_gate_says_the_gate_did_not_run(project: Project) -> None:
    project.pytester.makeconftest(
        RETRIEVER_CONFTEST + "\n\nimport pytest as _pytest\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        if item.name == items[0].name:\n"
        "            item.add_marker(_pytest.mark.skip(reason='flaky'))\n"
        "    [i for i in items if 'db' in i.fixturenames]  # as many conftests do\n"
    )
    result = project.run("--groove-fail-on-regression", "--groove-fail-under", "mrr=0.99")
    result.assert_outcomes(passed=3, skipped=1)
    assert result.ret == pytest.ExitCode.OK  # a subset is never gated...
    result.stdout.fnmatch_lines(  # ...and the section's last line says so in capitals
        [
            "groove: WARNING: only 3 of 4 golden queries ran: --groove-fail-on-regression and "
            "the floors (mrr=0.99) did NOT run (only a whole run is gated; a skipped or "
            "deselected golden item makes a subset)"
        ]
    )
    assert not project.history_file.exists()


def test_under_q_the_summary_says_the_own_tests_did_not_run(project: Project) -> None:
    project.pytester.makepyfile(test_own="def test_own():\n    pass\n")
    result = project.run("-q", "-k", "test_own")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    # no tests/ folder and no testpaths: the line names no folder that is not there
    result.stdout.fnmatch_lines(
        ["groove: running only the golden queries (no test paths given); to run your own "
         "tests as well, name them: pytest --groove-kb kb <your test paths>"]
    )  # fmt: skip


def test_the_golden_only_line_names_the_ini_files_testpaths(project: Project) -> None:
    project.pytester.makeini("[pytest]\ntestpaths = spec checks\n")
    result = project.run("-q")
    result.stdout.fnmatch_lines(["*name them: pytest --groove-kb kb spec checks"])


def test_under_s_the_projects_tests_see_a_text_stream_as_stdout(project: Project) -> None:
    # the plugin's guard of standard output stands in for sys.stdout: a test (or a
    # library it calls) checking what sys.stdout is must see no difference
    project.pytester.makepyfile(
        test_own="import io, sys\n"
        "def test_own():\n"
        "    assert isinstance(sys.stdout, io.TextIOBase), type(sys.stdout)\n"
        "    assert sys.stdout.encoding and not sys.stdout.closed\n"
        "    assert sys.stdout.fileno() == 1\n"
        "    print('printed by the test')\n"
    )
    result = project.pytester.runpytest_subprocess(
        "--groove-kb", "kb", "test_own.py", "-s", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*printed by the test*"])


def test_a_golden_file_outside_the_rootdir_is_said_with_the_way_out(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("docs")
    (outside / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    for rel, text in KB_FILES.items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(text, encoding="utf-8")
    pytester.makeini(f"[pytest]\ngroove_kb = {outside}\ngroove_model = hash\n")
    result = pytester.runpytest("--co")
    result.stdout.fnmatch_lines(
        ["groove: the golden file * is outside pytest's rootdir (*), so its items are named "
         "`::<id>`; run pytest from a folder above both (or pass --rootdir) for full node ids"]
    )  # fmt: skip


def test_a_stop_after_the_last_item_leaves_nothing_unrun_and_records(project: Project) -> None:
    # -x stopping at the session's last item cut nothing short: the run is whole,
    # recorded and gated (under xdist, which item runs last is not the test's to say)
    project.pytester.makepyfile(test_zz_fails="def test_fails():\n    assert 0\n")
    result = project.run(".", "-x")
    result.assert_outcomes(passed=4, failed=1)
    assert "Interrupted run" not in result.stdout.str()
    assert len(project.history()) == 1


def test_a_session_that_scored_nothing_says_no_report_was_written(project: Project) -> None:
    # a report already there (an earlier session's CI artifact) must not pass for this one's
    (project.pytester.path / "out.json").write_text("{}", encoding="utf-8")
    result = project.run("-k", "no_such_query", "--groove-json", "out.json")
    result.stdout.fnmatch_lines(
        ["groove: no report was written (*out.json): no golden query was scored; a file "
         "already there is from an earlier session"]
    )  # fmt: skip
    assert (project.pytester.path / "out.json").read_text(encoding="utf-8") == "{}"
