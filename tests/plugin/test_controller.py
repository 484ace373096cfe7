"""The plugin's session end as a plain function: values in, summary/stderr/exit status out.

No pytest session here: :func:`pytest_groove.plugin.controller.finish` takes a
begun evaluation and its results and returns a :class:`Finished`; the hooks that call it are
exercised through ``pytester`` in tests/plugin/test_run.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.evaluation.history.file import history_path, load_history
from pytest_groove.evaluation.lifecycle import Evaluation
from pytest_groove.evaluation.runs.record import QueryResult, evaluate_query
from pytest_groove.plugin.controller import Finished, finish
from pytest_groove.plugin.unscored import Stop
from pytest_groove.search.hits import SearchHit
from tests.helpers.eval_factories import begun
from tests.helpers.kb_files import golden_yaml, write_notes

GOLDEN = golden_yaml(
    ("ship", "which days do we ship", "deploys.md"),
    ("rotate", "how do tokens get rotated", "tokens.md"),
)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", {".groove-eval.yml": GOLDEN})


def _results(evaluation: Evaluation, *, found: bool) -> list[QueryResult]:
    results = []
    for q in evaluation.plan.golden.queries:
        path = q.expected[0].path if found else "elsewhere.md"
        hits = [SearchHit(rank=1, path=path, heading=None, score=1.0)]
        results.append(evaluate_query(q, hits, evaluation.plan.k_values))
    return results


def _end(
    kb: Path,
    *,
    found: bool = True,
    results: list[QueryResult] | None = None,
    begun_at_all: bool = True,
    interrupted: bool = False,
    exitstatus: int = pytest.ExitCode.OK,
    stop: Stop | None = None,
    unscored: int = 0,
    **options: object,
) -> Finished:
    """The session end of a run over ``kb`` (the evaluation begun as a retriever's)."""
    evaluation = begun(
        kb,
        k=(1, 5),
        prog="groove",
        identity_retriever="tests.fake",
        **options,
    )
    return finish(
        evaluation.plan,
        evaluation if begun_at_all else None,
        _results(evaluation, found=found) if results is None else results,
        interrupted=interrupted,
        exitstatus=exitstatus,
        stop=stop,
        unscored=unscored,
    )


def finish_and_record(done: Finished) -> Finished:
    """The controller's commit of the staged save once the summary is out."""
    if done.pending is not None:
        assert done.pending.commit() is None
    return done


def test_the_run_is_recorded_only_when_committed(kb: Path) -> None:
    done = _end(kb)
    assert done.pending is not None
    assert not history_path(kb).exists()  # staged: written beside, not yet in place
    done.pending.discard()
    assert not history_path(kb).exists()
    assert not [p.name for p in kb.iterdir() if p.name.endswith(".tmp")]


def test_a_complete_run_is_reported_and_recorded(kb: Path) -> None:
    done = finish_and_record(_end(kb))
    assert done.exitstatus == pytest.ExitCode.OK
    assert done.summary is not None and "recall@1" in done.summary
    assert done.stderr == ()
    assert len(load_history(history_path(kb))) == 1


def test_nothing_ran_leaves_the_status_alone(kb: Path) -> None:
    done = _end(kb, results=[], exitstatus=pytest.ExitCode.NO_TESTS_COLLECTED)
    assert done.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    assert done.summary == (
        "groove: no golden query ran (0 of 2); the retrieval gate did not run\n"
    )
    assert not history_path(kb).exists()


def test_nothing_selected_says_the_gate_did_not_run(kb: Path) -> None:
    done = _end(kb, results=[], begun_at_all=False)
    assert done.summary == (
        "groove: no golden query ran (0 of 2); the retrieval gate did not run\n"
    )
    assert done.stderr == () and done.exitstatus == pytest.ExitCode.OK


def test_nothing_ran_under_the_gate_is_impossible_to_miss(kb: Path) -> None:
    done = _end(kb, results=[], begun_at_all=False, fail_on_regression=True)
    assert done.summary == (
        "groove: WARNING: no golden query ran (0 of 2): the retrieval gate asked for by "
        "--groove-fail-on-regression did NOT run\n"
    )


def test_queries_that_ran_and_failed_unscored_are_not_said_not_to_have_run(kb: Path) -> None:
    done = _end(kb, results=[], unscored=2, exitstatus=pytest.ExitCode.TESTS_FAILED)
    assert done.summary == (
        "groove: no golden query was scored (0 of 2): all 2 that ran failed before a "
        "score, see the failures; the retrieval gate did not run\n"
    )
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED


STOP_LINE = (
    "groove: retriever r: none of its 6 hits in the first 3 queries it answered name a "
    "file of the knowledge base kb; nothing was recorded"
)


@pytest.mark.parametrize("scored_before", [False, True], ids=["none-scored", "scored-before"])
def test_a_stopped_run_says_why_once_and_reports_no_partial_run(
    kb: Path, scored_before: bool
) -> None:
    # the queries scored before the stop are no subset the user chose: no aggregate,
    # no "Subset run" footer, nothing recorded; the stopped item's failure sets the status
    done = _end(
        kb,
        results=None if scored_before else [],
        stop=Stop(STOP_LINE),
        exitstatus=pytest.ExitCode.TESTS_FAILED,
        json=kb / "out.json",
    )
    assert done.summary == (
        "groove: the run stopped: retriever r: none of its 6 hits in the first 3 queries "
        "it answered name a file of the knowledge base kb; nothing was recorded and the "
        "retrieval gate did not run\n"
        f"groove: no report was written ({kb / 'out.json'}): the run stopped; a file "
        "already there is from an earlier session\n"
    )
    assert done.stderr == () and done.pending is None
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert not history_path(kb).exists() and not (kb / "out.json").exists()


def test_a_stopped_run_under_the_gate_says_the_gate_did_not_run(kb: Path) -> None:
    done = _end(kb, results=[], stop=Stop(STOP_LINE), fail_on_regression=True)
    assert done.summary is not None
    assert done.summary.startswith("groove: WARNING: the run stopped: retriever r: none")
    assert done.summary.endswith(
        "; nothing was recorded, and --groove-fail-on-regression did NOT run\n"
    )
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED  # never a green stop


def test_a_worker_that_could_not_begin_is_the_usage_error_of_one_process(kb: Path) -> None:
    line = "groove: retriever nosuch:x: could not import nosuch (ModuleNotFoundError: ...)"
    done = _end(kb, results=[], stop=Stop(line, begin=True))
    assert done.summary is None
    assert done.stderr == (
        "ERROR: retriever nosuch:x: could not import nosuch (ModuleNotFoundError: ...)",
    )
    assert done.exitstatus == pytest.ExitCode.USAGE_ERROR


def test_a_regression_under_the_gate_makes_the_status_1(kb: Path) -> None:
    finish_and_record(_end(kb))  # the baseline: every query found
    done = finish_and_record(_end(kb, found=False, fail_on_regression=True))
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert done.summary is not None and "regression gate FAILED" in done.summary
    assert any("--groove-fail-on-regression was set" in line for line in done.stderr)


def test_the_gate_does_not_hide_a_worse_status(kb: Path) -> None:
    finish_and_record(_end(kb))
    done = finish_and_record(
        _end(kb, found=False, fail_on_regression=True, exitstatus=pytest.ExitCode.TESTS_FAILED)
    )
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED


def test_an_interrupted_run_is_reported_but_not_recorded(kb: Path) -> None:
    done = _end(kb, interrupted=True)
    assert done.summary is not None and "interrupted" in done.summary
    assert not history_path(kb).exists()


def test_an_unwritable_json_report_is_an_error_line_and_status_4(kb: Path) -> None:
    target = kb / "report-dir"
    target.mkdir()  # a directory where the JSON file should go
    done = finish_and_record(_end(kb, json=target))
    assert done.exitstatus == pytest.ExitCode.USAGE_ERROR
    assert any(line.startswith("ERROR: could not write the JSON report") for line in done.stderr)
