"""The note-carrying vector index answered from the chunk index: one copy of the vectors.

A note-carrying row is a chunk's row plus its document's note vector, re-normalised
(:meth:`~pytest_groove.kb.derived.vectors.VectorIndex.build_with_notes`).  Kept as a second
faiss index, it was a second full copy of every vector: as large as the chunk index,
mapped into every search, and rewritten after every edit.  Its inner product with a
query splits into what the chunk index already holds and a few numbers per row::

    q . normalise(a * x + n)  =  (a * (q . x) + q . n) * b

with ``x`` the chunk index's row, ``a`` 1 where the chunk index is language-centred
(its rows are the centred, normalised chunks) and ``1 / |x|`` where it holds the
vectors as stored, ``n`` the document's note vector as the rows add it (centred by
the chunk means of its note's script group, normalised; zero for a document without
one) and ``b`` the reciprocal of the norm of the sum.  So the flat note-carrying index
is kept as :class:`NoteRows` -- each row's document, ``a`` and ``b``, and one note
vector per document (a few bytes per chunk and one vector per document) -- and a
search scores every row from one pass over the chunk index.  That score differs from
the row's own inner product only by rounding, so the rows near the n-th score are
scored again on the rows themselves (:meth:`NoteCarryingIndex.rows` rebuilds them bit
for bit as a full build makes them), and ranked by that score, ties by lower chunk id,
as :meth:`VectorIndex.search` ranks a faiss index's answer.

The rows are kept in ``index.db`` itself, in the ``note_rows`` table: one row per
centring mode, each array a BLOB, with the write generation they answer for.  The
indexer keeps them (:func:`note_index_for` with ``keep``) in its read snapshot of the
state they describe, so they are committed atomically and checked as the database
is: no file, seal or format of their own.  A reader whose state has no kept rows (an
index an older version or another configuration wrote) makes them in memory.

After an edit the kept rows are updated: the kept rows keep their numbers, the new
chunks' rows and the rows of documents whose note vector changed get new ones.  An
HNSW index cannot be answered this way (its graph is over the rows themselves), so
it keeps its own note-carrying index.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import faiss
import numpy as np
import numpy.typing as npt

from pytest_groove.kb.derived.vector_cache import centred
from pytest_groove.kb.derived.vectors import Means, VectorIndex, graded_scores, one_faiss_thread
from pytest_groove.kb.store.database import Store
from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TieOrder
from pytest_groove.settings.config import DEFAULT_VECTOR_INDEX
from pytest_groove.text.scripts import script_group

__all__ = [
    "NoteCarryingIndex",
    "NoteRows",
    "keeps_note_rows",
    "kept_note_rows",
    "note_index_for",
]

#: rows whose numbers are worked out at once (bounds the temporary matrix)
_BLOCK_ROWS = 8192
#: how far below the n-th score a row is still scored again on its own vector: far
#: above the float32 rounding of the two ways of scoring unit vectors (~1e-7) and the
#: step scores are compared in (``vectors.SCORE_GRID``, ~1.5e-5)
_RESCORE_MARGIN = 1e-4
_ARRAYS = ("ids", "docs", "scale", "inv_norm", "note_docs", "notes")
#: each array's type as kept (little-endian, whatever the machine)
_DTYPES: dict[str, np.dtype[Any]] = {
    "ids": np.dtype("<i8"),
    "docs": np.dtype("<i8"),
    "scale": np.dtype("<f4"),
    "inv_norm": np.dtype("<f4"),
    "note_docs": np.dtype("<i8"),
    "notes": np.dtype("<f4"),
}


@dataclass(frozen=True)
class NoteRows:
    """What the note-carrying rows need beyond the chunk index (see the module doc)."""

    #: the chunk index's ids, in its row order (ascending)
    ids: npt.NDArray[np.int64]
    #: each row's document id
    docs: npt.NDArray[np.int64]
    #: ``a``: what the chunk row is scaled by before its note is added
    scale: npt.NDArray[np.float32]
    #: ``b``: 1 / the norm of the row before it is re-normalised
    inv_norm: npt.NDArray[np.float32]
    #: the documents with a note vector, ascending, and those vectors as rows add them
    note_docs: npt.NDArray[np.int64]
    notes: npt.NDArray[np.float32]
    #: made over a language-centred chunk index (``a`` is 1, the notes are centred)
    centred: bool

    def codes(self) -> npt.NDArray[np.intp]:
        """Each row's index into :attr:`notes`, ``len(notes)`` for a row without one."""
        return _codes(self.docs, self.note_docs)

    def arrays(self) -> tuple[npt.NDArray[Any], ...]:
        """The arrays, in :data:`_ARRAYS` order."""
        return tuple(getattr(self, name) for name in _ARRAYS)


def _counts(sizes: list[int], dim: int) -> list[int] | None:
    """Each kept array's length from its BLOB's size in bytes (:data:`_ARRAYS` order),
    None when they do not add up to rows of this dimension (another model's)."""
    if any(size % _DTYPES[name].itemsize for name, size in zip(_ARRAYS, sizes, strict=True)):
        return None
    counts = [size // _DTYPES[name].itemsize for name, size in zip(_ARRAYS, sizes, strict=True)]
    ids, docs, scale, inv_norm, note_docs, notes = counts
    return counts if docs == scale == inv_norm == ids and notes == note_docs * dim else None


def _codes(docs: npt.NDArray[np.int64], note_docs: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    codes = np.searchsorted(note_docs, docs)
    found = codes < len(note_docs)
    found[found] = note_docs[codes[found]] == docs[found]
    codes[~found] = len(note_docs)
    return codes


def _chunk_matrix(plain: VectorIndex) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The chunk index's ids and its rows, as a view (no copy) of faiss's storage."""
    id_map: Any = faiss.downcast_index(plain._index)
    flat: Any = faiss.downcast_index(id_map.index)
    ids = faiss.vector_to_array(id_map.id_map).astype(np.int64)
    if not flat.ntotal:
        return ids, np.zeros((0, plain.dimension), dtype=np.float32)
    rows = faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * flat.d)
    return ids, np.asarray(rows).reshape(flat.ntotal, flat.d)


def _centred_notes(
    store: Store, means: Means, dim: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Every stored note vector as the note-carrying rows add it, by ascending document.

    The same operations as :meth:`VectorIndex.build_with_notes`, row by row: centred by
    the mean of its note's script group (the groups' mean for another group), or only
    normalised where the chunk index is not centred.
    """
    docs, matrix = store.note_matrix()
    if not len(docs):
        return docs, np.zeros((0, dim), dtype=np.float32)
    if not means:
        return docs, centred(matrix, np.zeros(dim, np.float32))
    fallback: npt.NDArray[np.float32] = np.mean(np.stack(list(means.values())), axis=0)
    openings = store.note_openings()
    groups = np.asarray([script_group(openings.get(int(doc), "")) for doc in docs])
    out = np.empty_like(matrix)
    for name in sorted(set(groups.tolist())):
        members = groups == name
        out[members] = centred(matrix[members], means.get(name, fallback))
    return docs, out


def _unnormalised(
    chunks: npt.NDArray[np.float32],
    codes: npt.NDArray[np.intp],
    notes: npt.NDArray[np.float32],
    centred_chunks: bool,
) -> npt.NDArray[np.float32]:
    """The rows before their last normalisation, as a full build makes them."""
    dim = chunks.shape[1]
    rows = (
        np.array(chunks, dtype=np.float32)
        if centred_chunks
        else centred(chunks, np.zeros(dim, np.float32))
    )
    has = codes < len(notes)
    if has.all():  # every chunk's note (the usual case): one gather, added in place
        rows += notes[codes]
    else:
        rows[has] = rows[has] + notes[codes[has]]
    return rows


def _norms(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``np.linalg.norm(rows, axis=1)``, the same sums, squared in place (``rows`` is
    spent); a zero norm as 1."""
    np.multiply(rows, rows, out=rows)
    norms: npt.NDArray[np.float32] = np.sqrt(np.add.reduce(rows, axis=1))
    norms[norms == 0] = 1.0
    return norms


def _row_numbers(
    chunks: npt.NDArray[np.float32],
    codes: npt.NDArray[np.intp],
    notes: npt.NDArray[np.float32],
    centred_chunks: bool,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(``a``, ``b``) of these rows, a block at a time."""
    scale = np.ones(len(chunks), dtype=np.float32)
    inv_norm = np.ones(len(chunks), dtype=np.float32)
    for start in range(0, len(chunks), _BLOCK_ROWS):
        block = slice(start, start + _BLOCK_ROWS)
        part = chunks[block]
        if not centred_chunks:
            scale[block] = 1.0 / _norms(np.array(part, dtype=np.float32))
        inv_norm[block] = 1.0 / _norms(_unnormalised(part, codes[block], notes, centred_chunks))
    return scale, inv_norm


def _documents_of(store: Store, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The document of each chunk of ``ids``; -1 where the table has no such chunk."""
    stored, documents = store.chunk_document_ids()
    if not len(stored):
        return np.full(len(ids), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(stored, ids), len(stored) - 1)
    return np.where(stored[at] == ids, documents[at], -1).astype(np.int64)


def build_rows(store: Store, plain: VectorIndex) -> NoteRows:
    """The rows of every chunk of ``plain`` (inside ``store.read_snapshot()``)."""
    ids, chunks = _chunk_matrix(plain)
    docs = _documents_of(store, ids)
    note_docs, notes = _centred_notes(store, plain.means, plain.dimension)
    scale, inv_norm = _row_numbers(chunks, _codes(docs, note_docs), notes, bool(plain.means))
    return NoteRows(ids, docs, scale, inv_norm, note_docs, notes, bool(plain.means))


def updated_rows(
    store: Store, plain: VectorIndex, old: NoteRows, written: set[int] | None = None
) -> NoteRows | None:
    """``old`` brought to ``plain``'s rows and the stored note vectors, else None.

    Only the new chunks' rows and the rows of documents whose note vector changed are
    worked out.  ``written`` (when known) holds every document whose note vector was
    set or removed since ``old`` was made: only those are read again; otherwise every
    stored note vector is read and compared with ``old``'s.  None where the chunk
    index is centred (every row moved with its group's mean) or its rows are not
    ``old``'s kept rows followed by new ones.
    """
    if plain.means or old.centred:
        return None
    ids, chunks = _chunk_matrix(plain)
    kept = np.isin(old.ids, ids, assume_unique=True)
    kept_ids = old.ids[kept]
    if not np.array_equal(ids[: len(kept_ids)], kept_ids):
        return None
    added = ids[len(kept_ids) :]
    if 2 * len(added) > len(ids):
        return None  # mostly new rows: a full build reads them at once
    # the new rows' ids are above every kept one: the ids from the first on
    stored, added_docs = (
        store.chunk_document_ids(from_id=int(added[0])) if len(added) else (added, added)
    )
    if not np.array_equal(stored, added):
        return None
    docs = np.concatenate([old.docs[kept], added_docs])
    note_docs, notes, changed = _notes_after(store, old, plain.dimension, written)
    redo = np.flatnonzero(np.isin(docs, changed))
    redo = np.union1d(redo, np.arange(len(kept_ids), len(ids)))
    scale = np.concatenate([old.scale[kept], np.ones(len(added), np.float32)])
    inv_norm = np.concatenate([old.inv_norm[kept], np.ones(len(added), np.float32)])
    if len(redo):
        codes = _codes(docs[redo], note_docs)
        scale[redo], inv_norm[redo] = _row_numbers(chunks[redo], codes, notes, False)
    return NoteRows(ids, docs, scale, inv_norm, note_docs, notes, False)


def _notes_after(
    store: Store, old: NoteRows, dim: int, written: set[int] | None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """(documents with a note vector, their vectors as the rows add them, documents
    whose note vector is new, gone or different since ``old``)."""
    if written is None:
        note_docs, notes = _centred_notes(store, {}, dim)
        # compared bit for bit
        common, at_old, at_new = np.intersect1d(
            old.note_docs, note_docs, assume_unique=True, return_indices=True
        )
        differs = _rows_differ(old.notes, at_old, notes, at_new)
        fresh_docs = np.concatenate(
            [common[differs], np.setdiff1d(note_docs, common, assume_unique=True)]
        )
    else:
        # the written documents' vectors as they are now (a deleted one has none), the
        # others' as ``old`` holds them: no other vector can have changed
        written_docs = np.fromiter(sorted(written), np.int64, len(written))
        fresh_docs, vectors = store.note_matrix(written_docs.tolist())
        untouched = ~np.isin(old.note_docs, written_docs)
        note_docs = np.union1d(old.note_docs[untouched], fresh_docs)
        fresh = np.isin(note_docs, fresh_docs)
        notes = np.empty((len(note_docs), dim), dtype=np.float32)
        kept = np.flatnonzero(~fresh)
        for start in range(0, len(kept), _BLOCK_ROWS):
            block = kept[start : start + _BLOCK_ROWS]
            notes[block] = old.notes[np.searchsorted(old.note_docs, note_docs[block])]
        if len(fresh_docs):
            notes[fresh] = centred(vectors, np.zeros(dim, np.float32))
    gone = np.setdiff1d(old.note_docs, note_docs, assume_unique=True)
    return note_docs, notes, np.concatenate([fresh_docs, gone])


def _rows_differ(
    left: npt.NDArray[np.float32],
    at_left: npt.NDArray[np.intp],
    right: npt.NDArray[np.float32],
    at_right: npt.NDArray[np.intp],
) -> npt.NDArray[np.bool_]:
    """Whether ``left[at_left[i]]`` and ``right[at_right[i]]`` differ, bit for bit,
    compared a block at a time (two gathered copies of every note vector at once
    were a fifth of an edit's extra memory)."""
    out = np.zeros(len(at_left), dtype=bool)
    for start in range(0, len(at_left), _BLOCK_ROWS):
        block = slice(start, start + _BLOCK_ROWS)
        out[block] = np.any(left[at_left[block]] != right[at_right[block]], axis=1)
    return out


class NoteCarryingIndex(VectorIndex):
    """The note-carrying index of a flat chunk index, answered from its rows."""

    def __init__(self, plain: VectorIndex, rows: NoteRows) -> None:
        super().__init__(plain._index, plain.dimension, plain.means, plain.kind)
        self._plain = plain  # keeps the rows' storage alive
        self._rows = rows
        self._ids, self._chunks = _chunk_matrix(plain)
        self._codes = rows.codes()
        self._centred = rows.centred
        # a zero row for the rows whose document has no note vector
        self._notes = np.vstack([rows.notes, np.zeros((1, plain.dimension), np.float32)])

    @property
    def size(self) -> int:
        return len(self._rows.ids)

    def search(
        self, query: npt.NDArray[np.float32], n: int, tie: TieOrder = IN_ID_ORDER
    ) -> list[int]:
        """Up to ``n`` chunk ids, most similar first (ties in ``tie`` order: by default
        lower id first).

        Every row is scored from the chunk index's inner products; the rows within
        :data:`_RESCORE_MARGIN` of the n-th score are then scored again on the rows
        themselves, as a faiss index of them would, so an exact tie (orthogonal
        vectors, say) is one here too and falls to the lower id.
        """
        n = min(n, self.size)
        if n <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        id_map: Any = faiss.downcast_index(self._index)
        flat: Any = faiss.downcast_index(id_map.index)
        # in place, in float32: the rescoring below settles what rounding could move
        scores = _inner_products(q, flat.get_xb(), self.size)
        scores *= self._rows.scale
        # faiss, not numpy's BLAS: one thread (a threaded BLAS call of this size waits
        # on its threads far longer than it computes on a busy machine)
        scores += _inner_products(q, faiss.swig_ptr(self._notes), len(self._notes))[self._codes]
        scores *= self._rows.inv_norm
        kth = np.partition(scores, self.size - n)[self.size - n]
        candidates = np.flatnonzero(scores >= kth - _RESCORE_MARGIN)
        exact = np.empty(len(candidates), dtype=np.float32)
        for start in range(0, len(candidates), _BLOCK_ROWS):
            part = candidates[start : start + _BLOCK_ROWS]
            rows = self.rows(part)
            exact[start : start + len(part)] = _inner_products(q, faiss.swig_ptr(rows), len(part))
        # compared on the chunk index's grid, so rounding ties here as it ties there
        order = np.lexsort((tie.keys(self._ids[candidates]), -graded_scores(exact)))[:n]
        return [int(i) for i in self._ids[candidates[order]]]

    def rows(self, positions: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.float32]:
        """The note-carrying rows themselves (all, or at ``positions``), as a full build
        makes them."""
        chunks = self._chunks if positions is None else self._chunks[positions]
        codes = self._codes if positions is None else self._codes[positions]
        rows = _unnormalised(chunks, codes, self._notes[:-1], self._centred)
        return centred(rows, np.zeros(self.dimension, np.float32))

    def vector(self, chunk_id: int) -> npt.NDArray[np.float32]:
        position = int(np.searchsorted(self._ids, chunk_id))
        if position >= len(self._ids) or self._ids[position] != chunk_id:
            raise KeyError(chunk_id)
        row: npt.NDArray[np.float32] = self.rows(np.asarray([position]))[0]
        return row


def _inner_products(
    query: npt.NDArray[np.float32], rows: Any, count: int
) -> npt.NDArray[np.float32]:
    """``query`` . each of ``count`` rows at the faiss pointer ``rows``, on one thread."""
    out = np.empty(count, dtype=np.float32)
    inner_products: Any = getattr(faiss, "fvec_inner_products_ny")  # noqa: B009 (untyped)
    with one_faiss_thread():  # a few milliseconds of work: no thread barrier (see there)
        inner_products(faiss.swig_ptr(out), faiss.swig_ptr(query), rows, query.size, count)
    return out


#: the table the rows are kept in, in ``index.db``: one row per centring mode.  Made by
#: the first indexer that keeps rows (an index without it has none kept: they are made)
_TABLE = "note_rows"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {_TABLE} (mode TEXT PRIMARY KEY, generation INTEGER NOT NULL, "
    f"centred INTEGER NOT NULL, {', '.join(f'{name} BLOB NOT NULL' for name in _ARRAYS)})"
)


def _mode(centre: bool) -> str:
    return "centred" if centre else "raw"


def kept_note_rows(store: Store, *, centre: bool, dim: int) -> tuple[int, NoteRows] | None:
    """(generation, rows) kept in ``index.db`` for this centring mode, None when none are
    (or they are not rows of this dimension).  Each BLOB is read straight into its
    array (no copy of it in between)."""
    if not _has_table(store):
        return None
    sizes = ", ".join(f"length({name})" for name in _ARRAYS)
    row = store.conn.execute(
        f"SELECT rowid, generation, centred, {sizes} FROM {_TABLE} WHERE mode=?",
        (_mode(centre),),
    ).fetchone()
    counts = None if row is None else _counts([int(size) for size in row[3:]], dim)
    if row is None or counts is None:
        return None
    arrays = []
    for name, count in zip(_ARRAYS, counts, strict=True):
        array = np.empty(count, dtype=_DTYPES[name])
        if count:
            with store.conn.blob_open("main", _TABLE, name, int(row[0]), False) as blob:
                blob.read_into(array.data.cast("B"))
        arrays.append(array)
    ids, docs, scale, inv_norm, note_docs, notes = arrays
    notes = notes.reshape(len(note_docs), dim)
    return int(row[1]), NoteRows(ids, docs, scale, inv_norm, note_docs, notes, bool(row[2]))


def _has_table(store: Store) -> bool:
    sql = "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?"
    return store.conn.execute(sql, (_TABLE,)).fetchone() is not None


def keeps_note_rows(store: Store, *, centre: bool) -> bool:
    """Whether ``index.db`` keeps the note rows of its current state for this mode."""
    if not _has_table(store):
        return False
    sql = f"SELECT generation FROM {_TABLE} WHERE mode=?"
    row = store.conn.execute(sql, (_mode(centre),)).fetchone()
    return row is not None and int(row[0]) == store.generation


def _keep(store: Store, centre: bool, rows: NoteRows) -> None:
    """Keep ``rows`` as the current state's, in the open read snapshot (the indexer's,
    holding the index lock: the first write makes it a write transaction, committed
    when the snapshot ends).  An optimisation: when SQLite refuses (busy, read-only),
    the next indexer makes them again."""
    arrays = [
        np.ascontiguousarray(array, dtype=_DTYPES[name])
        for name, array in zip(_ARRAYS, rows.arrays(), strict=True)
    ]
    try:
        store.conn.execute(_CREATE)
        store.conn.execute(
            f"INSERT OR REPLACE INTO {_TABLE} VALUES (?, ?, ?{', ?' * len(_ARRAYS)})",
            (_mode(centre), store.generation, int(rows.centred), *arrays),
        )
    except (apsw.BusyError, apsw.ReadOnlyError, apsw.LockedError):
        return


#: the rows this process kept or read last, with the (database, index id, generation,
#: mode) they answer for: the search right after the indexer's refresh takes them
#: from here, not from ``index.db`` again
_LAST: tuple[tuple[str, str, int, bool], NoteRows] | None = None


def _current(
    store: Store, plain: VectorIndex, centre: bool
) -> tuple[NoteRows | None, tuple[int, NoteRows] | None]:
    """(the current state's rows if kept, the kept rows of an older state to update)."""
    global _LAST
    key = (str(store.path), store.index_id, store.generation, centre)
    rows = _LAST[1] if _LAST is not None and _LAST[0] == key else None
    older = None
    if rows is None:
        kept = kept_note_rows(store, centre=centre, dim=plain.dimension)
        if kept is not None and kept[0] == store.generation:
            rows = kept[1]
        elif kept is not None and kept[0] < store.generation:
            older = kept
    if (
        rows is not None
        and rows.centred == bool(plain.means)
        and np.array_equal(rows.ids, _chunk_matrix(plain)[0])
    ):
        _LAST = (key, rows)
        return rows, None
    return None, older


def note_index_for(
    store: Store,
    directory: Path,
    plain: VectorIndex,
    *,
    centre: bool,
    kind: str,
    keep: bool = False,
) -> VectorIndex:
    """The note-carrying index over ``plain`` (the store's chunk index), from the rows
    ``index.db`` keeps where they are current; call inside ``store.read_snapshot()``.
    ``keep``: rows made here are kept in ``index.db`` (the indexer, holding the lock)."""
    global _LAST
    if kind != DEFAULT_VECTOR_INDEX:
        return VectorIndex.load_for(store, directory, centre=centre, kind=kind, notes=True)
    rows, older = _current(store, plain, centre)
    if rows is None:
        if older is not None:
            generation, kept = older
            rows = updated_rows(store, plain, kept, store.notes_written_since(generation))
        if rows is None:
            rows = build_rows(store, plain)
        _LAST = ((str(store.path), store.index_id, store.generation, centre), rows)
    if keep and not keeps_note_rows(store, centre=centre):
        _keep(store, centre, rows)
    return NoteCarryingIndex(plain, rows)
