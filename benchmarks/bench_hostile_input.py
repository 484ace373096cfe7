"""Hostile input sizes: what each costs, before and after the limits (issue: bounded cost).

Prints, on generated data and with nothing written outside a temporary folder:

* the quote scan (``golden-queries-quoted``) over N chunks for Q golden queries;
* ``.grooveignore`` matching of ``*a*a*...*c`` against a name of ``a`` characters;
* compiling a long query (up to the cap) and refusing one over it (1 MiB);
* loading a golden file whose one query is 1 MiB (refused at load, before any search);
* one note of ``--long-mb`` MB on one line, and one with a title (frontmatter and
  ``# Title``) that long, added to a copy of ``examples/kb``: ``groove index``,
  ``groove search`` and ``groove eval`` each in a process of their own, their peak RSS
  against the same commands on the copy without the note, and their CPU seconds.

    python benchmarks/bench_hostile_input.py [--chunks 10000] [--queries 100]
        [--long-mb 10] [--model hash] [--only quote,ignore,query,note]

Figures are wall-clock seconds on this machine; compare them with each other, not
with another machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.evaluation.runs.findings import scan_golden_quotes
from pytest_groove.evaluation.runs.record import QueryResult
from pytest_groove.kb.source.ignore import parse_ignore_text
from pytest_groove.kb.source.records import ChunkText
from pytest_groove.scoring.metrics import QueryMetrics
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.search.query.fts_query import MAX_QUERY_CHARS, parse_query

WORDS = (
    "index",
    "chunk",
    "query",
    "search",
    "vector",
    "fusion",
    "rerank",
    "golden",
    "recall",
    "latency",
    "corpus",
    "heading",
    "section",
    "token",
    "embed",
    "model",
    "history",
    "baseline",
    "regression",
    "gate",
    "release",
    "schedule",
    "pager",
    "rotation",
    "cache",
    "worker",
    "parcel",
    "status",
    "event",
    "storage",
    "backup",
)


def best_of(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def quote_scan(chunks: int, queries: int, repeat: int) -> None:
    rng = random.Random(7)
    texts = [sentence(rng, 10) + " " + str(n) for n in range(queries)]
    results = [
        QueryResult(
            id=f"q{n}",
            query=text,
            expected=(ExpectedEntry("answer.md"),),
            top_k=(),
            metrics=QueryMetrics(recall_at_k={}, reciprocal_rank=0.0, ndcg_at_k={}),
        )
        for n, text in enumerate(texts)
    ]
    corpus = [
        ChunkText(f"doc{n // 5}.md", n % 5, "Heading", "Doc > Heading", sentence(rng, 120))
        for n in range(chunks)
    ]
    # one note quotes three golden queries
    corpus.append(ChunkText("notes/eval.md", 0, None, None, " / ".join(texts[:3])))
    seconds = best_of(repeat, lambda: scan_golden_quotes(results, corpus))
    found = scan_golden_quotes(results, corpus)
    print(
        f"quote scan: {queries} queries x {len(corpus)} chunks: {seconds:.3f} s "
        f"({len(found)} finding(s))"
    )


def ignore_pattern(repeat: int) -> None:
    rules, _ = parse_ignore_text("*a*a*a*a*a*a*a*a*a*a*a*a*c")
    for length in (40, 200, 1000):
        name = "a" * length
        seconds = best_of(repeat, lambda name=name: rules.ignores(name, False))
        print(f".grooveignore *a*...*c (12 stars) vs {length} a's: {seconds * 1e6:.1f} us")


def long_queries(repeat: int) -> None:
    rng = random.Random(3)
    at_cap = sentence(rng, MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    seconds = best_of(repeat, lambda: parse_query(at_cap))
    print(f"compile a query of {len(at_cap)} chars (the cap): {seconds * 1000:.1f} ms")
    huge = sentence(rng, 200_000)[: 1024 * 1024]

    def refuse() -> None:
        try:
            parse_query(huge)
        except GrooveError:
            return
        raise AssertionError("a 1 MiB query was accepted")

    seconds = best_of(repeat, refuse)
    print(f"refuse a query of {len(huge)} chars: {seconds * 1000:.1f} ms")
    with tempfile.TemporaryDirectory() as folder:
        golden = Path(folder) / "golden.yml"
        golden.write_text(
            f'queries:\n  - query: "{huge[: 1024 * 1024 - 100]}"\n'
            "    expected:\n      - path: a.md\n",
            encoding="utf-8",
        )

        def load() -> None:
            try:
                load_golden(golden, Path(folder))
            except GrooveError:
                return
            raise AssertionError("a 1 MiB golden query was accepted")

        seconds = best_of(repeat, load)
        print(f"load a golden file with one ~1 MiB query (refused): {seconds:.3f} s")


EXAMPLE_KB = Path(__file__).resolve().parent.parent / "examples" / "kb"


def measured(*args: str) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of one ``groove`` command in a process of its own."""
    command = [sys.executable, "-m", "pytest_groove.cli", *args]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    stderr = child.stderr.read().decode("utf-8", "replace") if child.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"groove {' '.join(args[:1])} failed: {stderr[-500:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def note_costs(kb: Path, model: str) -> dict[str, tuple[float, float]]:
    """CPU seconds and peak MiB of index (from scratch), search and eval over ``kb``."""
    common = ("--kb-path", str(kb), "--model", model)
    return {
        "index": measured("index", *common, "--force"),
        "search": measured("search", *common, "recall latency corpus"),
        "eval": measured("eval", *common),
    }


def long_notes(megabytes: float, model: str) -> None:
    rng = random.Random(5)
    size = int(megabytes * 1_000_000)
    line = sentence(rng, size // 5 + 10)[:size]
    opening = "An opening paragraph about this note, long enough to be a section."
    notes = {
        f"a {megabytes:g} MB line": f"# Dump\n\n## Log\n\n{opening}\n\n{line}\n",
        f"a {megabytes:g} MB title": f"---\ntitle: {line}\n---\n# {line}\n\n## Log\n\n{opening}\n",
    }
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder) / "base"
        shutil.copytree(EXAMPLE_KB, base, ignore=shutil.ignore_patterns(".groove"))
        without = note_costs(base, model)
        for name, text in notes.items():
            kb = Path(folder) / name.replace(" ", "-")
            shutil.copytree(base, kb, ignore=shutil.ignore_patterns(".groove"))
            (kb / "ops" / "dump.md").write_text(text, encoding="utf-8")
            with_note = note_costs(kb, model)
            for command, (cpu, peak) in with_note.items():
                base_cpu, base_peak = without[command]
                print(
                    f"{name}, {model}: groove {command}: {cpu:.2f} s CPU "
                    f"(without it {base_cpu:.2f} s), peak RSS {peak:.0f} MiB, "
                    f"{peak - base_peak:+.0f} MiB over the KB without it"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long-mb", type=float, default=10.0)
    parser.add_argument("--model", default="hash")
    parser.add_argument("--only", default="quote,ignore,query,note")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if "quote" in only:
        quote_scan(args.chunks, args.queries, args.repeat)
    if "ignore" in only:
        ignore_pattern(args.repeat)
    if "query" in only:
        long_queries(args.repeat)
    if "note" in only:
        long_notes(args.long_mb, args.model)


if __name__ == "__main__":
    main()
