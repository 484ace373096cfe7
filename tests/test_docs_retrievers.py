"""Every example in docs/retrievers.md runs as written.

Each ``python`` block that starts with ``# <file>.py`` is written to a project folder
beside a copy of the example KB; each command block is then run there (``groove`` as
``python -m pytest_groove.cli``, ``pytest`` as ``python -m pytest``), and must end
without a traceback, with the retriever named in the output.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
    shutil.copytree(
        EXAMPLE_KB, root / "kb", ignore=shutil.ignore_patterns(".groove", ".groove-eval-history*")
    )
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
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [*argv, *extra], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def test_the_doc_has_every_kind_of_example() -> None:
    assert set(example_files()) >= {
        "langchain_search.py",
        "llamaindex_search.py",
        "plain_search.py",
        "search_service.py",
        "conftest.py",
    }


def _needs(spec: str) -> None:
    if "langchain" in spec:
        pytest.importorskip("langchain_core")
    if "llamaindex" in spec:
        pytest.importorskip("llama_index.core")


@pytest.mark.parametrize(
    "command", [c for c in commands() if "http://" not in c and c != "pytest --groove-kb kb"]
)
def test_each_command_runs_as_written(project: Path, command: str) -> None:
    _needs(command)
    done = run(command, project)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    # the report names the retriever: its groove_name, else the spec
    spec = command.split("retriever", 1)[1].split()[0]
    assert spec in output or "plain-keyword-v1" in output, output
    if command.startswith("groove"):
        assert done.returncode == 0, output
    else:
        # some golden queries may miss with a toy retriever: failed items, not errors
        assert done.returncode in (0, 1), output
        assert "custom retriever" in output


@pytest.fixture
def service(project: Path) -> Iterator[str]:
    sys.path.insert(0, str(project))
    cwd = os.getcwd()
    os.chdir(project)  # the example reads kb/ relative to where it runs
    try:
        module = importlib.import_module("search_service")
        server = module.make_server(0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
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
    pytest.importorskip("langchain_core")
    hooked = tmp_path / "hooked"
    shutil.copytree(project, hooked)
    (hooked / "conftest.py").write_text(example_files()["conftest.py"], encoding="utf-8")
    done = run("pytest --groove-kb kb", hooked)
    output = done.stdout + done.stderr
    assert done.returncode in (0, 1), output
    assert "custom retriever" in output and "Traceback" not in output
