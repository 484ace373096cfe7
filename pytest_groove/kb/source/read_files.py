"""Reading the files a walk of the KB collected: below the root, never through a link.

Shared by the indexer and :mod:`pytest_groove.kb.source.disk_view` (which reads the KB for an
external retriever without indexing it); imports nothing heavy.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.files.beneath import Skipped, open_root, read_beneath
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.kb.source.walk import CollectResult

#: a KB file larger than this is skipped with a warning
FILE_SIZE_CAP = 50 * 1024 * 1024


def read_collected(
    kb: Path,
    collected: CollectResult,
    warnings: list[str] | None = None,
    refused: set[str] | None = None,
) -> dict[str, bytes | None]:
    """The bytes of every collected file, in walk order; None for a skipped one.

        Files are read below the KB root without following links, and only if each is
        still the file the walk saw: a swap since then is skipped, never followed
        (:mod:`pytest_groove.files.beneath`).  Each skip adds a line to ``warnings``; a file
    refused for its own lasting state (over the size cap, a hard link) is also added to
    ``refused``: its old rows must go, as a fresh index would not have them.
    """
    root = kb.resolve()
    contents: dict[str, bytes | None] = {}
    try:
        root_fd = open_root(root)
    except OSError as exc:
        raise_if_limit(exc, kb)
        raise GrooveError(
            f"cannot read the knowledge base folder {clip_path(kb)} ({exc.strerror}); check "
            "its permissions"
        ) from None
    try:
        for rel in collected.files:
            try:
                contents[rel] = read_beneath(
                    root_fd, root, rel, collected.identities.get(rel), FILE_SIZE_CAP
                )
            except OSError as exc:
                raise_if_limit(exc, root / rel)
                raise
            except Skipped as exc:
                contents[rel] = None
                if exc.lasting and refused is not None:
                    refused.add(rel)
                if warnings is not None:
                    warnings.append(f"skipped {rel}: {exc.reason}")
    finally:
        os.close(root_fd)
    return contents
