"""An index run's progress: a plain line every few seconds where no bar can be drawn,
none at all for a run that ends before the first is due."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_groove.embed.base import Matrix
from pytest_groove.embed.hashing import HashEmbedder
from pytest_groove.engine.builtin import run_indexer
from pytest_groove.errors import GrooveError
from pytest_groove.kb import progress
from pytest_groove.kb.progress import IndexProgress, duration, line_interval, time_left
from pytest_groove.settings.config import IndexSettings, Settings
from tests.kb.test_index_group import make_kb

SETTINGS = Settings(index=IndexSettings(model="hash"))
#: a line as a CI log shows it: printable, one line
PLAIN_LINE = re.compile(r"[ -~]+")


class SlowEmbedder:
    """The hash embedder, taking ``pause`` seconds per call (a neural model's pace)."""

    def __init__(self, pause: float) -> None:
        self.inner = HashEmbedder()
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.pause = pause

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        time.sleep(self.pause)
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)


def test_the_interval_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.INTERVAL_ENV, raising=False)
    assert line_interval() == (progress.FIRST_LINE_SECONDS, progress.LINE_EVERY_SECONDS)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.5")
    assert line_interval() == (0.5, 0.5)
    monkeypatch.setenv(progress.INTERVAL_ENV, "30")
    assert line_interval() == (progress.FIRST_LINE_SECONDS, 30.0)
    for bad in ("0", "-1", "soon", "inf", "nan"):
        monkeypatch.setenv(progress.INTERVAL_ENV, bad)
        with pytest.raises(GrooveError, match=r"GROOVE_PROGRESS_SECONDS=.* fix or unset it"):
            line_interval()


def test_durations_and_estimates_read_as_words() -> None:
    assert [duration(s) for s in (0.4, 31, 125, 3900)] == ["0 s", "31 s", "2 min 5 s", "1 h 5 min"]
    assert [time_left(s) for s in (1, 42, 200, 7200)] == [
        "about 5 s left",
        "about 40 s left",
        "about 3 min left",
        "about 2 h left",
    ]


def test_lines_count_the_phase_and_estimate_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress.INTERVAL_ENV, "1000")  # no timer line during the test
    lines: list[str] = []
    shown = IndexProgress(lines.append)
    try:
        shown.phase("indexing notes", 1600, counted="chunks embedded")
        for done in range(400):
            shown.step(done * 3)
        shown._phase_started -= 31  # as if the 400 files took 31 s, the last just now
        assert re.fullmatch(
            r"indexing notes: 400 / 1,600 files, 1,197 chunks embedded, \d+ s, about 2 min left",
            shown.line(),
        )
    finally:
        shown.close()
    assert lines == []


def test_no_line_for_a_run_shorter_than_the_first_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.INTERVAL_ENV, raising=False)
    lines: list[str] = []
    shown = IndexProgress(lines.append)
    shown.phase("indexing notes", 10, counted="chunks embedded")
    shown.step(3)
    shown.close()
    assert lines == []


def test_a_long_index_run_writes_plain_lines_until_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 60)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    monkeypatch.setattr("pytest_groove.kb.indexer.EMBED_GROUP_CHUNKS", 30)
    lines: list[str] = []
    report = run_indexer(kb, SETTINGS, embedder=SlowEmbedder(0.05), progress=lines.append)
    assert report.added == 60
    counted = [line for line in lines if line.startswith("indexing notes: ")]
    assert counted and all(" / 60 files, " in line for line in counted), lines
    assert any(not line.startswith("indexing notes: 0 /") for line in counted), lines
    assert lines[-1].startswith("writing the search caches, ")
    assert all(PLAIN_LINE.fullmatch(line) for line in lines), lines
    after = len(lines)
    time.sleep(0.2)
    assert len(lines) == after  # the timer stopped with the run


def test_without_a_terminal_the_lines_go_to_standard_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kb = make_kb(tmp_path / "kb", 20)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.05")
    run_indexer(kb, SETTINGS, embedder=SlowEmbedder(0.1), progress=None)
    err = capsys.readouterr().err
    assert "groove: indexing notes: " in err
    # told to show nothing, it shows nothing
    run_indexer(kb, SETTINGS, embedder=SlowEmbedder(0.1), progress=False, force=True)
    assert capsys.readouterr().err == ""


def test_a_writer_that_fails_stops_the_lines_not_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = make_kb(tmp_path / "kb", 20)
    monkeypatch.setenv(progress.INTERVAL_ENV, "0.02")
    calls: list[str] = []

    def broken(line: str) -> None:
        calls.append(line)
        raise OSError("closed pipe")

    report = run_indexer(kb, SETTINGS, embedder=SlowEmbedder(0.1), progress=broken)
    assert report.added == 20 and len(calls) == 1
