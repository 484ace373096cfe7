"""Haystack (2.x and 3.x): a retriever component, or a ``Pipeline`` that ends in one.

- A component with ``run(query=..., top_k=...)`` returning ``{"documents": [...]}``
  (``InMemoryBM25Retriever``, a document store's keyword or hybrid retriever) is called
  with the query and ``top_k`` = the limit.
- A ``Pipeline`` (an embedder feeding ``InMemoryEmbeddingRetriever``, as Haystack's
  documentation builds it) is run with the query on every open input named ``text``
  or ``query`` and the limit on every open ``top_k``; its one ``documents`` output is
  the answer.

A hit is a ``Document``: path ``meta["file_path"]`` (a full path, or one relative to
the knowledge base: Haystack's converters keep only the file's name unless
``store_full_path=True``), heading ``meta["heading"]``, the splitters' header keys, else
``meta["header"]`` (``MarkdownHeaderSplitter``'s), score ``.score``.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.search.retrievers.adapters.base import (
    Adapter,
    Fields,
    HitKeys,
    HitShapeError,
    article,
    dotted,
    mapping_at,
    meta_fields,
)

#: the open inputs of a pipeline that take the query's text
_TEXT_INPUTS = ("text", "query")
_PATH_KEYS = ("file_path", "path", "source", "file_name")


def _is_pipeline(obj: Any) -> bool:
    return all(callable(getattr(obj, m, None)) for m in ("run", "inputs", "add_component"))


def _takes(method: Any, name: str) -> bool:
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _pipeline_call(pipeline: Any, name: str) -> Callable[[str, int], Any]:
    """``(query, limit) -> outputs``: the query on each open text input, the limit on
    each open ``top_k``."""
    inputs = pipeline.inputs()
    texts = [(c, i) for c, names in inputs.items() for i in names if i in _TEXT_INPUTS]
    depths = [c for c, names in inputs.items() if "top_k" in names]
    if not texts:
        open_inputs = ", ".join(f"{c}.{i}" for c, names in inputs.items() for i in names)
        raise GrooveError(
            f"retriever {name} is a Haystack Pipeline with no open input named text or query "
            f"(its open inputs: {open_inputs or 'none'}); connect the query to its first "
            "component's text input, or name a function: def search(query, limit): return "
            "pipeline.run({...})"
        )

    def call(query: str, limit: int) -> Any:
        data: dict[str, dict[str, Any]] = {}
        for component, text in texts:
            data.setdefault(component, {})[text] = query
        for component in depths:
            data.setdefault(component, {})["top_k"] = limit
        return pipeline.run(data)

    return call


def _documents(answer: Mapping[str, Any]) -> Any:
    documents = answer.get("documents")
    if isinstance(documents, list) and not (documents and isinstance(documents[0], list)):
        return documents
    return None


class Haystack(Adapter):
    kind = "haystack"
    label = "Haystack"
    path_hint = "Haystack meta['file_path']"
    bare_name_cause = (
        "Haystack's converters keep only the file's name in meta['file_path'] unless "
        "built with store_full_path=True"
    )
    call_method = "run"
    async_method = "run_async"

    def detects(self, obj: Any) -> bool:
        if callable(obj) or not callable(getattr(obj, "run", None)):
            return False
        # a component (its instance carries Haystack's input sockets), or one in shape
        return _is_pipeline(obj) or hasattr(obj, "__haystack_input__") or _takes(obj.run, "query")

    def search_function(self, obj: Any, name: str) -> Callable[[str, int], Any]:
        if _is_pipeline(obj):
            return _pipeline_call(obj, name)
        run = obj.run
        if not _takes(run, "query"):
            kind = type(obj).__name__
            raise GrooveError(
                f"retriever {name} is {article(kind)} {kind}, a Haystack component whose run() "
                "takes no query (an embedding retriever takes query_embedding): name the "
                "Pipeline that feeds it from a text embedder"
            )
        if _takes(run, "top_k"):
            return lambda query, limit: run(query=query, top_k=limit)
        return lambda query, limit: run(query=query)

    def hits_in(self, answer: Any, retriever: str) -> Any:
        if not isinstance(answer, Mapping) or "ids" in answer:  # Chroma's has documents too
            return None
        documents = _documents(answer)
        if documents is not None:
            return documents
        outputs = [
            (c, docs)
            for c, out in list(answer.items())[:100]
            if isinstance(out, Mapping) and (docs := _documents(out)) is not None
        ]
        if len(outputs) > 1:
            names = ", ".join(c for c, _ in outputs[:5])
            raise HitShapeError(
                f"retriever {retriever}: its Haystack Pipeline has {len(outputs)} documents "
                f"outputs ({names}); join them (DocumentJoiner) so that one ranking comes out"
            )
        return outputs[0][1] if outputs else None

    def reads(self, hit: Any) -> bool:
        return hasattr(hit, "content") and mapping_at(hit, "meta") is not None

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        meta = mapping_at(hit, "meta") or {}
        fields = meta_fields(meta, keys, getattr(hit, "score", None), "meta", _PATH_KEYS)
        if fields.heading is None and keys.heading is None:
            header = dotted(meta, "header")  # MarkdownHeaderSplitter's ("" before the first)
            return Fields(fields.path, header, fields.score, fields.looked, meta)
        return fields

    def depth_advice(self, k: int) -> str:
        return (
            f"a Haystack retriever is run with top_k={k}: a pipeline whose last component "
            f"keeps fewer (a ranker's or a joiner's own top_k) should keep at least {k}"
        )
