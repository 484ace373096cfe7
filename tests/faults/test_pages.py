"""Damaged pages of ``index.db`` through ``groove``: one line, never a wrong metric, and
never an index left damaged by a run that indexes.

Each case copies an indexed, once-evaluated KB, overwrites one 4 KiB page of its
database with zeros or random bytes (a torn write, a bad sector, a stray ``dd``), then:

1. ``groove eval --no-reindex`` (a reader, which may not rebuild): exit 0 with the
   undamaged run's metrics and hits (a page it never read), or exit 1 with one
   ``Error:`` line naming the damage and this run's own ``groove index`` command (not
   a literal ``<kb>``); the history keeps its bytes;
2. ``groove eval`` (a run that indexes): exit 0 with the undamaged metrics and hits, and
   the index it leaves passes SQLite's full ``integrity_check``.

Before the fix an incremental run of the indexer read none of the damaged pages
("11 unchanged"), and the evaluation ended in a chained traceback (``IndexCorrupt``,
then the raw ``apsw.CorruptError`` of the snapshot's COMMIT) on every run until
``groove index --force``.  The default run takes a few pages; the *slow* one every
page of the database, both ways.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from conftest import KB_EVAL, KB_EVAL_GOLDEN, LOCAL_STATE
from tests.helpers.cli_invoke import CliRun, invoke, single_error

HASH = ["--model", "hash"]
PAGE = 4096
#: cases of the default run (pages drawn with a fixed seed, each with both damages)
SAMPLE_PAGES = 4


def evaluate(kb: Path, *extra: str) -> list[str]:
    return ["eval", "--kb-path", str(kb), *HASH, "--golden", str(KB_EVAL_GOLDEN), *extra]


def figures(run: CliRun) -> tuple[object, object]:
    """What a run measured: the aggregate and every query's hits and metrics."""
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    report = json.loads(run.stdout)
    # what the index answered, not what the history adds (the baseline's ranks)
    answers = [(q["id"], q["top_k"], q["metrics"]) for q in report["per_query"]]
    return report["aggregate"], answers


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, tuple[object, ...]]]:
    """An indexed KB with one recorded run, and the figures of an undamaged run."""
    kb = tmp_path_factory.mktemp("pages") / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=LOCAL_STATE)
    assert invoke("index", "--kb-path", kb, *HASH).returncode == 0
    assert invoke(*evaluate(kb)).returncode == 0
    want = figures(invoke(*evaluate(kb, "--no-history", "--format", "json")))
    yield kb, want


def page_count(kb: Path) -> int:
    return (kb / ".groove" / "hash" / "index.db").stat().st_size // PAGE


def damage(db: Path, page: int, how: str, seed: int) -> None:
    junk = bytes(PAGE) if how == "zeros" else random.Random(seed).randbytes(PAGE)
    with db.open("r+b") as handle:
        handle.seek(page * PAGE)
        handle.write(junk)


def check_case(
    indexed: tuple[Path, tuple[object, ...]], tmp_path: Path, page: int, how: str
) -> None:
    source, want = indexed
    kb = tmp_path / f"kb-{page}-{how}"
    shutil.copytree(source, kb)
    db = kb / ".groove" / "hash" / "index.db"
    damage(db, page, how, seed=page)
    history = kb / ".groove-eval-history.json"
    before = history.read_bytes()

    reader = invoke(*evaluate(kb, "--no-reindex", "--format", "json"))
    if reader.returncode == 0:
        assert figures(reader) == want  # a page this run never read
    else:
        line = single_error(reader)
        assert "is corrupt" in line and str(db) in line, line
        assert f"`groove index --kb-path {kb} --model hash`" in line, line
        assert "<kb>" not in line
        assert history.read_bytes() == before

    indexing = invoke(*evaluate(kb, "--format", "json"))
    assert figures(indexing) == want, indexing.stderr
    conn = apsw.Connection(str(db))
    try:
        assert [row[0] for row in conn.execute("PRAGMA integrity_check")] == ["ok"]
    finally:
        conn.close()


def sample(count: int) -> list[int]:
    """Pages 1.. of the test KB's database, drawn with a fixed seed (page 0, the
    header, is the older "not a database" case of tests/faults/test_index.py)."""
    return sorted(random.Random(20).sample(range(1, 70), count))


@pytest.mark.parametrize("how", ["zeros", "random"])
@pytest.mark.parametrize("page", sample(SAMPLE_PAGES))
def test_a_damaged_page_is_one_line_then_rebuilt(
    indexed: tuple[Path, tuple[object, ...]], tmp_path: Path, page: int, how: str
) -> None:
    assert page < page_count(indexed[0])
    check_case(indexed, tmp_path, page, how)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["zeros", "random"])
def test_every_damaged_page_is_one_line_then_rebuilt(
    indexed: tuple[Path, tuple[object, ...]], tmp_path: Path, how: str
) -> None:
    for page in range(page_count(indexed[0])):
        check_case(indexed, tmp_path, page, how)


@pytest.mark.parametrize("page", sample(2))
def test_groove_index_rebuilds_a_damaged_page_an_update_never_reads(
    indexed: tuple[Path, tuple[object, ...]], tmp_path: Path, page: int
) -> None:
    # the tester's report: `groove index` said "0 added ... 20 unchanged" over the damage
    kb = tmp_path / "kb"
    shutil.copytree(indexed[0], kb)
    db = kb / ".groove" / "hash" / "index.db"
    damage(db, page, "zeros", seed=page)
    run = invoke("index", "--kb-path", kb, *HASH)
    assert run.returncode == 0, run.stderr
    assert f"warning: the index {db} is corrupt (SQLite's check: " in run.stderr
    assert "rebuilt it from the KB" in run.stderr and "20 added" in run.stdout
    # and a second run trusts the file it left: nothing rebuilt, nothing said
    again = invoke("index", "--kb-path", kb, *HASH)
    assert (again.returncode, again.stderr) == (0, "")
    assert "20 unchanged" in again.stdout
