"""The honest gate under pytest: floors, --groove-significance, an ini key that loosens."""

from __future__ import annotations

import pytest
from test_plugin_run import MISSING, Project

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
