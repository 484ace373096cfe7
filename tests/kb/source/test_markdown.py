"""Markdown parsing: frontmatter, headings, sections, merge, breadcrumbs, parse_document."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.source.markdown import (
    MAX_CHUNK_BYTES,
    MAX_HEADING_CHARS,
    Frontmatter,
    Section,
    heading_of,
    merge_short_sections,
    parse_markdown,
    read_frontmatter,
    split_frontmatter,
    split_long_sections,
    split_sections,
    split_text,
    split_title,
)
from pytest_groove.kb.source.parse import (
    CONTEXT_MAX_CHARS,
    ParseFailure,
    build_context,
    parse_document,
    path_category_topic,
)
from pytest_groove.kb.source.records import ParsedDocument
from pytest_groove.settings.config import IndexSettings
from pytest_groove.text.plain import trim

LONG = "This paragraph is comfortably longer than fifty bytes of text."


def md(text: str, path: str = "doc.md", **index: object) -> ParsedDocument:
    return parse_document(path, text.encode("utf-8"), IndexSettings(**index))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- headings


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("## Foo", (2, "Foo")),
        ("### Bar", (3, "Bar")),
        ("  ## Indented  ", (2, "Indented")),
        ("## ### odd", (2, "### odd")),
        ("###   spaced   ", (3, "spaced")),
        ("plain text", None),
        ("# H1", None),
        ("#### deep", None),
        ("##NoSpace", None),
        ("## ", None),
        ("###", None),
    ],
)
def test_heading_recognition(line: str, expected: tuple[int, str] | None) -> None:
    assert heading_of(line) == expected


def test_levels_and_preamble_have_expected_heading_fields() -> None:
    doc = md(f"{LONG}\n\n## Two\n{LONG}\n### Three\n{LONG}\n", path="t.md")
    assert [(c.heading, c.level) for c in doc.chunks] == [
        (None, None),
        ("Two", 2),
        ("Three", 3),
    ]


def test_heading_line_is_removed_from_the_body() -> None:
    doc = md(f"## Title line\n{LONG}")
    assert doc.chunks[0].content == LONG
    assert "##" not in doc.chunks[0].content


def test_h1_and_h4_lines_stay_in_the_body() -> None:
    doc = md(f"## Top\n# not a heading\n#### also not\n{LONG}")
    assert len(doc.chunks) == 1
    assert doc.chunks[0].content == f"# not a heading\n#### also not\n{LONG}"


def test_heading_inside_code_fence_still_splits() -> None:
    doc = md(f"## A\n{LONG}\n```\n## Inside fence\n{LONG}\n```\n")
    assert [c.heading for c in doc.chunks] == ["A", "Inside fence"]


# --------------------------------------------------------------------------- sections, merge


def test_short_child_merges_into_parent_keeping_its_heading_line() -> None:
    doc = md("## Big\nshort.\n### Sub\nalso short", path="T.md")
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert (chunk.heading, chunk.level, chunk.context) == ("Big", 2, "T > Big")
    assert chunk.content == "short.\n\n### Sub\n\nalso short"


def test_short_first_section_takes_in_the_next_one() -> None:
    doc = md(f"tiny\n## Next\n{LONG}\n## Last\n{LONG}")
    assert [(c.heading, c.content) for c in doc.chunks] == [
        (None, f"tiny\n\n## Next\n\n{LONG}"),
        ("Last", LONG),
    ]


def test_heading_only_section_is_no_chunk_but_names_its_subsections() -> None:
    doc = md(f"## Setup\n### Linux\n{LONG}\n### macOS\n{LONG}", path="T.md")
    assert [(c.heading, c.context) for c in doc.chunks] == [
        ("Linux", "T > Setup > Linux"),
        ("macOS", "T > Setup > macOS"),
    ]


def test_leading_h1_is_the_title_not_a_chunk() -> None:
    doc = md(f"# Espresso\n\n## Grind size\n{LONG}\n## Dose\n{LONG}", path="notes/coffee.md")
    assert doc.title == "Espresso"
    assert [(c.heading, c.content, c.context) for c in doc.chunks] == [
        ("Grind size", LONG, "Espresso > Grind size"),
        ("Dose", LONG, "Espresso > Dose"),
    ]


def test_h1_title_with_short_sections_merges_predictably() -> None:
    doc = md("# Milk\n## Steaming\nHeat to 65 degrees.\n## Storage\nFridge.", path="m.md")
    assert [(c.heading, c.content, c.context) for c in doc.chunks] == [
        ("Steaming", "Heat to 65 degrees.\n\n## Storage\n\nFridge.", "Milk > Steaming")
    ]


def test_frontmatter_title_wins_over_h1_and_later_h1_lines_are_text() -> None:
    doc = md(f"---\ntitle: Real\n---\n# Shown\n{LONG}\n# not a title\n")
    assert doc.title == "Real"
    assert doc.chunks[0].context == "Real"
    assert doc.chunks[0].content == f"{LONG}\n# not a title"


def test_merge_into_empty_content_adds_no_leading_blank_line() -> None:
    sections = split_sections("## A\n## B\nshort")
    merged = merge_short_sections(sections)
    assert [(m.heading, m.content) for m in merged] == [("B", "short")]


def test_short_preamble_like_section_without_heading_merges_plainly() -> None:
    # a heading-less short section can only be the first one, so build it by hand
    sections = split_sections(f"{LONG}") + split_sections("tail")
    merged = merge_short_sections(sections)
    assert merged[0].content == f"{LONG}\n\ntail"


def test_merge_does_not_cascade() -> None:
    # A is long; B short merges into A; C short merges into A too (A's growth is irrelevant)
    doc = md(f"## A\n{LONG}\n## B\nb\n## C\nc")
    assert len(doc.chunks) == 1
    assert doc.chunks[0].content == f"{LONG}\n\n## B\n\nb\n\n## C\n\nc"


def test_merge_threshold_counts_utf8_bytes() -> None:
    seventeen_kanji = "漢" * 17  # 51 bytes: long enough to stand alone
    sixteen_kanji = "漢" * 16  # 48 bytes: merged
    doc = md(f"## A\n{LONG}\n## B\n{seventeen_kanji}\n## C\n{sixteen_kanji}")
    assert [c.heading for c in doc.chunks] == ["A", "B"]
    assert doc.chunks[1].content == f"{seventeen_kanji}\n\n## C\n\n{sixteen_kanji}"


def test_merge_threshold_boundary_is_fifty_bytes() -> None:
    doc = md(f"## A\n{LONG}\n## B\n{'b' * 50}\n## C\n{'c' * 49}")
    assert [c.heading for c in doc.chunks] == ["A", "B"]
    assert doc.chunks[1].content.endswith("## C\n\n" + "c" * 49)


def test_heading_only_file_yields_no_chunk() -> None:
    assert md("## Lonely heading\n### Another\n").chunks == ()


def test_empty_file_has_no_chunks() -> None:
    assert md("").chunks == ()
    assert md("   \n\n").chunks == ()


def test_a_section_up_to_the_size_limit_is_one_chunk() -> None:
    body = "word " * (MAX_CHUNK_BYTES // 5)
    doc = md(f"## Huge\n{body}")
    assert len(doc.chunks) == 1
    assert doc.chunks[0].content == trim(body)


# --------------------------------------------------------------------------- size limits

_SPLIT_TEXT = st.text(
    alphabet=st.sampled_from(list("ab \n\t\u00e9\u65e5\U0001f600")), min_size=0, max_size=600
)


def _squeezed(text: str) -> str:
    return "".join(text.split())


@settings(max_examples=300, deadline=None)
@given(_SPLIT_TEXT, st.integers(min_value=16, max_value=200))
def test_split_text_bounds_every_piece_and_keeps_every_character(text: str, limit: int) -> None:
    pieces = split_text(text, limit)
    assert all(len(piece.encode("utf-8")) <= limit for piece in pieces)
    assert all(piece == trim(piece) and piece for piece in pieces)
    # only whitespace at the cuts is lost, and the order is kept
    assert _squeezed("".join(pieces)) == _squeezed(text)
    if len(text.encode("utf-8")) <= limit:
        assert pieces == ([trim(text)] if trim(text) else [])


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab\u00e9\u65e5\U0001f600")), max_size=600),
    st.integers(min_value=16, max_value=200),
)
def test_no_piece_of_a_split_is_a_few_characters_long(text: str, limit: int) -> None:
    """Without whitespace to trim, every piece holds a quarter of the limit (a cut between
    two characters moves back at most three bytes), and the pieces are the text."""
    pieces = split_text(text, limit)
    assert "".join(pieces) == text
    if len(pieces) > 1:
        assert all(len(piece.encode("utf-8")) >= limit // 4 - 3 for piece in pieces)


@given(st.integers(min_value=2, max_value=40))
def test_split_text_cuts_at_a_paragraph_then_a_line_then_a_space(words: int) -> None:
    paragraph = " ".join(["word"] * words)
    text = "\n\n".join([paragraph] * 6)
    limit = 2 * len(paragraph) + 4
    assert split_text(text, limit) == ["\n\n".join([paragraph] * 2)] * 3
    lines = text.replace("\n\n", "\n")
    assert split_text(lines, limit) == ["\n".join([paragraph] * 2)] * 3
    assert " ".join(split_text(paragraph, 16)) == paragraph


@settings(max_examples=100, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("xy \u00e9\u65e5")), min_size=1, max_size=400),
    st.integers(min_value=16, max_value=64),
)
def test_a_long_line_in_a_note_becomes_pieces_under_its_heading(line: str, limit: int) -> None:
    """A line (or paragraph, or section) over the limit is several chunks, none over it,
    all under the section's heading: before, a 10 MB line was one 10 MB chunk."""
    sections = [Section("Log", 2, ("Ops",), f"{LONG}\n\n{line}")]
    pieces = split_long_sections(sections, limit)
    assert all(len(p.content.encode("utf-8")) <= limit for p in pieces)
    assert {(p.heading, p.level, p.ancestry) for p in pieces} == {("Log", 2, ("Ops",))}
    assert _squeezed("".join(p.content for p in pieces)) == _squeezed(sections[0].content)


def test_a_note_with_a_line_over_the_limit_is_chunks_within_it() -> None:
    line = "x" * (3 * MAX_CHUNK_BYTES)
    doc = md(f"# Log\n\n## Dump\n\n{LONG}\n\n{line}\n\n## After\n\n{LONG}")
    assert [c.heading for c in doc.chunks] == ["Dump"] * 4 + ["After"]
    assert all(len(c.content.encode("utf-8")) <= MAX_CHUNK_BYTES for c in doc.chunks)
    assert "".join(c.content for c in doc.chunks[:4]) == f"{LONG}\n\n{line}"
    assert [c.index for c in doc.chunks] == [0, 1, 2, 3, 4]
    text = parse_document("log.txt", line.encode(), IndexSettings())
    assert [len(c.content) for c in text.chunks] == [
        MAX_CHUNK_BYTES,
        MAX_CHUNK_BYTES,
        MAX_CHUNK_BYTES,
    ]


def test_titles_and_headings_over_the_cap_are_cut_with_one_warning() -> None:
    long = "T" * (MAX_HEADING_CHARS + 10)
    warnings: list[str] = []
    text = f"---\ntitle: {long}\n---\n# {long}\n\n## {long}\n\n{LONG}\n\n### {long}\n\n{LONG}"
    doc = parse_markdown(text, on_warning=warnings.append)
    assert doc.frontmatter.title == doc.h1_title == "T" * MAX_HEADING_CHARS
    assert [s.heading for s in doc.sections] == ["T" * MAX_HEADING_CHARS] * 2
    assert warnings == [
        "2 titles and 2 headings over 4,096 characters cut to their first 4,096 "
        "(shorten them in the note to index them whole)"
    ]
    assert heading_of(f"## {long}") == (2, "T" * MAX_HEADING_CHARS)
    warnings.clear()
    parse_markdown(f"## {'T' * MAX_HEADING_CHARS}\n\n{LONG}", on_warning=warnings.append)
    assert warnings == []


# --------------------------------------------------------------------------- breadcrumbs


def test_context_hierarchy_with_japanese_text() -> None:
    text = "---\ntitle: 設計ノート\n---\n## 検索パイプライン\n" + LONG + "\n### RRF の実装\n" + LONG
    doc = md(text)
    assert doc.chunks[1].context == "設計ノート > 検索パイプライン > RRF の実装"


def test_preamble_context_is_title_only() -> None:
    doc = md(f"{LONG}\n## Later\n{LONG}", path="notes/mydoc.md")
    assert doc.chunks[0].context == "mydoc"


def test_context_resets_when_a_new_h2_starts() -> None:
    doc = md(f"## A\n{LONG}\n### A1\n{LONG}\n## B\n{LONG}", path="T.md")
    assert [c.context for c in doc.chunks] == ["T > A", "T > A > A1", "T > B"]


def test_h3_after_h3_is_a_sibling() -> None:
    doc = md(f"## A\n{LONG}\n### A1\n{LONG}\n### A2\n{LONG}", path="T.md")
    assert doc.chunks[2].context == "T > A > A2"


def test_excluded_heading_stays_in_child_ancestry() -> None:
    doc = md(f"## Secret\n{LONG}\n### Detail\n{LONG}", path="T.md", exclude_headings=("Secret",))
    assert [(c.heading, c.context, c.content) for c in doc.chunks] == [
        ("Detail", "T > Secret > Detail", LONG)
    ]


def test_merged_chunk_keeps_first_heading_context() -> None:
    doc = md("## Big\nshort.\n### Sub\nsmall", path="T.md")
    assert doc.chunks[0].context == "T > Big"


def test_frontmatter_title_beats_filename_and_blank_title_falls_back() -> None:
    assert md(f"---\ntitle: Real\n---\n{LONG}", path="file-name.md").chunks[0].context == "Real"
    doc = md(f"---\ntitle: '  '\n---\n{LONG}", path="file-name.md")
    assert doc.chunks[0].context == "file name"
    assert doc.title == "  "  # the stored title stays what the frontmatter says


def test_title_equal_to_first_heading_shows_once() -> None:
    doc = md(f"---\ntitle: Setup\n---\n## Setup\n{LONG}")
    assert doc.chunks[0].context == "Setup"


def test_build_context_rules() -> None:
    assert build_context(["a", "b", "c"]) == "a > b > c"
    assert build_context(["  a ", "", "   ", "b"]) == "a > b"
    assert build_context(["a", "a", "b", "a"]) == "a > b > a"
    assert build_context(["", "  "]) is None
    assert build_context([]) is None


@pytest.mark.parametrize("char", ["a", "あ"])
def test_build_context_caps_at_200_code_points(char: str) -> None:
    result = build_context([char * 300])
    assert result == char * 200


def test_long_breadcrumb_is_cut() -> None:
    heading = "h" * 250
    doc = md(f"## {heading}\n{LONG}", path="T.md")
    assert doc.chunks[0].context == ("T > " + heading)[:200]


# --------------------------------------------------------------------------- exclude_headings


def test_exclude_heading_drops_heading_and_body() -> None:
    text = f"## Keep\n{LONG}\n## Drop me\nsecret body that is long enough to stand alone\n"
    doc = md(text, exclude_headings=("Drop",))
    assert [c.heading for c in doc.chunks] == ["Keep"]
    assert all("secret" not in c.content for c in doc.chunks)


def test_exclude_is_a_case_sensitive_substring() -> None:
    text = f"## Changelog 2024\n{LONG}\n## changelog\n{LONG}\n## Other\n{LONG}"
    doc = md(text, exclude_headings=("Changelog",))
    assert [c.heading for c in doc.chunks] == ["changelog", "Other"]


def test_empty_exclude_list_keeps_everything() -> None:
    text = f"## A\n{LONG}\n## B\n{LONG}"
    assert [c.heading for c in md(text).chunks] == ["A", "B"]


def test_exclusion_ends_at_the_next_heading_and_indices_stay_dense() -> None:
    text = f"## A\n{LONG}\n## X\n{LONG}\n## B\n{LONG}\n## X again\n{LONG}\n## C\n{LONG}"
    doc = md(text, exclude_headings=("X",))
    assert [(c.index, c.heading) for c in doc.chunks] == [(0, "A"), (1, "B"), (2, "C")]


def test_excluding_the_only_heading_keeps_the_preamble() -> None:
    doc = md(f"{LONG}\n## Skip\n{LONG}", exclude_headings=("Skip",))
    assert [c.heading for c in doc.chunks] == [None]


# --------------------------------------------------------------------------- frontmatter


FULL_FRONTMATTER = (
    """---
title: MCP プロトコル概要
date: 2026-04-10
topic: mcp
depth: 1
tags: [mcp, protocol, overview]
extra: ignored
---
## Body
"""
    + LONG
)


def test_frontmatter_fields() -> None:
    doc = md(FULL_FRONTMATTER, path="a/b/c.md")
    assert doc.title == "MCP プロトコル概要"
    assert doc.date == "2026-04-10"
    assert doc.topic == "mcp"
    assert doc.depth == "1"
    assert doc.tags == ("mcp", "protocol", "overview")
    assert doc.chunks[0].heading == "Body"


def test_crlf_frontmatter_values_have_no_carriage_returns() -> None:
    doc = md(FULL_FRONTMATTER.replace("\n", "\r\n"))
    assert (doc.title, doc.date, doc.topic, doc.depth) == (
        "MCP プロトコル概要",
        "2026-04-10",
        "mcp",
        "1",
    )
    assert doc.tags == ("mcp", "protocol", "overview")
    assert all("\r" not in c.content for c in doc.chunks)


def test_crlf_body_lines_lose_carriage_returns() -> None:
    doc = md(f"## A\r\n{LONG}\r\nsecond line of text\r\n")
    assert doc.chunks[0].content == f"{LONG}\nsecond line of text"


def test_no_frontmatter_means_empty_fields_and_chunks_still_made() -> None:
    doc = md(f"## A\n{LONG}", path="doc.md")
    assert (doc.title, doc.date, doc.depth, doc.tags) == (None, None, None, ())
    assert doc.topic is None
    assert len(doc.chunks) == 1


def test_yaml_alias_bomb_does_not_crash() -> None:
    bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        bomb.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    text = "---\ntitle: Bomb\n" + "\n".join(bomb) + "\ndate: *i\n---\n## Body\n" + LONG
    start = time.monotonic()
    doc = md(text)
    assert time.monotonic() - start < 2.0
    # date holds a collection: a type error, so every field is empty
    assert (doc.title, doc.date, doc.tags) == (None, None, ())
    assert [c.heading for c in doc.chunks] == ["Body"]


def test_alias_bomb_under_an_unknown_key_keeps_known_fields() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdefgh"):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{'abcdefgh'[i]}"] * 8) + "]")
    doc = md("---\ntitle: Kept\n" + "\n".join(lines) + "\n---\n" + LONG)
    assert doc.title == "Kept"


@pytest.mark.parametrize(
    "yaml_text",
    [
        "tags: foo",  # scalar instead of a list
        "tags: [a, [b]]",
        "title: [x]",
        "title: {a: 1}",
        "- just\n- a list",
        "title: 'unterminated",
        "key: !!python/object:os.system ls",
        "title: x\n  bad: indentation: here",
    ],
)
def test_bad_frontmatter_empties_every_field_but_keeps_body(yaml_text: str) -> None:
    warnings: list[str] = []
    text = f"---\n{yaml_text}\ndate: 2026-01-01\n---\n{LONG}"
    doc = parse_document("x.md", text.encode(), IndexSettings(), on_warning=warnings.append)
    assert (doc.title, doc.date, doc.topic, doc.depth, doc.tags) == (None, None, None, None, ())
    assert [c.content for c in doc.chunks] == [LONG]
    assert len(warnings) == 1 and "frontmatter" in warnings[0]


def test_scalars_keep_the_authors_spelling() -> None:
    fm = read_frontmatter("date: 2026-04-10 09:30:00\ndepth: 01\ntitle: yes\ntopic: 3.10")
    assert fm == Frontmatter(title="yes", date="2026-04-10 09:30:00", topic="3.10", depth="01")


def test_explicitly_typed_scalars_become_text() -> None:
    fm = read_frontmatter("depth: !!int 2\ndate: !!timestamp 2026-04-10\ntitle: !!bool true")
    assert (fm.depth, fm.date, fm.title) == ("2", "2026-04-10", "true")


def test_null_values_are_absent() -> None:
    assert read_frontmatter("title:\ntags: ~\ndate: null") == Frontmatter()
    assert read_frontmatter("") == Frontmatter()


@pytest.mark.parametrize(
    ("text", "yaml_text", "body"),
    [
        ("no frontmatter", None, "no frontmatter"),
        ("---\ntitle: x\n---\nbody", "title: x", "body"),
        ("\ufeff\ufeff---\ntitle: x\n---\nbody", "title: x", "body"),
        ("---\r\ntitle: x\r\n---\r\n\r\nbody", "title: x\r", "body"),
        ("---\ntitle: x\n--- trailing\nbody", "title: x", " trailing\nbody"),
        ("---\ntitle: x\nno close", None, "---\ntitle: x\nno close"),
        ("---\n---\nbody", None, "---\n---\nbody"),
        ("----\nk: v\n---\nbody", "-\nk: v", "body"),
        ("text\n---\nmore", None, "text\n---\nmore"),
    ],
)
def test_split_frontmatter(text: str, yaml_text: str | None, body: str) -> None:
    assert split_frontmatter(text) == (yaml_text, body)


def test_unclosed_frontmatter_becomes_body_text() -> None:
    doc = md("---\ntitle: x\n" + LONG)
    assert doc.title is None
    assert doc.chunks[0].content.startswith("---\ntitle: x")


def test_bom_is_stripped_before_frontmatter() -> None:
    doc = parse_document(
        "x.md", b"\xef\xbb\xbf---\ntitle: T\n---\n" + LONG.encode(), IndexSettings()
    )
    assert doc.title == "T"


# --------------------------------------------------------------------------- topic / dispatch


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("index.md", (None, None)),
        ("ai-news/2026-04-16.md", ("ai-news", None)),
        ("tech-watch/anthropic/x.md", ("tech-watch", "anthropic")),
        ("tech-watch/anthropic/subdir/x.md", ("tech-watch", "anthropic")),
    ],
)
def test_path_category_topic(path: str, expected: tuple[str | None, str | None]) -> None:
    assert path_category_topic(path) == expected


def test_topic_prefers_frontmatter_over_path() -> None:
    assert md(LONG, path="a/b/c.md").topic == "b"
    assert md(f"---\ntopic: own\n---\n{LONG}", path="a/b/c.md").topic == "own"


def test_invalid_utf8_is_a_parse_failure() -> None:
    with pytest.raises(ParseFailure) as info:
        parse_document("bad.md", b"## ok\n\xff\xfe broken", IndexSettings())
    assert "UTF-8" in info.value.reason


def test_unknown_extension_is_a_parse_failure() -> None:
    with pytest.raises(ParseFailure):
        parse_document("x.pdf", b"%PDF", IndexSettings())


def test_extension_dispatch_is_case_insensitive() -> None:
    doc = parse_document("UPPER.MD", b"## Head\n" + LONG.encode(), IndexSettings())
    assert doc.chunks[0].heading == "Head"
    txt = parse_document("NOTE.TXT", b"## Head\n" + LONG.encode(), IndexSettings())
    assert txt.chunks[0].heading is None


def test_parse_failure_is_not_a_groove_error() -> None:
    from pytest_groove.errors import GrooveError

    assert not issubclass(ParseFailure, GrooveError)


# --------------------------------------------------------------------------- properties

_line = st.one_of(
    st.text(
        alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\n\ufeff"),
        max_size=40,
    ),
    st.sampled_from(
        ["## A", "### B", "## A", "# H1", "#### x", "", "  ", "## Secret", "### Secret x"]
    ),
    st.builds(lambda s: "## " + s, st.text(alphabet="abcXYZ 日本", min_size=1, max_size=12)),
    st.builds(lambda s: "### " + s, st.text(alphabet="abcXYZ 日本", min_size=1, max_size=12)),
)
_body = st.lists(_line, max_size=30).map("\n".join).filter(lambda b: not b.startswith("---"))
_fast = settings(max_examples=100, deadline=None)


@_fast
@given(_body, st.lists(st.sampled_from(["Secret", "A", "x", "日本"]), max_size=2))
def test_chunk_indices_are_dense_and_contexts_bounded(body: str, excludes: list[str]) -> None:
    doc = md(body, path="dir/some-file.md", exclude_headings=tuple(excludes))
    assert [c.index for c in doc.chunks] == list(range(len(doc.chunks)))
    for chunk in doc.chunks:
        assert (chunk.heading is None) == (chunk.level is None)
        assert chunk.level in (None, 2, 3)
        assert chunk.context is None or 0 < len(chunk.context) <= CONTEXT_MAX_CHARS
        # only a merged-in empty section can leave trailing blank lines
        assert chunk.content == trim(chunk.content) or "## " in chunk.content


@_fast
@given(_body)
def test_every_body_line_survives_without_exclusions(body: str) -> None:
    doc = md(body)
    everything = "\n".join(c.content for c in doc.chunks)
    chunk_headings = {c.heading for c in doc.chunks}
    _title, rest = split_title(body)
    for line in rest.split("\n"):
        if heading_of(line) is None:
            assert trim(line.removesuffix("\r")) in everything
    for section in split_sections(rest):
        if section.heading is not None and section.content:
            # a heading with text heads a chunk or was merged in as a "##"/"###" line
            marker = "#" * (section.level or 2) + f" {section.heading}"
            assert section.heading in chunk_headings or marker in everything


@_fast
@given(_body)
def test_excluded_heading_text_never_appears_in_chunks(body: str) -> None:
    doc = md(body, exclude_headings=("Secret",))
    assert all(c.heading is None or "Secret" not in c.heading for c in doc.chunks)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.binary(max_size=300), st.text(max_size=300).map(str.encode)),
    st.sampled_from(["a.md", "b.txt", "c/d/e.MD"]),
)
def test_arbitrary_bytes_only_ever_raise_parse_failure(data: bytes, path: str) -> None:
    try:
        doc = parse_document(path, data, IndexSettings(exclude_headings=("x",)))
    except ParseFailure as exc:
        assert "internal" not in exc.reason
        return
    assert [c.index for c in doc.chunks] == list(range(len(doc.chunks)))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200).map(lambda t: "---\n" + t + "\n---\nbody text"))
def test_arbitrary_frontmatter_never_escapes(text: str) -> None:
    doc = md(text)
    assert isinstance(doc.tags, tuple)
    assert all(isinstance(tag, str) for tag in doc.tags)


@_fast
@given(st.lists(st.text(max_size=120), max_size=6))
def test_build_context_properties(parts: list[str]) -> None:
    result = build_context(parts)
    if result is None:
        assert all(not trim(p) for p in parts)
    else:
        assert 0 < len(result) <= CONTEXT_MAX_CHARS
        assert result == trim(result) or len(result) == CONTEXT_MAX_CHARS
