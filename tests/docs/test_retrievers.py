"""Every example in docs/retrievers.md runs as written.

Each ``python`` block that starts with ``# <file>.py`` is written to a project folder
beside a copy of the example KB; each command block is then run there (``groove`` as
``python -m pytest_groove.cli``, ``pytest`` as ``python -m pytest``), and must end
without a traceback, with the retriever named in the output.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT, copy_example_kb

ROOT = REPO_ROOT
DOC = ROOT / "docs" / "retrievers.md"
EXAMPLE_KB = ROOT / "examples" / "kb"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(DOC.read_text("utf-8")) if lang == language]


def example_files() -> dict[str, str]:
    files = {}
    for body in blocks("python"):
        first = body.splitlines()[0]
        if first.startswith("# ") and first.endswith(".py"):
            files[first[2:]] = body
    return files


def commands() -> list[str]:
    """The command lines of the examples (the introduction's ``my_search`` is a placeholder)."""
    found = []
    for body in blocks("text"):
        for line in body.splitlines():
            if line.startswith(("groove ", "pytest ")) and "my_search" not in line:
                found.append(line)
    return found


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("retrievers")
    copy_example_kb(root / "kb")
    for name, body in example_files().items():
        if name != "conftest.py":  # the hook example gets its own run
            (root / name).write_text(body, encoding="utf-8")
    return root


def run(command: str, cwd: Path, extra: list[str] = ()) -> subprocess.CompletedProcess[str]:  # type: ignore[assignment]
    words = command.split()
    if words[0] == "groove":
        argv = [sys.executable, "-m", "pytest_groove.cli", *words[1:]]
    else:
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[1:]]
    # the project first (its example modules), then this checkout of pytest-groove
    # with every installed pytest plugin (the suite keeps some out of its inner runs)
    env = {
        **{key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"},
        "PYTHONPATH": os.pathsep.join([str(cwd), str(ROOT)]),
    }
    return subprocess.run(
        [*argv, *extra], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def test_the_doc_has_every_kind_of_example() -> None:
    assert set(example_files()) >= {
        "langchain_search.py",
        "llamaindex_search.py",
        "toy_pipeline.py",
        "qdrant_search.py",
        "chroma_search.py",
        "haystack_search.py",
        "plain_search.py",
        "search_service.py",
        "conftest.py",
    }


#: what each example needs installed, by the module its spec names
NEEDS = {
    "langchain_search": ("langchain_community", "langchain_text_splitters", "rank_bm25"),
    "llamaindex_search": ("llama_index.core",),
    "qdrant_search": ("qdrant_client",),
    "chroma_search": ("chromadb",),
    "haystack_search": ("haystack",),
}
#: the examples that split the notes at their headings, so heading-pinned entries match
SECTIONED = (
    "langchain_search",
    "llamaindex_search",
    "qdrant_search",
    "chroma_search",
    "haystack_search",
)


def _needs(command: str) -> None:
    for module, packages in NEEDS.items():
        if f"{module}:" in command:
            for package in packages:
                pytest.importorskip(package)


def _expected_name(command: str) -> str:
    """The name the report must show: the name option's value, else the spec."""
    words = command.split()
    for flag in ("--retriever-name", "--groove-retriever-name"):
        if flag in words:
            return words[words.index(flag) + 1]
    spec = command.split("retriever", 1)[1].split()[0]
    return "plain-keyword-v1" if spec == "plain_search:search" else spec


def _run_with_json(
    command: str, project: Path, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """Run ``command`` as written, plus the flag that also writes its JSON report."""
    if command.startswith("groove"):
        done = run(command, project, ["--format", "json"])
        report = json.loads(done.stdout) if done.returncode == 0 else None
        return done, report
    target = tmp_path / "report.json"
    done = run(command, project, ["--groove-json", str(target)])
    return done, json.loads(target.read_text("utf-8")) if target.exists() else None


def _pinned_entries_found(report: dict[str, Any]) -> list[str]:
    """Ids of the queries whose heading-pinned entry is among the hits, heading and all."""
    found = []
    for query in report["per_query"]:
        pinned = {(e["path"], e["heading"].lower()) for e in query["expected"] if e["heading"]}
        hits = {(h["path"], (h["heading"] or "").lower()) for h in query["top_k"]}
        if pinned & hits:
            found.append(query["id"])
    return found


def _as_written(command: str) -> Any:
    # LlamaIndex's and Qdrant's imports cost seconds: their doc commands run in the slow
    # run, the libraries themselves in the default one (tests/search/retrievers/test_libraries.py)
    heavy = any(f"{module}:" in command for module in ("llamaindex_search", "qdrant_search"))
    return pytest.param(command, marks=pytest.mark.slow) if heavy else command


@pytest.mark.parametrize(
    "command",
    [_as_written(c) for c in commands() if "http://" not in c and c != "pytest --groove-kb kb"],
)
def test_each_command_runs_as_written(project: Path, command: str, tmp_path: Path) -> None:
    _needs(command)
    done, report = _run_with_json(command, project, tmp_path)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert report is not None, output
    # the report names the retriever
    assert report["fingerprint"]["retriever"] == _expected_name(command)
    if command.startswith("groove"):
        assert done.returncode == 0, output
    else:
        # some golden queries may miss with a toy retriever: failed items, not errors
        assert done.returncode in (0, 1), output
        assert "custom retriever" in output
    if any(f"{module}:" in command for module in SECTIONED):
        # the hits carry their section's heading, so heading-pinned entries can match
        assert _pinned_entries_found(report), report["per_query"]


@pytest.fixture
def service(project: Path) -> Iterator[str]:
    sys.path.insert(0, str(project))
    cwd = os.getcwd()
    os.chdir(project)  # the example reads kb/ relative to where it runs
    try:
        module = importlib.import_module("search_service")
        server = module.make_server(0)
        thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
        thread.start()
        host, port = server.server_address[:2]
        yield f"http://{host}:{port}/search"
        server.shutdown()
        server.server_close()
    finally:
        os.chdir(cwd)
        sys.path.remove(str(project))
        for name in ("search_service", "plain_search"):
            sys.modules.pop(name, None)


def test_the_http_example_serves_groove_eval(project: Path, service: str) -> None:
    (command,) = [c for c in commands() if "http://" in c]
    done = run(command.replace("http://127.0.0.1:8765/search", service), project)
    assert done.returncode == 0, done.stderr
    assert service in done.stdout  # the URL names the retriever in the report


def test_the_conftest_hook_example(project: Path, tmp_path: Path) -> None:
    _needs("langchain_search:")
    hooked = tmp_path / "hooked"
    shutil.copytree(project, hooked)
    (hooked / "conftest.py").write_text(example_files()["conftest.py"], encoding="utf-8")
    done = run("pytest --groove-kb kb", hooked)
    output = done.stdout + done.stderr
    assert done.returncode in (0, 1), output
    assert "custom retriever" in output and "Traceback" not in output


@pytest.mark.parametrize(
    "spec", ["langchain_search:retriever", "plain_search:search"], ids=["langchain", "plain"]
)
def test_an_example_named_in_the_ini_runs_from_a_subfolder(
    project: Path, tmp_path: Path, spec: str
) -> None:
    """The advertised ``cd tests && pytest``: the ini beside the KB names the KB and the
    retriever, pytest runs in a subfolder, and the example still reads the KB's notes
    (it read ``Path("kb")`` relative to the working directory: LangChain's BM25Retriever
    got no document, ``plain_search`` no hit)."""
    _needs(spec)
    root = tmp_path / "project"
    shutil.copytree(project, root)
    (root / "pytest.ini").write_text(
        f"[pytest]\ngroove_kb = kb\ngroove_retriever = {spec}\n", encoding="utf-8"
    )
    (root / "tests").mkdir()
    report = tmp_path / "report.json"
    done = run("pytest", root / "tests", ["--groove-no-history", "--groove-json", str(report)])
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "ERROR:" not in output, output
    assert done.returncode in (0, 1), output  # a toy retriever may miss some queries
    hits = [hit for query in json.loads(report.read_text("utf-8"))["per_query"]
            for hit in query["top_k"]]  # fmt: skip
    assert hits and all(not hit["path"].startswith("kb/") for hit in hits)
