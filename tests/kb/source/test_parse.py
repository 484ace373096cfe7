"""Titles taken from a file's name."""

from __future__ import annotations

import pytest

from pytest_groove.kb.source.parse import title_from_filename


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
