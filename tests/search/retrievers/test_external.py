"""The retriever door: callables, LangChain and LlamaIndex retrievers, HTTP services."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.errors import GrooveError, StopsTheRun
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.external import (
    from_object,
    kb_relative,
    load_retriever,
    normalise_hits,
)
from tests.helpers.local_http import send_json, serving, url_of


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "guide").mkdir(parents=True)
    return root


def triples(hits: list[SearchHit]) -> list[tuple[str, str | None, float]]:
    return [(h.path, h.heading, h.score) for h in hits]


# --------------------------------------------------------------------------- paths and shapes


def test_paths_become_kb_relative_and_outside_paths_are_refused(kb: Path) -> None:
    assert kb_relative("guide/a.md", kb) == "guide/a.md"
    assert kb_relative("./guide/../guide/a.md", kb) == "guide/a.md"
    assert kb_relative(str(kb / "guide" / "a.md"), kb) == "guide/a.md"
    assert kb_relative(f"file://{kb / 'a.md'}", kb) == "a.md"
    assert kb_relative("guide\\a.md", kb) == "guide/a.md"
    for outside in ("../secret.md", "/etc/passwd", str(kb), str(kb.parent / "kb2" / "a.md")):
        assert kb_relative(outside, kb) is None, outside


def test_a_callable_with_dicts_objects_and_search_hits(kb: Path) -> None:
    class Hit:
        path = "guide/b.md"
        heading = None
        score = 0.5

    def search(query: str, limit: int) -> list[Any]:
        return [
            {"path": str(kb / "guide" / "a.md"), "heading": "Setup", "score": 2},
            Hit(),
            SearchHit(rank=9, path="c.md", heading="C", score=0.1),
            {"path": "d.md"},
        ][:limit]

    retriever = from_object(search, kb)
    assert retriever.name.endswith("search")
    assert triples(retriever.search("q", 3)) == [
        ("guide/a.md", "Setup", 2.0),
        ("guide/b.md", None, 0.5),
        ("c.md", "C", 0.1),
    ]
    assert [h.rank for h in retriever.search("q", 4)] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "must return a list of hits, got NoneType"),
        ({"path": "a.md"}, "must return a list of hits, got dict"),
        (42, "must return a list of hits, got int"),
        ([{"heading": "x"}], "hit 1 has no path"),
        ([{"path": "a.md", "heading": 3}], "hit 1 has a heading that is not text"),
        ([{"path": "a.md", "score": "high"}], "hit 1 has a score that is not a number"),
    ],
)
def test_bad_answers_are_one_line_naming_the_retriever(kb: Path, answer: Any, message: str) -> None:
    retriever = from_object(lambda q, n: answer, kb, name="team-search")
    with pytest.raises(GrooveError, match=f"^retriever team-search.*{_re(message)}") as raised:
        retriever.search("q", 5)
    assert "\n" not in str(raised.value)


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_a_failing_retriever_is_one_line_not_a_traceback(kb: Path) -> None:
    def broken(query: str, limit: int) -> list[Any]:
        raise ConnectionError("vector store\nis down")

    with pytest.raises(
        GrooveError, match=r"failed on query 'why': ConnectionError: vector store is down"
    ):
        from_object(broken, kb, name="b").search("why", 5)


def test_a_failing_retriever_stops_the_run(kb: Path) -> None:
    # every later query would raise it again: the run stops at the first, not one
    # identical failure per golden query
    def broken(query: str, limit: int) -> list[Any]:
        raise ConnectionError("qdrant at 10.0.0.5:6333 refused")

    with pytest.raises(StopsTheRun, match=r"^retriever b failed on query 'why': Connection"):
        from_object(broken, kb, name="b").search("why", 5)


def test_a_retriever_class_is_refused_naming_the_instance_to_return(kb: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Notes(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> Any:
            return [Document(page_content="x", metadata={"source": "a.md"})]

    class Plain:
        def __call__(self, query: str, limit: int) -> list[Any]:
            return []

    for cls in (Notes, Plain):
        with pytest.raises(GrooveError, match=f"is the class .*{cls.__name__}, not a retriever"):
            from_object(cls, kb)
    assert from_object(Notes(), kb).search("q", 5)[0].path == "a.md"


def test_an_async_only_library_retriever_is_told_how_to_wrap_it(kb: Path) -> None:
    """A LangChain or LlamaIndex retriever class that implements only its async method
    raises NotImplementedError from the sync one groove calls."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.retrievers import BaseRetriever as LangChainRetriever
    from llama_index.core.retrievers import BaseRetriever as LlamaRetriever

    class AsyncNotes(LangChainRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> Any:
            raise NotImplementedError

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> Any:
            return []

    class AsyncNodes(LlamaRetriever):
        def _retrieve(self, query_bundle: Any) -> Any:
            raise NotImplementedError("use aretrieve")

        async def _aretrieve(self, query_bundle: Any) -> Any:
            return []

    for retriever, awaited in ((AsyncNotes(), "ainvoke"), (AsyncNodes(), "aretrieve")):
        with pytest.raises(StopsTheRun) as raised:
            from_object(retriever, kb, name="r").search("why", 5)
        assert raised.value.message.startswith("retriever r failed on query 'why': NotImpl")
        assert f"return asyncio.run(retriever.{awaited}(query))" in raised.value.message


def test_an_object_of_no_known_shape_is_refused(kb: Path) -> None:
    with pytest.raises(
        GrooveError, match=r"expected a callable \(query, limit\), an object with invoke"
    ):
        from_object(object(), kb, name="thing")


def test_hits_without_a_kb_keep_their_paths() -> None:
    assert triples(normalise_hits([{"path": "/abs/a.md"}], "r")) == [("/abs/a.md", None, 0.0)]


# --------------------------------------------------------------------------- LangChain


def test_a_langchain_retriever_with_markdown_header_metadata(kb: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class TeamRetriever(BaseRetriever):
        kb_root: str

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                # what MarkdownHeaderTextSplitter leaves: the headers above the chunk
                Document(
                    page_content="...",
                    metadata={
                        "source": f"{self.kb_root}/guide/setup.md",
                        "Header 1": "Guide",
                        "Header 2": "Installing",
                        "score": 0.9,
                    },
                ),
                Document(page_content="...", metadata={"source": "guide/faq.md"}),
                Document(
                    page_content="...",
                    metadata={"source": "ops.md", "relevance_score": 0.4, "heading": "Deploy"},
                ),
            ]

    retriever = from_object(TeamRetriever(kb_root=str(kb)), kb, name="lc")
    assert triples(retriever.search("how do I install", 10)) == [
        ("guide/setup.md", "Installing", 0.9),
        ("guide/faq.md", None, 0.0),
        ("ops.md", "Deploy", 0.4),
    ]
    assert triples(retriever.search("q", 1)) == [("guide/setup.md", "Installing", 0.9)]


def test_a_langchain_document_outside_the_kb_keeps_its_path(kb: Path) -> None:
    """A path outside the KB names no KB file: kept as written, for the run's checks
    to judge (one such hit never stops the run)."""
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    outside = RunnableLambda(
        lambda q: [
            Document(page_content="x", metadata={"source": "/srv/x.md"}),
            Document(page_content="x", metadata={"source": "../elsewhere/y.md"}),
            Document(page_content="x", metadata={"source": str(kb / "guide" / "a.md")}),
        ]
    )
    hits = from_object(outside, kb, name="lc").search("q", 5)
    assert [hit.path for hit in hits] == ["/srv/x.md", "../elsewhere/y.md", "guide/a.md"]


# --------------------------------------------------------------------------- LlamaIndex


def test_a_llamaindex_retriever_over_markdown_node_parser_nodes(kb: Path) -> None:
    """The heading is the node's own, not the last ancestor in header_path."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.node_parser import MarkdownNodeParser
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    text = (
        "# Billing\n\nWho pays what.\n\n## Invoices and VAT\n\nHow we invoice.\n\n"
        "### VAT numbers  ##\n\nCheck the number.\n\n## Refunds\n\nWithin 14 days.\n"
    )
    source = Document(text=text, metadata={"file_path": str(kb / "guide" / "billing.md")})
    nodes = MarkdownNodeParser().get_nodes_from_documents([source])
    # what the real parser (llama-index-core 0.14) leaves: the ancestors only
    assert [n.metadata["header_path"] for n in nodes] == [
        "/",
        "/Billing/",
        "/Billing/Invoices and VAT/",
        "/Billing/",
    ]

    class TeamRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            ranked = [NodeWithScore(node=n, score=1.0 / i) for i, n in enumerate(nodes, 1)]
            return [*ranked, NodeWithScore(node=TextNode(text="x", metadata={"file_name": "f.md"}))]

    retriever = from_object(TeamRetriever(), kb, name="li")
    assert triples(retriever.search("vat", 10)) == [
        ("guide/billing.md", "Billing", 1.0),
        ("guide/billing.md", "Invoices and VAT", 0.5),
        # the line read as the KB reads it, closing hashes kept; the searcher matches
        # this spelling or CommonMark's against the document's headings
        ("guide/billing.md", "VAT numbers  ##", 1 / 3),
        ("guide/billing.md", "Refunds", 0.25),
        ("f.md", None, 0.0),
    ]


# --------------------------------------------------------------------------- module:attr


def test_module_attr_is_imported_from_the_current_directory(
    kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team_search_mod.py").write_text(
        "def search(query, limit):\n"
        "    return [{'path': 'guide/a.md', 'heading': None, 'score': 1.0}][:limit]\n"
        "class Holder:\n"
        "    def retrieve(self, query):\n"
        "        return []\n"
        "holder = Holder()\n"
        "named = lambda q, n: []\n"
        "named.groove_name = 'prod-search-v3'\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "team_search_mod", raising=False)
    retriever = load_retriever("team_search_mod:search", kb)
    assert retriever.name == "team_search_mod:search"
    assert triples(retriever.search("q", 5)) == [("guide/a.md", None, 1.0)]
    assert load_retriever("team_search_mod:holder", kb).search("q", 5) == []
    assert load_retriever("team_search_mod:named", kb).name == "prod-search-v3"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon_here", "expected module:attribute"),
        ("no_such_module_xyz:search", "could not import no_such_module_xyz (ModuleNotFoundError"),
        ("json:no_such_function", "json has no attribute no_such_function"),
        ("ftp://host/x", "expected module:attribute"),
        ("http:///nohost", "not an http:// or https:// URL with a host"),
    ],
)
def test_bad_specs_are_refused_before_any_search(kb: Path, spec: str, message: str) -> None:
    with pytest.raises(GrooveError, match=_re(message)):
        load_retriever(spec, kb)


# --------------------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep the test output clean
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        asked = json.loads(self.rfile.read(length))
        self.server.seen.append(asked)  # type: ignore[attr-defined]
        if self.path == "/slow":
            time.sleep(2.0)
        if self.path == "/broken":
            self.send_response(500, "Internal Server Error")
            self.end_headers()
            return
        if self.path == "/broken-says-why":
            said = b"index  missing:\n rebuild it"
            self.send_response(500, "Internal Server Error")
            self.send_header("Content-Length", str(len(said)))
            self.end_headers()
            self.wfile.write(said)
            return
        if self.path == "/html":
            body = b"<html>oops</html>"
        elif self.path == "/object":
            body = b'{"hits": []}'
        else:
            hits = [
                {"path": "guide/a.md", "heading": "Setup", "score": 0.7},
                {"path": "b.md", "heading": None, "score": 0.2},
            ]
            body = json.dumps(hits[: asked["limit"]]).encode()
        send_json(self, 200, body)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    with serving(_Handler, seen=[]) as httpd:
        yield httpd


_url = url_of


def test_an_http_retriever_posts_query_and_limit(kb: Path, server: ThreadingHTTPServer) -> None:
    retriever = load_retriever(_url(server, "/search?token=secret"), kb)
    # the query string only as a digest in the fingerprint, never the token in clear
    assert retriever.name.startswith(_url(server, "/search") + "?(query ")
    assert "secret" not in retriever.name
    assert triples(retriever.search("how to install 日本語", 1)) == [("guide/a.md", "Setup", 0.7)]
    assert server.seen == [{"query": "how to install 日本語", "limit": 1}]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/broken", "answered HTTP 500 Internal Server Error for query 'q'"),
        (
            "/broken-says-why",
            "answered HTTP 500 Internal Server Error for query 'q'; it said: "
            "'index missing: rebuild it'",
        ),
        ("/html", "did not answer with JSON"),
        ("/object", "answered a JSON dict; expected a list"),
        ("/slow", "did not answer within 0.5 s"),
    ],
)
def test_http_faults_are_one_clear_line(
    kb: Path, server: ThreadingHTTPServer, path: str, message: str
) -> None:
    retriever = load_retriever(_url(server, path), kb, timeout=0.5)
    with pytest.raises(GrooveError, match=_re(message)) as raised:
        retriever.search("q", 5)
    assert "\n" not in str(raised.value)


def test_an_unreachable_http_retriever_is_one_clear_line(kb: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    retriever = load_retriever(f"http://127.0.0.1:{port}/search", kb, timeout=2)
    with pytest.raises(GrooveError, match=r"cannot be reached: .*refused"):
        retriever.search("q", 5)
