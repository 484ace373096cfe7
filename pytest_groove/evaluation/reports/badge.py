"""The badge file (``--groove-badge PATH``, ``groove eval --badge PATH``): a shields.io
endpoint document for a README badge.

One JSON object, ``{"schemaVersion": 1, "label": ..., "message": ..., "color": ...}``
(the endpoint badge's schema): the label is a metric (``--badge-metric``, default the
first floor's metric, else recall at the largest k), the message its value in this
run, and the colour the gate's verdict (:mod:`.headline`): ``brightgreen`` passed,
``red`` failed, ``lightgrey`` not gated.  A workflow publishes the file where
shields.io can fetch it (a gist, a branch, GitHub Pages).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_groove.evaluation.reports.headline import headline
from pytest_groove.scoring.metric_table import RECALL, Metric, metric_names_hint, parse_metric
from pytest_groove.scoring.metrics import FALLBACK_K

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs

#: the badge's colour by the run's verdict (shields.io's named colours)
COLORS = {"passed": "brightgreen", "failed": "red", "not gated": "lightgrey"}


def badge_metric_problem(name: str, k_values: Sequence[int], metrics: Sequence[str]) -> str | None:
    """Why ``name`` cannot label this run's badge (None: it can): not a metric, at a
    k the run does not measure, or an optional metric it does not ask for."""
    metric = parse_metric(name)
    if metric is None:
        return f"is no metric ({metric_names_hint()}, K a k the run measures)"
    if metric.k is not None and metric.k not in k_values:
        return f"is at a k this run does not measure (k values: {', '.join(map(str, k_values))})"
    if metric.kind.optional and metric.kind.key not in metrics:
        return "is a metric this run does not measure (ask for it with [eval].metrics)"
    return None


def badge_metric(inputs: ReportInputs) -> Metric:
    """The metric the badge shows: the one asked for, else the first floor's, else
    recall at the largest k."""
    options = inputs.options
    asked = None if options is None else options.badge_metric
    gate = inputs.run.gate
    for name in (asked, *(key for key, _ in (gate.floors if gate is not None else ()))):
        metric = None if name is None else parse_metric(name)
        if metric is not None:
            return metric
    k_values = inputs.run.fingerprint.k_values
    return Metric(RECALL, max(k_values) if k_values else FALLBACK_K)


def badge_json(inputs: ReportInputs) -> dict[str, Any]:
    """The endpoint document of the run ``inputs`` describe."""
    metric = badge_metric(inputs)
    value = metric.of_aggregate(inputs.run.aggregate)
    status = headline(inputs).status
    message = f"{value:.3f}" if math.isfinite(value) else "n/a"
    if status == "failed":
        message += " (failed)"
    return {"schemaVersion": 1, "label": metric.label, "message": message, "color": COLORS[status]}


def render_badge(inputs: ReportInputs) -> str:
    """:func:`badge_json` as the file holds it (one line)."""
    return json.dumps(badge_json(inputs), ensure_ascii=False) + "\n"
