"""A path that names the wrong kind of thing gets a fix that fits: a golden file that is
a folder or missing where ``[eval].golden`` points (the setting is named), an index
folder that is a note (never "remove it"), a folder where the history lock goes, a
golden file saved as UTF-16 without a byte-order mark (not "not a golden file").
Through ``groove`` in-process, the hash model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.kb_files import golden_yaml, write_notes

GOLDEN = golden_yaml(
    ("deploy-days", "which days do we deploy", "ops/deploys.md"),
)


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(
        tmp_path / "kb",
        {
            ".groove-eval.yml": GOLDEN,
            "ops/deploys.md": "# Deploys\n\n## Schedule\n\nWe deploy on Tuesdays.\n",
        },
    )


def one_error(done: CliRun) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: "), line
    return line


def groove_eval(kb: Path, *flags: str) -> CliRun:
    return invoke("eval", "--kb-path", kb, "--model", "hash", "--no-history", *flags)


def test_a_golden_setting_naming_a_folder_names_the_setting(kb: Path) -> None:
    (kb / "groove.toml").write_text('[eval]\ngolden = "ops"\n', encoding="utf-8")
    line = one_error(groove_eval(kb))
    assert f"{kb / 'ops'} is a folder, not a file; name the golden file itself" in line
    assert f"([eval].golden in {kb / 'groove.toml'})" in line
    assert "replace it" not in line


def test_a_golden_setting_naming_nothing_names_the_setting(kb: Path) -> None:
    (kb / "groove.toml").write_text('[eval]\ngolden = "nope.yml"\n', encoding="utf-8")
    line = one_error(groove_eval(kb))
    assert line == (
        f"Error: no golden file at {kb / 'nope.yml'}, which [eval].golden in "
        f"{kb / 'groove.toml'} names; fix the setting or create the file"
    )


def test_a_golden_flag_naming_a_folder_says_folder_without_the_setting(kb: Path) -> None:
    line = one_error(groove_eval(kb, "--golden", str(kb / "ops")))
    assert "is a folder, not a file" in line and "[eval].golden" not in line


def test_an_index_dir_naming_a_note_never_says_remove_it(kb: Path) -> None:
    (kb / "groove.toml").write_text('index_dir = "ops/deploys.md"\n', encoding="utf-8")
    line = one_error(invoke("index", "--kb-path", kb, "--model", "hash"))
    assert "ops/deploys.md inside the knowledge base is a file, not a folder" in line
    assert "remove it" not in line
    assert (kb / "ops/deploys.md").read_text(encoding="utf-8").startswith("# Deploys")


def test_a_folder_where_the_history_lock_goes_says_remove_the_folder(kb: Path) -> None:
    (kb / ".groove-eval-history.json.lock").mkdir()
    done = invoke("eval", "--kb-path", kb, "--model", "hash")
    assert done.returncode == 1
    assert "a folder is in its place; remove the folder and run again" in done.stderr
    assert "check that the directory is writable" not in done.stderr


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_a_golden_file_saved_as_utf16_without_a_bom_says_so(kb: Path, encoding: str) -> None:
    (kb / ".groove-eval.yml").write_bytes(GOLDEN.encode(encoding))
    line = one_error(groove_eval(kb))
    assert "saved as UTF-16 or UTF-32? save the file as UTF-8" in line
    assert "not a golden file" not in line


def test_a_mostly_non_ascii_golden_file_in_utf16_is_told_apart(kb: Path) -> None:
    japanese = GOLDEN.replace("which days do we deploy", "デプロイは何曜日に行いますか" * 8)
    (kb / ".groove-eval.yml").write_bytes(japanese.encode("utf-16-le"))
    assert "save the file as UTF-8" in one_error(groove_eval(kb))
    (kb / ".groove-eval.yml").write_bytes(japanese.encode("utf-16"))  # with its BOM
    assert "(it starts with a UTF-16 byte-order mark)" in one_error(groove_eval(kb))


def test_a_golden_flag_naming_nothing_says_check_the_path_not_pass_the_flag(kb: Path) -> None:
    line = one_error(groove_eval(kb, "--golden", "ci-golden.yml"))
    assert line == (
        "Error: no golden file at ci-golden.yml, which --golden names; check the path "
        "(relative to the working directory) or create the file"
    )
