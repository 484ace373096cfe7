"""The plugin's retriever door: ``--groove-retriever``, a conftest hook, or the ini key.

Precedence, so that what is typed wins over what is in files:

1. ``--groove-retriever SPEC`` on the command line -- the conftest hook is then not
   even called (it may be costly to build);
2. a ``pytest_groove_retriever`` hook in a conftest.py, or ``groove_retriever`` in the
   ini file -- both are files, so having both is a usage error naming each;
3. neither: the built-in search.

Either way the object is wrapped by :mod:`pytest_groove.search.retrievers.external`, the library
both doors share, which normalises hits (LangChain ``Document`` s, LlamaIndex
``NodeWithScore`` s, Qdrant points, Chroma results, dicts, objects) and makes their
paths KB-relative.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_groove.errors import GrooveError

if TYPE_CHECKING:
    from pytest_groove.search.retrievers.external import ExternalRetriever
    from pytest_groove.settings.options import RunOptions


def hook_files(config: pytest.Config) -> str:
    """Where the ``pytest_groove_retriever`` hooks are, for the clash message."""
    found: list[str] = []
    for impl in config.hook.pytest_groove_retriever.get_hookimpls():
        where = getattr(impl.plugin, "__file__", None) or impl.plugin_name
        with contextlib.suppress(ValueError):
            where = str(Path(where).relative_to(config.rootpath))
        found.append(str(where))
    return ", ".join(found) or "a plugin"


def _ini_file(config: pytest.Config) -> str:
    return str(config.inipath) if config.inipath is not None else "the ini file"


def _call_hook(config: pytest.Config, quiet: Callable[[], Any]) -> Any:
    """The ``pytest_groove_retriever`` hooks' answer; a hook that raises (or exits) is
    one :class:`GrooveError` line naming where it is, not pytest's INTERNALERROR."""
    try:
        with quiet():
            return config.hook.pytest_groove_retriever(config=config)
    except GrooveError:
        raise
    except SystemExit as exc:
        from pytest_groove.search.retrievers.external import exited

        raise GrooveError(
            exited(f"hook pytest_groove_retriever in {hook_files(config)}", exc, "building it")
        ) from None
    except (KeyboardInterrupt, GeneratorExit):
        raise  # Ctrl-C still means interrupted
    except BaseException as exc:  # the user's hook: building a retriever can fail in any way
        from pytest_groove.search.retrievers.http import one_line

        raise GrooveError(
            f"retriever hook pytest_groove_retriever in {hook_files(config)} failed: "
            f"{type(exc).__name__}: {one_line(exc)}"
        ) from None


def plugin_retriever(
    config: pytest.Config,
    spec: str | None,
    kb: Path,
    run: RunOptions | None = None,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> ExternalRetriever | None:
    """The retriever this session measures, or None for the built-in search.

    ``spec`` is the effective ``--groove-retriever`` / ``groove_retriever`` value;
    ``run`` (read from ``config`` when not given) supplies ``--groove-retriever-name``,
    the HTTP timeout and token, and the path / heading keys.  Raises
    :class:`~pytest_groove.errors.GrooveError` when the retriever cannot be loaded or
    two files name one.
    """
    typed = config.getoption("groove_retriever", default=None)
    if typed is None and spec is None and not config.hook.pytest_groove_retriever.get_hookimpls():
        # the built-in search: the retriever door (and the HTTP client) is never imported
        return None
    # imported here: the plugin module stays pytest + stdlib at import time
    from dataclasses import replace

    from pytest_groove.search.retrievers.external import (
        from_object,
        hit_keys,
        retriever_for_run,
        user_prints_to_stderr,
    )
    from pytest_groove.settings.options import RunOptions

    if run is None:
        from pytest_groove.plugin.options import read_options

        options = read_options(config)
        run = options.run if options is not None else RunOptions()

    if typed is not None:
        return retriever_for_run(replace(run, retriever=str(typed)), kb, on_warning=on_warning)
    hooked = _call_hook(config, user_prints_to_stderr)
    if hooked is not None and spec is not None:
        raise GrooveError(
            f"two retrievers are configured: the pytest_groove_retriever hook in "
            f"{hook_files(config)} and groove_retriever = {spec} in {_ini_file(config)}; "
            "remove one, or choose on the command line with --groove-retriever SPEC"
        )
    if isinstance(hooked, str | bytes):
        raise GrooveError(_spec_from_hook(config, hooked))
    if hooked is not None:
        return from_object(
            hooked, kb, run.retriever_name, keys=hit_keys(run), on_warning=on_warning
        )
    if spec is not None:
        _import_beside_the_ini(config, spec)
        return retriever_for_run(replace(run, retriever=spec), kb, on_warning=on_warning)
    return None


def _spec_from_hook(config: pytest.Config, answer: str | bytes) -> str:
    """The line for a hook that returned a spec's text instead of the retriever."""
    from pytest_groove.errors import clip
    from pytest_groove.settings.retriever_spec import spec_problem

    text = answer if isinstance(answer, str) else answer.decode("utf-8", "replace")
    spec = text.strip() if spec_problem(text) is None else "MODULE:ATTR"
    return (
        f"the pytest_groove_retriever hook in {hook_files(config)} returned the "
        f"{type(answer).__name__} {clip(text)!r}, not a retriever: return the retriever "
        f"object itself, or drop the hook and name it with --groove-retriever {clip(spec)} "
        "(ini groove_retriever)"
    )


def _import_beside_the_ini(config: pytest.Config, spec: str) -> None:
    """A ``module:attr`` named in the ini file is looked for beside the ini file too,
    as the ini's paths are read from there: run from a subfolder (``cd tests &&
    pytest``, an IDE's working directory), the project's module was not found."""
    if "://" in spec or config.inipath is None:
        return
    folder = str(config.inipath.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
