"""The README's opening sample, examples/README.md's "try a regression" and the figures
of docs/pytest-plugin.md's first example are true as written: the shipped example KB,
the default model (the default run's one real-model session), caching.md moved away
and back."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import REPO_ROOT

pytest_plugins = ["pytester"]

ROOT = REPO_ROOT
LOCAL_STATE = shutil.ignore_patterns(".groove", ".groove-eval-history.json*")
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z")


def readme_sample() -> list[str]:
    """The console block after the README's pitch, without the command and the '...'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```console\n$ pytest --groove-kb kb/ --groove-fail-on-regression\n")[1]
    lines = block.split("```", 1)[0].splitlines()
    return [line for line in lines if line.strip() not in ("...", "")]


def documented_aggregate() -> list[str]:
    """The aggregate block of the first console example of docs/pytest-plugin.md."""
    page = (ROOT / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    example = page.split("```console", 1)[1].split("```", 1)[0].splitlines()
    start = example.index("Aggregate") + 1
    block = example[start : example.index("", start)]
    assert len(block) == 5, block
    return block


#: the other processors' figures docs/pytest-plugin.md names (the default embedder's
#: kernels round differently by CPU, and one query of the example sits on a tie)
OTHER_CPU_LABELS = ("recall@1", "recall@5", "recall@10", "MRR", "nDCG@10")


def other_cpu_aggregate() -> list[str] | None:
    """The aggregate block the page gives for other processors, as lines."""
    page = (ROOT / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    found = dict(re.findall(r"`(recall@\d+|MRR|nDCG@\d+) (\d\.\d{3})`", page))
    if set(found) != set(OTHER_CPU_LABELS):
        return None
    return [f"  {label.ljust(11)}{found[label]}" for label in OTHER_CPU_LABELS]


def test_the_readme_sample_and_the_examples_regression_are_true(
    pytester: pytest.Pytester,
) -> None:
    examples = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert "move `examples/kb/api/caching.md` away" in examples
    kb = pytester.path / "kb"
    shutil.copytree(ROOT / "examples" / "kb", kb, ignore=LOCAL_STATE)
    first = pytester.runpytest("--groove-kb", "kb/")
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    # the default model on the shipped example: every query passes, with the figures
    # docs/pytest-plugin.md shows
    first.assert_outcomes(passed=14)
    first.stdout.fnmatch_lines(["  model: e5-small *queries: 14", "  corpus: 11 docs / * chunks"])
    other_cpu = other_cpu_aggregate()
    assert other_cpu is not None  # the page names the other processors' figures
    documented = "\n".join(["Aggregate", *documented_aggregate()]) in first.stdout.str()
    if not documented:
        first.stdout.fnmatch_lines(["Aggregate", *other_cpu], consecutive=True)
    moved_away = pytester.path / "caching.md"
    (kb / "api" / "caching.md").rename(moved_away)

    broken = pytester.runpytest("--groove-kb", "kb/", "--groove-fail-on-regression")
    assert broken.ret == pytest.ExitCode.TESTS_FAILED  # "the exit status is 1"
    broken.assert_outcomes(passed=12 if documented else 13, failed=2 if documented else 1)
    out = broken.stdout.str()
    # every line of the README's sample, timestamps aside, exactly as printed (on the
    # processors whose figures the docs show)
    for line in readme_sample() if documented else []:
        pattern = re.escape(TIMESTAMP.sub("TS", line)).replace("TS", TIMESTAMP.pattern)
        assert re.search(f"^{pattern}$", out, flags=re.M), line
    assert "FAILED kb/.groove-eval.yml::stale-tracking" in out
    assert "`api/caching.md` removed from the knowledge base since the baseline run" in out

    moved_away.rename(kb / "api" / "caching.md")  # "put the file back: the next run passes"
    restored = pytester.runpytest("--groove-kb", "kb/", "--groove-fail-on-regression")
    assert restored.ret == pytest.ExitCode.OK
