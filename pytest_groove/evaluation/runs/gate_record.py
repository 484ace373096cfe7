"""The gate a run was held to, stored with the run, and how a later gate can be looser.

Every run records the thresholds, floors and significance level in effect
(:class:`GateRecord`, the run's ``gate`` object), so a later run can tell when its own
gate is looser than its baseline's: a threshold raised (``regression_threshold = 1.0``
turns the regression gate off without a word), a floor lowered or dropped, the
significance rule switched on or its level lowered, or the frozen baseline it was
compared with no longer frozen (the history's one-line ``baseline`` marker deleted by
hand or lost in a merge, the run deleted).  :func:`looser_settings` names
each such setting once; the door prints them as one warning line and the JSON report
lists them (``gate_loosened``).

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_groove.scoring.floors import Floors
from pytest_groove.scoring.metric_table import all_metrics, parse_metric
from pytest_groove.scoring.thresholds import Thresholds
from pytest_groove.shapes import (
    read_number,
    read_object,
    read_values,
    require,
    shape_error,
    where,
)

#: the settings a run's gate is made of, as groove.toml's [eval] names them
THRESHOLD_SETTING = "regression_threshold"
FLOORS_SETTING = "fail_under"
SIGNIFICANCE_SETTING = "significance"
#: not a groove.toml key: the frozen run a run was compared with
FROZEN_SETTING = "frozen_baseline"
#: the run's gate failures, as recorded with it
FAILED_KEY = "failed"
#: a looser value must differ by more than this (float noise is not a loosening)
_EPSILON = 1e-12


def _unit(value: Any, path: str) -> float:
    return read_number(value, path, lo=0.0, hi=1.0)


def _pairs(raw: Any, path: str) -> tuple[tuple[str, float], ...]:
    values = read_values(raw, path, _unit)
    for key in values:
        if parse_metric(key) is None:
            raise shape_error(where(path, key), "expected a metric name")
    return tuple(values.items())


def _timestamp_text(raw: Any, path: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 64:
        raise shape_error(path, "expected a run's timestamp")
    return raw


def _failures(raw: Any, path: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise shape_error(path, "expected a list of texts")
    return tuple(raw)


@dataclass(frozen=True)
class GateRecord:
    """The gate in effect for one run."""

    #: the threshold of every metric not named in ``thresholds``
    threshold: float
    #: ``(metric key, threshold)`` pairs given per metric
    thresholds: tuple[tuple[str, float], ...] = ()
    #: ``(metric key, floor)`` pairs
    floors: tuple[tuple[str, float], ...] = ()
    #: ``--significance ALPHA`` (None = off: every drop over its threshold counts)
    significance: float | None = None
    #: the timestamp of the frozen run this run was compared with (None: not a frozen one)
    frozen_baseline: str | None = None
    #: what failed this run's gate when it was recorded (empty: it passed, or no gate)
    failed: tuple[str, ...] = ()

    def threshold_for(self, key: str) -> float:
        return next((value for named, value in self.thresholds if named == key), self.threshold)

    def describe_thresholds(self) -> str:
        return Thresholds(self.threshold, self.thresholds).describe()

    def describe_floors(self) -> str:
        return Floors(self.floors).describe() or "none"

    def describe_significance(self) -> str:
        return "off" if self.significance is None else f"{self.significance:g}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            THRESHOLD_SETTING: self.threshold,
            "thresholds": dict(self.thresholds),
            FLOORS_SETTING: dict(self.floors),
            SIGNIFICANCE_SETTING: self.significance,
        }
        if self.frozen_baseline is not None:
            out[FROZEN_SETTING] = self.frozen_baseline
        if self.failed:
            out[FAILED_KEY] = list(self.failed)
        return out

    @classmethod
    def from_json(cls, raw: Any, path: str = "gate") -> GateRecord:
        obj = read_object(raw, path)
        alpha = obj.get(SIGNIFICANCE_SETTING)
        return cls(
            threshold=_unit(require(obj, THRESHOLD_SETTING, path), where(path, THRESHOLD_SETTING)),
            thresholds=_pairs(obj.get("thresholds", {}), where(path, "thresholds")),
            floors=_pairs(obj.get(FLOORS_SETTING, {}), where(path, FLOORS_SETTING)),
            significance=None if alpha is None else _unit(alpha, where(path, SIGNIFICANCE_SETTING)),
            frozen_baseline=_timestamp_text(obj.get(FROZEN_SETTING), where(path, FROZEN_SETTING)),
            failed=_failures(obj.get(FAILED_KEY, []), where(path, FAILED_KEY)),
        )


@dataclass(frozen=True)
class Loosened:
    """One setting of this run's gate that is looser than the baseline run's."""

    #: ``regression_threshold``, ``fail_under``, ``significance`` or ``frozen_baseline``
    setting: str
    now: str
    baseline: str
    #: where this run's value came from: ``groove_threshold in /repo/pytest.ini``...
    source: str

    def to_json(self) -> dict[str, str]:
        return {
            "setting": self.setting,
            "now": self.now,
            "baseline": self.baseline,
            "source": self.source,
        }

    def phrase(self) -> str:
        return f"{self.setting} {self.now} (baseline run: {self.baseline}) from {self.source}"


def looser_settings(now: GateRecord, before: GateRecord, k_values: Sequence[int]) -> list[str]:
    """The settings of ``now`` looser than ``before``'s, in a fixed order."""
    out = []
    keys = [m.threshold_key for m in all_metrics(k_values)]
    keys += [key for key, _ in now.thresholds + before.thresholds if key not in keys]
    if any(now.threshold_for(k) > before.threshold_for(k) + _EPSILON for k in keys):
        out.append(THRESHOLD_SETTING)
    mine = dict(now.floors)
    if any(key not in mine or mine[key] < floor - _EPSILON for key, floor in before.floors):
        out.append(FLOORS_SETTING)
    if now.significance is not None and (
        before.significance is None or now.significance < before.significance - _EPSILON
    ):
        out.append(SIGNIFICANCE_SETTING)
    return out


def describe_setting(gate: GateRecord, setting: str) -> str:
    if setting == THRESHOLD_SETTING:
        return gate.describe_thresholds()
    if setting == FLOORS_SETTING:
        return gate.describe_floors()
    return gate.describe_significance()


def loosened_warning(items: Sequence[Loosened]) -> str | None:
    """One line naming every loosened setting and where it came from (None: none)."""
    if not items:
        return None
    return "the gate is looser than the baseline run's: " + "; ".join(i.phrase() for i in items)
