"""What the reports call each golden query, when two of them share an id.

A query's ``id`` is its ``id:``, else the first 32 code points of its text (the
reference tool's contract, kept in the history and the JSON report).  Two queries
without an ``id:`` that open with the same 32 characters ("what to do after receiving
status 429 ..." and "... status 401 ...") therefore share one: runs still pair them
exactly (:func:`~.compare.match_queries` keys a query by its id, text *and* expected
entries), but a report listing them by id shows the same row name twice, and a CI
failure (a pytest node id) could not be matched to a report row.

So every report names a query by :func:`report_names`: its id when no other query of
the run has it, else the node id pytest gives its item (:func:`~.golden.node_ids`: the
id's slug and 8 hex digits of the SHA-256 of the whole text).  The ``id`` itself is
never changed.  :func:`shared_id_warnings` says so when the golden file loads, naming
the lines and the fix (an ``id:`` of one's own).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_groove.errors import clip, clip_path
from pytest_groove.evaluation.gate.compare import QueryLike
from pytest_groove.evaluation.golden.file import QUERY_ID_CODE_POINTS, derive_query_id, node_ids
from pytest_groove.files.merge_conflicts import line_list
from pytest_groove.scoring.records import GoldenQuery, GoldenSet

#: at most this many shared ids get a warning line each (the rest are counted)
_WARNED = 3


def _as_golden(query: QueryLike) -> GoldenQuery:
    """A golden query as a run record keeps it (whether its id was written is read
    back from the id: a derived one is the text's first 32 code points)."""
    if isinstance(query, GoldenQuery):
        return query
    return GoldenQuery(
        id=query.id,
        query=query.query,
        expected=tuple(query.expected),
        explicit_id=query.id != derive_query_id(query.query),
    )


def report_names(queries: Sequence[QueryLike]) -> list[str]:
    """Each query's name in the reports, in order: its id, or -- when another of
    ``queries`` has the same id -- its pytest node id (unique within ``queries``)."""
    counts = Counter(query.id for query in queries)
    if all(count == 1 for count in counts.values()):
        return [query.id for query in queries]
    nodes = node_ids([_as_golden(query) for query in queries])
    return [
        query.id if counts[query.id] == 1 else node
        for query, node in zip(queries, nodes, strict=True)
    ]


def shared_id_warnings(golden: GoldenSet) -> list[str]:
    """One warning per id two or more golden queries share (without a program prefix).

    Explicit ids are unique (the loader refuses a repeat), so a shared id is derived
    for at least one of the queries: their rows are named apart by node id, and an
    ``id:`` names them for good (an edit of the golden file, so the next run starts a
    new line of comparable runs, as every edit does).
    """
    queries = golden.queries
    names = report_names(queries)
    groups: dict[str, list[int]] = {}
    for at, query in enumerate(queries):
        groups.setdefault(query.id, []).append(at)
    shared = [group for group in groups.values() if len(group) > 1]
    out = []
    for group in shared[:_WARNED]:
        ident = queries[group[0]].id
        lines = line_list([queries[at].line for at in group])
        out.append(
            f"golden file {clip_path(golden.path)}: the queries at {lines} share the id "
            f"`{clip(ident)}` (a query without `id:` is named by the first "
            f"{QUERY_ID_CODE_POINTS} characters of its text), so the reports name them by "
            f"their pytest node ids ({', '.join(names[at] for at in group)}); give each an "
            "`id:` to name them yourself (the edited golden file starts a new line of "
            "comparable runs)"
        )
    if len(shared) > _WARNED:
        out.append(
            f"golden file {clip_path(golden.path)}: {len(shared) - _WARNED} more id(s) are "
            "shared by queries without `id:` as well"
        )
    return out
