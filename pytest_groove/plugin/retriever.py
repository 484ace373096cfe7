"""The plugin's retriever door: a conftest hook's retriever, or ``--groove-retriever``.

The hook (``pytest_groove_retriever``) wins over the option.  Either way the object is
wrapped by :mod:`pytest_groove.search.retriever`, the library both doors share, which
normalises hits (LangChain ``Document`` s, LlamaIndex ``NodeWithScore`` s, dicts,
objects) and makes their paths KB-relative.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_groove.search.retriever import ExternalRetriever


def plugin_retriever(config: pytest.Config, spec: str | None, kb: Path) -> ExternalRetriever | None:
    """The retriever this session measures, or None for the built-in search.

    Raises :class:`~pytest_groove.errors.GrooveError` when ``spec`` cannot be loaded.
    """
    hooked = config.hook.pytest_groove_retriever(config=config)
    if hooked is None and spec is None:
        return None
    # imported here: the plugin module stays pytest + stdlib at import time
    from pytest_groove.search.retriever import from_object, load_retriever

    if hooked is not None:
        return from_object(hooked, kb)
    assert spec is not None
    return load_retriever(spec, kb)
