"""Import pytest-groove's own modules the ordinary way inside a pytest run.

pytest rewrites the ``assert`` statements of every module of a distribution that
declares a ``pytest11`` entry point, so that a helper library of assertions reports
them well.  Its import hook does that by reading each module's source, parsing it to
a Python syntax tree and compiling the tree -- on every run when bytecode is not
written (``PYTHONDONTWRITEBYTECODE=1``, read-only site-packages), and it never reads
the ``__pycache__`` the installer compiled.  pytest-groove's ~120 modules hold no
test assertions (each says so with ``PYTEST_DONT_REWRITE`` in its docstring, which a
test checks), so that work bought nothing and made ``pytest --groove-kb`` start up to
twice as slowly as ``groove eval``.

:func:`install` puts a finder in front of pytest's hook that hands the package's
modules to Python's own path finder: they are loaded from their compiled bytecode,
exactly as ``groove`` loads them.  Nothing else is redirected: a team's tests, their
conftest files and other plugins are rewritten as pytest means them to be.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

#: the package whose modules are imported without pytest's rewrite hook
PACKAGE = "pytest_groove"


class PlainImports(importlib.abc.MetaPathFinder):
    """Finds ``pytest_groove.*`` with the standard path finder (compiled bytecode)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PACKAGE + "."):
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, path, target)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(finder, PlainImports) for finder in sys.meta_path):
        sys.meta_path.insert(0, PlainImports())
