"""Plain-text primitives and the .txt parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.source.parse import parse_document
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
