"""A KB's own groove.toml is read defensively and cannot point outside the KB."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.settings.config import load_settings


def _kb(tmp_path: Path, toml: str) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "groove.toml").write_text(toml, encoding="utf-8")
    return kb


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('index_dir = "../../.."\n', "index_dir"),
        ('index_dir = "/tmp/elsewhere"\n', "index_dir"),
        ('[eval]\ngolden = "/etc/shadow"\n', "[eval].golden"),
        ('[eval]\ngolden = "../outside.yml"\n', "[eval].golden"),
    ],
)
def test_paths_in_the_kbs_own_config_must_stay_inside(tmp_path: Path, toml: str, key: str) -> None:
    kb = _kb(tmp_path, toml)
    with pytest.raises(GrooveError) as info:
        load_settings(kb)
    assert f"{key} points outside the knowledge base" in info.value.message
    # the fix names the option as each door spells it
    assert re.search(r"pass --(index-dir|golden) to", info.value.message)
    assert re.search(r"pass --groove-(index-dir|golden) to", info.value.message_for("pytest"))


def test_a_symlinked_folder_inside_the_kb_counts_as_outside(tmp_path: Path) -> None:
    kb = _kb(tmp_path, 'index_dir = "cache/index"\n')
    (tmp_path / "elsewhere").mkdir()
    (kb / "cache").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(GrooveError, match="index_dir points outside"):
        load_settings(kb)


def test_paths_inside_the_kb_are_accepted(tmp_path: Path) -> None:
    kb = _kb(tmp_path, 'index_dir = ".cache/groove"\n[eval]\ngolden = "tests/golden.yml"\n')
    settings = load_settings(kb)
    assert settings.index.index_dir == kb.resolve() / ".cache/groove"
    assert settings.eval.golden == kb.resolve() / "tests/golden.yml"


def test_a_config_outside_the_kb_may_point_anywhere(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    config = tmp_path / "ci" / "groove.toml"
    config.parent.mkdir()
    config.write_text('index_dir = "../cache"\n[eval]\ngolden = "../golden.yml"\n')
    settings = load_settings(kb, config)
    assert settings.index.index_dir == tmp_path / "ci" / "../cache"


def test_the_kbs_own_config_is_not_read_through_a_symlink(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    secret = tmp_path / "secret.toml"
    secret.write_text('model = "s3cret-value"\n')
    (kb / "groove.toml").symlink_to(secret)
    with pytest.raises(GrooveError, match="refusing to read the config file") as info:
        load_settings(kb)
    assert "s3cret" not in info.value.message


def test_groove_eval_with_a_kb_config_naming_an_outside_golden_prints_none_of_it(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$s3cretSalt$hash:19700:0:99999:7:::\n", encoding="utf-8")
    kb = _kb(tmp_path, f'[eval]\ngolden = "{secret}"\n')
    (kb / "a.md").write_text("## A\n\nSome words.\n", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_groove.cli",
            "eval",
            "--kb-path",
            str(kb),
            "--model",
            "hash",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert result.returncode == 1
    assert "[eval].golden points outside the knowledge base" in result.stderr
    assert "s3cret" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
