"""Checking and resolving user-given paths without a traceback (stdlib only: both doors
import it).

A path the operating system would refuse -- a name over 255 bytes, a path over 4,095
bytes, a NUL character, a name that is not valid UTF-8 -- is one clear line here,
before any ``stat`` or ``open`` turns it into ``OSError``/``ValueError`` deep inside
the indexer or SQLite.  Files with such names found *inside* a KB are skipped by the
walk with a warning; the folders named on the command line, in an ini file or in a
``groove.toml`` come through :func:`check_os_path`.

A process whose locale decodes file names in another encoding than UTF-8 (Latin-1,
EUC-JP, ASCII under ``LC_ALL=C PYTHONUTF8=0``) reads and writes every name through
that encoding: a UTF-8 name on disk comes out as other characters (or none), and a
name written in a UTF-8 file goes to the operating system as other bytes (or not at
all).  :func:`foreign_name_encoding` tells such a process, and :func:`locale_advice`
is the one way every message names the locale and the fix.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path

#: longest file or folder name (bytes) the common file systems store (ext4, xfs, btrfs, APFS)
NAME_MAX_BYTES = 255
#: longest path (bytes) the kernel accepts in one call (Linux PATH_MAX, with its NUL)
PATH_MAX_BYTES = 4096


def foreign_name_encoding() -> str | None:
    """The encoding this process decodes and encodes file names in, when it is not UTF-8.

    None under a UTF-8 locale or in Python's UTF-8 mode (``PYTHONUTF8=1``, or the C
    locale coerced to UTF-8): then a name's bytes and its text are the same thing
    everywhere pytest-groove looks.
    """
    encoding = sys.getfilesystemencoding()
    try:
        if codecs.lookup(encoding).name == "utf-8":
            return None
    except LookupError:
        pass
    return encoding


def locale_advice(encoding: str, what: str = "file names") -> str:
    """The words every message about a non-UTF-8 locale ends with.

    ``encoding`` is the locale's (:func:`foreign_name_encoding`), ``what`` what the
    process decodes with it ("file names", "its command line").
    """
    return (
        f"this process decodes {what} as {encoding} (the locale); run it under a UTF-8 "
        "locale (LC_ALL=C.UTF-8) or with PYTHONUTF8=1"
    )


def unencodable_name() -> str:
    """Why a path Python cannot encode for the operating system is refused: the
    locale's encoding has no bytes for one of its characters (``İ`` under Latin-1,
    what a UTF-8 argument became under EUC-JP), or, under UTF-8, a lone surrogate."""
    encoding = foreign_name_encoding()
    if encoding is None:
        return "holds a character no file name can (a lone surrogate)"
    return "cannot be written as a file name: " + locale_advice(encoding)


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
        if not _bytes_are_utf8(text):
            # a locale that decodes every byte (Latin-1) smuggles in nothing
            return NOT_UTF8
    try:
        raw = os.fsencode(os.path.abspath(text))
    except UnicodeEncodeError:  # a lone surrogate, or a character the locale has no bytes for
        return unencodable_name()
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


#: why a path whose bytes are not UTF-8 is refused where the index needs UTF-8 text
NOT_UTF8 = "is not valid UTF-8 (a name in it holds bytes of another encoding); rename it"


def _bytes_are_utf8(text: str) -> bool:
    """Whether the bytes the path ``text`` stands for are UTF-8 (or cannot be told:
    :func:`os_path_problem` says so next)."""
    if text.isascii() or foreign_name_encoding() is None:
        return True
    try:
        os.fsencode(text).decode("utf-8")
    except UnicodeDecodeError:
        return False
    except UnicodeEncodeError:
        return True  # the locale cannot write it back: said by the caller
    return True


def _not_utf8(text: str) -> str:
    """Why a name decoded with lone surrogates is refused: its bytes, or the locale."""
    encoding = foreign_name_encoding()
    if encoding is None:
        return NOT_UTF8
    try:
        os.fsencode(text).decode("utf-8")
    except UnicodeDecodeError:
        return NOT_UTF8
    except (UnicodeError, ValueError):  # the locale's codec cannot give its bytes back
        return unencodable_name()
    # valid UTF-8 bytes, read under a locale that decodes file names otherwise
    return "cannot be read as UTF-8 text: " + locale_advice(encoding)


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
