"""The verdicts in words: the per-query failure lines and the moved block.

Shared by the text report, the item failure headline and ``groove history diff``,
so each says the same thing about a query.  Plain values in, lines out.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_groove.evaluation.gate.verdict import (
    CHANGED_REASON,
    HEADING_REMOVED_REASON,
    REMOVED_REASON,
    MetricMove,
    QueryVerdict,
    RunVerdicts,
)
from pytest_groove.scoring.metric_table import RECALL, Metric
from pytest_groove.search.hits import hit_label

#: ids in per-query rows are left-aligned in a field this wide (never truncated)
ID_WIDTH = 24
#: rows of the moved block before "... and N more"
MOVED_SHOWN = 10
#: documents named after "displaced by" before "and N more"
DISPLACED_SHOWN = 5


def rank_text(rank: int | None) -> str:
    return "none" if rank is None else str(rank)


def rank_move(verdict: QueryVerdict) -> str:
    """``1 → 4``; ``1 → none`` when the answer is no longer retrieved."""
    return f"{rank_text(verdict.baseline_first_rank)} → {rank_text(verdict.first_rank)}"


def removed_reasons(verdict: QueryVerdict) -> list[str]:
    """One phrase per expected path gone from the index since the baseline (renamed:
    the new path; still on disk: why the index leaves it out), then one per expected
    heading an edit of its note removed."""
    renamed = dict(verdict.renamed)
    unindexed = dict(verdict.unindexed)
    out = []
    for path in verdict.removed:
        if path in unindexed:
            out.append(
                f"`{path}` no longer indexed since the baseline run, though the file is "
                f"still there: {unindexed[path]}"
            )
        elif path in renamed:
            out.append(f"`{path}` renamed to `{renamed[path]}`? update the golden file")
        else:
            out.append(f"`{path}` {REMOVED_REASON}")
    for path, heading in verdict.headings_removed:
        out.append(f"`{hit_label(path, heading)}` (expected) {HEADING_REMOVED_REASON}")
    return out


def changed_reasons(verdict: QueryVerdict) -> list[str]:
    """One phrase per lost expected document whose own file changed (``<path>
    (expected) changed since the baseline run``): the likeliest cause, so said first."""
    return [f"`{path}` (expected) {CHANGED_REASON}" for path in verdict.changed]


def lost_moves(verdict: QueryVerdict) -> list[str]:
    """``<path> rank 2 → 4`` for each lost expected entry whose move the first
    answer's ``rank B → N`` does not already say (another expected document)."""
    first = (verdict.baseline_first_rank, verdict.first_rank)
    return [
        f"`{hit_label(a.path, a.heading)}` rank {rank_text(a.before)} → {rank_text(a.after)}"
        for a in verdict.lost
        if not (verdict.moved and (a.before, a.after) == first)
    ]


def displaced_text(verdict: QueryVerdict) -> str | None:
    """``displaced by notes/a.md (added), ops/b.md (changed)`` (None: nothing new above)."""
    shown = verdict.displaced_by[:DISPLACED_SHOWN]
    if not shown:
        return None
    names = ", ".join(d.path if d.change == "unknown" else f"{d.path} ({d.change})" for d in shown)
    rest = len(verdict.displaced_by) - len(shown)
    return f"displaced by {names}" + (f" and {rest} more" if rest else "")


def causes(verdict: QueryVerdict) -> list[str]:
    """The first answer's move, the other lost expected documents' moves, the lost
    ones that changed themselves, what displaced them and the removed answers (the
    item's failure headline adds them)."""
    out = [f"rank {rank_move(verdict)}"] if verdict.moved else []
    out += lost_moves(verdict) + changed_reasons(verdict)
    displaced = displaced_text(verdict)
    return out + ([displaced] if displaced is not None else []) + removed_reasons(verdict)


def metric_moves(moves: Sequence[MetricMove]) -> str:
    """``<recall at 1 and 5>: 1.00 → 0.00, reciprocal rank: 1.00 → 0.25`` (each kind's
    labels joined as ``kind@1/5``): one kind's metrics
    that moved alike share one entry."""
    groups: list[tuple[str, list[str], float, float]] = []
    for move in moves:
        kind, at, k = move.label.partition("@")
        last = groups[-1] if groups else None
        if (
            at
            and last is not None
            and last[0] == kind
            and (last[2], last[3])
            == (
                move.before,
                move.after,
            )
        ):
            last[1].append(k)
            continue
        groups.append((kind if at else move.label, [k] if at else [], move.before, move.after))
    return ", ".join(
        f"{kind}{'@' + '/'.join(ks) if ks else ''}: {before:.2f} → {after:.2f}"
        for kind, ks, before, after in groups
    )


def explanation(
    verdict: QueryVerdict, k: int, recall_now: float, recall_before: float | None
) -> str:
    """What happened to one failing query, ``; ``-separated: the metrics that dropped
    (a miss: recall at the largest k), then :func:`causes`."""
    parts: list[str] = []
    if verdict.verdict == "missed":
        values = (
            f"{recall_now:.2f}"
            if recall_before is None
            else f"{recall_before:.2f} → {recall_now:.2f}"
        )
        parts.append(f"{Metric(RECALL, k).query_label}: {values}")
    elif verdict.regressed:
        parts.append(metric_moves(verdict.regressed))
    parts = [violation.text(k) for violation in verdict.violations] + parts
    return "; ".join(parts + causes(verdict))


def failure_lines(verdicts: RunVerdicts, total: int) -> list[str]:
    """The "regressions and misses" block (empty when every query passed)."""
    failed = [v for v in verdicts.queries if v.failed]
    if not failed:
        return []
    lines = ["", f"Per-query (regressions and misses, {len(failed)} of {total})"]
    for verdict in failed:
        mark = "↓" if verdict.verdict == "regressed" else "✗"
        why = explanation(verdict, verdicts.k, verdict.recall_now, verdict.recall_before)
        lines.append(f"  {mark} {verdict.label.ljust(ID_WIDTH)} {why}")
    return lines


def moved_lines(verdicts: RunVerdicts, total: int, shown: int = MOVED_SHOWN) -> list[str]:
    """The "moved" block: every query whose first answer's rank changed, worst first,
    capped at ``shown`` rows with a count of the rest (empty: nothing moved)."""
    moved = verdicts.moved
    if not moved:
        return []
    lines = [
        "",
        f"Moved (rank of the first expected hit, baseline → now; {len(moved)} of {total}, "
        "worst first)",
    ]
    for verdict in moved[:shown]:
        lines.append(f"  {verdict.label.ljust(ID_WIDTH)} {rank_move(verdict)}")
    if len(moved) > shown:
        lines.append(f"  … and {len(moved) - shown} more (the JSON report lists every one)")
    return lines
