"""The JSON form of the optional metrics (precision@k, hit rate@k, MAP, R-precision).

A metric the run did not measure is None and its key is left out, so the history of a
run with the default metrics is byte for byte what it was before they existed; a key
that is absent reads back as None.  Keys come from the metric table: a kind's
``query_json_key`` is its :class:`QueryMetrics` field, its ``json_key`` its
:class:`AggregateMetrics` field.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_groove.scoring.metric_table import OPTIONAL_KINDS, MetricKind, values_to_json
from pytest_groove.scoring.metrics import AggregateMetrics, QueryMetrics
from pytest_groove.shapes import read_k_map, read_stored_float, where


def optional_metrics_to_json(metrics: QueryMetrics | AggregateMetrics) -> dict[str, Any]:
    """The measured optional metrics of a query or an aggregate, in table order."""
    out: dict[str, Any] = {}
    for kind in OPTIONAL_KINDS.values():
        if isinstance(metrics, QueryMetrics):
            key, found = kind.query_json_key, kind.of_query(metrics)
        else:
            key, found = kind.json_key, kind.of_aggregate(metrics)
        if found is not None:
            out[key] = values_to_json(found)
    return out


def _read(kind: MetricKind, obj: Mapping[str, Any], key: str, path: str) -> Any:
    if kind.per_k:
        return read_k_map(obj[key], where(path, key))
    return read_stored_float(obj[key], where(path, key))


def optional_query_metrics_from_json(obj: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``QueryMetrics`` keyword arguments for the optional metrics ``obj`` holds."""
    return {
        kind.query_json_key: _read(kind, obj, kind.query_json_key, path)
        for kind in OPTIONAL_KINDS.values()
        if kind.query_json_key in obj
    }


def optional_aggregate_from_json(obj: Mapping[str, Any], path: str) -> dict[str, Any]:
    """``AggregateMetrics`` keyword arguments for the optional metrics ``obj`` holds."""
    return {
        kind.json_key: _read(kind, obj, kind.json_key, path)
        for kind in OPTIONAL_KINDS.values()
        if kind.json_key in obj
    }
