"""Nothing outside the KB is read: files swapped between the walk and the read.

The walk records which file it saw; the indexer reads it below the KB root
without following links and only if it is still that regular file.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import pytest_groove.kb.indexer as indexer
from pytest_groove.engine.builtin import index_dir_for, run_indexer
from pytest_groove.files.beneath import Skipped, open_root, read_beneath
from pytest_groove.kb.source.walk import CollectResult, collect_files
from pytest_groove.kb.store.database import Store
from pytest_groove.settings.config import IndexSettings, Settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX links and pipes")

SETTINGS = Settings(index=IndexSettings(model="hash"))
SECRET = "outside-secret-marker " * 20
BODY = "## Note\n\n" + "ordinary words about the knowledge base " * 8


def _kb_with_outside(tmp_path: Path) -> tuple[Path, Path]:
    kb = tmp_path / "kb"
    (kb / "race").mkdir(parents=True)
    (kb / "race" / "zz-swap.md").write_text(BODY, encoding="utf-8")
    (kb / "keep.md").write_text(BODY, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "zz-swap.md").write_text("## Secret\n\n" + SECRET, encoding="utf-8")
    return kb, outside


def _read(kb: Path, rel: str, walked: CollectResult) -> bytes:
    root = kb.resolve()
    fd = open_root(root)
    try:
        return read_beneath(fd, root, rel, walked.identities.get(rel), 1 << 20)
    finally:
        os.close(fd)


def test_unchanged_file_is_read(tmp_path: Path) -> None:
    kb, _outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    assert _read(kb, "race/zz-swap.md", walked) == BODY.encode()


def test_file_swapped_for_a_symlink_after_the_walk_is_skipped(tmp_path: Path) -> None:
    kb, outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    target = kb / "race" / "zz-swap.md"
    target.unlink()
    target.symlink_to(outside / "zz-swap.md")
    with pytest.raises(Skipped, match="symbolic link"):
        _read(kb, "race/zz-swap.md", walked)


def test_folder_swapped_for_a_symlink_after_the_walk_is_skipped(tmp_path: Path) -> None:
    kb, outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    (kb / "race").rename(tmp_path / "moved")
    (kb / "race").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Skipped, match="symbolic link"):
        _read(kb, "race/zz-swap.md", walked)


def test_file_replaced_by_another_file_after_the_walk_is_skipped(tmp_path: Path) -> None:
    kb, _outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    target = kb / "race" / "zz-swap.md"
    replacement = kb / "race" / "other.txt"
    replacement.write_text("## Other\n\nother body", encoding="utf-8")
    os.replace(replacement, target)
    with pytest.raises(Skipped, match="replaced by another file"):
        _read(kb, "race/zz-swap.md", walked)


def test_fifo_swapped_in_is_skipped_without_blocking(tmp_path: Path) -> None:
    kb, _outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    target = kb / "race" / "zz-swap.md"
    target.unlink()
    os.mkfifo(target)
    started = time.monotonic()
    with pytest.raises(Skipped, match="not a regular file"):
        _read(kb, "race/zz-swap.md", walked)
    assert time.monotonic() - started < 5


def _swap_after_walk(monkeypatch: pytest.MonkeyPatch, swap: object) -> None:
    real = indexer.collect_files

    def walk_then_swap(kb: Path, settings: IndexSettings) -> CollectResult:
        result = real(kb, settings)
        swap()  # type: ignore[operator]
        return result

    monkeypatch.setattr(indexer, "collect_files", walk_then_swap)


def _indexed_text(kb: Path) -> str:
    store = Store.open(index_dir_for(kb, SETTINGS, "hash"), create=False)
    try:
        return " ".join(chunk.content for chunk in store.iter_chunk_texts())
    finally:
        store.close()


def test_index_skips_a_symlink_swap_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, outside = _kb_with_outside(tmp_path)
    target = kb / "race" / "zz-swap.md"

    def swap() -> None:
        target.unlink()
        target.symlink_to(outside / "zz-swap.md")

    _swap_after_walk(monkeypatch, swap)
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.skipped == 1
    assert any(w.startswith("skipped race/zz-swap.md:") for w in report.warnings)
    assert "outside-secret-marker" not in _indexed_text(kb)


def test_index_skips_a_fifo_swap_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, _outside = _kb_with_outside(tmp_path)
    target = kb / "race" / "zz-swap.md"

    def swap() -> None:
        target.unlink()
        os.mkfifo(target)

    _swap_after_walk(monkeypatch, swap)
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.added == 1 and report.skipped == 1
    assert any("race/zz-swap.md" in w and "regular file" in w for w in report.warnings)


def _link_to(destination: Path) -> Callable[[Path], None]:
    return lambda link: link.symlink_to(destination)


@contextlib.contextmanager
def _swapping(target: Path, staged: Path, plant: Callable[[Path], None]) -> Iterator[None]:
    """While the block runs, a thread keeps swapping ``target`` between a regular file
    and what ``plant`` makes at ``staged`` (a link, a named pipe)."""
    staged_file = target.with_name(".staged-file")
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            staged_file.write_text(BODY, encoding="utf-8")
            os.replace(staged_file, target)
            if os.path.lexists(staged):
                staged.unlink()
            plant(staged)
            os.replace(staged, target)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@pytest.mark.slow
def test_swap_loop_during_indexing_never_indexes_outside_content(tmp_path: Path) -> None:
    """The issue's reproduction: a loop swapping file <-> symlink while indexing runs."""
    kb, outside = _kb_with_outside(tmp_path)
    for n in range(40):
        (kb / "race" / f"filler-{n:02}.md").write_text(BODY + str(n), encoding="utf-8")
    target = kb / "race" / "zz-swap.md"
    with _swapping(target, kb / "race" / ".staged-link", _link_to(outside / "zz-swap.md")):
        for _ in range(30):
            run_indexer(kb, SETTINGS, progress=False, force=True)
            assert "outside-secret-marker" not in _indexed_text(kb)


@pytest.mark.slow
def test_fifo_swap_loop_never_blocks_indexing(tmp_path: Path) -> None:
    kb, _outside = _kb_with_outside(tmp_path)
    started = time.monotonic()
    with _swapping(kb / "race" / "zz-swap.md", kb / "race" / ".staged-fifo", os.mkfifo):
        for _ in range(30):
            run_indexer(kb, SETTINGS, progress=False, force=True)
    assert time.monotonic() - started < 120
