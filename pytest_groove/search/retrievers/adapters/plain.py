"""A plain callable ``(query, limit)`` and the hits of no framework: :class:`SearchHit`,
mappings, and objects with attributes.

Path: ``path``, else (a mapping, or a ``meta`` / ``metadata`` mapping the hit holds)
``file_path`` or ``source``; heading: ``heading``, else the splitters' header keys;
score: ``score``.  ``--retriever-path-key`` / ``--retriever-heading-key`` name another
key or attribute, dotted for a nested one (``doc.file``).  The limit is handed to the
callable, which decides the depth.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.adapters.base import (
    Adapter,
    Fields,
    HitKeys,
    mapping_at,
    meta_fields,
)

#: where a plain hit keeps its path when no key is named
_PATH_KEYS = ("path", "file_path", "source")
#: the attributes of an object hit read as its fields (at most this many)
_MOST_ATTRIBUTES = 100


def _attributes(hit: Any, keys: HitKeys) -> dict[str, Any]:
    """An object hit as a mapping: its public attributes (instance ones, slots, and
    the few a record class names), then its ``meta`` / ``metadata`` mapping's keys
    under ``meta.``/``metadata.`` and, when not already taken, as they are."""
    names: list[str] = []
    for source in (getattr(hit, "__dict__", None), getattr(type(hit), "__slots__", None)):
        if isinstance(source, Mapping | tuple | list):
            names += [n for n in source if isinstance(n, str) and not n.startswith("_")]
    named = [key.split(".")[0] for key in (keys.path, keys.heading) if key]
    for name in ("path", "heading", "score", "file_path", "source", *named):
        if name not in names and hasattr(hit, name):
            names.append(name)
    view: dict[str, Any] = {}
    for name in names[:_MOST_ATTRIBUTES]:
        try:
            view[name] = getattr(hit, name)
        except Exception:  # a property of the user's object may raise
            continue
    meta = mapping_at(hit, "meta", "metadata")
    if meta is not None:
        for key, value in list(meta.items())[:_MOST_ATTRIBUTES]:
            if isinstance(key, str):
                view.setdefault(key, value)
    return view


def _nested(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A mapping hit with its ``meta`` mapping's keys read as its own (when not taken):
    Haystack's ``Document.to_dict()`` keeps ``file_path`` there."""
    inner = mapping.get("meta")
    if not isinstance(inner, Mapping):
        return mapping
    merged = dict(list(inner.items())[:_MOST_ATTRIBUTES])
    merged.update(mapping)
    return merged


class Plain(Adapter):
    kind = "callable"
    label = "function"

    def detects(self, obj: Any) -> bool:
        return callable(obj)

    def search_function(self, obj: Any, name: str) -> Callable[[str, int], Any]:
        return lambda query, limit: obj(query, limit)

    def reads(self, hit: Any) -> bool:
        return True  # the last shape tried: whatever no framework claimed

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        if isinstance(hit, SearchHit) and keys == HitKeys():
            return Fields(hit.path, hit.heading, hit.score, "path")
        if isinstance(hit, Mapping):
            meta, where = _nested(hit), ""
        else:
            meta, where = _attributes(hit, keys), "attribute"
        fields = meta_fields(meta, keys, meta.get("score"), where, _PATH_KEYS)
        if keys.path is None and isinstance(meta.get("path"), str | bytes):
            # a hit's own "path" is its path, even when empty (then: "no path")
            fields = Fields(
                meta.get("path"), fields.heading, fields.score, fields.looked, fields.meta
            )
        return fields
