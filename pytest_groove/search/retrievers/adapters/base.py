"""The interface every framework's adapter implements, and the lookups they share.

An :class:`Adapter` answers, for one framework:

- ``detects(obj)`` -- is this retriever object one of ours, and ``search_function``
  turns it into ``(query, limit) -> answer``;
- ``hits_in(answer)`` -- the hits inside an answer of ours (None: not ours);
- ``reads(hit)`` / ``fields(hit, keys)`` -- one hit's path, heading and score, with
  the path and heading keys the run names (:class:`HitKeys`);
- ``own_depth`` / ``depth_advice(k)`` -- who decides how many hits come back, and how
  to ask for ``k``;
- ``path_hint``, ``call_method`` / ``async_method`` -- how messages name its path key
  and its methods.

Every value of a hit quoted back goes through :func:`echo`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_groove.errors import ECHO_LIMIT, StopsTheRun
from pytest_groove.search.retrievers.key_evidence import dotted_lookup
from pytest_groove.text.echo import echo_value as echo

#: most characters of a value from a hit quoted back
ECHO = ECHO_LIMIT


class HitShapeError(StopsTheRun):
    """A retriever's answer of a shape no hit can be read from (not a list, a hit
    without a path, a score that is no number ...): its code returns that shape for
    every query, so the run stops at the first, with one line."""


def article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first letter: ``an InMemoryBM25Retriever``)."""
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"


@dataclass(frozen=True)
class HitKeys:
    """Which metadata / payload keys hold a hit's path and heading (None = the defaults)."""

    #: dotted key of the path (``source``, ``metadata.source``); None = the shape's default
    path: str | None = None
    #: dotted key of the heading; None = ``heading``, else the splitter's header keys
    heading: str | None = None


#: path and heading where each shape keeps them by default
DEFAULT_KEYS = HitKeys()


@dataclass(frozen=True)
class Fields:
    """What one hit holds, before it is checked."""

    path: Any
    heading: Any
    score: Any
    #: where the path was looked for, for the "no path" message
    looked: str
    #: the metadata the keys were looked for in (None: the hit has none)
    meta: Mapping[str, Any] | None = None
    #: what the "no path" message says after the hit's number, when its shape knows better
    no_path: str | None = None


# --------------------------------------------------------------------------- lookups

#: metadata keys Markdown splitters use for headings: LangChain's
#: MarkdownHeaderTextSplitter examples use "Header 1".."Header 6" (the key names
#: are the user's choice, so "h2", "Heading 2", "header_2" are accepted as well)
_HEADER_KEY = re.compile(r"(?:header|heading|h)[ _-]?([1-6])", re.IGNORECASE)

#: where the path is looked for in a metadata mapping when no key is configured
PATH_KEYS = ("path", "source", "file_path", "file_name")

#: most keys of one metadata mapping looked through for header keys
_MOST_KEYS = 200


def dotted(meta: Mapping[str, Any], key: str) -> Any:
    """``meta[key]``, where ``a.b`` reads ``meta["a"]["b"]`` (an exact key wins); None
    when it holds no such key."""
    return dotted_lookup(meta, key)[1]


def mapping_at(obj: Any, *names: str) -> Mapping[str, Any] | None:
    """The first of ``obj``'s attributes ``names`` that is a mapping."""
    for name in names:
        try:
            value = getattr(obj, name, None)
        except Exception:  # a property of the user's object may raise
            continue
        if isinstance(value, Mapping):
            return value
    return None


def layers(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``meta``, then its nested ``metadata`` (LangChain's layout of a Qdrant payload)."""
    inner = meta.get("metadata")
    return [meta, inner] if isinstance(inner, Mapping) else [meta]


def first_key(meta: Mapping[str, Any], names: Sequence[str]) -> Any:
    for layer in layers(meta):
        for name in names:
            value = layer.get(name)
            if value:
                return value
    return None


def _header_items(meta: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    for layer in layers(meta):
        for count, item in enumerate(layer.items()):
            if count >= _MOST_KEYS:
                break
            yield item


def deepest_header(meta: Mapping[str, Any]) -> str | None:
    """The heading a Markdown splitter gave a chunk: its deepest header key."""
    found: list[tuple[int, str]] = []
    for key, value in _header_items(meta):
        if not isinstance(key, str) or len(key) > 12:
            continue
        match = _HEADER_KEY.fullmatch(key.strip())
        if match and isinstance(value, str) and value.strip():
            found.append((int(match.group(1)), value))
    return max(found)[1] if found else None


def own_heading(text: object) -> str | None:
    """The heading a chunk's text opens with (its first line, when that is ``# ...``).

    LlamaIndex's MarkdownNodeParser starts each node with its heading line (its own
    pattern is ``^(#+)\\s(.*)``).  The line is read as the KB reads it, a closing
    ``##`` kept (``## Rate limits ##`` is ``Rate limits ##``); the searcher also tries
    the CommonMark reading against the document's headings
    (:mod:`~pytest_groove.kb.source.heading_lines`).
    """
    if not isinstance(text, str):
        return None
    from pytest_groove.kb.source.heading_lines import kb_reading

    for line in text[:10_000].splitlines():
        if line.strip():
            return kb_reading(line)
    return None


def heading_in(meta: Mapping[str, Any], keys: HitKeys, text: object = None) -> Any:
    """A hit's heading from its metadata (and, for header-path splitters, its text)."""
    if keys.heading is not None:
        return dotted(meta, keys.heading)
    explicit = first_key(meta, ("heading",))
    if explicit is not None:
        return explicit
    header = deepest_header(meta)
    if header is not None:
        return header
    if "header_path" in meta:
        # LlamaIndex's MarkdownNodeParser: header_path holds the node's ancestors
        # only ("/Invoices and VAT/" for the "## VAT numbers" node); the node's own
        # heading is the first line of its text
        return own_heading(text)
    return None


def path_in(meta: Mapping[str, Any], keys: HitKeys, defaults: Sequence[str]) -> Any:
    if keys.path is not None:
        return dotted(meta, keys.path)
    return first_key(meta, defaults)


def looked(keys: HitKeys, where: str, defaults: Sequence[str]) -> str:
    names = [keys.path] if keys.path is not None else list(defaults)
    return f"{where}[{' / '.join(repr(n) for n in names)}]"


def meta_fields(
    meta: Mapping[str, Any],
    keys: HitKeys,
    score: Any,
    where: str,
    defaults: Sequence[str] = PATH_KEYS,
    text: object = None,
) -> Fields:
    """The fields of a hit whose path and heading are in the mapping ``meta``."""
    return Fields(
        path_in(meta, keys, defaults),
        heading_in(meta, keys, text),
        score,
        looked(keys, where, defaults),
        meta,
    )


# --------------------------------------------------------------------------- the interface


class Adapter:
    """One framework's shapes (see the module docstring); the defaults fit a plain
    callable that is handed the limit."""

    #: the kind recorded for the run (``RetrieverKind``); also the adapter's name
    kind: ClassVar[str] = ""
    #: how messages name the framework
    label: ClassVar[str] = ""
    #: whether the retriever's own setting decides how many hits come back (else the
    #: limit groove passes does)
    own_depth: ClassVar[bool] = False
    #: where messages say its hits keep their path (``LangChain metadata['source']``)
    path_hint: ClassVar[str | None] = None
    #: why its hits may carry a bare file name, for the message that says so
    bare_name_cause: ClassVar[str | None] = None
    #: the method groove calls, and its async twin (None: it is called itself)
    call_method: ClassVar[str | None] = None
    async_method: ClassVar[str | None] = None

    def detects(self, obj: Any) -> bool:
        """Whether ``obj`` is this framework's retriever object."""
        return False

    def search_function(self, obj: Any, name: str) -> Callable[[str, int], Any]:
        """``(query, limit) -> answer`` calling ``obj``."""
        raise NotImplementedError

    def hits_in(self, answer: Any, retriever: str) -> Any:
        """The hits inside ``answer`` when it is this framework's result object (an
        iterable, read lazily), else None."""
        return None

    def reads(self, hit: Any) -> bool:
        """Whether ``hit`` is this framework's hit."""
        return False

    def fields(self, hit: Any, keys: HitKeys) -> Fields:
        """``hit``'s path, heading and score (``reads(hit)`` is true)."""
        raise NotImplementedError

    def depth_advice(self, k: int) -> str:
        """How to make the retriever return ``k`` hits."""
        return (
            f"it is asked for limit={k} hits: return up to that many (a service that merges "
            "chunks into their documents should search more chunks than it returns)"
        )


__all__ = [
    "DEFAULT_KEYS",
    "ECHO",
    "PATH_KEYS",
    "Adapter",
    "Fields",
    "HitKeys",
    "HitShapeError",
    "article",
    "dotted",
    "echo",
    "heading_in",
    "layers",
    "looked",
    "mapping_at",
    "meta_fields",
    "own_heading",
    "path_in",
]
