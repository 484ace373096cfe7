"""pytest-groove's pytest plugin (entry point ``pytest11: groove``).

This module is loaded by every pytest run in an environment where pytest-groove is
installed, so it is deliberately thin and import-light: at import time it needs only
pytest and the standard library.  It registers the options, the ini keys and the hook
specifications, and -- only when a knowledge base is configured (``--groove-kb`` or
the ``groove_kb`` ini key) -- registers hook objects by role:

- every process gets the per-process :class:`~.runner.ProcessRunner` (the plan, the
  searcher, one query at a time) and the golden file's collector (``collection.py``),
  which import the engine and the evaluation code;
- the controller or the single process -- where ``config.workerinput`` is absent --
  also gets the controller's hooks (``controller.py``: begin, gather, finish), and
  the xdist hand-off (``xdist.py``) when pytest-xdist is loaded; an xdist worker is
  given the worker role instead (``xdist.become_worker``).

With neither set, nothing else happens: no marker, no collection, no files read or
written.  The package's modules:

- ``options``: the pytest spelling of the shared option table
  (:mod:`pytest_groove.settings.options`);
- ``hookspecs``: the hooks a ``conftest.py`` can implement;
- ``runner``, ``collection``, ``items``, ``retriever``, ``controller``, ``unscored``,
  ``xdist``, ``output``, ``interrupt``: the active plugin, by role.

How the golden items are collected (documented in docs/pytest-plugin.md):

- ``pytest --groove-kb KB`` with no test paths runs only the golden queries: the
  golden file replaces the default paths (``testpaths`` / the current directory);
- ``pytest tests/ --groove-kb KB`` runs ``tests/`` and the golden queries;
- with ``groove_kb`` set in the ini file (or ``--groove-kb`` in ``addopts`` /
  ``PYTEST_ADDOPTS``: standing configuration, not typed), a plain ``pytest`` runs the
  usual tests and the golden queries (deselect them with ``-m "not groove"``), and
  naming particular test files or node ids runs those alone;
- a path or node id that already names the golden file is left alone, so an IDE can
  run a single golden query by its node id; with no knowledge base configured, a
  ``.groove-eval.yml`` named that way makes its folder the knowledge base
  (``options.read_options``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

from pytest_groove.plugin import plain_imports

# the package's own modules are loaded from their bytecode, not pytest's rewrite hook:
# installed before any other of them is imported, these few lines' own imports included
plain_imports.install()

from pytest_groove.plugin import hookspecs  # noqa: E402
from pytest_groove.plugin.options import add_options, read_options  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``groove`` option group and its ini keys."""
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register ``pytest_groove_embedder`` and ``pytest_groove_retriever``."""
    pluginmanager.add_hookspecs(hookspecs)


#: standard output was closed when pytest started (see pytest_load_initial_conftests)
_STDOUT_WAS_CLOSED = False


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> Generator[None, Any, None]:
    """With standard output closed and a knowledge base asked for, give pytest a
    stand-in before its capture saves ``sys.stdout``, so the session can end in one
    usage error rather than pytest's own traceback on the way out."""
    global _STDOUT_WAS_CLOSED
    if sys.stdout is None and _asks_for_kb(early_config):
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        _STDOUT_WAS_CLOSED = True
    yield


def _asks_for_kb(config: pytest.Config) -> bool:
    if getattr(config.known_args_namespace, "groove_kb", None):
        return True
    try:
        return bool(config.getini("groove_kb"))
    except (ValueError, KeyError):
        return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Switch the plugin on when a knowledge base is configured; else stay inert."""
    options = read_options(config)
    if options is None:
        return
    # Heavy imports happen here, and only here.
    from pytest_groove.plugin.runner import activate

    workerinput = getattr(config, "workerinput", None)
    records = workerinput is None
    guard = None
    golden = None
    if records:
        # before pytest's terminal reporter takes sys.stdout (this hook runs first)
        from pytest_groove.plugin.output import guard_stdout

        guard = guard_stdout(closed=_STDOUT_WAS_CLOSED)
    else:
        # an xdist worker: the golden set the controller parsed, not the file again
        from pytest_groove.plugin.xdist import handed_golden

        golden = handed_golden(workerinput)
    try:
        runner = activate(config, options, golden)
    except BaseException:
        if guard is not None:
            guard.restore()
        raise
    if workerinput is not None:
        from pytest_groove.plugin.xdist import become_worker

        become_worker(runner, workerinput)
    if records:
        # the controller, or the single process without xdist: it prepares, gathers
        # and finishes; an xdist worker only searches
        from pytest_groove.plugin.controller import register_controller

        register_controller(config, runner, guard)
