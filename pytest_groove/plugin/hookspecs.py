"""Hook specifications a ``conftest.py`` can implement to customise pytest-groove.

Registered by :func:`pytest_groove.plugin.pytest_addhooks`.  This module must stay
import-light: it is loaded in every pytest run of an environment where the plugin
is installed, so the types it mentions are imported for type checking only.

Both hooks are ``firstresult``: the first implementation returning something other
than ``None`` wins, and ``None`` means "use the built-in behaviour".

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_groove.embed.base import Embedder

#: What a custom retriever returns per hit: a :class:`~pytest_groove.search.hits.SearchHit`,
#: any object with ``path``, ``heading`` and ``score`` attributes, or a mapping with
#: those keys.  ``heading`` may be ``None``; hits are taken in the order given.
HitLike = Any

#: ``retriever(query, limit) -> ranked hits``.
Retriever = Callable[[str, int], Sequence[HitLike]]


@pytest.hookspec(firstresult=True)
def pytest_groove_embedder(config: pytest.Config) -> Embedder | None:
    """Return the embedder used to index the knowledge base and embed queries.

    Called once per process, before the index is opened.  Return ``None`` to use
    the model named by ``--groove-model`` / ``groove_model`` / ``groove.toml``.
    The object must implement :class:`pytest_groove.embed.base.Embedder`; its
    ``name`` becomes part of the index identity and of the run fingerprint, so
    keep it stable across runs that should be comparable.
    """


@pytest.hookspec(firstresult=True)
def pytest_groove_retriever(config: pytest.Config) -> Retriever | None:
    """Return a search function that replaces the built-in hybrid search.

    The callable receives the golden query text and the retrieval depth and returns
    ranked hits, best first (see :data:`HitLike`).  When a retriever is supplied the
    plugin builds no index and loads no embedder: it measures *your* system.  The
    run fingerprint records ``"model": "custom"`` and ``"retriever": <name>``, where
    ``<name>`` is the callable's ``groove_name`` attribute if set, else its
    module-qualified name, so history only compares runs of the same retriever.
    """
