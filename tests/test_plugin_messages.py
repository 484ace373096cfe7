"""Engine messages speak pytest's option names when they reach a pytest user."""

from __future__ import annotations

import pytest

from pytest_groove.options import pytest_flag_names

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("pass --golden or create", "pass --groove-golden or create"),
        ("--freeze-baseline ignored", "--groove-freeze-baseline ignored"),
        ("drop --no-reindex so", "drop --groove-no-reindex so"),
        ("--mmr-lambda must be", "--groove-mmr-lambda must be"),
        ("already --groove-golden", "already --groove-golden"),
        ("see --golden-file and x--golden", "see --golden-file and x--golden"),
    ],
)
def test_cli_flags_become_pytest_options(message: str, expected: str) -> None:
    assert pytest_flag_names(message) == expected


def test_missing_golden_names_the_pytest_option(pytester: pytest.Pytester) -> None:
    kb = pytester.mkdir("kb")
    (kb / "note.md").write_text("## A\n\nsome text\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--groove-kb", str(kb), "--groove-model", "hash")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no golden file at*--groove-golden*"])
    assert "Traceback" not in result.stderr.str()
