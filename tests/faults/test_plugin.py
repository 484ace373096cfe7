"""Index faults under pytest: a usage error (exit 4) naming the file, never INTERNALERROR.

The same faults as tests/faults/test_index.py, through ``pytester`` with the real
engine (hash embedder); the history must come out of each one byte for byte.
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from pytest_groove.kb import indexer
from pytest_groove.kb.store.faults import os_fault
from tests.helpers.kb_files import write_notes

pytest_plugins = ["pytester"]

DOCS = {
    "deploys.md": "## Release schedule\n\nReleases leave on Tuesday and Thursday mornings.\n",
    "oncall.md": "## Pager rotation\n\nEach engineer carries the pager for one week.\n",
}
GOLDEN = """\
queries:
  - id: schedule
    query: "release schedule tuesday thursday"
    expected:
      - path: "deploys.md"
  - id: pager
    query: "pager rotation engineer week"
    expected:
      - path: "oncall.md"
"""


@pytest.fixture
def kb(pytester: pytest.Pytester) -> Path:
    return write_notes(pytester.path / "kb", {**DOCS, ".groove-eval.yml": GOLDEN})


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--groove-kb", "kb", "--groove-model", "hash", *args)


def _recorded(pytester: pytest.Pytester, kb: Path) -> bytes:
    """Run once successfully and return the history it recorded."""
    first = _run(pytester)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str() + first.stderr.str()
    return (kb / ".groove-eval-history.json").read_bytes()


def _usage_error(result: pytest.RunResult) -> str:
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, output
    return errors[0]


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_lock_that_is_a_directory(pytester: pytest.Pytester, kb: Path, dist: list[str]) -> None:
    history = _recorded(pytester, kb)
    lock = kb / ".groove" / "hash" / "index.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    line = _usage_error(_run(pytester, *dist))
    assert str(lock) in line and "is a directory" in line
    assert (kb / ".groove-eval-history.json").read_bytes() == history


def test_a_corrupt_index_is_rebuilt_and_the_session_passes(
    pytester: pytest.Pytester, kb: Path
) -> None:
    _recorded(pytester, kb)
    db = kb / ".groove" / "hash" / "index.db"
    db.write_bytes(db.read_bytes()[:4096] + b"\xff" * 8192)
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert "rebuilt it from the KB" in result.stdout.str() + result.stderr.str()


def test_a_corrupt_index_without_reindexing_names_the_rebuild(
    pytester: pytest.Pytester, kb: Path
) -> None:
    history = _recorded(pytester, kb)
    db = kb / ".groove" / "hash" / "index.db"
    for cache in db.parent.glob("vectors*"):
        cache.unlink()
    db.write_bytes(db.read_bytes()[:4096] + b"\xff" * 8192)
    line = _usage_error(_run(pytester, "--groove-no-reindex"))
    assert "corrupt" in line and "rebuilt by the next run that indexes" in line
    # this run's KB and model: the damaged index is the hash model's
    assert f"`groove index --kb-path {kb} --model hash`" in line
    assert (kb / ".groove-eval-history.json").read_bytes() == history


PAGE = 4096


def _damage_page(db: Path, page: int, how: str) -> None:
    junk = bytes(PAGE) if how == "zeros" else random.Random(page).randbytes(PAGE)
    with db.open("r+b") as handle:
        handle.seek(page * PAGE)
        handle.write(junk)


def _damaged_pages_then_rebuilt(
    pytester: pytest.Pytester, kb: Path, dist: list[str], cases: list[tuple[int, str]]
) -> None:
    """Per case: one page of the index damaged, a ``--groove-no-reindex`` session ends
    with the undamaged outcome (a page it never read) or one line per process naming the
    damage and this run's command, never INTERNALERROR, the history unchanged; the next
    session (it indexes) passes, and leaves an index SQLite finds intact."""
    _recorded(pytester, kb)
    index = kb / ".groove" / "hash"
    pristine = pytester.path / "pristine-index"
    shutil.copytree(index, pristine)
    history = kb / ".groove-eval-history.json"
    for page, how in cases:
        shutil.rmtree(index)
        shutil.copytree(pristine, index)
        before = history.read_bytes()
        assert (page + 1) * PAGE <= (index / "index.db").stat().st_size
        _damage_page(index / "index.db", page, how)
        result = _run(pytester, "--groove-no-reindex", *dist)
        output = result.stdout.str() + result.stderr.str()
        assert "INTERNALERROR" not in output and "Traceback" not in output, (page, how, output)
        if result.ret != pytest.ExitCode.OK:
            # the controller's look at the index (exit 4) or a search (exit 1)
            assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.TESTS_FAILED)
            named = [line for line in output.splitlines() if "is corrupt" in line]
            assert named, output
            for line in named:
                assert f"`groove index --kb-path {kb} --model hash`" in line, line
            assert "<kb>" not in output
            assert history.read_bytes() == before, (page, how)
        rebuilt = _run(pytester, *dist)
        assert rebuilt.ret == pytest.ExitCode.OK, (page, how, rebuilt.stdout.str())
        conn = apsw.Connection(str(index / "index.db"))
        try:
            assert [row[0] for row in conn.execute("PRAGMA integrity_check")] == ["ok"]
        finally:
            conn.close()


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_damaged_page_is_one_line_then_rebuilt(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    # three of the 17 pages of this KB's database, drawn with a fixed seed, both ways
    pages = sorted(random.Random(7).sample(range(1, 17), 3))
    cases = [(page, how) for page in pages for how in ("zeros", "random")]
    _damaged_pages_then_rebuilt(pytester, kb, dist, cases if not dist else cases[::2])


@pytest.mark.slow
@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_every_damaged_page_is_one_line_then_rebuilt(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    cases = [(page, how) for page in range(1, 17) for how in ("zeros", "random")]
    _damaged_pages_then_rebuilt(pytester, kb, dist, cases)


#: a second model: the hash embedder under another name (the index's model differs)
OTHER_MODEL = """
from pytest_groove import register_embedder
from pytest_groove.embed.hashing import HashEmbedder

class OtherHash(HashEmbedder):
    name = "other-hash"

register_embedder("other-hash", lambda name: OtherHash())
"""


def test_a_cached_index_folder_of_another_model_is_rebuilt_not_a_red_job(
    pytester: pytest.Pytester, kb: Path
) -> None:
    """CI restores one --groove-index-dir from its cache after a pull request changed
    the model: the index is a cache, so the session rebuilds it (pytest has no --force)."""
    pytester.makeconftest(OTHER_MODEL)
    first = _run(pytester, "--groove-index-dir", "idx")
    assert first.ret == pytest.ExitCode.OK, first.stdout.str() + first.stderr.str()
    args = ("--groove-kb", "kb", "--groove-model", "other-hash", "--groove-index-dir", "idx")
    result = pytester.runpytest(*args, "--groove-fail-on-regression")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    built = "was built with 'hash' (dim 256), and 'other-hash' (dim 256) was asked for: "
    assert built in output
    assert "rebuilt it for 'other-hash' (keep one --groove-index-dir per model" in output
    # a reader that never writes the index names the command instead
    line = _usage_error(_run(pytester, "--groove-index-dir", "idx", "--groove-no-reindex"))
    assert "was built with 'other-hash' but 'hash' was asked for" in line
    index = pytester.path / "idx"
    assert f"`groove index --kb-path {kb} --model hash --index-dir {index}`" in line


def test_an_unwritable_index_folder(
    pytester: pytest.Pytester, kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = _recorded(pytester, kb)

    def read_only(index_dir: Path) -> None:
        raise os_fault(OSError(errno.EROFS, "Read-only file system", str(index_dir)), index_dir)

    monkeypatch.setattr(indexer, "probe_lock_file", read_only)
    # current index: the session runs on it
    assert _run(pytester, "--groove-no-history").ret == pytest.ExitCode.OK
    # stale index: one line pointing at the pytest option
    (kb / "new.md").write_text("## Fresh\n\nA brand new note about caches.\n", encoding="utf-8")
    line = _usage_error(_run(pytester))
    assert "read-only" in line and "--groove-index-dir" in line
    assert (kb / ".groove-eval-history.json").read_bytes() == history


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_index_dir_that_cannot_hold_files(pytester: pytest.Pytester, kb: Path) -> None:
    line = _usage_error(_run(pytester, "--groove-index-dir", "/proc/self"))
    # named resolved (a folder outside the KB is resolved before SQLite opens it)
    assert re.search(r"/proc/(self|\d+)/index", line)


@pytest.mark.parametrize("which", ["kb", "golden"])
def test_a_symlink_loop_is_a_usage_error(pytester: pytest.Pytester, kb: Path, which: str) -> None:
    (pytester.path / "loop-a").symlink_to(pytester.path / "loop-b")
    (pytester.path / "loop-b").symlink_to(pytester.path / "loop-a")
    if which == "kb":
        result = pytester.runpytest("--groove-kb", "loop-a", "--groove-model", "hash")
        assert "--groove-kb" in _usage_error(result)
    else:
        result = _run(pytester, "--groove-golden", "loop-a")
        assert "loop-a" in _usage_error(result)


def test_an_ascii_terminal_does_not_crash_the_session(
    pytester: pytest.Pytester, kb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _recorded(pytester, kb)  # a previous run: the report then shows arrows and dashes
    monkeypatch.setenv("PYTHONIOENCODING", "ascii")
    result = pytester.runpytest_subprocess("--groove-kb", "kb", "--groove-model", "hash")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "INTERNALERROR" not in output and "UnicodeEncodeError" not in output


def _pytest_with_stdout(
    pytester: pytest.Pytester, stdout: int | None, *args: str
) -> tuple[int, str]:
    """Run ``pytest --groove-kb kb`` in a child process with ``stdout`` as its
    standard output (None = closed); returns (exit status, stderr)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--groove-kb", "kb"]
    command += ["--groove-model", "hash", *args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if stdout is None:
        # close descriptor 1 in the child only, the way a shell's ``>&-`` does
        proc = subprocess.run(
            ["sh", "-c", 'exec "$@" >&-', "sh", *command],
            cwd=pytester.path,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            env=env,
        )
    else:
        proc = subprocess.run(
            command,
            cwd=pytester.path,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            env=env,
        )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    "dist",
    [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)],  # xdist: in the slow run
    ids=["one-process", "xdist"],
)
def test_a_report_on_a_full_device_records_nothing(
    pytester: pytest.Pytester, kb: Path, dist: list[str]
) -> None:
    before = _recorded(pytester, kb)
    with open("/dev/full", "w") as full:
        status, stderr = _pytest_with_stdout(pytester, full.fileno(), *dist)
    assert status == pytest.ExitCode.USAGE_ERROR, stderr
    assert "INTERNALERROR" not in stderr and "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, stderr
    assert "/dev/full" in errors[0] and "no space left" in errors[0]
    assert "not recorded" in errors[0]
    assert (kb / ".groove-eval-history.json").read_bytes() == before
    assert not [p for p in kb.iterdir() if p.name.endswith(".tmp")]


def test_a_reader_that_went_away_is_named_once(pytester: pytest.Pytester, kb: Path) -> None:
    before = _recorded(pytester, kb)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        status, stderr = _pytest_with_stdout(pytester, write_end)
    finally:
        os.close(write_end)
    assert status == pytest.ExitCode.USAGE_ERROR, stderr
    (error,) = [line for line in stderr.splitlines() if line.startswith("ERROR:")]
    assert "standard output (a pipe): the reading end of the pipe was closed" in error
    assert error.count("(a pipe)") == 1 and "until the run finishes" in error
    assert (kb / ".groove-eval-history.json").read_bytes() == before


def test_a_closed_stdout_is_a_usage_error(pytester: pytest.Pytester, kb: Path) -> None:
    before = _recorded(pytester, kb)
    status, stderr = _pytest_with_stdout(pytester, None)
    assert status == pytest.ExitCode.USAGE_ERROR, stderr
    assert "INTERNALERROR" not in stderr and "Traceback" not in stderr
    assert stderr.strip().startswith("ERROR: standard output is closed"), stderr
    assert (kb / ".groove-eval-history.json").read_bytes() == before


def test_a_report_that_went_out_is_recorded(pytester: pytest.Pytester, kb: Path) -> None:
    """The guard is no obstacle: output to a file records the run as before."""
    before = _recorded(pytester, kb)
    with open(pytester.path / "out.txt", "w") as out:
        status, stderr = _pytest_with_stdout(pytester, out.fileno())
    assert status == pytest.ExitCode.OK, stderr
    assert "groove retrieval quality" in (pytester.path / "out.txt").read_text()
    assert (kb / ".groove-eval-history.json").read_bytes() != before
