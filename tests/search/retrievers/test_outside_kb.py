"""Hits that name no KB file end the run with one line, never a silent all-zero run.

The setup new users write first, with the real LangChain classes: ``DirectoryLoader``
run from the project folder puts ``kb/ops/...`` in each document's ``source``, which is
relative to the working directory, not to the KB.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain_community.retrievers")
pytest.importorskip("rank_bm25")


GOLDEN = """\
queries:
  - id: rollback
    query: "how do I roll back a bad deploy"
    expected:
      - path: "ops/rollback.md"
  - id: rotate
    query: "how often are tokens rotated"
    expected:
      - path: "api/tokens.md"
  - id: redeploy
    query: "which build do I redeploy"
    expected:
      - path: "ops/rollback.md"
"""

RETRIEVER = """\
from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_community.retrievers import BM25Retriever

docs = DirectoryLoader("kb", glob="**/*.md", loader_cls=TextLoader).load()
retriever = BM25Retriever.from_documents(docs, k=2)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    (kb / "ops").mkdir(parents=True)
    (kb / "api").mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "ops" / "rollback.md").write_text(
        "# Rollback\n\nTo roll back a bad deploy, redeploy the previous build.\n", "utf-8"
    )
    (kb / "api" / "tokens.md").write_text(
        "# Tokens\n\nTokens are rotated every ninety days.\n", "utf-8"
    )
    (tmp_path / "team_search.py").write_text(RETRIEVER, encoding="utf-8")
    return tmp_path


def test_groove_eval_stops_with_one_line_naming_the_fix(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_groove.cli", "eval", "--kb-path", "kb",
         "--retriever", "team_search:retriever", "--fail-on-regression"],
        cwd=project, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, done.stderr
    assert "'kb/ops/rollback.md'" in errors[0] or "'kb/api/tokens.md'" in errors[0]
    assert "relative to the working directory" in errors[0]
    # stopped once the first three queries showed it (the early stop says so)
    assert "in the first 3 queries it answered" in errors[0]
    assert "Traceback" not in done.stderr
    assert not (project / "kb" / ".groove-eval-history.json").exists()


def test_pytest_fails_one_item_skips_the_rest_and_runs_the_other_tests(project: Path) -> None:
    (project / "test_own.py").write_text("def test_own():\n    pass\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--groove-kb", "kb",
         "--groove-retriever", "team_search:retriever", "test_own.py"],
        cwd=project, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output
    # the first two queries miss; the third shows that none can match and stops the
    # golden queries (any later one is skipped with its line), not the project's tests
    assert "3 failed" in output and "relative to the working directory" in output
    assert "1 passed" in output  # test_own.py ran
    assert "in the first 3 queries it answered" in output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert not (project / "kb" / ".groove-eval-history.json").exists()
