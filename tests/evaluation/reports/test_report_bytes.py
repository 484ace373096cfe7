"""Golden-file test: the JSON report and the history bytes of the example KB.

Two real ``groove eval`` runs (``hash`` embedder) on a copy of ``examples/kb``, the
second after one note changed, so the second report carries a baseline, a diff and
a changed corpus.  Only what must vary between machines and moments is normalised
(timestamps, the temporary KB path); every other byte is compared with the files
under ``tests/snapshots/``.  A refactor of the run records, their codecs or the
report writers that moves a key, a digit or a blank fails here.

To accept an intended change, run with ``GROOVE_UPDATE_SNAPSHOTS=1`` and review the
diff of ``tests/snapshots/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT, copy_example_kb
from pytest_groove.evaluation.history.file import HISTORY_FILE_NAME
from tests.helpers.cli_invoke import Groove

SNAPSHOTS = REPO_ROOT / "tests" / "snapshots"
REPORT_SNAPSHOT = SNAPSHOTS / "example-kb-report.json"
HISTORY_SNAPSHOT = SNAPSHOTS / "example-kb-history.json"

#: RFC 3339 UTC moments as the history and the JSON report write them
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})")
_TIMESTAMP_MARK = "<TIMESTAMP>"
_KB_MARK = "<KB>"

#: appended to one note between the runs: it quotes two golden queries word for word,
#: so their rankings move (a diff), the quote check reports the note (findings) and
#: the corpus digest changes
_EDIT = """
## Status questions

Support asks: why might a customer see an outdated parcel status for a few seconds?
Or: can I trade my pager week with a colleague?
Neither belongs here; this note is about tests.
"""


def _groove_eval(groove: Groove, kb: Path) -> str:
    done = groove.process("eval", "--kb-path", kb, "--model", "hash", "--format", "json")
    assert done.returncode == 0, done.stderr
    return done.stdout


_RUN_DIGEST = re.compile(r'\},"digest":"[0-9a-f]{64}"')


def normalise(text: str, kb: Path) -> str:
    """Mask the volatile parts only: moments, and the KB's absolute path."""
    for spelling in {str(kb), str(kb.resolve())}:
        text = text.replace(spelling, _KB_MARK)
    text = _TIMESTAMP.sub(_TIMESTAMP_MARK, text)
    # a stored run's digest covers its timestamp, so it moves with it (a corpus digest,
    # after a number, does not)
    return _RUN_DIGEST.sub('},"digest":"<run digest>"', text)


def _check(actual: str, snapshot: Path) -> None:
    if os.environ.get("GROOVE_UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_bytes(actual.encode("utf-8"))
        pytest.skip(f"rewrote {snapshot.name}")
    expected = snapshot.read_bytes().decode("utf-8")
    assert actual == expected, f"{snapshot.name} differs (GROOVE_UPDATE_SNAPSHOTS=1 rewrites)"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory, groove: Groove) -> tuple[str, str]:
    """(report of run 2, history bytes after run 2), both normalised."""
    kb = tmp_path_factory.mktemp("report-bytes") / "example-kb"
    copy_example_kb(kb)
    _groove_eval(groove, kb)
    note = kb / "practices" / "testing.md"
    note.write_bytes(note.read_bytes() + _EDIT.encode("utf-8"))
    report = _groove_eval(groove, kb)
    history = (kb / HISTORY_FILE_NAME).read_bytes().decode("utf-8")
    return normalise(report, kb), normalise(history, kb)


def test_json_report_bytes_of_the_second_run(two_runs: tuple[str, str]) -> None:
    report, _history = two_runs
    # the second run was compared with the first: the snapshot covers the diff too
    assert '"previous": {' in report and '"corpus_changed": true' in report
    assert '"check": "golden-queries-quoted"' in report
    _check(report, REPORT_SNAPSHOT)


def test_history_bytes_after_two_runs(two_runs: tuple[str, str]) -> None:
    _report, history = two_runs
    assert history.count(f'"timestamp":"{_TIMESTAMP_MARK}"') == 2
    _check(history, HISTORY_SNAPSHOT)


def test_normalising_masks_only_moments_and_the_kb_path(tmp_path: Path) -> None:
    text = f'{{"timestamp": "2026-01-02T03:04:05.123456Z", "at": "{tmp_path}/x", "n": 0.25}}'
    assert normalise(text, tmp_path) == (
        f'{{"timestamp": "{_TIMESTAMP_MARK}", "at": "{_KB_MARK}/x", "n": 0.25}}'
    )
