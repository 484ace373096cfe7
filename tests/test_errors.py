"""Values quoted back in messages: one line, at most 80 characters plus '...'."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groove.errors import (
    ECHO_LIMIT,
    PATH_ECHO_LIMIT,
    GrooveError,
    clip,
    clip_path,
    clip_repr,
)
from pytest_groove.settings.config import load_settings


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


def test_escapes_count_towards_the_cap() -> None:
    # 80 characters that each escape to ten used to come back as 800 (and more)
    shown = clip("\U0010ffff" * 80)
    assert len(shown) <= ECHO_LIMIT + 3 and shown.endswith("...")
    assert "\\U0010ffff" in shown  # an escape is kept whole, never cut in half
    assert not shown.removesuffix("...").endswith("\\")


@given(st.text(max_size=2_000))
def test_clip_never_exceeds_the_cap_after_escaping(text: str) -> None:
    shown = clip(text)
    assert len(shown) <= ECHO_LIMIT + 3
    assert shown.isprintable()
    if len(text) <= ECHO_LIMIT and text.isprintable():
        assert shown == text


@given(st.text(max_size=5_000))
def test_clip_path_keeps_both_ends_within_its_cap(text: str) -> None:
    shown = clip_path(text)
    assert len(shown) <= PATH_ECHO_LIMIT + 3 and shown.isprintable()
    if len(text) <= PATH_ECHO_LIMIT and text.isprintable():
        assert shown == text


def test_a_long_path_keeps_its_file_name() -> None:
    path = "/tmp/" + "x" * 4000 + "/index.db"
    shown = clip_path(path)
    assert shown.startswith("/tmp/xx") and shown.endswith("/index.db") and "..." in shown
    assert len(shown) <= PATH_ECHO_LIMIT + 3


#: config files whose values are refused in each part of the settings
_BAD_CONFIGS = (
    '[eval]\nregression_threshold = "x"\n',
    "[eval]\nnothing = 1\n",
    "exclude_headings = ['']\n",
    "[parsers]\nenabled = []\n",
    "vector_index = 'ivf'\n",
    "[eval]\ngolden = 'missing.yml'\n",
    "[eval\n",
)


@pytest.mark.parametrize("text", _BAD_CONFIGS)
def test_a_config_path_is_escaped_and_clipped_in_every_message(tmp_path: Path, text: str) -> None:
    from tests.helpers.cli_invoke import invoke

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("## A\n\nSome text.\n", encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - query: some text\n    expected:\n      - path: a.md\n", encoding="utf-8"
    )
    # deep enough to pass the path cap, in a folder whose name holds a line break
    folder = tmp_path / ("d" * 120) / ("e" * 120) / "conf\nig"
    folder.mkdir(parents=True)
    config = folder / "groove.toml"
    config.write_text(text, encoding="utf-8")
    done = invoke("eval", "--kb-path", kb, "--model", "hash", "--config", config)
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert line.startswith("Error: ") and "conf\\nig" in line and "groove.toml" in line
    # each path in it (the config's, and the golden file it names) within its cap
    assert len(line) < 2 * PATH_ECHO_LIMIT + 250
