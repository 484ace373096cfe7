"""Where the time of ``groove tune`` goes, and what the shared-list sweep saves.

Usage::

    python benchmarks/bench_tune.py [--model hash|e5-small] [--naive-queries N]

Copies ``tests/corpora/kb-eval`` to a temporary directory, indexes it, runs the
pre-flight and the sweep over the 30 golden queries, and prints the measured split
(embedding, vector KNN, FTS fetches, fusion, metrics).  With ``--naive-queries N``
it also times the obvious alternative -- one full ``engine.search`` per query and
condition -- on the first N queries and extrapolates to the whole set.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from pytest_groove.engine.builtin import open_engine
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from pytest_groove.tune.grid import all_conditions
from pytest_groove.tune.sweep import build_metric_table, run_preflight

CORPORA = Path(__file__).resolve().parent.parent / "tests" / "corpora"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="hash")
    parser.add_argument("--naive-queries", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb"
        shutil.copytree(CORPORA / "kb-eval", kb)
        settings = Settings(index=IndexSettings(model=args.model))
        started = time.perf_counter()
        engine = open_engine(kb, settings, progress=False)
        print(f"index + open: {time.perf_counter() - started:.2f}s")
        golden = load_golden(CORPORA / "kb-eval-golden.yml", kb)
        queries = list(golden.queries)
        source = engine
        with engine.read_snapshot():
            started = time.perf_counter()
            pre = run_preflight(source, queries, 10, (1, 5, 10))
            build_metric_table(source, pre)
            total = time.perf_counter() - started
        print(f"tune pre-flight + sweep, {len(queries)} queries x 384 conditions: {total:.2f}s")
        print(f"  {pre.timings.summary()}")

        n = min(args.naive_queries, len(queries))
        if n:
            started = time.perf_counter()
            for query in queries[:n]:
                for cond in all_conditions():
                    engine.search(query.query, 10, replace(SearchSettings(), fusion=cond.params))
            naive = time.perf_counter() - started
            per_query = naive / n
            print(
                f"naive (one search per query and condition): {per_query:.2f}s per query, "
                f"~{per_query * len(queries):.1f}s for the set "
                f"({per_query * len(queries) / total:.0f}x the sweep)"
            )
        engine.close()


if __name__ == "__main__":
    main()
