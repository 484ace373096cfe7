"""The verdicts in the JSON report: each ``per_query[]`` object's verdict keys and the
top-level ``moved`` list (``docs/json-report.md``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_groove.evaluation.gate.verdict import QueryVerdict, RunVerdicts
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.scoring.constraints import Violation


def verdict_json(verdict: QueryVerdict) -> dict[str, Any]:
    """The keys a query's verdict adds to its ``per_query[]`` object."""
    renamed = dict(verdict.renamed)
    unindexed = dict(verdict.unindexed)
    return {
        "verdict": verdict.verdict,
        "first_rank": verdict.first_rank,
        "baseline_first_rank": verdict.baseline_first_rank,
        "regressed": [
            {"metric": m.label, "before": m.before, "after": m.after} for m in verdict.regressed
        ],
        "removed": [
            {
                "path": path,
                "renamed_to": renamed.get(path),
                "not_indexed_because": unindexed.get(path),
            }
            for path in verdict.removed
        ],
        "headings_removed": [
            {"path": path, "heading": heading} for path, heading in verdict.headings_removed
        ],
        "lost": [
            {"path": a.path, "heading": a.heading, "before": a.before, "after": a.after}
            for a in verdict.lost
        ],
        "changed": list(verdict.changed),
        "displaced_by": [{"path": d.path, "change": d.change} for d in verdict.displaced_by],
        "violations": [_violation_json(v, v in verdict.new_violations) for v in verdict.violations],
    }


def _violation_json(violation: Violation, new: bool) -> dict[str, Any]:
    """One broken constraint: ``kind`` (``not_expected`` / ``within``), the rank, the
    entry or the ``within`` it broke, and whether the baseline's ranking kept it."""
    out: dict[str, Any] = {"kind": violation.kind, "rank": violation.rank}
    if violation.entry is not None:
        out["path"] = violation.entry.path
        out["heading"] = violation.entry.heading
    else:
        out["within"] = violation.within
    out["new"] = new
    return out


def _with_name(obj: dict[str, Any], verdict: QueryVerdict) -> dict[str, Any]:
    """``obj`` with ``name`` after its ``id`` when the reports call the query otherwise
    (another query has the same id); the id itself is never changed."""
    if not verdict.name:
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out[key] = value
        if key == "id":
            out["name"] = verdict.name
    return out


def per_query_json(results: Sequence[QueryResult], verdicts: RunVerdicts) -> list[Any]:
    """Each query's run-record object followed by its verdict keys."""
    return [
        _with_name({**result.to_json(), **verdict_json(verdict)}, verdict)
        for result, verdict in zip(results, verdicts.queries, strict=True)
    ]


def moved_json(verdicts: RunVerdicts) -> list[dict[str, Any]]:
    """Every query whose first answer's rank changed, worst first (uncapped)."""
    return [
        _with_name({"id": v.id, "before": v.baseline_first_rank, "after": v.first_rank}, v)
        for v in verdicts.moved
    ]
