"""``groove coverage``: its JSON agrees with a count made here from the golden file, the
notes on disk and the eval report's own top k."""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.cli_invoke import Groove

HEADING = re.compile(r"^#{2,3} +(.+?)\s*$", re.M)


def _norm(heading: str) -> str:
    return " ".join(heading.split()).lower()


def _independent(kb: Path, report: dict[str, Any]) -> dict[str, Any]:
    golden = yaml.safe_load((kb / ".groove-eval.yml").read_text(encoding="utf-8"))
    entries = [e for q in golden["queries"] for e in q["expected"] if e.get("grade", 1) >= 1]
    docs = {e["path"] for e in entries}
    pinned = {(e["path"], _norm(e["heading"])) for e in entries if e.get("heading")}
    folders: dict[str, list[int]] = {}
    notes = sorted(
        p.relative_to(kb).as_posix() for p in kb.rglob("*.md") if ".groove" not in p.parts
    )
    for rel in notes:
        sections = {_norm(h) for h in HEADING.findall((kb / rel).read_text(encoding="utf-8"))}
        row = folders.setdefault(posixpath.dirname(rel) or ".", [0, 0, 0, 0])
        row[0] += 1
        row[1] += rel in docs
        row[2] += len(sections)
        row[3] += sum((rel, s) in pinned for s in sections)
    k = max(int(key) for key in report["aggregate"]["recall_at_k"])
    returned: set[str] = set()
    unexpected: Counter[str] = Counter()
    for row in report["per_query"]:
        top = [hit for hit in row["top_k"] if hit["rank"] <= k]
        returned |= {hit["path"] for hit in top}
        wanted = {e["path"] for e in row["expected"] if e.get("grade", 1) >= 1}
        unexpected.update({hit["path"] for hit in top if hit["path"] not in wanted})
    return {
        "folders": [
            {
                "folder": name,
                "documents": r[0],
                "documents_expected": r[1],
                "sections": r[2],
                "sections_expected": r[3],
            }
            for name, r in sorted(folders.items())
        ],
        "documents": len(notes),
        "documents_expected": len(docs & set(notes)),
        "never_returned": [rel for rel in notes if rel not in returned],
        "most_unexpected": unexpected.most_common(1)[0],
        "k": k,
    }


def test_json_agrees_with_a_count_from_the_golden_file_and_the_notes(
    example_kb_copy: Path, groove: Groove
) -> None:
    kb = example_kb_copy
    golden = kb / ".groove-eval.yml"
    # a folder no query expects anything of
    (kb / "archive").mkdir()
    (kb / "archive" / "zz-obsolete.md").write_text(
        "# Obsolete\n\n## Quartz\n\nxylophone quartz zebra juniper\n", encoding="utf-8"
    )
    args = ("--kb-path", kb, "--model", "hash", "--k", "1,3")
    done = groove("coverage", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    coverage = json.loads(done.stdout)
    report = json.loads(groove("eval", *args, "--no-history", "--format", "json").stdout)
    want = _independent(kb, report)
    assert coverage["folders"] == want["folders"]
    assert (coverage["documents"], coverage["documents_expected"]) == (
        want["documents"],
        want["documents_expected"],
    )
    assert coverage["k"] == want["k"] == 3
    assert coverage["never_returned"] == want["never_returned"]
    assert coverage["never_returned"]  # at k 3, some documents are never reached
    path, count = want["most_unexpected"]
    assert {"path": path, "queries": count} in coverage["displacers"]
    assert coverage["queries"] == len(yaml.safe_load(golden.read_text())["queries"])
    assert not (kb / ".groove-eval-history.json").exists()  # nothing recorded
    text = groove("coverage", *args)
    assert text.returncode == 0, text.stderr
    assert "documents expected:" in text.stdout
    assert f"  {want['never_returned'][0]}\n" in text.stdout


def test_every_report_of_a_whole_run_carries_the_same_coverage(
    example_kb_copy: Path, groove: Groove, tmp_path: Path
) -> None:
    """groove eval's JSON report holds what groove coverage prints; its Markdown and
    HTML say the totals; a run of some of the queries carries none."""
    kb = example_kb_copy
    args = ("--kb-path", kb, "--model", "hash", "--no-history")
    alone = json.loads(groove("coverage", *args[:-1], "--format", "json").stdout)
    markdown, html = tmp_path / "summary.md", tmp_path / "report.html"
    done = groove("eval", *args, "--format", "json", "--markdown", markdown, "--html", html)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"] == alone
    totals = (
        f"documents expected {alone['documents_expected']}/{alone['documents']}",
        f"sections {alone['sections_expected']}/{alone['sections']}",
    )
    summary = markdown.read_text(encoding="utf-8")
    assert all(total in summary for total in totals), summary
    page = html.read_text(encoding="utf-8")
    assert "Coverage of the knowledge base" in page
    assert f"{alone['documents_expected']} of {alone['documents']}" in page
