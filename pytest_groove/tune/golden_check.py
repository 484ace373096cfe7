"""Before tune measures anything: the golden set against the index, as ``groove eval`` checks it.

An expected path that is not in the index, or a heading no chunk of its file carries,
would score 0 under every condition and count as an ordinary query.  ``groove eval``
refuses such a golden file before its first search
(:func:`~pytest_groove.evaluation.lifecycle.begin_evaluation`, which runs
:func:`~pytest_groove.evaluation.golden.expected_check.check_before_search`); tune runs that
very step, as ``groove eval --no-history`` would (tune reads no history, so no stored
run can excuse a deleted answer), and so stops with the same line and exit status.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_groove.engine.searcher import EngineSearcher
from pytest_groove.evaluation.lifecycle import begin_evaluation

if TYPE_CHECKING:
    from pytest_groove.engine.builtin import Engine
    from pytest_groove.evaluation.plan import EvalPlan


def check_golden_against_index(plan: EvalPlan, engine: Engine) -> None:
    """Raise :class:`~pytest_groove.errors.GrooveError` (one line, exit 1) when an
    expected entry names nothing the index holds, or the KB has no indexed document."""
    no_history = replace(plan, options=replace(plan.options, no_history=True))
    begin_evaluation(no_history, EngineSearcher(engine, plan.settings))
