"""The ``groove index`` command line that builds the index a run looks for.

A door that finds no index (``groove search``, ``--no-reindex``) names the command to
run first: the KB and the ``--model`` / ``--config`` / ``--index-dir`` the run was given,
so the command builds exactly the index the run then opens; quoted for a POSIX shell
where a value needs it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import shlex
from pathlib import Path

from pytest_groove.errors import (
    GENERIC_INDEX_COMMAND,
    GENERIC_REBUILD_COMMAND,
    IndexMissing,
    clip_path,
)
from pytest_groove.settings.options import RunOptions

#: the options that decide where the index is and what it holds
_INDEX_OPTIONS = ("model", "config", "index-dir")


def index_command(kb: Path, options: RunOptions | None = None, *, force: bool = False) -> str:
    """``groove index --kb-path KB`` plus the index options ``options`` gives (each value
    made fit to quote, as every path in a message is)."""
    parts = ["groove", "index", *(["--force"] if force else []), "--kb-path", clip_path(kb)]
    for name in _INDEX_OPTIONS if options is not None else ():
        value = getattr(options, name.replace("-", "_"))
        if value is not None:
            parts += [f"--{name}", clip_path(value)]
    return shlex.join(parts)


def missing_index(
    exc: IndexMissing, kb: Path, options: RunOptions | None = None, *, no_reindex: bool = False
) -> IndexMissing:
    """``exc`` naming the command for ``kb`` and ``options``, and -- when ``no_reindex`` --
    that dropping that flag builds the index too."""
    return IndexMissing(exc.db_path, index_command(kb, options), no_reindex=no_reindex)


def with_index_commands(message: str, kb: Path, options: RunOptions | None) -> str:
    """``message`` with the library's generic indexing commands made this run's: the
    KB as given and the ``--model`` / ``--config`` / ``--index-dir`` that pick the index
    (a damaged ``.groove/hash`` index is not mended by building ``.groove/e5-small``)."""
    message = message.replace(GENERIC_REBUILD_COMMAND, index_command(kb, options, force=True))
    return message.replace(GENERIC_INDEX_COMMAND, index_command(kb, options))
