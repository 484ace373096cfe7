"""The indexer's look at the index folder's derived files before it uses any of them.

Every derived file is sealed (:mod:`~pytest_groove.files.seal`).  Holding the
index lock, the indexer checks each sealed one (:func:`check_caches`): a file whose
bytes are not what its writer sealed, or whose seal does not read back, is removed
-- with the files made with it (a vector cache's means and state) -- and named in one
warning; whoever reads it next builds it again from ``index.db``, as if it had never
been written.  A file without a seal is left to its reader, which never uses it (an
index of an older version, or a crash between a file and its seal).  Checking costs a
small read per file: only a file whose identity moved (a copy, a restored CI cache,
a new boot) is read in full, once, and sealed again.  A file judged damaged is
watched a moment first: one that another checkout sharing the folder was replacing,
file then seal, is judged again, not removed.

Which files are derived, and which are made together, is the table's to say
(:mod:`.families`: one :class:`~.family.DerivedFamily` per family, declared by the
module that writes it); nothing here names a file.

``groove index --force`` reads no derived file at all: :func:`remove_caches` removes
every one before the index is rebuilt.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import time
from pathlib import Path

from pytest_groove.errors import clip_path
from pytest_groove.files.resource_limits import raise_if_limit
from pytest_groove.files.seal import (
    SEAL_SUFFIX,
    Verdict,
    open_regular,
    remove_with_seal,
    seal_path,
    verdict_of,
)
from pytest_groove.kb.derived.families import RETIRED_FILES, derived_families, family_of
from pytest_groove.kb.derived.family import Check
from pytest_groove.kb.store.database import DB_FILE_NAME

__all__ = ["check_caches", "is_derived", "is_retired", "remove_caches"]


def is_derived(name: str) -> bool:
    """Whether ``name`` in an index folder is a derived file or its seal (not a
    temporary file of a write in progress, nor anything of someone else's): a file of
    a family in the table (:mod:`.families`)."""
    return any(family.owns(name) for family in derived_families())


def _names(folder: Path) -> set[str]:
    try:
        with os.scandir(folder) as entries:
            return {entry.name for entry in entries if is_derived(entry.name)}
    except OSError as exc:
        raise_if_limit(exc, folder)
        return set()


def _family(name: str, names: set[str]) -> list[str]:
    """``name`` and the files made with it (a seal is removed with its file)."""
    family = family_of(name)
    if family is None or family.check is not Check.SEAL_WITH_STEM:
        return [name]
    stem = name.split(".", 1)[0]
    return sorted(
        other
        for other in names
        if other.split(".", 1)[0] == stem and not other.endswith(SEAL_SUFFIX)
    )


def _verdict(path: Path) -> Verdict | None:
    """The seal's verdict on ``path``; None where there is no regular file to judge (a
    link or a pipe in its place is its reader's to rebuild and rename over)."""
    handle = open_regular(path)
    if handle is None:
        return None
    with handle:
        return verdict_of(handle, path)


#: how long a file judged damaged is watched before it is called so: another
#: checkout sharing the index folder replaces a file, then its seal, a moment apart
#: (a directory sync between), and a file caught between the two is not damage
SETTLE_SECONDS = (0.25, 0.5, 1.0)


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def _pair_key(path: Path) -> tuple[object, object]:
    """What changes when a writer replaces the file or its seal."""
    return (_stat_key(path), _stat_key(seal_path(path)))


def _settled_verdict(path: Path) -> Verdict | None:
    """The seal's verdict, once nobody is replacing the file: a bad verdict stands
    only when neither the file nor its seal changed over the next moment; while they
    do (another writer at work), the pair is judged again, a few times at most."""
    verdict: Verdict | None = None
    for wait in SETTLE_SECONDS:
        before = _pair_key(path)
        verdict = _verdict(path)
        if verdict is None or verdict is Verdict.TRUSTED:
            return verdict
        time.sleep(wait)
        if _pair_key(path) == before:
            return verdict
    return verdict


def check_caches(folder: Path) -> list[str]:
    """Check every sealed derived file of ``folder``; remove each damaged one with its
    family and return one warning for each.  Call holding the index lock."""
    _remove_retired(folder)
    names = _names(folder)
    warnings: list[str] = []
    for name in sorted(names):
        if name.endswith(SEAL_SUFFIX) or name + SEAL_SUFFIX not in names:
            continue
        path = folder / name
        verdict = _settled_verdict(path)
        if verdict is None or verdict is Verdict.TRUSTED:
            continue
        for member in _family(name, names):
            remove_with_seal(folder / member)
        if verdict is Verdict.DAMAGED:
            what = "its bytes are not the ones the indexer wrote"
        else:
            what = f"its seal {seal_path(path).name} does not read back"
        warnings.append(
            f"the cache file {clip_path(path)} is damaged ({what}); removed it, it is "
            f"rebuilt from {DB_FILE_NAME}"
        )
    for name in _names(folder):  # seals whose file is gone
        if name.endswith(SEAL_SUFFIX) and not os.path.lexists(folder / name[: -len(SEAL_SUFFIX)]):
            with contextlib.suppress(OSError):
                (folder / name).unlink()
    return warnings


def is_retired(name: str) -> bool:
    """Whether ``name`` in an index folder is a file an earlier version kept there and
    nothing reads any more, or its seal (:data:`~.families.RETIRED_FILES`)."""
    kept = name.removesuffix(SEAL_SUFFIX)
    return any(fnmatch.fnmatchcase(kept, pattern) for pattern in RETIRED_FILES)


def _remove_retired(folder: Path) -> None:
    """Remove what an earlier version kept here and nothing reads any more."""
    try:
        with os.scandir(folder) as entries:
            retired = [entry.name for entry in entries if is_retired(entry.name)]
    except OSError as exc:
        raise_if_limit(exc, folder)
        return
    for name in retired:
        with contextlib.suppress(OSError):
            (folder / name).unlink()


def remove_caches(folder: Path) -> None:
    """Remove every derived file of ``folder`` and its seal, unread (``--force``)."""
    _remove_retired(folder)
    for name in _names(folder):
        with contextlib.suppress(OSError):
            (folder / name).unlink()
