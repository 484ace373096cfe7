"""A golden file in a folder of the KB is read below the KB: a folder on the way
swapped for a symlink is refused, not followed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import load_golden

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links")

GOLDEN = "queries:\n  - query: release schedule\n    expected:\n      - path: a.md\n"


def test_a_nested_golden_file_is_read(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    (kb / "tests").mkdir(parents=True)
    (kb / "tests" / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    assert len(load_golden(kb / "tests" / "golden.yml", kb).queries) == 1


def test_a_folder_on_the_way_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "golden.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "tests").symlink_to(outside, target_is_directory=True)
    with pytest.raises(GrooveError, match="refusing to read the golden file"):
        load_golden(kb / "tests" / "golden.yml", kb)


def test_a_golden_file_outside_the_kb_given_by_the_user_is_read(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    golden = tmp_path / "elsewhere" / "golden.yml"
    golden.parent.mkdir()
    golden.write_text(GOLDEN, encoding="utf-8")
    assert len(load_golden(golden, kb).queries) == 1
