"""Options a Python retriever cannot use are refused or warned about, never ignored.

- ``--retriever-timeout`` and ``--retriever-token-env`` are an http:// retriever's: a
  Python retriever runs in this process, where a call cannot be cut short, and reads its
  own credentials.  Given to the run (flag or ini key) beside one they are a usage
  error; ``[retriever]`` keys in groove.toml and ``$GROOVE_RETRIEVER_TIMEOUT`` are
  standing settings the run cannot drop, so they are one warning each.
- The built-in search pipeline's options (``--mmr``, ``--mmr-lambda``,
  ``--parent-retriever`` ...) are one warning beside any custom retriever, as the
  engine's ``--model`` already was.

A callable that took 1.5 s per query ran to its end with ``--retriever-timeout 1``,
and ``--mmr true`` beside ``--retriever`` said nothing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from conftest import copy_example_kb
from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.external import load_retriever
from tests.helpers.cli_invoke import CliRun, invoke

#: a retriever that takes 1.5 s per query (the module records each call)
SLOW = """\
import time

CALLS = []


def search(query, limit):
    CALLS.append(query)
    time.sleep(1.5)
    return [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]
"""

QUICK = """\
def search(query, limit):
    return [{"path": "ops/release-train.md", "heading": "Schedule", "score": 1.0}]
"""

GOLDEN = (
    "queries:\n"
    "  - {id: ship, query: which days do we ship, expected: [{path: ops/release-train.md}]}\n"
    "  - {id: back, query: roll back a release, expected: [{path: ops/rollback.md}]}\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy_example_kb(tmp_path / "kb")
    (tmp_path / "kb" / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    return tmp_path


def _module(project: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"team_{project.name.replace('-', '_')}"
    (project / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _eval(project: Path, *args: str, env: dict[str, str] | None = None) -> CliRun:
    return invoke("eval", "--kb-path", "kb", "--no-history", *args, cwd=project, env=env)


def _warnings(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("groove eval: warning:")]


# --------------------------------------------------------------------------- groove eval


def test_a_timeout_for_a_python_retriever_is_refused_before_any_search(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(project, SLOW, monkeypatch)
    started = time.monotonic()
    done = _eval(project, "--retriever", f"{name}:search", "--retriever-timeout", "1")
    assert time.monotonic() - started < 1.5
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"groove eval: error: --retriever-timeout is for http:// retrievers, and "
        f"{name}:search is a Python retriever, which is called in this process, where a call "
        "cannot be cut short (set the timeout on the client it uses: QdrantClient(timeout=...), "
        "an HTTP client's timeout): drop it"
    ]
    assert name not in sys.modules or not sys.modules[name].CALLS


def test_the_timeout_and_the_token_together_are_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(project, QUICK, monkeypatch)
    done = _eval(
        project, "--retriever", f"{name}:search", "--retriever-timeout", "1",
        "--retriever-token-env", "SEARCH_TOKEN",
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "--retriever-timeout and --retriever-token-env are for http:// retrievers" in line
    assert "and reads its own credentials: drop them" in line


def test_the_environment_timeout_beside_a_python_retriever_is_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(project, QUICK, monkeypatch)
    done = _eval(project, "--retriever", f"{name}:search", env={"GROOVE_RETRIEVER_TIMEOUT": "1"})
    assert done.returncode == 0, done.stderr
    assert (
        f"groove eval: warning: $GROOVE_RETRIEVER_TIMEOUT is for http:// retrievers; "
        f"{name}:search is a Python retriever, called without a deadline"
    ) in done.stderr


def test_the_retriever_table_beside_a_python_retriever_is_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """groove.toml is the KB's standing configuration (an http:// retriever's in CI):
    the run cannot drop it, so it is told, not refused (the token was refused naming
    the flag no one had typed)."""
    (project / "kb" / "groove.toml").write_text(
        '[retriever]\ntimeout = 5\ntoken_env = "SEARCH_TOKEN"\n', encoding="utf-8"
    )
    name = _module(project, QUICK, monkeypatch)
    done = _eval(project, "--retriever", f"{name}:search", env={"GROOVE_RETRIEVER_TIMEOUT": "1"})
    assert done.returncode == 0, done.stderr
    (warning,) = [w for w in _warnings(done) if "http:// retrievers" in w]
    assert warning == (
        f"groove eval: warning: [retriever] timeout and [retriever] token_env in "
        f"{project / 'kb' / 'groove.toml'} are for http:// retrievers; {name}:search is a Python "
        "retriever, so ignored"
    )


def test_pipeline_options_beside_a_retriever_are_a_warning(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(project, QUICK, monkeypatch)
    done = _eval(
        project, "--retriever", f"{name}:search", "--mmr", "true", "--mmr-lambda", "0.3",
        "--mmr-same-doc-penalty", "0.1", "--parent-retriever", "true", "--reranker", "none",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "groove eval: warning: --reranker, --mmr, --mmr-lambda, --mmr-same-doc-penalty, "
        "--parent-retriever do not apply to a custom retriever (it searches its own store); "
        "ignored"
    ) in _warnings(done)
    assert "MMR override values" not in done.stderr  # one line says it


def test_the_library_refuses_a_timeout_for_a_python_retriever(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(project, QUICK, monkeypatch)
    monkeypatch.chdir(project)
    with pytest.raises(GrooveError, match="--retriever-timeout is for http:// retrievers"):
        load_retriever(f"{name}:search", project / "kb", timeout=1.0)


# --------------------------------------------------------------------------- pytest


@pytest.fixture
def tester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    copy_example_kb(pytester.path / "kb")
    (pytester.path / "kb" / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    monkeypatch.delitem(sys.modules, "quick_search", raising=False)
    pytester.makepyfile(quick_search=QUICK)
    pytester.syspathinsert()
    return pytester


HOOK = """
from quick_search import search

def pytest_groove_retriever(config):
    return search
"""


def test_under_pytest_a_timeout_beside_a_hook_is_a_usage_error(tester: pytest.Pytester) -> None:
    """The hook's retriever is a Python object: the timeout was silently dropped."""
    tester.makeconftest(HOOK)
    result = tester.runpytest("--groove-kb", "kb", "--groove-retriever-timeout", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --groove-retriever-timeout is for http:// retrievers, and the "
            "pytest_groove_retriever hook's retriever is a Python retriever, which is "
            "called in this process*: drop it"
        ]
    )


def test_under_pytest_the_ini_token_beside_a_spec_is_a_usage_error(
    tester: pytest.Pytester,
) -> None:
    tester.makeini(
        "[pytest]\ngroove_kb = kb\ngroove_retriever = quick_search:search\n"
        "groove_retriever_token_env = SEARCH_TOKEN\n"
    )
    result = tester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --groove-retriever-token-env is for http:// retrievers, and quick_search:search*"]
    )


def test_under_pytest_pipeline_options_beside_a_hook_are_a_warning(
    tester: pytest.Pytester,
) -> None:
    tester.makeconftest(HOOK)
    result = tester.runpytest(
        "--groove-kb", "kb", "--groove-mmr", "true", "--groove-parent-retriever", "true",
        "--groove-no-history",
    )  # fmt: skip
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(
        [
            "groove: warning: --groove-mmr, --groove-parent-retriever do not apply to a custom "
            "retriever (it searches its own store); ignored"
        ]
    )
