"""An honest gate: significance beside the deltas, floors, and no quiet way to loosen it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example_kb
from pytest_groove.cli import main
from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.evaluation.finish import EvalOutcome, finish_evaluation
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME, load_history
from pytest_groove.evaluation.runs.record import QueryResult, evaluate_query, format_timestamp
from pytest_groove.evaluation.runs.trust import content_digest
from pytest_groove.search.hits import SearchHit
from tests.helpers.eval_factories import begun, corpus

QUERIES = 20


def golden(count: int = QUERIES) -> str:
    lines = ["queries:"]
    for i in range(count):
        lines += [f"  - id: q{i}", f'    query: "question {i}"', "    expected:"]
        lines += [f'      - path: "doc{i}.md"']
    return "\n".join(lines) + "\n"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / ".groove-eval.yml").write_text(golden(), encoding="utf-8")
    return root


def answers(found: set[int]) -> dict[str, list[SearchHit]]:
    """Query i finds its document first when i is in ``found``, else nothing."""
    out = {}
    for i in range(QUERIES):
        paths = [f"doc{i}.md"] if i in found else ["other.md"]
        out[f"question {i}"] = [SearchHit(rank=1, path=p, heading=None, score=1.0) for p in paths]
    return out


def finish(kb: Path, found: set[int], **options: Any) -> EvalOutcome:
    evaluation = begun(kb, corpus=corpus(3, 7), **options)
    hits = answers(found)
    results: list[QueryResult] = [
        evaluate_query(q, hits[q.query], evaluation.fingerprint.k_values)
        for q in evaluation.plan.golden.queries
    ]
    outcome: EvalOutcome = finish_evaluation(evaluation, results, record=True)
    return outcome


ALL = set(range(QUERIES))


def label(outcome: EvalOutcome) -> str:
    return format_timestamp(outcome.run.timestamp)


def test_every_delta_has_its_p_value_in_the_text_and_the_json(kb: Path) -> None:
    finish(kb, ALL)
    outcome = finish(kb, ALL - {0, 1})  # 2 of 20 queries lost: 0.1 down, p = 0.5
    assert "  MRR        0.900  (↓ 0.100, p=0.500)\n" in outcome.text_report
    assert "with 20 queries, drops under " in outcome.text_report
    assert outcome.json_report["diff_p"]["mrr"] == 0.5
    assert outcome.json_report["diff_p"]["recall_at_k"]["5"] == 0.5


def test_significance_keeps_a_chance_drop_from_failing_the_gate(kb: Path) -> None:
    first = label(finish(kb, ALL))
    loud = finish(kb, ALL - {0, 1}, fail_on_regression=True, baseline=first)
    assert loud.exit_code == 1 and "MRR" in loud.gate_failures
    quiet = finish(kb, ALL - {0, 1}, fail_on_regression=True, significance=0.05, baseline=first)
    assert quiet.exit_code == 0 and quiet.gate_failures == []
    assert any("not counted as regressed" in w and "MRR p=0.500" in w for w in quiet.warnings)
    assert quiet.run.gate is not None and quiet.run.gate.significance == 0.05


def test_significance_lets_a_real_drop_fail(kb: Path) -> None:
    finish(kb, ALL)
    outcome = finish(kb, set(range(10)), fail_on_regression=True, significance=0.05)
    assert outcome.exit_code == 1 and "MRR" in outcome.gate_failures  # p = 2^-10


def test_floors_fail_a_first_run(kb: Path) -> None:
    outcome = finish(kb, ALL - {0, 1, 2}, fail_under="recall@5=0.9,mrr=0.5")
    assert outcome.comparison.baseline is None
    assert outcome.exit_code == 1
    assert outcome.floor_failures == ("recall@5 0.850 < floor 0.9",)
    assert outcome.gate_message is not None
    assert "under its floor (recall@5 0.850 < floor 0.9)" in outcome.gate_message
    assert "--fail-under" in outcome.gate_message
    assert finish(kb, ALL, fail_under="recall@5=0.9").exit_code == 0


def test_floors_come_from_groove_toml_and_a_bad_one_is_refused(kb: Path) -> None:
    (kb / "groove.toml").write_text(
        '[eval]\nfail_under = { "recall@5" = 0.95 }\n', encoding="utf-8"
    )
    assert finish(kb, ALL - {0, 1}).floor_failures == ("recall@5 0.900 < floor 0.95",)
    with pytest.raises(UsageError, match="recall@7, which this run does not measure"):
        finish(kb, ALL, fail_under="recall@7=0.5")


def test_a_threshold_of_one_in_groove_toml_is_named_with_its_file(kb: Path) -> None:
    finish(kb, ALL)
    (kb / "groove.toml").write_text("[eval]\nregression_threshold = 1.0\n", encoding="utf-8")
    outcome = finish(kb, set(), fail_on_regression=True)
    assert outcome.exit_code == 0  # the gate is off ...
    lines = [w for w in outcome.warnings if w.startswith("the gate is looser")]
    assert lines == [  # ... and it says so, naming the setting and the file
        "the gate is looser than the baseline run's: regression_threshold 1 (baseline run: "
        f"0.05) from [eval].regression_threshold in {kb / 'groove.toml'}"
    ]
    assert outcome.json_report["gate_loosened"] == [
        {
            "setting": "regression_threshold",
            "now": "1",
            "baseline": "0.05",
            "source": f"[eval].regression_threshold in {kb / 'groove.toml'}",
        }
    ]


def test_an_ini_threshold_is_named_with_the_ini_file(kb: Path) -> None:
    first = label(finish(kb, ALL))
    ini = "/repo/pytest.ini"
    outcome = finish(kb, ALL, threshold="1", origins=(("threshold", ini),))
    assert any(f"from groove_threshold in {ini}" in w for w in outcome.warnings)
    flag = finish(kb, ALL, threshold="1", baseline=first)
    assert any("from --threshold on the command line" in w for w in flag.warnings)


def test_a_lowered_or_dropped_floor_and_turning_significance_on_are_named(kb: Path) -> None:
    finish(kb, ALL, fail_under="mrr=0.8")
    outcome = finish(kb, ALL, significance=0.05)
    [line] = [w for w in outcome.warnings if w.startswith("the gate is looser")]
    assert "fail_under none (baseline run: mrr=0.8) from the built-in default" in line
    assert "significance 0.05 (baseline run: off) from --significance" in line
    same = finish(kb, ALL, significance=0.05)
    assert not any(w.startswith("the gate is looser") for w in same.warnings)


def test_the_gate_is_stored_with_every_run(kb: Path) -> None:
    finish(kb, ALL, threshold="mrr=0.1", fail_under="mrr=0.5", significance=0.01)
    [stored] = load_history(kb / HISTORY_FILE_NAME)
    assert stored.gate is not None
    assert stored.gate.to_json() == {
        "regression_threshold": 0.05,
        "thresholds": {"mrr": 0.1},
        "fail_under": {"mrr": 0.5},
        "significance": 0.01,
    }


# --------------------------------------------------------------------------- the history


def edit_newest_run(kb: Path, change: Any) -> None:
    """Edit the newest stored run's JSON object by hand, as a person would."""
    path = kb / HISTORY_FILE_NAME
    doc = json.loads(path.read_text(encoding="utf-8"))
    change(doc["runs"][0])
    path.write_text(json.dumps(doc), encoding="utf-8")


def zero_mrr(raw: dict[str, Any]) -> None:
    raw["aggregate"]["mrr"] = 0.0


def nan_mrr(raw: dict[str, Any]) -> None:
    raw["aggregate"]["mrr"] = None  # NaN is stored as null


def zero_mrr_and_drop_the_digest(raw: dict[str, Any]) -> None:
    # deleting the key must not be a cheaper edit than fixing the digest up
    raw["aggregate"]["mrr"] = 0.0
    del raw["digest"]


@pytest.mark.parametrize("change", [zero_mrr, nan_mrr, zero_mrr_and_drop_the_digest])
def test_an_edited_baseline_is_named_and_never_used(kb: Path, change: Any) -> None:
    first = finish(kb, ALL)
    second = finish(kb, ALL)
    edit_newest_run(kb, change)
    runs = load_history(kb / HISTORY_FILE_NAME)
    assert [r.edited for r in runs] == [True, False]
    outcome = finish(kb, set(), fail_on_regression=True)
    assert outcome.comparison.baseline is not None
    assert outcome.comparison.baseline.timestamp == first.run.timestamp
    assert any(label(second) in w and "does not match its content" in w for w in outcome.warnings)
    assert outcome.exit_code == 1  # compared with the honest run, the drop is caught
    # the mark survives the rewrite that saved this run: no laundering by re-saving
    assert [r.edited for r in load_history(kb / HISTORY_FILE_NAME)] == [False, True, False]
    with pytest.raises(GrooveError, match="cannot be used: its digest is missing or does not"):
        finish(kb, ALL, baseline=label(second))


def test_a_forged_future_run_is_named_and_not_chosen(kb: Path) -> None:
    first = finish(kb, ALL)
    finish(kb, ALL)

    def forge(raw: dict[str, Any]) -> None:
        raw["timestamp"] = "2999-01-01T00:00:00Z"
        raw["digest"] = content_digest(raw)  # a careful forger recomputes the digest

    edit_newest_run(kb, forge)
    outcome = finish(kb, ALL)
    assert any("2999-01-01T00:00:00Z" in w and "in the future" in w for w in outcome.warnings)
    baseline = outcome.comparison.baseline
    assert baseline is not None and baseline.timestamp == first.run.timestamp


def test_history_verify_catches_an_edited_run(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    finish(kb, ALL)
    second = finish(kb, ALL)
    assert main(["history", "verify", "--kb-path", str(kb)]) == 0
    assert "2 run(s) in " in capsys.readouterr().out
    edit_newest_run(kb, zero_mrr)
    assert main(["history", "verify", "--kb-path", str(kb)]) == 1
    out = capsys.readouterr().out
    assert f"{label(second)}: its digest is missing or does not match its content" in out
    assert "1 of 2 run(s) in " in out


def test_an_edited_run_cannot_be_frozen(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    finish(kb, ALL)
    second = finish(kb, ALL)
    edit_newest_run(kb, zero_mrr)
    before = (kb / HISTORY_FILE_NAME).read_bytes()
    assert main(["history", "freeze", label(second), "--kb-path", str(kb)]) == 1
    err = capsys.readouterr().err
    assert f"the run {label(second)} in " in err
    assert "cannot be the frozen baseline: its digest is missing or does not match" in err
    assert (kb / HISTORY_FILE_NAME).read_bytes() == before


def test_history_verify_fails_on_a_file_it_could_not_read_whole(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    finish(kb, ALL)
    finish(kb, ALL)
    path = kb / HISTORY_FILE_NAME
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n{") + 30])  # the older run's line cut off
    assert main(["history", "verify", "--kb-path", str(kb)]) == 1
    captured = capsys.readouterr()
    assert "skipped 1 of 2 stored run(s)" in captured.err
    assert f"{path} is damaged (see the warning): 1 run(s) read, 0 of them untrusted" in (
        captured.out
    )


def test_the_gate_compares_with_the_newest_run_of_a_merged_history(kb: Path) -> None:
    first = finish(kb, ALL)
    second = finish(kb, ALL)
    path = kb / HISTORY_FILE_NAME
    lines = path.read_bytes().split(b"\n")
    newer, older = (i for i, line in enumerate(lines) if line.startswith(b'{"'))
    # a conflict resolved by keeping both sides, the older branch's run on top
    lines[newer], lines[older] = lines[older] + b",", lines[newer].removesuffix(b",")
    path.write_bytes(b"\n".join(lines))
    outcome = finish(kb, set(), fail_on_regression=True)
    baseline = outcome.comparison.baseline
    assert (
        baseline is not None and baseline.timestamp == second.run.timestamp != first.run.timestamp
    )
    assert outcome.exit_code == 1


def test_history_delete_removes_one_run(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = finish(kb, ALL)
    second = finish(kb, ALL)
    assert main(["history", "delete", label(second), "--kb-path", str(kb)]) == 0
    assert "deleted the run of " in capsys.readouterr().out
    assert [r.timestamp for r in load_history(kb / HISTORY_FILE_NAME)] == [first.run.timestamp]
    assert main(["history", "delete", "2999", "--kb-path", str(kb)]) == 1


def test_history_size_counts_per_fingerprint(kb: Path) -> None:
    (kb / "groove.toml").write_text("[eval]\nhistory_size = 2\n", encoding="utf-8")
    main_line = [finish(kb, ALL) for _ in range(2)]
    for model in ("a", "b", "c", "d", "e"):
        begun_run = begun(kb, corpus=corpus(3, 7), fingerprint_changes={"model": model})
        hits = answers(ALL)
        results = [
            evaluate_query(q, hits[q.query], begun_run.fingerprint.k_values)
            for q in begun_run.plan.golden.queries
        ]
        finish_evaluation(begun_run, results, record=True)
    kept = load_history(kb / HISTORY_FILE_NAME)
    assert len(kept) == 7
    assert {o.run.timestamp for o in main_line} <= {r.timestamp for r in kept}


def test_the_html_report_shows_the_p_value_beside_the_delta(kb: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    finish(kb, ALL)
    page = tmp_path / "report.html"
    finish(kb, ALL - {0, 1}, html=page)
    text = page.read_text(encoding="utf-8")
    assert "↓ 0.100, p=0.500</td>" in text
    assert "The verdict is the golden item's outcome under pytest" in text
    # under significance a regressed query fails no item: the note does not say it does
    finish(kb, ALL - {0, 1, 2}, html=page, significance=0.05)
    text = page.read_text(encoding="utf-8")
    assert "The verdict is the golden item's outcome" not in text
    assert "Under the significance level 0.05 this run was held to, a regressed query " in text


def unfreeze_by_hand(kb: Path) -> None:
    """Delete the history's one-line frozen-baseline marker, as a hand edit would."""
    path = kb / HISTORY_FILE_NAME
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(x for x in lines if not x.startswith('  "baseline": ')), "utf-8")


def test_a_frozen_baseline_unfrozen_by_hand_is_named_once(kb: Path) -> None:
    frozen = finish(kb, ALL, freeze_baseline=True)
    assert finish(kb, set(range(10))).exit_code == 0  # compared with the frozen run
    unfreeze_by_hand(kb)
    third = finish(kb, set(range(10)), fail_on_regression=True)
    assert third.exit_code == 0  # the worse run is now the baseline: the drop is unseen...
    [line] = [w for w in third.warnings if w.startswith("the gate is looser")]
    assert f"frozen_baseline none (baseline run: {label(frozen)})" in line  # ...but said
    assert f"`groove history freeze {label(frozen)} --kb-path {kb}` freezes it again" in line
    assert [i.setting for i in third.comparison.gate_loosened] == ["frozen_baseline"]
    again = finish(kb, set(range(10)))
    assert not any(w.startswith("the gate is looser") for w in again.warnings)


def test_a_deleted_frozen_run_is_named_and_another_frozen_one_is_no_loosening(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frozen = finish(kb, ALL, freeze_baseline=True)
    second = finish(kb, ALL)
    assert main(["history", "delete", label(frozen), "--kb-path", str(kb)]) == 0
    [line] = [w for w in finish(kb, ALL).warnings if w.startswith("the gate is looser")]
    assert "which no longer holds that run (deleted)" in line
    finish(kb, ALL, freeze_baseline=True)
    assert main(["history", "freeze", label(second), "--kb-path", str(kb)]) == 0
    capsys.readouterr()
    after = finish(kb, ALL)  # compared with the run frozen on purpose
    assert after.comparison.baseline is not None
    assert after.comparison.baseline.timestamp == second.run.timestamp
    assert after.comparison.gate_loosened == ()


def test_a_retry_compared_with_the_run_that_failed_its_gate_says_so(kb: Path) -> None:
    good = finish(kb, ALL)
    failed = finish(kb, set(range(10)), fail_on_regression=True)
    assert failed.exit_code == 1
    [stored_failed, _] = load_history(kb / HISTORY_FILE_NAME)
    assert stored_failed.gate is not None and "MRR" in stored_failed.gate.failed
    # the retry is compared with the failed run (every run is recorded, as the seed
    # says), so it passes -- and says what it is compared with
    retry = finish(kb, set(range(10)), fail_on_regression=True)
    assert retry.exit_code == 0
    [line] = [w for w in retry.warnings if "failed its own gate" in w]
    assert line.startswith(f"the baseline run {label(failed)} failed its own gate (")
    assert (
        f"`groove history freeze {label(good)} --kb-path {kb}` compares with the last run "
        "that passed it"
    ) in line
    # a baseline named on purpose (or frozen) is a choice: no such line
    frozen = finish(kb, set(range(10)), baseline=label(failed))
    assert not any("failed its own gate" in w for w in frozen.warnings)


def test_a_pytest_run_failed_by_one_regressed_item_warns_its_retry(kb: Path) -> None:
    finish(kb, ALL, threshold="0.1")
    # one query of twenty drops: the averages hold (0.05 is under 0.1), the item fails
    evaluation = begun(kb, corpus=corpus(3, 7), fail_on_regression=True, threshold="0.1")
    hits = answers(ALL - {0})
    results = [
        evaluate_query(q, hits[q.query], evaluation.fingerprint.k_values)
        for q in evaluation.plan.golden.queries
    ]
    failed = finish_evaluation(evaluation, results, record=True, door="pytest")
    [stored, _] = load_history(kb / HISTORY_FILE_NAME)
    assert stored.gate is not None and stored.gate.failed == ("query q0 regressed",)
    retry = finish(kb, ALL - {0}, fail_on_regression=True, threshold="0.1")
    [line] = [w for w in retry.warnings if "failed its own gate" in w]
    assert line.startswith(f"the baseline run {label(failed)} failed its own gate (query q0")


def test_a_floor_failure_is_not_a_failed_gate_a_retry_is_warned_of(kb: Path) -> None:
    # floors are absolute: every run checks them again, nothing goes uncounted
    assert finish(kb, ALL - {0}, fail_under="mrr=0.99").exit_code == 1
    again = finish(kb, ALL - {0}, fail_under="mrr=0.99")
    assert again.exit_code == 1
    assert not any("failed its own gate" in w for w in again.warnings)


def test_freezing_an_experiment_names_the_move_not_a_hand_edit(kb: Path) -> None:
    frozen = finish(kb, ALL, freeze_baseline=True)
    finish(kb, ALL)
    finish(kb, ALL, k=(1, 3), freeze_baseline=True)  # other settings: the marker moves
    [line] = [w for w in finish(kb, ALL).warnings if w.startswith("the gate is looser")]
    assert "of other settings, so runs of these settings are compared with their newest" in line
    assert "removed by hand" not in line
    assert f"`groove history freeze {label(frozen)} --kb-path {kb}`" in line


def test_history_diff_names_an_edited_run_and_a_gated_diff_refuses_it(
    kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = finish(kb, ALL)
    second = finish(kb, ALL)
    edit_newest_run(kb, zero_mrr)  # the newer run's MRR forged down: an invented drop
    before = (kb / HISTORY_FILE_NAME).read_bytes()
    diff = ["history", "diff", label(first), label(second), "--kb-path", str(kb)]
    assert main([*diff, "--fail-on-regression"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"Error: --fail-on-regression: RUN_B {label(second)} in {kb / HISTORY_FILE_NAME} "
        "cannot be trusted: its digest is missing or does not match its content"
    )
    # shown without the gate, with the warning that these are not measured numbers
    assert main(diff) == 0
    captured = capsys.readouterr()
    assert f"warning: RUN_B {label(second)} cannot be trusted" in captured.err
    assert "the diff below is not what was measured" in captured.err
    assert (kb / HISTORY_FILE_NAME).read_bytes() == before


#: a note quoting the `intermittent-failures` query: its answer drops from rank 1 to 2
RETRY_NOTE = (
    "---\ntitle: Retry notes\n---\n\n## Retries\n\n"
    "A check passes on the second attempt but failed the first time: we call that a retry.\n"
)


def test_a_significance_level_from_groove_toml_is_named_with_its_file(tmp_path: Path) -> None:
    """The level set in groove.toml is not "--significance": the warnings name the file,
    and a single query's drop fails `groove eval` no more than it fails pytest."""

    from tests.helpers.cli_invoke import invoke

    kb = tmp_path / "kb"
    copy_example_kb(kb)
    assert invoke("eval", "--kb-path", kb, "--model", "hash").returncode == 0
    (kb / "practices" / "retries.md").write_text(RETRY_NOTE, encoding="utf-8")
    (kb / "groove.toml").write_text("[eval]\nsignificance = 0.05\n", encoding="utf-8")
    done = invoke("eval", "--kb-path", kb, "--model", "hash", "--fail-on-regression")
    assert done.returncode == 0, done.stderr
    assert "  ↓ intermittent-failures " in done.stdout
    source = f"[eval].significance in {kb / 'groove.toml'}"
    assert (
        "groove eval: warning: dropped by more than the threshold but not counted as regressed "
        f"under significance 0.05 from {source} (recall@1 p=1.00, nDCG@1 p=1.00): drops like "
        "these cannot be told from chance\n"
    ) in done.stderr
    assert (
        "1 query dropped since the baseline (intermittent-failures; see the per-query block): "
        f"under significance 0.05 from {source}, one query's drop fails neither its pytest "
        "item nor the run"
    ) in done.stderr
