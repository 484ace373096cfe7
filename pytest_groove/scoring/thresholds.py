"""Regression thresholds: how far each aggregate metric may drop before it counts.

A threshold may differ per metric (:class:`Thresholds`, parsed from metric=number
pairs by :func:`parse_thresholds`, with the threshold spellings of
:mod:`.metric_table`); the option table checks a spelling with the same parser the
gate applies.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_groove.scoring.metric_table import THRESHOLD_EXAMPLE, metric_names_hint, parse_metric
from pytest_groove.text.list_values import EmptyItem, ascii_float, split_items


def metric_key(name: str) -> str:
    """The threshold key of a metric as any report names it (:func:`parse_metric`).

    A name that is no metric is returned trimmed and lower-cased (it matches no
    threshold, so the default applies).
    """
    metric = parse_metric(name)
    return name.strip().lower() if metric is None else metric.threshold_key


@dataclass(frozen=True)
class Thresholds:
    """How far each aggregate metric may drop before it counts as a regression."""

    #: for every metric not named in ``per_metric`` ([eval].regression_threshold)
    default: float
    #: ``(metric_key, threshold)`` pairs, in the order given
    per_metric: tuple[tuple[str, float], ...] = ()

    def for_metric(self, name: str) -> float:
        key = metric_key(name)
        return next((value for named, value in self.per_metric if named == key), self.default)

    def describe(self) -> str:
        """``0.05``, or the default and each named one, e.g. ``0.05 (mrr: 0.1)``."""
        if not self.per_metric:
            return f"{self.default:g}"
        named = ", ".join(f"{key}: {value:g}" for key, value in self.per_metric)
        return f"{self.default:g} ({named})"

    def unknown_k(self, k_values: Sequence[int]) -> list[str]:
        """Named metrics whose k this run does not measure (so they could never apply)."""
        measured = set(k_values)
        named = [(key, parse_metric(key)) for key, _ in self.per_metric]
        return [
            key
            for key, metric in named
            if metric is not None and metric.k is not None and metric.k not in measured
        ]


def as_thresholds(threshold: float | Thresholds) -> Thresholds:
    return threshold if isinstance(threshold, Thresholds) else Thresholds(threshold)


class ThresholdError(ValueError):
    """A threshold specification that cannot be used (the message says why and how)."""


def unit_value(text: str, shown: str, error: type[ValueError]) -> float:
    """``text`` as a number from 0 to 1 (a threshold or a floor), else ``error``, whose
    message starts with ``shown`` (the value as the message quotes it)."""
    try:
        value = ascii_float(text)
    except ValueError:
        raise error(f"{shown} is not a number") from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise error(f"{shown} must be a number from 0 to 1")
    return value


def _threshold_value(text: str, key: str | None) -> float:
    where = f"{key}: " if key else ""
    return unit_value(text, f"{where}{text[:40]!r}", ThresholdError)


def parse_thresholds(text: str, default: float) -> Thresholds:
    """``"0.03"`` (every metric) or metric=number pairs such as
    :data:`~.metric_table.THRESHOLD_EXAMPLE` (those metrics; the others keep ``default``).

    Raises :class:`ThresholdError` for an unknown metric name, a value outside
    0..1, a metric named twice, or an empty specification.
    """
    spec = text.strip()
    if not spec:
        raise ThresholdError("empty: give one number, or metric=number pairs")
    if "=" not in spec and "," not in spec:
        return Thresholds(_threshold_value(spec, None))
    try:
        parts = split_items(spec)
    except EmptyItem as exc:
        raise ThresholdError(f"{exc} (for example {THRESHOLD_EXAMPLE})") from None
    pairs: list[tuple[str, float]] = []
    for part in parts:
        name, sep, value = part.partition("=")
        key = metric_key(name)
        if not sep:
            raise ThresholdError(
                f"{part.strip()[:40]!r}: expected metric=number (for example {THRESHOLD_EXAMPLE})"
            )
        if parse_metric(name) is None:
            raise ThresholdError(
                f"unknown metric {name.strip()[:40]!r}; use {metric_names_hint()} "
                "as the reports name them (K one of the k values)"
            )
        if any(key == seen for seen, _ in pairs):
            raise ThresholdError(f"{key} is named twice")
        pairs.append((key, _threshold_value(value.strip(), key)))
    return Thresholds(default, tuple(pairs))
