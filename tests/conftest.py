"""Setup shared by the tests under tests/ (the repository-wide part is ../conftest.py)."""

from __future__ import annotations

import contextlib
import importlib

import pytest

# Imported before any test runs, not only inside the inner runs: pytester's in-process
# runs drop the modules a run imported, and numpy and PyYAML's C loader do not survive
# a second import.
import pytest_groove.engine.builtin
import pytest_groove.plugin.controller
import pytest_groove.plugin.runner  # noqa: F401
from tests.helpers.cli_invoke import Groove

#: pydantic neither: a part of it imported first inside an inner run (its models load
#: lazily) is dropped after it, and the next import builds a second copy whose models
#: the first copy's caches do not know (chromadb, qdrant-client, haystack and
#: LangChain all build on it), so it is imported whole here when it is installed
PRELOADED = ("pydantic", "pydantic.main", "pydantic.root_model", "pydantic_settings")
for _name in PRELOADED:
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)


@pytest.fixture(scope="session")
def groove() -> Groove:
    """The ``groove`` command: ``groove(*args, cwd=, env=)`` in-process,
    ``groove.process(*args, cwd=, env=, python=, timeout=)`` in a new interpreter; both
    answer a :class:`~tests.helpers.cli_invoke.CliRun` (tests/helpers/cli_invoke.py)."""
    return Groove()
