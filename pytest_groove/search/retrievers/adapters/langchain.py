"""LangChain: a retriever (or any runnable) with ``invoke(query)`` returning
``Document`` s (``page_content`` + ``metadata``), also as the ``(Document, score)``
pairs of ``similarity_search_with_score``.

Path: ``metadata["source"]``; heading: ``metadata["heading"]``, else the deepest
``Header N`` key ``MarkdownHeaderTextSplitter`` set; score: the pair's, else
``metadata["score"]`` / ``["relevance_score"]``.  The retriever's own ``k`` decides
the depth.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_groove.search.retrievers.adapters.base import (
    Adapter,
    Fields,
    HitKeys,
    mapping_at,
    meta_fields,
)


def is_document(hit: Any) -> bool:
    return hasattr(hit, "page_content") and mapping_at(hit, "metadata") is not None


class LangChain(Adapter):
    kind = "langchain"
    label = "LangChain"
    own_depth = True
    path_hint = "LangChain metadata['source']"
    call_method = "invoke"
    async_method = "ainvoke"

    def detects(self, obj: Any) -> bool:
        return callable(getattr(obj, "invoke", None))

    def search_function(self, obj: Any, name: str) -> Callable[[str, int], Any]:
        invoke = obj.invoke
        return lambda query, limit: invoke(query)  # the limit is the retriever's k

    def reads(self, hit: Any) -> bool:
        if isinstance(hit, tuple) and len(hit) == 2:
            return is_document(hit[0])
        return is_document(hit)

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        doc, score = hit if isinstance(hit, tuple) else (hit, None)
        meta = mapping_at(doc, "metadata") or {}
        if score is None:
            score = meta.get("score", meta.get("relevance_score"))
        return meta_fields(meta, keys, score, "metadata", ("source",))

    def depth_advice(self, k: int) -> str:
        return (
            f"a LangChain retriever returns its own k hits: use "
            f"as_retriever(search_kwargs={{'k': {k}}}), or set BM25Retriever's k = {k}; "
            "one that merges chunks into their parent documents (ParentDocumentRetriever, "
            "MultiVectorRetriever) returns fewer documents than its k by design, since "
            "several chunks share a parent: raise its search_kwargs k well above "
            f"{k} so that {k} distinct documents come back"
        )
