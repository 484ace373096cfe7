"""A retriever's answer read as ranked :class:`SearchHit` s, whatever shape it has.

The shapes are the adapters' (:mod:`~pytest_groove.search.retrievers.adapters`, one
per framework, tried in the order of their table): the hits inside a framework's result
object, then each hit's path, heading and score, with the keys :class:`HitKeys` names
(``--retriever-path-key`` / ``--retriever-heading-key``, dotted for a nested mapping:
``metadata.source``) for every shape.

What one answer may cost is bounded: at most ``limit`` hits are read (and one more, to
know that there were more: said once a run), so an endless generator returns and a
million hits cost what ``limit`` do; a hit's path longer than any file path is refused
before it is resolved; every value quoted back is :func:`echo` ed.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import inspect
import itertools
import math
import os
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_groove.errors import flag
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.retrievers.adapters.base import (
    DEFAULT_KEYS,
    Fields,
    HitKeys,
    HitShapeError,
    echo,
    own_heading,
)
from pytest_groove.search.retrievers.adapters.table import fields_of, hits_in, path_hints
from pytest_groove.search.retrievers.key_evidence import KeyEvidence, carried_keys
from pytest_groove.text.echo import echo_list

#: the longest hit path read (Linux's PATH_MAX): a longer one names no file, and
#: resolving it would cost time growing with its length
MAX_HIT_PATH = 4096
#: the most folders a hit path may have before it is refused, likewise
MAX_HIT_PARTS = 256
#: the longest heading read (no Markdown heading is longer; a chunk's text is)
MAX_HIT_HEADING = 4096


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


# --------------------------------------------------------------------------- paths


#: a URL of any scheme but file: (``https://wiki/a.md``): normalising it as a path
#: would make ``https:/wiki/a.md`` of it
URL_PATH = re.compile(r"^(?!file:)[A-Za-z][A-Za-z0-9+.-]*://")


def _below(candidate: Path, roots: tuple[Path, ...]) -> str | None:
    """``candidate`` relative to the first of ``roots`` it lies in ("" for a root)."""
    for root in roots:
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return None


def kb_relative(path: str, kb: Path) -> str | None:
    """``path`` as a KB-relative POSIX path; None when it points outside the KB.

    A relative path is relative to the KB (``./`` and ``a/../b`` are tidied); an
    absolute one must lie inside the KB, compared with the KB as given and resolved
    (a KB reached through a symlink still matches).  A path outside the KB as
    written is resolved too (``os.path.realpath``: ``/tmp`` -> ``/private/tmp`` on
    macOS, a link to the KB) and accepted when it lands inside the KB.  Paths are
    resolved, never opened: nothing is read.
    """
    if path.startswith("file://"):
        # a file URI: its path is percent-encoded (file:///srv/my%20kb/a.md), and
        # file://localhost/ names this machine as file:/// does
        parsed = urllib.parse.urlsplit(path)
        if parsed.netloc in ("", "localhost"):
            path = urllib.parse.unquote(parsed.path)
        else:
            path = urllib.parse.unquote(path[len("file:") :])
    if URL_PATH.match(path):
        return path  # no file of the KB; kept as written, so a message quotes it whole
    if os.path.isabs(path):
        candidate = Path(os.path.normpath(path))
        relative = _below(candidate, (Path(os.path.abspath(kb)), kb.resolve()))
    else:
        normal = os.path.normpath(path.replace("\\", "/")).replace("\\", "/")
        if normal != ".." and not normal.startswith("../"):
            return PurePosixPath(normal).as_posix() if normal not in ("", ".") else None
        candidate = Path(os.path.abspath(kb)) / normal
        relative = None
    if relative is None:
        # outside as written: where it really leads (a link, /tmp -> /private/tmp)
        relative = _below(Path(os.path.realpath(candidate)), (kb.resolve(),))
    return relative if relative not in (None, "", ".") else None


# --------------------------------------------------------------------------- hits


def _score(value: Any, retriever: str, position: int, warn: Callable[[str], None]) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(value)  # numpy floats and the like
        except (TypeError, ValueError, OverflowError):
            raise HitShapeError(
                f"retriever {retriever}: hit {position} has a score that is not a "
                f"number ({echo(value)})"
            ) from None
    try:
        score = float(value)
    except OverflowError:  # an integer past the float range
        score = math.inf
    if not math.isfinite(score):
        warn(
            f"retriever {retriever} returned a score that is not a finite number (NaN or "
            "infinity); only the order of its hits is used, and such scores are shown as 0.0"
        )
        return 0.0
    return score


def normalise_hits(
    raw: Any,
    retriever: str,
    kb: Path | None = None,
    *,
    keys: HitKeys = DEFAULT_KEYS,
    on_warning: Callable[[str], None] | None = None,
    evidence: KeyEvidence | None = None,
    limit: int | None = None,
) -> list[SearchHit]:
    """A retriever's answer as ranked :class:`SearchHit` s (order kept).

    Each hit needs a string path; heading may be missing, None or blank; score may be
    missing (then 0.0) but must be a number when given.  A score that is NaN or
    infinite is taken as 0.0 and ``on_warning`` is told, at most once per answer.
    With ``kb`` given, paths inside the KB are made KB-relative; a path outside it
    is kept as written (it can never match a golden entry).  ``evidence`` counts the
    hits that hold the heading key ``keys`` names (:mod:`~pytest_groove.search.
    key_evidence`).  With ``limit`` given, at most that many hits are read, and
    ``on_warning`` is told when the answer held more.
    """
    hits_iter = _hit_list(raw, retriever)
    warned: list[str] = []

    def warn(message: str) -> None:
        if message not in warned:
            warned.append(message)
            if on_warning is not None:
                on_warning(message)

    looked_before = evidence.looked if evidence is not None else 0
    if limit is not None:
        hits_iter = _at_most(hits_iter, limit, retriever, warn)
    hits = _read_hits(hits_iter, retriever, kb, keys, warn, evidence)
    if evidence is not None and evidence.looked > looked_before:
        evidence.queries += 1
    return hits


def _at_most(hits: Any, limit: int, retriever: str, warn: Callable[[str], None]) -> Iterator[Any]:
    """The first ``limit`` hits of ``hits``; one more is looked at, to tell ``warn`` that
    the retriever returned more than it was asked for (nothing past it is read)."""
    iterator = iter(hits)
    yield from itertools.islice(iterator, max(limit, 0))
    if next(iterator, _END) is not _END:
        warn(
            f"retriever {retriever} returned more than the {limit} hits it was asked for; "
            f"only the first {limit} were read (ask it for {limit}, and it does less work)"
        )


_END = object()


def _hit_list(raw: Any, retriever: str) -> Any:
    """The iterable of hits in a retriever's answer (unwrapped); a coroutine, one value
    or text instead of hits is a :class:`HitShapeError`."""
    if inspect.isawaitable(raw):
        if inspect.iscoroutine(raw):
            raw.close()  # never awaited: closed, so Python prints no RuntimeWarning
        raise HitShapeError(
            f"retriever {retriever} returned {_a_type(raw)} (it is async): async "
            "retrievers are not supported; wrap it in a plain function: def search(query, "
            "limit): return asyncio.run(asearch(query, limit))"
        )
    raw = hits_in(raw, retriever)
    if raw is None or isinstance(raw, str | bytes | Mapping) or not _iterable(raw):
        raise HitShapeError(
            f"retriever {retriever} must return a list of hits, got {type(raw).__name__}"
        )
    return raw


def _a_type(value: object) -> str:
    from pytest_groove.search.retrievers.adapters.base import article

    name = type(value).__name__
    return f"{article(name)} {name}"


def _no_path(retriever: str, position: int, fields: Fields, keys: HitKeys) -> str:
    """The line for a hit without a path: the fix, or -- when the key was named -- the
    keys the hit does hold (the option given is not advised again)."""
    if fields.no_path is not None:
        return f"retriever {retriever}: hit {position} {fields.no_path}"
    got = echo(fields.path)
    said = f"retriever {retriever}: hit {position} has no path (got {got}) in {fields.looked}"
    if keys.path is None:
        return (
            f"{said}; return dicts or objects with path/heading/score, {path_hints()}, "
            f"or name the key with {flag('retriever-path-key')}"
        )
    held = sorted(carried_keys(fields.meta)) if fields.meta is not None else []
    holds = echo_list(held) if held else "no key at all"
    return (
        f"{said}, the key {flag('retriever-path-key')} names (the hit holds {holds}); "
        "name the key its path is under"
    )


def _checked_path(path: str, retriever: str, position: int) -> str:
    """``path``, refused when it is longer than any file path (resolving it would cost
    time growing with its length)."""
    if len(path) > MAX_HIT_PATH or path.count("/") + path.count("\\") > MAX_HIT_PARTS:
        raise HitShapeError(
            f"retriever {retriever}: hit {position} has a path of {len(path):,} characters "
            f"({echo(path)}), longer than any file path ({MAX_HIT_PATH:,} "
            f"characters, {MAX_HIT_PARTS} folders); return the note's path"
        )
    return path


def _checked_heading(heading: Any, retriever: str, position: int) -> str | None:
    if isinstance(heading, str) and not heading.strip():
        return None  # Chroma's metadata cannot hold None: "" stands for none
    if heading is not None and not isinstance(heading, str):
        raise HitShapeError(
            f"retriever {retriever}: hit {position} has a heading that is not text "
            f"({echo(heading)}); use a string or None"
        )
    if heading is not None and len(heading) > MAX_HIT_HEADING:
        raise HitShapeError(
            f"retriever {retriever}: hit {position} has a heading of {len(heading):,} "
            f"characters ({echo(heading)}), longer than any heading ({MAX_HIT_HEADING:,}); "
            "return the section's heading, not its text"
        )
    return heading


def _read_hits(
    raw: Any,
    retriever: str,
    kb: Path | None,
    keys: HitKeys,
    warn: Callable[[str], None],
    evidence: KeyEvidence | None,
) -> list[SearchHit]:
    """Each hit of ``raw`` as a :class:`SearchHit`, in order (see :func:`normalise_hits`)."""
    hits: list[SearchHit] = []
    for position, hit in enumerate(raw, start=1):
        fields = fields_of(hit, keys)
        path = fields.path
        if isinstance(path, os.PathLike):
            path = os.fsdecode(path)  # a pathlib.Path is as good as its string
        if not isinstance(path, str) or not path:
            raise HitShapeError(_no_path(retriever, position, fields, keys))
        path = _checked_path(path, retriever, position)
        if kb is not None:
            # a path outside the KB is kept as written: it names no KB file, and the
            # searcher's checks judge the run's share of such hits (hit_checks.py)
            relative = kb_relative(path, kb)
            path = relative if relative is not None else path
        heading = _checked_heading(fields.heading, retriever, position)
        score = _score(fields.score, retriever, position, warn)
        hits.append(SearchHit(rank=position, path=path, heading=heading, score=score))
        if evidence is not None and keys.heading is not None and fields.meta is not None:
            evidence.hit(fields.meta, keys.heading)
    return hits


__all__ = [
    "DEFAULT_KEYS",
    "MAX_HIT_PATH",
    "HitKeys",
    "HitShapeError",
    "echo",
    "kb_relative",
    "normalise_hits",
    "own_heading",
]
