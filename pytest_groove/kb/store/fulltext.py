"""Full-text search of an index: the FTS5 tables' candidates, counts and phrase hits.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import numpy as np

from pytest_groove.errors import GrooveError, clip_repr
from pytest_groove.kb.store.bm25_sweep import PhraseHits, idf
from pytest_groove.kb.store.schema import FTS_TABLES, StoreConnection
from pytest_groove.kb.store.tie_order import IN_ID_ORDER, TIE_SLACK, TieOrder


class _PhraseHitCollector:
    """An FTS5 auxiliary function gathering what bm25 reads, one row per call."""

    def __init__(self) -> None:
        self.rowids: list[int] = []
        self.counts: list[list[list[int]]] = []
        self.row_tokens: list[int] = []
        self.idf: tuple[float, ...] = ()
        self.average_tokens = 1.0
        self.columns = 3
        self._phrases = range(0)

    def __call__(self, api: apsw.FTS5ExtensionApi, *_args: Any) -> None:
        if not self.rowids:
            # table-wide figures, once per statement (as FTS5's bm25 does)
            rows = api.row_count
            self.columns = api.column_count
            self.average_tokens = float(api.column_total_size(-1)) / float(rows)
            counts: list[float] = []
            for phrase in range(api.phrase_count):
                seen = [0]
                api.query_phrase(phrase, _count_row, seen)
                counts.append(idf(rows, seen[0]))
            self.idf = tuple(counts)
            self._phrases = range(api.phrase_count)
        self.rowids.append(api.rowid)
        locations = api.phrase_locations
        self.counts.append(
            [[len(offsets) for offsets in locations(phrase)] for phrase in self._phrases]
        )
        self.row_tokens.append(api.column_size(-1))

    def result(self) -> PhraseHits:
        if not self.rowids:
            return PhraseHits.empty(self.columns)
        return PhraseHits(
            rowids=np.asarray(self.rowids, dtype=np.int64),
            counts=np.asarray(self.counts, dtype=np.float64),
            row_tokens=np.asarray(self.row_tokens, dtype=np.float64),
            idf=self.idf,
            average_tokens=self.average_tokens,
        )


def _count_row(_api: apsw.FTS5ExtensionApi, seen: list[int]) -> None:
    seen[0] += 1


class StoreFullText(StoreConnection):
    """The FTS5 queries of an index database (:data:`FTS_TABLES`)."""

    def fts_candidates(
        self,
        match_expr: str,
        weights: tuple[float, float, float],
        limit: int,
        table: str = "fts_chunks",
        tie: TieOrder = IN_ID_ORDER,
    ) -> list[int]:
        """Chunk ids matching ``match_expr`` in ``table``, best bm25 first (ties: in
        ``tie`` order, by default lower id)."""
        if limit <= 0:
            return []
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        try:
            if tie.by_id:
                rows = self.conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ? "
                    f"ORDER BY bm25({table}, ?, ?, ?), rowid LIMIT ?",
                    (match_expr, *weights, limit),
                )
                return [int(r[0]) for r in rows]
            # ids out of corpus order: SQLite cuts the rows tying at the limit in id
            # order, so fetch past it until that group is whole, then order it here
            fetch = limit + TIE_SLACK
            while True:
                scored = [
                    (float(score), int(rowid))
                    for rowid, score in self.conn.execute(
                        f"SELECT rowid, bm25({table}, ?, ?, ?) AS s FROM {table} "
                        f"WHERE {table} MATCH ? ORDER BY s, rowid LIMIT ?",
                        (*weights, match_expr, fetch),
                    )
                ]
                if len(scored) < fetch or scored[-1][0] > scored[limit - 1][0]:
                    break
                fetch *= 2
            scored.sort(key=lambda pair: (pair[0], tie.key(pair[1])))
            return [rowid for _, rowid in scored[:limit]]
        except apsw.SQLError as exc:
            raise GrooveError(
                f"full-text query {clip_repr(match_expr)} was refused by SQLite: {exc}"
            ) from None

    def fts_term_stats(
        self, table: str, phrases: Sequence[str], chunk_id: int
    ) -> list[tuple[int, bool]]:
        """For each phrase: how many chunks match it, and whether ``chunk_id`` does."""
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        stats: list[tuple[int, bool]] = []
        for phrase in phrases:
            expr = '"' + phrase.replace('"', '""') + '"'
            try:
                row = self.conn.execute(
                    f"SELECT count(*), coalesce(max(rowid = ?), 0) FROM {table} "
                    f"WHERE {table} MATCH ?",
                    (chunk_id, expr),
                ).fetchone()
            except apsw.SQLError:
                continue  # a phrase FTS5 refuses on its own carries no evidence
            stats.append((int(row[0]), bool(row[1])) if row else (0, False))
        return stats

    def fts_phrase_hits(self, match_expr: str, table: str = "fts_chunks") -> PhraseHits:
        """Per matching row of ``table``, each phrase's occurrences per column (bm25_sweep)."""
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        collector = _PhraseHitCollector()
        name = f"groove_phrase_hits_{id(collector)}"
        self.conn.register_fts5_function(name, collector)
        try:
            for _ in self.conn.execute(
                f"SELECT {name}({table}) FROM {table} WHERE {table} MATCH ?", (match_expr,)
            ):
                pass
        except apsw.SQLError as exc:
            raise GrooveError(
                f"full-text query {clip_repr(match_expr)} was refused by SQLite: {exc}"
            ) from None
        return collector.result()

    def fts_match_count(self, match_expr: str, table: str = "fts_chunks") -> int:
        if table not in FTS_TABLES:
            raise ValueError(f"unknown full-text table {table!r}")
        return self._scalar(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (match_expr,))
