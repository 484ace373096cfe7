"""A conftest-supplied retriever (``pytest_groove_retriever``): its hits and its name.

The plugin measures whatever system the hook returns; what comes back is checked
and normalised here into ranked :class:`SearchHit` s, so the rest of the evaluation
never sees a user's objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.search.hits import SearchHit


def _field(hit: Any, name: str) -> Any:
    if isinstance(hit, dict):
        return hit.get(name)
    return getattr(hit, name, None)


def normalise_hits(raw: Any, retriever: str) -> list[SearchHit]:
    """A custom retriever's answer as ranked :class:`SearchHit` s (order kept).

    Each hit needs a string ``path``; ``heading`` may be missing or None; ``score``
    may be missing (then 0.0) but must be a number when given.
    """
    if raw is None or isinstance(raw, str | bytes | dict):
        raise GrooveError(
            f"custom retriever {retriever} must return a sequence of hits, got {type(raw).__name__}"
        )
    hits: list[SearchHit] = []
    for position, hit in enumerate(raw, start=1):
        if isinstance(hit, SearchHit):
            hits.append(hit)
            continue
        path = _field(hit, "path")
        heading = _field(hit, "heading")
        score = _field(hit, "score")
        if not isinstance(path, str) or not path:
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has no string `path` "
                f"(got {path!r}); return SearchHit objects or dicts with path/heading/score"
            )
        if heading is not None and not isinstance(heading, str):
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has a non-string "
                f"`heading` ({heading!r}); use a string or None"
            )
        if score is None:
            score = 0.0
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise GrooveError(
                f"custom retriever {retriever}: hit {position} has a non-numeric "
                f"`score` ({score!r})"
            )
        hits.append(SearchHit(rank=position, path=path, heading=heading, score=float(score)))
    return hits


def retriever_name(retriever: Callable[..., Any]) -> str:
    """How a custom retriever is named in the fingerprint and the report."""
    explicit = getattr(retriever, "groove_name", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    target: Any = retriever
    if not hasattr(target, "__qualname__"):
        target = type(retriever)
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", repr(target))
    return f"{module}.{qualname}" if module else str(qualname)
