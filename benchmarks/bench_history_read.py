"""Reading a long eval history: CPU seconds per stored run.

Usage::

    python benchmarks/bench_history_read.py [--runs 2000] [--queries 25] [--hits 10]

Writes a history of ``--runs`` runs (each ``--queries`` queries of ``--hits`` hits,
as the history file stores them) to a temporary folder and times, in CPU seconds
(best of three):

* **read**: ``load_history``, what ``groove history``, ``groove eval`` and the
  plugin do first (parse, decode every run, check every run's digest);
* **list**: ``groove history`` as a subprocess (the whole command, start-up
  included), for the figure a user waits for.

Nothing is asserted; the target is a history of 2,000 runs read in under two CPU
seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_groove.evaluation.history.format import encode_history, load_history
from tests.helpers.eval_factories import big_run


def _best_cpu(action: object, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        action()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def _listing_cpu(kb: Path) -> float:
    best = float("inf")
    for _ in range(3):
        before = os.times()
        subprocess.run(
            [sys.executable, "-m", "pytest_groove.cli", "history", "--kb-path", str(kb)],
            check=True,
            capture_output=True,
        )
        after = os.times()
        best = min(
            best,
            after.children_user
            - before.children_user
            + after.children_system
            - before.children_system,
        )
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--hits", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp)
        path = kb / ".groove-eval-history.json"
        runs = [big_run(minutes=i, queries=args.queries, hits=args.hits) for i in range(args.runs)]
        path.write_bytes(encode_history(runs))
        size = path.stat().st_size / 2**20
        read = _best_cpu(lambda: load_history(path))
        listing = _listing_cpu(kb)
    per_run = read / args.runs * 1000
    print(f"history: {args.runs} runs x {args.queries} queries x {args.hits} hits, {size:.1f} MiB")
    print(f"read (load_history):   {read:6.2f} s CPU  ({per_run:.2f} ms a run)")
    print(f"groove history (list): {listing:6.2f} s CPU")
    print(f"target 2.00 s:         read {read / 2:.2f}x of it, list {listing / 2:.2f}x")


if __name__ == "__main__":
    main()
