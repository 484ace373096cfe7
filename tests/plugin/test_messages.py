"""Library messages speak each door's option names: ``--name`` to ``groove``,
``--groove-name`` under pytest (the messages carry option tokens, never guesses)."""

from __future__ import annotations

import pytest

from pytest_groove.errors import GrooveError, UsageError, flag, spell_flags

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("name", ["golden", "freeze-baseline", "no-reindex", "mmr-lambda"])
def test_an_option_token_is_spelled_by_each_door(name: str) -> None:
    message = f"pass {flag(name)} or create"
    assert spell_flags(message, "cli") == f"pass --{name} or create"
    assert spell_flags(message, "pytest") == f"pass --groove-{name} or create"
    error = UsageError(message)
    assert (error.message, str(error)) == (f"pass --{name} or create",) * 2
    assert error.message_for("pytest") == f"pass --groove-{name} or create"


def test_text_that_only_looks_like_a_flag_is_left_alone() -> None:
    # no guessing: only tokens are spelled, never a --word a user wrote
    for text in ("see --golden-file and x--golden", "already --groove-golden", "--golden"):
        assert spell_flags(text, "pytest") == text
        assert GrooveError(text).message_for("pytest") == text


def test_a_token_cannot_be_forged_through_a_quoted_value() -> None:
    from pytest_groove.errors import clip

    forged = clip("\u2063golden\u2063")  # the marker is escaped by the echo helper
    assert spell_flags(f"bad value {forged}", "pytest") == f"bad value {forged}"


def test_missing_golden_names_the_pytest_option(pytester: pytest.Pytester) -> None:
    kb = pytester.mkdir("kb")
    (kb / "note.md").write_text("## A\n\nsome text\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--groove-kb", str(kb), "--groove-model", "hash")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*no golden file at*hint: `groove init --kb-path {kb}` writes*--groove-golden*"]
    )
    assert "Traceback" not in result.stderr.str()
