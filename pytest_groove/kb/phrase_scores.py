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
(``tests/test_phrase_scores.py`` checks that against ``ORDER BY bm25``).  Golden sets
repeat their common words ("the", "how", "does") from query to query, and those are
the phrases that match most rows and cost FTS5 most to rank: asked once, they cost
a golden query an array addition afterwards.

The kept phrases are bounded by memory (least recently used dropped first) and
belong to one state of the index: a write to the index (its generation) empties them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from pytest_groove.kb.store import FTS_TABLES, Store

__all__ = ["PhraseScores", "or_phrases"]

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

    def __init__(self, store: Store, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.store = store
        self.budget_bytes = budget_bytes
        self._kept: OrderedDict[tuple[str, str, tuple[float, ...]], _PhraseRows] = OrderedDict()
        self._bytes = 0
        #: the index state the kept phrases belong to: generation, highest chunk id
        #: and number of chunks
        self._state: tuple[int, int, int] | None = None

    def candidates(
        self,
        expression: str,
        weights: tuple[float, float, float],
        limit: int,
        table: str = "fts_chunks",
    ) -> list[int]:
        """Same as :meth:`Store.fts_candidates` (best bm25 first, ties: lower id)."""
        phrases = or_phrases(expression) if limit > 0 and table in FTS_TABLES else None
        if phrases is None:
            return self.store.fts_candidates(expression, weights, limit, table)
        positive, negative = phrases
        try:
            with self.store.read_snapshot():
                top = self._ranked(positive, negative, weights, limit, table)
        except apsw.SQLError:
            top = None  # a phrase SQLite refuses: the plain statement reports it
        if top is None:
            return self.store.fts_candidates(expression, weights, limit, table)
        return top

    def _ranked(
        self,
        positive: Sequence[str],
        negative: Sequence[str],
        weights: tuple[float, float, float],
        limit: int,
        table: str,
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
        order = np.lexsort((rowids, scores))[:limit]
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
            row = self.store.conn.execute(
                "SELECT coalesce(max(id), 0), count(*) FROM chunks"
            ).fetchone()
            highest, count = (int(row[0]), int(row[1])) if row else (0, 0)
            self._state = (generation, highest, count)
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
        cursor = self.store.conn.execute(
            f"SELECT rowid, -bm25({table}, ?, ?, ?) FROM {table} WHERE {table} MATCH ?",
            (*weights, phrase),
        )
        flat = np.fromiter((value for row in cursor for value in row), dtype=np.float64).reshape(
            -1, 2
        )
        rowids = flat[:, 0].astype(np.int64)
        if len(rowids) and (rowids.min() < 0 or rowids.max() > highest):
            return None  # rows without a chunk (a damaged index): never kept
        rows = _PhraseRows(rowids, np.ascontiguousarray(flat[:, 1]))
        if rows.nbytes <= self.budget_bytes:
            self._kept[key] = rows
            self._bytes += rows.nbytes
            while self._bytes > self.budget_bytes:
                _, dropped = self._kept.popitem(last=False)
                self._bytes -= dropped.nbytes
        return rows
