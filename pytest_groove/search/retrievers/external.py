"""A team's own retriever, measured in place of the built-in search.

``--retriever SPEC`` (``groove eval``) and ``--groove-retriever SPEC`` (pytest) name
one of:

- ``module:attr`` -- ``attr`` of an importable module (the current directory is
  importable), which is

  - a LangChain retriever: an object with ``invoke(query)`` returning
    ``Document`` s (``BaseRetriever``, a vector store's ``as_retriever()``);
  - a LlamaIndex retriever: an object with ``retrieve(query)`` returning
    ``NodeWithScore`` s;
  - a Haystack retriever component (``run(query=..., top_k=...)``) or ``Pipeline``;
  - or a callable ``(query, limit)`` returning hits -- also Qdrant's ``ScoredPoint``
    lists and Chroma's ``QueryResult``, read as they are;

  each framework is an adapter (:mod:`~pytest_groove.search.retrievers.adapters`),
  tried in the order of its table;

- ``http://HOST/PATH`` (or ``https://``) -- a search service in any language
  (:mod:`pytest_groove.search.retrievers.http`).

How each shape of hit is read is :mod:`pytest_groove.search.retrievers.hit_reader`.  A
relative path is taken as relative to the KB; an absolute path inside the KB is made
relative to it, one outside the KB is kept as written (it names no KB file, and the
searcher's run checks say what such hits cost).  Whatever goes wrong
is one :class:`GrooveError` line that names the retriever; what every later query would
repeat -- the retriever raising, an answer no hit can be read from, a service that is
down (:class:`RetrieverUnavailable`) -- is a :class:`StopsTheRun`, so the run stops at
the first query rather than failing each.  Anything the user's code prints while it is imported
or searches goes to standard error, so ``groove eval --format json`` stays JSON.

This module imports none of the retriever libraries: it recognises their objects by
shape, so none is a dependency.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pytest_groove.errors import GrooveError, StopsTheRun, flag
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.adapters.base import article
from pytest_groove.search.retrievers.adapters.table import ADAPTERS, adapter_of, detect
from pytest_groove.search.retrievers.hit_reader import (
    DEFAULT_KEYS,
    HitKeys,
    echo,
    kb_relative,
    normalise_hits,
)
from pytest_groove.search.retrievers.http import (
    HTTP_TIMEOUT_SECONDS,
    RetrieverUnavailable,
    http_fetch,
    one_line,
    public_url,
    resolve_timeout,
)
from pytest_groove.search.retrievers.key_evidence import (
    KEY_EVIDENCE_QUERIES,
    KeyEvidence,
    missing_heading_key,
)
from pytest_groove.search.retrievers.watchdog import watching
from pytest_groove.settings.options import RunOptions
from pytest_groove.settings.retriever_spec import FORM, MODULE_ATTRIBUTE, is_url, spec_problem

#: the model name recorded in the fingerprint of a run measured with a retriever
CUSTOM_MODEL = "custom"

#: what kind of retriever answers: its adapter's kind, which decides who sets the depth
#: (see hit_checks); one per adapter in ``adapters.table.ADAPTERS`` (a test checks)
RetrieverKind = Literal[
    "langchain", "llamaindex", "haystack", "qdrant", "chroma", "callable", "http"
]


@contextlib.contextmanager
def user_prints_to_stderr() -> Iterator[None]:
    """While the user's code runs, what it writes to standard output goes to standard
    error: its ``print`` s, and what reaches file descriptor 1 without Python (a child
    process it starts, a C library's logging).

    LlamaIndex prints when ``Settings.llm = None``; on standard output that would
    break ``groove eval --format json``.
    """
    with _descriptor_1_to_2(), contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def _descriptor_1_to_2() -> Iterator[None]:
    """Point descriptor 1 at descriptor 2 for the block, then back as it was (also when
    the block raised); nothing is swapped where either is not open."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()  # what we wrote goes out where it was meant to, first
    saved = _stderr_in_place_of_stdout()
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _stderr_in_place_of_stdout() -> int | None:
    """Descriptor 1 duplicated aside and descriptor 2 put in its place; the aside copy
    (None: nothing was swapped)."""
    try:
        saved = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return None
    return saved


@dataclass(frozen=True)
class ExternalRetriever:
    """A retriever the evaluation calls instead of the built-in search."""

    #: how runs measured with it are named in the fingerprint and the reports
    name: str
    #: ``(query, limit) -> raw hits`` (whatever the user's object returns)
    fetch: Callable[[str, int], Any]
    #: the KB its paths are relative to
    kb: Path
    #: who decides how many hits come back: "callable" and "http" get the limit
    kind: RetrieverKind = "callable"
    #: the metadata / payload keys that hold each hit's path and heading
    keys: HitKeys = DEFAULT_KEYS
    #: told each distinct warning once (a NaN score...); None = only kept in ``warnings``
    on_warning: Callable[[str], None] | None = None
    #: the distinct warnings so far, in order
    warnings: list[str] = field(default_factory=list)
    #: the RetrieverUnavailable that ended the first failed search, raised again at once
    #: by every later one (a down service is not waited for once per query)
    down: list[RetrieverUnavailable] = field(default_factory=list)
    #: what the hits so far showed of the heading key ``keys`` names
    heading_evidence: KeyEvidence = field(default_factory=KeyEvidence)

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Ranked hits for ``query``, at most ``limit`` of them, paths KB-relative.

        Raises :class:`RetrieverUnavailable` when the service is down -- at once, and
        with the same line, for every search after the first that found it down -- and
        :class:`StopsTheRun` when the user's code raises.
        """
        if self.down:
            raise RetrieverUnavailable(self.down[0].message)
        # counted until a hit holds the named heading key
        evidence = self.heading_evidence
        looking = self.keys.heading is not None and evidence.held == 0
        # an HTTP exchange has its own deadline; a Python call is only watched
        watch = watching(self.name, query) if self.kind != "http" else contextlib.nullcontext()
        with user_prints_to_stderr(), watch:
            try:
                raw = self.fetch(query, limit)
                # inside the redirect: a generator's code runs while it is read; at
                # most `limit` hits are read, so `limit` means the same for every
                # retriever (one that returns more is told once)
                hits = normalise_hits(
                    raw,
                    self.name,
                    self.kb,
                    keys=self.keys,
                    on_warning=self._warn,
                    evidence=evidence if looking else None,
                    limit=limit,
                )
            except RetrieverUnavailable as exc:
                self.down.append(exc)
                raise
            except GrooveError:
                raise
            except Exception as exc:  # the user's code: any failure is theirs to fix
                # a store down, a client misconfigured, a method left unimplemented: the
                # next query would raise it again, so the run stops at the first
                raise StopsTheRun(self._failed(query, exc)) from None
            except SystemExit as exc:  # sys.exit() / argparse in the user's code
                raise StopsTheRun(exited(self.name, exc, "searching")) from None
            except (KeyboardInterrupt, GeneratorExit):
                raise  # Ctrl-C still means interrupted
            except BaseException as exc:  # the user's own BaseException subclass
                raise StopsTheRun(self._failed(query, exc)) from None
        if looking and evidence.never_held and evidence.queries >= KEY_EVIDENCE_QUERIES:
            raise StopsTheRun(f"{self.heading_key_problem()}; nothing was recorded")
        return hits

    def _failed(self, query: str, exc: BaseException) -> str:
        """The line for the user's code raising ``exc`` on ``query``."""
        text = one_line(exc)
        line = f"retriever {self.name} failed on query {echo(query)}: {type(exc).__name__}" + (
            f": {text}" if text else ""
        )
        adapter = adapter_of(self.kind)
        sync, awaited = adapter.call_method, adapter.async_method
        if isinstance(exc, NotImplementedError) and adapter.own_depth and sync and awaited:
            # a retriever class that implements only its async method (LangChain's
            # _aget_relevant_documents, LlamaIndex's _aretrieve) raises this when called
            line += (
                f"; if it implements only {awaited}() (async), wrap it in a plain function: "
                f"def search(query, limit): return asyncio.run(retriever.{awaited}(query)) "
                f"-- {sync}() is what groove calls"
            )
        return line

    def heading_key_problem(self) -> str | None:
        """The line for a heading key (``--retriever-heading-key``) that no hit so far
        held, None when one did or none was named or no hit was read.

        :meth:`search` stops the run with it once :data:`KEY_EVIDENCE_QUERIES` queries
        were answered; a run of fewer queries is judged at its end.
        """
        evidence = self.heading_evidence
        if self.keys.heading is None or not evidence.never_held:
            return None
        scope = ""
        if evidence.queries >= KEY_EVIDENCE_QUERIES:
            scope = f" in the first {evidence.queries} queries it answered"
        return missing_heading_key(self.name, self.keys.heading, evidence, scope)

    def warn(self, message: str) -> None:
        """Tell ``message`` once per run (see ``on_warning``)."""
        self._warn(message)

    def _warn(self, message: str) -> None:
        # each warning once per run, not once per query
        if message in self.warnings:
            return
        self.warnings.append(message)
        if self.on_warning is not None:
            self.on_warning(message)


def exited(name: str, exc: SystemExit, doing: str) -> str:
    """The line for a retriever that raised SystemExit while ``doing`` (importing...)."""
    return (
        f"retriever {name} exited (SystemExit: {one_line(exc.code)}) while {doing}; a "
        "retriever must return hits, not exit (sys.exit, or argparse reading groove's "
        "command line?)"
    )


# --------------------------------------------------------------------------- naming


#: a repr's memory address (``<object at 0x7f...>``), different in every process
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _partial_name(partial: functools.partial[Any]) -> str:
    """``module.function[partial 1a2b3c4d]``: the wrapped function and a digest of the
    bound arguments' repr (addresses left out, so the digest is the same every run)."""
    bound = _ADDRESS.sub("", repr((partial.args, sorted(partial.keywords.items()))))
    digest = hashlib.sha256(bound.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{retriever_name(partial.func)}[partial {digest}]"


def _store_label(obj: Any) -> str | None:
    """The vector store behind a retriever, with its collection: ``QdrantVectorStore:kb``.

    LangChain's ``VectorStoreRetriever`` keeps it in ``vectorstore``, LlamaIndex's
    ``VectorIndexRetriever`` in ``_vector_store``; two retrievers of the same class
    over different stores then get different default names.
    """
    for attribute in ("vectorstore", "_vector_store", "vector_store"):
        try:
            store = getattr(obj, attribute, None)
        except Exception:  # a property of the user's object may raise
            continue
        if store is not None:
            label = type(store).__name__
            collection = _collection_name(store)
            return f"{label}:{collection}" if collection else label
    return None


def _collection_name(store: Any) -> str | None:
    """A store's collection: Qdrant's ``collection_name``, LangChain Chroma's ``_collection``."""
    for attribute in ("collection_name", "_collection_name"):
        value = getattr(store, attribute, None)
        if isinstance(value, str) and value:
            return value
    value = getattr(getattr(store, "_collection", None), "name", None)
    return value if isinstance(value, str) and value else None


def retriever_name(retriever: Any) -> str:
    """How a retriever object is named: its ``groove_name``, else module.qualname[store]."""
    explicit = getattr(retriever, "groove_name", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    if isinstance(retriever, functools.partial):
        return _partial_name(retriever)
    target: Any = retriever
    if not hasattr(target, "__qualname__"):
        target = type(retriever)
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", repr(target))
    name = f"{module}.{qualname}" if module else str(qualname)
    store = _store_label(retriever)
    return f"{name}[{store}]" if store else name


def _spec_name(spec: str, obj: Any) -> str:
    explicit = getattr(obj, "groove_name", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    store = _store_label(obj)
    return f"{spec}[{store}]" if store else spec


# --------------------------------------------------------------------------- objects


def as_search_function(obj: Any, name: str) -> tuple[Callable[[str, int], Any], RetrieverKind]:
    """``(query, limit) -> raw hits`` for a retriever object: the first adapter of the
    table that detects it says how to call it (:mod:`~pytest_groove.search.retrievers.
    adapters.table`)."""
    if isinstance(obj, type):
        # the class itself (``return MyRetriever`` for ``return MyRetriever()``): its
        # methods want an instance, so every query would fail with a TypeError
        raise GrooveError(
            f"retriever {name} is the class {obj.__qualname__}, not a retriever: return "
            f"(or name) an instance of it, {obj.__name__}(...)"
        )
    _refuse_async(obj, name)
    adapter = detect(obj)
    if adapter is None:
        kind = type(obj).__name__
        raise GrooveError(
            f"retriever {name} is {article(kind)} {kind}: expected a callable (query, limit), "
            "an object with invoke(query) (LangChain) or retrieve(query) (LlamaIndex), or a "
            "Haystack retriever or Pipeline (run)"
        )
    return adapter.search_function(obj, name), cast(RetrieverKind, adapter.kind)


ASYNC_ADVICE = (
    "async retrievers are not supported; wrap it in a plain function: "
    "def search(query, limit): return asyncio.run(retriever.aretrieve(query)) "
    "(or asyncio.run(asearch(query, limit)))"
)


def _refuse_async(obj: Any, name: str) -> None:
    """A retriever that can only be awaited is refused before any search, with the fix."""
    target = obj.func if isinstance(obj, functools.partial) else obj
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 -- an async __call__
    ):
        raise GrooveError(f"retriever {name} is an async def function: {ASYNC_ADVICE}")
    syncs = [a.call_method for a in ADAPTERS if a.call_method]
    for sync in syncs:
        method = getattr(obj, sync, None)
        if method is not None and inspect.iscoroutinefunction(method):
            raise GrooveError(f"retriever {name}: its {sync}() is async def: {ASYNC_ADVICE}")
    if not callable(obj) and not any(hasattr(obj, m) for m in syncs):
        awaited = [a.async_method for a in ADAPTERS if a.async_method]
        found = [m for m in awaited if callable(getattr(obj, m, None))]
        if found:
            kind = type(obj).__name__
            raise GrooveError(
                f"retriever {name} is {article(kind)} {kind} with only {found[0]}(): {ASYNC_ADVICE}"
            )


def from_object(
    obj: Any,
    kb: Path,
    name: str | None = None,
    *,
    keys: HitKeys = DEFAULT_KEYS,
    on_warning: Callable[[str], None] | None = None,
) -> ExternalRetriever:
    """Wrap a retriever object (the pytest hook's answer, or an imported attribute).

    ``name`` (``--retriever-name``) wins over the object's ``groove_name``, which wins
    over its module-qualified class name and store.
    """
    label = name or retriever_name(obj)
    fetch, kind = as_search_function(obj, label)
    return ExternalRetriever(
        name=label, fetch=fetch, kb=kb, kind=kind, keys=keys, on_warning=on_warning
    )


def _import_attribute(spec: str) -> Any:
    problem = spec_problem(spec)
    match = MODULE_ATTRIBUTE.fullmatch(spec)
    if problem is not None or match is None:
        raise GrooveError(f"retriever {echo(spec)}: {problem or FORM}")
    module_name, attribute = match.groups()
    try:
        cwd = os.getcwd()
    except FileNotFoundError:
        raise GrooveError(
            f"retriever {echo(spec)}: the working directory no longer exists (deleted?), so "
            f"{module_name} cannot be looked for there; cd into the project folder"
        ) from None
    if cwd not in sys.path:
        # `groove eval` runs from a console script whose sys.path lacks the project
        sys.path.insert(0, cwd)
    try:
        with user_prints_to_stderr():
            module = importlib.import_module(module_name)
    except SystemExit as exc:  # sys.exit() / argparse at the module's top level
        raise GrooveError(exited(spec, exc, f"importing {module_name}")) from None
    except (KeyboardInterrupt, GeneratorExit):
        raise  # Ctrl-C still means interrupted
    except BaseException as exc:  # a user's module can fail in any way while importing
        raise GrooveError(
            f"retriever {spec}: could not import {module_name} "
            f"({type(exc).__name__}: {one_line(exc)})"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise GrooveError(f"retriever {spec}: {module_name} has no attribute {attribute}")
        target = getattr(target, part)
    return target


def load_retriever(
    spec: str,
    kb: Path,
    *,
    name: str | None = None,
    timeout: float | None = None,
    token_env: str | None = None,
    keys: HitKeys = DEFAULT_KEYS,
    on_warning: Callable[[str], None] | None = None,
) -> ExternalRetriever:
    """The retriever ``spec`` names (see the module docstring).

    Imports the module (or checks the URL and the token) now, so a bad spec stops the
    run before any search.  The fingerprint name is ``name`` (``--retriever-name``)
    when given, else the object's ``groove_name``, else the spec itself with the
    vector store behind it (``search:retriever[QdrantVectorStore:kb]``; a URL without
    credentials or query string).  ``timeout`` and ``token_env`` apply to HTTP
    retrievers (a Python retriever's own client keeps its own timeout); either given
    for a Python retriever is refused, since it would not apply.
    """
    text = spec.strip()
    if is_url(text):
        label = name or public_url(text)
        fetch = http_fetch(text, label, timeout=resolve_timeout(timeout), token_env=token_env)
        return ExternalRetriever(
            name=label, fetch=fetch, kb=kb, kind="http", keys=keys, on_warning=on_warning
        )
    if token_env is not None:
        raise GrooveError(
            f"retriever {text}: {flag('retriever-token-env')} is for http:// retrievers; a Python "
            "retriever reads its own credentials"
        )
    if timeout is not None:
        raise GrooveError(
            f"retriever {text}: {flag('retriever-timeout')} is for http:// retrievers; a Python "
            "retriever is called in this process, where a call cannot be cut short: set the "
            "timeout on the client it uses"
        )
    obj = _import_attribute(text)
    return from_object(obj, kb, name or _spec_name(text, obj), keys=keys, on_warning=on_warning)


def retriever_for_run(
    run: RunOptions, kb: Path, *, on_warning: Callable[[str], None] | None = None
) -> ExternalRetriever | None:
    """The retriever ``run.retriever`` names, with every ``--retriever-*`` option applied.

    None when no retriever was asked for (the built-in search answers).
    """
    if run.retriever is None:
        return None
    # a Python retriever's are refused by the plan when given to the run, and warned
    # about when [retriever] holds them (evaluation/plan.py): not passed on
    http = is_url(run.retriever)
    return load_retriever(
        run.retriever,
        kb,
        name=run.retriever_name,
        timeout=run.retriever_timeout if http else None,
        token_env=run.retriever_token_env if http else None,
        keys=hit_keys(run),
        on_warning=on_warning,
    )


def hit_keys(run: RunOptions) -> HitKeys:
    """``--retriever-path-key`` / ``--retriever-heading-key`` as :class:`HitKeys`."""
    return HitKeys(path=run.retriever_path_key, heading=run.retriever_heading_key)


def http_retriever(
    url: str, kb: Path, *, timeout: float = HTTP_TIMEOUT_SECONDS, token_env: str | None = None
) -> ExternalRetriever:
    """A search service: ``POST {"query", "limit"}`` -> ``[{path, heading, score}]``."""
    label = public_url(url)
    fetch = http_fetch(url, label, timeout=timeout, token_env=token_env)
    return ExternalRetriever(name=label, fetch=fetch, kb=kb, kind="http")


__all__ = [
    "CUSTOM_MODEL",
    "HTTP_TIMEOUT_SECONDS",
    "ExternalRetriever",
    "HitKeys",
    "RetrieverUnavailable",
    "from_object",
    "hit_keys",
    "http_retriever",
    "kb_relative",
    "load_retriever",
    "normalise_hits",
    "retriever_for_run",
    "retriever_name",
    "user_prints_to_stderr",
]
