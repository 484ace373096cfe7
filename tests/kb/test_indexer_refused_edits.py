"""An edit that makes a note unindexable scores the same with a cached index as in a
clean checkout: the cached rows of a file whose own bytes are now refused are dropped
(a fresh index would not have them), so the gate's verdict never depends on whether CI
restored ``<kb>/.groove/``. Files that only failed to *read* keep their rows."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import EXAMPLE_KB
from pytest_groove.cli import main
from tests.helpers.cli_invoke import invoke

NOTE = "api/caching.md"
#: the one note no golden query expects: the eval runs and reports its corpus
UNEXPECTED = "README.md"


def not_utf8(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(b"caf\xe9\n")


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def only_frontmatter(path: Path) -> None:
    path.write_text("---\ntitle: Caching\n---\n", encoding="utf-8")


def over_the_size_cap(path: Path) -> None:
    os.truncate(path, 51 * 1024 * 1024)  # sparse: no 51 MiB written


def hard_linked(path: Path) -> None:
    os.link(
        path, path.parent.parent / f"{path.parent.name}-{path.name}.copy"
    )  # a second name, outside the KB


def eval_json(kb: Path, *args: str) -> dict[str, object]:
    done = invoke("eval", "--kb-path", kb, "--model", "hash", "--format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


@pytest.mark.parametrize(
    "refuse", [not_utf8, emptied, only_frontmatter, over_the_size_cap, hard_linked]
)
def test_a_cached_index_scores_a_refused_note_as_a_clean_checkout_does(
    tmp_path: Path, refuse: Callable[[Path], None]
) -> None:
    cached = tmp_path / "cached"
    shutil.copytree(EXAMPLE_KB, cached, ignore=shutil.ignore_patterns(".groove"))
    eval_json(cached, "--no-history")  # the index holds the note
    clean = tmp_path / "clean"
    shutil.copytree(cached, clean, ignore=shutil.ignore_patterns(".groove"))
    refuse(cached / UNEXPECTED)
    refuse(clean / UNEXPECTED)  # the same tree, checked out without the index
    warm = eval_json(cached, "--no-history")
    fresh = eval_json(clean, "--no-history")
    assert warm["corpus"] == fresh["corpus"]
    assert warm["aggregate"] == fresh["aggregate"]
    assert warm["corpus"]["documents"] == 10  # type: ignore[index]
    # the digest covers every chunk: the old text is gone from the cached index
    assert warm["corpus"]["digest"] == fresh["corpus"]["digest"]  # type: ignore[index]


def test_an_answer_refused_since_the_baseline_fails_the_gate_with_a_cached_index(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(EXAMPLE_KB, kb, ignore=shutil.ignore_patterns(".groove"))
    assert main(["eval", "--kb-path", str(kb), "--model", "hash"]) == 0
    not_utf8(kb / NOTE)
    capfd.readouterr()
    assert main(["eval", "--kb-path", str(kb), "--model", "hash", "--fail-on-regression"]) == 1
    err = capfd.readouterr().err
    assert f"answer of stale-tracking no longer indexed ({NOTE})" in err
