"""docs/ci.md's recipes, replayed: their shell steps run as written, in a team's git
repository with a bare remote, two branches that each accept a drop, and a merge.

The installed ``groove`` and ``pytest`` run them (the interpreter's own scripts
folder first on PATH); only the install and cache steps are left out.  The KB uses
the ``hash`` model so that the whole story takes seconds.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

DOC = Path(__file__).resolve().parents[2] / "docs" / "ci.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

NOTES = {
    "deploy.md": "# Deploying\n\n## Release days\n\nWe ship new versions to production on "
    "Tuesdays and Thursdays, after the smoke checks pass on staging.\n",
    "rollback.md": "# Rolling back\n\n## Going back\n\nWhen error rates double after a "
    "release, roll back to the previous build with the rollback script first.\n",
    "oncall.md": "# On-call\n\n## Pager swaps\n\nTrade your pager week with a colleague by "
    "editing the rota and telling the incident channel.\n",
    "keys.md": "# Keys\n\n## Rotating signing keys\n\nRotate the webhook signing keys every "
    "quarter; old keys stay valid for a grace period of one week.\n",
    "cache.md": "# Caching\n\n## Stale entries\n\nStale tracking entries expire after ten "
    "minutes; purge the cache by hand after a schema migration.\n",
    # between the others in path order: the two pull requests below edit documents
    # that are not next to each other there (neighbours' lines would conflict in git)
    "faq.md": "# FAQ\n\n## Accounts\n\nPasswords are reset from the login page.\n",
    "glossary.md": "# Glossary\n\n## Terms\n\nA tenant is one customer's workspace.\n",
    "team.md": "# Team\n\n## Lunch\n\nLunch is at noon in the big room.\n",
}
GOLDEN = """queries:
  - id: ship-days
    query: which days do we ship new versions to production
    expected: [{path: deploy.md}]
  - id: roll-back
    query: error rates doubled after a release, how do I roll back
    expected: [{path: rollback.md}]
  - id: pager
    query: trade my pager week with a colleague
    expected: [{path: oncall.md}]
  - id: keys
    query: how often do we rotate the webhook signing keys
    expected: [{path: keys.md}]
  - id: stale
    query: when do stale tracking entries expire from the cache
    expected: [{path: cache.md}]
"""


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(DOC.read_text("utf-8")) if kind == lang]


def console_commands(after_heading: str) -> list[str]:
    """The ``$`` commands of the first console block after a heading of docs/ci.md."""
    text = DOC.read_text("utf-8").split(f"\n## {after_heading}\n", 1)[1]
    body = next(b for kind, b in _BLOCK.findall(text) if kind == "console")
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def github_steps() -> list[dict[str, Any]]:
    job = next(yaml.safe_load(b) for b in _blocks("yaml") if "jobs" in yaml.safe_load(b))
    steps: list[dict[str, Any]] = job["jobs"]["groove"]["steps"]
    return steps


def github_step(name: str) -> str:
    """The ``run`` of the GitHub job's step called ``name``."""
    return str(next(s["run"] for s in github_steps() if s.get("name") == name)).strip()


def github_gate_step() -> str:
    """The ``run`` of the GitHub job's step named "retrieval gate"."""
    return github_step("retrieval gate")


def gitlab_gate_steps() -> list[str]:
    """The GitLab job's script lines but the install."""
    job = next(yaml.safe_load(b) for b in _blocks("yaml") if "groove" in yaml.safe_load(b))
    return [str(line).strip() for line in job["groove"]["script"] if "pip install" not in line]


class Team:
    """A team's repository: its clone, a bare remote, and the shell the recipes run in."""

    def __init__(self, root: Path) -> None:
        self.remote = root / "remote.git"
        self.repo = root / "team"
        scripts = str(Path(sys.executable).parent)
        self.env = {
            **os.environ,
            "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
            "GIT_AUTHOR_NAME": "team",
            "GIT_AUTHOR_EMAIL": "team@example.com",
            "GIT_COMMITTER_NAME": "team",
            "GIT_COMMITTER_EMAIL": "team@example.com",
            "NO_COLOR": "1",
        }
        self.env.pop("PYTEST_ADDOPTS", None)
        self.env.pop("PYTEST_XDIST_WORKER", None)

    def sh(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def ok(self, command: str) -> str:
        done = self.sh(command)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    def gate(self) -> subprocess.CompletedProcess[str]:
        return self.sh(github_gate_step() + " -p no:cacheprovider")

    def step_summary(self) -> str:
        """Run the job's "step summary" step as GitHub does: ``$GITHUB_STEP_SUMMARY`` a
        fresh file the step appends to; what the run's page would show."""
        summary = self.repo.parent / "step-summary.md"
        summary.write_text("", encoding="utf-8")
        done = subprocess.run(
            ["bash", "-c", github_step("step summary")],
            cwd=self.repo,
            env={**self.env, "GITHUB_STEP_SUMMARY": str(summary)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return summary.read_text(encoding="utf-8")

    def write(self, rel: str, text: str) -> None:
        path = self.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def team(tmp_path: Path) -> Team:
    team = Team(tmp_path)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(team.remote)], check=True)
    team.repo.mkdir()
    team.ok(f"git init -q -b main && git remote add origin {shlex.quote(str(team.remote))}")
    for name, text in NOTES.items():
        team.write(f"docs/{name}", text)
    team.write("docs/.groove-eval.yml", GOLDEN)
    # the top hit only: an answer whose text moved to another note is a clear miss
    team.write("docs/groove.toml", 'model = "hash"\n\n[eval]\nk_values = [1]\n')
    team.ok("git add -A && git commit -qm 'notes and golden set' && git push -q origin main")
    return team


def test_the_recipes_steps_are_what_this_test_replays() -> None:
    assert console_commands("Once: arm the gate")[:2] == [
        "groove init --kb-path docs",
        "groove baseline accept --kb-path docs",
    ]
    assert console_commands("Accepting an intended drop")[0] == (
        "groove baseline accept --kb-path docs"
    )
    assert github_gate_step().startswith("pytest --groove-kb docs")
    assert "--groove-markdown groove-summary.md" in github_gate_step()
    assert gitlab_gate_steps() == [github_gate_step()]
    assert github_step("step summary") == 'cat groove-summary.md >> "$GITHUB_STEP_SUMMARY"'
    comment = next(s for s in github_steps() if s.get("name") == "pull-request comment")
    assert comment["with"]["path"] == "groove-summary.md"


def rendered(summary: str) -> str:
    """The summary as a CommonMark renderer with GitHub's tables shows it."""
    html = MarkdownIt("commonmark").enable("table").render(summary)
    assert "<table>" in html
    return html


def test_two_pull_requests_accept_their_drops_and_merge_green(team: Team) -> None:
    for command in console_commands("Once: arm the gate"):
        team.ok(command)
    team.ok("git push -q origin main")
    assert team.gate().returncode == 0
    # an ordinary run modifies no tracked file and leaves nothing untracked in the KB
    assert team.ok("git status --porcelain -- docs") == ""

    # a pull request rewrites an answer away and adds a golden query: red, named
    team.ok("git checkout -q -b rewrite main")
    # the key rotation text moves to another note: its old note no longer answers
    team.write("docs/keys.md", "# Gardening\n\n## Tomatoes\n\nWater the tomatoes daily.\n")
    team.write("docs/faq.md", NOTES["faq.md"] + "\n## Signing keys\n\n" + NOTES["keys.md"])
    team.write(
        "docs/.groove-eval.yml",
        GOLDEN + "  - id: purge\n    query: purge the cache by hand\n"
        "    expected: [{path: cache.md}]\n",
    )
    red = team.gate()
    assert red.returncode == 1, red.stdout
    assert "FAILED docs/.groove-eval.yml::keys" in red.stdout
    assert "golden changed: 1 added (purge)" in red.stdout
    summary = team.step_summary()
    assert summary.startswith("❌ **groove: failed")
    assert "missed: keys" in summary.splitlines()[0]
    assert "golden changed: 1 added (purge)" in rendered(summary)
    for command in console_commands("Accepting an intended drop"):
        team.ok(command)
    accepted = team.gate()
    assert accepted.returncode == 0, accepted.stdout
    assert "Aggregate (accepted baseline: " in accepted.stdout
    assert "1 xfailed" in accepted.stdout  # the moved answer is a known miss now
    summary = team.step_summary()
    assert summary.startswith("✅ **groove: passed — the gate held; known misses: keys")
    rendered(summary)

    # another pull request drops another query on purpose, from main
    team.ok("git checkout -q -b rollback main")
    team.write("docs/rollback.md", "# Bicycles\n\n## Tyres\n\nPump the tyres weekly.\n")
    team.write("docs/cache.md", NOTES["cache.md"] + "\n## Going back\n\n" + NOTES["rollback.md"])
    dropped = team.gate()
    assert dropped.returncode == 1, dropped.stdout
    assert "FAILED docs/.groove-eval.yml::roll-back" in dropped.stdout
    for command in console_commands("Accepting an intended drop"):
        team.ok(command)
    assert team.gate().returncode == 0

    # both merge into main without a conflict, and main is green
    team.ok("git checkout -q main && git merge -q --no-edit rewrite")
    merged = team.sh("git merge -q --no-edit rollback")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    green = team.gate()
    assert green.returncode == 0, green.stdout
    assert "2 xfailed" in green.stdout
    assert team.ok("git status --porcelain -- docs") == ""
