"""A report file never replaces what the run reads: golden file, history, config, notes.

Through both doors: ``groove eval`` in-process, ``pytest --groove-kb`` with pytester.
Every refusal comes before any index work, and leaves every file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import invoke

pytest_plugins = ["pytester"]

#: a report target, relative to the KB, and the words the refusal must hold
REFUSED = [
    ("--trec-qrels", ".groove-eval.yml", "is the golden file this run reads"),
    ("--html", ".groove-eval.yml", "is the golden file this run reads"),
    ("--trec-run", ".groove-eval-history.json", "is the run history"),
    ("--html", ".groove-baseline.json", "is the accepted baseline"),
    ("--trec-run", "groove.toml", "is where the knowledge base's config is read from"),
    ("--trec-run", "ops/rollback.md", "is a note of the knowledge base (a .md file in it)"),
    ("--trec-run", "ops/new-page.md", "is a note of the knowledge base (a .md file in it)"),
    ("--trec-run", "NOTES.MD", "is a note of the knowledge base (a .md file in it)"),
    ("--trec-run", ".groove/run.txt", "is pytest-groove's own file .groove/run.txt"),
    ("--trec-qrels", ".grooveignore", "is pytest-groove's own file .grooveignore"),
]


def _files(kb: Path) -> dict[str, bytes]:
    return {
        p.relative_to(kb).as_posix(): p.read_bytes() for p in sorted(kb.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize(("option", "target", "words"), REFUSED)
def test_groove_eval_refuses_a_report_over_an_input(
    example_kb_copy: Path, option: str, target: str, words: str
) -> None:
    kb = example_kb_copy
    (kb / ".groove-eval-history.json").write_text('{"format": 2, "runs": []}', encoding="utf-8")
    before = _files(kb)
    run = invoke("eval", "--kb-path", kb, "--model", "hash", option, kb / target)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1
    assert f"error: {option} {kb / target} {words}" in run.stderr
    assert "name another file for the report" in run.stderr
    assert _files(kb) == before  # nothing written, no index built
    assert not (kb / ".groove").exists()


def test_a_config_named_with_config_and_two_reports_in_one_file_are_refused(
    example_kb_copy: Path, tmp_path: Path
) -> None:
    kb = example_kb_copy
    config = tmp_path / "ci.toml"
    config.write_text("[eval]\nk_values = [1, 5]\n", encoding="utf-8")
    run = invoke("eval", "--kb-path", kb, "--model", "hash", "--config", config,
                 "--html", config)  # fmt: skip
    assert (run.returncode, config.read_text(encoding="utf-8")) == (
        2,
        "[eval]\nk_values = [1, 5]\n",
    )
    assert "is the config this run reads: the report would overwrite it" in run.stderr
    both = tmp_path / "out.txt"
    run = invoke("eval", "--kb-path", kb, "--model", "hash", "--no-history",
                 "--trec-run", both, "--trec-qrels", both)  # fmt: skip
    assert run.returncode == 2
    assert "is also the --trec-run file: one report would replace the other" in run.stderr
    assert not both.exists()


def test_a_second_name_of_the_golden_file_is_the_golden_file(
    example_kb_copy: Path, tmp_path: Path
) -> None:
    kb = example_kb_copy
    golden = tmp_path / "golden.yml"
    golden.write_bytes((kb / ".groove-eval.yml").read_bytes())
    link = tmp_path / "reports" / "golden-link.yml"
    link.parent.mkdir()
    os.symlink(golden, link)
    run = invoke("eval", "--kb-path", kb, "--model", "hash", "--golden", golden,
                 "--trec-qrels", link)  # fmt: skip
    assert run.returncode == 2
    assert "is the golden file this run reads" in run.stderr
    assert golden.read_bytes() == (kb / ".groove-eval.yml").read_bytes()


def test_reports_beside_the_notes_or_outside_the_kb_are_written(
    example_kb_copy: Path, tmp_path: Path
) -> None:
    kb = example_kb_copy
    run = invoke("eval", "--kb-path", kb, "--model", "hash", "--no-history",
                 "--trec-run", kb / "run.txt", "--trec-qrels", tmp_path / "qrels.txt")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (kb / "run.txt").is_file() and (tmp_path / "qrels.txt").is_file()


def test_the_plugin_refuses_a_report_over_the_golden_file(
    pytester: pytest.Pytester, example_kb_copy: Path
) -> None:
    kb = example_kb_copy
    before = _files(kb)
    result = pytester.runpytest(
        "--groove-kb", str(kb), "--groove-model", "hash", "--groove-json",
        str(kb / ".groove-eval.yml"),
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --groove-json *.groove-eval.yml is the golden file this run reads*"]
    )
    assert _files(kb) == before
