"""A team's retriever written as a module of the test's own, and ``groove eval`` runs
(in-process) that measure it: what tests/search/retrievers/ and tests/kb/source/ share."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_invoke import CliRun, invoke


def retriever_module(tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A retriever module in ``tmp_path`` under a name no other test imported."""
    name = f"team_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def importable_module(
    tmp_path: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``source`` as the module ``name`` in ``tmp_path``, on this process's path and
    imported afresh (a subprocess run from ``tmp_path`` finds it there too)."""
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def qdrant_in_memory(
    points: Sequence[tuple[list[float], dict[str, object]]], *, first_id: int = 0
) -> Any:
    """A Qdrant client in memory whose collection ``kb`` (two dimensions, cosine) holds a
    point for each ``(vector, payload)``, numbered from ``first_id``; the test is skipped
    where qdrant_client is not installed."""
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "kb", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client.upsert(
        "kb",
        points=[
            models.PointStruct(id=n, vector=vector, payload=payload)
            for n, (vector, payload) in enumerate(points, start=first_id)
        ],
    )
    return client


def eval_retriever(kb: Path, cwd: Path, spec: str, *args: str) -> CliRun:
    """``groove eval`` of the retriever ``spec`` on ``kb``, run from ``cwd``, unrecorded."""
    return invoke("eval", "--kb-path", kb, "--retriever", spec, "--no-history", *args, cwd=cwd)


def warnings_of(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("groove eval: warning:")]


def errors_of(done: CliRun) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


def report_of(done: CliRun) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


#: a callable over the golden file: each query answered with its expected entries
#: (path and heading), except the queries ODD names, answered with other notes
ANSWERS = """\
import yaml

CALLS = []
GOLDEN = yaml.safe_load(open({golden!r}, encoding="utf-8"))["queries"]
ANSWER = {{q["query"]: q["expected"] for q in GOLDEN}}
ODD = {odd!r}
OUTSIDE = {outside!r}


def search(query, limit):
    CALLS.append(query)
    if query in ODD:
        # as many hits as the KB's answer would have
        expected = enumerate(ANSWER[query])
        return [{{"path": OUTSIDE.format(n=n, path=e["path"])}} for n, e in expected]
    return [{{"path": e["path"], "heading": e.get("heading"), "score": 1.0}} for e in ANSWER[query]]
"""


def golden_of(kb: Path) -> list[dict[str, Any]]:
    import yaml

    queries: list[dict[str, Any]] = yaml.safe_load(
        (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    )["queries"]
    return queries


def query_id(query: dict[str, Any]) -> str:
    """A golden query's id: its own, else the first 32 code points of its text."""
    return str(query.get("id", query["query"][:32]))


def answers_module(kb: Path, odd: list[str], outside: str = "legacy/note-{n}.md") -> str:
    """The module: ``odd`` queries answered with ``outside`` paths (``{n}`` the hit's
    place, ``{path}`` the expected entry's path), the others with their entries."""
    return ANSWERS.format(golden=str(kb / ".groove-eval.yml"), odd=odd, outside=outside)


#: LlamaIndex over the folder {kb}: MarkdownNodeParser nodes ranked by shared words
KEYWORD_NODES = """\
from llama_index.core import Settings, SimpleDirectoryReader
from llama_index.core.node_parser import MarkdownNodeParser
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore

Settings.llm = None
documents = SimpleDirectoryReader({kb!r}, recursive=True, required_exts=[".md"]).load_data()
NODES = MarkdownNodeParser().get_nodes_from_documents(documents)


class Keywords(BaseRetriever):
    def _retrieve(self, bundle):
        words = set(bundle.query_str.lower().split())
        scored = [
            NodeWithScore(node=n, score=float(len(words & set(n.text.lower().split()))))
            for n in NODES
        ]
        return sorted(scored, key=lambda hit: -(hit.score or 0.0))[:10]


retriever = Keywords()
"""
