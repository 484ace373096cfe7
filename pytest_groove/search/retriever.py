"""A team's own retriever, measured in place of the built-in search.

``--retriever SPEC`` (``groove eval``) and ``--groove-retriever SPEC`` (pytest) name
one of:

- ``module:attr`` -- ``attr`` of an importable module (the current directory is
  importable), which is

  - a LangChain retriever: an object with ``invoke(query)`` returning
    ``Document`` s (``BaseRetriever``, a vector store's ``as_retriever()``);
  - a LlamaIndex retriever: an object with ``retrieve(query)`` returning
    ``NodeWithScore`` s;
  - or a callable ``(query, limit)`` returning hits;

- ``http://HOST/PATH`` (or ``https://``) -- a search service in any language: it
  receives ``POST {"query": ..., "limit": ...}`` (JSON) and answers with a JSON
  list of ``{"path": ..., "heading": ..., "score": ...}``, best first.

Hits may be :class:`SearchHit` s, mappings or objects with ``path`` / ``heading``
/ ``score``, LangChain ``Document`` s (path from ``metadata["source"]``, heading
from the deepest ``Header N`` key a Markdown splitter set, or ``heading``; score
from ``metadata["score"]`` / ``["relevance_score"]`` when present) and LlamaIndex
``NodeWithScore`` s (path from ``metadata["file_path"]`` or ``["file_name"]``,
heading from ``metadata["heading"]`` or the last part of ``["header_path"]``,
score from ``.score``).  A relative path is taken as relative to the KB; an
absolute path inside the KB is made relative to it, one outside the KB is an
error naming the hit.  Whatever goes wrong is one :class:`GrooveError` line that
names the retriever.

This module imports neither LangChain nor LlamaIndex: it recognises their objects
by shape, so neither is a dependency.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.search.hits import SearchHit

#: seconds an HTTP retriever may take to answer one query
HTTP_TIMEOUT_SECONDS = 30.0
#: the largest HTTP answer read (a ranked list of paths is far smaller)
HTTP_MAX_BYTES = 16 * 1024 * 1024
#: the model name recorded in the fingerprint of a run measured with a retriever
CUSTOM_MODEL = "custom"

#: metadata keys Markdown splitters use for headings: LangChain's
#: MarkdownHeaderTextSplitter examples use "Header 1".."Header 6" (the key names
#: are the user's choice, so "h2", "Heading 2", "header_2" are accepted as well)
_HEADER_KEY = re.compile(r"(?:header|heading|h)[ _-]?([1-6])", re.IGNORECASE)

#: a hit's text shown in messages is cut to this many characters
_ECHO = 80


def _echo(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _ECHO else text[: _ECHO - 1] + "…"


@dataclass(frozen=True)
class ExternalRetriever:
    """A retriever the evaluation calls instead of the built-in search."""

    #: how runs measured with it are named in the fingerprint and the reports
    name: str
    #: ``(query, limit) -> raw hits`` (whatever the user's object returns)
    fetch: Callable[[str, int], Any]
    #: the KB its paths are relative to
    kb: Path

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Ranked hits for ``query``, at most ``limit`` of them, paths KB-relative."""
        try:
            raw = self.fetch(query, limit)
        except GrooveError:
            raise
        except Exception as exc:  # the user's code: any failure is theirs to fix
            raise GrooveError(
                f"retriever {self.name} failed on query {_echo(query)}: "
                f"{type(exc).__name__}: {_one_line(exc)}"
            ) from None
        # a retriever that returns more than it was asked for is cut to the limit,
        # so `limit` means the same for every retriever
        return normalise_hits(raw, self.name, self.kb)[:limit]


def _one_line(exc: object) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


# --------------------------------------------------------------------------- hits


def _field(hit: Any, name: str) -> Any:
    if isinstance(hit, Mapping):
        return hit.get(name)
    return getattr(hit, name, None)


def _metadata(obj: Any) -> Mapping[str, Any] | None:
    meta = getattr(obj, "metadata", None)
    return meta if isinstance(meta, Mapping) else None


def _deepest_header(meta: Mapping[str, Any]) -> str | None:
    """The heading a Markdown splitter gave a chunk: its deepest header key."""
    found: list[tuple[int, str]] = []
    for key, value in meta.items():
        match = _HEADER_KEY.fullmatch(str(key).strip())
        if match and isinstance(value, str) and value.strip():
            found.append((int(match.group(1)), value))
    return max(found)[1] if found else None


def _langchain_fields(doc: Any, meta: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    heading = meta.get("heading")
    if heading is None:
        heading = _deepest_header(meta)
    score = meta.get("score", meta.get("relevance_score"))
    return meta.get("source"), heading, score


def _llamaindex_fields(hit: Any) -> tuple[Any, Any, Any]:
    node = hit.node
    meta = _metadata(node) or {}
    path = meta.get("file_path") or meta.get("file_name")
    heading = meta.get("heading")
    if heading is None:
        header_path = meta.get("header_path")
        if isinstance(header_path, str):
            parts = [part for part in header_path.split("/") if part.strip()]
            heading = parts[-1] if parts else None
    if heading is None:
        heading = _deepest_header(meta)
    return path, heading, getattr(hit, "score", None)


def _fields(hit: Any) -> tuple[Any, Any, Any]:
    """(path, heading, score) of any hit shape this module accepts."""
    if hasattr(hit, "node") and _metadata(getattr(hit, "node", None)) is not None:
        return _llamaindex_fields(hit)  # LlamaIndex NodeWithScore
    meta = _metadata(hit)
    if meta is not None and hasattr(hit, "page_content"):
        return _langchain_fields(hit, meta)  # LangChain Document
    return _field(hit, "path"), _field(hit, "heading"), _field(hit, "score")


def kb_relative(path: str, kb: Path) -> str | None:
    """``path`` as a KB-relative POSIX path; None when it points outside the KB.

    A relative path is already KB-relative (``./`` and ``a/../b`` are tidied);
    an absolute one must lie inside the KB (compared after resolving the KB, so a
    KB reached through a symlink still matches).  Nothing is read.
    """
    if path.startswith("file://"):
        path = path[len("file://") :]
    if os.path.isabs(path):
        candidate = Path(os.path.normpath(path))
        for root in (Path(os.path.abspath(kb)), kb.resolve()):
            try:
                relative = candidate.relative_to(root).as_posix()
            except ValueError:
                continue
            return relative if relative not in ("", ".") else None
        return None
    normal = os.path.normpath(path.replace("\\", "/")).replace("\\", "/")
    if normal == ".." or normal.startswith("../") or normal in ("", "."):
        return None
    return PurePosixPath(normal).as_posix()


def normalise_hits(raw: Any, retriever: str, kb: Path | None = None) -> list[SearchHit]:
    """A retriever's answer as ranked :class:`SearchHit` s (order kept).

    Each hit needs a string path; heading may be missing or None; score may be
    missing (then 0.0) but must be a number when given.  With ``kb`` given, paths
    are made KB-relative and a path outside the KB is refused.
    """
    if raw is None or isinstance(raw, str | bytes | Mapping) or not _iterable(raw):
        raise GrooveError(
            f"retriever {retriever} must return a list of hits, got {type(raw).__name__}"
        )
    hits: list[SearchHit] = []
    for position, hit in enumerate(raw, start=1):
        if isinstance(hit, SearchHit):
            path, heading, score = hit.path, hit.heading, hit.score
        else:
            path, heading, score = _fields(hit)
        if not isinstance(path, str) or not path:
            raise GrooveError(
                f"retriever {retriever}: hit {position} has no path (got {_echo(path)}); "
                "return dicts or objects with path/heading/score, LangChain Documents with "
                'metadata["source"], or LlamaIndex nodes with metadata["file_path"]'
            )
        if kb is not None:
            relative = kb_relative(path, kb)
            if relative is None:
                raise GrooveError(
                    f"retriever {retriever}: hit {position} ({_echo(path)}) is outside the "
                    f"knowledge base {kb}; return paths relative to it or inside it"
                )
            path = relative
        if heading is not None and not isinstance(heading, str):
            raise GrooveError(
                f"retriever {retriever}: hit {position} has a heading that is not text "
                f"({_echo(heading)}); use a string or None"
            )
        if score is None:
            score = 0.0
        if isinstance(score, bool) or not isinstance(score, int | float):
            try:
                score = float(score)  # numpy floats and the like
            except (TypeError, ValueError):
                raise GrooveError(
                    f"retriever {retriever}: hit {position} has a score that is not a "
                    f"number ({_echo(score)})"
                ) from None
        hits.append(SearchHit(rank=position, path=path, heading=heading, score=float(score)))
    return hits


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- objects


def retriever_name(retriever: Any) -> str:
    """How a retriever object is named: its ``groove_name``, else module.qualname."""
    explicit = getattr(retriever, "groove_name", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    target: Any = retriever
    if not hasattr(target, "__qualname__"):
        target = type(retriever)
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", repr(target))
    return f"{module}.{qualname}" if module else str(qualname)


def as_search_function(obj: Any, name: str) -> Callable[[str, int], Any]:
    """``(query, limit) -> raw hits`` for a LangChain, LlamaIndex or plain retriever."""
    invoke = getattr(obj, "invoke", None)
    if callable(invoke):  # LangChain: the limit is the retriever's own setting (k)
        return lambda query, limit: invoke(query)
    retrieve = getattr(obj, "retrieve", None)
    if callable(retrieve):  # LlamaIndex: likewise (similarity_top_k)
        return lambda query, limit: retrieve(query)
    if callable(obj):
        return lambda query, limit: obj(query, limit)
    raise GrooveError(
        f"retriever {name} is a {type(obj).__name__}: expected a callable (query, limit), "
        "an object with invoke(query) (LangChain) or retrieve(query) (LlamaIndex)"
    )


def from_object(obj: Any, kb: Path, name: str | None = None) -> ExternalRetriever:
    """Wrap a retriever object (the pytest hook's answer, or an imported attribute)."""
    label = name or retriever_name(obj)
    return ExternalRetriever(name=label, fetch=as_search_function(obj, label), kb=kb)


_SPEC = re.compile(r"([A-Za-z_][\w.]*):([A-Za-z_][\w.]*)")


def _import_attribute(spec: str) -> Any:
    match = _SPEC.fullmatch(spec)
    if match is None:
        raise GrooveError(
            f"retriever {_echo(spec)}: expected module:attribute (for example "
            "my_search:retriever) or an http:// URL"
        )
    module_name, attribute = match.groups()
    cwd = os.getcwd()
    if cwd not in sys.path:
        # `groove eval` runs from a console script whose sys.path lacks the project
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a user's module can fail in any way while importing
        raise GrooveError(
            f"retriever {spec}: could not import {module_name} "
            f"({type(exc).__name__}: {_one_line(exc)})"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise GrooveError(f"retriever {spec}: {module_name} has no attribute {attribute}")
        target = getattr(target, part)
    return target


def load_retriever(
    spec: str, kb: Path, *, timeout: float = HTTP_TIMEOUT_SECONDS
) -> ExternalRetriever:
    """The retriever ``spec`` names (see the module docstring).

    Imports the module (or checks the URL) now, so a bad spec stops the run before
    any search.  The fingerprint name is the object's ``groove_name`` when set,
    else the spec itself (a URL without credentials or query string).
    """
    text = spec.strip()
    if text.startswith(("http://", "https://")):
        return http_retriever(text, kb, timeout=timeout)
    obj = _import_attribute(text)
    explicit = getattr(obj, "groove_name", None)
    name = explicit if isinstance(explicit, str) and explicit else text
    return from_object(obj, kb, name)


# --------------------------------------------------------------------------- HTTP


def _public_url(url: str) -> str:
    """The URL without user:password@ and without a query string (for the fingerprint)."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.port is not None:
        host += f":{parsed.port}"
    return urllib.parse.urlunsplit((parsed.scheme, host, parsed.path, "", ""))


def http_retriever(
    url: str, kb: Path, *, timeout: float = HTTP_TIMEOUT_SECONDS
) -> ExternalRetriever:
    """A search service: ``POST {"query", "limit"}`` -> ``[{path, heading, score}]``."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise GrooveError(f"retriever {_echo(url)}: not an http:// or https:// URL with a host")
    name = _public_url(url)

    def fetch(query: str, limit: int) -> Any:
        body = json.dumps({"query": query, "limit": limit}, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data = response.read(HTTP_MAX_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise GrooveError(
                f"retriever {name} answered HTTP {exc.code} {exc.reason} for query {_echo(query)}"
            ) from None
        except TimeoutError:
            raise GrooveError(
                f"retriever {name} did not answer within {timeout:g} s (query {_echo(query)})"
            ) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError | socket.timeout):
                raise GrooveError(
                    f"retriever {name} did not answer within {timeout:g} s (query {_echo(query)})"
                ) from None
            raise GrooveError(f"retriever {name} cannot be reached: {_one_line(reason)}") from None
        except (OSError, ValueError) as exc:
            raise GrooveError(f"retriever {name} failed: {_one_line(exc)}") from None
        if len(data) > HTTP_MAX_BYTES:
            raise GrooveError(
                f"retriever {name} answered more than {HTTP_MAX_BYTES} bytes for one query"
            )
        try:
            answer = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise GrooveError(
                f"retriever {name} did not answer with JSON (expected a list of "
                '{"path", "heading", "score"} objects)'
            ) from None
        if not isinstance(answer, list):
            raise GrooveError(
                f"retriever {name} answered a JSON {type(answer).__name__}; expected a list "
                'of {"path", "heading", "score"} objects'
            )
        return answer

    return ExternalRetriever(name=name, fetch=fetch, kb=kb)


__all__ = [
    "CUSTOM_MODEL",
    "ExternalRetriever",
    "from_object",
    "kb_relative",
    "load_retriever",
    "normalise_hits",
    "retriever_name",
]
