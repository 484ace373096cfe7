"""A named retriever under pytest-xdist is built where it searches, once per process.

The controller never searches, so it never imports the retriever's module: a retriever
that holds a lock on its store (Qdrant's local path mode) is then opened by the
workers alone.  Each process records that it imported the module.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import copy_example_kb

GOLDEN = """\
queries:
  - id: ship
    query: "which days do we ship"
    expected:
      - path: "deploys.md"
  - id: rotate
    query: "how are tokens rotated"
    expected:
      - path: "tokens.md"
"""

RETRIEVER = """\
import os, pathlib

with open(pathlib.Path(__file__).parent / "imports.txt", "a") as log:
    log.write(f"{os.getpid()}\\n")

ANSWERS = {"which days do we ship": "deploys.md", "how are tokens rotated": "tokens.md"}


def search(query, limit):
    return [{"path": ANSWERS[query], "heading": None, "score": 1.0}]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "deploys.md").write_text("# Deploys\n\nWe ship on Tuesdays.\n", encoding="utf-8")
    (kb / "tokens.md").write_text("# Tokens\n\nRotated every quarter.\n", encoding="utf-8")
    (pytester.path / "team_search.py").write_text(RETRIEVER, encoding="utf-8")
    return pytester


def _importers(project: pytest.Pytester) -> list[str]:
    log = project.path / "imports.txt"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_a_named_retriever_is_built_by_the_workers_only(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search",
        "--groove-retriever-name", "team-search", "-n", "2", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    importers = _importers(project)
    # one import per worker that searched (xdist may hand both items to one worker),
    # never one in the controller
    assert 1 <= len(importers) <= 2 and len(set(importers)) == len(importers)
    assert str(os.getpid()) not in importers
    history = (project.path / "kb" / ".groove-eval-history.json").read_text("utf-8")
    assert "team-search" in history


def test_a_named_retriever_in_one_process_is_built_once(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search",
        "--groove-retriever-name", "team-search", "-p", "no:cacheprovider",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    assert len(_importers(project)) == 1


def test_the_kb_files_are_the_ground_truth_for_a_named_retriever(
    project: pytest.Pytester,
) -> None:
    (project.path / "kb" / "tokens.md").unlink()
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search",
        "--groove-retriever-name", "team-search", "-n", "2", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected path `tokens.md` is not in the knowledge base*"])
    assert _importers(project) == []  # refused before anything was built
    assert not Path(project.path / "kb" / ".groove-eval-history.json").exists()


# --------------------------------------------------------------------------- unnamed


NAMED_BY_ITSELF = (
    RETRIEVER
    + """
search.groove_name = "team-v7"
with open(pathlib.Path(__file__).parent / "roles.txt", "a") as log:
    log.write(os.environ.get("PYTEST_XDIST_WORKER", "not-a-worker") + "\\n")
"""
)


def _roles(project: pytest.Pytester) -> list[str]:
    log = project.path / "roles.txt"
    return log.read_text(encoding="utf-8").split() if log.exists() else []


def test_an_unnamed_retriever_is_built_by_the_workers_only_under_its_own_name(
    project: pytest.Pytester,
) -> None:
    """Its name (here its ``groove_name``) is learnt only by importing it: the workers
    do, and the controller records the run under the name they report -- the one a
    single process records, so the two runs compare."""
    (project.path / "team_search.py").write_text(NAMED_BY_ITSELF, encoding="utf-8")
    args = ("--groove-kb", "kb", "--groove-retriever", "team_search:search",
            "-p", "no:cacheprovider")  # fmt: skip
    project.runpytest_subprocess(*args).assert_outcomes(passed=2)
    assert len(_importers(project)) == 1
    (project.path / "imports.txt").unlink()
    (project.path / "roles.txt").unlink()
    result = project.runpytest_subprocess(*args, "-n", "2")
    result.assert_outcomes(passed=2)
    importers = _importers(project)
    # one import per worker that searched, never one in the controller
    assert 1 <= len(importers) <= 2 and len(set(importers)) == len(importers)
    assert set(_roles(project)) <= {"gw0", "gw1"}, _roles(project)
    # compared with the single process's run: same retriever, same fingerprint
    result.stdout.fnmatch_lines(["Aggregate (previous run: *)"])
    history = (project.path / "kb" / ".groove-eval-history.json").read_text("utf-8")
    assert history.count('"team-v7"') == 2 and "team_search:search" not in history


def test_an_unnamed_retriever_a_worker_cannot_begin_with_is_one_error_line(
    project: pytest.Pytester,
) -> None:
    (project.path / "team_search.py").write_text(NAMED_BY_ITSELF, encoding="utf-8")
    (project.path / "kb" / "tokens.md").unlink()
    result = project.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search",
        "-n", "2", "-p", "no:cacheprovider",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "expected path `tokens.md`" in errors[0], errors
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert set(_roles(project)) <= {"gw0", "gw1"} and _roles(project), _roles(project)
    assert not Path(project.path / "kb" / ".groove-eval-history.json").exists()


# --------------------------------------------------------------------------- the workers' warnings


#: the real LangChain classes: an in-memory store's retriever (k = 4 by default), whose
#: documents carry a breadcrumb where the heading goes (in one note) and no usable score
LANGCHAIN_STORE = """\
import pathlib

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

kb = pathlib.Path(__file__).parent / "kb"
docs = []
for path in sorted(kb.rglob("*.md")):
    source = path.relative_to(kb).as_posix()
    meta = {"source": source, "score": float("nan")}
    if source == "api/authentication.md":
        meta["heading"] = "Doc title / Rotating a token"
    docs.append(Document(page_content=path.read_text("utf-8"), metadata=meta))
store = InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=64))
retriever = store.as_retriever()
"""


def _warnings(result: pytest.RunResult) -> list[str]:
    return sorted(line for line in result.stderr.lines if line.startswith("groove: warning:"))


def test_the_workers_warnings_and_depth_advice_reach_the_end_of_the_run(
    pytester: pytest.Pytester,
) -> None:
    """Under -n the controller, which never builds a named retriever, warns and advises
    as one process does: the heading and NaN-score warnings its searches gave, and the
    LangChain advice (search_kwargs) for its shallow k, not the one for a callable."""
    pytest.importorskip("langchain_core")
    copy_example_kb(pytester.path / "kb")
    (pytester.path / "store_search.py").write_text(LANGCHAIN_STORE, encoding="utf-8")
    args = ("--groove-kb", "kb", "--groove-retriever", "store_search:retriever",
            "--groove-retriever-name", "store-v1", "--groove-no-history",
            "-p", "no:cacheprovider")  # fmt: skip
    one = _warnings(pytester.runpytest_subprocess(*args))
    assert any("returned heading 'Doc title / Rotating a token'" in line for line in one)
    assert any("NaN" in line for line in one)
    assert any("as_retriever(search_kwargs={'k': 10})" in line for line in one)
    assert _warnings(pytester.runpytest_subprocess(*args, "-n", "2")) == one
