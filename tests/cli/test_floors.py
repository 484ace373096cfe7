"""``groove floors --raise``: the floors ratchet up, the file keeps its comments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLE_KB
from pytest_groove.cli import main
from pytest_groove.evaluation.floor_raise import floor_text, respelled, round_down
from pytest_groove.evaluation.runs.record import format_timestamp
from pytest_groove.scoring.floors import parse_floors
from tests.evaluation.gate.test_honest_gate import ALL, finish, kb  # noqa: F401  (the fixture)
from tests.helpers.kb_files import golden_yaml

COMMENTED = """\
# groove settings for the docs KB -- reviewed in PR #12
[eval]
k_values = [1, 5, 10]   # the cut-offs we report

# floors: CI fails under these (raised by `groove floors --raise`)
[eval.fail_under]
"recall@5" = 0.50   # was 0.4 before the reranker
mrr = 0.99          # aspirational: never lowered
"ndcg@10" = 0.3

[search]
# keep the defaults
"""


def test_raise_keeps_the_file_byte_identical_outside_the_changed_numbers(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = kb / "groove.toml"
    config.write_text(COMMENTED, encoding="utf-8")
    finish(kb, ALL - {0, 1, 2})  # recall@5 = MRR = nDCG@10 = 0.85
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 0
    out = capsys.readouterr().out
    assert "recall@5: floor 0.5, measured 0.850 -> raised to 0.85" in out
    assert "MRR: floor 0.99, measured 0.850\n" in out  # never lowered
    assert "raised 2 floor(s) in " in out
    expected = COMMENTED.replace('"recall@5" = 0.50', '"recall@5" = 0.85').replace(
        '"ndcg@10" = 0.3', '"ndcg@10" = 0.85'
    )
    assert config.read_text(encoding="utf-8") == expected
    # again: nothing higher, nothing written
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 0
    assert "no floor to raise" in capsys.readouterr().out
    assert config.read_text(encoding="utf-8") == expected


def test_without_raise_nothing_is_written_and_the_string_form_is_edited_too(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = kb / "groove.toml"
    text = '[eval]\nfail_under = "recall@5=0.5,mrr=0.9"  # floors\n'
    config.write_text(text, encoding="utf-8")
    finish(kb, ALL - {0, 1, 2})
    assert main(["floors", "--kb-path", str(kb)]) == 0
    assert "--raise would raise it to 0.85" in capsys.readouterr().out
    assert config.read_text(encoding="utf-8") == text
    assert main(["floors", "--kb-path", str(kb), "--raise", "--step", "0.1"]) == 0
    assert config.read_text(encoding="utf-8") == (
        '[eval]\nfail_under = "recall@5=0.8,mrr=0.9"  # floors\n'
    )


def test_no_floors_or_no_run_is_one_clear_line(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["floors", "--kb-path", str(kb)]) == 1
    assert "no groove.toml in " in capsys.readouterr().err
    (kb / "groove.toml").write_text("[eval]\nfail_under = { mrr = 0.5 }\n", encoding="utf-8")
    assert main(["floors", "--kb-path", str(kb)]) == 1
    assert "no recorded run to raise the floors to" in capsys.readouterr().err


def test_round_down() -> None:
    assert round_down(0.8567, 0.01) == 0.85
    assert round_down(0.85, 0.01) == 0.85
    assert round_down(0.8567, 0.05) == 0.85
    assert round_down(1.0, 0.01) == 1.0


@settings(max_examples=300, deadline=None)
@given(
    measured=st.floats(0.0, 1.0),
    step=st.one_of(
        st.sampled_from([0.5, 0.25, 0.1, 0.05, 0.01, 0.005, 0.001, 1e-7, 1e-9, 1e-12]),
        st.floats(1e-12, 0.5),
    ),
)
def test_a_raised_floor_never_reads_back_above_what_was_measured(
    measured: float, step: float
) -> None:
    # a floor above the measured value fails the next unchanged run; once, a floor
    # rounded down to 1e-7 was written with six digits (0.714286 > 0.7142857...)
    floor = round_down(measured, step)
    assert 0.0 <= floor <= measured
    assert measured - floor < step + 1e-9
    assert float(floor_text(floor)) == floor
    written = respelled("recall@5=0.5", {"recall@5": floor})
    assert dict(parse_floors(written).pairs)["recall@5"] <= measured


def test_a_floor_is_written_in_full() -> None:
    assert floor_text(round_down(5 / 7, 1e-7)) == "0.7142857"
    assert floor_text(0.85) == "0.85"
    assert floor_text(1.0) == "1"
    assert respelled("recall@5=0.5", {"recall@5": 0.7142857}) == "recall@5=0.7142857"


def test_raise_in_the_string_form_changes_only_the_raised_numbers(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/cli.md: only the changed numbers differ -- the spaces after the commas, the
    spelling of the names, a floor that stays (``0.90``) and the quotes as written."""
    config = kb / "groove.toml"
    finish(kb, ALL - {0, 1, 2})  # recall@5 = MRR = nDCG@10 = 0.85
    for written, raised in (
        (
            '[eval]\nfail_under = "recall@5=0.5, MRR = 0.90 ,nDCG@10=0.10"  # floors\n',
            '[eval]\nfail_under = "recall@5=0.85, MRR = 0.90 ,nDCG@10=0.85"  # floors\n',
        ),
        (
            "[eval]\nfail_under = 'recall@5 = 0.5,  mrr=0.9'\n",
            "[eval]\nfail_under = 'recall@5 = 0.85,  mrr=0.9'\n",
        ),
    ):
        config.write_text(written, encoding="utf-8")
        assert main(["floors", "--kb-path", str(kb), "--raise"]) == 0
        assert "raised" in capsys.readouterr().out
        assert config.read_text(encoding="utf-8") == raised


@pytest.mark.parametrize("floor", ["map=0.5", "recall@3=0.2"])
def test_a_floor_the_latest_run_did_not_measure_is_refused_not_read_as_0(
    kb: Path,  # noqa: F811
    floor: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    finish(kb, ALL)
    config = kb / "groove.toml"
    config.write_text(f'[eval]\nfail_under = "{floor}"\n', encoding="utf-8")
    before = config.read_bytes()
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 1
    err = capsys.readouterr().err
    key = floor.partition("=")[0]
    assert f"[eval].fail_under names {key}, which the latest run (" in err
    assert "measured 0.000" not in err
    assert config.read_bytes() == before


def test_the_config_is_named_as_the_command_line_gave_it(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (kb / "groove.toml").write_text(COMMENTED, encoding="utf-8")
    finish(kb, ALL)
    monkeypatch.chdir(kb.parent)
    relative = Path(kb.name)
    assert main(["floors", "--kb-path", str(relative)]) == 0
    assert capsys.readouterr().out.startswith(f"floors in {relative / 'groove.toml'}, against")
    assert main(["floors", "--kb-path", str(relative), "--raise"]) == 0
    assert f"raised 3 floor(s) in {relative / 'groove.toml'}\n" in capsys.readouterr().out
    elsewhere = kb.parent / "ci.toml"
    elsewhere.write_text(COMMENTED, encoding="utf-8")
    assert main(["floors", "--kb-path", str(kb), "--config", "ci.toml"]) == 0
    assert capsys.readouterr().out.startswith("floors in ci.toml, against")


#: a one-query smoke set that the hash model answers at rank 1: every figure 1.0
SMOKE = golden_yaml(
    (
        "undo-bad-release",
        "errors spiked right after a deploy, how do I go back to the old build",
        "ops/rollback.md",
    )
)


def test_floors_are_raised_to_the_main_lines_run_not_a_one_off_of_another_golden_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    folder = tmp_path / "kb"
    shutil.copytree(EXAMPLE_KB, folder, ignore=shutil.ignore_patterns(".groove*"))
    shutil.copyfile(EXAMPLE_KB / ".groove-eval.yml", folder / ".groove-eval.yml")
    (folder / "groove.toml").write_text('[eval]\nfail_under = "mrr=0.1"\n', encoding="utf-8")
    smoke = tmp_path / "smoke.yml"
    smoke.write_text(SMOKE, encoding="utf-8")
    assert main(["eval", "--kb-path", str(folder), "--model", "hash"]) == 0
    capsys.readouterr()
    assert main(["eval", "--kb-path", str(folder), "--model", "hash", "--golden", str(smoke)]) == 0
    assert "MRR        1.000" in capsys.readouterr().out
    assert main(["floors", "--kb-path", str(folder), "--raise"]) == 0
    out = capsys.readouterr().out
    # the smoke run's 1.000 would make the next ordinary run fail its own floor
    assert "(1 newer run(s) of another golden file passed over)" in out
    assert "-> raised to 1\n" not in out
    assert main(["eval", "--kb-path", str(folder), "--model", "hash", "--fail-on-regression"]) == 0
    # a golden file edited since its last run has no run to raise the floors to
    golden = folder / ".groove-eval.yml"
    golden.write_text(golden.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert main(["floors", "--kb-path", str(folder)]) == 1
    assert "measured the golden file" in capsys.readouterr().err


def test_without_a_configured_golden_file_the_newest_run_is_used(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the golden file is named on each command line: the floors follow the newest run
    (kb / "groove.toml").write_text('[eval]\nfail_under = "mrr=0.5"\n', encoding="utf-8")
    finish(kb, ALL - {0, 1, 2})
    (kb / ".groove-eval.yml").rename(kb.parent / "golden-elsewhere.yml")
    assert main(["floors", "--kb-path", str(kb)]) == 0
    assert "--raise would raise it to 0.85" in capsys.readouterr().out


def test_floors_are_raised_to_a_run_of_the_configured_model_never_an_experiments(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The main line is `--model hash` (MRR 0.85); an e5-small experiment recorded after
    it (MRR 1.0) must not become the floor the next hash run fails."""
    config = kb / "groove.toml"
    config.write_text('[eval]\nfail_under = "mrr=0.5"\n', encoding="utf-8")
    main_line = finish(kb, ALL - {0, 1, 2})  # recall@5 = MRR = nDCG@10 = 0.85
    experiment = finish(kb, ALL, fingerprint_changes={"model": "e5-small"})
    finish(kb, ALL, k=(1, 3))  # another k list than groove.toml's: other settings
    stamp = format_timestamp(main_line.run.timestamp)
    # no model named anywhere: which run is the main line is not guessed
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 1
    err = capsys.readouterr().err
    assert (
        "measured with more than one model (model e5-small, newest run "
        f"{format_timestamp(experiment.run.timestamp)}; model hash, newest run {stamp})"
    ) in err
    assert "pass --model NAME" in err
    assert config.read_text(encoding="utf-8") == '[eval]\nfail_under = "mrr=0.5"\n'
    # named on the command line: the e5 run and the run of another k list are passed over
    assert main(["floors", "--kb-path", str(kb), "--model", "hash", "--raise"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"floors in {kb / 'groove.toml'}, against the run of {stamp}, model hash (1 newer "
        "run(s) of other settings (k_values) and 1 of another model (e5-small) passed over):\n"
    )
    assert "  MRR: floor 0.5, measured 0.850 -> raised to 0.85\n" in out
    assert config.read_text(encoding="utf-8") == '[eval]\nfail_under = "mrr=0.85"\n'
    # named in groove.toml: the same run
    config.write_text('model = "hash"\n[eval]\nfail_under = "mrr=0.5"\n', encoding="utf-8")
    assert main(["floors", "--kb-path", str(kb)]) == 0
    assert f"against the run of {stamp}, model hash (" in capsys.readouterr().out
    # the experiment's own line is reachable by naming it
    assert main(["floors", "--kb-path", str(kb), "--model", "e5-small"]) == 0
    assert ", model e5-small (1 newer run(s) of another model (hash) passed over):" in (
        capsys.readouterr().out
    )
    # a model no run was measured with: said, with what differs
    assert main(["floors", "--kb-path", str(kb), "--model", "bge-m3"]) == 1
    assert "model: hash (that run) vs bge-m3 (now)" in capsys.readouterr().err


def test_raise_keeps_windows_line_endings_and_a_byte_order_mark(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a groove.toml saved by a Windows editor: CRLF line ends and a BOM, which the
    # settings read too; the rewrite changes the numbers and not one byte more
    config = kb / "groove.toml"
    written = "\ufeff" + COMMENTED.replace("\n", "\r\n")
    config.write_bytes(written.encode("utf-8"))
    finish(kb, ALL - {0, 1, 2})
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 0
    capsys.readouterr()
    expected = written.replace('"recall@5" = 0.50', '"recall@5" = 0.85').replace(
        '"ndcg@10" = 0.3', '"ndcg@10" = 0.85'
    )
    assert config.read_bytes() == expected.encode("utf-8")


def test_a_config_that_cannot_be_written_is_one_line_and_stays_as_it_was(
    kb: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import errno

    from pytest_groove.evaluation import floor_raise

    config = kb / "groove.toml"
    config.write_text(COMMENTED, encoding="utf-8")
    finish(kb, ALL - {0, 1, 2})

    def full_disk(path: Path, data: bytes, **_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(floor_raise, "write_atomic", full_disk)
    assert main(["floors", "--kb-path", str(kb), "--raise"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Error: could not write "), err
    assert "No space left on device; the floors were not raised and the file is unchanged" in err
    assert config.read_text(encoding="utf-8") == COMMENTED
