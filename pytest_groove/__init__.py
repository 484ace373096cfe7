"""pytest-groove: retrieval regression testing for Markdown knowledge bases.

The public API is the names in ``__all__``; everything else is private.  Names are
resolved lazily so that importing the package (which pytest does for every session,
through the plugin entry point) costs nothing until a groove feature is used.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib

#: as ``typing.TYPE_CHECKING`` (which type checkers also read under this name): the
#: ``groove`` console script imports this package before its Ctrl-C handling is in
#: place, so it imports nothing Python has not loaded already
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "GrooveError": "pytest_groove.errors",
    "UsageError": "pytest_groove.errors",
    "Settings": "pytest_groove.settings.config",
    "load_settings": "pytest_groove.settings.config",
    "Engine": "pytest_groove.engine.builtin",
    "open_engine": "pytest_groove.engine.builtin",
    "run_indexer": "pytest_groove.engine.builtin",
    "Embedder": "pytest_groove.embed.base",
    "get_embedder": "pytest_groove.embed.registry",
    "register_embedder": "pytest_groove.embed.registry",
    "SearchHit": "pytest_groove.search.hits",
    "build_fts_query": "pytest_groove.search.query.fts_query",
    "build_terms_query": "pytest_groove.search.query.fts_query",
    "parse_query": "pytest_groove.search.query.fts_query",
    "GoldenSet": "pytest_groove.scoring.records",
    "GoldenQuery": "pytest_groove.scoring.records",
    "ExpectedEntry": "pytest_groove.scoring.records",
    "load_golden": "pytest_groove.evaluation.golden.file",
}

__all__ = [
    "Embedder",
    "Engine",
    "ExpectedEntry",
    "GoldenQuery",
    "GoldenSet",
    "GrooveError",
    "SearchHit",
    "Settings",
    "UsageError",
    "__version__",
    "build_fts_query",
    "build_terms_query",
    "get_embedder",
    "load_golden",
    "load_settings",
    "open_engine",
    "parse_query",
    "register_embedder",
    "run_indexer",
]

if TYPE_CHECKING:
    from typing import Any

    from pytest_groove.embed.base import Embedder
    from pytest_groove.embed.registry import get_embedder, register_embedder
    from pytest_groove.engine.builtin import Engine, open_engine, run_indexer
    from pytest_groove.errors import GrooveError, UsageError
    from pytest_groove.evaluation.golden.file import load_golden
    from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
    from pytest_groove.search.hits import SearchHit
    from pytest_groove.search.query.fts_query import build_fts_query, build_terms_query, parse_query
    from pytest_groove.settings.config import Settings, load_settings


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_groove' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)
