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


#: ``(.grooveignore text, path, is the path a folder, is it excluded)``, one group of
#: rows a rule of the gitignore subset
GITIGNORE_CASES = [
    # a star extension is unanchored
    ("*.log", "a.log", False, True),
    ("*.log", "deep/down/b.LOG", False, True),
    ("*.log", "a.md", False, False),
    ("*.log", "a.log.md", False, False),
    # a trailing slash excludes the folder and everything below, at any depth
    ("drafts/", "drafts", True, True),
    ("drafts/", "drafts/a.md", False, True),
    ("drafts/", "drafts/x/y.md", False, True),
    ("drafts/", "notes/drafts/a.md", False, True),
    ("drafts/", "drafts.md", False, False),
    # ... and matches folders only
    ("notes.md/", "notes.md", False, False),
    ("notes.md/", "notes.md", True, True),
    # a negation cannot reach inside an excluded folder
    ("logs/\n!logs/important.md", "logs/important.md", False, True),
    # a negation re-includes a file
    ("*.md\n!keep.md", "keep.md", False, False),
    ("*.md\n!keep.md", "other.md", False, True),
    # the last matching line wins
    ("!a.md\na.md", "a.md", False, True),
    ("a.md\n!a.md", "a.md", False, False),
    ("a.md\n!a.md\n*.md", "a.md", False, True),
    # unanchored and anchored
    ("tmp", "tmp", True, True),
    ("tmp", "a/tmp/x.md", False, True),
    ("/tmp", "tmp/x.md", False, True),
    ("/tmp", "a/tmp/x.md", False, False),
    # an inner slash anchors
    ("docs/old.md", "docs/old.md", False, True),
    ("docs/old.md", "x/docs/old.md", False, False),
    # the double-star forms: leading, middle, trailing
    ("**/tmp", "tmp/a.md", False, True),
    ("**/tmp", "x/y/tmp/a.md", False, True),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**/b", "x/a/b", False, False),
    ("a/**/b", "a/bb", False, False),
    ("docs/**", "docs/x.md", False, True),
    ("docs/**", "docs/x/y.md", False, True),
    ("docs/**", "docs", True, False),
    ("docs/**", "docs.md", False, False),
    # a double star inside a segment is a plain star
    ("a**z.md", "abcz.md", False, True),
    ("a**z.md", "ab/cz.md", False, False),
    # question marks and classes
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "x.md", False, True),
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "xy.md", False, False),
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "file7.md", False, True),
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "filex.md", False, False),
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "negd.md", False, True),
    ("?.md\nfile[0-9].md\nneg[!a-c].md", "negb.md", False, False),
    # wildcards never cross a slash
    ("/a*b.md\n/c?d.md", "axxb.md", False, True),
    ("/a*b.md\n/c?d.md", "a/b.md", False, False),
    ("/a*b.md\n/c?d.md", "c/d.md", False, False),
    # patterns are case-insensitive
    ("Drafts/\n*.LOG\n[A-C]x.md", "drafts/a.md", False, True),
    ("Drafts/\n*.LOG\n[A-C]x.md", "DRAFTS/a.md", False, True),
    ("Drafts/\n*.LOG\n[A-C]x.md", "x.log", False, True),
    ("Drafts/\n*.LOG\n[A-C]x.md", "bX.md", False, True),
    # escapes and trailing spaces
    ("\\#hash.md\n\\!bang.md\nspaced.md   \nkeep\\ ", "#hash.md", False, True),
    ("\\#hash.md\n\\!bang.md\nspaced.md   \nkeep\\ ", "!bang.md", False, True),
    ("\\#hash.md\n\\!bang.md\nspaced.md   \nkeep\\ ", "spaced.md", False, True),
    ("\\#hash.md\n\\!bang.md\nspaced.md   \nkeep\\ ", "keep ", False, True),
]


@pytest.mark.parametrize(("text", "rel", "is_dir", "expected"), GITIGNORE_CASES)
def test_gitignore_subset(text: str, rel: str, is_dir: bool, expected: bool) -> None:
    assert excluded(rules_for(text), rel, is_dir=is_dir) == expected


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
