"""Paths the operating system would refuse, told before anything touches them.

A path read from a file (an expected path in the golden file, ``index_dir`` or
``[eval].golden`` in ``groove.toml``) that holds a NUL, a lone surrogate, a name
over 255 bytes or more than 4,096 bytes in all makes ``stat`` and ``open`` raise
(``ValueError``, ``UnicodeEncodeError``, ``ENAMETOOLONG``) wherever it is first
used; :func:`path_refusal` says why in words, so the reader can refuse it with
the file and the key.  Such a path is UTF-8 text, as the file is: a process whose
locale writes file names in another encoding would hand the operating system other
bytes (``café.md`` as Latin-1) or none (``İstanbul/ılık.md`` under ``LC_ALL=C``), so
a path that is not ASCII is refused there (:func:`locale_refusal`), naming the locale.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_groove.errors import GrooveError, clip_path, clip_repr
from pytest_groove.files.paths import foreign_name_encoding, locale_advice

#: the longest file name and path Linux accepts, in bytes (macOS: 255 and 1,024)
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096


def locale_refusal(text: str) -> str | None:
    """Why this process cannot name the file the UTF-8 path ``text`` names (words to
    follow the path), None when it can: the path is ASCII, or file names are UTF-8."""
    encoding = foreign_name_encoding()
    if encoding is None or text.isascii():
        return None
    return f"cannot be named as written: {locale_advice(encoding)}"


def path_refusal(text: str) -> str | None:
    """Why the operating system would refuse the path ``text`` (None when it would not)."""
    if "\x00" in text:
        return "contains a NUL character, which no path can hold"
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        return "holds a character that cannot be written as a file name (a lone surrogate)"
    if len(encoded) > PATH_MAX_BYTES:
        return f"is {len(encoded):,} bytes long, over the {PATH_MAX_BYTES:,}-byte path limit"
    longest = max(len(part) for part in encoded.split(b"/"))
    if longest > NAME_MAX_BYTES:
        return (
            f"has a name of {longest:,} bytes, over the {NAME_MAX_BYTES}-byte limit "
            "for one file or folder name"
        )
    return None


def config_path(source: Path, key: str, raw: str, flags: str) -> Path:
    """The path ``raw`` names in the config file ``source`` (relative to its folder).

    A path the OS would refuse is refused here, naming the file and the key, and
    ``flags``, the options that can set it instead.
    """
    locale = locale_refusal(raw)
    if locale is not None:
        raise GrooveError(f"invalid config {clip_path(source)}: {key} {clip_repr(raw)} {locale}")
    problem = path_refusal(raw)
    if problem is None:
        path = source.parent / raw
        problem = path_refusal(str(path))
        if problem is None:
            return path
    raise GrooveError(
        f"invalid config {clip_path(source)}: {key} {clip_repr(raw)} {problem}; fix it in the "
        f"file, or pass {flags} instead"
    )
