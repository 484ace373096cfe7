"""The plugin's retriever door: what wins (command line, conftest hook, ini), the name
option, and ini keys that are misspelt."""

from __future__ import annotations

import sys

import pytest

from conftest import copy_example_kb

# Imported here, not only inside the inner runs: pytester's in-process runs drop the
# modules a run imported, and numpy / PyYAML's C loader do not survive a second import.
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, load_history

TEAM_SEARCH = """
def search(query, limit):
    return [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]

def other(query, limit):
    return [{"path": "ops/release-train.md", "heading": None, "score": 1.0}]
"""

HOOK = """
from team_search import other

def pytest_groove_retriever(config):
    return other
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # in-process runs share sys.modules: another test's ``team_search`` must not answer
    monkeypatch.delitem(sys.modules, "team_search", raising=False)
    copy_example_kb(pytester.path / "kb")
    pytester.makepyfile(team_search=TEAM_SEARCH)
    pytester.syspathinsert()
    return pytester


def _recorded_name(project: pytest.Pytester) -> str | None:
    (recorded,) = load_history(project.path / "kb" / HISTORY_FILE_NAME)
    return recorded.fingerprint.retriever


def test_the_command_line_wins_over_a_conftest_hook(project: pytest.Pytester) -> None:
    project.makeconftest(HOOK)
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever", "team_search:search")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(["*custom retriever team_search:search*"])
    assert _recorded_name(project) == "team_search:search"


def test_a_conftest_hook_alone_is_measured(project: pytest.Pytester) -> None:
    project.makeconftest(HOOK)
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever-name", "hooked-v1")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    assert _recorded_name(project) == "hooked-v1"


def test_a_conftest_hook_and_the_ini_key_are_a_clash_naming_both(
    project: pytest.Pytester,
) -> None:
    project.makeconftest(HOOK)
    project.makeini("[pytest]\ngroove_retriever = team_search:search\n")
    result = project.runpytest("--groove-kb", "kb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: two retrievers are configured: the pytest_groove_retriever hook in "
            "conftest.py and groove_retriever = team_search:search in *tox.ini; remove one, "
            "or choose on the command line with --groove-retriever SPEC"
        ]
    )
    assert not (project.path / "kb" / HISTORY_FILE_NAME).exists()


@pytest.mark.parametrize("where", ["command line", "ini"])
def test_a_retriever_name_with_no_retriever_or_hook_is_refused(
    project: pytest.Pytester, where: str
) -> None:
    # the built-in search would have been measured, while the option named a retriever
    if where == "ini":
        project.makeini("[pytest]\ngroove_retriever_name = team-search-v2\n")
        result = project.runpytest("--groove-kb", "kb", "--groove-model", "hash")
    else:
        result = project.runpytest(
            "--groove-kb", "kb", "--groove-model", "hash", "--groove-retriever-name", "v2"
        )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --groove-retriever-name describes a retriever of your own, but this run "
            "measures none (it would measure the built-in search): give --groove-retriever "
            "MODULE:ATTR or an http:// URL (under pytest, a pytest_groove_retriever hook does "
            "too), or drop it"
        ]
    )
    assert not (project.path / "kb" / HISTORY_FILE_NAME).exists()


def test_the_name_option_and_ini_key_name_the_run(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ngroove_retriever_name = team-search-v2\n")
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever", "team_search:search")
    result.stdout.fnmatch_lines(["*custom retriever team-search-v2*"])
    assert _recorded_name(project) == "team-search-v2"


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("groove_fail_on_regresion", "did you mean groove_fail_on_regression?"),
        ("groove_retriver", "did you mean groove_retriever?"),
        ("groove_zzz_qqq", "see docs/pytest-plugin.md for the keys"),
    ],
)
def test_a_misspelt_groove_ini_key_is_a_usage_error(
    project: pytest.Pytester, key: str, hint: str
) -> None:
    project.makeini(f"[pytest]\ngroove_kb = kb\n{key} = true\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: unknown ini key {key} in *tox.ini: {hint}"])


def test_a_misspelt_key_is_refused_even_without_a_kb(project: pytest.Pytester) -> None:
    """A misspelt groove_kb would otherwise leave the plugin silently off."""
    project.makeini("[pytest]\ngroove_kbb = kb\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: unknown ini key groove_kbb in *: did you mean groove_kb?"])


def test_a_bad_timeout_is_refused_when_parsed(project: pytest.Pytester) -> None:
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever-timeout", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--groove-retriever-timeout takes a positive number of seconds*"])


@pytest.mark.parametrize(
    ("body", "cause"),
    [
        (
            "raise RuntimeError('vector db unreachable')",
            "failed: RuntimeError: vector db unreachable",
        ),
        ("raise SystemExit(2)", "exited (SystemExit: 2) while building it"),
    ],
)
def test_a_hook_that_raises_is_one_error_line_naming_it(
    project: pytest.Pytester, body: str, cause: str
) -> None:
    project.makeconftest(f"def pytest_groove_retriever(config):\n    {body}\n")
    result = project.runpytest("--groove-kb", "kb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: retriever hook pytest_groove_retriever in conftest.py {cause}*"]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output


def test_an_ini_retriever_module_is_found_from_a_subfolder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `cd tests && pytest` (or an IDE starting there) once failed: No module named ...
    # while the ini file beside the module named it
    copy_example_kb(pytester.path / "kb")
    (pytester.path / "ini_search.py").write_text(TEAM_SEARCH, encoding="utf-8")
    pytester.makeini("[pytest]\ngroove_kb = kb\ngroove_retriever = ini_search:search\n")
    sub = pytester.mkdir("tests")
    (sub / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    monkeypatch.chdir(sub)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    output = result.stdout.str() + result.stderr.str()
    assert "could not import" not in output, output
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output
    result.stdout.fnmatch_lines(["*custom retriever ini_search:search*"])


#: a LangChain retriever whose loader kept the file name under a key of its own: every
#: Document it returns lacks metadata["source"], for every query alike
NO_SOURCE = """
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class Notes(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        return [Document(page_content="Run the rollback.", metadata={"file": "ops/rollback.md"})]


def pytest_groove_retriever(config):
    return Notes()
"""


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_hits_of_a_shape_no_path_is_read_from_stop_the_run_at_the_first_query(
    project: pytest.Pytester, dist: list[str]
) -> None:
    project.makeconftest(NO_SOURCE)
    (project.path / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    result = project.runpytest("--groove-kb", "kb", "test_own.py", *dist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # one failure per process that searched (not one identical failure per golden
    # query), the other golden items skipped with its line; the project's test runs
    outcomes = result.parseoutcomes()
    assert 1 <= outcomes["failed"] <= max(1, len(dist))
    assert outcomes["failed"] + outcomes["skipped"] == 14
    assert outcomes["passed"] == 1
    result.stdout.fnmatch_lines(
        ["*hit 1 has no path (got None) in *; *name the key with --groove-retriever-path-key"]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    # nothing was scored: the gate says it did not run, and no run is recorded
    assert "the retrieval gate did not run" in output
    assert not (project.path / "kb" / HISTORY_FILE_NAME).exists()
