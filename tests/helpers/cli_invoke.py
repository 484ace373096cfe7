"""The ``groove`` command run in-process, the one way the CLI tests drive it.

``invoke(*args)`` calls :func:`pytest_groove.cli.main` with standard output and error
captured, in the given working directory and environment, and answers like a finished
subprocess (``returncode``, ``stdout``, ``stderr``), so a test reads the same either
way.  It is a plain function, not a fixture, so module-scoped fixtures (an index built
once for a module) use it too.  The few tests that need a real process -- another
interpreter, a closed or non-UTF-8 stream, the installed console script -- still start
one.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CliRun:
    """What one ``groove`` invocation returned and printed."""

    returncode: int
    stdout: str
    stderr: str


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
