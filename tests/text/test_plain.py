"""Text primitives, the .txt parser, filename titles and the per-chunk numbers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.source.parse import parse_document, title_from_filename
from pytest_groove.kb.source.quality import is_placeholder, quality_score, token_count
from pytest_groove.settings.config import IndexSettings
from pytest_groove.text.plain import (
    WHITE_SPACE,
    collapse_whitespace,
    normalise_newlines,
    split_lines,
    strip_boms,
    trim,
)

# --------------------------------------------------------------------------- primitives


def test_trim_uses_unicode_white_space_only() -> None:
    assert trim("\u3000 x \t\n\xa0") == "x"
    # U+001C..U+001F are stripped by str.strip() but are not White_Space
    assert trim("\x1cx\x1f") == "\x1cx\x1f"
    assert "\x1c" not in WHITE_SPACE


def test_split_lines() -> None:
    assert split_lines("") == []
    assert split_lines("a") == ["a"]
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("a\r\nb\r\n") == ["a", "b"]
    assert split_lines("a\rb\nc") == ["a\rb", "c"]  # a lone CR is not a line break


def test_collapse_and_boms_and_newlines() -> None:
    assert collapse_whitespace("  a \t\u3000 b  ") == "a b"
    assert strip_boms("\ufeff\ufeffx\ufeff") == "x\ufeff"
    assert normalise_newlines("a\r\nb\rc\n") == "a\nb\nc\n"


@settings(max_examples=120, deadline=None)
@given(st.text(max_size=80))
def test_split_lines_round_trips_lf_text(text: str) -> None:
    lf = normalise_newlines(text)
    rebuilt = "\n".join(split_lines(lf))
    assert rebuilt == lf.removesuffix("\n")


# --------------------------------------------------------------------------- .txt


def test_txt_single_chunk_with_filename_title() -> None:
    doc = parse_document("hello.txt", b"first line\nsecond line\n", IndexSettings())
    assert doc.title == "hello"
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert (chunk.index, chunk.heading, chunk.level) == (0, None, None)
    assert chunk.content == "first line\nsecond line\n"  # untrimmed
    assert chunk.context == "hello"


def test_txt_crlf_and_lone_cr_are_normalised() -> None:
    doc = parse_document("a.txt", b"one\r\ntwo\rthree", IndexSettings())
    assert doc.chunks[0].content == "one\ntwo\nthree"


def test_txt_bom_is_stripped() -> None:
    doc = parse_document("a.txt", b"\xef\xbb\xbf\xef\xbb\xbfhi there", IndexSettings())
    assert doc.chunks[0].content == "hi there"


def test_txt_whitespace_only_has_no_chunks() -> None:
    assert parse_document("a.txt", b" \r\n\t\n", IndexSettings()).chunks == ()
    assert parse_document("a.txt", b"", IndexSettings()).chunks == ()


def test_txt_keeps_markdown_syntax_literally_and_ignores_excludes() -> None:
    data = b"---\ntitle: no\n---\n## Secret\nbody"
    doc = parse_document("a.txt", data, IndexSettings(exclude_headings=("Secret",)))
    assert doc.chunks[0].content == data.decode()
    assert doc.title == "a"


def test_txt_topic_from_path() -> None:
    assert parse_document("x/y/z.txt", b"text", IndexSettings()).topic == "y"


def test_txt_invalid_utf8_is_a_parse_failure() -> None:
    from pytest_groove.kb.source.parse import ParseFailure

    with pytest.raises(ParseFailure):
        parse_document("a.txt", b"\xc3\x28", IndexSettings())


# --------------------------------------------------------------------------- filename titles


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("notes/deep-dive-2026.txt", "deep dive 2026"),
        ("a_b--c_d.txt", "a b c d"),
        ("README", "README"),
        (".hidden", ".hidden"),
        ("dir\\win-path.md", "win path"),
        ("設計_ノート.md", "設計 ノート"),
        ("archive.tar.gz", "archive.tar"),
        ("---.md", None),
        ("UPPER Case.MD", "UPPER Case"),
    ],
)
def test_title_from_filename(path: str, title: str | None) -> None:
    assert title_from_filename(path) == title


# --------------------------------------------------------------------------- quality


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
