"""Faults of the index folder: one line naming the file and the fix, never a traceback.

Library level through the engine's public functions (hash embedder).  Real faults
where the machine can produce them (a corrupt file, a lock that is a directory,
``/proc/self``, symlink loops); injected SQLite errors for the rest here, with the
real full disk, size limit and read-only mount in tests/faults/test_cli.py.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import apsw
import pytest

from pytest_groove.engine.builtin import index_dir_for, open_engine, run_indexer
from pytest_groove.errors import GrooveError, IndexCorrupt, IndexUnwritable, LockFailed
from pytest_groove.kb import indexer
from pytest_groove.kb.store.database import DB_FILE_NAME, Store
from pytest_groove.kb.store.faults import os_fault
from pytest_groove.settings.config import IndexSettings, Settings

SETTINGS = Settings(index=IndexSettings(model="hash"))


def with_index_dir(path: Path) -> Settings:
    return replace(SETTINGS, index=replace(SETTINGS.index, index_dir=path))


def db_path(kb: Path) -> Path:
    return index_dir_for(kb.resolve(), SETTINGS, "hash") / DB_FILE_NAME


def one_line(exc: GrooveError) -> str:
    assert "\n" not in exc.message
    return exc.message


def damage_pages(path: Path) -> None:
    """Overwrite every page after the first with junk: a real, detectable corruption."""
    data = bytearray(path.read_bytes())
    for i in range(4096, len(data), 7):
        data[i] = 0xFF
    path.write_bytes(bytes(data))


def set_bad_text(path: Path, doc_path: str) -> None:
    """Store bytes that are not UTF-8 as one chunk's text, as a torn page could."""
    conn = apsw.Connection(str(path))
    conn.execute(
        "UPDATE chunks SET content = CAST(x'ff41fe' AS TEXT) WHERE document_id = "
        "(SELECT id FROM documents WHERE path = ?)",
        (doc_path,),
    )
    conn.close()


def assert_rebuilt(kb: Path) -> None:
    """The indexer rebuilds the corrupt index in full, says so, and it searches again."""
    report = run_indexer(kb, SETTINGS, progress=False)
    assert report.added == 20
    assert any("is corrupt" in w and "rebuilt" in w for w in report.warnings)
    with open_engine(kb, SETTINGS, reindex=False) as engine:
        assert engine.search("deploy", 3)


# --------------------------------------------------------------------------- corruption


def test_a_corrupt_index_is_rebuilt_by_the_indexer(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    damage_pages(db_path(kb_eval_copy))
    assert_rebuilt(kb_eval_copy)


def test_a_file_that_is_no_database_is_rebuilt(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    db_path(kb_eval_copy).write_bytes(b"this is not SQLite" * 100)
    assert run_indexer(kb_eval_copy, SETTINGS, progress=False).added == 20


def test_searching_a_corrupt_index_names_it_and_the_rebuild(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    db = db_path(kb_eval_copy)
    for cache in db.parent.glob("vectors*"):
        cache.unlink()
    damage_pages(db)
    with pytest.raises(IndexCorrupt) as caught:
        open_engine(kb_eval_copy, SETTINGS, reindex=False)
    message = one_line(caught.value)
    assert str(db) in message and "rebuilt by the next run that indexes" in message
    assert "`groove index --kb-path" in message
    # the search left its mark: a plain run of the indexer rebuilds it
    assert_rebuilt(kb_eval_copy)


def test_undecodable_text_in_search_is_reported_as_corruption(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    db = db_path(kb_eval_copy)
    store = Store.open(db.parent, create=False)
    paths = sorted(store.document_hashes())
    store.close()
    for path in paths:
        set_bad_text(db, path)
    with open_engine(kb_eval_copy, SETTINGS, reindex=False) as engine:
        with pytest.raises(IndexCorrupt) as caught:
            engine.search("deploy", 5)
        # the corpus snapshot reads no chunk text (each document's digest was made
        # when its chunks were written): the search is what reports the damage
        assert engine.corpus_snapshot().chunks > 0
    message = one_line(caught.value)
    assert "undecodable" in message and "rebuilt by the next run that indexes" in message
    # SQLite's own check finds nothing wrong with such a row: the search's mark is what
    # has the next plain run of the indexer rebuild it
    report = run_indexer(kb_eval_copy, SETTINGS, progress=False)
    assert report.added == 20
    (warning,) = [w for w in report.warnings if "rebuilt" in w]
    assert "an earlier run found: undecodable text" in warning
    with open_engine(kb_eval_copy, SETTINGS, reindex=False) as engine:
        assert engine.search("deploy", 5)


def test_undecodable_text_met_while_indexing_rebuilds(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    db = db_path(kb_eval_copy)
    target = sorted(p for p in kb_eval_copy.rglob("*.md") if ".groove" not in p.parts)[0]
    rel = target.relative_to(kb_eval_copy).as_posix()
    set_bad_text(db, rel)
    # a frontmatter-only edit makes the indexer read the stored chunks back
    text = target.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        target.write_text("---\nextra: 1\n" + text[4:], encoding="utf-8")
    else:
        target.write_text("---\nextra: 1\n---\n" + text, encoding="utf-8")
    report = run_indexer(kb_eval_copy, SETTINGS, progress=False)
    assert any("is corrupt" in w for w in report.warnings)
    assert report.added == 20


# --------------------------------------------------------------------------- the folder


def test_a_lock_that_is_a_directory_fails_at_once(kb_eval_copy: Path) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    lock = db_path(kb_eval_copy).parent / "index.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    with pytest.raises(LockFailed) as caught:
        run_indexer(kb_eval_copy, SETTINGS, progress=False)
    assert str(lock) in one_line(caught.value) and "remove it" in caught.value.message


def test_an_index_dir_that_is_a_file(kb_eval_copy: Path, tmp_path: Path) -> None:
    target = tmp_path / "not-a-folder"
    target.write_text("x")
    with pytest.raises(GrooveError) as caught:
        run_indexer(kb_eval_copy, with_index_dir(target), progress=False)
    assert "not a folder" in one_line(caught.value) and "--index-dir" in caught.value.message
    assert target.read_text() == "x"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_an_index_dir_that_cannot_hold_files_fails_fast(kb_eval_copy: Path) -> None:
    started = time.monotonic()
    with pytest.raises(GrooveError) as caught:
        run_indexer(kb_eval_copy, with_index_dir(Path("/proc/self")), progress=False)
    assert time.monotonic() - started < 10  # not the 600 s lock timeout
    # a folder outside the KB is named resolved (/proc/<pid>): SQLite is then told to
    # refuse any link on the way to the database
    assert f"/proc/{os.getpid()}" in one_line(caught.value)


def test_symlink_loops_as_kb_or_index_dir(kb_eval_copy: Path, tmp_path: Path) -> None:
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    with pytest.raises(GrooveError) as caught:
        run_indexer(tmp_path / "loop-a", SETTINGS, progress=False)
    assert "symlink loop" in one_line(caught.value) and "--kb-path" in caught.value.message
    with pytest.raises(GrooveError) as caught:
        open_engine(tmp_path / "loop-a", SETTINGS)
    with pytest.raises(GrooveError) as caught:
        run_indexer(kb_eval_copy, with_index_dir(tmp_path / "loop-a"), progress=False)
    assert "symlink loop" in one_line(caught.value) and "--index-dir" in caught.value.message


@pytest.mark.parametrize("planted", ["link-to-folder", "link-to-index", "file"])
def test_an_index_folder_reached_through_a_link_in_the_kb_is_refused(
    kb_eval_copy: Path, tmp_path: Path, planted: str
) -> None:
    """Whoever writes the KB cannot send the index outside it: not for writing, not
    for reading (``.groove`` planted as a link, or as a file)."""
    kb = kb_eval_copy
    outside = tmp_path / "outside"
    outside.mkdir()
    if planted == "link-to-index":
        # an index that really exists outside, reached through the planted link
        run_indexer(kb, with_index_dir(outside / "hash"), progress=False)
    before = sorted(p.name for p in outside.rglob("*"))
    grooves = kb / ".groove"
    if grooves.exists():
        shutil.rmtree(grooves)
    if planted == "file":
        grooves.write_text("not a folder")
    else:
        grooves.symlink_to(outside)
    with pytest.raises(GrooveError) as caught:
        run_indexer(kb, SETTINGS, progress=False)
    message = one_line(caught.value)
    assert ".groove inside the knowledge base" in message and "--index-dir" in message
    with pytest.raises(GrooveError) as caught:
        open_engine(kb, SETTINGS, reindex=False)
    assert ".groove inside the knowledge base" in one_line(caught.value)
    assert sorted(p.name for p in outside.rglob("*")) == before


def test_an_index_folder_inside_the_kb_is_made_below_it(kb_eval_copy: Path) -> None:
    nested = kb_eval_copy / "cache" / "deep" / "index"
    run_indexer(kb_eval_copy, with_index_dir(nested), progress=False)
    assert (nested / DB_FILE_NAME).is_file()
    with open_engine(kb_eval_copy, with_index_dir(nested), reindex=False) as engine:
        assert engine.search("release", 3, SETTINGS.search)


# --------------------------------------------------------------------------- unwritable


def test_an_unwritable_folder_with_a_current_index_is_used_as_it_is(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)

    def denied(index_dir: Path) -> None:
        raise os_fault(
            PermissionError(errno.EACCES, "Permission denied", str(index_dir)), index_dir
        )

    monkeypatch.setattr(indexer, "probe_lock_file", denied)
    report = run_indexer(kb_eval_copy, SETTINGS, progress=False)
    assert report.unchanged == 20 and report.chunks_embedded == 0
    assert any("not writable" in w for w in report.warnings)
    # a forced rebuild cannot be done either, and is named as what was asked
    with pytest.raises(IndexUnwritable) as forced:
        run_indexer(kb_eval_copy, SETTINGS, progress=False, force=True)
    assert "is to be rebuilt (--force) and cannot be written" in one_line(forced.value)
    with open_engine(kb_eval_copy, SETTINGS) as engine:
        assert engine.search("deploy", 3)

    # once a file changes the index must be written, and that is one clear error
    md = next(p for p in kb_eval_copy.rglob("*.md") if ".groove" not in p.parts)
    md.write_text(md.read_text(encoding="utf-8") + "\n\nA new paragraph.\n", encoding="utf-8")
    with pytest.raises(IndexUnwritable) as caught:
        run_indexer(kb_eval_copy, SETTINGS, progress=False)
    message = one_line(caught.value)
    assert "permission denied" in message and "out of date" in message
    assert "pass --index-dir" in message


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (apsw.FullError("database or disk is full"), "no space left"),
        (apsw.IOError("disk I/O error"), "disk I/O error"),
    ],
)
def test_write_failures_while_indexing_are_one_line(
    kb_eval_copy: Path, monkeypatch: pytest.MonkeyPatch, fault: apsw.Error, words: str
) -> None:
    run_indexer(kb_eval_copy, SETTINGS, progress=False)
    before = db_path(kb_eval_copy).read_bytes()

    def failing(*_args: object, **_kwargs: object) -> None:
        raise fault

    monkeypatch.setattr(Store, "write_documents", failing)
    md = next(p for p in kb_eval_copy.rglob("*.md") if ".groove" not in p.parts)
    md.write_text(md.read_text(encoding="utf-8") + "\n\nAnother paragraph here.\n", "utf-8")
    with pytest.raises(IndexUnwritable) as caught:
        run_indexer(kb_eval_copy, SETTINGS, progress=False)
    message = one_line(caught.value)
    assert words in message and str(db_path(kb_eval_copy)) in message
    assert "--index-dir" in message
    monkeypatch.undo()
    # the index was not damaged: the next run picks up where it stopped
    assert db_path(kb_eval_copy).read_bytes() != b"" and before
    assert run_indexer(kb_eval_copy, SETTINGS, progress=False).changed == 1


def test_os_fault_wording_names_the_remedy(tmp_path: Path) -> None:
    for code, words in [
        (errno.EROFS, "read-only"),
        (errno.EACCES, "permission denied"),
        (errno.ENOSPC, "no space left"),
        (errno.EFBIG, "ulimit -f"),
    ]:
        fault = os_fault(OSError(code, os.strerror(code), str(tmp_path)), tmp_path)
        assert isinstance(fault, IndexUnwritable)
        assert words in fault.message and str(tmp_path) in fault.message
        assert "--index-dir" in fault.message
