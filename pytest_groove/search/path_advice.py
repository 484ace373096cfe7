"""Why a hit's path names no file of the KB, said as the fix.

Tried in order on the sample path of a message, the first that explains it wins:

- a KB path followed by a suffix -- ``#fragment``, ``_part_0`` (LlamaIndex's ids),
  ``:12``, ``::chunk-3`` -- return the file's path alone;
- a URL, not a file;
- leading folders too many: relative to the working directory (``kb/ops/a.md``),
  another folder's (``docs/ops/a.md``), or an absolute path of another location
  (``/app/kb/ops/a.md``: the store was built elsewhere, another machine or image);
- another case, the same file name in another folder;
- and each of these again once the path is decoded or Unicode-normalised, when it was
  percent-encoded or spelt in another normalisation form
  (:mod:`~pytest_groove.search.hit_paths`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from pytest_groove.search.hit_paths import kb_paths_named, spellings
from pytest_groove.search.retriever_hits import URL_PATH, kb_relative


def _kb_text(kb: Path) -> str:
    return PurePosixPath(os.path.normpath(kb).replace(os.sep, "/")).as_posix()


def _prefix_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """How ``path`` becomes a KB path by dropping leading folders, said as a fix."""
    parts = PurePosixPath(path).parts
    for cut in range(1, len(parts)):
        rest = PurePosixPath(*parts[cut:]).as_posix()
        if rest not in kb_paths:
            continue
        prefix = PurePosixPath(*parts[:cut]).as_posix()
        if prefix == _kb_text(kb) or prefix == kb.name:
            whence = "the paths look relative to the working directory"
        elif PurePosixPath(path).is_absolute():
            whence = f"the store was built at another location ({prefix})"
        else:
            whence = f"the paths look to start with {prefix}/"
        return (
            f"{whence}: set each hit's path (LangChain metadata ['source'], LlamaIndex "
            f"metadata['file_path']) to the KB-relative path ({rest!r}) or to an absolute "
            "path inside the KB"
        )
    return None


def _suffixed(path: str, kb_paths: Collection[str]) -> str | None:
    """The longest KB path ``path`` starts with, followed by a suffix that is no part
    of a file name (``#2``, ``_part_0``, ``:12``, ``::chunk``, ``/3``)."""
    found = [
        kb_path
        for kb_path in kb_paths
        if len(path) > len(kb_path)
        and path.startswith(kb_path)
        and not path[len(kb_path)].isalnum()
    ]
    return max(found, key=len) if found else None


def _suffix_fix(path: str, kb_paths: Collection[str]) -> str | None:
    document = _suffixed(path, kb_paths)
    if document is None:
        return None
    if path[len(document)] == "#":
        return (
            f"the paths carry a #fragment ({path!r}): return the file's path alone "
            f"({document!r}) and the section as the hit's heading"
        )
    return (
        f"the paths carry a suffix after the file name ({path!r}, a chunk or node id?): "
        f"return the file's path alone ({document!r}; with LlamaIndex, metadata"
        "['file_path'], not the node's id) and the section as the hit's heading"
    )


def _plain_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    fix = _suffix_fix(path, kb_paths)
    if fix is not None:
        return fix
    if URL_PATH.match(path):
        return (
            f"the hits carry URLs ({path!r}), not files of the KB: give each hit the "
            "KB-relative path of the note it came from (a metadata key such as "
            "LangChain's 'source' or LlamaIndex's 'file_path')"
        )
    fix = _prefix_fix(path, kb_paths, kb)
    if fix is not None:
        return fix
    lowered = {p.lower(): p for p in kb_paths}
    if path.lower() in lowered:
        return f"the KB has {lowered[path.lower()]!r}: paths are compared byte for byte"
    name = PurePosixPath(path).name
    same_name = sorted(p for p in kb_paths if PurePosixPath(p).name == name)
    if same_name:
        return f"the KB has {same_name[0]!r}: return paths relative to the KB, {kb}"
    return None


def _spelling_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """The fix when ``path`` is percent-encoded or spelt in another Unicode form."""
    named = kb_paths_named(path, kb_paths, kb)
    for spelling in spellings(path):
        if kb_relative(spelling.path, kb) in named:
            several = " (more than one KB file, so it is not mapped)" if len(named) > 1 else ""
            return (
                f"the paths look {spelling.cause}: {path!r} names "
                f"{' and '.join(repr(p) for p in named)} once {spelling.undone}{several}; "
                "return each path exactly as its file is named"
            )
    for spelling in spellings(path):
        fix = _plain_fix(spelling.path, kb_paths, kb)
        if fix is not None:
            return (
                f"the paths look {spelling.cause} ({path!r} is {spelling.path!r} once "
                f"{spelling.undone}), and then {fix}"
            )
    return None


def likely_fix(path: str, kb_paths: Collection[str], kb: Path) -> str:
    """What to change so that hits like ``path`` name files of the KB ``kb``."""
    fix = _plain_fix(path, kb_paths, kb) or _spelling_fix(path, kb_paths, kb)
    if fix is not None:
        return fix
    return (
        f"no KB file has that name: is the retriever built over another folder than {kb}? "
        "Return paths relative to the KB (or absolute ones inside it)"
    )


__all__ = ["likely_fix"]
