"""Paths the operating system refuses, and echoes that stay short, through both doors.

A name over 255 bytes, a path over 4,095 bytes, a NUL, a folder name that is not
valid UTF-8: as ``--kb-path`` / ``--index-dir`` / ``--config`` of the real ``groove``
command (its ``main``) and as ``--groove-kb`` / ``--groove-index-dir`` under pytest
(pytester).  Each is one line naming the path (clipped) and what is wrong with it,
never a traceback.  ``--config`` naming a device or a named pipe is refused from
``fstat`` instead of being read without end or blocking.  ``groove init --kb-path /``
stops listing at once.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groove.cli import main
from pytest_groove.errors import PATH_ECHO_LIMIT, GrooveError
from pytest_groove.evaluation.starter import MAX_WALKED_ENTRIES
from pytest_groove.files.paths import check_os_path, os_path_problem
from tests.helpers.cli_invoke import Groove

pytest_plugins = ["pytester"]

#: longest line a refusal may print: the message's words plus one clipped path
LINE_CAP = 600


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# A\n\n## Deploy\n\nRoll the release out.\n")
    (root / ".groove-eval.yml").write_text(
        "queries:\n  - query: roll the release\n    expected:\n      - path: a.md\n"
    )
    return root


def _one_error(groove: Groove, argv: list[str]) -> str:
    done = groove(*argv)
    code = done.returncode
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert code in (1, 2) and len(errors) == 1, done.stderr
    assert len(errors[0]) <= LINE_CAP, len(errors[0])
    return errors[0]


def _hostile(tmp_path: Path) -> dict[str, str]:
    return {
        "long-name": str(tmp_path / ("n" * 300)),
        "long-path": str(tmp_path / "/".join(["d" * 200] * 25)),
        "not-utf8": os.fsdecode(bytes(tmp_path) + b"/kb\xff\xfe"),
    }


COMMANDS = {
    "index": ["index"],
    "search": ["search", "release"],
    "eval": ["eval", "--no-history"],
    "init": ["init"],
    "tune": ["tune"],
}


@pytest.mark.parametrize("kind", ["long-name", "long-path", "not-utf8"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_kb_path_the_os_refuses_is_one_line(
    tmp_path: Path, groove: Groove, command: str, kind: str
) -> None:
    path = _hostile(tmp_path)[kind]
    if kind == "not-utf8":
        os.mkdir(path)  # it exists: only its name is wrong
    argv = [*COMMANDS[command][:1], "--kb-path", path, *COMMANDS[command][1:]]
    if command != "init":
        argv += ["--model", "hash"]
    line = _one_error(groove, argv)
    assert "knowledge base" in line and "--kb-path" in line
    assert {"long-name": "255", "long-path": "4,095", "not-utf8": "UTF-8"}[kind] in line


@pytest.mark.parametrize("kind", ["long-name", "long-path", "not-utf8"])
def test_an_index_dir_the_os_refuses_is_one_line(
    kb: Path, tmp_path: Path, groove: Groove, kind: str
) -> None:
    path = _hostile(tmp_path)[kind]
    for command in (["index"], ["eval", "--no-history"], ["search", "x"]):
        argv = [command[0], "--kb-path", str(kb), "--model", "hash", "--index-dir", path]
        line = _one_error(groove, argv + command[1:])
        assert "index folder" in line and "--index-dir" in line


def test_an_index_dir_in_a_kb_config_that_the_os_refuses_is_one_line(
    kb: Path, groove: Groove
) -> None:
    (kb / "groove.toml").write_text(f'index_dir = "{"x" * 300}"\n')
    line = _one_error(groove, ["index", "--kb-path", str(kb), "--model", "hash"])
    assert "index_dir" in line and "255" in line


def test_a_nul_in_a_config_index_dir_is_one_line(kb: Path, tmp_path: Path, groove: Groove) -> None:
    config = tmp_path / "outside.toml"
    config.write_text('index_dir = "/tmp/a\\u0000b"\n')
    argv = ["index", "--kb-path", str(kb), "--model", "hash", "--config", str(config)]
    assert "NUL" in _one_error(groove, argv)


def test_a_nul_in_a_config_golden_path_is_one_line(
    kb: Path, tmp_path: Path, groove: Groove
) -> None:
    config = tmp_path / "outside.toml"
    config.write_text('[eval]\ngolden = "/tmp/a\\u0000b.yml"\n')
    argv = ["eval", "--kb-path", str(kb), "--model", "hash", "--no-history", "--config"]
    assert "NUL" in _one_error(groove, [*argv, str(config)])


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "folder"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(
    kb: Path, tmp_path: Path, groove: Groove, target: str
) -> None:
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
    if target == "folder":
        (tmp_path / "folder").mkdir()
    path = target if target.startswith("/") else str(tmp_path / target)
    started = time.monotonic()
    done: list[str] = []
    # a blocking read of the pipe would hang the test: run it where it cannot
    worker = threading.Thread(
        target=lambda: done.append(
            _one_error(groove, ["index", "--kb-path", str(kb), "--model", "hash", "--config", path])
        ),
        daemon=True,
    )
    worker.start()
    worker.join(30)
    assert done, "--config blocked or read without end"
    assert time.monotonic() - started < 30
    assert "not a regular file" in done[0] and path in done[0]


def test_a_huge_flag_value_is_echoed_clipped(kb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--kb-path", str(kb), "--vector-index", "v" * 100_000])
    # argparse prints its usage first (as long as the subcommand's flags); the error
    # line is the last, and it carries the echo
    error_line = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert len(error_line) < 400 and "..." in error_line


def test_a_huge_config_vector_index_and_golden_path_are_echoed_clipped(
    kb: Path, tmp_path: Path, groove: Groove
) -> None:
    config = tmp_path / "big.toml"
    config.write_text(f'vector_index = "{"y" * 100_000}"\n')
    argv = ["index", "--kb-path", str(kb), "--model", "hash", "--config", str(config)]
    assert "..." in _one_error(groove, argv)
    config.write_text(f'[eval]\ngolden = "/tmp/{"g" * 100_000}"\n')
    argv = ["eval", "--kb-path", str(kb), "--model", "hash", "--config", str(config)]
    assert "..." in _one_error(groove, argv)
    argv = ["eval", "--kb-path", str(kb), "--model", "hash", "--golden", "/tmp/" + "h" * 3000]
    assert "..." in _one_error(groove, argv)


def test_init_stops_listing_past_the_bound(
    tmp_path: Path, groove: Groove, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real bound is MAX_WALKED_ENTRIES (``--kb-path /`` was measured by hand, see
    # docs/reliability.md); a small one here keeps the test from ever walking "/"
    monkeypatch.setattr("pytest_groove.evaluation.starter.MAX_WALKED_ENTRIES", 50)
    big = tmp_path / "home"
    for n in range(6):
        folder = big / f"folder{n}"
        folder.mkdir(parents=True)
        for m in range(10):
            (folder / f"note{m}.md").write_text("# n\n")
    line = _one_error(groove, ["init", "--kb-path", str(big)])
    assert "more than 50 files and folders" in line and "--kb-path" in line
    assert not (big / ".groove-eval.yml").exists() and not (big / "groove.toml").exists()
    monkeypatch.setattr("pytest_groove.evaluation.starter.MAX_WALKED_ENTRIES", MAX_WALKED_ENTRIES)
    assert main(["init", "--kb-path", str(big)]) == 0


def test_init_reads_nothing_through_a_link(kb: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\n## Outside heading\n\ntext\n")
    (kb / "link.md").symlink_to(secret)
    assert main(["init", "--kb-path", str(kb)]) == 0
    assert "Outside heading" not in (kb / ".groove-eval.yml").read_text()


# --------------------------------------------------------------------------- the plugin


@pytest.mark.parametrize("kind", ["long-name", "long-path", "not-utf8"])
@pytest.mark.parametrize("option", ["--groove-kb", "--groove-index-dir"])
def test_the_plugin_names_a_path_the_os_refuses_in_one_line(
    pytester: pytest.Pytester, option: str, kind: str
) -> None:
    kb = pytester.path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\n## Deploy\n\nRoll the release out.\n")
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - query: roll\n    expected:\n      - path: a.md\n"
    )
    path = _hostile(pytester.path)[kind]
    args = ["--groove-kb", path] if option == "--groove-kb" else ["--groove-kb", str(kb)]
    if option == "--groove-index-dir":
        args += ["--groove-index-dir", path]
    result = pytester.runpytest(*args, "--groove-model", "hash", "--groove-no-history")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and len(errors[0]) <= LINE_CAP, output
    assert option in errors[0] or option.removeprefix("--groove-") in errors[0]


def test_a_golden_file_whose_name_is_not_utf8_still_runs(
    tmp_path: Path, kb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # only KB and index folders must have UTF-8 names (the index stores their paths)
    golden = os.fsdecode(bytes(tmp_path) + b"/golden\xff.yml")
    Path(golden).write_text("queries:\n  - query: roll\n    expected:\n      - path: a.md\n")
    argv = ["eval", "--kb-path", str(kb), "--model", "hash", "--no-history", "--golden", golden]
    assert main(argv) == 0, capsys.readouterr().err


# --------------------------------------------------------------------------- generated

#: generated paths live below a folder that does not exist, and never climb out of it
#: (no "." or ".." part): a generated path must never name a real folder, which the
#: commands would then index
MISSING_BASE = "/nonexistent-groove-hostile-paths"
PATH_TEXT = st.lists(
    st.one_of(
        st.text(min_size=1, max_size=300).filter(lambda t: "/" not in t and t not in (".", "..")),
        st.sampled_from(["a" * 256, "é" * 128, "\udcff", "\x00"]),
    ),
    min_size=1,
    max_size=20,
).map(lambda parts: MISSING_BASE + "/" + "/".join(parts))


@settings(max_examples=200)
@given(text=PATH_TEXT)
def test_check_os_path_is_one_clipped_line_or_nothing(text: str) -> None:
    try:
        check_os_path(text, "knowledge base", "--kb-path")
    except GrooveError as exc:
        assert "\n" not in exc.message and "\r" not in exc.message
        assert len(exc.message) <= PATH_ECHO_LIMIT + 250
        assert os_path_problem(text) is not None
    else:
        raw = os.fsencode(os.path.abspath(text))
        assert len(raw) < 4096 and max(len(p) for p in raw.split(b"/")) <= 255


def _generated_kb_paths(groove: Groove, text: str, command: str) -> None:
    assert not os.path.lexists(MISSING_BASE)
    argv = [*COMMANDS[command][:1], "--kb-path", text, *COMMANDS[command][1:]]
    if command != "init":
        argv += ["--model", "hash"]
    done = groove(*argv)  # argparse's own usage error is exit status 2
    code = done.returncode
    assert "Traceback" not in done.stderr
    assert code in (1, 2), done.stderr
    # an input error, or a refused flag value (one `groove <command>: error:` line)
    errors = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("Error:") or (line.startswith("groove") and ": error: " in line)
    ]
    assert errors, done.stderr


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=PATH_TEXT, command=st.sampled_from(list(COMMANDS)))
def test_generated_kb_paths_never_print_a_traceback(
    groove: Groove, text: str, command: str
) -> None:
    _generated_kb_paths(groove, text, command)


@pytest.mark.slow
@settings(max_examples=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=PATH_TEXT, command=st.sampled_from(list(COMMANDS)))
def test_many_generated_kb_paths_never_print_a_traceback(
    groove: Groove, text: str, command: str
) -> None:
    _generated_kb_paths(groove, text, command)
