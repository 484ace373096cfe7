"""FTS5's bm25 for many column-weight triples from one pass over the matching rows.

``groove tune`` needs a query's full-text list under 64 (heading, context, content)
weight triples.  Asking SQLite 64 times decodes the same posting lists 64 times.
Instead, one statement collects, for every matching row, how often each phrase of
the query occurs in each column (an FTS5 auxiliary function registered through
apsw), and bm25 is computed here for every triple with numpy.

The arithmetic is FTS5's own (``fts5Bm25Function`` in SQLite's ``fts5_aux.c``),
step for step in the same order and in doubles, so the scores equal
``bm25(fts_chunks, h, ctx, content)`` bit for bit; ``tests/kb/store/test_bm25_sweep.py``
checks that against SQLite on every triple of the tune grid.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TieOrder

#: FTS5's bm25 constants
_K1 = 1.2
_B = 0.75


@dataclass(frozen=True)
class PhraseHits:
    """What bm25 needs about the rows matching one FTS5 expression."""

    rowids: npt.NDArray[np.int64]
    #: occurrences, shape (rows, phrases, columns)
    counts: npt.NDArray[np.float64]
    #: tokens in each row, all columns together
    row_tokens: npt.NDArray[np.float64]
    #: FTS5's IDF of each phrase over the whole table
    idf: tuple[float, ...]
    #: mean tokens per row over the whole table
    average_tokens: float

    @classmethod
    def empty(cls, columns: int) -> PhraseHits:
        return cls(
            np.zeros(0, dtype=np.int64),
            np.zeros((0, 0, columns)),
            np.zeros(0),
            (),
            1.0,
        )


def idf(rows: int, rows_with_phrase: int) -> float:
    """FTS5's IDF: ``log((N - n + 0.5) / (n + 0.5))``, floored at 1e-6."""
    value = math.log((rows - rows_with_phrase + 0.5) / (rows_with_phrase + 0.5))
    return value if value > 0.0 else 1e-6


def bm25_score_table(
    hits: PhraseHits, triples: Sequence[Sequence[float]]
) -> npt.NDArray[np.float64]:
    """bm25 of every row under every weight triple: shape (rows, triples)."""
    # the weighted frequency of each phrase: sums of column weights times counts,
    # exact for whole-number counts and the power-of-two weights of the grid
    frequency = hits.counts @ np.asarray(triples, dtype=np.float64).T  # rows, phrases, T
    length_norm = (_K1 * (1 - _B + _B * hits.row_tokens / hits.average_tokens))[:, None]
    score = np.zeros((len(hits.rowids), len(triples)))
    for phrase, phrase_idf in enumerate(hits.idf):
        f = frequency[:, phrase, :]
        score = score + phrase_idf * ((f * (_K1 + 1.0)) / (f + length_norm))
    return -1.0 * score


def best_rowids_per_triple(
    hits: PhraseHits,
    triples: Sequence[Sequence[float]],
    limit: int,
    tie: TieOrder = IN_ID_ORDER,
) -> list[list[int]]:
    """The ``limit`` best rowids (bm25 order, ties by ``tie``) for every triple, scoring
    all of them in one numpy pass."""
    if limit <= 0 or not len(hits.rowids):
        return [[] for _ in triples]
    table = bm25_score_table(hits, triples)
    out: list[list[int]] = []
    for column in range(len(triples)):
        scores = table[:, column]
        rowids = hits.rowids
        if len(scores) > limit:
            # only rows scoring at most the limit-th best can be in the answer
            # (ties at the cut included, so the rowid tie-break stays exact)
            cut = np.partition(scores, limit - 1)[limit - 1]
            keep = scores <= cut
            scores, rowids = scores[keep], rowids[keep]
        order = np.lexsort((tie.keys(rowids), scores))[:limit]
        out.append([int(r) for r in rowids[order]])
    return out
