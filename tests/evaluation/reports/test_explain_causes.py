"""The causes a regression is explained by, over the real engine (hash embedder) through
``groove eval``: whichever expected document was lost (not only the first), the expected
document's own edit named before what outranks it, no "displaced by" for a query that
was missed in the baseline too, an answer left out by an ignore rule told apart from a
deleted one, and a note deleted in the same change as a golden-file edit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli_invoke import CliRun, invoke
from tests.helpers.kb_files import write_notes

DOCS = {
    "caching.md": "## Cache invalidation\n\nThe ingest worker deletes the cached parcel status "
    "before writing a new event; cache invalidation is delete-then-read.\n",
    "errors.md": "## Rate limits\n\nA client that receives status 429 must wait for the "
    "Retry-After header before it tries again.\n",
    "deploys.md": "## Release schedule\n\nReleases leave on Tuesday and Thursday mornings; "
    "nothing ships on Friday.\n",
    "oncall.md": "## Pager rotation\n\nEach engineer carries the pager for one week, Monday "
    "to Monday.\n",
}

GOLDEN = """\
queries:
  - id: cache-and-errors
    query: "cache invalidation of the parcel status, and status 429 retry-after"
    expected:
      - path: "caching.md"
      - path: "errors.md"
  - id: cache
    query: "cache invalidation ingest worker"
    expected:
      - path: "caching.md"
  - id: schedule
    query: "release schedule tuesday thursday"
    expected:
      - path: "deploys.md"
  - id: wrong-answer
    query: "release schedule tuesday thursday friday"
    expected:
      - path: "oncall.md"
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", {**DOCS, ".groove-eval.yml": GOLDEN})


def groove_eval(kb: Path, *args: str, k: str = "1,3") -> CliRun:
    return invoke("eval", "--kb-path", kb, "--model", "hash", "--k", k, "--no-color", *args)


def line_of(out: str, qid: str) -> str:
    """The query's row in the "regressions and misses" block."""
    found = re.search(rf"^  [✗↓] {re.escape(qid)} +\S.*$", out, flags=re.M)
    assert found is not None, out
    return found.group(0)


def text_and_json(kb: Path, *args: str, k: str = "1,3") -> tuple[CliRun, dict[str, Any]]:
    """The same evaluation reported as text and as JSON: the JSON one runs on a copy of
    the KB (its index and history as they are now), so both compare with one baseline."""
    twin = kb.with_name(kb.name + "-json")
    shutil.copytree(kb, twin)
    printed = groove_eval(twin, "--format", "json", *args, k=k)
    assert printed.stdout, printed.stderr
    report = {q["id"]: q for q in json.loads(printed.stdout)["per_query"]}
    return groove_eval(kb, *args, k=k), report


def test_the_second_expected_document_lost_is_explained_by_what_displaced_it(
    kb: Path, tmp_path: Path
) -> None:
    assert groove_eval(kb).returncode == 0
    notes = kb / "notes"
    notes.mkdir()
    (notes / "retry.md").write_text(
        "## Retry\n\nstatus 429 retry-after: status 429, retry-after\n", encoding="utf-8"
    )
    (notes / "backoff.md").write_text(
        "## Backoff\n\nafter status 429, honour retry-after\n", encoding="utf-8"
    )
    run, report = text_and_json(kb)
    row = line_of(run.stdout, "cache-and-errors")
    # the first expected document kept rank 1: the second one is what was lost
    assert "recall@3: 1.00 → 0.50" in row
    assert "`errors.md` rank 2 → " in row
    assert row.endswith("displaced by notes/retry.md (added), notes/backoff.md (added)")
    verdict = report["cache-and-errors"]
    assert (verdict["baseline_first_rank"], verdict["first_rank"]) == (1, 1)
    assert verdict["displaced_by"] == [
        {"path": "notes/retry.md", "change": "added"},
        {"path": "notes/backoff.md", "change": "added"},
    ]
    assert [(a["path"], a["before"]) for a in verdict["lost"]] == [("errors.md", 2)]


def test_an_edited_expected_document_is_named_before_what_outranks_it(
    kb: Path, tmp_path: Path
) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / "caching.md").write_text(
        "## Storage\n\nLookups are held in Redis for thirty seconds.\n", encoding="utf-8"
    )
    html = tmp_path / "r.html"
    run, report = text_and_json(kb, "--html", str(html))
    row = line_of(run.stdout, "cache")
    assert "; `caching.md` (expected) changed since the baseline run; displaced by " in row
    assert row.index("(expected) changed") < row.index("displaced by")
    verdict = report["cache"]
    assert verdict["changed"] == ["caching.md"]
    assert verdict["displaced_by"]  # the unchanged documents now above it are still named
    assert {d["change"] for d in verdict["displaced_by"]} == {"unchanged"}
    assert "`caching.md` (expected) changed since the baseline run" in html.read_text(
        encoding="utf-8"
    )


def test_a_query_missed_in_the_baseline_too_was_displaced_by_nothing(kb: Path) -> None:
    # at k=1 `wrong-answer` misses: deploys.md, not its expected oncall.md, ranks first
    assert groove_eval(kb, k="1").returncode == 0
    (kb / "notes.md").write_text(
        "## Release notes\n\nrelease schedule tuesday thursday friday; release schedule "
        "tuesday thursday friday\n",
        encoding="utf-8",
    )
    run, report = text_and_json(kb, k="1")
    row = line_of(run.stdout, "wrong-answer")
    assert row.endswith("recall@1: 0.00 → 0.00")
    assert report["wrong-answer"]["displaced_by"] == []
    assert report["wrong-answer"]["lost"] == []
    # a query that did have its answer within the cut-off still names what pushed it down
    assert "displaced by notes.md (added)" in line_of(run.stdout, "schedule")


def test_an_answer_an_ignore_rule_leaves_out_is_not_called_removed(
    kb: Path, tmp_path: Path
) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / ".grooveignore").write_text("# drafts\ncach*.md\n", encoding="utf-8")
    run, report = text_and_json(kb, "--fail-on-regression")
    assert run.returncode == 1  # a lost answer still fails the gate
    row = line_of(run.stdout, "cache")
    assert "removed from the knowledge base" not in row
    assert row.endswith(
        "`caching.md` no longer indexed since the baseline run, though the file is still "
        "there: it is excluded by `.grooveignore` line 2 (`cach*.md`)"
    )
    assert "answer of cache no longer indexed (caching.md)" in run.stderr
    removed = report["cache"]["removed"]
    assert removed == [
        {
            "path": "caching.md",
            "renamed_to": None,
            "not_indexed_because": "it is excluded by `.grooveignore` line 2 (`cach*.md`)",
        }
    ]
    # the next run's baseline no longer has it, an older run did: still a lost answer
    # naming the rule (it was a golden-file error that stopped every later run)
    again = groove_eval(kb)
    assert again.returncode == 0, again.stderr
    assert "see the indexing warnings" not in again.stdout + again.stderr
    assert line_of(again.stdout, "cache").endswith(
        "though the file is still there: it is excluded by `.grooveignore` line 2 (`cach*.md`)"
    )


def test_a_note_deleted_with_a_golden_edit_is_a_lost_answer_not_a_typo(kb: Path) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / "caching.md").unlink()
    golden = kb / ".groove-eval.yml"
    golden.write_text(GOLDEN.replace("friday", "saturday"), encoding="utf-8")
    run = groove_eval(kb)
    # a stored run indexed it: the query scores the lost answer (it was a golden-file
    # error that stopped the run, and every later one)
    assert run.returncode == 0, run.stderr
    assert "did you mean" not in run.stdout + run.stderr
    assert line_of(run.stdout, "cache").endswith(
        "`caching.md` removed from the knowledge base since the baseline run"
    )


def test_a_note_renamed_with_a_golden_edit_names_its_new_path(kb: Path) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / "caching.md").rename(kb / "cache.md")
    golden = kb / ".groove-eval.yml"
    golden.write_text(GOLDEN.replace("friday", "saturday"), encoding="utf-8")
    run = groove_eval(kb)
    assert run.returncode == 0, run.stderr
    assert "`caching.md` renamed to `cache.md`? update the golden file" in line_of(
        run.stdout, "cache"
    )


def test_the_gate_line_calls_a_renamed_answer_renamed(kb: Path) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / "caching.md").rename(kb / "cache.md")
    run = groove_eval(kb, "--fail-on-regression")
    assert run.returncode == 1
    assert "answer of cache renamed? (caching.md → cache.md)" in run.stderr
    assert "answer of cache removed" not in run.stderr


def test_a_lost_answer_under_a_loose_threshold_is_not_called_a_drop(kb: Path) -> None:
    assert groove_eval(kb).returncode == 0
    (kb / "caching.md").unlink()
    # no metric dropped by 0.9, yet a lost answer fails the gate: the line says which
    run = groove_eval(kb, "--fail-on-regression", "--threshold", "0.9")
    assert run.returncode == 1
    assert re.search(
        r"^groove eval: expected answers were lost since the run of \S+ "
        r"\(answer of cache-and-errors removed \(caching\.md\), "
        r"answer of cache removed \(caching\.md\)\)\.",
        run.stderr,
        re.MULTILINE,
    ), run.stderr
    assert "regressed by more than" not in run.stderr


HEADED = GOLDEN.replace(
    '      - path: "caching.md"\n  - id: schedule',
    '      - path: "caching.md"\n        heading: "Cache invalidation"\n  - id: schedule',
)


def test_a_heading_an_edit_renamed_is_a_lost_answer_not_a_golden_error(kb: Path) -> None:
    (kb / ".groove-eval.yml").write_text(HEADED, encoding="utf-8")
    assert groove_eval(kb).returncode == 0
    caching = kb / "caching.md"
    caching.write_text(
        caching.read_text(encoding="utf-8").replace("## Cache invalidation", "## Cache purge"),
        encoding="utf-8",
    )
    run = groove_eval(kb, "--fail-on-regression")
    assert "golden file" not in run.stderr, run.stderr
    # a lost answer fails the gate, as a deleted note does
    assert run.returncode == 1
    assert "heading of the answer of cache removed (caching.md: `Cache invalidation`)" in (
        run.stderr
    )
    # the answer is gone, not pushed down: its line names the heading, and nothing
    # "displaced" it (every hit above a missing answer would otherwise be listed)
    cache = line_of(run.stdout, "cache")
    assert cache.endswith(
        "`caching.md#Cache invalidation` (expected) heading removed from the note since the "
        "baseline run"
    ), cache
    assert "displaced by" not in cache
    # the baseline (checked against this golden file) had the heading; the edit lost it,
    # so the query is a miss the gate sees, not a typo in the golden file
    assert line_of(run.stdout, "cache").startswith("  ✗ cache")
    # the run after the edit is the baseline now: an earlier run of this golden file had
    # the heading, so it is still a lost answer, in this run and every later one (it was
    # a golden-file error that stopped them)
    for _ in range(2):
        again = groove_eval(kb)
        assert again.returncode == 0, again.stderr
        assert line_of(again.stdout, "cache").startswith("  ✗ cache")
    # with no run that had it, the heading is the golden file's mistake again
    alone = groove_eval(kb, "--no-history")
    assert alone.returncode == 1
    assert "expected heading `Cache invalidation` is not a heading of `caching.md`" in (
        alone.stderr
    )


def test_a_note_deleted_since_an_edited_run_is_not_called_a_typo(kb: Path) -> None:
    assert groove_eval(kb).returncode == 0
    history = kb / ".groove-eval-history.json"
    history.write_text(
        re.sub(r'"mrr":[0-9.]+', '"mrr":0.3', history.read_text(encoding="utf-8"), count=1),
        encoding="utf-8",
    )
    (kb / "caching.md").unlink()
    run = groove_eval(kb, "--fail-on-regression")
    assert run.returncode == 1
    assert "did you mean" not in run.stderr
    assert re.search(
        r"expected path `caching\.md` is not in the index: the note was deleted since the "
        r"run of \S+Z in the history \(a run that cannot be the baseline\), which indexed it",
        run.stderr,
    ), run.stderr


def test_a_passing_aggregate_gate_still_names_the_queries_that_dropped(kb: Path) -> None:
    # a threshold the averages stay within: groove eval's gate passes, and says that
    # some queries dropped (pytest fails their items), rather than nothing at all
    assert groove_eval(kb, "--threshold", "0.9").returncode == 0
    (kb / "caching.md").write_text(
        "## Lunch\n\nThe canteen opens at noon on weekdays.\n", encoding="utf-8"
    )
    run = groove_eval(kb, "--threshold", "0.9", "--fail-on-regression")
    assert run.returncode == 0, run.stderr
    assert (
        "groove eval: the gate passed on the aggregate metrics, but 1 query dropped since "
        "the baseline (cache; see the per-query block): groove eval gates on the averages, "
        "pytest --groove-kb also fails each such query's item"
    ) in run.stderr
    quiet = groove_eval(kb, "--threshold", "0.9", "--fail-on-regression")
    assert "dropped since the baseline" not in quiet.stderr  # nothing dropped this time


TWO_HEADINGS = {
    "runbook.md": "## Rollback steps\n\nRedeploy the previous image tag and watch the error "
    "rate fall.\n\n## Escalation\n\nPage the duty manager when an outage passes one hour.\n",
    **DOCS,
}
TWO_HEADINGS_GOLDEN = """\
queries:
  - id: rollback
    query: "redeploy the previous image tag"
    expected:
      - path: "runbook.md"
        heading: "Rollback steps"
  - id: escalate
    query: "page the duty manager when an outage passes one hour"
    expected:
      - path: "runbook.md"
        heading: "Escalation"
  - id: schedule
    query: "release schedule tuesday thursday"
    expected:
      - path: "deploys.md"
"""


def test_only_the_heading_the_edit_removed_is_lost_not_the_notes_other_pinned_ones(
    tmp_path: Path,
) -> None:
    kb = write_notes(tmp_path / "kb", {**TWO_HEADINGS, ".groove-eval.yml": TWO_HEADINGS_GOLDEN})
    assert groove_eval(kb).returncode == 0
    runbook = kb / "runbook.md"
    runbook.write_text(
        runbook.read_text(encoding="utf-8").replace("## Rollback steps", "## Undoing a deploy"),
        encoding="utf-8",
    )
    run, report = text_and_json(kb, "--fail-on-regression")
    assert run.returncode == 1
    # the note lost one pinned heading; the other query's heading is still there
    assert "heading of the answer of rollback removed (runbook.md: `Rollback steps`)" in (
        run.stderr
    )
    assert "answer of escalate" not in run.stderr, run.stderr
    assert report["rollback"]["headings_removed"] == [
        {"path": "runbook.md", "heading": "Rollback steps"}
    ]
    assert report["rollback"]["lost"] == []
    assert report["rollback"]["displaced_by"] == []
    assert report["escalate"]["headings_removed"] == []
    assert report["escalate"]["verdict"] == "pass"
