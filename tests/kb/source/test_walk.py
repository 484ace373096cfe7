"""collect_files: which files of a KB folder get indexed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.errors import GrooveError
from pytest_groove.files.resource_limits import ResourceLimit
from pytest_groove.kb.source import walk
from pytest_groove.kb.source.walk import (
    CollectResult,
    file_extension,
    is_office_lock_file,
    load_exclusion_rules,
)
from pytest_groove.kb.source.walk import collect_files as _collect
from pytest_groove.settings.config import IndexSettings

needs_symlinks = pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")


def make(root: Path, *rels: str, text: str = "x") -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def collect(root: Path, **index: object) -> CollectResult:
    return _collect(root, IndexSettings(**index))  # type: ignore[arg-type]


def test_markdown_only_by_default(tmp_path: Path) -> None:
    make(tmp_path, "a.md", "b.txt", "c.pdf", "d.markdown", "noext")
    assert collect(tmp_path).files == ("a.md",)


def test_markdown_and_text_when_enabled(tmp_path: Path) -> None:
    make(tmp_path, "a.md", "b.txt", "c.pdf")
    assert collect(tmp_path, parsers=("md", "txt")).files == ("a.md", "b.txt")


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    make(tmp_path, "UPPER.MD", "Mixed.Md", "note.TXT")
    assert collect(tmp_path, parsers=("md", "txt")).files == ("Mixed.Md", "UPPER.MD", "note.TXT")


def test_files_are_sorted_forward_slash_paths(tmp_path: Path) -> None:
    make(tmp_path, "z.md", "a/b.md", "a-b/c.md", "a/a/z.md", "B.md")
    files = collect(tmp_path).files
    # component-wise order: folder "a" before "a-b"
    assert files == ("B.md", "a/a/z.md", "a/b.md", "a-b/c.md", "z.md")
    assert collect(tmp_path).files == files


def test_hidden_files_and_folders_are_collected(tmp_path: Path) -> None:
    make(tmp_path, ".hidden/a.md", ".notes.md")
    assert collect(tmp_path).files == (".hidden/a.md", ".notes.md")


def test_dot_only_name_has_no_extension(tmp_path: Path) -> None:
    make(tmp_path, ".md", "real.md")
    assert collect(tmp_path).files == ("real.md",)


def test_default_exclude_dirs(tmp_path: Path) -> None:
    make(tmp_path, ".obsidian/a.md", "target/b.md", ".vscode/c.md", ".idea/d.md", "ok/e.md")
    assert collect(tmp_path).files == ("ok/e.md",)


def test_custom_exclude_dirs_replace_the_default(tmp_path: Path) -> None:
    make(tmp_path, ".obsidian/a.md", "private/b.md", "ok.md")
    assert collect(tmp_path, exclude_dirs=("private",)).files == (".obsidian/a.md", "ok.md")


@pytest.mark.parametrize("exclude_dirs", [(), ("other",)])
def test_fail_safe_dirs_always_skipped(tmp_path: Path, exclude_dirs: tuple[str, ...]) -> None:
    make(tmp_path, ".git/a.md", ".SVN/b.md", "x/node_modules/c.md", ".groove/e5/d.md", "ok.md")
    assert collect(tmp_path, exclude_dirs=exclude_dirs).files == ("ok.md",)


def test_index_dir_inside_the_kb_is_skipped(tmp_path: Path) -> None:
    make(tmp_path, "cache/idx/notes.md", "ok.md")
    result = collect(tmp_path, index_dir=tmp_path / "cache" / "idx")
    assert result.files == ("ok.md",)


def test_ignore_file_is_never_collected_and_applies(tmp_path: Path) -> None:
    make(tmp_path, "keep.md", "drafts/a.md", "b.log.md")
    (tmp_path / ".grooveignore").write_text("drafts/\n*.log.md\n")
    result = collect(tmp_path, parsers=("md", "txt"))
    assert result.files == ("keep.md",)
    assert result.warnings == ()


def test_newly_ignored_files_are_dropped_on_the_next_walk(tmp_path: Path) -> None:
    make(tmp_path, "a.md", "b.md")
    assert collect(tmp_path).files == ("a.md", "b.md")
    (tmp_path / ".grooveignore").write_text("b.md\n")
    assert collect(tmp_path).files == ("a.md",)


def test_ignore_file_warnings_are_reported(tmp_path: Path) -> None:
    make(tmp_path, "a.md")
    (tmp_path / ".grooveignore").write_text("[oops\n")
    result = collect(tmp_path)
    assert result.files == ("a.md",)
    assert len(result.warnings) == 1 and "line 1" in result.warnings[0]


def test_office_lock_files_are_skipped(tmp_path: Path) -> None:
    make(tmp_path, "~$report.md", ".~lock.notes.md#", "~draft.md")
    assert collect(tmp_path).files == ("~draft.md",)
    assert is_office_lock_file("~$x.md")
    assert is_office_lock_file(".~lock.x.md#")
    assert not is_office_lock_file(".~lock.x.md")


def test_hard_links_are_skipped_with_a_warning(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    make(kb, "plain.md")
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    os.link(outside, kb / "linked.md")
    result = collect(kb)
    assert result.files == ("plain.md",)
    assert len(result.warnings) == 1 and "linked.md" in result.warnings[0]


def test_hard_linked_file_with_other_extension_is_not_reported(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (tmp_path / "x.pdf").write_bytes(b"%PDF")
    os.link(tmp_path / "x.pdf", kb / "x.pdf")
    assert collect(kb).warnings == ()


@needs_symlinks
def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make(outside, "o.md")
    kb = tmp_path / "kb"
    make(kb, "real.md")
    (kb / "file-link.md").symlink_to(outside / "o.md")
    (kb / "dir-link").symlink_to(outside, target_is_directory=True)
    (kb / "dangling.md").symlink_to(tmp_path / "missing.md")
    result = collect(kb)
    assert result.files == ("real.md",)
    assert result.warnings == ()


@needs_symlinks
def test_symlinked_kb_root_is_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    make(real, "a/b.md")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert collect(link).files == ("a/b.md",)


def test_missing_or_file_root_is_a_groove_error(tmp_path: Path) -> None:
    with pytest.raises(GrooveError, match="not found"):
        collect(tmp_path / "nope")
    make(tmp_path, "f.md")
    with pytest.raises(GrooveError, match="not a folder"):
        collect(tmp_path / "f.md")


@pytest.mark.skipif(
    os.name == "nt" or (hasattr(os, "geteuid") and os.geteuid() == 0),
    reason="root can read any folder",
)
def test_unreadable_folder_is_a_warning(tmp_path: Path) -> None:
    make(tmp_path, "ok.md", "locked/a.md")
    (tmp_path / "locked").chmod(0)
    try:
        result = collect(tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert result.files == ("ok.md",)
    assert "locked" in result.warnings[0]


def test_fifo_is_not_collected(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    make(tmp_path, "ok.md")
    os.mkfifo(tmp_path / "pipe.md")
    assert collect(tmp_path).files == ("ok.md",)


def test_exclusion_rules_agree_with_the_walk(tmp_path: Path) -> None:
    make(tmp_path, "a/b/c.md", "a/skip/d.md", "e.md")
    (tmp_path / ".grooveignore").write_text("skip/\n")
    rules, warnings = load_exclusion_rules(tmp_path, IndexSettings())
    assert warnings == ()
    assert rules.is_excluded("a/skip/d.md", False)
    assert not rules.is_excluded("a/b/c.md", False)
    assert collect(tmp_path).files == ("a/b/c.md", "e.md")


@pytest.mark.parametrize(
    ("name", "ext"),
    [
        ("a.md", "md"),
        ("A.MD", "md"),
        (".md", None),
        (".x.md", "md"),
        ("noext", None),
        ("d/a.b.TXT", "txt"),
        ("trailing.", ""),
    ],
)
def test_file_extension(name: str, ext: str | None) -> None:
    assert file_extension(name) == ext


_segment = st.sampled_from(["a", "b", "Docs", ".git", "node_modules", "drafts", "x y", "日本"])
_file = st.sampled_from(["n.md", "N.MD", "t.txt", "p.pdf", "~$l.md", "k.md"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.lists(_segment, max_size=3), _file), max_size=8))
def test_walk_matches_the_exclusion_predicate(
    tmp_path_factory: pytest.TempPathFactory, layout: list[tuple[list[str], str]]
) -> None:
    root = tmp_path_factory.mktemp("kb")
    rels = sorted({"/".join([*dirs, name]) for dirs, name in layout})
    make(root, *rels)
    (root / ".grooveignore").write_text("drafts/\n!drafts/k.md\n*.MD\n")
    index = IndexSettings(parsers=("md", "txt"), exclude_dirs=("docs",))
    rules, _ = load_exclusion_rules(root, index)
    expected = sorted(
        (
            rel
            for rel in rels
            if file_extension(rel) in ("md", "txt")
            and not is_office_lock_file(rel.rsplit("/", 1)[-1])
            and not rules.is_excluded(rel, False)
        ),
        key=lambda r: r.split("/"),
    )
    assert list(_collect(root, index).files) == expected


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.ENOMEM])
def test_a_folder_out_of_reach_for_want_of_resources_stops_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    # skipped with "cannot list it (Too many open files)", a KB looked empty (and an index
    # kept a folder's rows it could not see): the limit is named instead
    make(tmp_path, "ok.md", "deep/a.md")
    real = walk.open_folder

    def out_of_resources(root_fd: int, root: Path, rel: str) -> int:
        if rel:
            raise OSError(code, os.strerror(code))
        return real(root_fd, root, rel)

    monkeypatch.setattr(walk, "open_folder", out_of_resources)
    with pytest.raises(ResourceLimit) as caught:
        collect(tmp_path)
    assert str(tmp_path / "deep") in caught.value.message
    assert ("ulimit -n" in caught.value.message) == (code == errno.EMFILE)
