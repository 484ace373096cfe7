"""Real faults met by `groove` in a subprocess: one ``Error:`` line, exit 1, history kept.

A read-only KB and a full disk are real mounts in a private mount namespace
(``unshare -m``, so nothing leaks if a test dies); the tests skip where the machine
does not allow that.  ``ulimit -f`` is a real resource limit set in the child.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import KB_EVAL, KB_EVAL_GOLDEN, LOCAL_STATE, package_modules_after
from tests.helpers.cli_invoke import single_error

GROOVE = [sys.executable, "-m", "pytest_groove.cli"]
HASH = ["--model", "hash"]


def run(
    args: list[str], *, wrap: list[str] | None = None, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(wrap or []), *GROOVE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
    )


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(
    sys.platform != "linux" or not _can_mount(), reason="needs unshare -m and mount"
)


def read_only(path: Path) -> list[str]:
    """Run the command with ``path`` bind-mounted read-only over itself."""
    script = f'mount --bind "{path}" "{path}" && mount -o remount,bind,ro "{path}" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, "sh"]


def indexed(kb: Path) -> Path:
    proc = run(["index", "--kb-path", str(kb), *HASH])
    assert proc.returncode == 0, proc.stderr
    return kb


@pytest.fixture(scope="module")
def shared_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An indexed, once-evaluated KB for the tests that leave it as it is."""
    kb = tmp_path_factory.mktemp("shared") / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    indexed(kb)
    assert run(evaluate(kb)).returncode == 0
    return kb


def evaluate(kb: Path, *extra: str) -> list[str]:
    return ["eval", "--kb-path", str(kb), *HASH, "--golden", str(KB_EVAL_GOLDEN), *extra]


@needs_mount
def test_read_only_kb_with_a_current_index_evaluates(shared_kb: Path) -> None:
    kb = shared_kb
    proc = run(evaluate(kb, "--no-history", "--format", "json"), wrap=read_only(kb))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["recorded"] is False
    search = run(["search", "--kb-path", str(kb), *HASH, "deploy"], wrap=read_only(kb))
    assert search.returncode == 0, search.stderr
    assert search.stdout.strip()
    # recording needs the history written: one line saying how to do without
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()
    line = single_error(run(evaluate(kb), wrap=read_only(kb)))
    assert str(history.name) in line and "--no-history" in line
    assert history.read_bytes() == before


@needs_mount
def test_read_only_kb_with_a_stale_index_says_where_to_put_it(kb_eval_copy: Path) -> None:
    kb = indexed(kb_eval_copy)
    assert run(evaluate(kb)).returncode == 0
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()
    (kb / "guide" / "fresh.md").write_text("# Fresh\n\nA brand new note.\n", encoding="utf-8")
    line = single_error(run(evaluate(kb), wrap=read_only(kb)))
    assert "read-only" in line and "--index-dir" in line and str(kb / ".groove") in line
    assert history.read_bytes() == before
    # the remedy works: an index folder elsewhere
    elsewhere = kb.parent / "index-elsewhere"
    proc = run(evaluate(kb, "--no-history", "--index-dir", str(elsewhere)), wrap=read_only(kb))
    assert proc.returncode == 0, proc.stderr


#: (indexed for, evaluated with): the second reads what the first never stored
_MISSING_PARTS = {
    "word table": ("", "[search]\nfts_query_version = 4\n"),
    "note vectors": ("[search]\nnote_order = false\n", ""),
}


@needs_mount
@pytest.mark.parametrize(
    # one part in the default run, the other (the same path, another table) in the slow one
    "part",
    [pytest.param("word table", marks=pytest.mark.slow), "note vectors"],
)
def test_read_only_index_without_a_part_the_config_reads(
    kb_eval_copy: Path, tmp_path: Path, part: str
) -> None:
    indexed_for, evaluated_with = _MISSING_PARTS[part]
    configs = []
    for name, text in (("indexed.toml", indexed_for), ("evaluated.toml", evaluated_with)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        configs.append(["--config", str(tmp_path / name)])
    kb = kb_eval_copy
    proc = run(["index", "--kb-path", str(kb), *HASH, *configs[0]])
    assert proc.returncode == 0, proc.stderr
    index = kb_files(kb)
    line = single_error(run(evaluate(kb, "--no-history", *configs[1]), wrap=read_only(kb)))
    assert "cannot be written" in line and "--index-dir" in line
    assert kb_files(kb) == index
    # the configuration it was built for still reads it as it is
    proc = run(evaluate(kb, "--no-history", *configs[0]), wrap=read_only(kb))
    assert proc.returncode == 0, proc.stderr
    # and the remedy works: an index folder elsewhere
    elsewhere = tmp_path / "index-elsewhere"
    proc = run(
        evaluate(kb, "--no-history", *configs[1], "--index-dir", str(elsewhere)),
        wrap=read_only(kb),
    )
    assert proc.returncode == 0, proc.stderr


def kb_files(kb: Path) -> dict[str, bytes]:
    return {str(p.relative_to(kb)): p.read_bytes() for p in sorted(kb.rglob("*")) if p.is_file()}


@needs_mount
def test_a_current_index_on_a_full_disk_is_still_read(shared_kb: Path, tmp_path: Path) -> None:
    """Reading a WAL database makes its shared-memory file beside it; on a full disk
    SQLite cannot, and a search (or ``--no-reindex``) that writes nothing stopped with
    "no space left" instead of reading the checkpointed file as it is."""
    want = run(evaluate(shared_kb, "--no-reindex", "--no-history", "--format", "json"))
    assert want.returncode == 0, want.stderr
    full = tmp_path / "full"
    full.mkdir()
    kb = full / "kb"
    script = (
        f'mount -t tmpfs -o size=8m none "{full}" && cp -r "{shared_kb}" "{kb}" '
        f'&& rm -f "{kb}"/.groove/*/index.db-* '
        f'&& (dd if=/dev/zero of="{full}/filler" bs=4k 2>/dev/null; true) && exec "$@"'
    )
    on_full = ["unshare", "-m", "sh", "-c", script, "sh"]
    got = run(evaluate(kb, "--no-reindex", "--no-history", "--format", "json"), wrap=on_full)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["per_query"] == json.loads(want.stdout)["per_query"]
    search = run(["search", "--kb-path", str(kb), *HASH, "deploy"], wrap=on_full)
    assert search.returncode == 0, search.stderr
    assert search.stdout.strip()
    # the indexer has to write: one line naming the disk and the remedy
    line = single_error(run(evaluate(kb, "--no-history"), wrap=on_full))
    assert "no space left" in line and "--index-dir" in line


@pytest.mark.slow
@needs_mount
def test_a_full_disk_while_indexing(kb_eval_copy: Path, tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    script = f'mount -t tmpfs -o size=64k none "{tiny}" && exec "$@"'
    proc = run(
        ["index", "--kb-path", str(kb_eval_copy), *HASH, "--index-dir", str(tiny / "idx")],
        wrap=["unshare", "-m", "sh", "-c", script, "sh"],
    )
    line = single_error(proc)
    assert "no space left" in line and str(tiny / "idx") in line and "--index-dir" in line


def test_a_file_size_limit_while_indexing(kb_eval_copy: Path) -> None:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))

    proc = run(["index", "--kb-path", str(kb_eval_copy), *HASH], preexec=limit)
    line = single_error(proc)
    assert "ulimit -f" in line and "index.db" in line


def test_a_corrupt_index_is_named_then_rebuilt(kb_eval_copy: Path) -> None:
    kb = indexed(kb_eval_copy)
    assert run(evaluate(kb)).returncode == 0
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()
    (db,) = (kb / ".groove").glob("*/index.db")
    for cache in db.parent.glob("vectors*"):
        cache.unlink()
    db.write_bytes(db.read_bytes()[:4096] + b"\xff" * 8192)
    line = single_error(run(["search", "--kb-path", str(kb), *HASH, "deploy"]))
    assert "corrupt" in line and f"`groove index --kb-path {kb} --model hash`" in line
    assert history.read_bytes() == before
    proc = run(evaluate(kb))
    assert proc.returncode == 0, proc.stderr
    assert "rebuilt it from the KB" in proc.stderr


@pytest.mark.slow  # the same faults are covered in-process by tests/faults/test_index.py
@pytest.mark.parametrize("case", ["lock-dir", "index-dir-file", "proc-self", "kb-loop", "dir-loop"])
def test_path_faults_are_one_line(kb_eval_copy: Path, tmp_path: Path, case: str) -> None:
    kb = indexed(kb_eval_copy)
    assert run(evaluate(kb)).returncode == 0
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    args = evaluate(kb)
    expected = ""
    if case == "lock-dir":
        (lock,) = (kb / ".groove").glob("*/index.lock")
        lock.unlink()
        lock.mkdir()
        expected = "is a directory"
    elif case == "index-dir-file":
        (tmp_path / "a-file").write_text("x")
        args += ["--index-dir", str(tmp_path / "a-file")]
        expected = "not a folder"
    elif case == "proc-self":
        args += ["--index-dir", "/proc/self"]
        expected = "/proc/"  # named resolved (/proc/<pid>): SQLite refuses links on the way
    elif case == "kb-loop":
        args = ["eval", "--kb-path", str(tmp_path / "loop-a"), *HASH, "--no-history"]
        args += ["--golden", str(KB_EVAL_GOLDEN)]
        expected = "--kb-path"
    else:
        args += ["--index-dir", str(tmp_path / "loop-a")]
        expected = "symlink loop"
    line = single_error(run(args))
    assert expected in line
    assert history.read_bytes() == before


@pytest.mark.parametrize("command", ["eval", "index", "search", "tune", "history"])
def test_a_deleted_working_directory_is_one_line(tmp_path: Path, command: str) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    args = [command, "--kb-path", "../kb", *HASH] + (["q"] if command == "search" else [])
    if command == "history":
        args = [command, "--kb-path", "../kb"]
    # the shell's cwd is removed under the process, as `rm -rf` of a checkout does
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    proc = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), *GROOVE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    line = single_error(proc)
    assert "the working directory no longer exists" in line and "--kb-path" in line


def test_a_utf8_kb_name_under_an_ascii_locale_names_the_locale(tmp_path: Path) -> None:
    kb = tmp_path / "notes ✓"
    kb.mkdir()
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    proc = subprocess.run(
        [*GROOVE, "index", "--kb-path", str(kb), *HASH],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        errors="replace",
    )
    if proc.returncode == 0:
        pytest.skip("this interpreter reads file names as UTF-8 under the C locale")
    line = single_error(proc)
    # the name is valid UTF-8: renaming it is not the fix, the locale is
    assert "this process decodes file names as ascii (the locale)" in line
    assert "PYTHONUTF8=1" in line and "rename it" not in line


# --------------------------------------------------------------------------- output


def test_a_closed_stdout_stops_before_anything_is_recorded(shared_kb: Path) -> None:
    kb = shared_kb
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()
    proc = subprocess.run(
        [*GROOVE, *evaluate(kb)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    line = single_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr))
    assert "standard output is closed" in line and "/dev/null" in line
    assert history.read_bytes() == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", ["eval", "search"])
def test_stdout_on_a_full_device(shared_kb: Path, command: str) -> None:
    kb = shared_kb
    args = evaluate(kb, "--no-history") if command == "eval" else ["search", "--kb-path", str(kb)]
    if command == "search":
        args += [*HASH, "deploy"]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*GROOVE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    line = single_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr))
    assert "/dev/full" in line and "no space left" in line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--version"], ["--help"], ["eval", "--help"]])
def test_help_and_version_on_a_full_device_are_an_error_too(args: list[str]) -> None:
    # argparse prints them and stops the program: that stop once passed by the check
    # every other output gets, and a full device was exit 0 with nothing said
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*GROOVE, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    line = single_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr))
    assert "/dev/full" in line and "no space left" in line
    ok = subprocess.run([*GROOVE, *args], capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stderr) == (0, "") and ok.stdout.startswith(("groove ", "usage:"))


@pytest.mark.parametrize("output", ["full", "closed-pipe"])
def test_a_report_that_cannot_be_delivered_records_nothing(shared_kb: Path, output: str) -> None:
    """The run is saved only after its report is out: the history keeps its bytes."""
    history = shared_kb / ".groove-eval-history.json"
    before = history.read_bytes()
    if output == "full":
        target = os.open("/dev/full", os.O_WRONLY)
        args = evaluate(shared_kb)
    else:
        read_end, target = os.pipe()
        os.close(read_end)
        args = evaluate(shared_kb, "--format", "json")
    try:
        proc = subprocess.run(
            [*GROOVE, *args], stdout=target, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(target)
    single_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr))
    assert history.read_bytes() == before
    leftovers = [p.name for p in shared_kb.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    # and the next run, with somewhere to write, is recorded as usual
    assert run(evaluate(shared_kb)).returncode == 0
    assert history.read_bytes() != before


def test_a_reader_that_goes_away(shared_kb: Path) -> None:
    kb = shared_kb
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [*GROOVE, *evaluate(kb, "--no-history", "--format", "json")],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    line = single_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr))
    assert "pipe was closed" in line


@pytest.mark.parametrize("query", ["切り戻し", "canary rollback", "Überprüfung – 検証"])
def test_a_query_typed_under_an_ascii_locale_is_the_text_typed(shared_kb: Path, query: str) -> None:
    # the arguments' UTF-8 bytes once reached the search as lone surrogates: another
    # ranking than the same query typed in a UTF-8 terminal, and JSON strict parsers refuse
    search = ["search", "--kb-path", str(shared_kb), *HASH, "--format", "json", query]
    typed = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    ascii_run = subprocess.run([*GROOVE, *search], capture_output=True, timeout=120, env=typed)
    utf8_run = subprocess.run([*GROOVE, *search], capture_output=True, timeout=120)
    assert ascii_run.returncode == utf8_run.returncode == 0, ascii_run.stderr
    ascii_report, utf8_report = json.loads(ascii_run.stdout), json.loads(utf8_run.stdout)
    assert ascii_report["query"] == utf8_report["query"] == query
    assert ascii_report["results"] == utf8_report["results"]


@pytest.mark.parametrize("command", ["eval", "history show"])
def test_json_on_an_ascii_terminal_is_the_same_json(tmp_path: Path, command: str) -> None:
    # the degrading meant for people once reached JSON: `\xdc` (no JSON escape) for Ü,
    # `-` for an en dash; it is JSON's own \u escapes now, the same data
    kb = tmp_path / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    golden = tmp_path / "golden.yml"
    golden.write_text(
        KB_EVAL_GOLDEN.read_text(encoding="utf-8")
        + '  - query: "Überprüfung – the canary rollout"\n'
        + "    expected:\n      - path: ops/database-backup.md\n",
        encoding="utf-8",
    )
    eval_args = ["eval", "--kb-path", str(kb), *HASH, "--golden", str(golden), "--format", "json"]
    if command == "eval":
        args = [*eval_args, "--no-history"]
    else:
        # the run as recorded, read back from the history
        assert run(eval_args).returncode == 0
        (recorded,) = json.loads(run(["history", "--kb-path", str(kb), "--format", "json"]).stdout)
        args = ["history", "show", recorded["run"], "--kb-path", str(kb), "--format", "json"]
    typed = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    ascii_run = subprocess.run([*GROOVE, *args], capture_output=True, timeout=120, env=typed)
    utf8_run = subprocess.run([*GROOVE, *args], capture_output=True, timeout=120)
    assert ascii_run.returncode == utf8_run.returncode == 0, ascii_run.stderr
    assert ascii_run.stdout.isascii()
    ascii_report, utf8_report = json.loads(ascii_run.stdout), json.loads(utf8_run.stdout)
    queries = [q["query"] for q in utf8_report["per_query"]]
    assert queries[-1] == "Überprüfung – the canary rollout"
    assert [q["query"] for q in ascii_report["per_query"]] == queries
    assert ascii_report["aggregate"] == utf8_report["aggregate"]


def test_a_query_of_bytes_that_are_no_text_is_one_line(shared_kb: Path) -> None:
    query = os.fsdecode(b"rollback \xff\xfe")
    proc = run(["search", "--kb-path", str(shared_kb), *HASH, query])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (
        "groove search: error: the query is not UTF-8 text (byte 0xff at byte 9); type it "
        "in a UTF-8 terminal, or under a UTF-8 locale (LC_ALL=C.UTF-8)\n"
    )


@pytest.mark.parametrize(
    "env", [{"LC_ALL": "C", "PYTHONUTF8": "0"}, {"PYTHONIOENCODING": "ascii"}], ids=["C", "ascii"]
)
def test_an_ascii_terminal_gets_ascii(shared_kb: Path, env: dict[str, str]) -> None:
    kb = shared_kb
    proc = subprocess.run(
        [*GROOVE, *evaluate(kb, "--no-color")],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "", **env},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.isascii() and proc.stderr.isascii()
    assert b"groove eval - " in proc.stdout  # the em dash, degraded
    assert b"Traceback" not in proc.stderr


def test_ctrl_c_while_the_command_starts_is_interrupted_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pytest_groove.cli.commands as commands
    from tests.helpers.cli_invoke import invoke

    def interrupted(command: str | None = None) -> None:
        raise KeyboardInterrupt

    # the signal lands while the parser is built, before the command's own boundary
    monkeypatch.setattr(commands, "build_parser", interrupted)
    run_ = invoke("eval", "--kb-path", "kb")
    assert (run_.returncode, run_.stderr) == (130, "interrupted\n")


#: the console script's own two lines (``from pytest_groove.cli import main`` and
#: ``sys.exit(main())``, as pip's wrapper has them) behind a finder that raises
#: KeyboardInterrupt when the module named first on the command line is first
#: imported: Ctrl-C at that moment of the start-up
INTERRUPTED_AT_IMPORT = """
import importlib.abc
import sys

AT = sys.argv.pop(1)


class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == AT:
            raise KeyboardInterrupt
        return None


sys.meta_path.insert(0, Interrupt())
from pytest_groove.cli import main

sys.exit(main())
"""


def test_the_entry_point_imports_nothing_before_its_error_boundary() -> None:
    # what `from pytest_groove.cli import main` loads runs outside main's handler: a
    # Ctrl-C there is Python's traceback, so it is kept to the boundary's own modules
    assert package_modules_after("from pytest_groove.cli import main") == [
        "pytest_groove",
        "pytest_groove.cli",
    ]


def test_the_entry_point_imports_only_what_python_has_loaded_at_start_up() -> None:
    # before the package's Ctrl-C hook is in place, a new module's import is a moment
    # a traceback could come from: there is none
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; before = set(sys.modules); from pytest_groove.cli import main; "
            "print(sorted(set(sys.modules) - before - {'pytest_groove', 'pytest_groove.cli'}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "module",
    [
        "pytest_groove.cli.ending",  # what main says it with
        "pytest_groove.errors",
        "pytest_groove.cli.commands",  # main's first import
        "pytest_groove.cli.args",  # ... and what it imports at its top
        "pytest_groove.text.console",
        "pytest_groove.cli.evaluate",  # while the parser is built
        "numpy",  # while the command runs
    ],
)
def test_ctrl_c_at_any_moment_of_the_start_up_is_one_line(tmp_path: Path, module: str) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    argv = ["eval", "--kb-path", str(kb), "--golden", str(KB_EVAL_GOLDEN), "--no-history"]
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_AT_IMPORT, module, *argv],
        capture_output=True,
        text=True,
    )
    assert (proc.returncode, proc.stderr) == (130, "interrupted\n")


@needs_mount
def test_init_on_a_full_disk_keeps_no_cut_short_starter(tmp_path: Path) -> None:
    """A starter that could not be written whole is removed: the next `groove init`
    (with space again) writes it, instead of keeping an empty file as "exists"."""
    full = tmp_path / "full"
    full.mkdir()
    kb = full / "kb"
    groove = " ".join([sys.executable, "-m", "pytest_groove.cli"])
    script = f"""
        mount -t tmpfs -o size=64k none "{full}" || exit 99
        mkdir "{kb}" && printf '## A\\n\\nSome text to find.\\n' > "{kb}/a.md"
        dd if=/dev/zero of="{full}/filler" bs=1k 2>/dev/null
        {groove} init --kb-path "{kb}" 2>"{tmp_path}/err1"; echo "first=$?"
        ls -a "{kb}" | tr '\\n' ' '; echo
        cat "{tmp_path}/err1"
        rm "{full}/filler"
        {groove} init --kb-path "{kb}" >/dev/null 2>&1; echo "second=$?"
        wc -c < "{kb}/.groove-eval.yml"
    """
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "first=1", done.stdout + done.stderr
    listed = lines[1].split()
    assert ".groove-eval.yml" not in listed and "groove.toml" not in listed, lines[1]
    assert lines[2].startswith("Error: could not ") and "nothing was kept" in lines[2]
    assert "Traceback" not in done.stdout
    assert lines[3] == "second=0"
    assert int(lines[4]) > 100  # the whole starter, written once there was room
