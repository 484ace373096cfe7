"""The index database's connection: what waits for a read snapshot to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groove.kb.store.database import Store


def test_an_action_after_the_snapshot_runs_once_the_outermost_one_ends(tmp_path: Path) -> None:
    store = Store.open(tmp_path, create=True)
    done: list[str] = []
    try:
        with store.read_snapshot():
            with store.read_snapshot():  # the caller's: this one is part of it
                store.after_snapshot(lambda: done.append("kept"))
            assert done == []
            assert not store.conn.getautocommit()
        assert done == ["kept"]
        assert store.conn.getautocommit()  # it ran with the snapshot ended
        store.after_snapshot(lambda: done.append("at once"))  # outside one
        assert done == ["kept", "at once"]
    finally:
        store.close()


def test_an_action_after_a_snapshot_that_failed_is_dropped(tmp_path: Path) -> None:
    store = Store.open(tmp_path, create=True)
    done: list[str] = []
    try:
        with pytest.raises(RuntimeError), store.read_snapshot():
            store.after_snapshot(lambda: done.append("kept"))
            raise RuntimeError("the block failed")
        with store.read_snapshot():
            pass
        assert done == []
    finally:
        store.close()
