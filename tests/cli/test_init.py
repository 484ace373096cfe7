"""``groove init``: starter golden file and groove.toml, never overwriting."""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import EXAMPLE_KB
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.settings.config import Settings, parse_settings
from tests.helpers.cli_invoke import Groove
from tests.helpers.config_keys import accepted_keys, keys_of
from tests.helpers.kb_files import write_invoices_kb


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(
        EXAMPLE_KB,
        root,
        ignore=shutil.ignore_patterns(".groove", ".groove-eval-history*", ".groove-eval.yml"),
    )
    return root


def uncomment(text: str, start: str) -> str:
    """The lines from ``start`` on, with one leading ``# `` taken off each."""
    lines = text.splitlines()
    begin = lines.index(start)
    out = []
    for line in lines[begin:]:
        if not line.startswith("#"):
            break
        out.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(out) + "\n"


def test_init_writes_both_starters_and_names_the_next_command(kb: Path, groove: Groove) -> None:
    done = groove("init", "--kb-path", kb)
    assert done.returncode == 0, done.stderr
    assert f"wrote {kb / '.groove-eval.yml'}" in done.stdout
    assert f"wrote {kb / 'groove.toml'}" in done.stdout
    assert f"groove eval --kb-path {kb}" in done.stdout

    golden = (kb / ".groove-eval.yml").read_text("utf-8")
    # the KB's documents and their headings are listed
    assert "#   api/authentication.md\n#     - Tokens\n#     - Rotating a token\n" in golden
    assert "#     - 再発防止のタスク" in golden
    # the examples, uncommented, are a golden file the loader accepts, pointing at real files
    examples = uncomment(golden, "# queries:")
    (kb / "examples.yml").write_text(examples, encoding="utf-8")
    loaded = load_golden(kb / "examples.yml", kb)
    assert [q.id for q in loaded.queries] == [
        "first-question",
        "second-question",
        "heading-level",
        "smoke-question",
    ]
    assert len(loaded.queries[1].expected) == 2
    assert loaded.queries[2].expected[0].heading is not None
    assert loaded.queries[3].tags == ("smoke",)


def test_the_toml_starter_uncommented_is_every_default(kb: Path, groove: Groove) -> None:
    assert groove("init", "--kb-path", kb).returncode == 0
    text = (kb / "groove.toml").read_text("utf-8")
    assert tomllib.loads(text) == {}  # everything commented out
    lines = [
        line[2:]
        for line in text.splitlines()
        if line.startswith("# ") and ("=" in line or line.startswith("# ["))
    ]
    # every key the reader accepts is shown ...
    shown = keys_of("\n".join(lines))
    assert sorted(accepted_keys(kb / "groove.toml") - shown) == []
    # ... and each one not marked as an example is at its default
    defaulted = [line for line in lines if "# example" not in line]
    settings = parse_settings(tomllib.loads("\n".join(defaulted)), kb / "groove.toml")
    defaults = Settings()
    assert settings.index == defaults.index
    assert settings.search == defaults.search
    # the two paths are read relative to the file: their defaults are that folder's files
    bare = {"golden": None, "baseline_file": None}
    assert replace(settings.eval, **bare) == replace(defaults.eval, **bare)
    assert settings.retriever == defaults.retriever
    # ... and the examples are accepted too
    parse_settings(tomllib.loads("\n".join(lines)), kb / "groove.toml")


def test_init_never_overwrites(kb: Path, groove: Groove) -> None:
    (kb / "groove.toml").write_text('model = "hash"\n', encoding="utf-8")
    done = groove("init", "--kb-path", kb)
    assert done.returncode == 0
    assert "kept " in done.stdout and "never overwrites" in done.stdout
    assert (kb / "groove.toml").read_text("utf-8") == 'model = "hash"\n'
    assert (kb / ".groove-eval.yml").is_file()


def test_init_needs_a_folder(tmp_path: Path, groove: Groove) -> None:
    done = groove("init", "--kb-path", tmp_path / "missing")
    assert done.returncode == 1 and done.stderr.startswith("Error: knowledge base not found")


def test_a_read_only_kb_is_one_line_with_the_way_out(
    kb: Path, monkeypatch: pytest.MonkeyPatch, groove: Groove
) -> None:
    import errno

    import pytest_groove.cli.init as init

    def read_only(path: Path) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(init, "open_new", read_only)
    done = groove("init", "--kb-path", kb)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: could not create ") and "Read-only" in done.stderr
    assert "make the knowledge base folder writable" in done.stderr


# --------------------------------------------------------------------------- groove init


def test_init_lists_merged_headings_and_writes_the_gitignore_lines(
    tmp_path: Path, groove: Groove
) -> None:
    from pytest_groove.evaluation.starter import GITIGNORE_LINES
    from pytest_groove.kb.indexer import GROOVE_DIR_NAME

    kb = write_invoices_kb(tmp_path / "kb")
    (kb / ".groove-eval.yml").unlink()
    done = groove.process("init", "--kb-path", kb)
    assert done.returncode == 0, done.stderr
    starter = (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    assert "#     - Sending invoices\n" in starter
    assert "#     - VAT numbers\n" not in starter
    assert (
        "#     (merged: VAT numbers -> Sending invoices; under 50 bytes, not a heading to pin)"
    ) in starter
    assert GITIGNORE_LINES[0] == f"{GROOVE_DIR_NAME}/"
    assert f"wrote {kb / '.gitignore'} ({len(GITIGNORE_LINES)} line(s)" in done.stdout
    written = (kb / ".gitignore").read_text("utf-8").splitlines()
    assert written[1:] == list(GITIGNORE_LINES)
    assert ".groove-baseline.json" not in written  # the accepted baseline is committed


def test_init_adds_only_the_gitignore_lines_still_missing(tmp_path: Path, groove: Groove) -> None:
    kb = write_invoices_kb(tmp_path / "kb")
    (kb / ".gitignore").write_text("notes.tmp\n.groove/\n.groove-eval-history.json.lock", "utf-8")
    done = groove.process("init", "--kb-path", kb)
    assert done.returncode == 0, done.stderr
    text = (kb / ".gitignore").read_text("utf-8")
    assert text.startswith("notes.tmp\n.groove/\n.groove-eval-history.json.lock\n# pytest-groove")
    assert text.count(".groove/") == 1 and ".groove-eval-history.json.bak-*\n" in text
    again = groove.process("init", "--kb-path", kb)
    assert (kb / ".gitignore").read_text("utf-8") == text and "gitignore" not in again.stdout


def test_init_lists_a_section_cut_for_its_size_once(kb: Path, groove: Groove) -> None:
    """A 200 KB section is four chunks under one heading: the starter names it once."""
    (kb / "ops" / "dump.md").write_text(
        "## Dump\n\n"
        + "word " * 40_000
        + "\n\n## After\n\nSome ordinary text after the dump, long enough for a chunk.\n",
        encoding="utf-8",
    )
    assert groove("init", "--kb-path", kb).returncode == 0
    starter = (kb / ".groove-eval.yml").read_text(encoding="utf-8")
    assert starter.count("#     - Dump\n") == 1 and "#     - After\n" in starter
