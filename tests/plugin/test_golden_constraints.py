"""``not_expected`` and ``within`` through both doors: the pytest item and ``groove eval``.

The team's retriever answers every query with the same three documents, in order
(``ops/deploy.md`` first, ``billing/invoices.md`` second), so the ranks are known.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_invoke import CliRun
from tests.helpers.kb_files import INVOICES_NOTES, write_notes
from tests.helpers.retriever_runs import importable_module

RETRIEVER = """
def search(query, limit):
    return [
        {"path": "ops/deploy.md", "heading": "Canary", "score": 3.0},
        {"path": "billing/invoices.md", "heading": "Sending invoices", "score": 2.0},
        {"path": "drafts/old.md", "heading": None, "score": 1.0},
    ][:limit]
"""

NOTES = {**INVOICES_NOTES, "drafts/old.md": "# Old\n\nThe old invoice process, kept for history.\n"}

GOLDEN = """\
# constraints under test
queries:
  - id: within-one
    query: "When do invoices go out?"
    expected:
      - path: billing/invoices.md
    within: 1
  - id: no-drafts
    query: "How does a canary release ship?"
    expected:
      - path: ops/deploy.md
    not_expected:
      - path: drafts/old.md
  - id: kept
    query: "Canary?"
    expected:
      - path: ops/deploy.md
    within: 1
    not_expected:
      - path: billing/invoices.md
        heading: VAT numbers
"""


def _kb(root: Path, golden: str = GOLDEN) -> Path:
    return write_notes(root, {**NOTES, ".groove-eval.yml": golden})


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    _kb(pytester.path / "kb")
    pytester.makepyfile(team_search=RETRIEVER)
    pytester.syspathinsert()
    sys.modules.pop("team_search", None)
    return pytester


def test_the_items_fail_naming_the_document_and_its_rank_or_the_within(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search", "-rA"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*golden query 'within-one' failed: first expected hit at rank 2, within 1*",
            "*golden query 'no-drafts' failed: not expected `drafts/old.md` at rank 3 in the "
            "top 10*",
        ]
    )


def test_the_constraints_reach_the_xdist_controller(project: pytest.Pytester) -> None:
    """Each worker ships its results to the controller, which reports the verdicts."""
    pytest.importorskip("xdist")
    result = project.runpytest(
        "--groove-kb", "kb", "--groove-retriever", "team_search:search", "-p", "xdist", "-n", "2"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*✗ within-one*first expected hit at rank 2, within 1*"])


def test_a_not_expected_typo_is_refused_before_any_search(project: pytest.Pytester) -> None:
    (project.path / "kb" / ".groove-eval.yml").write_text(
        GOLDEN.replace("path: drafts/old.md", "path: drafts/olde.md"), encoding="utf-8"
    )
    result = project.runpytest("--groove-kb", "kb", "--groove-retriever", "team_search:search")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*line 13: not_expected path `drafts/olde.md` is not in the knowledge base*drafts/old.md*"]
    )


def _eval(groove_run: CliRun) -> dict[str, object]:
    assert groove_run.returncode == 0, groove_run.stderr
    report: dict[str, object] = json.loads(groove_run.stdout)
    return report


def test_groove_eval_counts_them_as_failed_queries(
    tmp_path: Path, groove: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = _kb(tmp_path / "kb")
    importable_module(tmp_path, "team_search", RETRIEVER, monkeypatch)
    args = ("eval", "--kb-path", kb, "--retriever", "team_search:search", "--no-history")
    text = groove(*args, cwd=tmp_path)  # type: ignore[operator]
    assert text.returncode == 0, text.stderr  # like a miss: reported, no gate asked
    assert "✗ within-one" in text.stdout
    assert "first expected hit at rank 2, within 1" in text.stdout
    assert "not expected `drafts/old.md` at rank 3 in the top 10" in text.stdout
    report = _eval(groove(*args, "--format", "json", cwd=tmp_path))  # type: ignore[operator]
    rows = {row["id"]: row for row in report["per_query"]}  # type: ignore[attr-defined]
    assert [rows[q]["verdict"] for q in ("within-one", "no-drafts", "kept")] == [
        "violated",
        "violated",
        "pass",
    ]
    assert rows["within-one"]["violations"] == [
        {"kind": "within", "rank": 2, "within": 1, "new": True}
    ]
    assert rows["no-drafts"]["violations"] == [
        {"kind": "not_expected", "rank": 3, "path": "drafts/old.md", "heading": None, "new": True}
    ]
    assert rows["no-drafts"]["not_expected"] == [{"path": "drafts/old.md", "heading": None}]
    assert rows["within-one"]["within"] == 1
    assert "within" not in rows["no-drafts"] and "not_expected" not in rows["within-one"]
    markdown = groove(*args, "--format", "markdown", cwd=tmp_path)  # type: ignore[operator]
    assert markdown.returncode == 0, markdown.stderr
    assert "broke a constraint: within-one, no-drafts" in markdown.stdout.splitlines()[0]


#: the same three documents; ``swap.txt`` beside the module puts the second first
SWAPPING = """
from pathlib import Path

def search(query, limit):
    hits = [
        {"path": "billing/invoices.md", "heading": "Sending invoices", "score": 3.0},
        {"path": "ops/deploy.md", "heading": "Canary", "score": 2.0},
        {"path": "drafts/old.md", "heading": None, "score": 1.0},
    ]
    if Path(__file__).with_name("swap.txt").exists():
        hits[0], hits[1] = hits[1], hits[0]
    return hits[:limit]
"""


def test_the_gate_fails_on_a_violation_the_baseline_kept(
    tmp_path: Path, groove: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = _kb(tmp_path / "kb")
    importable_module(tmp_path, "team_swap", SWAPPING, monkeypatch)
    args = ("eval", "--kb-path", kb, "--retriever", "team_swap:search", "--fail-on-regression")
    first = groove(*args, cwd=tmp_path)  # type: ignore[operator]
    assert first.returncode == 0, first.stderr  # nothing to compare: reported only
    again = groove(*args, cwd=tmp_path)  # type: ignore[operator]
    # no-drafts and kept break their constraints in the baseline too: known, not gated
    assert again.returncode == 0, again.stderr
    (tmp_path / "swap.txt").write_text("", encoding="utf-8")  # invoices.md to rank 2
    broken = groove(*args, cwd=tmp_path)  # type: ignore[operator]
    assert broken.returncode == 1
    gate = broken.stderr.split("constraints the baseline run kept are broken")[1]
    assert "within-one: first expected hit at rank 2, within 1" in gate
    assert "no-drafts" not in gate


def test_the_accepted_baseline_keeps_what_tells_a_known_violation(
    tmp_path: Path, groove: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The accepted baseline keeps hits down to the deepest expected one; with
    ``not_expected`` down to the deepest of those too: drafts/old.md at rank 3 under an
    answer at rank 1 is known there, not new."""
    kb = _kb(tmp_path / "kb")
    (tmp_path / "swap.txt").write_text("", encoding="utf-8")  # deploy.md first
    importable_module(tmp_path, "team_swap", SWAPPING, monkeypatch)
    args = ("eval", "--kb-path", kb, "--retriever", "team_swap:search")
    accepted = groove(*args, "--accept", cwd=tmp_path)  # type: ignore[operator]
    assert accepted.returncode == 0, accepted.stderr
    kept = '["billing/invoices.md", "Sending invoices"], ["drafts/old.md", null]]'
    assert kept in (kb / ".groove-baseline.json").read_text(encoding="utf-8")
    again = groove(*args, "--fail-on-regression", cwd=tmp_path)  # type: ignore[operator]
    assert again.returncode == 0, again.stderr
    assert "accepted baseline" in again.stdout + again.stderr
    assert "not expected `drafts/old.md` at rank 3" in again.stdout  # still reported
