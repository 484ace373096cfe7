"""The verdicts as the HTML report shows them: the per-query verdict column (the
pytest item's outcome) with the baseline rank beside it, and the moved table.

Plain values only; the template escapes them (:mod:`.report_html`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_groove.evaluation.gate.verdict import QueryVerdict, RunVerdicts, Verdict
from pytest_groove.evaluation.reports.explain_text import (
    MOVED_SHOWN,
    causes,
    metric_moves,
    rank_move,
    rank_text,
)

#: a row's class by verdict (the colours of the per-query table)
VERDICT_CSS: dict[Verdict, str | None] = {
    "pass": None,
    "regressed": "regressed",
    "missed": "miss",
    "violated": "miss",
}


@dataclass(frozen=True)
class VerdictCell:
    #: pass / regressed / missed (the item's outcome under --fail-on-regression)
    verdict: str
    #: the baseline's first expected rank ("" when not compared)
    baseline_rank: str
    #: what the regression lost, changed, displaced and removed ("" for a pass)
    why: list[str]


def verdict_cell(verdict: QueryVerdict, k: int) -> VerdictCell:
    why: list[str] = [violation.text(k) for violation in verdict.violations]
    if verdict.verdict == "missed":
        why.append(f"nothing expected in the top {k}")
    elif verdict.regressed:
        why.append(metric_moves(verdict.regressed))
    # the causes the text report gives (the first answer's move is the baseline-rank
    # column here)
    first_move = f"rank {rank_move(verdict)}"
    why += [cause for cause in causes(verdict) if cause != first_move]
    return VerdictCell(
        verdict=verdict.verdict,
        baseline_rank=rank_text(verdict.baseline_first_rank) if verdict.compared else "",
        why=why,
    )


@dataclass(frozen=True)
class MovedRow:
    id: str
    before: str
    after: str
    verdict: str


@dataclass(frozen=True)
class MovedTable:
    rows: list[MovedRow]
    #: moved queries past the shown rows
    more: int
    total: int


def moved_rows(verdicts: RunVerdicts, shown: int = MOVED_SHOWN) -> MovedTable | None:
    """The moved table, worst first, as the text report caps it (None: nothing moved)."""
    moved = verdicts.moved
    if not moved:
        return None
    return MovedTable(
        rows=[
            MovedRow(v.label, rank_text(v.baseline_first_rank), rank_text(v.first_rank), v.verdict)
            for v in moved[:shown]
        ],
        more=max(0, len(moved) - shown),
        total=len(verdicts.queries),
    )
