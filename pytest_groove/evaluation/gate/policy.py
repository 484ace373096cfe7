"""The gate's policy: regressions (optionally confirmed by the test), floors, loosening.

Three rules decide whether a run fails, on top of :func:`.compare.compare`'s
regressions:

- with ``--significance ALPHA`` a metric counts as regressed only when its drop exceeds
  its threshold *and* the paired sign-flip test gives ``p < ALPHA``
  (:mod:`.significance`); a drop over its threshold that the test cannot tell from
  chance is named in a note instead, naming where the level was set
  (:func:`significance_phrase`), and a single query's drop fails no pytest item
  (:meth:`.lifecycle.Evaluation.regressed_metrics`);
- with ``--fail-under`` a metric under its floor fails the run, with or without a
  baseline (:mod:`.floors`);
- the gate in effect is recorded with the run (:class:`.gate_record.GateRecord`), and
  when it is looser than the baseline run's, the setting and the file it came from are
  named (:func:`loosened`).

Floors, like the regression gate, do not apply to a subset run.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_groove.errors import GrooveError, UsageError, clip_path, flag
from pytest_groove.evaluation.gate.baseline import BaselineChoice
from pytest_groove.evaluation.gate.compare import Comparison
from pytest_groove.evaluation.runs.gate_record import (
    FLOORS_SETTING,
    FROZEN_SETTING,
    SIGNIFICANCE_SETTING,
    THRESHOLD_SETTING,
    GateRecord,
    Loosened,
    describe_setting,
    looser_settings,
)
from pytest_groove.evaluation.runs.record import RunRecord, format_timestamp
from pytest_groove.evaluation.runs.trust import trusted_runs, untrusted
from pytest_groove.scoring.floors import (
    FloorError,
    Floors,
    floor_failures,
    parse_floors,
)
from pytest_groove.scoring.metric_table import parse_metric, unasked_optional
from pytest_groove.scoring.significance import format_p, significant
from pytest_groove.scoring.thresholds import Thresholds
from pytest_groove.settings.config import EvalSettings, Settings
from pytest_groove.settings.options import OPTIONS_BY_NAME, RunOptions

#: each gate setting: its option name and its groove.toml key
_OPTION_OF = {
    THRESHOLD_SETTING: "threshold",
    FLOORS_SETTING: "fail-under",
    SIGNIFICANCE_SETTING: "significance",
}


class GateInputs(Protocol):
    """What the gate reads of an evaluation's plan (the evaluation's ``EvalPlan`` is
    one): named here so the gate, below the evaluation, never imports it."""

    @property
    def kb(self) -> Path: ...

    @property
    def options(self) -> RunOptions: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def k_values(self) -> tuple[int, ...]: ...

    @property
    def prog(self) -> str: ...

    @property
    def history_path(self) -> Path: ...

    @property
    def gate(self) -> GatePlan: ...


@dataclass(frozen=True)
class GatePlan:
    """The floors and significance level of a plan (checked before any search)."""

    floors: Floors = field(default_factory=Floors)
    significance: float | None = None


def resolve_gate(
    options: RunOptions, settings: Settings, k_values: Sequence[int], metrics: Sequence[str] = ()
) -> GatePlan:
    """``--fail-under`` over ``[eval].fail_under``, ``--significance`` over
    ``[eval].significance``; :class:`UsageError` for a floor at a k not measured or
    on an optional metric (``metrics``: the run's ``--metrics`` keys) not asked for."""
    refusal: Callable[[str], GrooveError]
    if options.fail_under is not None:
        try:
            floors = parse_floors(options.fail_under)
        except FloorError as exc:
            raise UsageError(f"{flag('fail-under')}: {exc}") from None
        where = flag("fail-under")
        refusal = UsageError  # a bad flag value: exit 2
    else:
        floors = Floors(settings.eval.fail_under)
        where = "[eval].fail_under"

        def refusal(message: str) -> GrooveError:
            # the value is the file's: a config error naming it (exit 1), as any other
            return GrooveError(f"invalid config {clip_path(settings.source)}: {message}")

    # a floor on a metric that is never measured would read as 0 and always fail
    keys = [key for key, _ in floors.pairs]
    refuse_unmeasured(where, floors.unknown_k(k_values), keys, k_values, metrics, refusal)
    alpha = options.significance
    return GatePlan(floors, alpha if alpha is not None else settings.eval.significance)


def refuse_unmeasured(
    where: str,
    unknown: Sequence[str],
    keys: Sequence[str],
    k_values: Sequence[int],
    metrics: Sequence[str],
    refusal: Callable[[str], GrooveError],
) -> None:
    """Raise ``refusal`` when the setting ``where`` names a cut-off (``unknown``: the
    ones not in ``k_values``) or, among its ``keys``, an optional metric that
    ``metrics`` does not ask for: this run does not measure it."""
    if unknown:
        measured = ", ".join(str(k) for k in k_values)
        raise refusal(
            f"{where} names {', '.join(unknown)}, which this run does not measure "
            f"(k values: {measured})"
        )
    unasked = unasked_optional(keys, metrics)
    if unasked:
        raise refusal(
            f"{where} names {', '.join(unasked)}, which this run does not measure; "
            f"ask for it with {flag('metrics')} or [eval].metrics"
        )


def gate_record(
    thresholds: Thresholds, gate: GatePlan, frozen_baseline: RunRecord | None = None
) -> GateRecord:
    """What a run records of the gate it was held to (and the frozen run it was
    compared with, if it was)."""
    return GateRecord(
        threshold=thresholds.default,
        thresholds=thresholds.per_metric,
        floors=gate.floors.pairs,
        significance=gate.significance,
        frozen_baseline=None
        if frozen_baseline is None
        else format_timestamp(frozen_baseline.timestamp),
    )


def setting_source(plan: GateInputs, setting: str) -> str:
    """Where this run's value of a gate setting came from, for people."""
    name = _OPTION_OF[setting]
    given = getattr(plan.options, name.replace("-", "_")) is not None
    if given:
        origin = dict(plan.options.origins).get(name)
        if origin is not None:
            return f"{OPTIONS_BY_NAME[name].ini_key} in {origin}"
        return f"{flag(name)} on the command line"
    default = getattr(EvalSettings(), setting)
    if plan.settings.source is not None and getattr(plan.settings.eval, setting) != default:
        return f"[eval].{setting} in {clip_path(plan.settings.source)}"
    return f"the built-in default of [eval].{setting}"


def loosened(
    plan: GateInputs,
    now: GateRecord,
    baseline: RunRecord | None,
    stored: Sequence[RunRecord] = (),
    named: bool = False,
) -> tuple[Loosened, ...]:
    """The settings of ``now`` looser than the baseline run's gate (none recorded: none).

    ``stored`` (the history as read) tells what became of a frozen run the baseline run
    was compared with and this one is not; ``named`` (``--baseline RUN``) is a choice
    made on purpose, never a loosening.
    """
    if baseline is None or baseline.gate is None:
        return ()
    before = baseline.gate
    out = [
        Loosened(
            setting=setting,
            now=describe_setting(now, setting),
            baseline=describe_setting(before, setting),
            source=setting_source(plan, setting),
        )
        for setting in looser_settings(now, before, plan.k_values)
    ]
    if before.frozen_baseline is not None and now.frozen_baseline is None and not named:
        out.append(
            Loosened(
                setting=FROZEN_SETTING,
                now="none",
                baseline=before.frozen_baseline,
                source=_unfrozen_because(plan, before.frozen_baseline, stored),
            )
        )
    return tuple(out)


def history_command(action: str, run: str, kb: Path) -> str:
    """``groove history <action> RUN --kb-path KB`` as a shell takes it."""
    return f"`groove history {action} {run} --kb-path {shlex.quote(str(kb))}`"


def failed_baseline_warning(
    choice: BaselineChoice | None, stored: Sequence[RunRecord], kb: Path
) -> str | None:
    """Said when the baseline is a run that failed its own gate (None: it is not).

    Every run is recorded, a failed one too, and the next run is compared with it: a
    CI retry of a failed job, on a runner that kept the history, would pass against
    the very run that failed.  Unless that run was chosen on purpose (frozen, named).
    """
    if choice is None or choice.baseline is None or choice.frozen or choice.named:
        return None
    baseline = choice.baseline
    if baseline.gate is None or not baseline.gate.failed:
        return None
    stamp = format_timestamp(baseline.timestamp)
    # the newest earlier run of these settings that passed its own gate
    before = next(
        (
            r
            for r in trusted_runs(stored)
            if r.fingerprint == baseline.fingerprint
            and r.timestamp < baseline.timestamp
            and not (r.gate is not None and r.gate.failed)
        ),
        None,
    )
    keep = (
        f"{history_command('freeze', format_timestamp(before.timestamp), kb)} compares with "
        "the last run that passed it"
        if before is not None
        else "freeze a known-good run to compare with it "
        f"(`groove history --kb-path {shlex.quote(str(kb))}` lists them)"
    )
    return (
        f"the baseline run {stamp} failed its own gate ({'; '.join(baseline.gate.failed)}) "
        "and was recorded, as every run is: this run is compared with it, so what it lost "
        f"is not counted again; {keep}"
    )


def _unfrozen_because(plan: GateInputs, frozen: str, stored: Sequence[RunRecord]) -> str:
    """What became of the frozen run, and how to freeze it again."""
    kept = next((r for r in stored if format_timestamp(r.timestamp) == frozen), None)
    if kept is None:
        return f"{plan.history_path}, which no longer holds that run (deleted)"
    why = untrusted(kept)
    if why is not None:
        return f"{plan.history_path}, where that run cannot be the baseline: {why}"
    again = f"{history_command('freeze', frozen, plan.kb)} freezes it again"
    other = next((r for r in stored if r.frozen), None)
    if other is not None:
        # one run is frozen per history: freezing a run of other settings moved it
        return (
            f"{plan.history_path}, where the frozen run is now "
            f"{format_timestamp(other.timestamp)}, of other settings, so runs of these "
            f"settings are compared with their newest again; {again}"
        )
    return (
        f"{plan.history_path}, whose `baseline` marker no longer names that run (removed by "
        f"hand, or lost in a merge?); {again}"
    )


@dataclass(frozen=True)
class GateVerdict:
    #: aggregate metrics that regressed (and, under --significance, with p < alpha)
    regressions: list[str]
    #: ``<label> 0.850 < floor 0.9`` for every metric under its floor
    floor_failures: list[str]
    #: metrics over their threshold that the test could not tell from chance
    unconfirmed: list[str]

    @property
    def failures(self) -> list[str]:
        return self.regressions + self.floor_failures


def gate_verdict(
    plan: GateInputs, comparison: Comparison, *, regression_gate: bool, subset: bool
) -> GateVerdict:
    """Which metrics fail the run: regressions (when the regression gate is on) and floors."""
    if subset:
        return GateVerdict([], [], [])
    alpha = plan.gate.significance
    regressions: list[str] = []
    unconfirmed: list[str] = []
    if regression_gate:
        for label in comparison.regressions:
            metric = parse_metric(label)
            p = None
            if comparison.p_values is not None and metric is not None:
                p = comparison.p_values.of(metric)
            if significant(p, alpha):
                regressions.append(label)
            else:
                unconfirmed.append(f"{label} {'p unknown' if p is None else format_p(p)}")
    floors = floor_failures(plan.gate.floors, comparison.run.aggregate)
    return GateVerdict(regressions, floors, unconfirmed)


def floors_message(plan: GateInputs, failures: Sequence[str]) -> str:
    """The gate's line for floors not reached, naming where the floors were set."""
    return (
        f"{plan.prog}: retrieval quality is under its floor ({', '.join(failures)}). "
        f"Exit status 1 because {setting_source(plan, FLOORS_SETTING)} sets the floors "
        f"({plan.gate.floors.describe()})."
    )


def significance_phrase(plan: GateInputs) -> str:
    """The significance level and where it was set: ``--significance 0.05``, or
    ``significance 0.05 from [eval].significance in kb/groove.toml`` (or the ini key)."""
    alpha = plan.gate.significance
    source = setting_source(plan, SIGNIFICANCE_SETTING)
    if source.endswith(" on the command line"):
        return f"{flag('significance')} {alpha:g}"
    return f"significance {alpha:g} from {source}"


def unconfirmed_note(plan: GateInputs, unconfirmed: Sequence[str]) -> str:
    return (
        f"dropped by more than the threshold but not counted as regressed under "
        f"{significance_phrase(plan)} ({', '.join(unconfirmed)}): "
        "drops like these cannot be told from chance"
    )
