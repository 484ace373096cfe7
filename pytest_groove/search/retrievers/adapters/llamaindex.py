"""LlamaIndex: a retriever with ``retrieve(query)`` returning ``NodeWithScore`` s.

Path: ``node.metadata["file_path"]``, else ``["file_name"]``; heading:
``metadata["heading"]``, else the heading line a ``MarkdownNodeParser`` node's text
opens with; score: ``.score``.  The retriever's own ``similarity_top_k`` decides the
depth.

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


def is_node(hit: Any) -> bool:
    return hasattr(hit, "node") and mapping_at(getattr(hit, "node", None), "metadata") is not None


class LlamaIndex(Adapter):
    kind = "llamaindex"
    label = "LlamaIndex"
    own_depth = True
    path_hint = "LlamaIndex metadata['file_path']"
    call_method = "retrieve"
    async_method = "aretrieve"

    def detects(self, obj: Any) -> bool:
        return callable(getattr(obj, "retrieve", None))

    def search_function(self, obj: Any, name: str) -> Callable[[str, int], Any]:
        retrieve = obj.retrieve
        return lambda query, limit: retrieve(query)  # likewise: similarity_top_k

    def reads(self, hit: Any) -> bool:
        if isinstance(hit, tuple) and len(hit) == 2:
            return is_node(hit[0])
        return is_node(hit)

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        if isinstance(hit, tuple):
            hit, score = hit
        else:
            score = getattr(hit, "score", None)
        node = hit.node
        meta = mapping_at(node, "metadata") or {}
        text = getattr(node, "text", None)
        return meta_fields(meta, keys, score, "node.metadata", ("file_path", "file_name"), text)

    def depth_advice(self, k: int) -> str:
        return (
            f"a LlamaIndex retriever returns its own similarity_top_k hits: use "
            f"index.as_retriever(similarity_top_k={k}); one that merges nodes into their "
            "parents (AutoMergingRetriever, RecursiveRetriever) returns fewer than that by "
            f"design: raise the base retriever's similarity_top_k well above {k}"
        )
