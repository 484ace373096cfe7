"""Running out of open files (``ulimit -n``) is a limit, never damage, an empty KB or a
permission problem.

``groove`` (and pytest with the plugin) run in a child process whose ``RLIMIT_NOFILE`` is
set low (``preexec_fn``, as tests/faults/test_cli.py sets ``RLIMIT_FSIZE``), once per
limit of a sweep.  Whatever the limit, a run either does what it does without the limit
(the same hits and metrics, no warning) or stops with one line naming the limit and the
fix (``ulimit -n``); it removes nothing from the index folder and records nothing.

Before the fix, at 8 or 9 open files ``groove index`` said ``0 added ... 0 chunks`` with
"skipped folder ...: cannot list it (Too many open files)" and ``groove eval`` that the
KB "has no indexable document"; with an index there, every cache was "damaged (its seal
... does not read back)" and removed; at 7, "check its permissions"; at 6, a traceback.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import KB_EVAL, KB_EVAL_GOLDEN, LOCAL_STATE

GROOVE = [sys.executable, "-m", "pytest_groove.cli"]
HASH = ["--model", "hash"]
#: what a run that took the limit for something else says (each was seen before the fix)
MISREAD = (
    "damaged",
    "does not read back",
    "no indexable",
    "cannot list",
    "skipped",
    "permissions",
    "--index-dir",
    "Traceback",
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_NOFILE")


def limited(count: int) -> Callable[[], None]:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return set_limit


def run(args: list[str], limit: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GROOVE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=None if limit is None else limited(limit),
    )


def evaluate(kb: Path, *extra: str) -> list[str]:
    return ["eval", "--kb-path", str(kb), *HASH, "--golden", str(KB_EVAL_GOLDEN), *extra]


def answers(stdout: str) -> object:
    report = json.loads(stdout)
    return report["aggregate"], [(q["id"], q["top_k"], q["metrics"]) for q in report["per_query"]]


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


#: (name, arguments given the KB, whether the KB starts without an index)
COMMANDS: dict[str, tuple[Callable[[Path], list[str]], bool]] = {
    "index a new KB": (lambda kb: ["index", "--kb-path", str(kb), *HASH], True),
    "index": (lambda kb: ["index", "--kb-path", str(kb), *HASH], False),
    "eval": (lambda kb: evaluate(kb, "--format", "json"), False),
    "eval --no-reindex": (lambda kb: evaluate(kb, "--no-reindex", "--format", "json"), False),
    "search": (lambda kb: ["search", "--kb-path", str(kb), *HASH, "deploy"], False),
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An indexed KB with one recorded run."""
    kb = tmp_path_factory.mktemp("limits") / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    assert run(["index", "--kb-path", str(kb), *HASH]).returncode == 0
    assert run(evaluate(kb)).returncode == 0
    return kb


def copy_kb(indexed: Path, kb: Path, new: bool) -> None:
    if new:
        shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    else:
        shutil.copytree(indexed, kb)


#: each command's run without a limit, on a copy at the same path (made once)
_UNLIMITED: dict[str, subprocess.CompletedProcess[str]] = {}


def unlimited(indexed: Path, tmp_path: Path, command: str, kb: Path) -> str:
    make_args, new = COMMANDS[command]
    if command not in _UNLIMITED:
        copy_kb(indexed, kb, new)
        _UNLIMITED[command] = run(make_args(kb))
        shutil.rmtree(kb)
    want = _UNLIMITED[command]
    assert want.returncode == 0, want.stderr
    # the KB's path is named in a search's output only as the hits' paths, relative
    return want.stdout


def check_limit(indexed: Path, tmp_path: Path, command: str, limit: int) -> None:
    make_args, new = COMMANDS[command]
    kb = tmp_path / "kb"
    want = unlimited(indexed, tmp_path, command, kb)
    copy_kb(indexed, kb, new)
    before = files_of(kb)

    got = run(make_args(kb), limit)
    for words in MISREAD:
        assert words not in got.stderr, (limit, got.stderr)
    if got.returncode == 0:
        assert "warning" not in got.stderr, (limit, got.stderr)
        if command.startswith("eval"):
            assert answers(got.stdout) == answers(want)
        elif command.startswith("index"):
            assert got.stdout.split(" in ")[0] == want.split(" in ")[0]
        else:
            assert got.stdout == want
        return
    lines = got.stderr.splitlines()
    assert got.returncode == 1 and len(lines) == 1, (limit, got.stderr)
    assert lines[0].startswith("Error: ") and "limit of open files" in lines[0], lines[0]
    assert f"(`ulimit -n` is {limit})" in lines[0] and "`ulimit -n 4096`" in lines[0]
    after = files_of(kb)
    # nothing removed, nothing recorded (a new KB may be left an empty index.db)
    assert set(before) <= set(after), set(before) - set(after)
    assert {name: after[name] for name in before if ".groove" not in name} == {
        name: data for name, data in before.items() if ".groove" not in name
    }


@pytest.mark.parametrize("limit", range(5, 10))
@pytest.mark.parametrize("command", ["index a new KB", "eval", "eval --no-reindex"])
def test_too_few_open_files_is_one_line_naming_the_limit(
    indexed: Path, tmp_path: Path, command: str, limit: int
) -> None:
    check_limit(indexed, tmp_path, command, limit)


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_low_limit_is_one_line_or_the_same_run(
    indexed: Path, tmp_path: Path, command: str
) -> None:
    for limit in range(5, 25):  # at 4 the interpreter cannot import what it needs to start
        check_limit(indexed, tmp_path / str(limit), command, limit)


# --------------------------------------------------------------------------- pytest


def run_pytest(kb: Path, extra: list[str], limit: int | None) -> subprocess.CompletedProcess[str]:
    args = ["-p", "no:cacheprovider", "-q", "--groove-kb", str(kb), "--groove-model", "hash"]
    args += ["--groove-golden", str(KB_EVAL_GOLDEN), *extra]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=kb.parent,
        preexec_fn=None if limit is None else limited(limit),
    )


def outcome(proc: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    """The exit status and the last line (``2 failed, 28 passed in ...``, timing cut)."""
    lines = proc.stdout.strip().splitlines() or ["(pytest printed nothing)"]
    return proc.returncode, lines[-1].split(" in ")[0]


def check_pytest(indexed: Path, tmp_path: Path, extra: list[str], limits: range) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(indexed, kb)
    want = outcome(run_pytest(kb, extra, None))
    for limit in limits:
        shutil.rmtree(kb)
        shutil.copytree(indexed, kb)
        history = (kb / ".groove-eval-history.json").read_bytes()
        got = run_pytest(kb, extra, limit)
        output = got.stdout + got.stderr
        # below some limit pytest (or xdist) cannot start: that is theirs, never ours
        assert "pytest_groove" not in output, (limit, output)
        for words in MISREAD[:-1]:
            assert words not in output, (limit, words, output)
        if got.returncode == pytest.ExitCode.USAGE_ERROR:
            errors = [line for line in got.stderr.splitlines() if line.startswith("ERROR:")]
            assert len(errors) == 1 and "limit of open files" in errors[0], (limit, output)
            assert f"(`ulimit -n` is {limit})" in errors[0]
            assert (kb / ".groove-eval-history.json").read_bytes() == history
        elif outcome(got) != want:
            # pytest's own collection (or xdist's start) failed: nothing ran, nothing saved
            assert (
                not got.stdout or "error" in outcome(got)[1].lower() or "INTERNALERROR" in output
            ), (
                limit,
                output,
            )
            assert (kb / ".groove-eval-history.json").read_bytes() == history


def test_pytest_with_too_few_open_files_is_one_line_naming_the_limit(
    indexed: Path, tmp_path: Path
) -> None:
    check_pytest(indexed, tmp_path, [], range(13, 19))


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--groove-no-reindex"], ["-n", "2"]])
def test_pytest_under_every_low_limit(indexed: Path, tmp_path: Path, extra: list[str]) -> None:
    check_pytest(indexed, tmp_path, extra, range(8, 33))
