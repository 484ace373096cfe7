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


def _to_link(target: Path, outside: Path) -> None:
    target.unlink()
    target.symlink_to(outside / target.name)


def _folder_to_link(target: Path, outside: Path) -> None:
    folder = target.parent
    folder.rename(folder.parent.parent / "moved")
    folder.symlink_to(outside, target_is_directory=True)


def _to_other_file(target: Path, _outside: Path) -> None:
    replacement = target.with_name("other.txt")
    replacement.write_text("## Other\n\nother body", encoding="utf-8")
    os.replace(replacement, target)


def _to_fifo(target: Path, _outside: Path) -> None:
    target.unlink()
    os.mkfifo(target)


@pytest.mark.parametrize(
    ("swap", "reason"),
    [
        (_to_link, "symbolic link"),
        (_folder_to_link, "symbolic link"),
        (_to_other_file, "replaced by another file"),
        (_to_fifo, "not a regular file"),
    ],
    ids=["file-to-link", "folder-to-link", "another-file", "fifo"],
)
def test_a_file_swapped_after_the_walk_is_skipped_without_blocking(
    tmp_path: Path, swap: Callable[[Path, Path], None], reason: str
) -> None:
    kb, outside = _kb_with_outside(tmp_path)
    walked = collect_files(kb, SETTINGS.index)
    swap(kb / "race" / "zz-swap.md", outside)
    started = time.monotonic()
    with pytest.raises(Skipped, match=reason):
        _read(kb, "race/zz-swap.md", walked)
    assert time.monotonic() - started < 5


def _swap_after_walk(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    real = indexer.collect_files

    def walk_then_swap(kb: Path, settings: IndexSettings) -> CollectResult:
        result = real(kb, settings)
        swap()
        return result

    monkeypatch.setattr(indexer, "collect_files", walk_then_swap)


def _indexed_text(kb: Path) -> str:
    store = Store.open(index_dir_for(kb, SETTINGS, "hash"), create=False)
    try:
        return " ".join(chunk.content for chunk in store.iter_chunk_texts())
    finally:
        store.close()


@pytest.mark.parametrize(
    ("swap", "reason"),
    [(_to_link, "symbolic link"), (_to_fifo, "regular file")],
    ids=["link", "fifo"],
)
def test_index_skips_a_swap_after_the_walk_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: Callable[[Path, Path], None], reason: str
) -> None:
    kb, outside = _kb_with_outside(tmp_path)
    _swap_after_walk(monkeypatch, lambda: swap(kb / "race" / "zz-swap.md", outside))
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.added == 1 and report.skipped == 1
    (warning,) = (w for w in report.warnings if w.startswith("skipped race/zz-swap.md:"))
    assert reason in warning
    assert "outside-secret-marker" not in _indexed_text(kb)


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
