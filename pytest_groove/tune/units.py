"""Golden queries that ask the same text are one unit of tune's statistics.

``groove eval`` accepts a golden file that repeats a query text (under other ids, or
without ids) and counts every copy in its averages.  Leave-one-query-out cannot: a
held-out query whose twins stay in the training folds is no longer held out, and
copies are not independent observations, so the paired SE shrinks by about the
square root of the number of copies and noise passes criterion 3.  Tune therefore
groups the effective queries by :func:`normalised_text` -- Unicode NFKC, case folded,
runs of whitespace as one space -- and the selection, the folds and the statistics
count each group once (its rows averaged: :func:`unit_table`).
The secondary-metric guard and the per-query impact still count every query, as
``groove eval`` does.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pytest_groove.errors import clip
from pytest_groove.scoring.records import GoldenQuery, question_key

FloatArray = npt.NDArray[np.float64]

#: groups of repeated queries a warning names before it counts the rest
SHOWN_GROUPS = 3

Units = tuple[tuple[int, ...], ...]


#: the text two queries must share to count as one (NFKC, case folded, spaces collapsed)
normalised_text = question_key


def query_units(queries: Sequence[GoldenQuery], rows: Sequence[int]) -> Units:
    """``rows`` grouped by the normalised text of their query: each group in golden
    order, the groups in the order of their first row."""
    groups: dict[str, list[int]] = {}
    for row in rows:
        groups.setdefault(normalised_text(queries[row].query), []).append(row)
    return tuple(tuple(group) for group in groups.values())


def _group_label(queries: Sequence[GoldenQuery], group: Sequence[int]) -> str:
    """``a = b = c``; an id several copies share (a derived id) with their lines."""
    lines: dict[str, list[int]] = {}
    for row in group:
        lines.setdefault(clip(queries[row].id), []).append(queries[row].line)
    parts = []
    for ident, at in lines.items():
        known = [str(line) for line in at if line > 0]
        if len(at) > 1 and known:
            parts.append(f"{ident} (lines {', '.join(known)})")
        else:
            parts.append(ident)
    return " = ".join(parts)


def repeated_text_warning(queries: Sequence[GoldenQuery], units: Units) -> str | None:
    """One line naming the effective queries that repeat another's text (None: none do)."""
    repeated = [group for group in units if len(group) > 1]
    if not repeated:
        return None
    copies = sum(len(group) - 1 for group in repeated)
    shown = "; ".join(_group_label(queries, group) for group in repeated[:SHOWN_GROUPS])
    if len(repeated) > SHOWN_GROUPS:
        shown += f"; and {len(repeated) - SHOWN_GROUPS} more groups"
    queries_total = sum(len(group) for group in units)
    return (
        f"WARNING: {copies} effective golden quer{'y repeats' if copies == 1 else 'ies repeat'} "
        f"the text of another ({shown}); each text counts once in the selection and the "
        f"statistics (effective N = {len(units)}, not {queries_total}), since a held-out "
        "query's copies would stay in its training folds."
    )


def unit_table(ndcg5: FloatArray, units: Sequence[Sequence[int]]) -> FloatArray:
    """One row per unit: the mean of its rows (a unit of one row is that row, exactly)."""
    table = np.asarray(ndcg5, dtype=np.float64)
    if not units:
        return np.zeros((0, table.shape[1]), dtype=np.float64)
    return np.stack([table[list(unit)].mean(axis=0) for unit in units])
