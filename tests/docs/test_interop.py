"""Every example of docs/interop.md runs: the shell commands (``--model hash`` added to
``groove eval`` for speed) and the Python snippets, in one folder as a user would."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT
from pytest_groove.evaluation.golden.file import load_golden
from tests.helpers.cli_invoke import Groove
from tests.interop.test_beir import write_dataset

ROOT = REPO_ROOT
DOC = ROOT / "docs" / "interop.md"
KB_EVAL = ROOT / "tests" / "corpora" / "kb-eval"
KB_EVAL_GOLDEN = ROOT / "tests" / "corpora" / "kb-eval-golden.yml"


def blocks(language: str) -> list[str]:
    pattern = re.compile(rf"^```{language}\n(.*?)^```$", re.MULTILINE | re.DOTALL)
    return pattern.findall(DOC.read_text(encoding="utf-8"))


def run_shell(groove: Groove, block: str) -> str:
    """Each ``groove`` line of ``block`` in-process; their standard output."""
    out = io.StringIO()
    for line in block.splitlines():
        argv = shlex.split(line)
        assert argv[0] == "groove", f"docs/interop.md runs only groove: {line!r}"
        if argv[1] == "eval":
            argv += ["--model", "hash"]
        done = groove(*argv[1:])
        assert done.returncode == 0, line
        out.write(done.stdout)
    return out.getvalue()


def run_python(block: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {})
    return out.getvalue()


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, groove: Groove) -> str:
    """The export example run in a folder holding ``kb`` (kb-eval and its golden file)."""
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    shutil.copy(KB_EVAL_GOLDEN, kb / ".groove-eval.yml")
    monkeypatch.chdir(tmp_path)
    export = [b for b in blocks("sh") if "--trec-run" in b]
    assert len(export) == 1
    report = run_shell(groove, export[0])
    assert Path("run.trec").is_file() and Path("qrels.trec").is_file()
    match = re.search(r"nDCG@10\s+(\d\.\d{3})", report)
    assert match, report
    return match.group(1)


def test_the_sample_lines_are_what_the_export_writes(exported: str) -> None:
    (sample,) = [b for b in blocks("text") if b.startswith("$ head")]
    shown: dict[str, list[str]] = {}
    for line in sample.splitlines():
        if line.startswith("$ head"):
            _dollar, _head, count, name = line.split()
            shown[name] = []
            assert int(count[1:]) > 0
        else:
            shown[name].append(line)
    for name, lines in shown.items():
        assert Path(name).read_text(encoding="utf-8").splitlines()[: len(lines)] == lines


def _snippet(library: str, marker: str = "ndcg") -> str:
    (found,) = [
        b
        for b in blocks("python")
        if (f"import {library}" in b or f"from {library}" in b) and marker in b
    ]
    return found


def test_the_pytrec_eval_example_prints_our_ndcg(exported: str) -> None:
    assert run_python(_snippet("pytrec_eval")) == f"nDCG@10 {exported}\n"


@pytest.mark.slow
def test_the_ranx_example_prints_our_ndcg(exported: str) -> None:
    pytest.importorskip("ranx")
    assert run_python(_snippet("ranx")) == f"nDCG@10 {exported}\n"


@pytest.fixture
def more_metrics(exported: str, groove: Groove) -> str:
    """The ``--metrics`` example's report lines for the four metrics, as the snippets print."""
    (block,) = [b for b in blocks("sh") if "--metrics" in b]
    report = run_shell(groove, block)
    lines = []
    for label in ("P@10", "success@10", "MAP", "R-prec"):
        match = re.search(rf"^  {re.escape(label)}\s+(\d\.\d{{3}})$", report, re.MULTILINE)
        assert match, report
        lines.append(f"{label} {match.group(1)}\n")
    return "".join(lines)


def test_the_graded_golden_example_loads(tmp_path: Path) -> None:
    (sample,) = [b for b in blocks("yaml") if "grade:" in b]
    data = yaml.safe_load(sample)
    for entry in data["queries"][0]["expected"]:
        (tmp_path / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / entry["path"]).write_text("# note\n", encoding="utf-8")
    (tmp_path / ".groove-eval.yml").write_text(sample, encoding="utf-8")
    golden = load_golden(tmp_path / ".groove-eval.yml", tmp_path)
    assert [e.grade for e in golden.queries[0].expected] == [3, 1, 0]


def test_the_pytrec_eval_example_prints_our_new_metrics(more_metrics: str) -> None:
    assert run_python(_snippet("pytrec_eval", "Rprec")) == more_metrics


@pytest.mark.slow
def test_the_ranx_example_prints_our_new_metrics(more_metrics: str) -> None:
    pytest.importorskip("ranx")
    assert run_python(_snippet("ranx", "r-precision")) == more_metrics


def test_the_beir_example_imports_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, groove: Groove
) -> None:
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "scifact")
    (block,) = [b for b in blocks("sh") if "import beir" in b]
    out = run_shell(groove, block)
    assert "golden query(ies)" in out
    assert re.search(r"recall@10\s+1\.000", out), out
