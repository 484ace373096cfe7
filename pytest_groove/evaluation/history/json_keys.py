"""A history file's JSON read with every key written twice kept.

A bad merge or a hand edit can write a key twice (``runs`` above all): :func:`parse_json`
keeps every copy (:class:`_Repeated`), and :func:`runs_of_every_copy` reads the runs of every
``runs`` list, so no stored run is lost to a duplicated key; :func:`every_copy` gives every
value of another key (both sides' ``baseline`` markers of a merge that kept both lines).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
from typing import Any

from pytest_groove.errors import clip
from pytest_groove.evaluation.runs.record import RecordFormatError


class _Repeated(dict[str, Any]):
    """A JSON object in which some key is written more than once (the last one reads).

    ``pairs`` keeps every ``(key, value)`` as written, so a ``runs`` list written
    twice (a bad merge, a hand edit) gives the runs of every copy.
    """

    pairs: list[tuple[str, Any]]


def parse_json(text: str) -> tuple[Any, bool]:
    """The JSON document of ``text``, and whether any object in it repeats a key."""
    repeats: list[str] = []

    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        repeats.append("")
        repeated = _Repeated(obj)
        repeated.pairs = pairs
        return repeated

    return json.loads(text, object_pairs_hook=build), bool(repeats)


def _repeated_keys(obj: _Repeated) -> list[str]:
    seen: set[str] = set()
    keys: list[str] = []
    for key, _value in obj.pairs:
        if key in seen and key not in keys:
            keys.append(key)
        seen.add(key)
    return keys


def holds_repeated(value: Any) -> bool:
    """Whether some object inside ``value`` repeats a key."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Repeated):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def runs_of_every_copy(doc: dict[str, Any], duplicated: list[str]) -> list[Any]:
    """Every stored run: those of each ``runs`` list when the key is written twice."""
    if not isinstance(doc, _Repeated):
        if "runs" not in doc:
            raise RecordFormatError("top level: missing key 'runs'")
        if not isinstance(doc["runs"], list):
            raise RecordFormatError("runs: expected a list")
        return list(doc["runs"])
    duplicated.extend(f"top level: {clip(key)}" for key in _repeated_keys(doc))
    copies = [value for key, value in doc.pairs if key == "runs"]
    if not copies:
        raise RecordFormatError("top level: missing key 'runs'")
    lists = [copy for copy in copies if isinstance(copy, list)]
    if not lists:
        raise RecordFormatError("runs: expected a list")
    return [raw for copy in lists for raw in copy]


def every_copy(doc: dict[str, Any], key: str) -> list[Any]:
    """Every value ``key`` has in ``doc``, in file order (one, or none, unless the key
    is written twice: then each copy, not only the last, which is all ``doc[key]`` reads)."""
    if isinstance(doc, _Repeated):
        return [value for written, value in doc.pairs if written == key]
    return [doc[key]] if key in doc else []
