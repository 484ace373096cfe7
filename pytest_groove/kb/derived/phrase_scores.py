"""The full-text leg's bm25 ranking from per-phrase scores kept between queries.

Every full-text expression the query compilers write is an OR of quoted phrases,
optionally ``NOT`` an OR of quoted phrases.  FTS5's bm25 of such an expression is a
sum over its phrases, in their order, of one term per phrase and row
(``idf(phrase) * f * (k1 + 1) / (f + k1 * (1 - b + b * len / avglen))``, where ``f``
is the phrase's weighted occurrences in the row and ``idf`` and ``avglen`` are
table-wide), negated; a phrase absent from a row adds exactly zero, and the ``NOT``
phrases are absent from every row that matches.  The term of one phrase is what
FTS5 returns, negated, as ``bm25()`` of that phrase alone.

So each phrase is asked of SQLite once, all its rows with their bm25 term, and kept;
a query sums its phrases' terms in the same order FTS5 adds them, in doubles, so the
scores, and hence the ranked lists (ties by row id), are FTS5's own bit for bit
(``tests/kb/derived/test_phrase_scores.py`` checks that against ``ORDER BY bm25``).  Golden sets
repeat their common words ("the", "how", "does") from query to query, and those are
the phrases that match most rows and cost FTS5 most to rank: asked once, they cost
a golden query an array addition afterwards.

The kept phrases are bounded by memory (least recently used dropped first) and
belong to one state of the index: a write to the index (its generation) empties them.

They are also kept between processes: :meth:`PhraseScores.save` (the engine calls it
when it closes) writes them to a file beside the index named by the database's random
id and write generation, like the vector caches, and the next process searching the
same index state starts from them, so a golden set evaluated again on an unchanged
index asks SQLite nothing.  A file of another state is never read (its name differs)
and a damaged one is ignored.

Why not fewer, cheaper SQLite calls per new phrase: FTS5's ``bm25()`` itself is most
of a phrase's cost (measured at 10k chunks: finding a phrase's rows, ``count(*)`` or
``group_concat(rowid)``, 0.8-1.3 ms; the same rows with ``bm25()`` summed inside
SQLite 38 ms; to Python 44 ms), so fetching the rows in bulk (one text value per
phrase, doubles through ``quote()``) measured no faster than the row cursor.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
import re
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import apsw
import numpy as np
import numpy.typing as npt

from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.files.seal import SEAL_SUFFIX, open_vouched, seal_path, write_sealed
from pytest_groove.kb.derived.family import DerivedFamily, Retention
from pytest_groove.kb.derived.word_index import WordIndex
from pytest_groove.kb.store.database import FTS_TABLES, Store
from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TieOrder

__all__ = ["CACHE_PREFIX", "DERIVED_FILES", "PhraseScores", "or_phrases"]

#: the file of kept phrases beside the index: ``phrases-<index id>-gen<generation>.npz``
CACHE_PREFIX = "phrases-"
#: the layout of that file
_FILE_FORMAT = 1
#: that file, in the table of derived files (:mod:`.families`)
DERIVED_FILES = (
    DerivedFamily(
        "phrase scores",
        prefix=CACHE_PREFIX,
        suffixes=(".npz",),
        retention=Retention.CURRENT_STATE,
        format=_FILE_FORMAT,
    ),
)

#: memory the kept phrases may hold (row ids and scores)
DEFAULT_BUDGET_BYTES = 128 * 1024 * 1024

#: chunk ids may run this many times the number of chunks before arrays indexed by
#: them cost more than they save
_SPARSE_IDS = 8

_PHRASE = r'"(?:[^"]|"")*"'
_OR = rf"{_PHRASE}(?: OR {_PHRASE})*"
_SHAPE = re.compile(rf"\(({_OR})\) NOT \(({_OR})\)|({_OR})")
_PHRASES = re.compile(_PHRASE)


def or_phrases(expression: str) -> tuple[list[str], list[str]] | None:
    """The (positive, excluded) quoted phrases of ``expression``; None for another shape."""
    shape = _SHAPE.fullmatch(expression)
    if shape is None:
        return None
    positive, negative, plain = shape.groups()
    if plain is not None:
        return _PHRASES.findall(plain), []
    return _PHRASES.findall(positive), _PHRASES.findall(negative)


@dataclass(frozen=True)
class _PhraseRows:
    """Every row matching one phrase, ascending, with the phrase's bm25 term there."""

    rowids: npt.NDArray[np.int64]
    terms: npt.NDArray[np.float64]

    @property
    def nbytes(self) -> int:
        return int(self.rowids.nbytes + self.terms.nbytes)


class PhraseScores:
    """bm25-ranked full-text candidates of one store, from kept per-phrase terms."""

    def __init__(
        self,
        store: Store,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        *,
        read_kept: bool = True,
        word_postings: bool = True,
    ) -> None:
        self.store = store
        self.budget_bytes = budget_bytes
        #: start from the phrases a process before saved for this index state
        self.read_kept = read_kept
        self._kept: OrderedDict[tuple[str, str, tuple[float, ...]], _PhraseRows] = OrderedDict()
        self._bytes = 0
        #: the index state the kept phrases belong to: generation, highest chunk id
        #: and number of chunks
        self._state: tuple[int, int, int] | None = None
        #: bytes of the phrases asked of SQLite since the kept file was read or written
        self._unsaved = 0
        #: the kept file of the current state (named when the state is read, so saving
        #: needs no SQL: it runs as the engine closes)
        self._path: Path | None = None
        #: score new phrases from the word postings beside the index when they hold the
        #: state (:mod:`.word_index`); off, every new phrase is asked of FTS5's bm25()
        self.word_postings = word_postings
        #: the word postings of the current state (False: not opened yet)
        self._words: WordIndex | bool | None = False

    def candidates(
        self,
        expression: str,
        weights: tuple[float, float, float],
        limit: int,
        table: str = "fts_chunks",
        tie: TieOrder = IN_ID_ORDER,
    ) -> list[int]:
        """Same as :meth:`Store.fts_candidates` (best bm25 first, ties in ``tie`` order)."""
        phrases = or_phrases(expression) if limit > 0 and table in FTS_TABLES else None
        if phrases is None:
            return self.store.fts_candidates(expression, weights, limit, table, tie)
        positive, negative = phrases
        try:
            with self.store.read_snapshot():
                top = self._ranked(positive, negative, weights, limit, table, tie)
        except apsw.SQLError:
            top = None  # a phrase SQLite refuses: the plain statement reports it
        if top is None:
            return self.store.fts_candidates(expression, weights, limit, table, tie)
        return top

    def _ranked(
        self,
        positive: Sequence[str],
        negative: Sequence[str],
        weights: tuple[float, float, float],
        limit: int,
        table: str,
        tie: TieOrder = IN_ID_ORDER,
    ) -> list[int] | None:
        """The ranked list; None when the plain statement must answer instead."""
        scored = self._scored(positive, negative, weights, table)
        if scored is None:
            return None
        rowids, scores = scored
        if len(rowids) > limit:
            # every row scoring at most the limit-th best, then the exact order
            cut = np.partition(scores, limit - 1)[limit - 1]
            inside = scores <= cut
            rowids, scores = rowids[inside], scores[inside]
        order = np.lexsort((tie.keys(rowids), scores))[:limit]
        return [int(r) for r in rowids[order]]

    def _scored(
        self,
        positive: Sequence[str],
        negative: Sequence[str],
        weights: tuple[float, float, float],
        table: str,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """Every matching row (ascending) with its bm25 as FTS5 computes it."""
        highest = self._sync_state()
        if highest is None:
            return None
        total = np.zeros(highest + 1, dtype=np.float64)
        matched = np.zeros(highest + 1, dtype=bool)
        for phrase in positive:
            rows = self._phrase(phrase, weights, table, highest)
            if rows is None:
                return None
            # FTS5 adds the phrases' terms in the expression's order: so does this
            total[rows.rowids] += rows.terms
            matched[rows.rowids] = True
        for phrase in negative:
            rows = self._phrase(phrase, weights, table, highest)
            if rows is None:
                return None
            matched[rows.rowids] = False
        rowids = np.flatnonzero(matched).astype(np.int64)
        return rowids, -total[rowids]

    def _sync_state(self) -> int | None:
        """Empty the kept phrases when the index changed; the highest chunk id.

        None when chunk ids are too sparse for arrays indexed by them (ids are never
        reused, so many rebuilds leave gaps): the plain statement answers then.
        """
        generation = self.store.generation
        if self._state is None or self._state[0] != generation:
            self._kept.clear()
            self._bytes = 0
            self._unsaved = 0
            self._words = False
            row = self.store.conn.execute(
                "SELECT coalesce(max(id), 0), count(*) FROM chunks"
            ).fetchone()
            highest, count = (int(row[0]), int(row[1])) if row else (0, 0)
            self._state = (generation, highest, count)
            name = f"{CACHE_PREFIX}{self.store.index_id}-gen{generation}.npz"
            self._path = self.store.path.parent / name
            if self.read_kept:
                self._load()
        _, highest, count = self._state
        return highest if highest <= _SPARSE_IDS * count + 1024 else None

    def _phrase(
        self, phrase: str, weights: tuple[float, float, float], table: str, highest: int
    ) -> _PhraseRows | None:
        key = (table, phrase, weights)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept
        rows = self._fetch(phrase, weights, table)
        if len(rows.rowids) and (rows.rowids.min() < 0 or rows.rowids.max() > highest):
            return None  # rows without a chunk (a damaged index): never kept
        self._keep(key, rows)
        self._unsaved += rows.nbytes
        return rows

    def _fetch(self, phrase: str, weights: tuple[float, float, float], table: str) -> _PhraseRows:
        """Every row matching ``phrase``, ascending, with its bm25 term: from the word
        postings when they hold the state and can count the phrase, else from SQLite."""
        if table == "fts_chunks" and self.word_postings:
            words = self._word_index()
            if words is not None:
                counted = words.phrase_terms(phrase, weights)
                if counted is not None:
                    return _PhraseRows(counted.rowids, counted.terms)
        cursor = self.store.conn.execute(
            f"SELECT rowid, -bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?",
            (*weights, phrase),
        )
        flat = np.fromiter((value for row in cursor for value in row), dtype=np.float64).reshape(
            -1, 2
        )
        return _PhraseRows(flat[:, 0].astype(np.int64), np.ascontiguousarray(flat[:, 1]))

    def _word_index(self) -> WordIndex | None:
        if self._words is False:
            assert self._state is not None
            _, highest, count = self._state
            self._words = WordIndex.open(self.store, highest, count)
        return self._words if isinstance(self._words, WordIndex) else None

    def _keep(self, key: tuple[str, str, tuple[float, ...]], rows: _PhraseRows) -> None:
        if rows.nbytes > self.budget_bytes:
            return
        self._kept[key] = rows
        self._bytes += rows.nbytes
        while self._bytes > self.budget_bytes:
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= dropped.nbytes

    # ------------------------------------------------------------------ kept on disk

    def _load(self) -> None:
        """Start from the phrases a process before kept for this index state."""
        assert self._state is not None and self._path is not None
        _, highest, count = self._state
        path = self._path
        try:
            # never through a link, a pipe or a folder; only a file its seal vouches for
            handle = open_vouched(path)
            if handle is None:
                return
            with handle, np.load(handle, allow_pickle=False) as saved:
                header = json.loads(str(saved["header"]))
                if header["format"] != _FILE_FORMAT or header["state"] != [highest, count]:
                    return
                rowids = np.asarray(saved["rowids"], dtype=np.int64)
                terms = np.asarray(saved["terms"], dtype=np.float64)
            ends = np.cumsum(np.asarray(header["lengths"], dtype=np.int64))
            if len(ends) != len(header["keys"]) or (len(ends) and ends[-1] != len(rowids)):
                return
            if len(rowids) != len(terms) or (len(rowids) and rowids.max() > highest):
                return
            keys = [
                (str(table), str(phrase), tuple(float(w) for w in weights))
                for table, phrase, weights in header["keys"]
            ]
        except ResourceLimit:
            raise  # out of open files or memory: no damage
        except Exception:  # damaged or foreign in any way: the phrases are asked again
            return
        start = 0
        for key, end in zip(keys, ends.tolist(), strict=True):
            self._keep(key, _PhraseRows(rowids[start:end], terms[start:end]))
            start = end

    def save(self) -> None:
        """Write the kept phrases beside the index for the next process.

        Only when the phrases asked of SQLite since the file was read make up a quarter
        or more of what it would hold: one more search must not rewrite a large file
        for one phrase.  An optimisation only: a folder that cannot be written keeps
        nothing.  Files of other index states are removed.
        """
        if self._state is None or self._path is None:
            return
        if not self._unsaved or 4 * self._unsaved < self._bytes:
            return
        _, highest, count = self._state
        path = self._path
        keys = list(self._kept)
        rows = [self._kept[key] for key in keys]
        header = {
            "format": _FILE_FORMAT,
            "state": [highest, count],
            "keys": [[table, phrase, list(weights)] for table, phrase, weights in keys],
            "lengths": [len(r.rowids) for r in rows],
        }
        # chunk ids below 2**31 (every real index) fit four bytes on disk
        rowid_type = np.dtype(np.int32 if highest < 2**31 else np.int64)
        try:
            write_sealed(
                path,
                lambda handle: _write_npz(
                    handle,
                    np.array(json.dumps(header)),
                    [(r.rowids, r.terms) for r in rows],
                    rowid_type,
                ),
            )
        except OSError:
            return
        self._unsaved = 0
        kept = {path, seal_path(path)}
        for old in path.parent.glob(f"{CACHE_PREFIX}*"):
            if old not in kept and old.name.endswith((".npz", SEAL_SUFFIX)):
                with contextlib.suppress(OSError):
                    old.unlink()


def _write_npz(
    handle: BinaryIO,
    header: npt.NDArray[Any],
    pieces: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
    rowid_type: np.dtype[Any],
) -> None:
    """The file :func:`numpy.savez` writes of ``header``, every piece's row ids (as
    ``rowid_type``) end to end and every piece's terms end to end, byte for byte --
    written a piece at a time: joining every kept phrase first held a second copy of
    them all while the file was written (63 MiB for a golden set of 100 queries at
    100k chunks, the peak of an eval after an edit)."""
    with zipfile.ZipFile(handle, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        with zf.open("header.npy", "w", force_zip64=True) as out:
            np.lib.format.write_array(out, header, allow_pickle=False)
        columns: list[tuple[str, np.dtype[Any], int]] = [
            ("rowids", rowid_type, 0),
            ("terms", np.dtype(np.float64), 1),
        ]
        for name, dtype, column in columns:
            total = sum(len(piece[column]) for piece in pieces)
            with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                described = {
                    "descr": np.lib.format.dtype_to_descr(dtype),
                    "fortran_order": False,
                    "shape": (total,),
                }
                np.lib.format.write_array_header_1_0(out, described)
                for piece in pieces:
                    out.write(np.ascontiguousarray(piece[column], dtype=dtype).data)
