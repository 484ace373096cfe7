"""The machine report (``groove eval --format json``, ``--groove-json PATH``).

One JSON object; the schema is documented in ``docs/json-report.md``.  Every key is
always present (``findings`` is ``[]`` when the check found nothing, so a consumer
can tell "checked, nothing" from a version that never checked); ``corpus_changed``,
``previous`` and ``diff`` are ``null`` when there is nothing to say.  Non-finite
numbers are written as ``null``.

Key order is fixed, not sorted: the top level in the order built below, every run
object in the history file's field order, and k-maps in numeric order with string
keys (``"1"``, ``"5"``, ``"10"``; a lexicographic sort would print ``"10"`` before
``"5"``).  Consumers should still look keys up by name.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_groove.evaluation.gate.baseline import BaselineChoice
from pytest_groove.evaluation.gate.compare import Comparison
from pytest_groove.evaluation.gate.verdict import RunVerdicts, comparison_verdicts
from pytest_groove.evaluation.reports.verdict_json import moved_json, per_query_json
from pytest_groove.evaluation.runs.coverage import Coverage
from pytest_groove.evaluation.runs.record import (
    RunRecord,
    aggregate_to_json,
    corpus_to_json,
    format_timestamp,
)
from pytest_groove.scoring.metric_table import aggregate_metrics_to_json

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs


def build_json_report(
    run: RunRecord,
    comparison: Comparison,
    *,
    recorded: bool,
    verdicts: RunVerdicts | None = None,
    choice: BaselineChoice | None = None,
    coverage: Coverage | None = None,
) -> dict[str, Any]:
    """The report object for ``run`` (``coverage``: what the golden set covers of the
    KB, when this run measured it); ``recorded`` says whether it went into the history;
    ``verdicts`` are the run's (computed from ``comparison`` when not given); ``choice``
    says where the baseline came from."""
    diff = comparison.diff
    judged = verdicts if verdicts is not None else comparison_verdicts(comparison)
    return {
        "timestamp": format_timestamp(run.timestamp),
        "fingerprint": run.fingerprint.to_json(),
        "corpus": None if run.corpus is None else corpus_to_json(run.corpus),
        "corpus_changed": comparison.corpus_changed,
        "aggregate": aggregate_to_json(run.aggregate),
        "per_query": per_query_json(run.per_query, judged),
        "moved": moved_json(judged),
        "findings": [f.to_json() for f in run.findings],
        "previous": None if comparison.baseline is None else comparison.baseline.to_json(),
        # the aggregate's metric keys, without query_count
        "diff": None if diff is None else aggregate_metrics_to_json(diff),
        # the sign-flip test's p-value of each delta, keyed as "diff"
        "diff_p": None if comparison.p_values is None else comparison.p_values.to_json(),
        "recorded": recorded,
        # the gate this run was held to, and each setting looser than the baseline run's
        "gate": None if run.gate is None else run.gate.to_json(),
        "gate_loosened": [item.to_json() for item in comparison.gate_loosened],
        "baseline": baseline_json(comparison, choice),
        "coverage": None if coverage is None else coverage.to_json(),
    }


def baseline_json(comparison: Comparison, choice: BaselineChoice | None) -> dict[str, Any] | None:
    """Where the baseline came from and what differs from it (None: no baseline)."""
    if comparison.baseline is None:
        return None
    accepted = choice is not None and choice.accepted is not None
    golden = comparison.golden
    return {
        "source": "accepted" if accepted else "history",
        "path": str(choice.accepted) if choice is not None and choice.accepted else None,
        "compared_across_changes": comparison.across_changes,
        "golden_changes": None
        if golden is None
        else {
            "added": list(golden.added),
            "removed": list(golden.removed),
            "edited": list(golden.edited),
            "paired": golden.paired,
        },
        "settings_changes": list(comparison.settings_changes),
        "left_out": list(comparison.left_out),
    }


def dumps_json_report(report: dict[str, Any]) -> str:
    """Pretty-printed (two-space indent, keys in the order built), newline-terminated."""
    return json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_report(path: Path, inputs: ReportInputs) -> None:
    """The report table's hook (``formats.py``): the report as the outcome carries it,
    to ``path`` (its folder made when it can be); raises OSError."""
    assert inputs.json_report is not None  # a format that says whether it is recorded
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_json_report(inputs.json_report), encoding="utf-8")
