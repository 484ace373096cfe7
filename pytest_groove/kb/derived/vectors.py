"""The faiss side of an index: inner-product search over stored embeddings.

By default ``IndexIDMap2`` over ``IndexFlatIP`` on L2-normalised vectors:
exhaustive (so the ranking is exact and deterministic, which a regression gate
needs), keyed by chunk id.  For KBs of millions of chunks, ``vector_index = "hnsw"``
in groove.toml (or ``--vector-index hnsw``) builds an approximate HNSW graph
instead (faiss ``IndexHNSWFlat``): much faster per query, but it may miss a true
neighbour.  It is built on one thread, so the same
database always gives the same graph and the same results, and the kind is part of
an eval run's fingerprint, so runs on different kinds are never compared.

Either kind is built from the database and cached in a file
beside it, named by the database's random id and write generation, so a second
process opening an unchanged index reads one file instead of every embedding blob,
and a re-created database can never pick up a stale cache.  The indexer writes the
caches for the state it leaves (:mod:`pytest_groove.kb.derived.vector_cache`: a flat cache of
an older state is updated rather than rebuilt), and a flat cache is memory-mapped
rather than read into a private copy.

**Language centring.**  A small multilingual model places every text of one
language in its own region of the space: a Japanese question is closer to any
Japanese chunk than to the English chunk that answers it.  When the index holds
chunks of more than one script group (:func:`~pytest_groove.text.scripts.script_group`:
Japanese or other), each chunk vector has its group's mean subtracted (and is
re-normalised), and so has the query vector, with the mean of the query's group.
What is left is what a text says rather than which language it says it in
(Libovický et al., "On the Language Neutrality of Pre-trained Multilingual
Representations", 2020).  A group's mean is shrunk towards the overall mean by
:data:`CENTRING_PRIOR_CHUNKS` pseudo-chunks, so a group of a handful of chunks
is not centred on itself.  An index whose second language holds under a quarter
of the chunks (:data:`CENTRING_MIN_SHARE`) is searched exactly as stored, like a
single-language one.

**Note-carrying vectors** (:meth:`VectorIndex.load_for` with ``notes=True``): each
chunk vector plus its document's note vector (:mod:`pytest_groove.kb.notes`), both
centred as above, re-normalised -- so a chunk is found by what it says *and* what
its note is about.  Search orders notes by them (:mod:`pytest_groove.search.pipeline.notes`).
A flat one is answered from the chunk index and a few numbers per row kept in ``index.db``
(:mod:`pytest_groove.kb.derived.note_index`: one copy of the vectors); an HNSW one is its
own index, cached beside the chunk index under its own prefix.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import faiss
import numpy as np
import numpy.typing as npt

from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import SEAL_SUFFIX, open_vouched, seal_path, vouches, write_sealed
from pytest_groove.kb.derived import vector_cache as cache_update
from pytest_groove.kb.derived.vector_cache import CACHE_PREFIX as CACHE_PREFIX
from pytest_groove.kb.derived.vector_cache import CENTRING_MIN_SHARE as CENTRING_MIN_SHARE
from pytest_groove.kb.derived.vector_cache import NOTES_CACHE_PREFIX as NOTES_CACHE_PREFIX
from pytest_groove.kb.derived.vector_cache import cache_path
from pytest_groove.kb.derived.vector_cache import centred as _centred
from pytest_groove.kb.derived.vector_cache import open_cache_file as open_cache_file
from pytest_groove.kb.derived.vector_cache import read_cached_index as _read_cached_index
from pytest_groove.kb.store.database import Store
from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TIE_SLACK, TieOrder
from pytest_groove.settings.config import DEFAULT_VECTOR_INDEX, VECTOR_INDEX_KINDS
from pytest_groove.text.scripts import script_group

Means = dict[str, npt.NDArray[np.float32]]


def group_means(matrix: npt.NDArray[np.float32], groups: list[str]) -> Means:
    """Each group's mean vector, shrunk towards the overall mean.

    Empty (no centring) unless at least two groups each hold
    :data:`CENTRING_MIN_SHARE` of the chunks: a language that is a small minority
    of a knowledge base makes it effectively monolingual, and its few chunks give
    a mean too noisy to subtract.
    """
    names = sorted(set(groups))
    shares = [groups.count(name) / len(groups) for name in names] if groups else []
    if sum(share >= CENTRING_MIN_SHARE for share in shares) < 2:
        return {}
    labels = np.asarray(groups)
    overall = matrix.mean(axis=0)
    means: Means = {}
    for name in names:
        members = matrix[labels == name]
        total = members.sum(axis=0) + CENTRING_PRIOR_CHUNKS * overall
        means[name] = (total / (len(members) + CENTRING_PRIOR_CHUNKS)).astype(np.float32)
    return means


@dataclass(frozen=True)
class NoteVectors:
    """The stored note vectors with their script groups, and each chunk's document."""

    #: document id → (note vector, script group of the note's title and opening)
    vectors: dict[int, tuple[npt.NDArray[np.float32], str]]
    #: chunk id → document id
    document_of: dict[int, int]

    @classmethod
    def of(cls, store: Store) -> NoteVectors:
        openings = store.note_openings()
        return cls(
            vectors={
                doc: (vector, script_group(openings.get(doc, "")))
                for doc, vector in store.note_vectors().items()
            },
            document_of=store.chunk_documents(),
        )


#: HNSW graph degree, construction and search breadth: faiss's usual trade-offs for
#: recall well above 0.95 on sentence embeddings
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128


def _new_index(kind: str, dim: int) -> faiss.Index:
    if kind == "flat":
        return faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    if kind == "hnsw":
        graph = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return faiss.IndexIDMap2(graph)
    known = ", ".join(VECTOR_INDEX_KINDS)
    raise ValueError(f"unknown vector index kind {kind!r} (known: {known})")


#: weight (in chunks) of the overall mean in each group's mean
CENTRING_PRIOR_CHUNKS = 8.0


@contextlib.contextmanager
def one_faiss_thread() -> Iterator[None]:
    """Run faiss on one OpenMP thread for the duration of the block.

    One query over a flat index is a few milliseconds of work: spreading it over
    OpenMP threads makes it wait at a barrier for every thread, and on a busy machine
    (a shared CI runner) a descheduled thread stretches each query tenfold.  The
    process-wide setting is restored afterwards, for other faiss users in the process.
    """
    before = faiss.omp_get_max_threads()
    if before == 1:
        yield
        return
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class VectorIndex:
    """Exact cosine search over the chunk embeddings of one store."""

    def __init__(
        self,
        index: faiss.Index,
        dimension: int,
        means: Means | None = None,
        kind: str = DEFAULT_VECTOR_INDEX,
    ) -> None:
        self._index = index
        self.dimension = dimension
        self.kind = kind
        #: the HNSW graph inside the id map (its search breadth is set per query)
        self._graph: Any = None
        if kind == "hnsw":
            id_map: Any = faiss.downcast_index(index)
            self._graph = faiss.downcast_index(id_map.index)
        #: script group → mean subtracted from its vectors; empty = not centred
        self.means: Means = means or {}

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    @classmethod
    def build(
        cls,
        ids: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
        dim: int,
        groups: list[str] | None = None,
        kind: str = DEFAULT_VECTOR_INDEX,
    ) -> VectorIndex:
        """An index over ``matrix``; with ``groups`` (one per row) language-centred."""
        means = group_means(matrix, groups) if groups is not None and len(ids) else {}
        if means and groups is not None:
            labels = np.asarray(groups)
            matrix = matrix.copy()
            for name, mean in means.items():
                rows = labels == name
                matrix[rows] = _centred(matrix[rows], mean)
        index = _new_index(kind, dim)
        if len(ids):
            # one thread: a multi-threaded HNSW build inserts in a racy order, and the
            # graph (so the results) would differ from run to run
            with one_faiss_thread():
                index.add_with_ids(np.ascontiguousarray(matrix, dtype=np.float32), ids)
        return cls(index, dim, means, kind)

    @classmethod
    def build_with_notes(
        cls,
        ids: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
        dim: int,
        groups: list[str] | None,
        notes: NoteVectors,
        kind: str = DEFAULT_VECTOR_INDEX,
    ) -> VectorIndex:
        """An index over each chunk vector plus its note's vector, with the chunk means.

        Centred like :meth:`build` (the chunks' group means, applied to the note
        vectors too, each by its own note's group); a chunk whose document has no
        note vector keeps its own vector.
        """
        means = group_means(matrix, groups) if groups is not None and len(ids) else {}
        fallback = np.mean(np.stack(list(means.values())), axis=0) if means else None

        def centre(rows: npt.NDArray[np.float32], group: str | None) -> npt.NDArray[np.float32]:
            mean = None if group is None else means.get(group, fallback)
            return _centred(rows, np.zeros(dim, np.float32) if mean is None else mean)

        chunks = matrix.copy()
        if groups is not None and means:
            labels = np.asarray(groups)
            for name in sorted(set(groups)):
                rows = labels == name
                chunks[rows] = centre(matrix[rows], name)
        else:
            chunks = centre(matrix, None)
        centred_notes = {
            doc: centre(vector.reshape(1, -1), group if means else None)[0]
            for doc, (vector, group) in notes.vectors.items()
        }
        for row, cid in enumerate(ids):
            note = centred_notes.get(notes.document_of.get(int(cid), -1))
            if note is not None:
                chunks[row] = chunks[row] + note
        index = _new_index(kind, dim)
        if len(ids):
            with one_faiss_thread():
                index.add_with_ids(centre(chunks, None), ids)
        return cls(index, dim, means, kind)

    @classmethod
    def load_for(
        cls,
        store: Store,
        directory: Path,
        *,
        centre: bool = True,
        kind: str = DEFAULT_VECTOR_INDEX,
        notes: bool = False,
    ) -> VectorIndex:
        """The cached index for the store's current generation, else a fresh build.

        ``centre`` applies language centring when the index has several script
        groups; ``notes`` builds the note-carrying index (:meth:`build_with_notes`)
        instead of the chunk index.  Must be called inside ``store.read_snapshot()``
        so the generation and the embeddings come from the same committed state.
        """
        dim = int(store.get_meta("embedding_dim") or "0")
        prefix = NOTES_CACHE_PREFIX if notes else CACHE_PREFIX
        cache = cache_path(store, directory, centre=centre, kind=kind, notes=notes)
        means_file = cache.with_suffix(".npz")
        mapped = _MAPPED.get(cache)
        if mapped is not None and mapped.dimension == dim and mapped.size == store.counts()[1]:
            return mapped
        loaded = cls._read_cache(cache, means_file, dim, store.counts()[1], kind)
        if loaded is not None:
            if kind == "flat":
                _MAPPED.keep(cache, loaded)
            return loaded
        if kind == "flat":
            update = cache_update.updated(store, cache, dim, centre=centre, notes=notes)
            if update is not None:
                with contextlib.closing(update):
                    written = cls._write_update(directory, cache, prefix, update)
                    if written is not None:
                        return written
                    # the folder takes no file: the same index, made in memory
                    with contextlib.suppress(Exception):
                        index = update.index()
                        if index.ntotal == len(update.ids):
                            return cls(index, dim, {}, kind)
                # the older file changed under the update: built in full below
        ids, matrix = store.all_vectors()
        groups = None
        if centre:
            openings = store.chunk_openings(ascii_too=False)  # the others: "other"
            groups = [script_group(openings.get(int(cid), "")) for cid in ids]
        note_vectors = NoteVectors.of(store) if notes else None
        if note_vectors is not None:
            built = cls.build_with_notes(ids, matrix, dim, groups, note_vectors, kind)
        else:
            built = cls.build(ids, matrix, dim, groups, kind)
        del matrix  # the index holds its own copy: drop this one before the cache is written
        state = cache_update.state_of(
            groups, None if note_vectors is None else note_vectors.vectors
        )
        built._write_cache(directory, cache, prefix, None if built.means else state)
        return built

    @classmethod
    def _read_cache(
        cls, cache: Path, means_file: Path, dim: int, size: int, kind: str
    ) -> VectorIndex | None:
        """The cached index when its file and its means (if any) are vouched for by
        their seals (:mod:`~pytest_groove.files.seal`) and read back as an index of
        ``size`` rows of ``dim``; None otherwise (absent, damaged, a link or a pipe in
        its place, anything faiss or numpy refuses): the caller builds it again."""
        try:
            cached = open_vouched(cache)
            if cached is None:
                return None
            with cached:
                index = _read_cached_index(cached, mapped=kind == "flat")
            means: Means = {}
            saved_means = open_cache_file(means_file)
            if saved_means is not None:
                with saved_means:
                    if not vouches(saved_means, means_file):
                        return None  # never read as "not centred"
                    with np.load(saved_means, allow_pickle=False) as saved:
                        means = {str(k): np.asarray(saved[k], dtype=np.float32) for k in saved}
            if index.d != dim or index.ntotal != size:
                return None
            if any(mean.shape != (dim,) for mean in means.values()):
                return None
            return cls(index, dim, means, kind)
        except ResourceLimit:
            raise  # out of open files or memory: no damage
        except Exception:  # a damaged cache is rebuilt, never fatal
            return None

    @classmethod
    def _write_update(
        cls, directory: Path, cache: Path, prefix: str, update: cache_update.Update
    ) -> VectorIndex | None:
        """Write the updated cache and its state, then map it; None when it cannot be
        written (or does not read back as the index the update makes)."""
        try:
            write_sealed(cache_update.state_path(cache), update.state.write)
            write_sealed(cache, update.write, pieces=update.pieces)
            handle = open_cache_file(cache)
            if handle is None:
                return None
            with handle:
                index = _read_cached_index(handle, mapped=True)
        except (OSError, RuntimeError):
            return None
        written = cls(index, update.layout.dim, {}, DEFAULT_VECTOR_INDEX)
        if written.size != len(update.ids) or not _rows_match(written, update):
            return None
        _drop_other_caches(directory, prefix, {cache, cache_update.state_path(cache)})
        _MAPPED.keep(cache, written)
        return written

    def _write_cache(
        self,
        directory: Path,
        cache: Path,
        prefix: str = CACHE_PREFIX,
        state: cache_update.CacheState | None = None,
    ) -> None:
        # The cache is an optimisation: failing to write it (read-only checkout, full
        # disk) must never fail a search.  Each file is sealed (files/seal.py): one
        # that is torn or damaged later is rebuilt, never read.  The means are written
        # first: an index file without its means is never left behind to be read as
        # "not centred".
        means_file = cache.with_suffix(".npz")
        state_file = cache_update.state_path(cache)
        try:
            if state is not None:
                write_sealed(state_file, state.write)
            if self.means:
                write_sealed(
                    means_file,
                    lambda handle: np.savez(handle, **self.means),  # type: ignore[arg-type]
                )
            write_sealed(cache, self._write_index)
        except (OSError, RuntimeError):
            return
        _drop_other_caches(directory, prefix, {cache, means_file, state_file})

    def _write_index(self, handle: BinaryIO) -> None:
        """The faiss index's bytes into ``handle`` (faiss streams them through a callback)."""
        writer = faiss.PyCallbackIOWriter(handle.write)  # type: ignore[attr-defined]
        faiss.write_index(self._index, writer)

    def prepare_query(self, query: npt.NDArray[np.float32], text: str) -> npt.NDArray[np.float32]:
        """The query vector as this index compares it: centred by its text's group."""
        if not self.means:
            return query
        mean = self.means.get(script_group(text))
        if mean is None:
            mean = np.mean(np.stack(list(self.means.values())), axis=0)
        row = np.asarray(query, dtype=np.float32).reshape(1, -1)
        centred: npt.NDArray[np.float32] = _centred(row, mean)[0]
        return centred

    def vector(self, chunk_id: int) -> npt.NDArray[np.float32]:
        """The vector this index holds for ``chunk_id`` (to check it against the store)."""
        return np.asarray(self._index.reconstruct(int(chunk_id)), dtype=np.float32)

    def search(
        self, query: npt.NDArray[np.float32], n: int, tie: TieOrder = IN_ID_ORDER
    ) -> list[int]:
        """Up to ``n`` chunk ids, most similar first (ties in ``tie`` order: by
        default lower id first).

        Similarities are compared on a grid of :data:`SCORE_GRID` (see
        :func:`graded_scores`): two chunks whose scores differ by rounding alone tie,
        and go in corpus order on every machine."""
        n = min(n, self.size)
        if n <= 0:
            return []
        # faiss keeps an arbitrary few of the rows tying at the cut (its heap pushes
        # out equal scores as they come): fetch past the cut until the group of rows
        # tying with the n-th is whole, then choose among them in corpus order
        fetch = min(n + TIE_SLACK, self.size)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        while True:
            if self._graph is not None:
                # the search breadth must cover the results asked for
                self._graph.hnsw.efSearch = max(HNSW_EF_SEARCH, fetch)
            with one_faiss_thread():
                scores, ids = self._index.search(q, fetch)
            kept = ids[0] >= 0
            found, found_ids = graded_scores(scores[0][kept]), ids[0][kept]
            if fetch >= self.size or len(found) <= n or found[-1] < found[n - 1]:
                break
            fetch = min(2 * fetch, self.size)
        pairs = [(int(s), int(i)) for s, i in zip(found, found_ids, strict=True)]
        pairs.sort(key=lambda p: (-p[0], tie.key(p[1])))
        return [i for _, i in pairs[:n]]


#: the step similarities are compared in: 2**-16, about 1.5e-5.  A float32 inner
#: product of two unit vectors of a few hundred dimensions is off by up to about 1e-6,
#: and by how much depends on the CPU: faiss and the embedders sum in the order their
#: SIMD kernels choose (AVX2, AVX-512), so two chunks orthogonal to a query came out as
#: 0.0 and -1.9e-9 on one machine, in the other order on another, and a ranking -- and
#: a golden query's score -- moved with the CI runner.  A step ten times that error
#: makes such pairs one tie (in corpus order) on every machine but for about one pair
#: in a hundred that straddles a step; it is still far finer than any difference in
#: similarity a ranking is about.
SCORE_GRID = 2.0**-16


def graded_scores(scores: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """``scores`` as whole steps of :data:`SCORE_GRID` (rounded to the nearest)."""
    return np.rint(scores.astype(np.float64) / SCORE_GRID).astype(np.int64)


#: the flat cache this process mapped last: the indexer's refresh, the note rows and
#: the search after it map one file once
_MAPPED: cache_update.KeptCopy[VectorIndex] = cache_update.KeptCopy()


def _rows_match(written: VectorIndex, update: cache_update.Update) -> bool:
    """Whether the written cache holds the update's ids, its last added row and the
    first row it kept, as they are (a cheap check that the file came out as faiss
    reads it)."""
    id_map: Any = faiss.downcast_index(written._index)
    if not isinstance(id_map, faiss.IndexIDMap2):
        return False
    if not np.array_equal(faiss.vector_to_array(id_map.id_map), update.ids):
        return False
    if len(update.added_ids):
        last = written.vector(int(update.added_ids[-1]))
        if last.tobytes() != np.ascontiguousarray(update.added_rows[-1]).tobytes():
            return False
    if update.kept_ranges:
        first = update.kept_ranges[0][0]
        size = update.layout.row_bytes
        at = cache_update.FLAT_ROWS_AT + first * size
        kept = os.pread(update.source.fileno(), size, at)
        if written.vector(int(update.ids[0])).tobytes() != kept:
            return False
    return True


def _drop_other_caches(directory: Path, prefix: str, keep: set[Path]) -> None:
    """Remove this folder's other caches of ``prefix`` (older generations, other modes),
    with their seals."""
    kept = {*keep, *(seal_path(path) for path in keep)}
    for old in directory.glob(f"{prefix}*"):
        if old.name.endswith((".faiss", ".npz", SEAL_SUFFIX)) and old not in kept:
            with contextlib.suppress(OSError):
                old.unlink()
