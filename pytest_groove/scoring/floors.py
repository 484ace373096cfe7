"""Absolute floors: a metric below its floor fails the run, baseline or not.

``--fail-under`` (``groove_fail_under``, ``[eval] fail_under``), e.g.
:data:`FLOORS_EXAMPLE`, names metrics with the threshold spellings of
:mod:`.metric_table`, each with the value it may not go under, like pytest-cov's
``--cov-fail-under``.  Unlike the regression gate, a floor needs no stored run: the
first run of a project is gated too.
A value is compared as measured (``0.8999`` is under ``0.9``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_groove.scoring.metric_table import (
    RECALL,
    RR,
    AggregateLike,
    Metric,
    metric_names_hint,
    parse_metric,
)
from pytest_groove.scoring.thresholds import unit_value
from pytest_groove.shapes import ShapeError
from pytest_groove.text.list_values import EmptyItem, split_items

#: an example for help texts and messages (the threshold spellings of the table)
FLOORS_EXAMPLE = f"{Metric(RECALL, 5).threshold_key}=0.9,{Metric(RR).threshold_key}=0.8"


class FloorError(ValueError):
    """A floor specification that cannot be used (the message says why and how)."""


@dataclass(frozen=True)
class Floors:
    """``(metric threshold key, floor)`` pairs, in the order given."""

    pairs: tuple[tuple[str, float], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def describe(self) -> str:
        """:data:`FLOORS_EXAMPLE` (the spelling the option takes)."""
        return ",".join(f"{key}={value:g}" for key, value in self.pairs)

    def unknown_k(self, k_values: Sequence[int]) -> list[str]:
        """Named metrics at a k this run does not measure (they could never be checked)."""
        out = []
        for key, _ in self.pairs:
            metric = parse_metric(key)
            if metric is not None and metric.k is not None and metric.k not in k_values:
                out.append(key)
        return out


def _floor_value(text: str, key: str) -> float:
    return unit_value(text, f"{key}: {text.strip()[:40]!r}", FloorError)


def _key(name: str) -> str:
    metric = parse_metric(name)
    if metric is None:
        raise FloorError(
            f"unknown metric {name.strip()[:40]!r}; use {metric_names_hint()} "
            "as the reports name them (K one of the k values)"
        )
    return metric.threshold_key


def floors_from_pairs(items: Sequence[tuple[str, float | str]]) -> Floors:
    """Floors from (metric name, value) pairs; :class:`FloorError` when one is wrong."""
    pairs: list[tuple[str, float]] = []
    for name, raw in items:
        key = _key(name)
        if any(key == seen for seen, _ in pairs):
            raise FloorError(f"{key} is named twice")
        pairs.append((key, _floor_value(str(raw), key)))
    return Floors(tuple(pairs))


def parse_floors(text: str) -> Floors:
    """:data:`FLOORS_EXAMPLE`: every metric named with the floor it may not go under."""
    spec = text.strip()
    if not spec:
        raise FloorError(f"empty: give metric=number pairs such as {FLOORS_EXAMPLE}")
    try:
        parts = split_items(spec)
    except EmptyItem as exc:
        raise FloorError(f"{exc} (for example {FLOORS_EXAMPLE})") from None
    items: list[tuple[str, float | str]] = []
    for part in parts:
        name, sep, value = part.partition("=")
        if not sep:
            raise FloorError(
                f"{part.strip()[:40]!r}: expected metric=number (for example {FLOORS_EXAMPLE})"
            )
        items.append((name, value.strip()))
    return floors_from_pairs(items)


def floors_from_mapping(values: Mapping[str, float]) -> Floors:
    """Floors from a TOML table of metric = floor."""
    return floors_from_pairs(list(values.items()))


def floor_failures(floors: Floors, aggregate: AggregateLike) -> list[str]:
    """``<label> 0.850 < floor 0.9`` for every metric under its floor (NaN is under)."""
    failed = []
    for key, floor in floors.pairs:
        metric = parse_metric(key)
        assert metric is not None  # checked when parsed
        value = metric.of_aggregate(aggregate)
        if not (math.isfinite(value) and value >= floor):
            failed.append(f"{metric.label} {value:.3f} < floor {floor:g}")
    return failed


def floor_metric(key: str) -> Metric:
    """The metric a stored floor key names."""
    metric = parse_metric(key)
    if metric is None:
        raise FloorError(f"unknown metric {key!r}")
    return metric


def read_floors_setting(value: Any, path: str) -> tuple[tuple[str, float], ...]:
    """``[eval].fail_under``: the option's string, or a table of metric = floor."""
    try:
        if isinstance(value, str):
            return parse_floors(value).pairs
        if isinstance(value, dict) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
        ):
            return floors_from_mapping(value).pairs
    except FloorError as exc:
        raise ShapeError(str(exc), path=path, expected=f"metric floors ({exc})") from None
    expected = f"metric floors: a table or a string such as {FLOORS_EXAMPLE!r}"
    raise ShapeError(expected, path=path, expected=expected)
