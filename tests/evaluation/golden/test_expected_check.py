"""Before any search, every expected path and heading must name indexed content, and
a KB with nothing indexed is refused; nothing is recorded in either case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.expected_check import (
    check_before_search,
    check_expected_entries,
    check_kb_has_documents,
)
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery, GoldenSet
from tests.helpers.cli_invoke import Groove
from tests.helpers.kb_files import LONG, write_invoices_kb

INDEXED: dict[str, set[str | None]] = {
    "docs/architecture.md": {"Data flow", "Storage"},
    "docs/usage.md": {None, "Search"},
    "README.md": {None},
}


def golden(*entries: ExpectedEntry) -> GoldenSet:
    query = GoldenQuery(id="q", query="q text", expected=entries, line=3)
    return GoldenSet(path="kb/.groove-eval.yml", hash="0" * 64, queries=(query,))


def test_every_entry_indexed_passes(tmp_path: Path) -> None:
    check_expected_entries(
        golden(
            ExpectedEntry("docs/architecture.md", "  data FLOW ", line=5),
            ExpectedEntry("README.md", line=6),
        ),
        INDEXED,
        tmp_path,
    )


def test_a_missing_path_names_file_line_path_and_suggestions(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as info:
        check_expected_entries(
            golden(ExpectedEntry("docs/architecure.md", line=7)), INDEXED, tmp_path
        )
    assert info.value.message.startswith(
        "golden file kb/.groove-eval.yml: line 7: expected path `docs/architecure.md` is not "
        "in the index (did you mean `docs/architecture.md`"
    )
    assert "nothing was searched or recorded" in info.value.message


def test_a_path_in_another_unicode_normal_form_is_named_as_such(tmp_path: Path) -> None:
    # the file's name decomposed (NFD, as macOS writes it), the golden path composed:
    # they look alike and compare unequal, so "did you mean `café.md`?" would puzzle
    indexed = {"notes/cafe\u0301.md": {None}}
    with pytest.raises(GrooveError) as info:
        check_expected_entries(
            golden(ExpectedEntry("notes/caf\u00e9.md", line=4)), indexed, tmp_path
        )
    message = info.value.message
    assert "looks the same but spells it with other Unicode code points" in message
    assert "(here U+00E9 for the file's U+0065 U+0301)" in message
    assert "did you mean" not in message


def test_a_path_with_no_close_match_gets_no_suggestion(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as info:
        check_expected_entries(golden(ExpectedEntry("zzz/qqq.txt", line=4)), INDEXED, tmp_path)
    assert "did you mean" not in info.value.message


def test_a_file_present_but_not_indexed_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    with pytest.raises(GrooveError, match="the file exists but was not indexed"):
        check_expected_entries(golden(ExpectedEntry("empty.md", line=4)), INDEXED, tmp_path)


def test_a_heading_no_chunk_carries_is_refused_with_suggestions(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as info:
        check_expected_entries(
            golden(ExpectedEntry("docs/architecture.md", "Data flows", line=9)), INDEXED, tmp_path
        )
    assert (
        "line 9: expected heading `Data flows` is not a heading of `docs/architecture.md` "
        "(did you mean `Data flow`?)"
    ) in info.value.message


def test_the_first_problem_is_named_and_the_others_counted(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as info:
        check_expected_entries(
            golden(
                ExpectedEntry("a.md", line=4),
                ExpectedEntry("README.md", line=5),
                ExpectedEntry("b.md", line=6),
                ExpectedEntry("c.md", line=7),
            ),
            INDEXED,
            tmp_path,
        )
    assert "line 4: expected path `a.md`" in info.value.message
    assert "(and 2 more expected entries like it)" in info.value.message


def test_an_empty_index_is_refused_naming_what_is_indexed(tmp_path: Path) -> None:
    with pytest.raises(GrooveError) as info:
        check_kb_has_documents({}, tmp_path, ("md",))
    assert "has no indexable document: only .md files are indexed" in info.value.message
    assert "[parsers]" in info.value.message
    check_kb_has_documents({"a.md": {None}}, tmp_path, ("md",))


def test_empty_kb_is_reported_before_the_golden_entries(tmp_path: Path) -> None:
    with pytest.raises(GrooveError, match="no indexable document"):
        check_before_search(golden(ExpectedEntry("a.md", line=4)), {}, tmp_path, ("md", "txt"))


# --------------------------------------------------------------------------- groove eval


GOLDEN = """\
queries:
  - query: "how does the release schedule work"
    expected:
      - path: deploys.md
  - query: "who carries the pager"
    expected:
      - path: oncal.md
"""


def _kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "deploys.md").write_text("## Release schedule\n\nTuesdays and Thursdays.\n")
    (kb / "oncall.md").write_text("## Pager rotation\n\nOne engineer per week.\n")
    (kb / ".groove-eval.yml").write_text(GOLDEN, encoding="utf-8")
    return kb


def test_groove_eval_stops_on_a_missing_expected_path_and_records_nothing(
    tmp_path: Path, groove: Groove
) -> None:
    kb = _kb(tmp_path)
    result = groove("eval", "--kb-path", str(kb), "--model", "hash")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        f"golden file {kb / '.groove-eval.yml'}: line 7: expected path `oncal.md` is not in "
        "the index (did you mean `oncall.md`?)"
    ) in result.stderr
    assert result.stdout == ""
    assert not (kb / HISTORY_FILE_NAME).exists()


def test_groove_eval_refuses_a_kb_with_nothing_indexable(tmp_path: Path, groove: Groove) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "notes.txt").write_text("plain text only\n", encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - query: plain text\n    expected:\n      - path: notes.txt\n",
        encoding="utf-8",
    )
    result = groove("eval", "--kb-path", str(kb), "--model", "hash")
    assert result.returncode == 1
    assert "has no indexable document: only .md files are indexed" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (kb / HISTORY_FILE_NAME).exists()


def _without_dac_override() -> list[str] | None:
    """A command prefix that runs a process this one's folder permissions bind: none for
    a user that is not root; for root, ``setpriv`` dropping the capabilities that let it
    read any folder (None where that cannot be had)."""
    if os.name == "nt":
        return None
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    wrap = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    probe = subprocess.run([*wrap, "true"], capture_output=True, check=False)
    return wrap if probe.returncode == 0 else None


@pytest.mark.skipif(_without_dac_override() is None, reason="needs a process bound by permissions")
def test_an_expected_path_in_a_folder_that_cannot_be_listed_says_so(tmp_path: Path) -> None:
    # the walk skipped the folder with a warning; the golden check then said the path
    # "is not in the index ...; fix the golden file", as for a typo
    kb = _kb(tmp_path)
    (kb / "team").mkdir()
    (kb / "oncall.md").rename(kb / "team" / "oncall.md")
    (kb / ".groove-eval.yml").write_text(
        GOLDEN.replace("path: oncal.md", "path: team/oncall.md"), encoding="utf-8"
    )
    (kb / "team").chmod(0)
    try:
        result = subprocess.run(
            [
                *(_without_dac_override() or []),
                *[sys.executable, "-m", "pytest_groove.cli"],
                *["eval", "--kb-path", str(kb), "--model", "hash"],
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        (kb / "team").chmod(0o755)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "expected path `team/oncall.md` is not in the index: it is below `team/`, a folder "
        "this process cannot list (Permission denied: check its permissions), so the indexer "
        "skipped it; fix the golden file, or let the file be indexed"
    ) in result.stderr
    assert not (kb / HISTORY_FILE_NAME).exists()


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
    kb = write_invoices_kb(tmp_path / "kb", PINNED_TO_A_SHORT_SECTION)
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
    done = groove.process(
        "eval", "--kb-path", write_invoices_kb(tmp_path / "kb", golden), "--model", "hash"
    )
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
    kb = write_invoices_kb(
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


def test_a_not_expected_typo_is_refused_like_an_expected_one(tmp_path: Path) -> None:
    query = GoldenQuery(
        id="q",
        query="q text",
        expected=(ExpectedEntry("README.md", line=5),),
        line=3,
        not_expected=(ExpectedEntry("docs/usag.md", line=7),),
    )
    golden_set = GoldenSet(path="kb/.groove-eval.yml", hash="0" * 64, queries=(query,))
    with pytest.raises(GrooveError) as info:
        check_expected_entries(golden_set, INDEXED, tmp_path)
    assert info.value.message.startswith(
        "golden file kb/.groove-eval.yml: line 7: not_expected path `docs/usag.md` is not in "
        "the index (did you mean `docs/usage.md`"
    )
    # a path the baseline held (deleted since) is no typo
    check_expected_entries(golden_set, INDEXED, tmp_path, removed={"docs/usag.md"})
