"""The per-chunk numbers: token estimate, quality score, placeholders."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.source.quality import is_placeholder, quality_score, token_count


def test_token_count_is_bytes_over_four() -> None:
    assert token_count("") == 0
    assert token_count("abcdefg") == 1
    assert token_count("abcdefgh") == 2
    assert token_count("日本語") == 2  # 9 bytes


def test_quality_long_multiline_text_scores_one() -> None:
    assert quality_score("line one of a real section\nline two with more words in it") == 1.0


def test_quality_one_line_medium_text() -> None:
    assert quality_score("x" * 50) == pytest.approx(0.7, abs=1e-6)


def test_quality_short_text_uses_f32_arithmetic() -> None:
    # short (-0.6) and one line (-0.3): 1.0 - 0.6 - 0.3 in f32
    assert quality_score("short") == pytest.approx(0.1, abs=1e-6)
    multi = "a\nb"  # short but not one line
    assert quality_score(multi) == pytest.approx(0.39999998, abs=1e-7)


@pytest.mark.parametrize(
    "text", ["TODO", " todo. ", "TBD。", "wip,", "N/A", "準備中", "Coming Soon"]
)
def test_placeholders_are_recognised_and_score_zero(text: str) -> None:
    assert is_placeholder(text)
    assert quality_score(text) == 0.0


def test_non_placeholder() -> None:
    assert not is_placeholder("TODO: write the install steps")


@settings(max_examples=120, deadline=None)
@given(st.text(max_size=200))
def test_quality_in_unit_interval(text: str) -> None:
    assert 0.0 <= quality_score(text) <= 1.0
