"""Under pytest, golden input that would switch the gate off stops the session as a
usage error (exit 4) before any search, and nothing is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

DOC = "## Release schedule\n\nReleases leave on Tuesday and Thursday mornings.\n"


def _golden(tags: str = "[smoke]", path: str = "deploys.md") -> str:
    return (
        "queries:\n"
        "  - id: schedule\n"
        '    query: "release schedule tuesday"\n'
        "    expected:\n"
        f"      - path: {path}\n"
        f"    tags: {tags}\n"
    )


@pytest.fixture
def kb(pytester: pytest.Pytester) -> Path:
    root = pytester.path / "kb"
    root.mkdir()
    (root / "deploys.md").write_text(DOC, encoding="utf-8")
    return root


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # a subprocess: each run imports the engine afresh, as a user's pytest does
    return pytester.runpytest_subprocess("--groove-kb", "kb", "--groove-model", "hash", *args)


def _refused(result: pytest.RunResult, kb: Path, *patterns: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(list(patterns))
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()
    assert not (kb / ".groove-eval-history.json").exists()


@pytest.mark.parametrize("tag", ["skip", "xfail"])
def test_a_tag_naming_a_pytest_marker_stops_the_session(
    pytester: pytest.Pytester, kb: Path, tag: str
) -> None:
    (kb / ".groove-eval.yml").write_text(_golden(tags=f"[{tag}]"), encoding="utf-8")
    _refused(_run(pytester), kb, f"ERROR: *tag `{tag}` would become pytest's `{tag}` marker*")


def test_a_tag_naming_a_plugin_registered_marker_stops_the_session(
    pytester: pytest.Pytester, kb: Path
) -> None:
    pytester.makeconftest(
        """
        def pytest_configure(config):
            config.addinivalue_line("markers", "flaky(reruns): rerun a failing test")
        """
    )
    (kb / ".groove-eval.yml").write_text(_golden(tags="[flaky]"), encoding="utf-8")
    _refused(
        _run(pytester),
        kb,
        "ERROR: golden file *: line 2: tag `flaky` would become the `flaky` marker, which "
        "pytest or a plugin registered*",
    )


def test_a_marker_the_user_registers_in_the_ini_file_stays_usable(
    pytester: pytest.Pytester, kb: Path
) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    smoke: quick checks\n")
    (kb / ".groove-eval.yml").write_text(_golden(tags="[smoke]"), encoding="utf-8")
    result = _run(pytester, "-m", "smoke")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.assert_outcomes(passed=1)


def test_a_missing_expected_path_stops_the_session(pytester: pytest.Pytester, kb: Path) -> None:
    (kb / ".groove-eval.yml").write_text(_golden(path="deploy.md"), encoding="utf-8")
    _refused(
        _run(pytester),
        kb,
        "ERROR: golden file *: line 5: expected path `deploy.md` is not in the index "
        "(did you mean `deploys.md`?)*",
    )


def test_a_kb_with_nothing_indexable_stops_the_session(pytester: pytest.Pytester, kb: Path) -> None:
    (kb / "deploys.md").rename(kb / "deploys.txt")
    (kb / ".groove-eval.yml").write_text(_golden(path="deploys.txt"), encoding="utf-8")
    _refused(_run(pytester), kb, "ERROR: the knowledge base * has no indexable document*")
