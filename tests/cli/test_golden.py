"""``groove golden add``: the query appended with the hits picked, by ``--pick`` and at a
real terminal (a pseudo-terminal the test types into)."""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLE_KB, REPO_ROOT
from pytest_groove.cli.golden import hit_lines, parse_picks
from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.search.hits import SearchHit
from tests.helpers.cli_invoke import Groove
from tests.helpers.retriever_runs import importable_module

QUERY = "how do I go back to the previous build"


def _top(groove: Groove, kb: Path, count: int) -> tuple[ExpectedEntry, ...]:
    done = groove("search", "--kb-path", kb, "--model", "hash", "--format", "json",
                  "--limit", str(count), QUERY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["results"]
    return tuple(ExpectedEntry(hit["path"], hit["heading"]) for hit in hits)


def test_pick_appends_the_top_two_keeping_every_byte_before(
    example_kb_copy: Path, groove: Groove
) -> None:
    kb = example_kb_copy
    original = (EXAMPLE_KB / ".groove-eval.yml").read_bytes()
    done = groove("golden", "add", "--kb-path", kb, "--model", "hash", "--pick", "1,2",
                  "--id", "go-back", "--tag", "smoke", QUERY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "  1. " in done.stdout and "added `go-back` to " in done.stdout
    written = (kb / ".groove-eval.yml").read_bytes()
    assert written[: len(original)] == original and len(written) > len(original)
    added = load_golden(kb / ".groove-eval.yml", kb).queries[-1]
    assert (added.id, added.query, added.tags) == ("go-back", QUERY, ("smoke",))
    assert added.expected == _top(groove, kb, 2)
    again = groove("golden", "add", "--kb-path", kb, "--model", "hash", "--pick", "1",
                   "--id", "go-back", QUERY)  # fmt: skip
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1 and "id `go-back` is already used" in again.stderr
    assert (kb / ".groove-eval.yml").read_bytes() == written


def test_without_pick_and_without_a_terminal_it_asks_for_pick(
    example_kb_copy: Path, groove: Groove
) -> None:
    kb = example_kb_copy
    done = groove.process("golden", "add", "--kb-path", kb, "--model", "hash", QUERY)
    assert done.returncode == 1
    assert "no terminal to ask at: pass --pick" in done.stderr
    assert (kb / ".groove-eval.yml").read_bytes() == (EXAMPLE_KB / ".groove-eval.yml").read_bytes()


def test_bad_picks_are_one_line() -> None:
    assert parse_picks("3, 1 3", 5) == [3, 1]
    for bad in ("0", "6", "x", " "):
        with pytest.raises(GrooveError):
            parse_picks(bad, 5)


def _read_until(fd: int, wanted: bytes, seen: bytearray, deadline: float) -> None:
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"timed out waiting for {wanted!r}; got {bytes(seen)[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            if not chunk:
                return
            seen += chunk


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_numbers_typed_at_a_terminal_pick_the_answers(
    example_kb_copy: Path, groove: Groove
) -> None:
    kb = example_kb_copy
    groove("index", "--kb-path", kb, "--model", "hash")  # the search under the pty is quick
    argv = [sys.executable, "-m", "pytest_groove.cli", "golden", "add", "--kb-path", str(kb),
            "--model", "hash", "--no-reindex", "--id", "typed", QUERY]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO_ROOT)}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, its stdin and stdout the terminal
        os.execve(sys.executable, argv, env)
    seen = bytearray()
    deadline = time.monotonic() + 120
    try:
        _read_until(fd, b"empty to cancel): ", seen, deadline)
        os.write(fd, b"99\r")  # out of range: said, and asked again
        _read_until(fd, b"pick among 1 to", seen, deadline)
        os.write(fd, b"2, 1\r")
        _read_until(fd, b"added `typed`", seen, deadline)
        _read_until(fd, b"\n", seen, deadline)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, bytes(seen).decode("utf-8", "replace")
    added = load_golden(kb / ".groove-eval.yml", kb).queries[-1]
    top = _top(groove, kb, 2)
    assert added.id == "typed" and added.expected == (top[1], top[0])


RETRIEVER = """
def search(query, limit):
    return [
        {"path": "ops/deploy.md", "heading": "Canary", "score": 2.0, "text": "canary\\x1b[31m"},
        {"path": "billing/invoices.md", "heading": None, "score": 1.0},
        {"path": "nowhere.md", "heading": None, "score": 0.5},
    ][:limit]
"""


def test_the_configured_retriever_answers_and_its_hits_are_checked(
    tmp_path: Path, groove: Groove, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.kb_files import write_invoices_kb

    kb = write_invoices_kb(tmp_path / "kb")
    importable_module(tmp_path, "golden_team", RETRIEVER, monkeypatch)
    args = ("golden", "add", "--kb-path", kb, "--retriever", "golden_team:search")
    done = groove(*args, "--pick", "2,1", "When do invoices go out?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  1. ops/deploy.md # Canary\n" in done.stdout and "\x1b" not in done.stdout
    added = load_golden(kb / ".groove-eval.yml", kb).queries[-1]
    assert added.expected == (
        ExpectedEntry("billing/invoices.md"),
        ExpectedEntry("ops/deploy.md", "Canary"),
    )
    before = (kb / ".groove-eval.yml").read_bytes()
    refused = groove(*args, "--pick", "3", "Where is nowhere?", cwd=tmp_path)
    assert refused.returncode == 1
    assert "expected path `nowhere.md` is not in" in refused.stderr
    assert (kb / ".groove-eval.yml").read_bytes() == before


def test_golden_add_shows_a_hostile_hit_escaped_as_search_does() -> None:
    hit = SearchHit(rank=1, path="a.md", heading=None, score=1.0, content="red \x1b[31mX\x07")
    (label, snippet) = hit_lines([hit])
    assert label == "  1. a.md" and snippet == "     red \\x1b[31mX\\x07"
