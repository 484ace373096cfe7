"""A retriever's answer read as ranked :class:`SearchHit` s, whatever shape it has.

Recognised by shape (none of these libraries is imported):

- :class:`SearchHit`, and mappings or objects with ``path`` / ``heading`` / ``score``;
- LangChain ``Document`` s (``page_content`` + ``metadata``), also as the
  ``(Document, score)`` pairs of ``similarity_search_with_score``;
- LlamaIndex ``NodeWithScore`` s (``.node.metadata``, ``.score``);
- Qdrant ``ScoredPoint`` s (``.payload``, ``.score``), or the ``QueryResponse`` that
  ``query_points`` returns (its ``.points``);
- a Chroma ``QueryResult`` (the column-wise dict ``collection.query`` returns, for one
  query: ``ids``, ``metadatas``, ``documents``, ``distances``).

Where a hit carries a metadata mapping (a Document's ``metadata``, a node's
``metadata``, a point's ``payload``, a Chroma row's metadata, or a plain dict hit),
:class:`HitKeys` may name the key holding the path and the heading -- dotted for a
nested mapping (``metadata.source``) -- instead of the defaults below.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import inspect
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_groove.errors import StopsTheRun, flag
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.key_evidence import KeyEvidence, dotted_lookup


class HitShapeError(StopsTheRun):
    """A retriever's answer of a shape no hit can be read from (not a list, a hit
    without a path, a score that is no number ...): its code returns that shape for
    every query, so the run stops at the first, with one line."""


#: metadata keys Markdown splitters use for headings: LangChain's
#: MarkdownHeaderTextSplitter examples use "Header 1".."Header 6" (the key names
#: are the user's choice, so "h2", "Heading 2", "header_2" are accepted as well)
_HEADER_KEY = re.compile(r"(?:header|heading|h)[ _-]?([1-6])", re.IGNORECASE)

#: where the path is looked for in a metadata mapping when no key is configured
_PATH_KEYS = ("path", "source", "file_path", "file_name")

#: a hit's text shown in messages is cut to this many characters
_ECHO = 80


def echo(value: object) -> str:
    """``repr(value)``, cut for a one-line message."""
    text = repr(value)
    return text if len(text) <= _ECHO else text[: _ECHO - 1] + "…"


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
class _Fields:
    path: Any
    heading: Any
    score: Any
    #: where the path was looked for, for the "no path" message
    looked: str
    #: the metadata a named heading key was looked for in (None: the hit has none)
    meta: Mapping[str, Any] | None = None
    #: what the "no path" message says after the hit's number, when its shape knows better
    no_path: str | None = None


@dataclass(frozen=True)
class _ChromaRow:
    """One row of a Chroma ``QueryResult`` (whose columns hold one list per query)."""

    metadata: Mapping[str, Any]
    document: str | None
    distance: float | None


# --------------------------------------------------------------------------- lookups


def _dotted(meta: Mapping[str, Any], key: str) -> Any:
    """``meta[key]``, where ``a.b`` reads ``meta["a"]["b"]`` (an exact key wins); None
    when it holds no such key."""
    return dotted_lookup(meta, key)[1]


def _metadata(obj: Any) -> Mapping[str, Any] | None:
    meta = getattr(obj, "metadata", None)
    return meta if isinstance(meta, Mapping) else None


def _layers(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``meta``, then its nested ``metadata`` (LangChain's layout of a Qdrant payload)."""
    inner = meta.get("metadata")
    return [meta, inner] if isinstance(inner, Mapping) else [meta]


def _first_key(meta: Mapping[str, Any], names: Sequence[str]) -> Any:
    for layer in _layers(meta):
        for name in names:
            value = layer.get(name)
            if value:
                return value
    return None


def _deepest_header(meta: Mapping[str, Any]) -> str | None:
    """The heading a Markdown splitter gave a chunk: its deepest header key."""
    found: list[tuple[int, str]] = []
    for layer in _layers(meta):
        for key, value in layer.items():
            match = _HEADER_KEY.fullmatch(str(key).strip())
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

    for line in text.splitlines():
        if line.strip():
            return kb_reading(line)
    return None


def _heading(meta: Mapping[str, Any], keys: HitKeys, text: object = None) -> Any:
    """A hit's heading from its metadata (and, for header-path splitters, its text)."""
    if keys.heading is not None:
        return _dotted(meta, keys.heading)
    explicit = _first_key(meta, ("heading",))
    if explicit is not None:
        return explicit
    header = _deepest_header(meta)
    if header is not None:
        return header
    if "header_path" in meta:
        # LlamaIndex's MarkdownNodeParser: header_path holds the node's ancestors
        # only ("/Invoices and VAT/" for the "## VAT numbers" node); the node's own
        # heading is the first line of its text
        return own_heading(text)
    return None


def _path(meta: Mapping[str, Any], keys: HitKeys, defaults: Sequence[str]) -> Any:
    if keys.path is not None:
        return _dotted(meta, keys.path)
    return _first_key(meta, defaults)


def _looked(keys: HitKeys, where: str, defaults: Sequence[str]) -> str:
    names = [keys.path] if keys.path is not None else list(defaults)
    return f"{where}[{' / '.join(repr(n) for n in names)}]"


# --------------------------------------------------------------------------- shapes


def _node_fields(hit: Any, keys: HitKeys, score: Any) -> _Fields:
    """A LlamaIndex ``NodeWithScore``."""
    node = hit.node
    meta = _metadata(node) or {}
    text = getattr(node, "text", None)
    defaults = ("file_path", "file_name")
    return _Fields(
        _path(meta, keys, defaults),
        _heading(meta, keys, text),
        score,
        _looked(keys, "node.metadata", defaults),
        meta,
    )


def _document_fields(doc: Any, meta: Mapping[str, Any], keys: HitKeys, score: Any) -> _Fields:
    """A LangChain ``Document`` (score from the pair, else its metadata)."""
    if score is None:
        score = meta.get("score", meta.get("relevance_score"))
    defaults = ("source",)
    return _Fields(
        _path(meta, keys, defaults),
        _heading(meta, keys),
        score,
        _looked(keys, "metadata", defaults),
        meta,
    )


def _payload_fields(meta: Mapping[str, Any], keys: HitKeys, score: Any, where: str) -> _Fields:
    """A Qdrant point's payload, or a Chroma row's metadata."""
    return _Fields(
        _path(meta, keys, _PATH_KEYS),
        _heading(meta, keys),
        score,
        _looked(keys, where, _PATH_KEYS),
        meta,
    )


def _point_fields(point: Any, keys: HitKeys) -> _Fields:
    """A Qdrant ``ScoredPoint``: its payload, which a query may have left out."""
    if point.payload is None:
        return _Fields(
            None,
            None,
            point.score,
            "payload",
            no_path="is a Qdrant point without its payload (payload=None), so it has no path: "
            "query with with_payload=True (query_points' default), or a with_payload list "
            "that names the path's key",
        )
    fields = _payload_fields(point.payload, keys, point.score, "payload")
    advice = (
        f"has no path (got {echo(fields.path)}) in {fields.looked}, the Qdrant point's payload: "
        "keep the path's key in it (with_payload=True, or the key in a with_payload list), "
        f"or name the key with {flag('retriever-path-key')}"
    )
    return replace(fields, no_path=advice)


def _is_node(hit: Any) -> bool:
    return hasattr(hit, "node") and _metadata(getattr(hit, "node", None)) is not None


def _is_document(hit: Any) -> bool:
    return hasattr(hit, "page_content") and _metadata(hit) is not None


def _is_point(hit: Any) -> bool:
    payload = getattr(hit, "payload", False)
    return (payload is None or isinstance(payload, Mapping)) and hasattr(hit, "score")


def _fields(hit: Any, keys: HitKeys) -> _Fields:
    """(path, heading, score) of any hit shape this module accepts."""
    if isinstance(hit, SearchHit):
        return _Fields(hit.path, hit.heading, hit.score, "path")
    if isinstance(hit, _ChromaRow):
        text = hit.document
        fields = _payload_fields(hit.metadata, keys, None, "metadatas")
        heading = fields.heading
        if heading is None and keys.heading is None and "header_path" in hit.metadata:
            heading = own_heading(text)
        # Chroma ranks by distance, smaller first: negated, a larger score is better
        score = None if hit.distance is None else -float(hit.distance)
        return _Fields(fields.path, heading, score, fields.looked, hit.metadata)
    if isinstance(hit, tuple) and len(hit) == 2 and (_is_document(hit[0]) or _is_node(hit[0])):
        inner, score = hit  # similarity_search_with_score's (Document, score)
        if _is_node(inner):
            return _node_fields(inner, keys, score)
        return _document_fields(inner, _metadata(inner) or {}, keys, score)
    if _is_node(hit):
        return _node_fields(hit, keys, getattr(hit, "score", None))
    if _is_document(hit):
        return _document_fields(hit, _metadata(hit) or {}, keys, None)
    if _is_point(hit):
        return _point_fields(hit, keys)
    if isinstance(hit, Mapping):
        if keys.path is None and keys.heading is None:
            return _Fields(hit.get("path"), hit.get("heading"), hit.get("score"), "['path']")
        path = _dotted(hit, keys.path) if keys.path else hit.get("path")
        heading = _dotted(hit, keys.heading) if keys.heading else hit.get("heading")
        return _Fields(path, heading, hit.get("score"), f"[{keys.path or 'path'!r}]", hit)
    path, heading = getattr(hit, "path", None), getattr(hit, "heading", None)
    return _Fields(path, heading, getattr(hit, "score", None), "path")


def _chroma_rows(result: Mapping[str, Any], retriever: str) -> list[_ChromaRow]:
    """The rows of a one-query Chroma ``QueryResult`` (columns of lists, one per query)."""
    ids = result.get("ids")
    if (
        isinstance(ids, list)
        and "distances" not in result
        and not any(isinstance(column, list) for column in ids)
    ):
        # collection.get(): one flat list of the stored records, in no ranked order
        raise HitShapeError(
            f"retriever {retriever} returned a Chroma GetResult ({len(ids)} stored records "
            "listed by collection.get(), not ranked for the query); search with "
            "collection.query(query_texts=[query], n_results=limit) (or query_embeddings="
            "[vector]) and return its QueryResult"
        )
    if not isinstance(ids, list) or len(ids) != 1 or not isinstance(ids[0], list):
        count = len(ids) if isinstance(ids, list) else 0
        raise HitShapeError(
            f"retriever {retriever} returned a Chroma result for {count} queries; query "
            "with one query (query_texts=[query] or query_embeddings=[vector])"
        )
    size = len(ids[0])

    def column(name: str) -> list[Any]:
        value = result.get(name)
        if isinstance(value, list) and value and isinstance(value[0], list):
            return list(value[0]) + [None] * (size - len(value[0]))
        return [None] * size

    if result.get("metadatas") is None:
        raise HitShapeError(
            f"retriever {retriever} returned a Chroma result without metadatas; keep "
            'include=["metadatas", ...] so each hit has its path'
        )
    return [
        _ChromaRow(metadata=meta or {}, document=doc, distance=dist)
        for meta, doc, dist in zip(
            column("metadatas"), column("documents"), column("distances"), strict=True
        )
    ]


def _is_chroma_result(raw: Any) -> bool:
    return isinstance(raw, Mapping) and "ids" in raw and ("metadatas" in raw or "distances" in raw)


def _unwrap(raw: Any, retriever: str) -> Any:
    """The list of hits inside a library's result object."""
    if _is_chroma_result(raw):
        return _chroma_rows(raw, retriever)
    points = getattr(raw, "points", None)
    if isinstance(points, list) and not isinstance(raw, Mapping):
        return points  # Qdrant's QueryResponse from query_points
    return raw


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- paths


#: a URL of any scheme but file: (``https://wiki/a.md``): normalising it as a path
#: would make ``https:/wiki/a.md`` of it
URL_PATH = re.compile(r"^(?!file:)[A-Za-z][A-Za-z0-9+.-]*://")


def _below(candidate: Path, roots: tuple[Path, ...]) -> str | None:
    """``candidate`` relative to the first of ``roots`` it lies in ("" for a root)."""
    for root in roots:
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return None


def kb_relative(path: str, kb: Path) -> str | None:
    """``path`` as a KB-relative POSIX path; None when it points outside the KB.

    A relative path is relative to the KB (``./`` and ``a/../b`` are tidied); an
    absolute one must lie inside the KB, compared with the KB as given and resolved
    (a KB reached through a symlink still matches).  A path outside the KB as
    written is resolved too (``os.path.realpath``: ``/tmp`` -> ``/private/tmp`` on
    macOS, a link to the KB) and accepted when it lands inside the KB.  Paths are
    resolved, never opened: nothing is read.
    """
    if path.startswith("file://"):
        # a file URI: its path is percent-encoded (file:///srv/my%20kb/a.md), and
        # file://localhost/ names this machine as file:/// does
        parsed = urllib.parse.urlsplit(path)
        if parsed.netloc in ("", "localhost"):
            path = urllib.parse.unquote(parsed.path)
        else:
            path = urllib.parse.unquote(path[len("file:") :])
    if URL_PATH.match(path):
        return path  # no file of the KB; kept as written, so a message quotes it whole
    if os.path.isabs(path):
        candidate = Path(os.path.normpath(path))
        relative = _below(candidate, (Path(os.path.abspath(kb)), kb.resolve()))
    else:
        normal = os.path.normpath(path.replace("\\", "/")).replace("\\", "/")
        if normal != ".." and not normal.startswith("../"):
            return PurePosixPath(normal).as_posix() if normal not in ("", ".") else None
        candidate = Path(os.path.abspath(kb)) / normal
        relative = None
    if relative is None:
        # outside as written: where it really leads (a link, /tmp -> /private/tmp)
        relative = _below(Path(os.path.realpath(candidate)), (kb.resolve(),))
    return relative if relative not in (None, "", ".") else None


# --------------------------------------------------------------------------- hits


def _score(value: Any, retriever: str, position: int, warn: Callable[[str], None]) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)  # numpy floats and the like
        except (TypeError, ValueError):
            raise HitShapeError(
                f"retriever {retriever}: hit {position} has a score that is not a "
                f"number ({echo(value)})"
            ) from None
    score = float(value)
    if not math.isfinite(score):
        warn(
            f"retriever {retriever} returned a score that is not a finite number (NaN or "
            "infinity); only the order of its hits is used, and such scores are shown as 0.0"
        )
        return 0.0
    return score


def normalise_hits(
    raw: Any,
    retriever: str,
    kb: Path | None = None,
    *,
    keys: HitKeys = DEFAULT_KEYS,
    on_warning: Callable[[str], None] | None = None,
    evidence: KeyEvidence | None = None,
) -> list[SearchHit]:
    """A retriever's answer as ranked :class:`SearchHit` s (order kept).

    Each hit needs a string path; heading may be missing, None or blank; score may be
    missing (then 0.0) but must be a number when given.  A score that is NaN or
    infinite is taken as 0.0 and ``on_warning`` is told, at most once per answer.
    With ``kb`` given, paths inside the KB are made KB-relative; a path outside it
    is kept as written (it can never match a golden entry).  ``evidence`` counts the
    hits that hold the heading key ``keys`` names (:mod:`~pytest_groove.search.
    key_evidence`).
    """
    raw = _hit_list(raw, retriever)
    warned: list[str] = []

    def warn(message: str) -> None:
        if not warned:
            warned.append(message)
            if on_warning is not None:
                on_warning(message)

    looked_before = evidence.looked if evidence is not None else 0
    hits = _read_hits(raw, retriever, kb, keys, warn, evidence)
    if evidence is not None and evidence.looked > looked_before:
        evidence.queries += 1
    return hits


def _hit_list(raw: Any, retriever: str) -> Any:
    """The iterable of hits in a retriever's answer (unwrapped); a coroutine, one value
    or text instead of hits is a :class:`HitShapeError`."""
    if inspect.isawaitable(raw):
        if inspect.iscoroutine(raw):
            raw.close()  # never awaited: closed, so Python prints no RuntimeWarning
        raise HitShapeError(
            f"retriever {retriever} returned a {type(raw).__name__} (it is async): async "
            "retrievers are not supported; wrap it in a plain function: def search(query, "
            "limit): return asyncio.run(asearch(query, limit))"
        )
    raw = _unwrap(raw, retriever)
    if raw is None or isinstance(raw, str | bytes | Mapping) or not _iterable(raw):
        raise HitShapeError(
            f"retriever {retriever} must return a list of hits, got {type(raw).__name__}"
        )
    return raw


def _read_hits(
    raw: Any,
    retriever: str,
    kb: Path | None,
    keys: HitKeys,
    warn: Callable[[str], None],
    evidence: KeyEvidence | None,
) -> list[SearchHit]:
    """Each hit of ``raw`` as a :class:`SearchHit`, in order (see :func:`normalise_hits`)."""
    hits: list[SearchHit] = []
    for position, hit in enumerate(raw, start=1):
        fields = _fields(hit, keys)
        path, heading = fields.path, fields.heading
        if isinstance(path, os.PathLike):
            path = os.fsdecode(path)  # a pathlib.Path is as good as its string
        if (not isinstance(path, str) or not path) and fields.no_path is not None:
            raise HitShapeError(f"retriever {retriever}: hit {position} {fields.no_path}")
        if not isinstance(path, str) or not path:
            raise HitShapeError(
                f"retriever {retriever}: hit {position} has no path (got {echo(path)}) in "
                f"{fields.looked}; return dicts or objects with path/heading/score, "
                'LangChain Documents with metadata["source"], LlamaIndex nodes with '
                f'metadata["file_path"], or name the key with {flag("retriever-path-key")}'
            )
        if kb is not None:
            # a path outside the KB is kept as written: it names no KB file, and the
            # searcher's checks judge the run's share of such hits (hit_checks.py)
            relative = kb_relative(path, kb)
            path = relative if relative is not None else path
        if isinstance(heading, str) and not heading.strip():
            heading = None  # Chroma's metadata cannot hold None: "" stands for none
        if heading is not None and not isinstance(heading, str):
            raise HitShapeError(
                f"retriever {retriever}: hit {position} has a heading that is not text "
                f"({echo(heading)}); use a string or None"
            )
        score = _score(fields.score, retriever, position, warn)
        hits.append(SearchHit(rank=position, path=path, heading=heading, score=score))
        if evidence is not None and keys.heading is not None and fields.meta is not None:
            evidence.hit(fields.meta, keys.heading)
    return hits


__all__ = [
    "DEFAULT_KEYS",
    "HitKeys",
    "HitShapeError",
    "echo",
    "kb_relative",
    "normalise_hits",
    "own_heading",
]
