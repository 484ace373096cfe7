"""The verdicts as the HTML report shows them: the banner its first screen leads with
(the run's verdict, the failing queries with their reasons at full width, what
changed), the per-query verdict column (the pytest item's outcome) with the baseline
rank beside it, and the moved table.

Plain values only; the template escapes them (:mod:`.report_html`).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_groove.evaluation.gate.verdict import QueryVerdict, RunVerdicts, Verdict
from pytest_groove.evaluation.reports.explain_text import (
    MOVED_SHOWN,
    causes,
    explanation,
    metric_moves,
    rank_move,
    rank_text,
)
from pytest_groove.evaluation.reports.headline import Headline

#: a row's class by verdict (the colours of the per-query table)
VERDICT_CSS: dict[Verdict, str | None] = {"pass": None, "regressed": "regressed", "missed": "miss"}


@dataclass(frozen=True)
class VerdictCell:
    #: pass / regressed / missed (the item's outcome under --fail-on-regression)
    verdict: str
    #: the baseline's first expected rank ("" when not compared)
    baseline_rank: str
    #: what the regression lost, changed, displaced and removed ("" for a pass)
    why: list[str]


def verdict_cell(verdict: QueryVerdict, k: int) -> VerdictCell:
    why: list[str] = []
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


#: rows of the verdict's list of failing queries before "and N more"
FAILING_SHOWN = 20


@dataclass(frozen=True)
class FailingRow:
    id: str
    #: regressed / missed / known miss / pass (a pass that lost an answer)
    verdict: str
    #: what happened, one line (:func:`.explain_text.explanation`)
    why: str


@dataclass(frozen=True)
class VerdictBanner:
    """What the report's first screen says (:mod:`.headline`), with the failing
    queries' reasons at full width."""

    #: passed / failed / not-gated (the banner's class)
    status: str
    first: str
    why: tuple[str, ...]
    failing: list[FailingRow]
    #: failing queries past the shown rows
    more: int
    baseline: str
    changes: tuple[str, ...]


def verdict_banner(
    head: Headline, verdicts: RunVerdicts, known: frozenset[int], shown: int = FAILING_SHOWN
) -> VerdictBanner:
    """The banner of ``head``: the queries that regressed, missed or lost an answer,
    each with the text report's one-line reason."""
    chosen = [
        (i, v)
        for i, v in enumerate(verdicts.queries)
        if v.failed or v.removed or v.headings_removed
    ]
    rows = [
        FailingRow(
            id=v.label,
            verdict="known miss" if i in known else v.verdict,
            why=explanation(v, verdicts.k, v.recall_now, v.recall_before)
            or "an expected answer was lost",
        )
        for i, v in chosen[:shown]
    ]
    return VerdictBanner(
        status=head.status.replace(" ", "-"),
        first=head.first_line(),
        why=head.why,
        failing=rows,
        more=max(0, len(chosen) - shown),
        baseline=head.baseline,
        changes=head.changes,
    )
