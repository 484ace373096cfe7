"""The ``groove`` command run in-process, the one way the CLI tests drive it.

``invoke(*args)`` calls :func:`pytest_groove.cli.main` with standard output and error
captured, in the given working directory and environment, and answers like a finished
subprocess (``returncode``, ``stdout``, ``stderr``), so a test reads the same either
way.  It is a plain function, not a fixture, so module-scoped fixtures (an index built
once for a module) use it too.  The few tests that need a real process -- another
interpreter, a closed or non-UTF-8 stream, the installed console script -- still start
one; ``run_process(*args)`` starts ``python -m pytest_groove.cli`` and answers the same.

Tests take both through the session fixture ``groove`` (tests/conftest.py):
``groove(*args)`` in-process, ``groove.process(*args)`` in a new interpreter.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple


class CliRun(NamedTuple):
    """What one ``groove`` invocation returned and printed (unpacks in that order)."""

    returncode: int
    stdout: str
    stderr: str


def single_error(run: CliRun | subprocess.CompletedProcess[str]) -> str:
    """The one ``Error:`` line of a failed run (warnings may precede it)."""
    assert run.returncode == 1, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if not line.startswith("groove")]
    lines = [line for line in lines if not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("Error: "), run.stderr
    return lines[0]


@contextlib.contextmanager
def _inside(cwd: Path | None, env: Mapping[str, str]) -> Iterator[None]:
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(env)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def invoke(
    *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> CliRun:
    """Run ``groove ARGS`` in this process (colour off unless ``env`` says otherwise)."""
    from pytest_groove.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        _inside(cwd, {"NO_COLOR": "1", **(env or {})}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main([str(arg) for arg in args])
        except SystemExit as exc:  # argparse refuses a flag: exit status 2
            code = exc.code if isinstance(exc.code, int) else 1
    return CliRun(code, out.getvalue(), err.getvalue())


def run_process(
    *args: str | Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    python: Sequence[str] = (sys.executable, "-m", "pytest_groove.cli"),
    timeout: float = 300,
) -> CliRun:
    """Run ``groove ARGS`` in a new interpreter (``python``: the command line before the
    arguments), its output read as UTF-8; ``env`` adds to this process's environment,
    colour off unless it says otherwise."""
    done = subprocess.run(
        [*python, *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=timeout,
        check=False,
    )
    return CliRun(done.returncode, done.stdout, done.stderr)


class Groove:
    """The ``groove`` fixture: ``groove(*args)`` runs the command in this process
    (:func:`invoke`), ``groove.process(*args)`` in a new one (:func:`run_process`)."""

    def __call__(
        self, *args: str | Path, cwd: Path | None = None, env: Mapping[str, str] | None = None
    ) -> CliRun:
        return invoke(*args, cwd=cwd, env=env)

    process = staticmethod(run_process)
