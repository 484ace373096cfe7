"""The faiss caches beside an index, carried forward from one write generation to the next.

A cache file (:mod:`pytest_groove.kb.vectors`) is named by the database's random id
and write generation, so any write makes it stale.  Rebuilding it reads every stored
embedding and holds the whole matrix twice, which made the first search after a
one-line edit of a large KB slower and larger than every later one.  So a flat cache
of an older generation is *updated* instead: the rows of chunks that are gone are
removed and the new chunks' rows are added.  (The flat note-carrying index is not a
faiss index of its own: :mod:`pytest_groove.kb.note_index` keeps and updates it.)

The result is the index a full build would make, row for row, in the same order:
chunk ids are AUTOINCREMENT (never reused, every new one above every old one) and a
stored chunk's embedding never changes, so the updated index holds the same vectors
in id order, and faiss's ranking (ties included) is the same.  Two cases are always
built in full: a language-centred index (any changed chunk moves its group's mean,
so every row changes), and an HNSW graph (its shape depends on the insertion order).
What an update needs to know about the old rows -- each row's script group, each
document's note-vector digest -- is kept in a small ``.state.npz`` file beside the
cache; a cache without one is built in full.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import faiss
import numpy as np
import numpy.typing as npt

from pytest_groove.config import DEFAULT_VECTOR_INDEX
from pytest_groove.kb.scripts import chunk_opening, script_group
from pytest_groove.kb.store import Store

__all__ = [
    "CENTRING_MIN_SHARE",
    "CacheState",
    "Update",
    "cache_path",
    "centred",
    "centring_applies",
    "state_of",
    "state_path",
    "updated",
]

#: a cache file larger than this is not read (a flat index of 1M 1024-dim vectors is 4 GiB)
CACHE_FILE_CAP = 16 * 1024**3
_CACHE_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def read_cached_index(handle: BinaryIO, *, mapped: bool) -> Any:
    """The faiss index in an opened, checked cache file.

    ``mapped`` (a flat cache that is only searched) maps the file instead of copying
    it: its rows are read straight from the page cache (the file is replaced by rename,
    never written in place).  It is mapped through the descriptor already checked --
    ``/proc/self/fd/N`` names that open file, not whatever the name points at now -- so
    a link swapped in since is never followed.  Otherwise it is read through the handle.
    """
    if mapped:
        return faiss.read_index(f"/proc/self/fd/{handle.fileno()}", faiss.IO_FLAG_MMAP_IFC)
    reader = faiss.PyCallbackIOReader(handle.read)  # type: ignore[attr-defined]
    return faiss.read_index(reader)


def open_cache_file(path: Path) -> BinaryIO | None:
    """A binary handle on a cache file, opened once and checked; None when absent.

    Opened with ``O_NOFOLLOW`` and ``O_NONBLOCK`` and checked on that descriptor: a
    symbolic link, a named pipe, a folder or a device in the cache's place is never
    read (``OSError``); the cache is then rebuilt and renamed over it.  Everything is
    read from this handle, never by name again.
    """
    try:
        fd = os.open(path, _CACHE_OPEN_FLAGS)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > CACHE_FILE_CAP:
            raise OSError(f"{path} is not a regular cache file")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


CACHE_PREFIX = "vectors"
#: the note-carrying index's cache (a name the chunk cache's clean-up never matches)
NOTES_CACHE_PREFIX = "notevectors"
#: centring needs two script groups of at least this share of the chunks each
CENTRING_MIN_SHARE = 0.25


def centred(
    rows: npt.NDArray[np.float32], mean: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``rows`` minus ``mean``, each re-normalised (a zero row stays zero)."""
    shifted = rows - mean
    norms = np.linalg.norm(shifted, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(shifted / norms, dtype=np.float32)


def centring_applies(counts: Sequence[int]) -> bool:
    """Whether script groups of these chunk counts are centred (two big enough groups)."""
    total = sum(counts)
    if not total:
        return False
    return sum(count / total >= CENTRING_MIN_SHARE for count in counts) >= 2


def cache_path(
    store: Store, directory: Path, *, centre: bool, kind: str, notes: bool, generation: int = -1
) -> Path:
    """The cache file of the store's index at ``generation`` (default: its current one)."""
    prefix = NOTES_CACHE_PREFIX if notes else CACHE_PREFIX
    # the flat cache keeps its name; another kind adds its own
    infix = "" if kind == DEFAULT_VECTOR_INDEX else f"-{kind}"
    mode = "centred" if centre else "raw"
    gen = store.generation if generation < 0 else generation
    return directory / f"{prefix}{infix}-{store.index_id}-gen{gen}-{mode}.faiss"


def state_path(cache: Path) -> Path:
    return cache.with_suffix(".state.npz")


def _digest(vector: npt.NDArray[np.float32]) -> int:
    return int.from_bytes(hashlib.blake2b(vector.tobytes(), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class CacheState:
    """What updating a cache needs to know about its rows."""

    #: script group names, and each row's index into them (id order); None: not centred
    group_names: tuple[str, ...] | None
    group_codes: npt.NDArray[np.int32] | None
    #: document id -> digest of its note vector (note-carrying index only)
    note_digests: dict[int, int] | None

    def write(self, handle: BinaryIO) -> None:
        arrays: dict[str, Any] = {}
        if self.group_names is not None and self.group_codes is not None:
            arrays["group_names"] = np.asarray(self.group_names, dtype=str)
            arrays["group_codes"] = self.group_codes
        if self.note_digests is not None:
            arrays["note_docs"] = np.fromiter(self.note_digests, dtype=np.int64)
            arrays["note_digests"] = np.fromiter(self.note_digests.values(), dtype=np.uint64)
        np.savez(handle, **arrays)

    @classmethod
    def read(cls, path: Path, *, centre: bool, notes: bool) -> CacheState | None:
        try:
            handle = open_cache_file(path)  # checked, never followed
            if handle is None:
                return None
            with handle, np.load(handle, allow_pickle=False) as saved:
                names = codes = digests = None
                if centre:
                    names = tuple(str(n) for n in saved["group_names"])
                    codes = np.asarray(saved["group_codes"], dtype=np.int32)
                if notes:
                    digests = {
                        int(d): int(h)
                        for d, h in zip(saved["note_docs"], saved["note_digests"], strict=True)
                    }
        except (OSError, ValueError, KeyError):
            return None
        return cls(names, codes, digests)


def state_of(
    groups: Sequence[str] | None,
    note_vectors: Mapping[int, tuple[npt.NDArray[np.float32], str]] | None,
) -> CacheState:
    """The state of a freshly built cache: its rows' groups, its notes' digests."""
    names = codes = None
    if groups is not None:
        names = tuple(sorted(set(groups)))
        code_of = {name: i for i, name in enumerate(names)}
        codes = np.fromiter((code_of[g] for g in groups), dtype=np.int32, count=len(groups))
    digests = None
    if note_vectors is not None:
        digests = {doc: _digest(vector) for doc, (vector, _group) in note_vectors.items()}
    return CacheState(names, codes, digests)


@dataclass
class Update:
    """An older cache brought to the store's current state, with its new state."""

    index: faiss.Index
    state: CacheState


_GENERATION = re.compile(r"-gen(\d+)-")


def _older_cache(store: Store, cache: Path, centre: bool, notes: bool) -> Path | None:
    """The newest cache of an earlier generation of this index, kind and mode."""
    pattern = _GENERATION.sub("-gen*-", cache.name, count=1)
    best: tuple[int, Path] | None = None
    for candidate in cache.parent.glob(pattern):
        match = _GENERATION.search(candidate.name)
        if match is None or candidate == cache:
            continue
        generation = int(match.group(1))
        if generation < store.generation and (best is None or generation > best[0]):
            best = (generation, candidate)
    return None if best is None else best[1]


def updated(store: Store, cache: Path, dim: int, *, centre: bool, notes: bool) -> Update | None:
    """The flat index for ``cache`` made from an older generation's cache, else None.

    None when there is no older cache with its state, when it was (or now would be)
    language-centred, or when anything about it does not add up: the caller builds
    in full.  Call inside ``store.read_snapshot()``.
    """
    if notes:
        # a flat note-carrying index is the chunk index's rows file (kb/note_index.py),
        # updated there; one built in full here (VectorIndex.load_for) stays so
        return None
    older = _older_cache(store, cache, centre, notes)
    if older is None or older.with_suffix(".npz").is_file():  # no cache, or centred
        return None
    state = CacheState.read(state_path(older), centre=centre, notes=notes)
    if state is None:
        return None
    try:
        handle = open_cache_file(older)  # checked, never followed
        if handle is None:
            return None
        with handle:
            index: Any = read_cached_index(handle, mapped=False)  # read whole: it is updated
    except (RuntimeError, OSError, ValueError):
        return None
    if index.d != dim or not isinstance(index, faiss.IndexIDMap2):
        return None
    old_ids = faiss.vector_to_array(index.id_map).astype(np.int64)
    if len(old_ids) != index.ntotal or np.any(np.diff(old_ids) <= 0):
        return None
    # ids only (no row is read): what an update needs of every row
    current = store.chunk_ids()
    kept = np.isin(old_ids, current, assume_unique=True)
    added = np.setdiff1d(current, old_ids, assume_unique=True)
    if 2 * len(added) > len(current):
        return None  # mostly new rows (a forced rebuild): reading them all at once is faster
    if len(added) and len(old_ids) and added[0] < old_ids[-1]:
        return None  # an id below an old one: the rows would not stay in id order
    names, codes = state.group_names, state.group_codes
    if centre:
        if names is None or codes is None or len(codes) != len(old_ids):
            return None
        names, codes = _groups_after(store, names, codes[kept], added)
        if centring_applies(np.bincount(codes, minlength=len(names)).tolist()):
            return None  # centred now: every row moves with its group's mean
    removed = old_ids[~kept]
    if len(removed):
        id_map: Any = index  # faiss's Python wrapper takes an id array here
        id_map.remove_ids(np.ascontiguousarray(removed))
    if len(added):
        vectors = store.vectors_for(added.tolist())
        matrix = np.stack([vectors[int(cid)] for cid in added]).astype(np.float32)
        index.add_with_ids(np.ascontiguousarray(matrix), added)
    if index.ntotal != len(current):
        return None
    return Update(index, CacheState(names, codes, None))


def _groups_after(
    store: Store,
    names: tuple[str, ...],
    codes: npt.NDArray[np.int32],
    added: npt.NDArray[np.int64],
) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """The kept rows' groups followed by the added chunks' groups (from their openings)."""
    rows = store.chunk_rows(added.tolist())
    fresh = [script_group(chunk_opening(rows[int(c)].heading, rows[int(c)].content)) for c in added]
    all_names = tuple(sorted({*names, *fresh}))
    code_of = {name: i for i, name in enumerate(all_names)}
    remap = np.asarray([code_of[n] for n in names], dtype=np.int32)
    old = remap[codes] if len(codes) else np.zeros(0, dtype=np.int32)
    new = np.fromiter((code_of[g] for g in fresh), dtype=np.int32, count=len(fresh))
    return all_names, np.concatenate([old, new]).astype(np.int32)
