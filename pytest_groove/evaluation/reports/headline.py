"""The run's verdict in words, as the Markdown and HTML reports lead with it.

One :class:`Headline` from the :class:`~.formats.ReportInputs` every report reads:
whether the run passed, failed (which gate, why, which queries) or was not gated;
the known misses of the accepted baseline; what changed since the baseline (corpus,
golden file, settings).  Plain text only: each renderer escapes it on its way out
(the query names, paths and golden ids in it come from outside).

Which queries fail follows the door: under pytest a missed query fails its item
(unless it is a known miss) and, under ``--groove-fail-on-regression``, a regressed
one too; ``groove eval`` fails on the gate alone and names the rest.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_groove.errors import Door, clip_path, flag, spell_flags
from pytest_groove.evaluation.gate.baseline import BaselineChoice
from pytest_groove.evaluation.gate.compare import Comparison
from pytest_groove.evaluation.gate.verdict import RunVerdicts
from pytest_groove.evaluation.runs.record import RunRecord, display_timestamp

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs

Status = Literal["passed", "failed", "not gated"]


@dataclass(frozen=True)
class ReportGate:
    """What the gate decided, as the reports say it (the judge's decision, plain)."""

    #: the run was held to a gate: a whole run, with ``--fail-on-regression`` or floors
    applied: bool = False
    #: what fails the run: regressed metrics, metrics under their floor, lost answers
    #: (empty: passed, or not gated)
    failures: tuple[str, ...] = ()
    #: the lines explaining a failure (flag tokens unspelled)
    lines: tuple[str, ...] = ()
    #: queries whose pytest item fails on their own (a regressed query under pytest's
    #: gate: ``query NAME regressed``)
    item_failures: tuple[str, ...] = ()
    #: positions in the run (and its verdicts) of the queries that missed in the
    #: accepted baseline and still miss: expected failures, not failures
    known_misses: frozenset[int] = frozenset()
    #: a subset (or interrupted) run: reported, never recorded or gated
    subset: bool = False
    #: the run is written as the accepted baseline (``--accept``): its drops are
    #: what is accepted, so the regression gate does not judge it
    accepting: bool = False


#: queries named on the first line before "and N more"
NAMED_QUERIES = 5
#: gate failures named on the first line before "and N more"
NAMED_FAILURES = 4


@dataclass(frozen=True)
class Headline:
    """What a report says first."""

    status: Status
    #: the program as the report's title names it (``groove eval``, ``groove``)
    prog: str
    #: what failed the run (gate failures, failing items), plain; empty when it passed
    failures: tuple[str, ...]
    #: the queries that regressed, by report name
    regressed: tuple[str, ...]
    #: the queries that missed and are no known miss
    missed: tuple[str, ...]
    #: the queries that missed in the accepted baseline and still miss
    known_misses: tuple[str, ...]
    #: the gate's own lines saying why it failed (spelled for the door)
    why: tuple[str, ...]
    #: why a run that did not fail was not held to a gate ("" when it was)
    not_gated: str
    #: what the run is compared with (``the accepted baseline docs/.groove-baseline.json``)
    baseline: str
    #: what changed since the baseline, one line each
    changes: tuple[str, ...]

    def first_line(self, name: Callable[[str], str] = str) -> str:
        """The verdict in one line; ``name`` marks up (escapes) each outside value:
        ``groove eval: failed — the gate failed on MRR; regressed: a, b``."""
        parts = [f"{self.prog}: {self.status}"]
        if self.failures:
            shown = ", ".join(name(f) for f in self.failures[:NAMED_FAILURES])
            rest = len(self.failures) - NAMED_FAILURES
            parts.append(f"the gate failed on {shown}{f' and {rest} more' if rest > 0 else ''}")
        elif self.not_gated:
            parts.append(self.not_gated)
        elif self.status == "passed":
            parts.append("the gate held")
        for what, queries in (
            ("regressed", self.regressed),
            ("missed", self.missed),
            ("known misses", self.known_misses),
        ):
            if queries:
                parts.append(f"{what}: {named(queries, name)}")
        head, *rest_parts = parts
        return f"{head} — {'; '.join(rest_parts)}" if rest_parts else head


def named(queries: tuple[str, ...], name: Callable[[str], str] = str) -> str:
    """``a, b, c and 4 more``."""
    shown = ", ".join(name(q) for q in queries[:NAMED_QUERIES])
    rest = len(queries) - NAMED_QUERIES
    return shown + (f" and {rest} more" if rest > 0 else "")


def headline(inputs: ReportInputs) -> Headline:
    """The verdict of the run ``inputs`` describe (see the module docstring)."""
    return headline_of(
        inputs.run,
        inputs.comparison,
        inputs.verdicts,
        inputs.gate,
        prog=inputs.prog,
        door=inputs.door,
        choice=inputs.choice,
    )


def headline_of(
    run: RunRecord,
    comparison: Comparison,
    run_verdicts: RunVerdicts,
    gate: ReportGate,
    *,
    prog: str,
    door: Door = "cli",
    choice: BaselineChoice | None = None,
) -> Headline:
    """The verdict of ``run`` as compared and gated (:func:`headline`'s parts)."""
    verdicts = run_verdicts.queries
    known = tuple(v.label for i, v in enumerate(verdicts) if i in gate.known_misses)
    missed = tuple(
        v.label
        for i, v in enumerate(verdicts)
        if v.verdict == "missed" and i not in gate.known_misses
    )
    regressed = tuple(v.label for v in verdicts if v.verdict == "regressed")
    failures = [*gate.failures, *gate.item_failures]
    if door == "pytest" and missed and not gate.subset:
        failures.append(f"{len(missed)} golden quer{'y' if len(missed) == 1 else 'ies'} missed")
    spelled = tuple(spell_flags(f, door) for f in failures)
    not_gated = spell_flags(_not_gated(run, comparison, gate), door) if not spelled else ""
    status: Status = "failed" if spelled else "not gated" if not_gated else "passed"
    return Headline(
        status=status,
        prog=prog,
        failures=spelled,
        regressed=regressed,
        missed=missed,
        known_misses=known,
        why=tuple(spell_flags(line, door) for line in gate.lines),
        not_gated=not_gated,
        baseline=_baseline(comparison, choice),
        changes=_changes(comparison),
    )


def _not_gated(run: RunRecord, comparison: Comparison, gate: ReportGate) -> str:
    """Why a run that did not fail was held to no gate ("" when it was)."""
    if gate.subset:
        return "a subset run: not recorded and not gated"
    if gate.accepting and not gate.applied:
        return "accepted as the baseline: its drops and misses are what is accepted"
    if not gate.applied:
        return f"no gate was asked for ({flag('fail-on-regression')}, {flag('fail-under')})"
    floors = run.gate is not None and bool(run.gate.floors)
    if (comparison.baseline is None or not comparison.compatible) and not floors:
        return "nothing to compare with, so no regression could be checked"
    return ""


def _baseline(comparison: Comparison, choice: BaselineChoice | None) -> str:
    baseline = comparison.baseline
    if baseline is None:
        return "no earlier run to compare with"
    if not comparison.compatible:
        return f"no diff: {comparison.reason}"
    if choice is not None and choice.accepted is not None:
        return f"compared with the accepted baseline {clip_path(choice.accepted)}"
    return f"compared with the run of {display_timestamp(baseline.timestamp)}"


def _changes(comparison: Comparison) -> tuple[str, ...]:
    """What differs from the baseline: the corpus, the golden file, the settings."""
    lines = []
    if comparison.corpus_changed:
        lines.append(f"corpus changed: {comparison.corpus_phrase}")
    if comparison.golden:
        lines.append(f"golden changed: {comparison.golden.describe()}")
    lines += [f"settings changed: {change}" for change in comparison.settings_changes]
    if comparison.left_out:
        lines.append(f"left out: {', '.join(comparison.left_out)}")
    return tuple(lines)
