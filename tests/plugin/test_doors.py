"""The plugin's baseline, threshold and retriever options, and what the session prints."""

from __future__ import annotations

import shutil

import pytest

from conftest import EXAMPLE_KB
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, load_history

RETRIEVER = """
def search(query, limit):
    return [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(
        EXAMPLE_KB,
        pytester.path / "kb",
        ignore=shutil.ignore_patterns(".groove", ".groove-eval-history*"),
    )
    pytester.makepyfile(team_search=RETRIEVER)
    pytester.syspathinsert()
    return pytester


def test_the_retriever_option_measures_a_module_attribute(project: pytest.Pytester) -> None:
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever", "team_search:search")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # one path for every query: misses
    result.stdout.fnmatch_lines(["*custom retriever team_search:search*"])
    (recorded,) = load_history(project.path / "kb" / HISTORY_FILE_NAME)
    assert recorded.fingerprint.retriever == "team_search:search"
    assert recorded.fingerprint.model == "custom"
    assert not (project.path / "kb" / ".groove").exists()  # no index built


def test_the_retriever_ini_key_and_a_bad_spec(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ngroove_retriever = team_search:nothing_here\n")
    result = project.runpytest("--groove-kb", "kb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: retriever team_search:nothing_here: team_search has no*"])


def test_baseline_threshold_and_freeze_under_pytest(project: pytest.Pytester) -> None:
    args = ("--groove-kb", "kb", "--groove-model", "hash")
    first = project.runpytest(*args)
    assert first.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    (recorded,) = load_history(project.path / "kb" / HISTORY_FILE_NAME)
    stamp = recorded.timestamp.strftime("%Y-%m-%dT%H:%M:%S")
    second = project.runpytest(
        *args,
        "--groove-baseline",
        stamp,
        "--groove-threshold",
        "recall@5=0.02,mrr=0.1",
        "--groove-freeze-baseline",
    )
    second.stdout.fnmatch_lines(["Aggregate (baseline run you named: *"])
    second.stderr.fnmatch_lines(["groove: frozen baseline: the run of *"])
    assert [r.frozen for r in load_history(project.path / "kb" / HISTORY_FILE_NAME)] == [
        True,
        False,
    ]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--groove-baseline", "1999", "ERROR: no run in *matches '1999'*"),
        ("--groove-threshold", "f1@5=1", "*unknown metric 'f1@5'*"),
    ],
)
def test_bad_baselines_and_thresholds_are_usage_errors_before_any_search(
    project: pytest.Pytester, option: str, value: str, message: str
) -> None:
    project.runpytest("--groove-kb", "kb", "--groove-model", "hash")  # one stored run
    before = (project.path / "kb" / HISTORY_FILE_NAME).read_bytes()
    result = project.runpytest("--groove-kb", "kb", "--groove-model", "hash", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert (project.path / "kb" / HISTORY_FILE_NAME).read_bytes() == before


def test_the_header_says_only_golden_queries_run_without_paths(project: pytest.Pytester) -> None:
    (project.path / "tests").mkdir(exist_ok=True)  # the folder the line then names
    result = project.runpytest(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search", "--groove-no-history"
    )
    result.stdout.fnmatch_lines(
        [
            "groove: running only the golden queries (no test paths given); to run your own "
            "tests as well, name them: pytest --groove-kb kb tests/"
        ]
    )
    with_paths = project.runpytest(
        "--groove-kb",
        "kb",
        "--groove-retriever",
        "team_search:search",
        "--groove-no-history",
        "kb",
    )
    assert "running only the golden queries" not in with_paths.stdout.str()
