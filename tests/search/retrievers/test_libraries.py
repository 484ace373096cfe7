"""The retriever door against the real libraries: LlamaIndex, LangChain, Qdrant, Chroma.

Every hit here is produced by the library itself (its reader, its Markdown splitter,
its store, its query call) over a two-file KB, so a change in what a library returns
shows up here rather than in a user's empty run.  Embeddings are tiny word counts (or
LangChain's deterministic fake), so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.scoring.metrics import recall_at_k
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.external import HitKeys, from_object, load_retriever
from pytest_groove.search.retrievers.hit_checks import shallow_retriever

BILLING = """# Billing

Who pays what, and when.

## Invoices and VAT

We invoice customers every month.

### VAT numbers

Check the customer's VAT number before invoicing.

## Refunds

Refunds are paid within fourteen days.
"""

DEPLOY = """## Release train

We ship on Tuesdays and Thursdays.

## Rollback

Roll back with the deploy tool.
"""

VOCABULARY = ("vat", "number", "invoice", "refund", "ship", "roll", "tuesday", "customer")


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "guide").mkdir(parents=True)
    (root / "ops").mkdir()
    (root / "guide" / "billing.md").write_text(BILLING, encoding="utf-8")
    (root / "ops" / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    return root


def vector(text: str) -> list[float]:
    """A word-count embedding over a tiny vocabulary (plus one so no vector is zero)."""
    lowered = text.lower()
    return [float(lowered.count(word)) for word in VOCABULARY] + [0.1]


def triples(hits: list[SearchHit]) -> list[tuple[str, str | None]]:
    return [(h.path, h.heading) for h in hits]


def _words_overlap(query: str, text: str) -> int:
    return len(set(query.lower().split()) & set(text.lower().replace(".", " ").split()))


# --------------------------------------------------------------------------- LlamaIndex


def test_llamaindex_markdown_nodes_match_heading_pinned_golden_entries(kb: Path) -> None:
    """SimpleDirectoryReader + MarkdownNodeParser: the node's own heading is the hit's."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.node_parser import MarkdownNodeParser
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle

    documents = SimpleDirectoryReader(str(kb), recursive=True, required_exts=[".md"]).load_data()
    nodes = MarkdownNodeParser().get_nodes_from_documents(documents)
    vat = next(n for n in nodes if n.get_content().startswith("### VAT numbers"))
    assert vat.metadata["header_path"] == "/Billing/Invoices and VAT/"  # ancestors only

    class Keyword(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            scored = [
                NodeWithScore(node=n, score=float(_words_overlap(query_bundle.query_str, n.text)))
                for n in nodes
            ]
            return sorted(scored, key=lambda hit: -(hit.score or 0.0))[:3]

    retriever = from_object(Keyword(), kb)
    hits = retriever.search("check the vat number", 10)
    assert triples(hits)[0] == ("guide/billing.md", "VAT numbers")
    pinned = [ExpectedEntry("guide/billing.md", "VAT numbers")]
    assert recall_at_k(pinned, hits, 1) == 1.0
    refund = retriever.search("refunds are paid when", 10)
    assert triples(refund)[0] == ("guide/billing.md", "Refunds")
    ship = retriever.search("we ship on which days", 10)
    assert triples(ship)[0] == ("ops/deploy.md", "Release train")


def test_a_llamaindex_vector_index_retriever_is_named_after_its_store(kb: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    index = VectorStoreIndex.from_documents(
        [Document(text=BILLING, metadata={"file_path": str(kb / "guide" / "billing.md")})],
        embed_model=MockEmbedding(embed_dim=8),
    )
    retriever = from_object(index.as_retriever(similarity_top_k=1), kb)
    assert retriever.name.endswith("VectorIndexRetriever[SimpleVectorStore]")
    assert retriever.kind == "llamaindex"
    assert [h.path for h in retriever.search("vat", 10)] == ["guide/billing.md"]


# --------------------------------------------------------------------------- LangChain


def _split_kb(kb: Path) -> list[Any]:
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    splitter = MarkdownHeaderTextSplitter(
        [("#", "Header 1"), ("##", "Header 2"), ("###", "Header 3")]
    )
    chunks = []
    for path in sorted(kb.rglob("*.md")):
        for chunk in splitter.split_text(path.read_text(encoding="utf-8")):
            chunk.metadata["source"] = path.relative_to(kb).as_posix()
            chunks.append(chunk)
    return chunks


def test_langchain_bm25_over_markdown_header_chunks(kb: Path) -> None:
    pytest.importorskip("langchain_community")
    pytest.importorskip("rank_bm25")
    from langchain_community.retrievers import BM25Retriever

    bm25 = BM25Retriever.from_documents(_split_kb(kb))
    # the issue: a pydantic retriever takes no new attribute, so groove_name cannot be set
    with pytest.raises(ValueError, match="no field"):
        bm25.groove_name = "bm25-v1"  # type: ignore[attr-defined]
    retriever = from_object(bm25, kb, name="bm25-v1")  # what --retriever-name passes
    assert retriever.name == "bm25-v1"
    hits = retriever.search("check the customer vat number", 10)
    assert triples(hits)[0] == ("guide/billing.md", "VAT numbers")
    # BM25Retriever returns k = 4 documents unless told: the shallow check says how
    counts = [len(retriever.search(q, 10)) for q in ("vat", "refunds", "ship", "rollback")]
    assert counts == [4, 4, 4, 4]
    warning = shallow_retriever(retriever.name, retriever.kind, counts, 10)
    assert warning is not None and "BM25Retriever's k = 10" in warning
    bm25.k = 10
    deeper = [len(retriever.search(q, 10)) for q in ("vat", "refunds")]
    assert shallow_retriever(retriever.name, retriever.kind, deeper, 10, kb_files=2) is None


def test_two_langchain_stores_get_different_default_names(kb: Path) -> None:
    pytest.importorskip("langchain_community")
    pytest.importorskip("chromadb")
    import chromadb
    from langchain_community.vectorstores import Chroma
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    chunks = _split_kb(kb)
    embedding = DeterministicFakeEmbedding(size=16)
    memory = InMemoryVectorStore.from_documents(chunks, embedding).as_retriever()
    with warnings.catch_warnings():  # langchain_community's Chroma is deprecated
        warnings.simplefilter("ignore")
        chroma_store = Chroma.from_documents(
            chunks,
            embedding,
            collection_name=f"kb-{uuid.uuid4().hex[:8]}",
            client=chromadb.EphemeralClient(),
        )
    chroma = chroma_store.as_retriever(search_kwargs={"k": 2})
    names = {from_object(memory, kb).name, from_object(chroma, kb).name}
    assert len(names) == 2, names
    assert any(n.endswith("VectorStoreRetriever[InMemoryVectorStore]") for n in names)
    assert any("[Chroma:kb-" in n for n in names)
    hits = from_object(chroma, kb).search("vat", 10)
    assert len(hits) == 2 and all(h.path in {"guide/billing.md", "ops/deploy.md"} for h in hits)


# --------------------------------------------------------------------------- Qdrant


@pytest.fixture
def qdrant() -> Any:
    pytest.importorskip("qdrant_client")
    from qdrant_client import QdrantClient, models

    client = QdrantClient(":memory:")
    client.create_collection(
        "kb",
        vectors_config=models.VectorParams(size=len(VOCABULARY) + 1, distance=models.Distance.DOT),
    )
    yield client
    client.close()


def _upsert(client: Any, kb: Path, payload: Callable[[str, str | None], dict[str, Any]]) -> None:
    from qdrant_client import models

    points = [
        models.PointStruct(
            id=number,
            vector=vector(chunk.page_content),
            payload=payload(chunk.metadata["source"], chunk.metadata.get("Header 3")
                            or chunk.metadata.get("Header 2")),
        )
        for number, chunk in enumerate(_split_kb(kb), start=1)
    ]  # fmt: skip
    client.upsert("kb", points=points)


def test_qdrant_query_points_is_read_as_it_comes(kb: Path, qdrant: Any) -> None:
    pytest.importorskip("langchain_text_splitters")
    _upsert(qdrant, kb, lambda path, heading: {"path": path, "heading": heading})

    def search(query: str, limit: int) -> Any:
        return qdrant.query_points("kb", query=vector(query), limit=limit)  # a QueryResponse

    retriever = from_object(search, kb, name="qdrant")
    hits = retriever.search("vat number of the customer", 3)
    assert triples(hits)[0] == ("guide/billing.md", "VAT numbers")
    assert len(hits) == 3 and hits[0].score > hits[1].score
    points = from_object(lambda q, n: search(q, n).points, kb, name="qdrant-points")
    assert triples(points.search("vat number", 1)) == [("guide/billing.md", "VAT numbers")]


def test_qdrant_payload_keys_are_configurable(kb: Path, qdrant: Any) -> None:
    pytest.importorskip("langchain_text_splitters")
    # LangChain's layout of a Qdrant payload nests the metadata: found without a key
    _upsert(qdrant, kb, lambda p, h: {"page_content": "...", "metadata": {"source": p}})

    def search(query: str, limit: int) -> Any:
        return qdrant.query_points("kb", query=vector(query), limit=limit).points

    assert from_object(search, kb).search("refund", 1)[0].path == "guide/billing.md"
    # a team's own payload names its keys: --retriever-path-key / --retriever-heading-key
    qdrant.delete_collection("kb")
    from qdrant_client import models

    qdrant.create_collection(
        "kb", vectors_config=models.VectorParams(size=len(VOCABULARY) + 1, distance="Dot")
    )
    _upsert(qdrant, kb, lambda p, h: {"doc": {"file": p, "section": h}})
    keys = HitKeys(path="doc.file", heading="doc.section")
    retriever = from_object(search, kb, name="q", keys=keys)
    assert triples(retriever.search("refund", 1)) == [("guide/billing.md", "Refunds")]
    missing = from_object(search, kb, name="q", keys=HitKeys(path="doc.missing"))
    with pytest.raises(GrooveError, match=r"hit 1 has no path .*payload\['doc.missing'\]"):
        missing.search("refund", 1)


# --------------------------------------------------------------------------- Chroma


@pytest.fixture
def chroma(kb: Path) -> Any:
    pytest.importorskip("chromadb")
    pytest.importorskip("langchain_text_splitters")
    import chromadb

    collection = chromadb.EphemeralClient().create_collection(
        f"kb-{uuid.uuid4().hex[:8]}", embedding_function=None
    )
    chunks = _split_kb(kb)
    collection.add(
        ids=[str(n) for n in range(len(chunks))],
        embeddings=[vector(c.page_content) for c in chunks],
        documents=[c.page_content for c in chunks],
        metadatas=[dict(c.metadata) for c in chunks],
    )
    return collection


def test_a_chroma_query_result_is_read_column_wise(kb: Path, chroma: Any) -> None:
    def search(query: str, limit: int) -> Any:
        return chroma.query(query_embeddings=[vector(query)], n_results=limit)

    retriever = from_object(search, kb, name="chroma")
    hits = retriever.search("check the vat number", 3)
    assert triples(hits)[0] == ("guide/billing.md", "VAT numbers")  # Header 3 metadata
    # Chroma ranks by distance, smaller first: scores are the negated distances
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score <= 0 for h in hits)


def test_chroma_results_for_several_queries_or_without_metadata_are_refused(
    kb: Path, chroma: Any
) -> None:
    both = from_object(
        lambda q, n: chroma.query(query_embeddings=[vector(q), vector("x")], n_results=n),
        kb,
        name="c",
    )
    with pytest.raises(GrooveError, match="Chroma result for 2 queries; query with one query"):
        both.search("vat", 2)
    bare = from_object(
        lambda q, n: chroma.query(query_embeddings=[vector(q)], n_results=n, include=["distances"]),
        kb,
        name="c",
    )
    with pytest.raises(GrooveError, match="without metadatas"):
        bare.search("vat", 2)


# --------------------------------------------------------------------------- prints


def _json_eval_in_a_child(
    kb: Path, tmp_path: Path, module: str, source: str, golden: str
) -> subprocess.CompletedProcess[str]:
    """``groove eval --format json`` in a child process of the retriever ``module``
    (``source``, written to ``tmp_path``) on ``golden``; it must succeed."""
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    (tmp_path / "golden.yml").write_text(golden, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_groove.cli", "eval", "--kb-path", str(kb), "--golden",
         str(tmp_path / "golden.yml"), "--retriever", f"{module}:search", "--format", "json",
         "--no-history"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def test_what_the_retriever_prints_does_not_break_groove_eval_json(
    kb: Path, tmp_path: Path
) -> None:
    """LlamaIndex prints when Settings.llm = None: the JSON on stdout must stay JSON."""
    pytest.importorskip("llama_index.core")
    source = (
        "from llama_index.core import Settings\n"
        "Settings.llm = None  # prints 'LLM is explicitly disabled. Using MockLLM.'\n"
        "print('loading the index')\n"
        "def search(query, limit):\n"
        "    print('searching', query)\n"
        "    return [{'path': 'guide/billing.md', 'heading': 'VAT numbers', 'score': 1.0}]\n"
    )
    golden = (
        "queries:\n  - id: vat\n    query: check the vat number\n    expected:\n"
        "      - path: guide/billing.md\n        heading: VAT numbers\n"
    )
    done = _json_eval_in_a_child(kb, tmp_path, "noisy_search", source, golden)
    report = json.loads(done.stdout)  # nothing but the JSON on standard output
    assert report["aggregate"]["mrr"] == 1.0  # the heading-pinned entry was found
    assert "LLM is explicitly disabled" in done.stderr
    assert "loading the index" in done.stderr and "searching check the vat number" in done.stderr


def test_what_reaches_descriptor_1_without_python_does_not_break_the_json(
    kb: Path, tmp_path: Path
) -> None:
    """A child process the retriever starts, or a C library, writes to descriptor 1
    itself, past Python's sys.stdout: it goes to standard error too."""
    source = (
        "import os, subprocess\n"
        "subprocess.run(['echo', 'warming the cache'], check=True)\n"
        "def search(query, limit):\n"
        "    os.write(1, b'raw bytes on descriptor 1\\n')\n"
        "    subprocess.run(['echo', 'asked', query], check=True)\n"
        "    return [{'path': 'ops/deploy.md', 'score': 1.0}]\n"
    )
    golden = (
        "queries:\n  - id: ship\n    query: how do we ship\n    expected:\n"
        "      - path: ops/deploy.md\n"
    )
    done = _json_eval_in_a_child(kb, tmp_path, "shell_search", source, golden)
    assert json.loads(done.stdout)["aggregate"]["mrr"] == 1.0  # nothing but the JSON
    for said in ("warming the cache", "raw bytes on descriptor 1", "asked how do we ship"):
        assert said in done.stderr


def test_prints_of_a_python_retriever_go_to_stderr(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def search(query: str, limit: int) -> list[dict[str, Any]]:
        print("working on", query)
        return [{"path": "ops/deploy.md"}]

    assert from_object(search, kb, name="p").search("ship", 5)[0].path == "ops/deploy.md"
    out, err = capsys.readouterr()
    assert out == "" and "working on ship" in err


# --------------------------------------------------------------------------- scores


def test_a_nan_score_is_warned_about_once_and_shown_as_zero(kb: Path) -> None:
    told: list[str] = []
    nan = float("nan")
    retriever = from_object(
        lambda q, n: [{"path": "ops/deploy.md", "score": nan}, {"path": "b.md", "score": nan}],
        kb,
        name="nan-search",
        on_warning=told.append,
    )
    for query in ("a", "b", "c"):
        hits = retriever.search(query, 5)
        assert [(h.rank, h.score) for h in hits] == [(1, 0.0), (2, 0.0)]
    assert len(told) == 1 and retriever.warnings == told
    assert told[0].startswith("retriever nan-search returned a score that is not a finite")
    assert "only the order of its hits is used" in told[0]


def test_load_retriever_names_win_over_groove_name(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "named_search_mod.py").write_text(
        "def search(query, limit):\n    return []\nsearch.groove_name = 'from-attribute'\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "named_search_mod", raising=False)
    assert load_retriever("named_search_mod:search", kb).name == "from-attribute"
    assert load_retriever("named_search_mod:search", kb, name="prod-v3").name == "prod-v3"
    with pytest.raises(GrooveError, match="--retriever-token-env is for http:// retrievers"):
        load_retriever("named_search_mod:search", kb, token_env="SEARCH_TOKEN")
