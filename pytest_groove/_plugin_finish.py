"""Session end on the controller: report, history, JSON, findings, gate.

Everything here runs once, in ``pytest_sessionfinish`` of the controller (or the
single process without xdist).  The work itself is
:func:`pytest_groove.evaluation.session.finish_evaluation` -- the same function
``groove eval`` calls -- so the plugin only decides what counts as a complete run,
where each piece of output goes, and what the session's exit status becomes:

- the text report goes to the terminal summary (``pytest_terminal_summary``);
- notes, history warnings, the findings block and the gate message go to stderr,
  written after the summary section (queued until ``pytest_terminal_summary``, or
  ``pytest_unconfigure`` when there is no terminal);
- a regression under ``--groove-fail-on-regression`` turns an otherwise passing
  session into exit status 1 (``ExitCode.TESTS_FAILED``); nothing is raised from a
  hook, because pytest does not catch exceptions around ``pytest_sessionfinish``;
- an error at this stage (the history refused or not writable, the JSON or HTML
  report not writable) is printed as one ``ERROR:`` line and the exit status becomes
  4, like a usage error found earlier.

Only a complete run is recorded and gated: every golden query produced a result and
the session was not interrupted.  A ``-k`` / ``-m`` / ``--lf`` selection, ``-x`` or
Ctrl-C gives a subset that is reported against the same queries of the baseline, but
neither written to the history nor allowed to fail the session.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import pytest

from pytest_groove._plugin_options import pytest_flag_names
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.session import EvalContext, EvalFlags, finish_evaluation

if TYPE_CHECKING:
    from pytest_groove._plugin_session import GrooveSession

#: exit statuses after which a run counts as interrupted, whatever results arrived
_BROKEN = (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)


def flush_stderr(state: GrooveSession) -> None:
    """Write the messages queued for stderr (after the terminal's own output so far).

    They are queued rather than written in ``pytest_sessionfinish`` because that
    runs before pytest ends the progress line, so a message would be glued to it.
    """
    if not state.pending_stderr:
        return
    sys.stdout.flush()
    for text in state.pending_stderr:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
    state.pending_stderr.clear()
    sys.stderr.flush()


def _use_color(config: pytest.Config) -> bool:
    with contextlib.suppress(Exception):
        return bool(config.get_terminal_writer().hasmarkup)
    return False


def finish(state: GrooveSession, session: pytest.Session, exitstatus: int) -> None:
    """Evaluate what ran, fill ``state.summary`` and set ``session.exitstatus``."""
    from pytest_groove._plugin_session import PROG, ordered_results

    def _stderr(text: str) -> None:
        state.pending_stderr.append(text)

    results = ordered_results(state)
    total = len(state.names)
    if not results:
        if state.options.kb_from_cli and state.prepared is not None:
            state.summary = f"{PROG}: no golden query produced a result (0 of {total})\n"
        return
    prepared = state.prepared
    if prepared is None:  # pragma: no cover - items cannot run without preparing
        return
    interrupted = state.interrupted or exitstatus in _BROKEN
    complete = len(results) == total and not interrupted

    for note in state.setup.notes:
        _stderr(f"{PROG}: {note}")

    engine = state.engine
    opts = state.options
    ctx = EvalContext(
        kb=state.kb,
        golden=state.golden,
        fingerprint=prepared.fingerprint,
        history=prepared.history,
        history_warnings=prepared.history_warnings,
        corpus=None,
        settings=state.setup.settings.eval,
        flags=EvalFlags(
            no_history=opts.no_history,
            no_diff=opts.no_diff,
            fail_on_regression=opts.fail_on_regression,
            freeze_baseline=opts.freeze_baseline,
            color=_use_color(state.config),
            json_path=opts.json_path,
            html_path=opts.html_path,
        ),
        prog=PROG,
        fail_flag=pytest_flag_names("--fail-on-regression"),
    )
    try:
        if engine is not None:
            # Corpus and quote scan read one snapshot of the index the searches used;
            # nothing writes the index during the session (it was brought up to date
            # before the first search).
            with engine.read_snapshot():
                ctx.corpus = engine.corpus_snapshot()
                ctx.chunk_texts = engine.iter_chunk_texts()
                outcome = finish_evaluation(ctx, results, record=complete)
        else:
            outcome = finish_evaluation(ctx, results, record=complete)
    except GrooveError as exc:
        _stderr(f"ERROR: {pytest_flag_names(exc.message)}")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return

    summary = outcome.text_report
    if interrupted:
        summary += f"{PROG}: the session was interrupted, so this run is not recorded.\n"
    if outcome.gate_failures:
        summary += (
            f"{PROG}: regression gate FAILED ({', '.join(outcome.gate_failures)} dropped by "
            f"more than {ctx.settings.regression_threshold:g}); exit status 1\n"
        )
    state.summary = summary

    for warning in outcome.warnings:
        _stderr(f"{PROG}: warning: {pytest_flag_names(warning)}")
    if outcome.findings_warning:
        _stderr(outcome.findings_warning)
    if outcome.gate_message:
        _stderr(outcome.gate_message)
    if outcome.error is not None:
        _stderr(f"ERROR: {pytest_flag_names(outcome.error)}")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    elif outcome.gate_failures and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
