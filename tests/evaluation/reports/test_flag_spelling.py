"""Report objects name options the way their door spells them.

The library names an option inside a message by a token the door spells
(``--threshold`` for ``groove``, ``--groove-threshold`` under pytest).  A string of
the JSON report that is made of such a message (a loosened gate's source) once went
out with the token's invisible separators in it; these tests read every report file
both doors write for a run whose gate was loosened.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import invoke

pytest_plugins = ["pytester"]

#: the separator of a flag token (pytest_groove.errors); never in anything written
TOKEN_MARK = "\u2063"


def _sources(report: dict[str, object]) -> list[object]:
    loosened = report["gate_loosened"]
    assert isinstance(loosened, list)
    return [item["source"] for item in loosened]


def test_the_cli_spells_a_loosened_gate_source_in_every_report(example_kb_copy: Path) -> None:
    kb, out = example_kb_copy, example_kb_copy.parent
    assert invoke("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    run = invoke(
        "eval",
        "--kb-path", kb, "--model", "hash", "--threshold", "0.5",
        "--format", "json", "--html", out / "r.html",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    written = [run.stdout, run.stderr, (out / "r.html").read_text("utf-8")]
    assert not [text[:80] for text in written if TOKEN_MARK in text]
    assert _sources(json.loads(run.stdout)) == ["--threshold on the command line"]


def test_the_plugin_spells_it_as_pytest_does(
    pytester: pytest.Pytester, example_kb_copy: Path
) -> None:
    kb = example_kb_copy
    common = ("--groove-kb", str(kb), "--groove-model", "hash", "-p", "no:cacheprovider")
    # the hash model misses two of the example's queries: failed items, not an error
    assert pytester.runpytest(*common).ret == pytest.ExitCode.TESTS_FAILED
    result = pytester.runpytest(*common, "--groove-threshold", "0.5", "--groove-json", "r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    text = (pytester.path / "r.json").read_text("utf-8")
    assert TOKEN_MARK not in text and TOKEN_MARK not in result.stdout.str()
    assert _sources(json.loads(text)) == ["--groove-threshold on the command line"]
