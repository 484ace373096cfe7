"""A Ctrl-C while pytest finishes is one line: a real SIGINT, sent by the process to
itself at each moment of the session's end, through pytest's own entry point."""

from __future__ import annotations

import json
import signal
import sys
import textwrap

import pytest

from pytest_groove.plugin import interrupt

pytest_plugins = ["pytester"]

#: a plugin that interrupts its own process at one moment of the session's end
_SIGNAL_PLUGIN = """
import os, signal, pytest

MOMENT = {moment!r}

# as in a terminal: a run started in the background of a shell inherits SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)

def _interrupt():
    os.kill(os.getpid(), signal.SIGINT)

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if MOMENT == "sessionfinish":
        _interrupt()

@pytest.hookimpl(tryfirst=True, specname="pytest_terminal_summary")
def pytest_summary_first(terminalreporter):
    if MOMENT == "summary-first":
        _interrupt()

@pytest.hookimpl(trylast=True, specname="pytest_terminal_summary")
def pytest_summary_last(terminalreporter):
    if MOMENT == "summary-last":
        _interrupt()

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if MOMENT == "unconfigure":
        _interrupt()
"""


def _write_project(pytester: pytest.Pytester, moment: str) -> None:
    kb = pytester.mkdir("kb")
    (kb / "deploy.md").write_text("# Deploy\n\n## Rollback\n\nrevert the tag\n", encoding="utf-8")
    (kb / ".groove-eval.yml").write_text(
        "queries:\n  - id: rollback\n    query: revert the tag\n"
        "    expected:\n      - path: deploy.md\n",
        encoding="utf-8",
    )
    pytester.makepyfile(interrupter=textwrap.dedent(_SIGNAL_PLUGIN.format(moment=moment)))


@pytest.mark.parametrize(
    "moment", ["sessionfinish", "summary-first", "summary-last", "unconfigure"]
)
def test_ctrl_c_while_pytest_finishes_is_one_line(pytester: pytest.Pytester, moment: str) -> None:
    _write_project(pytester, moment)
    result = pytester.runpytest_subprocess(
        "-p", "interrupter", "-p", "no:cacheprovider", "--groove-kb", "kb", "--groove-model", "hash"
    )
    err = result.stderr.str()
    assert "Traceback" not in err + result.stdout.str()
    # the run is recorded whatever moment the signal came: pytest's main gives the
    # controller its unconfigure on the way out
    assert err.strip().splitlines()[-1] == (
        "groove: interrupted while pytest was finishing; the run was recorded"
    )
    assert result.ret == -signal.SIGINT  # Python's own status for a Ctrl-C: 130 in a shell
    history = json.loads((pytester.path / "kb" / ".groove-eval-history.json").read_text("utf-8"))
    assert len(history["runs"]) == 1


def test_any_other_exception_is_pythons_own_report(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "__excepthook__", lambda kind, value, tb: seen.append(kind))
    interrupt.interrupted_while_finishing(ValueError, ValueError("x"), None)
    assert seen == [ValueError]


def test_a_hosts_own_hook_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    def own(kind: type[BaseException], value: BaseException, tb: object) -> None:
        pass

    monkeypatch.setattr(sys, "excepthook", own)
    interrupt.arm()
    assert sys.excepthook is own
