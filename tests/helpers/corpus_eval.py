"""Run `groove eval` over a copy of one of ``tests/corpora/`` and read its JSON report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT
from tests.helpers.cli_invoke import Groove

CORPORA = REPO_ROOT / "tests" / "corpora"


def eval_corpus(
    groove: Groove, tmp_path: Path, name: str, k: str, timeout: float
) -> dict[str, Any]:
    """The JSON report of the default pipeline over ``tests/corpora/<name>`` and its
    ``<name>-golden.yml``, with no history (a copy of the corpus: the index is kept
    in it)."""
    kb = tmp_path / "kb"
    shutil.copytree(CORPORA / name, kb)
    out = groove.process(
        "eval", "--kb-path", kb, "--golden", CORPORA / f"{name}-golden.yml",
        "--format", "json", "--no-history", "--k", k, timeout=timeout,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def single_and_multi(report: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The report's per-query rows with one expected answer, and with several."""
    rows = report["per_query"]
    return [r for r in rows if len(r["expected"]) == 1], [r for r in rows if len(r["expected"]) > 1]
