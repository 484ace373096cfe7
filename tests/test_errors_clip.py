"""Values quoted back in messages: one line, at most 80 characters plus '...'."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.config import load_settings
from pytest_groove.errors import ECHO_LIMIT, GrooveError, clip, clip_repr


def test_short_text_is_unchanged() -> None:
    assert clip("docs/a.md") == "docs/a.md"
    assert clip_repr("x") == "'x'"


def test_long_text_is_cut_with_an_ellipsis() -> None:
    assert clip("a" * 200) == "a" * ECHO_LIMIT + "..."
    assert clip_repr("b" * 100_000) == repr("b" * ECHO_LIMIT) + "..."
    assert clip_repr(list(range(1000))).endswith("...")


def test_line_breaks_and_control_characters_are_escaped() -> None:
    assert clip("a\nb\x00c") == "a\\nb\\x00c"


@given(st.text(max_size=500))
def test_clip_is_always_one_short_line(text: str) -> None:
    shown = clip(text)
    assert "\n" not in shown and "\r" not in shown
    # escaping may lengthen each kept character to at most 10 characters (\U0010ffff)
    assert len(shown) <= 10 * ECHO_LIMIT + 3


def test_a_huge_config_value_is_capped_in_the_message(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "groove.toml").write_text(f'[eval]\nregression_threshold = "{"x" * 5000}"\n')
    with pytest.raises(GrooveError) as info:
        load_settings(kb)
    assert len(info.value.message) < 300 + len(str(kb))
    assert "..." in info.value.message


def test_many_unknown_keys_are_capped_in_the_message(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    keys = "".join(f"key_{n:04} = 1\n" for n in range(500))
    (kb / "groove.toml").write_text(keys)
    with pytest.raises(GrooveError) as info:
        load_settings(kb)
    assert "unknown key(s)" in info.value.message
    assert len(info.value.message) < 300 + len(str(kb))
