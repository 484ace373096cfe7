"""The file lock writers of one file serialise on."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.files.lock import LockTimeout, acquire_lock, holding


def test_a_held_lock_times_out_for_the_next_taker(tmp_path: Path) -> None:
    lock_path = tmp_path / "file.lock"
    first = acquire_lock(lock_path, 1.0)
    with holding(first), pytest.raises(LockTimeout):
        acquire_lock(lock_path, 0.05)
    assert not first.is_locked
    again = acquire_lock(lock_path, 0.05)
    again.release()
