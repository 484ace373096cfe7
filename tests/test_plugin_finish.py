"""The plugin's session end as a plain function: values in, summary/stderr/exit status out.

No pytest session here: :func:`pytest_groove.plugin.controller.finish` takes a
:class:`SessionEnd` and returns a :class:`Finished`; the hooks that call it are
exercised through ``pytester`` in test_plugin_run.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_groove.evaluation.golden import load_golden
from pytest_groove.evaluation.history import choose_baseline, history_path, load_history
from pytest_groove.evaluation.records import GoldenSet
from pytest_groove.evaluation.run import Fingerprint, QueryResult, evaluate_query
from pytest_groove.evaluation.setup import EvalRequest, EvalSetup, resolve_eval_setup
from pytest_groove.options import RunOptions
from pytest_groove.plugin.controller import Finished, SessionEnd, finish
from pytest_groove.plugin.session import Prepared
from pytest_groove.search.hits import SearchHit

GOLDEN = """\
queries:
  - id: ship
    query: "which days do we ship"
    expected:
      - path: "deploys.md"
  - id: rotate
    query: "how do tokens get rotated"
    expected:
      - path: "tokens.md"
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    return kb


def _setup(kb: Path) -> tuple[EvalSetup, GoldenSet]:
    setup = resolve_eval_setup(EvalRequest(kb=kb, k_values=(1, 5)))
    return setup, load_golden(setup.golden_path, kb)


def _results(setup: EvalSetup, golden: GoldenSet, *, found: bool) -> list[QueryResult]:
    results = []
    for q in golden.queries:
        path = q.expected[0].path if found else "elsewhere.md"
        hits = [SearchHit(rank=1, path=path, heading=None, score=1.0)]
        results.append(evaluate_query(q, hits, setup.k_values))
    return results


def _prepared(setup: EvalSetup, golden: GoldenSet, *, history: bool = True) -> Prepared:
    fingerprint = Fingerprint.build(
        "custom", None, setup.limit, setup.k_values, golden.hash, setup.settings.search, None,
        retriever="tests.fake",
    )  # fmt: skip
    runs = load_history(history_path(setup.kb)) if history else []
    return Prepared(
        fingerprint=fingerprint,
        choice=choose_baseline(runs, fingerprint) if history else None,
        baseline_queries={},
        history=runs,
    )


def _end(kb: Path, *, found: bool = True, **changes: object) -> SessionEnd:
    setup, golden = _setup(kb)
    end = SessionEnd(
        setup=setup,
        golden=golden,
        run=RunOptions(),
        results=_results(setup, golden, found=found),
        prepared=_prepared(setup, golden),
        kb_from_cli=True,
        interrupted=False,
        exitstatus=pytest.ExitCode.OK,
    )
    return replace(end, **changes)  # type: ignore[arg-type]


def finish_and_record(end: SessionEnd) -> Finished:
    """:func:`finish`, then the save the controller commits once the summary is out."""
    done = finish(end)
    if done.pending is not None:
        assert done.pending.commit() is None
    return done


def test_the_run_is_recorded_only_when_committed(kb: Path) -> None:
    done = finish(_end(kb))
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
    done = finish(_end(kb, results=[], exitstatus=pytest.ExitCode.NO_TESTS_COLLECTED))
    assert done.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    assert done.summary == "groove: no golden query produced a result (0 of 2)\n"
    assert not history_path(kb).exists()


def test_nothing_prepared_prints_nothing(kb: Path) -> None:
    done = finish(_end(kb, results=[], prepared=None))
    assert (done.summary, done.stderr) == (None, ())


def test_a_regression_under_the_gate_makes_the_status_1(kb: Path) -> None:
    finish_and_record(_end(kb))  # the baseline: every query found
    setup, golden = _setup(kb)
    worse = _end(
        kb,
        found=False,
        prepared=_prepared(setup, golden),
        run=RunOptions(fail_on_regression=True),
    )
    done = finish_and_record(worse)
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert done.summary is not None and "regression gate FAILED" in done.summary
    assert any("--groove-fail-on-regression was set" in line for line in done.stderr)


def test_the_gate_does_not_hide_a_worse_status(kb: Path) -> None:
    finish_and_record(_end(kb))
    setup, golden = _setup(kb)
    done = finish_and_record(
        _end(
            kb,
            found=False,
            prepared=_prepared(setup, golden),
            run=RunOptions(fail_on_regression=True),
            exitstatus=pytest.ExitCode.TESTS_FAILED,
        )
    )
    assert done.exitstatus == pytest.ExitCode.TESTS_FAILED


def test_an_interrupted_run_is_reported_but_not_recorded(kb: Path) -> None:
    done = finish(_end(kb, interrupted=True))
    assert done.summary is not None and "interrupted" in done.summary
    assert not history_path(kb).exists()


def test_an_unwritable_json_report_is_an_error_line_and_status_4(kb: Path) -> None:
    target = kb / "report-dir"
    target.mkdir()  # a directory where the JSON file should go
    done = finish_and_record(_end(kb, run=RunOptions(json=target)))
    assert done.exitstatus == pytest.ExitCode.USAGE_ERROR
    assert any(line.startswith("ERROR: could not write the JSON report") for line in done.stderr)
