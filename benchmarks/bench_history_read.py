"""Reading a long eval history: CPU seconds per stored run.

Usage::

    python benchmarks/bench_history_read.py [--runs 2000] [--queries 25] [--hits 10]

Writes a history of ``--runs`` runs (each ``--queries`` queries of ``--hits`` hits,
as the history file stores them) to a temporary folder and times, in CPU seconds
(best of three):

* **read**: ``load_history``, what ``groove history``, ``groove eval`` and the
  plugin do first (the digest check of every run on its text; a run's queries are
  read only when something asks for them);
* **list**: ``groove history`` as a subprocess (the whole command, start-up
  included), for the figure a user waits for;
* **eval**: ``groove eval`` as a subprocess on a small KB of ``--queries`` notes and
  as many golden queries (the ``hash`` model, index already built), whose history
  holds ``--runs`` runs of that KB's settings (``[eval] history_size`` high enough to
  keep them all): the whole command, which reads the history, compares with the
  newest run, and saves the history with the new run in front.  The history is put
  back before each of the three runs.

Nothing is asserted; the target is a history of 2,000 runs listed and evaluated in
under two CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_groove.evaluation.history import format as history_format  # noqa: E402 - after the checkout is on sys.path
from pytest_groove.evaluation.history.format import encode_history, load_history  # noqa: E402 - after the checkout is on sys.path
from tests.helpers.eval_factories import big_run  # noqa: E402 - after the checkout is on sys.path

#: the children run this checkout's code, whatever is installed, compiled once (as an
#: installed package is: the first of the three runs of each command compiles it)
CHILD_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": str(ROOT),
}


def _best_cpu(action: object, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        action()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def _cold_read(path: Path) -> None:
    """``load_history`` as a process's first read (a second read of the same bytes, as
    the save's under the lock, reuses the first)."""
    getattr(history_format, "_LAST_READ", []).clear()
    load_history(path)


def _child_cpu(command: list[str], before_each: object = None) -> float:
    """The best of three runs of ``command``: its CPU seconds (user + system)."""
    best = float("inf")
    for _ in range(3):
        if before_each is not None:
            before_each()  # type: ignore[operator]
        before = os.times()
        subprocess.run(command, check=True, capture_output=True, env=CHILD_ENV)
        after = os.times()
        best = min(
            best,
            after.children_user
            - before.children_user
            + after.children_system
            - before.children_system,
        )
    return best


def _groove(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest_groove.cli", *args]


def _small_kb(kb: Path, queries: int, hits: int) -> None:
    """``queries`` golden queries, each with its answer note and ``hits - 1`` others
    about the same feature (paths as long as :func:`big_run`'s), kept with every run."""
    for i in range(queries):
        folder = kb / "docs" / f"area-{i}"
        folder.mkdir(parents=True)
        names = ["expected-answer", *(f"retrieved-document-{j}" for j in range(hits - 1))]
        for j, name in enumerate(names):
            (folder / f"{name}.md").write_text(
                f"# Feature {i}, part {j}\n\nFeature number {i} of the system keeps "
                f"working under load by shedding work {j} ways.\n",
                encoding="utf-8",
            )
    lines = ["queries:"]
    for i in range(queries):
        lines += [
            f"  - id: query-{i:03d}",
            f'    query: "how does feature number {i} of the system behave under load?"',
            "    expected:",
            f"      - path: docs/area-{i}/expected-answer.md",
        ]
    (kb / ".groove-eval.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (kb / "groove.toml").write_text("[eval]\nhistory_size = 10000\n", encoding="utf-8")


def _eval_cpu(kb: Path, runs: int, queries: int, hits: int) -> tuple[float, float]:
    """(``groove eval``'s CPU seconds, its history's MiB): a small KB whose history holds
    ``runs`` runs of its settings."""
    _small_kb(kb, queries, hits)
    command = _groove("eval", "--kb-path", str(kb), "--model", "hash", "--limit", str(hits))
    subprocess.run(command, check=True, capture_output=True, env=CHILD_ENV)
    path = kb / ".groove-eval-history.json"
    (recorded,) = load_history(path)
    history = encode_history(
        [
            replace(recorded, timestamp=recorded.timestamp - timedelta(minutes=i))
            for i in range(runs)
        ]
    )
    return _child_cpu(command, lambda: path.write_bytes(history)), len(history) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=25)
    parser.add_argument("--hits", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "bytecode")
        kb = Path(tmp) / "listed"
        kb.mkdir()
        path = kb / ".groove-eval-history.json"
        runs = [big_run(minutes=i, queries=args.queries, hits=args.hits) for i in range(args.runs)]
        path.write_bytes(encode_history(runs))
        size = path.stat().st_size / 2**20
        read = _best_cpu(lambda: _cold_read(path))
        listing = _child_cpu(_groove("history", "--kb-path", str(kb)))
        evaluated, eval_size = _eval_cpu(
            Path(tmp) / "evaluated", args.runs, args.queries, args.hits
        )
    per_run = read / args.runs * 1000
    print(f"history: {args.runs} runs x {args.queries} queries x {args.hits} hits, {size:.1f} MiB")
    print(f"read (load_history):   {read:6.2f} s CPU  ({per_run:.2f} ms a run)")
    print(f"groove history (list): {listing:6.2f} s CPU")
    print(f"groove eval:           {evaluated:6.2f} s CPU  (its history: {eval_size:.1f} MiB)")
    print(
        f"target 2.00 s:         read {read / 2:.2f}x of it, list {listing / 2:.2f}x, "
        f"eval {evaluated / 2:.2f}x"
    )


if __name__ == "__main__":
    main()
