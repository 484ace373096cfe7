"""The plugin's baseline, threshold and retriever options, and what the session prints."""

from __future__ import annotations

import pytest

from conftest import copy_example_kb
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, load_history

RETRIEVER = """
def search(query, limit):
    return [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    copy_example_kb(pytester.path / "kb")
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


#: a retriever that answers each golden query with its expected entries still on disk
ANSWERS_ON_DISK = """
import os, yaml

GOLDEN = yaml.safe_load(open("kb/.groove-eval.yml", encoding="utf-8"))["queries"]
ANSWER = {q["query"]: q["expected"] for q in GOLDEN}


def search(query, limit):
    hits = [e for e in ANSWER[query] if os.path.exists("kb/" + e["path"])]
    return [{"path": e["path"], "heading": e.get("heading"), "score": 1.0} for e in hits]
"""


@pytest.mark.parametrize("history", [False, True], ids=["never-held", "held-by-a-run"])
def test_a_deleted_answer_with_a_custom_retriever_is_one_behaviour_in_both_doors(
    project: pytest.Pytester, history: bool
) -> None:
    """Never held by a run: both doors refuse before searching, naming the knowledge
    base (a custom retriever has no index of groove's).  Held by a recorded run: both
    score it as a lost answer."""
    from tests.helpers.cli_invoke import invoke

    project.makepyfile(on_disk=ANSWERS_ON_DISK)
    kb = project.path / "kb"
    spec = ("--retriever", "on_disk:search")
    if history:
        assert invoke("eval", "--kb-path", kb, *spec, cwd=project.path).returncode == 0
    (kb / "ops" / "rollback.md").unlink()
    done = invoke("eval", "--kb-path", kb, *spec, "--no-history", cwd=project.path)
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "on_disk:search", "--groove-no-history",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    output = result.stdout.str() + result.stderr.str()
    if not history:
        assert done.returncode == 1 and result.ret == pytest.ExitCode.USAGE_ERROR
        refusal = "expected path `ops/rollback.md` is not in the knowledge base"
        assert refusal in done.stderr and refusal in output
        return
    # --no-history reads no run: the same refusal would stand; with the history read,
    # both doors score the lost answer
    done = invoke("eval", "--kb-path", kb, *spec, cwd=project.path)
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "on_disk:search", "-p", "no:cacheprovider",
    )  # fmt: skip
    lost = "`ops/rollback.md` removed from the knowledge base since the baseline run"
    assert done.returncode == 0 and lost in done.stdout
    assert result.ret == pytest.ExitCode.TESTS_FAILED and lost in result.stdout.str()
    assert "is not in the" not in done.stderr + result.stdout.str() + result.stderr.str()
