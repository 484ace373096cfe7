"""The README's opening sample and examples/README.md's "try a regression" are true as
written: the shipped example KB, the default model, caching.md moved away and back."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

# see test_plugin_engine: modules pytester's in-process runs must not re-import
import pytest_groove.engine
import pytest_groove.plugin.controller
import pytest_groove.plugin.runner  # noqa: F401

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.usefixtures("lean_pytester")

ROOT = Path(__file__).resolve().parents[1]
LOCAL_STATE = shutil.ignore_patterns(".groove", ".groove-eval-history.json*")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z")


def readme_sample() -> list[str]:
    """The console block after the README's pitch, without the command and the '...'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```console\n$ pytest --groove-kb kb/ --groove-fail-on-regression\n")[1]
    lines = block.split("```", 1)[0].splitlines()
    return [line for line in lines if line.strip() not in ("...", "")]


def test_the_readme_sample_and_the_examples_regression_are_true(
    pytester: pytest.Pytester,
) -> None:
    examples = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert "move `examples/kb/api/caching.md` away" in examples
    kb = pytester.path / "kb"
    shutil.copytree(ROOT / "examples" / "kb", kb, ignore=LOCAL_STATE)
    assert pytester.runpytest("--groove-kb", "kb/").ret == pytest.ExitCode.OK
    moved_away = pytester.path / "caching.md"
    (kb / "api" / "caching.md").rename(moved_away)

    broken = pytester.runpytest("--groove-kb", "kb/", "--groove-fail-on-regression")
    assert broken.ret == pytest.ExitCode.TESTS_FAILED  # "the exit status is 1"
    broken.assert_outcomes(passed=13, failed=1)
    out = broken.stdout.str()
    # every line of the README's sample, timestamps aside, exactly as printed
    for line in readme_sample():
        pattern = re.escape(TIMESTAMP.sub("TS", line)).replace("TS", TIMESTAMP.pattern)
        assert re.search(f"^{pattern}$", out, flags=re.M), line
    assert "FAILED kb/.groove-eval.yml::stale-tracking" in out
    assert "`api/caching.md` removed from the knowledge base since the baseline run" in out

    moved_away.rename(kb / "api" / "caching.md")  # "put the file back: the next run passes"
    restored = pytester.runpytest("--groove-kb", "kb/", "--groove-fail-on-regression")
    assert restored.ret == pytest.ExitCode.OK
