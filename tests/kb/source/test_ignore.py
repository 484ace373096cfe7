"""`.grooveignore` patterns and the three-layer exclusion predicate."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.kb.source.ignore import (
    MAX_IGNORE_BYTES,
    MAX_PATTERNS,
    IgnoreRules,
    load_ignore_rules,
    parse_ignore_bytes,
    parse_ignore_text,
)
from pytest_groove.kb.source.walk import ExclusionRules, is_excluded


def rules_for(text: str, exclude_dirs: tuple[str, ...] = ()) -> ExclusionRules:
    ignore, warnings = parse_ignore_text(text)
    assert warnings == []
    return ExclusionRules.build(exclude_dirs, ignore)


def excluded(rules: ExclusionRules, rel: str, is_dir: bool = False) -> bool:
    return is_excluded(rel, is_dir, rules)


# --------------------------------------------------------------------------- gitignore subset


def test_star_extension_is_unanchored() -> None:
    r = rules_for("*.log")
    assert excluded(r, "a.log")
    assert excluded(r, "deep/down/b.LOG")
    assert not excluded(r, "a.md")
    assert not excluded(r, "a.log.md")


def test_trailing_slash_excludes_the_dir_and_everything_below() -> None:
    r = rules_for("drafts/")
    assert excluded(r, "drafts", is_dir=True)
    assert excluded(r, "drafts/a.md")
    assert excluded(r, "drafts/x/y.md")
    assert excluded(r, "notes/drafts/a.md")  # unanchored: any depth
    assert not excluded(r, "drafts.md")


def test_trailing_slash_pattern_only_matches_directories() -> None:
    r = rules_for("notes.md/")
    assert not excluded(r, "notes.md")
    assert excluded(r, "notes.md", is_dir=True)


def test_negation_cannot_reach_inside_an_excluded_directory() -> None:
    r = rules_for("logs/\n!logs/important.md")
    assert excluded(r, "logs/important.md")


def test_negation_re_includes_a_file() -> None:
    r = rules_for("*.md\n!keep.md")
    assert not excluded(r, "keep.md")
    assert excluded(r, "other.md")


def test_last_matching_line_wins() -> None:
    assert excluded(rules_for("!a.md\na.md"), "a.md")
    assert not excluded(rules_for("a.md\n!a.md"), "a.md")
    assert excluded(rules_for("a.md\n!a.md\n*.md"), "a.md")


def test_unanchored_vs_anchored() -> None:
    plain = rules_for("tmp")
    assert excluded(plain, "tmp", is_dir=True)
    assert excluded(plain, "a/tmp/x.md")
    anchored = rules_for("/tmp")
    assert excluded(anchored, "tmp/x.md")
    assert not excluded(anchored, "a/tmp/x.md")


def test_inner_slash_anchors() -> None:
    r = rules_for("docs/old.md")
    assert excluded(r, "docs/old.md")
    assert not excluded(r, "x/docs/old.md")


def test_double_star_forms() -> None:
    lead = rules_for("**/tmp")
    assert excluded(lead, "tmp/a.md")
    assert excluded(lead, "x/y/tmp/a.md")
    middle = rules_for("a/**/b")
    for path in ("a/b", "a/x/b", "a/x/y/b"):
        assert excluded(middle, path)
    assert not excluded(middle, "x/a/b")
    assert not excluded(middle, "a/bb")
    trailing = rules_for("docs/**")
    assert excluded(trailing, "docs/x.md")
    assert excluded(trailing, "docs/x/y.md")
    assert not excluded(trailing, "docs", is_dir=True)
    assert not excluded(trailing, "docs.md")


def test_double_star_inside_a_segment_is_a_plain_star() -> None:
    r = rules_for("a**z.md")
    assert excluded(r, "abcz.md")
    assert not excluded(r, "ab/cz.md")


def test_question_mark_and_classes() -> None:
    r = rules_for("?.md\nfile[0-9].md\nneg[!a-c].md")
    assert excluded(r, "x.md")
    assert not excluded(r, "xy.md")
    assert excluded(r, "file7.md")
    assert not excluded(r, "filex.md")
    assert excluded(r, "negd.md")
    assert not excluded(r, "negb.md")


def test_wildcards_never_cross_a_slash() -> None:
    r = rules_for("/a*b.md\n/c?d.md")
    assert excluded(r, "axxb.md")
    assert not excluded(r, "a/b.md")
    assert not excluded(r, "c/d.md")


def test_patterns_are_case_insensitive() -> None:
    r = rules_for("Drafts/\n*.LOG\n[A-C]x.md")
    assert excluded(r, "drafts/a.md")
    assert excluded(r, "DRAFTS/a.md")
    assert excluded(r, "x.log")
    assert excluded(r, "bX.md")


def test_escapes_and_trailing_spaces() -> None:
    r = rules_for("\\#hash.md\n\\!bang.md\nspaced.md   \nkeep\\ ")
    assert excluded(r, "#hash.md")
    assert excluded(r, "!bang.md")
    assert excluded(r, "spaced.md")
    assert excluded(r, "keep ")


def test_blank_and_comment_lines_are_not_patterns() -> None:
    rules, warnings = parse_ignore_text("\n   \n# comment\n#*.md\n\ta.md\n")
    assert warnings == []
    assert len(rules.patterns) == 1


def test_bom_and_crlf() -> None:
    lf, _ = parse_ignore_text("*.log\ndrafts/\n")
    crlf, _ = parse_ignore_bytes(b"\xef\xbb\xbf*.log\r\ndrafts/\r\n")
    for rel, is_dir in [
        ("a.log", False),
        ("drafts", True),
        ("drafts/x.md", False),
        ("b.md", False),
    ]:
        assert lf.ignores(rel, is_dir) == crlf.ignores(rel, is_dir)
    assert crlf.ignores("a.log", False)
    assert [p.line for p in crlf.patterns] == [1, 2]


def test_invalid_utf8_keeps_the_valid_lines() -> None:
    rules, _ = parse_ignore_bytes(b"good.md\n\xff\xfe.md\nother.md\n")
    assert rules.ignores("good.md", False)
    assert rules.ignores("other.md", False)


@pytest.mark.parametrize("line", ["[abc", "/", "!", "bad\\", "[z-a].md"])
def test_bad_pattern_line_is_skipped_with_a_warning(line: str) -> None:
    rules, warnings = parse_ignore_text(f"a.md\n{line}\nb.md")
    assert len(warnings) == 1
    assert "line 2" in warnings[0]
    assert rules.ignores("a.md", False) and rules.ignores("b.md", False)


def test_only_the_first_1000_patterns_apply() -> None:
    lines = ["# header", ""] + [f"f{i}.md" for i in range(MAX_PATTERNS + 5)]
    rules, warnings = parse_ignore_text("\n".join(lines))
    assert len(rules.patterns) == MAX_PATTERNS
    assert rules.ignores(f"f{MAX_PATTERNS - 1}.md", False)
    assert not rules.ignores(f"f{MAX_PATTERNS}.md", False)
    assert len(warnings) == 1 and "5 more" in warnings[0]


# --------------------------------------------------------------------------- layers


def test_fail_safe_cannot_be_undone() -> None:
    r = rules_for("!.git/\n!.git/**\n!node_modules/x.md")
    for rel in (".git/x.md", ".GIT/a/b.md", "Node_Modules/x.md", "a/.svn/x.md", ".groove/x.md"):
        assert excluded(r, rel)
    for rel in (".gitignore", "git/x.md", "node_modules_old/x.md", "svn/x.md", ".grooves/x.md"):
        assert not excluded(r, rel)


def test_fail_safe_applies_even_with_empty_exclude_dirs() -> None:
    r = ExclusionRules.build(())
    assert excluded(r, ".git/HEAD.md")
    assert excluded(r, "x/node_modules/pkg/readme.md")


def test_exclude_dirs_match_directories_only_and_ignore_case() -> None:
    r = ExclusionRules.build(("Archive.md", "ΣΟΦΟΣ", "straße"))
    assert excluded(r, "archive.md/x.md")
    assert not excluded(r, "notes/archive.md")
    assert excluded(r, "σοφος/x.md")  # final sigma folds to sigma
    assert excluded(r, "STRASSE/x.md") is False  # lower-casing is not full case folding
    assert excluded(r, "STRAßE/x.md")


def test_negation_cannot_undo_exclude_dirs() -> None:
    ignore, _ = parse_ignore_text("!private/\n!private/a.md")
    r = ExclusionRules.build(("private",), ignore)
    assert excluded(r, "private/a.md")


def test_three_layer_union() -> None:
    ignore, _ = parse_ignore_text("*.tmp.md\n/scratch/\n")
    r = ExclusionRules.build((".obsidian",), ignore)
    for rel in (".git/a.md", ".obsidian/a.md", "x.tmp.md", "scratch/a.md", "d/.obsidian/b.md"):
        assert excluded(r, rel), rel
    for rel in ("notes/a.md", "d/scratch/a.md", ".hidden/a.md", "obsidian/a.md"):
        assert not excluded(r, rel), rel


def test_root_is_never_excluded() -> None:
    r = rules_for("*\n**")
    assert not excluded(r, "", is_dir=True)
    assert not excluded(r, "/", is_dir=True)
    assert excluded(r, "a.md")


def test_rel_outer_slashes_are_trimmed() -> None:
    r = rules_for("/tmp")
    assert excluded(r, "/tmp/a.md/")


# --------------------------------------------------------------------------- the file


def test_missing_file_gives_no_rules_and_no_warning(tmp_path: Path) -> None:
    rules, warnings = load_ignore_rules(tmp_path)
    assert not rules and warnings == ()


def test_file_is_read_and_re_read(tmp_path: Path) -> None:
    (tmp_path / ".grooveignore").write_text("a.md\n")
    rules, _ = load_ignore_rules(tmp_path)
    assert rules.ignores("a.md", False)
    (tmp_path / ".grooveignore").write_text("b.md\n")
    rules, _ = load_ignore_rules(tmp_path)
    assert not rules.ignores("a.md", False)
    assert rules.ignores("b.md", False)


def test_exactly_64_kib_is_accepted_and_one_byte_more_refused(tmp_path: Path) -> None:
    body = b"a.md\n" + b"#" * (MAX_IGNORE_BYTES - 5)
    (tmp_path / ".grooveignore").write_bytes(body)
    rules, warnings = load_ignore_rules(tmp_path)
    assert rules.ignores("a.md", False) and warnings == ()
    (tmp_path / ".grooveignore").write_bytes(body + b"#")
    rules, warnings = load_ignore_rules(tmp_path)
    assert not rules and len(warnings) == 1 and "64 KiB" in warnings[0]


def test_hard_linked_file_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("a.md\n")
    kb = tmp_path / "kb"
    kb.mkdir()
    os.link(outside, kb / ".grooveignore")
    rules, warnings = load_ignore_rules(kb)
    assert not rules and "hard link" in warnings[0]


def test_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".grooveignore").mkdir()
    rules, warnings = load_ignore_rules(tmp_path)
    assert not rules and "not a regular file" in warnings[0]


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="Unix symlinks")
def test_symlink_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("a.md\n")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".grooveignore").symlink_to(target)
    rules, warnings = load_ignore_rules(kb)
    assert not rules and "symbolic link" in warnings[0]


def test_warnings_name_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / ".grooveignore").write_text("ok.md\n[broken\n")
    rules, warnings = load_ignore_rules(tmp_path)
    assert rules.ignores("ok.md", False)
    assert len(warnings) == 1
    assert ".grooveignore" in warnings[0] and "line 2" in warnings[0]


# --------------------------------------------------------------------------- properties

_name = st.text(alphabet="abcXYZ._-", min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))
_rel = st.lists(_name, min_size=1, max_size=4).map("/".join)


@settings(max_examples=120, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_without_raising(text: str) -> None:
    rules, warnings = parse_ignore_text(text)
    assert isinstance(rules, IgnoreRules)
    assert all(isinstance(w, str) for w in warnings)
    rules.ignores("a/b.md", False)


@settings(max_examples=120, deadline=None)
@given(_rel, st.lists(st.sampled_from(["*.md", "a*/", "!b*", "**/X", "/c", "?.md"]), max_size=4))
def test_exclusion_is_inherited_by_descendants(rel: str, lines: list[str]) -> None:
    ignore, _ = parse_ignore_text("\n".join(lines))
    r = ExclusionRules.build(("zz",), ignore)
    if excluded(r, rel, is_dir=True):
        assert excluded(r, rel + "/child.md")
        assert excluded(r, rel + "/deeper/child.md", is_dir=True)


@settings(max_examples=120, deadline=None)
@given(_rel)
def test_literal_anchored_pattern_matches_itself_case_insensitively(rel: str) -> None:
    escaped = "".join("\\" + c if c in "*?[]\\!#" else c for c in rel)
    rules, warnings = parse_ignore_text("/" + escaped)
    assert warnings == []
    assert rules.ignores(rel, False)
    assert rules.ignores(rel.swapcase(), False)


# --------------------------------------------------------------------------- linear-time matching


def _oracle_segment(seg: str) -> str:
    return "".join(
        "[^/]*" if piece.startswith("*") else re.escape(piece)
        for piece in re.split(r"(\*+)", seg)
        if piece
    )


def _oracle(pattern: str) -> re.Pattern[str]:
    dir_only = pattern.endswith("/")
    body = pattern[:-1] if dir_only else pattern
    anchored = body.startswith("/")
    body = body[1:] if anchored else body
    anchored = anchored or "/" in body
    segments: list[str] = []
    for seg in body.split("/"):
        if seg == "**" and segments and segments[-1] == "**":
            continue
        segments.append(seg)
    out: list[str] = []
    last = len(segments) - 1
    for i, seg in enumerate(segments):
        after = i > 0 and segments[i - 1] == "**"
        if seg == "**":
            if i == 0:
                out.append(".*" if i == last else "(?:.*/)?")
            elif i == last:
                out.append("/.+")
            else:
                out.append("/(?:.*/)?")
            continue
        if i > 0 and not after:
            out.append("/")
        out.append(_oracle_segment(seg))
    regex = "".join(out)
    if not anchored:
        regex = "(?:.*/)?" + regex
    return re.compile(regex, re.IGNORECASE | re.DOTALL)


_GLOB_SEGMENT = st.text(alphabet="ab*", min_size=1, max_size=5)
_GLOB = st.builds(
    lambda lead, segs: lead + "/".join(segs),
    st.sampled_from(["", "/"]),
    st.lists(st.one_of(_GLOB_SEGMENT, st.just("**")), min_size=1, max_size=4),
).filter(lambda p: p.strip("/") != "")
_PATH = st.lists(st.text(alphabet="ab", min_size=1, max_size=5), min_size=1, max_size=4).map(
    "/".join
)


@settings(max_examples=600, deadline=None)
@given(_GLOB, _PATH)
def test_linear_translation_means_what_the_plain_glob_means(pattern: str, rel: str) -> None:
    """Fuzz: the atomic translation agrees with the naive backtracking one."""
    compiled = parse_ignore_text(pattern)[0].patterns[0]
    assert compiled.matches(rel, False) == (_oracle(pattern).fullmatch(rel) is not None)


@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("*a" * 12 + "*c", "a" * 40),
        ("*a" * 30 + "*c", "a" * 200),
        ("**/a/" * 12 + "**/c", "/".join(["a"] * 40)),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*c/", "a" * 40),
    ],
)
def test_hostile_patterns_match_in_bounded_time(pattern: str, name: str) -> None:
    """A backtracking translation takes minutes on each of these."""
    rules = rules_for(pattern)
    started = time.monotonic()
    for _ in range(20):
        assert not excluded(rules, name)
        assert not excluded(rules, f"dir/{name}", True)
    assert time.monotonic() - started < 10
