"""``groove floors --raise``: ratchet the floors in groove.toml up to what was reached.

Each floor of ``[eval] fail_under`` (a table, an inline table or the option's string
form) is raised to the latest recorded run's value of its metric, rounded *down* to a
step (0.01 by default), when that is higher.  A floor is never lowered.  The file is
edited in place with tomlkit, which keeps every comment, blank line, key order and
quoting: only the changed numbers differ.  The latest run is the newest stored run
that can be trusted (:mod:`.history_trust`: not edited, not dated in the future)
and measured the golden file the configuration names as it is now: a one-off run of
another golden file (``groove eval --golden smoke.yml``) is not the main line the
floors guard, and is skipped and counted.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import String

from pytest_groove.config import load_settings
from pytest_groove.errors import GrooveError, clip_path
from pytest_groove.evaluation.floors import (
    FLOORS_EXAMPLE,
    FloorError,
    Floors,
    floor_metric,
    parse_floors,
    read_floors_setting,
)
from pytest_groove.evaluation.golden import golden_hash, resolve_golden_path
from pytest_groove.evaluation.guarded_io import GOLDEN_CAP, read_guarded
from pytest_groove.evaluation.history import history_path, load_history
from pytest_groove.evaluation.history_trust import trusted_runs
from pytest_groove.evaluation.metric_table import unasked_optional
from pytest_groove.evaluation.run import RunRecord, format_timestamp
from pytest_groove.files.atomic import write_atomic

#: floors are raised to a multiple of this, rounded down
DEFAULT_STEP = 0.01


@dataclass(frozen=True)
class FloorChange:
    """One floor and what the latest run measured."""

    key: str
    label: str
    floor: float
    measured: float
    #: the raised floor (None: stays, the run is not higher by a whole step)
    raised: float | None


@dataclass(frozen=True)
class FloorReport:
    config: Path
    run: RunRecord
    floors: tuple[FloorChange, ...]
    #: newer trusted runs passed over: they measured another golden file
    skipped: int = 0

    @property
    def changed(self) -> tuple[FloorChange, ...]:
        return tuple(f for f in self.floors if f.raised is not None)


def round_down(value: float, step: float) -> float:
    """``value`` down to a multiple of ``step``, written with the step's decimals."""
    places = int(max(0, -Decimal(str(step)).as_tuple().exponent))  # type: ignore[operator]
    # the tolerance keeps 0.85 / 0.01 = 84.999... at 85; the loop keeps the result
    # from ever passing the value itself, whatever the tolerance did
    steps = math.floor(value / step + 1e-9)
    floor = round(steps * step, places)
    while floor > value and steps > 0:
        steps -= 1
        floor = round(steps * step, places)
    return floor


def floor_text(value: float) -> str:
    """A floor as written to the config and shown: the shortest spelling that reads
    back as exactly that number (``0.7142857``, ``0.85``, ``1``) -- never one rounded
    to fewer digits, which could read back above the value it was rounded down to."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _config_and_floors(kb: Path, config: Path | None) -> tuple[Path, Any, Any, Path]:
    """The config file, its parsed document, its ``fail_under`` item, and the golden
    file the configuration names (``[eval].golden``, else the KB's default)."""
    settings = load_settings(kb, config)
    golden = resolve_golden_path(kb, None, settings.eval.golden)
    source = settings.source
    if source is None:
        raise GrooveError(
            f"no groove.toml in {clip_path(kb)}: add [eval] fail_under = {{ ... }} with the floors "
            f"to raise (for example {FLOORS_EXAMPLE})"
        )
    doc = tomlkit.parse(source.read_text(encoding="utf-8"))
    section = doc.get("eval")
    floors = None if section is None else section.get("fail_under")
    if floors is None:
        raise GrooveError(
            f"{clip_path(source)} sets no floors: add fail_under under [eval] (for example "
            f"{FLOORS_EXAMPLE}) and run `groove floors --raise` again"
        )
    return source, doc, floors, golden


def _latest_run(kb: Path, golden: Path) -> tuple[RunRecord, int]:
    """The newest trusted run of ``golden`` as it is now, and how many newer trusted
    runs (of other golden files) were passed over."""
    path = history_path(kb)
    runs = trusted_runs(load_history(path, warnings=[]))
    if not runs:
        raise GrooveError(
            f"no recorded run to raise the floors to in {path}; run `groove eval` first"
        )
    data = read_guarded(golden, "golden file", GOLDEN_CAP, within=kb)
    if data is None:
        # the golden file is named on each command line (--golden), not in the config:
        # nothing says which runs are the main line, so the newest run is
        return runs[0], 0
    digest = golden_hash(data)
    for skipped, run in enumerate(runs):
        if run.fingerprint.golden_hash == digest:
            return run, skipped
    raise GrooveError(
        f"no recorded run in {path} measured the golden file {golden} as it is now "
        f"(the newest, {format_timestamp(runs[0].timestamp)}, measured another golden "
        "file or an earlier version of this one); run `groove eval` first"
    )


def plan_raise(kb: Path, config: Path | None, step: float = DEFAULT_STEP) -> FloorReport:
    """What ``--raise`` would do (nothing is written)."""
    source, _doc, floors, golden = _config_and_floors(kb, config)
    run, skipped = _latest_run(kb, golden)
    pairs = read_floors_setting(floors.unwrap() if hasattr(floors, "unwrap") else floors, "")
    # a floor on a metric the run did not measure has no measured value (not 0.000),
    # as groove eval refuses it before any search
    measured_k = run.fingerprint.k_values
    unmeasured = Floors(pairs).unknown_k(measured_k) + unasked_optional(
        (key for key, _ in pairs), run.fingerprint.metrics or ()
    )
    if unmeasured:
        raise GrooveError(
            f"invalid config {clip_path(source)}: [eval].fail_under names {', '.join(unmeasured)}, "
            f"which the latest run ({format_timestamp(run.timestamp)}) did not measure "
            f"(k values: {', '.join(str(k) for k in measured_k)}; optional metrics: "
            f"{', '.join(run.fingerprint.metrics or ()) or 'none'})"
        )
    out = []
    for key, floor in pairs:
        metric = floor_metric(key)
        measured = metric.of_aggregate(run.aggregate)
        target = round_down(measured, step) if math.isfinite(measured) else floor
        raised = target if target > floor + 1e-12 else None
        out.append(FloorChange(key, metric.label, floor, measured, raised))
    return FloorReport(source, run, tuple(out), skipped)


def _spelled_key(floors: Any, key: str) -> str:
    """The key as the file spells it (``MRR``, ``mrr``...) for the threshold key ``key``."""
    for written in floors:
        if floor_metric(str(written)).threshold_key == key:
            return str(written)
    raise FloorError(f"{key} not found")


def respelled(spec: str, raised: Mapping[str, float]) -> str:
    """``spec`` (the option's ``metric=number,...`` form) with the number of each floor
    in ``raised`` replaced; every other character -- names, spacing, the numbers of the
    floors that stay -- as written."""
    parsed = dict(parse_floors(spec).pairs)  # checked already; the keys as stored
    parts = []
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        key = floor_metric(name).threshold_key
        if key in raised and key in parsed:
            number = value.strip()
            start = value.index(number)
            value = f"{value[:start]}{floor_text(raised[key])}{value[start + len(number) :]}"
        parts.append(f"{name}{sep}{value}")
    return ",".join(parts)


def apply_raise(kb: Path, config: Path | None, step: float = DEFAULT_STEP) -> FloorReport:
    """Raise the floors in place; returns what changed (the file is untouched if nothing)."""
    report = plan_raise(kb, config, step)
    if not report.changed:
        return report
    source, doc, floors, _golden = _config_and_floors(kb, config)
    raised = {c.key: c.raised for c in report.changed if c.raised is not None}
    if isinstance(floors, String):
        # the string as the user wrote it, quotes and all, but for the raised numbers
        doc["eval"]["fail_under"] = String.from_raw(
            respelled(str(floors), raised), type_=floors.type
        )
    else:
        for key, value in raised.items():
            floors[_spelled_key(floors, key)] = value
    write_atomic(source, tomlkit.dumps(doc).encode("utf-8"))
    return report
