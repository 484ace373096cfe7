"""Answers of the real libraries that no hit can be read from, each named for what it is.

- Chroma's ``collection.get()`` (a flat list of stored records) was "a Chroma result
  for 10 queries";
- a Qdrant query with ``with_payload=False`` was the generic "no path" line;
- a conftest hook that returned a spec's text was "retriever builtins.str is a str",
  without the option that takes a spec.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example_kb
from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.external import from_object
from tests.helpers.retriever_runs import qdrant_in_memory


def _chroma_collection() -> Any:
    pytest.importorskip("chromadb")
    import chromadb
    from chromadb import Documents, EmbeddingFunction, Embeddings

    class Letters(EmbeddingFunction[Documents]):
        """An embedding function of our own: letter counts (nothing downloaded)."""

        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:
            return [[float(text.count(c)) + 0.1 for c in "aeiost"] for text in input]

        @staticmethod
        def name() -> str:
            return "letters"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> Letters:
            return Letters()

    # default settings: chromadb keeps one client per process, and other tests use it too
    collection = chromadb.EphemeralClient().create_collection(
        f"kb-{uuid.uuid4().hex[:8]}", embedding_function=Letters()
    )
    collection.add(
        ids=["1", "2", "3"],
        documents=["we ship on tuesdays", "roll back a release", "rotate the tokens"],
        metadatas=[{"path": "ops/release-train.md"}, {"path": "ops/rollback.md"}, {"path": "t.md"}],
    )
    return collection


def test_a_chroma_get_result_is_named_as_such(tmp_path: Path) -> None:
    collection = _chroma_collection()
    retriever = from_object(lambda query, limit: collection.get(), tmp_path, name="r")
    with pytest.raises(GrooveError) as caught:
        retriever.search("when do we ship", 10)
    assert caught.value.message == (
        "retriever r returned a Chroma GetResult (3 stored records listed by "
        "collection.get(), not ranked for the query); search with collection.query("
        "query_texts=[query], n_results=limit) (or query_embeddings=[vector]) and return its "
        "QueryResult"
    )
    # the query itself is read as before
    ranked = from_object(
        lambda query, limit: collection.query(query_texts=[query], n_results=2), tmp_path
    ).search("we ship on tuesdays", 10)
    assert ranked[0].path == "ops/release-train.md"


def _qdrant_search(**query: Any) -> Any:
    point = ([1.0, 0.0], {"path": "ops/rollback.md", "heading": "Steps"})
    client = qdrant_in_memory([point], first_id=1)
    return lambda text, limit: client.query_points("kb", query=[1.0, 0.0], limit=limit, **query)


def test_a_qdrant_query_without_payloads_names_with_payload(tmp_path: Path) -> None:
    retriever = from_object(_qdrant_search(with_payload=False), tmp_path, name="q")
    with pytest.raises(GrooveError) as caught:
        retriever.search("roll back", 5)
    assert caught.value.message == (
        "retriever q: hit 1 is a Qdrant point without its payload (payload=None), so it has "
        "no path: query with with_payload=True (query_points' default), or a with_payload "
        "list that names the path's key"
    )


def test_a_qdrant_payload_without_the_path_key_names_with_payload(tmp_path: Path) -> None:
    retriever = from_object(_qdrant_search(with_payload=["heading"]), tmp_path, name="q")
    with pytest.raises(GrooveError) as caught:
        retriever.search("roll back", 5)
    message = caught.value.message
    assert message.startswith(
        "retriever q: hit 1 has no path (got None) in payload['path' / 'source' / 'file_path' "
        "/ 'file_name'], the Qdrant point's payload: keep the path's key in it"
    ), message
    assert message.endswith("or name the key with --retriever-path-key")
    # the whole payload reads as before
    hits = from_object(_qdrant_search(), tmp_path).search("roll back", 5)
    assert [(h.path, h.heading) for h in hits] == [("ops/rollback.md", "Steps")]


def test_a_hook_that_returns_a_spec_is_told_of_the_option(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_example_kb(pytester.path / "kb")
    monkeypatch.delitem(sys.modules, "quick_search", raising=False)
    pytester.makepyfile(quick_search="def search(q, limit):\n    return []\n")
    pytester.makeconftest(
        "def pytest_groove_retriever(config):\n    return 'quick_search:search'\n"
    )
    pytester.syspathinsert()
    result = pytester.runpytest("--groove-kb", "kb", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: the pytest_groove_retriever hook in conftest.py returned the str "
            "'quick_search:search', not a retriever: return the retriever object itself, or "
            "drop the hook and name it with --groove-retriever quick_search:search (ini "
            "groove_retriever)"
        ]
    )
