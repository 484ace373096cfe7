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
  (:mod:`~pytest_groove.search.retrievers.hit_paths`).

Some of these say the path is a KB file's, mapped wrong: a KB path with a suffix,
leading folders too many (also inside a URL; the KB's folder among them, or a folder of
the KB kept after them), another case, or any of these once decoded or normalised.
:class:`PathJudge` tells those apart from a path that may well be another source's
document (``tickets/2.md`` in a store that holds the KB and a ticket system): a URL of
its own, the same file name in another folder, or no KB file of that name at all.  The
run's checks stop only on the first kind (:mod:`~pytest_groove.search.retrievers.hit_checks`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path, PurePosixPath

from pytest_groove.search.retrievers.adapters.base import echo
from pytest_groove.search.retrievers.hit_paths import kb_paths_named, spellings
from pytest_groove.search.retrievers.hit_reader import URL_PATH, kb_relative


def _kb_text(kb: Path) -> str:
    return PurePosixPath(os.path.normpath(kb).replace(os.sep, "/")).as_posix()


def _rerooted(path: str, kb_paths: Collection[str]) -> tuple[str, str] | None:
    """(leading folders, KB path): the first KB path ``path`` becomes by dropping
    leading folders (``kb/ops/a.md`` -> ``ops/a.md``), None when none."""
    normal = PurePosixPath(path).as_posix()
    # each folder boundary, first to last: one slice and one look-up each (a path of
    # 256 folders costs 256 slices, not 256 paths built)
    at = 0 if normal.startswith("/") else normal.find("/")
    while at != -1:
        rest = normal[at + 1 :]
        if rest in kb_paths:
            return normal[:at] or "/", rest
        at = normal.find("/", at + 1)
    return None


def _rerooted_file(path: str, kb_paths: Collection[str], kb: Path) -> bool:
    """Whether ``path`` names a KB file once leading folders are dropped, in a way only
    a path mistake explains: the dropped part ends with the KB's folder
    (``kb/ops/a.md``, ``/app/kb/a.md``), or what is left keeps a folder of the KB
    (``docs/ops/a.md``).  A bare file name left (``tickets/2.md`` for the KB's
    ``2.md``) may as well be another source's file."""
    found = _rerooted(path, kb_paths)
    if found is None:
        return False
    prefix, rest = found
    return "/" in rest or PurePosixPath(prefix).name == kb.name or prefix == _kb_text(kb)


def _prefix_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """How ``path`` becomes a KB path by dropping leading folders, said as a fix."""
    found = _rerooted(path, kb_paths)
    if found is None:
        return None
    prefix, rest = found
    if prefix == _kb_text(kb) or prefix == kb.name:
        whence = "the paths look relative to the working directory"
    elif PurePosixPath(path).is_absolute():
        whence = f"the store was built at another location ({prefix})"
    else:
        whence = f"the paths look to start with {prefix}/"
    return (
        f"{whence}: set each hit's path (LangChain metadata ['source'], LlamaIndex "
        f"metadata['file_path']) to the KB-relative path ({echo(rest)}) or to an absolute "
        "path inside the KB"
    )


def _suffixed(path: str, kb_paths: Collection[str]) -> str | None:
    """The longest KB path ``path`` starts with, followed by a suffix that is no part
    of a file name (``#2``, ``_part_0``, ``:12``, ``::chunk``, ``/3``)."""
    # each place a suffix may start at, longest first: only where a KB path of that
    # length would end (as many look-ups as the KB has path lengths, not characters)
    for end in sorted(_lengths(kb_paths), reverse=True):
        if 0 < end < len(path) and not path[end].isalnum() and path[:end] in kb_paths:
            return path[:end]
    return None


def _lengths(kb_paths: Collection[str]) -> set[int]:
    return {len(p) for p in kb_paths}


def _suffix_fix(path: str, kb_paths: Collection[str]) -> str | None:
    document = _suffixed(path, kb_paths)
    if document is None:
        return None
    if path[len(document)] == "#":
        return (
            f"the paths carry a #fragment ({echo(path)}): return the file's path alone "
            f"({echo(document)}) and the section as the hit's heading"
        )
    return (
        f"the paths carry a suffix after the file name ({echo(path)}, a chunk or node id?): "
        f"return the file's path alone ({echo(document)}; with LlamaIndex, metadata"
        "['file_path'], not the node's id) and the section as the hit's heading"
    )


def _url_fix(path: str) -> str:
    return (
        f"the hits carry URLs ({echo(path)}), not files of the KB: give each hit the "
        "KB-relative path of the note it came from (a metadata key such as "
        "LangChain's 'source' or LlamaIndex's 'file_path')"
    )


def _lowered(kb_paths: Collection[str]) -> dict[str, str]:
    return {p.lower(): p for p in kb_paths}


def _misnamed_fix(
    path: str, kb_paths: Collection[str], kb: Path, lowered: Mapping[str, str]
) -> str | None:
    """The fix when ``path`` as written is a KB file's path mapped wrong: a suffix after
    it, leading folders too many (a URL's too), another case."""
    fix = _suffix_fix(path, kb_paths)
    if fix is not None:
        return fix
    if _rerooted_file(path, kb_paths, kb):
        return _url_fix(path) if URL_PATH.match(path) else _prefix_fix(path, kb_paths, kb)
    if URL_PATH.match(path):
        return None
    if path.lower() in lowered:
        return f"the KB has {echo(lowered[path.lower()])}: paths are compared byte for byte"
    return _bare_name_fix(path, kb_paths, kb)


def _bare_name_fix(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """The fix when ``path`` is a bare file name (no folder) that names exactly one KB
    file, which lies in a folder: the folders were dropped where the store was built."""
    if "/" in path or "\\" in path:
        return None
    named = [p for p in kb_paths if "/" in p and PurePosixPath(p).name == path]
    if len(named) != 1:
        return None
    from pytest_groove.search.retrievers.adapters.table import bare_name_causes

    return (
        f"the paths are bare file names ({echo(path)}; the KB has {echo(named[0])}): return "
        f"each hit's path relative to the KB, {kb}, or absolute inside it"
        f"{bare_name_causes()}"
    )


def _plain_fix(
    path: str, kb_paths: Collection[str], kb: Path, lowered: Mapping[str, str]
) -> str | None:
    fix = _misnamed_fix(path, kb_paths, kb, lowered)
    if fix is not None:
        return fix
    if URL_PATH.match(path):
        return _url_fix(path)
    fix = _prefix_fix(path, kb_paths, kb)
    if fix is not None:
        return fix
    name = PurePosixPath(path).name
    same_name = sorted(p for p in kb_paths if PurePosixPath(p).name == name)
    if same_name:
        return f"the KB has {echo(same_name[0])}: return paths relative to the KB, {kb}"
    return None


#: how a spelling of a path is judged: ``(path, kb_paths, kb, lowered) -> fix``
_Judge = Callable[[str, Collection[str], Path, Mapping[str, str]], "str | None"]


def _spelling_fix(
    path: str, kb_paths: Collection[str], kb: Path, lowered: Mapping[str, str], judge: _Judge
) -> str | None:
    """The fix when ``path`` is percent-encoded or spelt in another Unicode form."""
    named = kb_paths_named(path, kb_paths, kb)
    for spelling in spellings(path):
        if kb_relative(spelling.path, kb) in named:
            several = " (more than one KB file, so it is not mapped)" if len(named) > 1 else ""
            return (
                f"the paths look {spelling.cause}: {echo(path)} names "
                f"{' and '.join(echo(p) for p in named)} once {spelling.undone}{several}; "
                "return each path exactly as its file is named"
            )
    for spelling in spellings(path):
        fix = judge(spelling.path, kb_paths, kb, lowered)
        if fix is not None:
            return (
                f"the paths look {spelling.cause} ({echo(path)} is {echo(spelling.path)} once "
                f"{spelling.undone}), and then {fix}"
            )
    return None


class PathJudge:
    """Judges a run's hit paths that name no KB file against one KB's file names.

    :meth:`misnamed` is the fix when a path is a KB file's path mapped wrong, None
    when it may be another source's document; :meth:`likely_fix` is the fix a message
    suggests either way.  Answers are kept per path, and the KB's names are read once,
    so judging every hit of a long run costs one pass per distinct path.
    """

    def __init__(self, kb_paths: Collection[str], kb: Path) -> None:
        self.kb_paths = kb_paths
        self.kb = kb
        self._lower: dict[str, str] | None = None
        self._misnamed: dict[str, str | None] = {}

    @property
    def lowered(self) -> dict[str, str]:
        if self._lower is None:
            self._lower = _lowered(self.kb_paths)
        return self._lower

    def misnamed(self, path: str) -> str | None:
        """The fix when ``path`` is a KB file's path mapped wrong, else None."""
        if path not in self._misnamed:
            args = (path, self.kb_paths, self.kb, self.lowered)
            self._misnamed[path] = _misnamed_fix(*args) or _spelling_fix(*args, _misnamed_fix)
        return self._misnamed[path]

    def likely_fix(self, path: str) -> str:
        """What to change so that hits like ``path`` name files of the KB."""
        args = (path, self.kb_paths, self.kb, self.lowered)
        fix = self.misnamed(path) or _plain_fix(*args) or _spelling_fix(*args, _plain_fix)
        if fix is not None:
            return fix
        return (
            f"no KB file has that name: is the retriever built over another folder than "
            f"{self.kb}? Return paths relative to the KB (or absolute ones inside it)"
        )


def likely_fix(path: str, kb_paths: Collection[str], kb: Path) -> str:
    """What to change so that hits like ``path`` name files of the KB ``kb``."""
    return PathJudge(kb_paths, kb).likely_fix(path)


__all__ = ["PathJudge", "likely_fix"]
