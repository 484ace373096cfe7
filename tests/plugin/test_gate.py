"""The honest gate under pytest: floors, --groove-significance, an ini key that loosens."""

from __future__ import annotations

import pytest

from tests.plugin.test_run import MISSING, WORSE, XDIST, Project

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Project:
    return Project(pytester)


def test_a_floor_fails_the_first_session(project: Project) -> None:
    project.answer(MISSING)  # 3 of 4 found: recall@10 0.75
    result = project.run("--groove-fail-under", "recall@10=0.9")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["groove: floor gate FAILED (recall@10 0.750 < floor 0.9); *"])
    result.stderr.fnmatch_lines(
        ["*under its floor*--groove-fail-under on the command line sets the floors*"]
    )


def test_a_threshold_of_one_in_the_ini_file_is_named(project: Project) -> None:
    assert project.run().ret == pytest.ExitCode.OK
    project.pytester.makeini("[pytest]\ngroove_threshold = 1\n")
    project.answer(MISSING)
    result = project.run("--groove-fail-on-regression")
    ini = project.pytester.path / "tox.ini"
    result.stderr.fnmatch_lines(
        [
            "groove: warning: the gate is looser than the baseline run's: regression_threshold 1 "
            f"(baseline run: 0.05) from groove_threshold in {ini}"
        ]
    )


def test_significance_under_pytest_keeps_a_chance_drop_from_failing(project: Project) -> None:
    project.run()
    project.answer(MISSING)
    result = project.run("--groove-fail-on-regression", "--groove-significance", "0.05")
    result.stdout.fnmatch_lines(["  MRR        0.750  (↓ 0.250, p=1.00)"])
    assert "regression gate FAILED" not in result.stdout.str()
    result.stderr.fnmatch_lines(["*not counted as regressed under --groove-significance 0.05*"])


@pytest.mark.parametrize(
    "dist", [[], pytest.param(XDIST, marks=pytest.mark.slow)], ids=["one-process", "xdist"]
)
def test_under_significance_a_single_query_drop_fails_no_item_as_groove_eval(
    project: Project, dist: list[str]
) -> None:
    """A query whose answer moved from rank 1 to 3 is a mean drop over the threshold
    (so it is named as unconfirmed, p=1.00): under --groove-significance the session,
    like `groove eval`, does not fail on it -- not through the gate, not through the
    query's item -- and says which query dropped."""
    project.run(*dist)
    project.answer(WORSE)
    result = project.run(
        "--groove-fail-on-regression",
        "--groove-significance",
        "0.05",
        "--groove-json",
        "r.json",
        *dist,
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["  ↓ pager * rank 1 → 3*"])  # the report still shows it
    result.stderr.fnmatch_lines(
        [
            "groove: warning: dropped by more than the threshold but not counted as regressed "
            "under --groove-significance 0.05 (recall@1 p=1.00, MRR p=1.00, *",
            "groove: the gate passed on the aggregate metrics, but 1 query dropped since the "
            "baseline (pager; see the per-query block): under --groove-significance 0.05, one "
            "query's drop fails neither its pytest item nor the run, as the test cannot tell a "
            "single query's drop from chance; the gate fails on an aggregate drop over its "
            "threshold with p < 0.05",
        ]
    )
    # nothing failed the run, so nothing is recorded as having failed it
    assert project.history()[0]["gate"].get("failed", []) == []
    # the same level from the ini file: the same outcome, and the warning names the file
    project.pytester.makeini("[pytest]\ngroove_significance = 0.05\n")
    project.answer(WORSE)
    again = project.run("--groove-fail-on-regression", "--groove-baseline", _oldest(project))
    assert again.ret == pytest.ExitCode.OK
    ini = project.pytester.path / "tox.ini"
    again.stderr.fnmatch_lines(
        [
            "groove: warning: dropped by more than the threshold but not counted as regressed "
            f"under significance 0.05 from groove_significance in {ini} (*"
        ]
    )


def _oldest(project: Project) -> str:
    return str(project.history()[-1]["timestamp"])


def test_a_gate_with_nothing_to_compare_says_so(project: Project) -> None:
    first = project.run("--groove-fail-on-regression")
    assert first.ret == pytest.ExitCode.OK
    line = (
        "groove: warning: --groove-fail-on-regression compared nothing: no earlier run is "
        "stored, so no regression could be checked; once this run is recorded, later ones "
        "are compared with it"
    )
    assert line in first.stderr.lines
    second = project.run("--groove-fail-on-regression")
    assert not any("compared nothing" in text for text in second.stderr.lines)
    other = project.run("--groove-fail-on-regression", "--groove-limit", "12")
    assert any(
        "no stored run can be compared with this one" in text and "limit differs" in text
        for text in other.stderr.lines
    )
