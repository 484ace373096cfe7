"""The golden-quote scan on a no-op eval: full scan against the kept scan.

Usage::

    python benchmarks/bench_quote_scan.py [--docs 1000,10000] [--queries 100] [--seed 7]
                                          [--keep DIR]

Generates ``bench_scale.py``'s KB (10 sections a file, so ``docs x 10`` chunks),
indexes it with ``hash``, writes two of its sentences into one note (so the scan has
a finding) and times, for ``--queries`` golden queries of ``bench_scale``'s mix:

* **full scan**: ``scan_golden_quotes`` over ``Store.iter_chunk_texts`` (what every
  eval did, no-op runs included);
* **kept scan, first run**: ``golden_quote_findings`` with no kept scan yet (the full
  scan plus writing its row in ``index.db``);
* **kept scan, no-op**: the same again, index unchanged (the row answers);
* **kept scan, one file edited**: after editing one note and re-indexing (only that
  document is read again);
* **corpus snapshot**: ``Store.corpus_snapshot`` for scale (the digest eval records
  reads every chunk too).

Each figure is the best of three.  Nothing is asserted; the findings of every kept
scan are compared with the full scan's and a difference is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw

from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import index_dir_for, run_indexer
from pytest_groove.evaluation.runs.findings import golden_quote_findings, scan_golden_quotes
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.kb.derived import quote_cache
from pytest_groove.kb.store.database import Store
from pytest_groove.scoring.metrics import QueryMetrics
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.settings.config import IndexSettings, Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fulltext import add_kb_arguments, generated_kbs, queries_for

SETTINGS = Settings(index=IndexSettings(model="hash"))


def best(action: Callable[[], object], runs: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return min(times), result


def golden(kb: Path, count: int, seed: int) -> list[QueryResult]:
    metrics = QueryMetrics({1: 0.0}, 0.0, {1: 0.0})
    texts = queries_for(kb, count, seed)
    return [
        QueryResult(f"q{n}", text, (ExpectedEntry("nowhere.md"),), (), metrics)
        for n, text in enumerate(texts)
    ]


def measure(kb: Path, count: int, seed: int) -> None:
    results = golden(kb, count, seed)
    leak = sorted(kb.rglob("*.md"))[0]
    quoted = [r.query for r in results if len(r.query) >= 12][:2]
    if "Quoted:" not in leak.read_text(encoding="utf-8"):
        with leak.open("a", encoding="utf-8") as out:
            out.write(f"\n## Quoted\n\nQuoted: {quoted[0]}. And {quoted[1]}.\n")
    embedder = get_embedder("hash")
    run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
    index_dir = index_dir_for(kb, SETTINGS, "hash")
    store = Store.open(index_dir, create=False)
    with contextlib.suppress(apsw.SQLError):  # no table: nothing kept yet
        store.conn.execute(f"DELETE FROM {quote_cache.QUOTE_SCANS_TABLE}")
    store.close()

    def with_store(action: Callable[[Store], object]) -> Callable[[], object]:
        def run() -> object:
            store = Store.open(index_dir, create=False)
            try:
                with store.read_snapshot():
                    return action(store)
            finally:
                store.close()

        return run

    full, expected = best(with_store(lambda s: scan_golden_quotes(results, s.iter_chunk_texts())))
    first, got_first = best(with_store(lambda s: golden_quote_findings(results, s)), runs=1)
    noop, got_noop = best(with_store(lambda s: golden_quote_findings(results, s)))
    edited = sorted(kb.rglob("*.md"))[-1]
    edits: list[float] = []
    for n in range(3):
        with edited.open("a", encoding="utf-8") as out:
            out.write(f"\nAn edit {n}.\n")
        run_indexer(kb, SETTINGS, embedder=embedder, progress=False)
        seconds, got_edit = best(with_store(lambda s: golden_quote_findings(results, s)), runs=1)
        edits.append(seconds)
        if got_edit != expected:
            print("  !! the kept scan after an edit differs from the full scan")
    snapshot, _ = best(with_store(lambda s: s.corpus_snapshot()))
    for name, got in (("first run", got_first), ("no-op", got_noop)):
        if got != expected:
            print(f"  !! the kept scan ({name}) differs from the full scan")
    with_store(lambda s: print(f"\n{s.counts()[1]} chunks, {len(results)} golden queries"))()
    print("| figure | time |")
    print("|---|---|")
    print(f"| full scan (scan_golden_quotes) | {full * 1000:.1f} ms |")
    print(f"| kept scan, first run (scan + write) | {first * 1000:.1f} ms |")
    print(f"| kept scan, no-op | {noop * 1000:.2f} ms |")
    print(f"| kept scan, one file edited | {min(edits) * 1000:.1f} ms |")
    print(f"| corpus_snapshot, for scale | {snapshot * 1000:.1f} ms |")
    size = with_store(
        lambda s: s.conn.execute(
            "SELECT sum(length(quoted) + length(paths) + length(signatures)) "
            f"FROM {quote_cache.QUOTE_SCANS_TABLE}"
        ).fetchone()[0]
    )()
    print(f"| kept scan's row size | {int(size or 0) / 1024:.0f} KiB |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_kb_arguments(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="groove-quotes-") as tmp:
        for _docs, kb in generated_kbs(args.keep or Path(tmp), args):
            measure(kb, args.queries, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
