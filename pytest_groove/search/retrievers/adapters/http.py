"""A search service behind HTTP: the shape knowledge (the transport is
:mod:`pytest_groove.search.retrievers.http`).  It is chosen by the spec (a URL), never
detected; its answer is a JSON list of ``{"path", "heading", "score"}``, read as plain
hits, and it is handed the limit.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.search.retrievers.adapters.base import Adapter


class Http(Adapter):
    kind = "http"
    label = "HTTP service"
