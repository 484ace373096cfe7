"""What the session end says when there is no run to report: no golden query was
scored, or the golden queries stopped at a line every later one would repeat.

The controller (``controller.py``) says these lines in place of the text report; under
xdist the stop comes from a worker, on the reports of its golden items
(``runner.REPORT_STOPPED``), and the controller says the same as a single process.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_groove.engine.searcher import NOT_RECORDED
from pytest_groove.evaluation.plan import EvalPlan
from pytest_groove.evaluation.reports.formats import report_files
from pytest_groove.plugin.runner import PROG


def gates_asked(plan: EvalPlan) -> list[str]:
    """The gates this session was asked to apply, as the warnings name them."""
    asked = []
    if plan.options.fail_on_regression:
        asked.append("--groove-fail-on-regression")
    if plan.gate.floors.pairs:
        asked.append(f"the floors ({plan.gate.floors.describe()})")
    return asked


#: said when a worker could not build the retriever the controller had built (to learn
#: its name): the likeliest cause is a retriever that holds its store exclusively
BUILT_HERE_HINT = (
    "; the xdist controller built it before the workers (it does so to learn the "
    "retriever's name): if it holds its store exclusively (a lock, Qdrant's local path "
    "mode), run without -n, or pass --groove-retriever-name and give each worker its own store"
)
#: said when a worker could not build the retriever another worker built and searched with
BUILT_ELSEWHERE_HINT = (
    "; another xdist worker built it and searched: if it holds its store exclusively (a "
    "lock, Qdrant's local path mode), only one process can open it: run without -n, or "
    "give each worker its own store"
)


@dataclass(frozen=True)
class Stop:
    """Why the golden queries stopped before the end, in this process or a worker."""

    #: the one line the first stopped item failed with (``groove: ...``)
    line: str
    #: a process could not begin to search (its retriever or index failed to open):
    #: a usage error, as in a single process, where that stops the session at once
    begin: bool = False

    @property
    def reason(self) -> str:
        """The line without the plugin's prefix and the stop's own "nothing recorded"
        (the summary says that once)."""
        reason = self.line.removeprefix(f"{PROG}: ").removesuffix(NOT_RECORDED)
        return reason.removesuffix(" Nothing was recorded.")


def nothing_ran_line(plan: EvalPlan, unscored: int = 0) -> str:
    """Said when the session scored no golden query: whatever else passed, the gate did not.

    Other tests may have run (``-k``, ``-m "not groove"``, ``--ignore``, a conftest's
    ``collect_ignore`` or skips), so an exit status 0 would otherwise read as "retrieval
    is fine".  Golden items that ran and failed before a score (``unscored``) are
    counted, not said not to have run.  Under ``--groove-fail-on-regression`` the line
    says so in capitals: it is the last line the groove section prints.
    """
    total = len(plan.golden.queries)
    what = f"no golden query ran (0 of {total})"
    if unscored:
        what = (
            f"no golden query was scored (0 of {total}): "
            f"{'the one' if unscored == 1 else f'all {unscored}'} that ran failed before "
            "a score, see the failures"
        )
    line = f"{PROG}: {what}; the retrieval gate did not run"
    if plan.options.fail_on_regression:
        line = (
            f"{PROG}: WARNING: {what}: the retrieval gate asked for by "
            "--groove-fail-on-regression did NOT run"
        )
    return line + "\n"


def stopped_line(plan: EvalPlan, stop: Stop) -> str:
    """The summary of a run whose golden queries stopped: why, and that nothing was
    recorded or gated (in capitals when a gate was asked for)."""
    asked = gates_asked(plan)
    # a reason that asks a question ends it: the rest is a sentence of its own
    then = " Nothing" if stop.reason.endswith("?") else "; nothing"
    if asked:
        return (
            f"{PROG}: WARNING: the run stopped: {stop.reason}{then} was recorded, and "
            f"{' and '.join(asked)} did NOT run\n"
        )
    return (
        f"{PROG}: the run stopped: {stop.reason}{then} was recorded and the retrieval "
        "gate did not run\n"
    )


def no_report_line(plan: EvalPlan, why: str = "no golden query was scored") -> str:
    """Said when report files were asked for and none was written (``why``): a file
    already at such a path (a CI artifact of an earlier session) must not pass for
    this one's."""
    asked = [str(path) for _fmt, path in report_files(plan.options)]
    if not asked:
        return ""
    return (
        f"{PROG}: no report was written ({', '.join(asked)}): {why}; "
        "a file already there is from an earlier session\n"
    )
