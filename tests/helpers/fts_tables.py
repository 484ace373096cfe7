"""A trigram FTS5 table in memory, as the index builds its full-text table, for the
tests of the MATCH expressions the query parser writes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import apsw


def trigram_table(rows: Mapping[int, tuple[str, str, str]]) -> Iterator[apsw.Connection]:
    """A connection holding ``t(heading, context, content)`` with ``rows`` by rowid,
    closed when the generator (a fixture's body) is resumed."""
    connection = apsw.Connection(":memory:")
    connection.execute(
        "CREATE VIRTUAL TABLE t USING fts5(heading, context, content, "
        "tokenize='trigram remove_diacritics 1 case_sensitive 0')"
    )
    for row_id, row in rows.items():
        connection.execute(
            "INSERT INTO t(rowid, heading, context, content) VALUES (?, ?, ?, ?)",
            (row_id, *row),
        )
    yield connection
    connection.close()


def run_match(connection: apsw.Connection, expression: str) -> set[int]:
    """The rowids ``expression`` matches."""
    rows = connection.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))
    return {row[0] for row in rows}
