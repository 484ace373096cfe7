"""Reading a knowledge base's files without leaving it: :mod:`pytest_groove.files.beneath`.

The implementation moved to the shared file plumbing (the eval history reads below a
root too); these names stay importable from here.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.files.beneath import (
    FileIdentity,
    Skipped,
    index_folder_beneath,
    open_folder,
    open_root,
    read_beneath,
)

__all__ = [
    "FileIdentity",
    "Skipped",
    "index_folder_beneath",
    "open_folder",
    "open_root",
    "read_beneath",
]
