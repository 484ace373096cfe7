"""A run whose report file cannot be written is not recorded.

Writing the JSON, HTML or TREC files comes before the history is committed, so a CI job
whose artefact path is full or wrong fails with one line, and its retry does not
record the same run twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from tests.helpers.cli_invoke import invoke

pytest_plugins = ["pytester"]

FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


def _stored(kb: Path) -> int:
    text = (kb / HISTORY_FILE_NAME).read_text("utf-8")
    return sum(1 for line in text.splitlines() if line.startswith('{"timestamp"'))


@needs_dev_full
@pytest.mark.parametrize(
    ("option", "what"),
    [
        ("--html", "HTML report"),
        ("--trec-run", "TREC run file"),
        ("--trec-qrels", "TREC qrels file"),
    ],
)
def test_the_cli_records_nothing_when_a_report_fails(
    example_kb_copy: Path, option: str, what: str
) -> None:
    kb = example_kb_copy
    assert invoke("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    assert _stored(kb) == 1
    run = invoke("eval", "--kb-path", kb, "--model", "hash", option, FULL)
    assert run.returncode == 1
    assert f"Error: could not write the {what} {FULL}: No space left on device" in run.stderr
    assert _stored(kb) == 1  # the retry after fixing the path records it once


@needs_dev_full
@pytest.mark.parametrize(
    # one report in the default run (a pytester session each); the others, the same path
    # through the plugin's report writer, in the slow one
    "option",
    [
        "--groove-json",
        pytest.param("--groove-html", marks=pytest.mark.slow),
        pytest.param("--groove-trec-run", marks=pytest.mark.slow),
    ],
)
def test_the_plugin_records_nothing_when_a_report_fails(
    pytester: pytest.Pytester, example_kb_copy: Path, option: str
) -> None:
    kb = example_kb_copy
    common = ("--groove-kb", str(kb), "--groove-model", "hash", "-p", "no:cacheprovider")
    pytester.runpytest(*common)
    assert _stored(kb) == 1
    result = pytester.runpytest(*common, option, str(FULL))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert _stored(kb) == 1
    # the retry, with a path that can be written, records the run and says so
    pytester.runpytest(*common, "--groove-json", "r.json")
    assert _stored(kb) == 2
    assert json.loads((pytester.path / "r.json").read_text("utf-8"))["recorded"] is True
