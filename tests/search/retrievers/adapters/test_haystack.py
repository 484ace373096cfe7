"""Haystack 2.x through ``--retriever module:attr``, with the real package and no glue:
an ``InMemoryBM25Retriever`` and an ``InMemoryEmbeddingRetriever`` behind a text
embedder in a ``Pipeline``, built over the example KB's notes split by Haystack's own
``MarkdownHeaderSplitter``, as Haystack's documentation builds them (our ``hash``
embedder wrapped in two small components: nothing downloaded).  What groove reads must
be what the retriever returned, rank for rank and score for score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLE_KB
from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.external import from_object
from tests.helpers.retriever_runs import (
    errors_of,
    eval_retriever,
    importable_module,
    report_of,
    warnings_of,
)

pytest.importorskip("haystack")

#: the retrievers' module, as a team would write it (the KB beside it)
HAYSTACK_SEARCH = """
from dataclasses import replace
from pathlib import Path

from haystack import Document, Pipeline, component
from haystack.components.preprocessors import MarkdownHeaderSplitter
from haystack.components.retrievers.in_memory import (
    InMemoryBM25Retriever,
    InMemoryEmbeddingRetriever,
)
from haystack.document_stores.in_memory import InMemoryDocumentStore

from pytest_groove.embed.hashing import HashEmbedder

KB = Path(__file__).resolve().parent / "kb"
EMBEDDER = HashEmbedder()


@component
class HashTextEmbedder:
    @component.output_types(embedding=list[float])
    def run(self, text: str):
        return {"embedding": EMBEDDER.embed_queries([text])[0].tolist()}


@component
class HashDocumentEmbedder:
    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]):
        vectors = EMBEDDER.embed_passages([d.content or "" for d in documents])
        return {"documents": [replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors)]}


notes = [
    Document(content=path.read_text(encoding="utf-8"), meta={"file_path": str(path)})
    for path in sorted(KB.rglob("*.md"))
    if path.name != "README.md"
]
chunks = MarkdownHeaderSplitter().run(documents=notes)["documents"]
store = InMemoryDocumentStore()
store.write_documents(HashDocumentEmbedder().run(documents=chunks)["documents"])

bm25 = InMemoryBM25Retriever(document_store=store)

pipeline = Pipeline()
pipeline.add_component("text_embedder", HashTextEmbedder())
pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store))
pipeline.connect("text_embedder.embedding", "retriever.query_embedding")
"""

#: the example KB's local files, left out of its copies
_LOCAL = shutil.ignore_patterns(".groove", ".groove-eval-history*")

QUERIES = ("roll back a release", "how do we review code", "rate limits and caching")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any]:
    """The KB, the module beside it (importable), and the module imported."""
    shutil.copytree(EXAMPLE_KB, tmp_path / "kb", ignore=_LOCAL)
    importable_module(tmp_path, "haystack_search", HAYSTACK_SEARCH, monkeypatch)
    import haystack_search

    return tmp_path, haystack_search


def _expected(documents: list[Any], kb: Path) -> list[tuple[str, str | None, float]]:
    """What the retriever returned, KB-relative, each chunk's header its heading."""
    return [
        (
            Path(d.meta["file_path"]).relative_to(kb).as_posix(),
            d.meta["header"] or None,
            d.score,
        )
        for d in documents
    ]


def test_a_bm25_retriever_is_read_as_it_ranks(project: tuple[Path, Any]) -> None:
    root, module = project
    kb = (root / "kb").resolve()
    retriever = from_object(module.bm25, kb)
    assert retriever.kind == "haystack"
    for query in QUERIES:
        hits = retriever.search(query, 5)
        returned = module.bm25.run(query=query, top_k=5)["documents"]
        assert len(hits) == 5
        assert [(h.path, h.heading, h.score) for h in hits] == _expected(returned, kb)


def test_an_embedding_pipeline_is_read_as_an_independent_rescoring_ranks(
    project: tuple[Path, Any],
) -> None:
    import numpy as np

    root, module = project
    kb = (root / "kb").resolve()
    retriever = from_object(module.pipeline, kb)
    chunks = module.store.filter_documents()
    matrix = np.array([c.embedding for c in chunks])
    for query in QUERIES:
        hits = retriever.search(query, 4)
        # re-scored here: the dot product (the store's default similarity) of the
        # query's hash vector with every chunk's
        scores = matrix @ module.EMBEDDER.embed_queries([query])[0]
        order = np.argsort(-scores, kind="stable")[:4]
        assert [h.score for h in hits] == pytest.approx([float(scores[i]) for i in order])
        paths = [Path(chunks[i].meta["file_path"]).relative_to(kb).as_posix() for i in order]
        assert [h.path for h in hits] == paths


def test_groove_eval_measures_both_with_no_option(project: tuple[Path, Any]) -> None:
    root, _ = project
    for attr in ("bm25", "pipeline"):
        done = eval_retriever(root / "kb", root, f"haystack_search:{attr}", "--format", "json")
        report = report_of(done)
        assert errors_of(done) == [] and warnings_of(done) == [], done.stderr
        assert report["fingerprint"]["retriever"] == f"haystack_search:{attr}"
        assert report["aggregate"]["mrr"] > 0.3, json.dumps(report["aggregate"])


def test_the_pytest_door_measures_the_pipeline(pytester: pytest.Pytester) -> None:
    shutil.copytree(EXAMPLE_KB, pytester.path / "kb", ignore=_LOCAL)
    pytester.makepyfile(haystack_search=HAYSTACK_SEARCH)
    result = pytester.runpytest_subprocess(
        "--groove-kb", "kb", "--groove-retriever", "haystack_search:pipeline"
    )
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    result.stdout.fnmatch_lines(["*custom retriever haystack_search:pipeline*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*warning*")


def test_an_embedding_retriever_alone_and_a_pipeline_without_text_are_refused(
    project: tuple[Path, Any],
) -> None:
    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    root, module = project
    alone = InMemoryEmbeddingRetriever(document_store=module.store)
    with pytest.raises(GrooveError) as caught:
        from_object(alone, root / "kb", name="r")
    assert caught.value.message.startswith(
        "retriever r is an InMemoryEmbeddingRetriever, a Haystack component whose run() "
        "takes no query"
    )
    headless = Pipeline()
    headless.add_component("retriever", InMemoryEmbeddingRetriever(document_store=module.store))
    with pytest.raises(GrooveError, match=r"no open input named text or query \(its open"):
        from_object(headless, root / "kb", name="r")
