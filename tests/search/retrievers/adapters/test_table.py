"""The adapter table: one adapter per kind, in the order objects are recognised."""

from __future__ import annotations

from typing import Any, get_args

from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.adapters.base import HitKeys
from pytest_groove.search.retrievers.adapters.table import ADAPTERS, adapter_of, detect, fields_of
from pytest_groove.search.retrievers.external import RetrieverKind


def test_every_kind_has_one_adapter_and_every_adapter_a_kind() -> None:
    kinds = [adapter.kind for adapter in ADAPTERS]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == set(get_args(RetrieverKind))


def test_the_plain_callable_comes_last_and_takes_what_no_framework_claims() -> None:
    assert ADAPTERS[-1].kind == "callable"
    assert detect(lambda query, limit: []) is ADAPTERS[-1]
    assert detect(object()) is None
    assert adapter_of("no such kind").kind == "callable"


class _Both:
    """An object with LangChain's invoke and LlamaIndex's retrieve: the table's order wins."""

    def invoke(self, query: str) -> list[Any]:
        return []

    def retrieve(self, query: str) -> list[Any]:
        return []


def test_objects_are_recognised_in_the_tables_order() -> None:
    adapter = detect(_Both())
    assert adapter is not None and adapter.kind == "langchain"


def test_a_search_hit_reads_as_itself() -> None:
    fields = fields_of(SearchHit(rank=1, path="a.md", heading="H", score=2.0), HitKeys())
    assert (fields.path, fields.heading, fields.score) == ("a.md", "H", 2.0)
