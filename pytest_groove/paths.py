"""Checking and resolving user-given paths without a traceback (stdlib only: both doors
import it).

A path the operating system would refuse -- a name over 255 bytes, a path over 4,095
bytes, a NUL character, a name that is not valid UTF-8 -- is one clear line here,
before any ``stat`` or ``open`` turns it into ``OSError``/``ValueError`` deep inside
the indexer or SQLite.  Files with such names found *inside* a KB are skipped by the
walk with a warning; the folders named on the command line, in an ini file or in a
``groove.toml`` come through :func:`check_os_path`.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path

#: longest file or folder name (bytes) the common file systems store (ext4, xfs, btrfs, APFS)
NAME_MAX_BYTES = 255
#: longest path (bytes) the kernel accepts in one call (Linux PATH_MAX, with its NUL)
PATH_MAX_BYTES = 4096


def os_path_problem(path: Path | str, *, require_utf8: bool = True) -> str | None:
    """Why the operating system would refuse ``path`` (words to follow "is"/"has"), or None.

    ``require_utf8``: a name that is not valid UTF-8 is a problem too (a KB or index
    folder, whose paths the index stores as text); a golden file's name need not be.
    """
    text = str(path)
    if "\x00" in text:
        return "holds a NUL character, which no file name can"
    if require_utf8:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # os.fsdecode smuggles bytes that are not UTF-8 in as lone surrogates; the
            # index stores paths as UTF-8 text, so such a folder cannot be indexed
            return _not_utf8(text)
    try:
        raw = os.fsencode(os.path.abspath(text))
    except UnicodeEncodeError:  # a lone surrogate no byte decodes to
        return "holds a character no file name can (a lone surrogate)"
    except FileNotFoundError:  # os.getcwd() of a folder deleted under the process
        return (
            "is relative, and the working directory no longer exists (deleted?); "
            "cd into an existing folder, or give an absolute path"
        )
    if len(raw) >= PATH_MAX_BYTES:
        return (
            f"is {len(raw):,} bytes long (made absolute), over the {PATH_MAX_BYTES - 1:,} the "
            "operating system accepts; use a shorter path"
        )
    longest = max((len(part) for part in raw.split(b"/")), default=0)
    if longest > NAME_MAX_BYTES:
        return (
            f"has a name of {longest:,} bytes, over the {NAME_MAX_BYTES} a file system "
            "allows; use a shorter name"
        )
    return None


def _not_utf8(text: str) -> str:
    """Why a name decoded with lone surrogates is refused: its bytes, or the locale."""
    encoding = sys.getfilesystemencoding()
    try:
        os.fsencode(text).decode("utf-8")
    except (UnicodeError, ValueError):
        return "is not valid UTF-8 (a name in it holds bytes of another encoding); rename it"
    # valid UTF-8 bytes, read under a locale that decodes file names otherwise
    return (
        f"cannot be read as UTF-8 text: this process decodes file names as {encoding} "
        "(the locale); run it under a UTF-8 locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1"
    )


def check_os_path(path: Path | str, what: str, flags: str, *, require_utf8: bool = True) -> None:
    """One :class:`GrooveError` naming ``path`` (clipped) when the OS would refuse it.

    ``what`` names the path ("knowledge base", "index folder"), ``flags`` the option(s)
    that set it; ``require_utf8`` as in :func:`os_path_problem`.
    """
    problem = os_path_problem(path, require_utf8=require_utf8)
    if problem is not None:
        raise GrooveError(f"the {what} path {clip_path(path)} {problem} (check {flags})")


def resolve_path(path: Path, what: str, flags: str, *, require_utf8: bool = True) -> Path:
    """``path`` made absolute with symlinks followed; a symlink loop is one clear error.

    ``what`` names the path in the message ("knowledge base", "golden file") and
    ``flags`` the option(s) that set it.  A path the OS would refuse is one clear error
    too (:func:`check_os_path`), before and after resolving.  Python before 3.13 raises
    ``RuntimeError`` for a loop; 3.13 returns the path where the loop starts, which is
    still a link (a fully resolved path never is: a dangling link resolves to its
    missing target).
    """
    check_os_path(path, what, flags, require_utf8=require_utf8)
    try:
        resolved = path.resolve()
        looped = resolved.is_symlink()
    except (OSError, RuntimeError):
        looped = True
    if looped:
        raise GrooveError(
            f"{what} {clip_path(path)} cannot be resolved (a symlink loop?); point {flags} at a "
            "real file or folder"
        )
    check_os_path(resolved, what, flags, require_utf8=require_utf8)
    return resolved
