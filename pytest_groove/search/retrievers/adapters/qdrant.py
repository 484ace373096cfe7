"""Qdrant: a callable returning ``ScoredPoint`` s (``.payload``, ``.score``), or the
``QueryResponse`` that ``query_points`` returns (its ``.points``).

Path: ``payload["path"]``, ``["source"]``, ``["file_path"]`` or ``["file_name"]``, also
inside ``payload["metadata"]`` (LangChain's layout); heading: ``payload["heading"]``,
else the ``Header N`` keys.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pytest_groove.errors import flag
from pytest_groove.search.retrievers.adapters.base import (
    Adapter,
    Fields,
    HitKeys,
    echo,
    meta_fields,
)


class Qdrant(Adapter):
    kind = "qdrant"
    label = "Qdrant"

    def hits_in(self, answer: Any, retriever: str) -> Any:
        if isinstance(answer, Mapping):
            return None
        points = getattr(answer, "points", None)
        return points if isinstance(points, list) else None

    def reads(self, hit: Any) -> bool:
        payload = getattr(hit, "payload", False)
        return (payload is None or isinstance(payload, Mapping)) and hasattr(hit, "score")

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        if hit.payload is None:
            return Fields(
                None,
                None,
                hit.score,
                "payload",
                no_path="is a Qdrant point without its payload (payload=None), so it has no "
                "path: query with with_payload=True (query_points' default), or a "
                "with_payload list that names the path's key",
            )
        fields = meta_fields(hit.payload, keys, hit.score, "payload")
        named = (
            f"or name the key with {flag('retriever-path-key')}"
            if keys.path is None
            else f"or correct {flag('retriever-path-key')}"
        )
        advice = (
            f"has no path (got {echo(fields.path)}) in {fields.looked}, the Qdrant point's "
            "payload: keep the path's key in it (with_payload=True, or the key in a "
            f"with_payload list), {named}"
        )
        return replace(fields, no_path=advice)
