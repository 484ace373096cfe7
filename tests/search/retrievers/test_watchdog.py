"""A Python retriever that hangs is told of once per hung query, by a thread that only
prints; one raising its own BaseException stops the run in one line, and Ctrl-C still
interrupts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from pytest_groove.errors import StopsTheRun
from pytest_groove.search.retrievers import watchdog
from pytest_groove.search.retrievers.external import from_object


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    lines: list[str] = []
    monkeypatch.setattr(watchdog, "STALL_SECONDS", 0.2)
    monkeypatch.setattr(watchdog, "announce", lines.append)
    return lines


def _sleeping(seconds: float) -> Any:
    def search(query: str, limit: int) -> list[dict[str, Any]]:
        time.sleep(seconds)
        return [{"path": "a.md"}]

    return search


def test_a_retriever_slower_than_the_threshold_is_told_of_once(
    told: list[str], tmp_path: Path
) -> None:
    retriever = from_object(_sleeping(0.6), tmp_path, "slow-one")
    started = time.monotonic()
    assert [hit.path for hit in retriever.search("where is \x1b[31m it", 5)] == ["a.md"]
    assert time.monotonic() - started < 2  # the watchdog only prints: the call goes on
    assert told == [
        watchdog.stall_line("slow-one", "where is \x1b[31m it", 0.2),
    ]
    (line,) = told
    assert line.startswith("retriever slow-one has not answered query 'where is \\x1b[31m it'")
    assert "pytest-timeout" in line and "applies to http:// retrievers only" in line


def test_a_retriever_answering_in_time_is_not_told_of(told: list[str], tmp_path: Path) -> None:
    retriever = from_object(_sleeping(0.0), tmp_path, "quick")
    for _ in range(5):
        retriever.search("q", 5)
    time.sleep(0.4)  # a timer left running would fire now
    assert told == []


class Cancelled(BaseException):
    pass


def test_a_retrievers_own_base_exception_stops_the_run_in_one_line(tmp_path: Path) -> None:
    def search(query: str, limit: int) -> list[Any]:
        raise Cancelled("client cancelled\n" + "x" * 10_000)

    retriever = from_object(search, tmp_path, "cancelling")
    with pytest.raises(StopsTheRun) as raised:
        retriever.search("q", 5)
    line = raised.value.message
    assert line.startswith("retriever cancelling failed on query 'q': Cancelled: client cancelled")
    assert len(line) < 200 and line.isprintable()


def test_ctrl_c_in_a_retriever_still_interrupts(tmp_path: Path) -> None:
    def search(query: str, limit: int) -> list[Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        from_object(search, tmp_path, "interrupted").search("q", 5)


def test_the_default_line_goes_to_standard_error_spelled_for_groove(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import sys

    stream = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", stream)
    watchdog.DEFAULT_ANNOUNCE(watchdog.stall_line("r", "q", 30))
    assert stream.getvalue() == (
        "groove: warning: retriever r has not answered query 'q' in 30 s and is still being "
        "waited for: a Python retriever runs in this process and cannot be cut short; set a "
        "timeout on the client it calls, or bound the run with pytest-timeout (pytest "
        "--timeout=SECONDS); --retriever-timeout applies to http:// retrievers only\n"
    )
