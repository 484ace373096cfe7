"""The full-text leg per query beside bm25s over the same chunks, in one process.

Usage::

    python benchmarks/bench_fulltext.py [--docs 1000,10000] [--queries 100] [--seed 7]
                                        [--keep DIR] [--repeat 3] [--load N]

Generates ``bench_scale.py``'s KB (10 sections a file, so ``docs x 10`` chunks),
indexes it with ``hash`` and times, per query of one golden-like set (``bench_scale``'s
query mix, shuffled):

* **engine, cold**: the engine's full-text leg (``PhraseScores.candidates``, the
  default bm25 weights, 50 rows) with nothing kept: every phrase of every query is
  scored afresh from the word postings the indexer keeps beside the index
  (``kb/derived/word_index.py``);
* **engine, one golden set**: the same queries searched in order by one
  ``PhraseScores``, as ``groove eval`` does on the first run after any index change
  (phrases repeated from query to query are kept);
* **engine, one golden set, bm25() asked of FTS5**: the same with the word postings
  off, every new phrase's terms asked of SQLite's ``bm25()`` -- what the engine did
  before it kept word postings;
* **engine, the golden set again in a new process**: a new ``PhraseScores`` that reads
  the phrases the previous one saved beside the index (reading the file included),
  as a second ``groove eval`` on an unchanged index does;
* **raw FTS5**: the plain ``MATCH ... ORDER BY bm25 LIMIT 50`` statement;
* **bm25s**: ``bm25s.BM25`` (its default Lucene variant, k1 1.5, b 0.75) indexed over
  the same chunk texts (heading, breadcrumb and body joined), ``retrieve`` of the
  top 50 one query at a time (query tokenising included), one thread.

Each figure is the best of ``--repeat`` passes over the queries, interleaved;
``--load N`` runs N CPU-bound neighbour processes beside the whole measurement (a busy
CI runner).
bm25s is a benchmark-only dependency (``pip install bm25s``); it ranks words, not
FTS5's trigrams, so it is a floor for the cost of a bm25 ranking, not the same list.
Nothing is asserted: the script prints figures and ratios.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import open_engine, run_indexer
from pytest_groove.kb.derived.phrase_scores import CACHE_PREFIX, PhraseScores
from pytest_groove.search.query.fts_query import ParsedQuery, parse_query
from pytest_groove.settings.config import IndexSettings, Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import Corpus, generate_kb, make_queries
from bench_speed import neighbours

#: the default search's bm25 column weights and full-text fetch
WEIGHTS = (2.0, 1.0, 1.0)
FETCH = 50


def queries_for(kb: Path, count: int, seed: int) -> list[str]:
    corpus = Corpus(root=kb, files=[], chunks=0, bytes=0)
    queries = [q for _, q in make_queries(corpus, count, seed)]
    random.Random(seed).shuffle(queries)  # mixed shapes, as a golden file has them
    return queries


def per_query(action: Callable[[], object], count: int) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) / max(count, 1)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def measure(kb: Path, count: int, seed: int, repeat: int) -> dict[str, float]:
    import bm25s

    settings = Settings(index=IndexSettings(model="hash"))
    embedder = get_embedder("hash")
    run_indexer(kb, settings, embedder=embedder, progress=False)
    queries = queries_for(kb, count, seed)
    parsed: list[ParsedQuery] = [parse_query(q) for q in queries]
    full_text = [p for p in parsed if p.fts is not None]
    with open_engine(kb, settings, embedder=embedder, reindex=False) as engine:
        store = engine.store
        texts = [
            " ".join(t for t in (c.heading, c.context, c.content) if t)
            for c in store.iter_chunk_texts()
        ]
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
        positives = [p.positive for p in full_text]

        def engine_pass(scores: PhraseScores | None) -> None:
            kept = scores or PhraseScores(store, read_kept=False)
            for p in full_text:
                assert p.fts is not None
                if scores is None:
                    kept = PhraseScores(store, read_kept=False)  # cold: nothing kept
                kept.candidates(p.fts, WEIGHTS, FETCH, p.fts_table)

        def again_pass() -> None:
            engine_pass(PhraseScores(store))  # reads the file saved below

        def raw_pass() -> None:
            for p in full_text:
                store.conn.execute(
                    f"SELECT rowid FROM {p.fts_table} WHERE {p.fts_table} MATCH ? "
                    f"ORDER BY bm25({p.fts_table}, ?, ?, ?), rowid LIMIT ?",
                    (p.fts, *WEIGHTS, FETCH),
                ).fetchall()

        def bm25s_pass() -> None:
            for text in positives:
                tokens = bm25s.tokenize([text], show_progress=False)
                if tokens.vocab:
                    retriever.retrieve(
                        tokens, k=min(FETCH, len(texts)), show_progress=False, n_threads=1
                    )

        for old in store.path.parent.glob(f"{CACHE_PREFIX}*"):
            old.unlink()  # a file from an earlier run would make "cold" warm
        first = PhraseScores(store)
        engine_pass(first)
        first.save()
        saved = sum(f.stat().st_size for f in store.path.parent.glob(f"{CACHE_PREFIX}*"))
        passes: dict[str, Callable[[], object]] = {
            "engine, cold": lambda: engine_pass(None),
            "engine, one golden set": lambda: engine_pass(PhraseScores(store, read_kept=False)),
            "engine, one golden set, bm25() asked of FTS5": lambda: engine_pass(
                PhraseScores(store, read_kept=False, word_postings=False)
            ),
            "engine, the golden set again in a new process": again_pass,
            "raw FTS5": raw_pass,
            "bm25s": bm25s_pass,
        }
        best: dict[str, list[float]] = {name: [] for name in passes}
        for _ in range(repeat):
            for name, action in passes.items():
                best[name].append(per_query(action, len(full_text)))
        figures = {name: min(times) for name, times in best.items()}
        figures["chunks"] = float(len(texts))
        figures["queries"] = float(len(full_text))
        figures["kept file MiB"] = saved / 2**20
        folder = store.path.parent
        figures["postings MiB"] = sum(f.stat().st_size for f in folder.glob("words-*.seg")) / 2**20
        figures["index MiB"] = sum(f.stat().st_size for f in folder.glob("index.db*")) / 2**20
    return figures


def report(label: str, figures: dict[str, float]) -> None:
    floor = figures["bm25s"]
    print(
        f"\n{label}: {figures['chunks']:.0f} chunks, {figures['queries']:.0f} full-text "
        f"queries; kept phrase file {figures['kept file MiB']:.1f} MiB; word postings "
        f"{figures['postings MiB']:.1f} MiB beside an index.db of {figures['index MiB']:.0f} MiB"
    )
    print("| figure | per query | / bm25s |")
    print("|---|---|---|")
    for name in (
        "engine, cold",
        "engine, one golden set",
        "engine, one golden set, bm25() asked of FTS5",
        "engine, the golden set again in a new process",
        "raw FTS5",
        "bm25s",
    ):
        print(f"| {name} | {ms(figures[name])} | {figures[name] / floor:.2f}x |")


def add_kb_arguments(parser: argparse.ArgumentParser) -> None:
    """``--docs``, ``--queries``, ``--seed`` and ``--keep``: the generated KBs measured."""
    parser.add_argument("--docs", default="1000,10000", help="comma-separated file counts")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="generate and index the KBs here, reuse them")


def generated_kbs(root: Path, args: argparse.Namespace) -> Iterator[tuple[int, Path]]:
    """``(file count, KB)`` for each count of ``--docs``: a KB under ``root``, generated
    unless it is there already (kept by ``--keep``)."""
    for docs in (int(d) for d in args.docs.split(",")):
        kb = root / f"kb-{docs}"
        if not kb.is_dir():
            generate_kb(kb, docs, 10, args.seed)
        yield docs, kb


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_kb_arguments(parser)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved passes, best kept")
    parser.add_argument("--load", type=int, default=0, help="CPU-bound neighbour processes")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="groove-fulltext-") as tmp, neighbours(args.load):
        for docs, kb in generated_kbs(args.keep or Path(tmp), args):
            label = f"{docs} files" + (f", {args.load} busy neighbours" if args.load else "")
            report(label, measure(kb, args.queries, args.seed, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
