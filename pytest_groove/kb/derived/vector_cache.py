"""The faiss caches beside an index, carried forward from one write generation to the next.

A cache file (:mod:`pytest_groove.kb.derived.vectors`) is named by the database's random id
and write generation, so any write makes it stale.  Rebuilding it reads every stored
embedding and holds the whole matrix twice, which made the first search after a
one-line edit of a large KB slower and larger than every later one.  So a flat cache
of an older generation is *updated* instead: the rows of chunks that are gone are
left out and the new chunks' rows are added.  The new file is written from the old
one without reading it into memory: its header says where the rows and ids lie
(:class:`FlatLayout`, checked against the file's size), the kept rows are copied by
the kernel file to file, and the new rows and the ids follow (:class:`Update`); a
file of any other layout is built in full.  (The flat note-carrying index is not a
faiss index of its own: :mod:`pytest_groove.kb.derived.note_index` keeps its rows in
``index.db`` and updates them.)

The result is the file a full build would write, byte for byte, rows in the same order:
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
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import faiss
import numpy as np
import numpy.typing as npt

from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import CACHE_FILE_CAP as CACHE_FILE_CAP
from pytest_groove.files.seal import open_cache_file as open_cache_file
from pytest_groove.files.seal import open_vouched, seal_of
from pytest_groove.files.seal_pieces import Piece, carried_pieces, pieces_of
from pytest_groove.kb.derived.family import Check, DerivedFamily, Retention
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import DEFAULT_VECTOR_INDEX
from pytest_groove.text.scripts import script_group

__all__ = [
    "CENTRING_MIN_SHARE",
    "DERIVED_FILES",
    "CacheState",
    "FlatLayout",
    "KeptCopy",
    "Update",
    "cache_path",
    "centred",
    "centring_applies",
    "file_identity",
    "older_generation",
    "open_cache_file",
    "state_of",
    "state_path",
    "updated",
]

T = TypeVar("T")


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


def file_identity(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, modification time) of ``path`` itself (a link is not
    followed), None when it cannot be looked at: a cache file replaced by rename gets
    another inode, so a kept copy of one is still that file while this is unchanged."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


CACHE_PREFIX = "vectors"
#: the note-carrying index's cache (a name the chunk cache's clean-up never matches)
NOTES_CACHE_PREFIX = "notevectors"
#: centring needs two script groups of at least this share of the chunks each
CENTRING_MIN_SHARE = 0.25


def _cache_family(description: str, prefix: str) -> DerivedFamily:
    """Both kinds of vector cache: a faiss index and its ``.npz``, one per index state."""
    return DerivedFamily(
        description,
        prefix=f"{prefix}-",
        suffixes=(".faiss", ".npz"),
        retention=Retention.CURRENT_STATE,
        check=Check.SEAL_WITH_STEM,
    )


#: the files named here (:func:`cache_path`, :func:`state_path`), in the table of
#: derived files (:mod:`.families`)
DERIVED_FILES = (
    _cache_family("vector caches: a faiss index, its means and update state", CACHE_PREFIX),
    _cache_family("note-carrying vector caches of a kind other than flat", NOTES_CACHE_PREFIX),
)


def centred(
    rows: npt.NDArray[np.float32], mean: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``rows`` minus ``mean``, each re-normalised (a zero row stays zero)."""
    shifted = rows - mean
    norms = np.linalg.norm(shifted, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    shifted /= norms  # in place: the same quotients, one matrix fewer at a time
    return np.ascontiguousarray(shifted, dtype=np.float32)


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
        """The state file at ``path``; None when absent, not vouched for by its seal
        (:mod:`~pytest_groove.files.seal`) or unreadable in any way."""
        try:
            handle = open_vouched(path)  # checked, never followed
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
        except ResourceLimit:
            raise  # out of open files or memory: no damage
        except Exception:  # damaged in any way: the cache is built in full
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


#: a flat cache file as faiss 1.x writes an ``IndexIDMap2`` over an ``IndexFlat``: the
#: outer and inner index headers (fourcc, d, ntotal, two unused words, is_trained,
#: metric), the count of floats, the rows, then the count of ids and the ids
_INDEX_HEADER = struct.Struct("<4siqqqBi")
_COUNT = struct.Struct("<Q")
FLAT_ROWS_AT = 2 * _INDEX_HEADER.size + _COUNT.size
#: the inner fourcc of each metric a flat cache can have (inner product, L2)
_FLAT_FOURCC = {0: b"IxFI", 1: b"IxF2"}
#: bytes copied at once where the kernel cannot copy between the files itself
_COPY_BLOCK = 8 * 1024 * 1024


@dataclass(frozen=True)
class FlatLayout:
    """Where a flat cache file keeps its parts, read from (and checked against) its header."""

    prefix: bytes
    dim: int
    ntotal: int

    @property
    def row_bytes(self) -> int:
        return 4 * self.dim

    @property
    def ids_at(self) -> int:
        return FLAT_ROWS_AT + self.ntotal * self.row_bytes + _COUNT.size

    @classmethod
    def read(cls, handle: BinaryIO) -> FlatLayout | None:
        """The layout of the open cache file, None unless every part adds up."""
        prefix = os.pread(handle.fileno(), FLAT_ROWS_AT, 0)
        if len(prefix) != FLAT_ROWS_AT:
            return None
        outer = _INDEX_HEADER.unpack_from(prefix, 0)
        inner = _INDEX_HEADER.unpack_from(prefix, _INDEX_HEADER.size)
        (floats,) = _COUNT.unpack_from(prefix, 2 * _INDEX_HEADER.size)
        fourcc, dim, ntotal, _, _, _, metric = outer
        if (
            fourcc != b"IxM2"
            or inner[0] != _FLAT_FOURCC.get(metric)
            or inner[1:3] != (dim, ntotal)
            or inner[6] != metric
            or dim <= 0
            or ntotal < 0
            or floats != dim * ntotal
        ):
            return None
        layout = cls(prefix, dim, ntotal)
        ids_count = os.pread(handle.fileno(), _COUNT.size, layout.ids_at - _COUNT.size)
        size = os.fstat(handle.fileno()).st_size
        if len(ids_count) != _COUNT.size or _COUNT.unpack(ids_count)[0] != ntotal:
            return None
        if size != layout.ids_at + 8 * ntotal:
            return None
        return layout

    def ids(self, handle: BinaryIO) -> npt.NDArray[np.int64]:
        data = os.pread(handle.fileno(), 8 * self.ntotal, self.ids_at)
        return np.frombuffer(data, dtype="<i8").astype(np.int64)

    def header_for(self, ntotal: int) -> bytes:
        """The header of a file of this layout holding ``ntotal`` rows."""
        out = bytearray(self.prefix)
        for at in (0, _INDEX_HEADER.size):
            fields = list(_INDEX_HEADER.unpack_from(out, at))
            fields[2] = ntotal
            _INDEX_HEADER.pack_into(out, at, *fields)
        _COUNT.pack_into(out, 2 * _INDEX_HEADER.size, ntotal * self.dim)
        return bytes(out)


@dataclass
class Update:
    """An older flat cache brought to the store's current state, with its new state.

    The older file's kept rows are copied file to file (the kernel copies them; no
    row passes through this process), the new chunks' rows follow them, then the
    ids: :meth:`write` makes the file a full build writes, byte for byte.
    :meth:`index` makes the same index in memory, for a folder it cannot be
    written to.
    """

    source: BinaryIO
    layout: FlatLayout
    #: the older file's rows the new one keeps, as (first, end) row ranges
    kept_ranges: list[tuple[int, int]]
    removed: npt.NDArray[np.int64]
    added_ids: npt.NDArray[np.int64]
    added_rows: npt.NDArray[np.float32]
    #: the new index's ids, in row order
    ids: npt.NDArray[np.int64]
    state: CacheState
    #: the older file's sealed pieces (files/seal_pieces.py), None when not known
    old_pieces: tuple[Piece, ...] | None = None

    def write(self, handle: BinaryIO) -> None:
        handle.write(self.layout.header_for(len(self.ids)))
        handle.flush()
        out_fd, row = handle.fileno(), self.layout.row_bytes
        for first, end in self.kept_ranges:
            _copy_range(
                self.source.fileno(), out_fd, FLAT_ROWS_AT + first * row, (end - first) * row
            )
        handle.write(np.ascontiguousarray(self.added_rows, dtype="<f4").tobytes())
        handle.write(_COUNT.pack(len(self.ids)))
        handle.write(np.ascontiguousarray(self.ids, dtype="<i8").tobytes())

    def pieces(self, fd: int) -> list[Piece]:
        """The pieces of the file :meth:`write` wrote at ``fd``: the older file's pieces
        inside the kept rows are carried over unread (an edit reads a few pieces)."""
        if self.old_pieces is None:
            return pieces_of(fd)
        copies, at, row = [], FLAT_ROWS_AT, self.layout.row_bytes
        for first, end in self.kept_ranges:
            copies.append((at, FLAT_ROWS_AT + first * row, (end - first) * row))
            at += (end - first) * row
        return carried_pieces(fd, self.old_pieces, copies)

    def index(self) -> Any:
        self.source.seek(0)
        index: Any = read_cached_index(self.source, mapped=False)
        if len(self.removed):
            index.remove_ids(np.ascontiguousarray(self.removed))
        if len(self.added_ids):
            index.add_with_ids(np.ascontiguousarray(self.added_rows), self.added_ids)
        return index

    def close(self) -> None:
        # the older file is unlinked by now: its last close frees its pages, which
        # blocks for a while on a large file (60 ms at 100 MiB), so a thread does it
        threading.Thread(target=self.source.close, name="groove-close-cache").start()


def _copy_range(in_fd: int, out_fd: int, offset: int, count: int) -> None:
    """``count`` bytes of ``in_fd`` from ``offset`` appended at ``out_fd``'s position."""
    copy_file_range = getattr(os, "copy_file_range", None)
    while count > 0 and copy_file_range is not None:
        try:
            done = copy_file_range(in_fd, out_fd, count, offset)
        except OSError:
            break  # not between these files (another file system, an old kernel)
        if done <= 0:
            break
        offset, count = offset + done, count - done
    while count > 0:
        data = os.pread(in_fd, min(count, _COPY_BLOCK), offset)
        if not data:
            raise OSError(f"the older vector cache ended {count} bytes early")
        view = memoryview(data)
        while view:
            view = view[os.write(out_fd, view) :]
        offset, count = offset + len(data), count - len(data)


def _ranges(kept: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """The (first, end) runs of True in ``kept``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], kept.astype(np.int8), [0]])))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


_GENERATION = re.compile(r"-gen(\d+)-")


def older_generation(path: Path, generation: int) -> tuple[int, Path] | None:
    """(generation, file) of the newest file beside ``path`` named like it but for an
    earlier generation than ``generation`` (``path`` names its generation as
    ``-gen<N>-``), or None."""
    pattern = _GENERATION.sub("-gen*-", path.name, count=1)
    best: tuple[int, Path] | None = None
    for candidate in path.parent.glob(pattern):
        match = _GENERATION.search(candidate.name)
        if match is None or candidate == path:
            continue
        number = int(match.group(1))
        if number < generation and (best is None or number > best[0]):
            best = (number, candidate)
    return best


class KeptCopy(Generic[T]):
    """The one object this process made from (or wrote to) a cache file, kept while the
    file is still that one: same device, inode, size and time (a cache is replaced by
    rename, never rewritten in place), so the next reader in the process need not read
    it again."""

    def __init__(self) -> None:
        self._kept: tuple[Path, tuple[int, int, int, int], T] | None = None

    def get(self, path: Path) -> T | None:
        if self._kept is None:
            return None
        kept_path, identity, value = self._kept
        return value if kept_path == path and identity == file_identity(path) else None

    def keep(self, path: Path, value: T) -> None:
        identity = file_identity(path)
        self._kept = None if identity is None else (path, identity, value)

    def forget(self) -> None:
        self._kept = None


def updated(store: Store, cache: Path, dim: int, *, centre: bool, notes: bool) -> Update | None:
    """How to make the flat index for ``cache`` from an older generation's cache, else None.

    None when there is no older cache with its state, when it was (or now would be)
    language-centred, or when anything about it does not add up: the caller builds
    in full.  Call inside ``store.read_snapshot()``; close the update when done.
    """
    if notes:
        # a flat note-carrying index is the chunk index's rows (kb/derived/note_index.py),
        # updated there; one built in full here (VectorIndex.load_for) stays so
        return None
    found = older_generation(cache, store.generation)
    older = None if found is None else found[1]
    if older is None or older.with_suffix(".npz").is_file():  # no cache, or centred
        return None
    state = CacheState.read(state_path(older), centre=centre, notes=notes)
    if state is None:
        return None
    # its kept rows are copied as they are: only a file its seal vouches for
    handle = open_vouched(older)  # checked, never followed
    if handle is None:
        return None
    try:
        update = _update_from(store, handle, dim, state, centre)
        seal = seal_of(handle, older)
        if update is not None and seal is not None:
            update.old_pieces = seal.pieces
    except ResourceLimit:
        raise  # out of open files or memory: no damage
    except Exception:  # anything that does not add up: built in full
        update = None
    if update is None:
        handle.close()
    return update


def _update_from(
    store: Store, handle: BinaryIO, dim: int, state: CacheState, centre: bool
) -> Update | None:
    layout = FlatLayout.read(handle)
    if layout is None or layout.dim != dim:
        return None  # not a flat cache of this dimension (or of another faiss layout)
    old_ids = layout.ids(handle)
    if np.any(np.diff(old_ids) <= 0):
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
    rows = np.zeros((0, dim), dtype=np.float32)
    if len(added):
        # every added id is above every kept one: they are the ids from the first on
        read, rows = store.vectors_from(int(added[0]))
        if not np.array_equal(read, added):
            return None
    ids = np.concatenate([old_ids[kept], added])
    if len(ids) != len(current) or rows.shape != (len(added), dim):
        return None
    return Update(
        handle,
        layout,
        _ranges(kept),
        old_ids[~kept],
        added,
        rows,
        ids,
        CacheState(names, codes, None),
    )


def _groups_after(
    store: Store,
    names: tuple[str, ...],
    codes: npt.NDArray[np.int32],
    added: npt.NDArray[np.int64],
) -> tuple[tuple[str, ...], npt.NDArray[np.int32]]:
    """The kept rows' groups followed by the added chunks' groups (from their openings;
    every added id is above every kept one, so they are the ids from the first on)."""
    openings = store.chunk_openings(ascii_too=False, from_id=int(added[0])) if len(added) else {}
    fresh = [script_group(openings.get(int(c), "")) for c in added]
    all_names = tuple(sorted({*names, *fresh}))
    code_of = {name: i for i, name in enumerate(all_names)}
    remap = np.asarray([code_of[n] for n in names], dtype=np.int32)
    old = remap[codes] if len(codes) else np.zeros(0, dtype=np.int32)
    new = np.fromiter((code_of[g] for g in fresh), dtype=np.int32, count=len(fresh))
    return all_names, np.concatenate([old, new]).astype(np.int32)
