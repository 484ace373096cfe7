"""Waiting on an index another run is updating: said at once, and the timeout names the
fix that exists (a run that exits releases the lock, so "remove a stale lock file",
said to a user whose other run was alive, only broke mutual exclusion)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.kb.store.lock import LOCK_FILE_NAME, index_lock

HOLDER = textwrap.dedent(
    """
    import sys, time, filelock
    lock = filelock.FileLock(sys.argv[1])
    lock.acquire()
    print("held", flush=True)
    time.sleep(30)
    """
)


def test_a_held_index_lock_is_waited_for_aloud_and_the_timeout_names_no_removal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / LOCK_FILE_NAME)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(GrooveError) as caught, index_lock(tmp_path, timeout=0.3):
            pass
    finally:
        holder.kill()
        holder.wait()
    waiting = capsys.readouterr().err
    assert "groove: waiting for " in waiting and "another groove or pytest run" in waiting
    message = caught.value.message
    assert "wait for it to finish, or stop it" in message
    assert "remove the file only if no run is active" in message
    with index_lock(tmp_path, timeout=0.3):  # the holder exited: its lock went with it
        pass
