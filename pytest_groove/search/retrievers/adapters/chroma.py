"""Chroma: a callable returning the ``QueryResult`` ``collection.query`` gives for one
query (columns of lists: ``ids``, ``metadatas``, ``documents``, ``distances``).

Each row's metadata is read like a Qdrant payload (``""`` counts as no heading, since
Chroma's metadata cannot hold None); the distance, negated, is the score (a larger
score is better).  Rows are read lazily, so a huge result costs only the rows used.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_groove.search.retrievers.adapters.base import (
    Adapter,
    Fields,
    HitKeys,
    HitShapeError,
    meta_fields,
    own_heading,
)


@dataclass(frozen=True)
class ChromaRow:
    """One row of a Chroma ``QueryResult`` (whose columns hold one list per query)."""

    metadata: Mapping[str, Any]
    document: str | None
    distance: float | None


def _column(result: Mapping[str, Any], name: str) -> Iterator[Any]:
    value = result.get(name)
    if isinstance(value, list) and value and isinstance(value[0], list):
        return itertools.chain(value[0], itertools.repeat(None))
    return itertools.repeat(None)


class Chroma(Adapter):
    kind = "chroma"
    label = "Chroma"

    def hits_in(self, answer: Any, retriever: str) -> Any:
        if not (
            isinstance(answer, Mapping)
            and "ids" in answer
            and ("metadatas" in answer or "distances" in answer)
        ):
            return None
        ids = answer.get("ids")
        if (
            isinstance(ids, list)
            and "distances" not in answer
            and not any(isinstance(column, list) for column in ids[:100])
        ):
            # collection.get(): one flat list of the stored records, in no ranked order
            raise HitShapeError(
                f"retriever {retriever} returned a Chroma GetResult ({len(ids)} stored "
                "records listed by collection.get(), not ranked for the query); search with "
                "collection.query(query_texts=[query], n_results=limit) (or query_embeddings="
                "[vector]) and return its QueryResult"
            )
        if not isinstance(ids, list) or len(ids) != 1 or not isinstance(ids[0], list):
            count = len(ids) if isinstance(ids, list) else 0
            raise HitShapeError(
                f"retriever {retriever} returned a Chroma result for {count} queries; query "
                "with one query (query_texts=[query] or query_embeddings=[vector])"
            )
        if answer.get("metadatas") is None:
            raise HitShapeError(
                f"retriever {retriever} returned a Chroma result without metadatas; keep "
                'include=["metadatas", ...] so each hit has its path'
            )
        metas, docs, dists = (_column(answer, n) for n in ("metadatas", "documents", "distances"))
        return (
            ChromaRow(metadata=meta or {}, document=doc, distance=dist)
            for _, meta, doc, dist in zip(
                ids[0], metas, docs, dists, strict=False
            )  # the columns pad
        )

    def reads(self, hit: Any) -> bool:
        return isinstance(hit, ChromaRow)

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        fields = meta_fields(hit.metadata, keys, None, "metadatas")
        heading = fields.heading
        if heading is None and keys.heading is None and "header_path" in hit.metadata:
            heading = own_heading(hit.document)
        # Chroma ranks by distance, smaller first: negated, a larger score is better
        score = None if hit.distance is None else -float(hit.distance)
        return Fields(fields.path, heading, score, fields.looked, hit.metadata)
