"""The adapters, one per framework, in the order they are tried.

A retriever object is the first adapter's that ``detects`` it; an answer's hits are
the first ``hits_in`` that finds them (else the answer itself); each hit is read by the
first adapter that ``reads`` it.  The plain callable comes last: it takes whatever no
framework claimed.  The HTTP adapter is chosen by the spec (a URL), never detected.

A new framework is one module in this package and one line here (and its kind in
``external.RetrieverKind``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from typing import Any

from pytest_groove.search.retrievers.adapters.base import Adapter, Fields, HitKeys
from pytest_groove.search.retrievers.adapters.chroma import Chroma
from pytest_groove.search.retrievers.adapters.haystack import Haystack
from pytest_groove.search.retrievers.adapters.http import Http
from pytest_groove.search.retrievers.adapters.langchain import LangChain
from pytest_groove.search.retrievers.adapters.llamaindex import LlamaIndex
from pytest_groove.search.retrievers.adapters.plain import Plain
from pytest_groove.search.retrievers.adapters.qdrant import Qdrant

ADAPTERS: tuple[Adapter, ...] = (
    LangChain(),
    LlamaIndex(),
    Haystack(),
    Qdrant(),
    Chroma(),
    Http(),
    Plain(),
)

#: the adapter of each kind
BY_KIND = {adapter.kind: adapter for adapter in ADAPTERS}


def adapter_of(kind: str) -> Adapter:
    """The adapter of ``kind`` (the plain callable's for a kind no adapter has)."""
    return BY_KIND.get(kind, BY_KIND["callable"])


def detect(obj: Any) -> Adapter | None:
    """The adapter whose framework ``obj`` is a retriever of (None: none)."""
    return next((adapter for adapter in ADAPTERS if adapter.detects(obj)), None)


def hits_in(answer: Any, retriever: str) -> Any:
    """The hits inside a framework's result object, else ``answer`` itself."""
    for adapter in ADAPTERS:
        hits = adapter.hits_in(answer, retriever)
        if hits is not None:
            return hits
    return answer


def fields_of(hit: Any, keys: HitKeys) -> Fields:
    """One hit's fields, read by the first adapter that reads its shape."""
    for adapter in ADAPTERS:
        if adapter.reads(hit):
            return adapter.fields(hit, keys)
    raise AssertionError("the plain adapter reads every hit")


def path_hints() -> str:
    """How messages name the frameworks' path keys: ``LangChain metadata['source'],
    LlamaIndex metadata['file_path'], ...``."""
    return ", ".join(a.path_hint for a in ADAPTERS if a.path_hint)


def bare_name_causes() -> str:
    """What messages say of the frameworks that keep only a file's name (`` (Haystack's
    converters ...)``), "" when none does."""
    causes = [a.bare_name_cause for a in ADAPTERS if a.bare_name_cause]
    return f" ({'; '.join(causes)})" if causes else ""


__all__ = [
    "ADAPTERS",
    "BY_KIND",
    "adapter_of",
    "bare_name_causes",
    "detect",
    "fields_of",
    "hits_in",
    "path_hints",
]
