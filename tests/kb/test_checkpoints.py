"""The WAL checkpointed on a thread of its own: commits never wait for it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_groove.errors import GrooveError
from pytest_groove.kb import checkpoints
from pytest_groove.kb.checkpoints import WAL_CHECKPOINT_PAGES, WAL_RESTART_PAGES, checkpoints_apart
from pytest_groove.kb.store.database import DB_FILE_NAME, Store

#: more than the WAL pages that call for a checkpoint (4 KiB pages)
_PAST_THE_CHECKPOINT = bytes(range(256)) * (WAL_CHECKPOINT_PAGES * 20)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path, create=True)
    try:
        yield opened
    finally:
        opened.close()


def _write_past_the_checkpoint(store: Store, key: str = "filler") -> None:
    with store.transaction():
        store.set_meta(key, _PAST_THE_CHECKPOINT)


def _database_bytes(store: Store) -> int:
    return os.path.getsize(store.path.parent / DB_FILE_NAME)


def test_the_other_thread_copies_the_wal_into_the_database(store: Store) -> None:
    before = _database_bytes(store)
    with checkpoints_apart(store):
        _write_past_the_checkpoint(store)
        # nothing but the thread checkpoints while the block holds (the store stays
        # open): the pages reach index.db because the thread puts them there
        deadline = time.monotonic() + 30
        while _database_bytes(store) <= before + len(_PAST_THE_CHECKPOINT) // 2:
            assert time.monotonic() < deadline, "no checkpoint in 30 s"
            time.sleep(0.01)
    assert store.get_meta_blob("filler") == _PAST_THE_CHECKPOINT


def test_a_commit_does_not_checkpoint_the_wal_itself(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "_checkpoint", lambda reader: None)
    before = _database_bytes(store)
    with checkpoints_apart(store):
        _write_past_the_checkpoint(store)
        assert _database_bytes(store) < before + len(_PAST_THE_CHECKPOINT) // 2
    store.close()  # the close checkpoints what is left
    assert _database_bytes(store) > before + len(_PAST_THE_CHECKPOINT) // 2


def test_commits_go_on_while_a_checkpoint_is_under_way(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real = checkpoints._checkpoint

    def slow(reader: Store) -> None:
        started.set()
        assert release.wait(timeout=30)
        real(reader)

    monkeypatch.setattr(checkpoints, "_checkpoint", slow)
    with checkpoints_apart(store):
        _write_past_the_checkpoint(store, "first")
        assert started.wait(timeout=30)
        for n in range(3):  # each commit returns while the checkpoint waits
            _write_past_the_checkpoint(store, f"more-{n}")
        release.set()
    assert store.get_meta_blob("more-2") == _PAST_THE_CHECKPOINT


@pytest.mark.parametrize("error", [GrooveError("no second connection"), RuntimeError("odd")])
def test_a_connection_that_cannot_be_opened_leaves_the_wal_to_the_close(
    store: Store, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    tried = threading.Event()

    def refused(folder: Path, *, create: bool) -> Store:
        tried.set()
        raise error

    escaped: list[object] = []
    monkeypatch.setattr(threading, "excepthook", escaped.append)  # it prints a traceback
    monkeypatch.setattr(Store, "open", refused)
    before = _database_bytes(store)
    with checkpoints_apart(store):
        _write_past_the_checkpoint(store)
        assert tried.wait(timeout=30)
        _write_past_the_checkpoint(store, "again")  # asks again: the thread is still there
    assert not escaped
    assert store.get_meta_blob("filler") == _PAST_THE_CHECKPOINT
    store.close()
    assert _database_bytes(store) > before + len(_PAST_THE_CHECKPOINT) // 2


def test_no_thread_is_left_once_the_block_ends(store: Store) -> None:
    with checkpoints_apart(store):
        _write_past_the_checkpoint(store)
    assert not [t for t in threading.enumerate() if t.name == "groove-checkpoints"]


def test_the_wal_starts_over_however_long_the_writer_writes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the thread's checkpoints never let the WAL start over while the writer keeps
    # appending: past WAL_RESTART_PAGES the commit checkpoints the rest itself
    monkeypatch.setattr(checkpoints, "_checkpoint", lambda reader: None)
    wal = store.path.parent / f"{DB_FILE_NAME}-wal"
    page = store.conn.execute("PRAGMA page_size").fetchone()[0]  # type: ignore[index]
    per_write = len(_PAST_THE_CHECKPOINT) // page + 1
    with checkpoints_apart(store):
        for n in range(12):
            _write_past_the_checkpoint(store, f"write-{n}")
            assert os.path.getsize(wal) <= (WAL_RESTART_PAGES + 2 * per_write) * (page + 24) + 32
    assert 12 * per_write > 2 * WAL_RESTART_PAGES  # without the restart it would be far past


def test_a_run_that_writes_little_starts_no_thread(store: Store) -> None:
    started: list[str] = []
    with checkpoints_apart(store):
        with store.transaction():
            store.set_meta("small", "a few bytes")
        started = [t.name for t in threading.enumerate() if t.name == "groove-checkpoints"]
    assert started == []
