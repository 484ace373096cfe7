"""What a newcomer trips over (issue 25), each through the door the newcomer uses.

The ``groove`` command runs in a subprocess with the ``hash`` embedder on a small KB
written here; the pytest door runs under pytester.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli_invoke import Groove

LONG = "This paragraph is long enough to stand as a chunk of its own in the index."

NOTES = {
    "billing/invoices.md": (
        "# Invoices\n\n## Sending invoices\n\n"
        f"{LONG} Invoices go out on the first working day of the month.\n\n"
        "## VAT numbers\n\nEvery invoice shows one.\n"
    ),
    "ops/deploy.md": (
        f"# Deploy\n\n## Canary\n\n{LONG} A canary release ships to one percent first.\n"
    ),
}

GOLDEN = """\
queries:
  - id: sending
    query: "When do invoices go out?"
    expected:
      - path: billing/invoices.md
        heading: Sending invoices
  - id: canary
    query: "How does a canary release ship?"
    expected:
      - path: ops/deploy.md
"""


def write_kb(root: Path, golden: str = GOLDEN) -> Path:
    for name, text in NOTES.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (root / ".groove-eval.yml").write_text(golden, encoding="utf-8")
    return root


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_kb(tmp_path / "kb")


# --------------------------------------------------------------------------- corpus changed


def test_corpus_change_names_the_frozen_baseline_it_was_compared_with(
    kb: Path, groove: Groove
) -> None:
    first = groove.process("eval", "--kb-path", kb, "--model", "hash", "--freeze-baseline")
    assert first.returncode == 0, first.stderr
    groove.process("eval", "--kb-path", kb, "--model", "hash")  # a later run, not the baseline
    (kb / "ops" / "extra.md").write_text(f"## Extra\n\n{LONG}\n", encoding="utf-8")
    third = groove.process("eval", "--kb-path", kb, "--model", "hash")
    assert third.returncode == 0, third.stderr
    frozen = first.stdout.splitlines()[0].split(" — ", 1)[1]
    assert f"⚠️ corpus changed since the frozen baseline run of {frozen} (" in third.stdout
    assert "since last run" not in third.stdout


# --------------------------------------------------------------------------- empty KB


def test_indexing_a_folder_without_markdown_says_so_and_creates_nothing(
    tmp_path: Path, groove: Groove
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not Markdown\n", encoding="utf-8")
    done = groove.process("index", "--kb-path", empty, "--model", "hash")
    assert done.returncode == 1
    assert "0 chunks embedded" not in done.stdout
    assert f"no indexable file under {empty}: only .md files are indexed" in done.stderr
    assert "check --kb-path" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (empty / ".groove").exists()


def test_an_existing_index_of_a_now_empty_kb_is_still_brought_up_to_date(
    kb: Path, groove: Groove
) -> None:
    assert groove.process("index", "--kb-path", kb, "--model", "hash").returncode == 0
    for name in NOTES:
        (kb / name).unlink()
    again = groove.process("index", "--kb-path", kb, "--model", "hash")
    assert again.returncode == 0, again.stderr
    assert "2 removed" in again.stdout


# --------------------------------------------------------------------------- merged heading

PINNED_TO_A_SHORT_SECTION = """\
queries:
  - id: vat
    query: "Where is the VAT number on an invoice?"
    expected:
      - path: billing/invoices.md
        heading: VAT numbers
"""


def test_a_heading_merged_away_is_named_as_merged_not_absent(
    tmp_path: Path, groove: Groove
) -> None:
    kb = write_kb(tmp_path / "kb", PINNED_TO_A_SHORT_SECTION)
    done = groove.process("eval", "--kb-path", kb, "--model", "hash")
    assert done.returncode == 1
    assert "is not a heading of" not in done.stderr
    assert (
        "expected heading `VAT numbers` of `billing/invoices.md` is no heading in the index: "
        "its section is under 50 bytes, so it was merged into the section before it "
        "(heading `Sending invoices`); pin that heading instead, or lengthen the section"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def test_a_heading_that_is_really_absent_keeps_the_plain_message(
    tmp_path: Path, groove: Groove
) -> None:
    golden = PINNED_TO_A_SHORT_SECTION.replace("VAT numbers", "Refunds")
    done = groove.process("eval", "--kb-path", write_kb(tmp_path / "kb", golden), "--model", "hash")
    assert done.returncode == 1
    assert "expected heading `Refunds` is not a heading of `billing/invoices.md`" in done.stderr
    assert "merged" not in done.stderr


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("Rollback steps\n==============", "as a setext heading (underlined with `===`)"),
        ("Rollback steps\n---", "as a setext heading (underlined with `---`)"),
        ("#### Rollback steps", "as a level-4 heading (`#### Rollback steps`)"),
        ("# Rollback steps", "as a level-1 title (`# Rollback steps`)"),
    ],
)
def test_a_heading_written_in_a_form_that_starts_no_section_is_named_so(
    tmp_path: Path, written: str, said: str, groove: Groove
) -> None:
    # "is not a heading" alone left a CommonMark author looking at a heading
    kb = write_kb(
        tmp_path / "kb", PINNED_TO_A_SHORT_SECTION.replace("VAT numbers", "Rollback steps")
    )
    (kb / "billing" / "invoices.md").write_text(
        f"# Invoices\n\n## Sending invoices\n\n{LONG}\n\n{written}\n\n{LONG}\n",
        encoding="utf-8",
    )
    done = groove("eval", "--kb-path", kb, "--model", "hash", "--no-history")
    assert done.returncode == 1
    assert (
        "expected heading `Rollback steps` is not a heading of `billing/invoices.md`: it is "
        f"written there {said}, and only `## ` and `### ` lines start a section "
        "(docs/retrieval-pipeline.md); write it `## Rollback steps` in the note, or pin a "
        "heading the note has (nothing was searched or recorded)"
    ) in done.stderr


# --------------------------------------------------------------------------- groove init


def test_init_lists_merged_headings_and_prints_the_gitignore_lines(
    kb: Path, groove: Groove
) -> None:
    from pytest_groove.evaluation.starter import GITIGNORE_LINES
    from pytest_groove.kb.indexer import GROOVE_DIR_NAME

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
    assert f"add these lines to {kb / '.gitignore'}" in done.stdout
    for line in GITIGNORE_LINES:
        assert f"\n    {line}\n" in done.stdout
    assert not (kb / ".gitignore").exists()  # printed, never written


def test_init_prints_only_the_gitignore_lines_still_missing(kb: Path, groove: Groove) -> None:
    (kb / ".gitignore").write_text(".groove/\n.groove-eval-history.json.lock\n", "utf-8")
    done = groove.process("init", "--kb-path", kb)
    assert done.returncode == 0, done.stderr
    assert "\n    .groove/\n" not in done.stdout
    assert "\n    .groove-eval-history.json.bak-*\n" in done.stdout
    assert (kb / ".gitignore").read_text("utf-8").count("\n") == 2


# --------------------------------------------------------------------------- HTML fingerprint


def test_html_fingerprint_of_a_retriever_run_shows_no_search_pipeline_keys(
    kb: Path, tmp_path: Path, groove: Groove
) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "team_search.py").write_text(
        "def search(query, limit):\n"
        "    return [{'path': 'ops/deploy.md', 'heading': 'Canary', 'score': 1.0}]\n",
        encoding="utf-8",
    )
    own = tmp_path / "own.html"
    done = groove.process(
        "eval", "--kb-path", kb, "--retriever", "team_search:search", "--no-history",
        "--html", own, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = own.read_text(encoding="utf-8")
    assert "team_search:search" in html and "metric_version" in html
    assert "fts_query_version" not in html
    engine = tmp_path / "engine.html"
    done = groove.process(
        "eval", "--kb-path", kb, "--model", "hash", "--no-history", "--html", engine
    )
    assert done.returncode == 0, done.stderr
    assert "fts_query_version" in engine.read_text(encoding="utf-8")
