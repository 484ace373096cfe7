"""A hit's path that names no KB file, mapped to the one KB file another spelling names.

Two spellings of one file name are common in stores: percent-encoding
(``ops/release%20train.md``, as a docs site or a URL-keyed store keeps paths) and
Unicode normalisation (``api/caché.md`` decomposed, NFD, as macOS file systems hand
names out, where the KB's file is named composed, NFC -- or the reverse).  The rule,
the same for every path whatever its origin (a ``file://`` URI is decoded once before
it): a path that is not a KB path is mapped when its decoded form, its NFC or NFD
form, or those of its decoded form, name exactly one KB file.  When they name none or
several the path is kept, and :mod:`~pytest_groove.search.retrievers.path_advice` names the
cause.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import unicodedata
import urllib.parse
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from pytest_groove.search.retrievers.hit_reader import kb_relative


@dataclass(frozen=True)
class Spelling:
    """Another spelling of a hit's path, and what undoing it took."""

    #: the path with the encoding or normalisation undone
    path: str
    #: what was undone, for messages: "decoded", "normalised to NFC" ...
    undone: str
    #: what the path looks like, for messages: "percent-encoded" ...
    cause: str


_UNICODE = "spelt in another Unicode normalisation form than the KB's file names"


def spellings(path: str) -> list[Spelling]:
    """The other spellings of ``path``: decoded, NFC, NFD (each distinct, none equal to
    ``path``), in that order."""
    decoded = urllib.parse.unquote(path)
    found: list[Spelling] = []
    if decoded != path:
        found.append(Spelling(decoded, "decoded", "percent-encoded"))
    for form in ("NFC", "NFD"):
        found.append(Spelling(unicodedata.normalize(form, path), f"normalised to {form}", _UNICODE))
        if decoded != path:
            found.append(
                Spelling(
                    unicodedata.normalize(form, decoded),
                    f"decoded and normalised to {form}",
                    f"percent-encoded and {_UNICODE}",
                )
            )
    distinct: list[Spelling] = []
    for spelling in found:
        if spelling.path != path and all(s.path != spelling.path for s in distinct):
            distinct.append(spelling)
    return distinct


def kb_paths_named(path: str, kb_paths: Collection[str], kb: Path) -> list[str]:
    """The KB paths the other spellings of ``path`` name, sorted."""
    named: set[str] = set()
    for spelling in spellings(path):
        relative = kb_relative(spelling.path, kb)
        if relative is not None and relative in kb_paths:
            named.add(relative)
    return sorted(named)


def kb_path_for(path: str, kb_paths: Collection[str], kb: Path) -> str | None:
    """``path`` itself when it is a KB path, else the one KB path another spelling of
    it names; None when none or several do."""
    if path in kb_paths:
        return path
    named = kb_paths_named(path, kb_paths, kb)
    return named[0] if len(named) == 1 else None


__all__ = ["Spelling", "kb_path_for", "kb_paths_named", "spellings"]
