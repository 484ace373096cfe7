"""Index + search + quality figures on the bilingual kb-eval corpus.

    python benchmarks/bench_kb_eval.py [--model e5-small] [--contextual] [--repeat 20]

Prints, for a fresh copy of tests/corpora/kb-eval:

* full index time and chunks/s (the embedder dominates);
* re-index time over the unchanged KB (should embed nothing) and after one edit;
* search latency (median / p90 over every golden query, warm process);
* quality per golden group (single-answer and multi-answer queries are averaged
  separately: a two-answer query caps recall@1 at 0.5) next to the reference
  implementation's published numbers for the same corpus and golden file;
* the same quality with each leg silenced (vector-only, FTS-only) so the value of
  fusion on this corpus is visible.

Only public pytest-groove functions are used; no timers are asserted anywhere.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_groove.engine.builtin import Engine, open_engine, run_indexer
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.scoring.metrics import QueryMetrics, aggregate, query_metrics
from pytest_groove.scoring.records import GoldenSet
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpora" / "kb-eval"
GOLDEN = ROOT / "tests" / "corpora" / "kb-eval-golden.yml"

REFERENCE = {
    "single": "BGE-small hybrid: R@1 0.92  R@5 0.96  MRR 0.940 | BGE-M3 hybrid: 1.00 1.00 1.000",
    "multi": "BGE-small hybrid: R@1 0.50  R@5 0.80  MRR 1.000  nDCG@5 0.821 | "
    "BGE-M3 hybrid: 0.50 1.00 1.000 0.927",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small")
    parser.add_argument("--contextual", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="search passes for latency")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        kb = Path(tmp) / "kb-eval"
        shutil.copytree(CORPUS, kb)
        settings = Settings(index=IndexSettings(model=args.model, contextual=args.contextual))

        t0 = time.perf_counter()
        first = run_indexer(kb, settings, progress=False)
        full = time.perf_counter() - t0
        print(f"model {args.model}  contextual={args.contextual}")
        print(
            f"full index     {full:7.2f} s  {first.chunks_embedded} chunks  "
            f"{first.chunks_embedded / full:6.1f} chunks/s"
        )

        t0 = time.perf_counter()
        again = run_indexer(kb, settings, progress=False)
        unchanged = time.perf_counter() - t0
        print(
            f"re-index same  {unchanged:7.3f} s  "
            f"({again.chunks_embedded} chunks embedded, {again.unchanged} unchanged)"
        )

        target = kb / "ref" / "rate-limiting.md"
        target.write_text(
            target.read_text(encoding="utf-8") + "\n\nOne more line.\n", encoding="utf-8"
        )
        t0 = time.perf_counter()
        edit = run_indexer(kb, settings, progress=False)
        print(
            f"re-index edit  {time.perf_counter() - t0:7.3f} s  "
            f"({edit.chunks_embedded} chunks embedded, {edit.changed} changed)"
        )
        print(f"ratio full index / unchanged re-index: {full / max(1e-9, unchanged):.0f}x")

        golden = load_golden(GOLDEN, kb)
        with open_engine(kb, settings, reindex=False) as engine:
            latencies: list[float] = []
            for _ in range(args.repeat):
                for q in golden.queries:
                    t0 = time.perf_counter()
                    engine.search(q.query, 10)
                    latencies.append(time.perf_counter() - t0)
            latencies.sort()
            print(
                f"search latency median {statistics.median(latencies) * 1000:6.1f} ms  "
                f"p90 {latencies[int(len(latencies) * 0.9)] * 1000:6.1f} ms  "
                f"({len(latencies)} searches)"
            )

            for leg in ("hybrid", "vector-only", "fts-only"):
                report_quality(leg, golden, engine)
        print("reference (published):")
        for group, line in REFERENCE.items():
            print(f"  {group:6s} {line}")
    return 0


def ranked(engine: Engine, query: str, leg: str) -> list[SearchHit]:
    """Top 10 of the whole pipeline, or of one leg alone."""
    if leg == "hybrid":
        return engine.search(query, 10)
    parsed = parse_query(query)
    if leg == "vector-only":
        ids = engine.vector_leg(engine.embed_queries([parsed.positive])[0], 10, parsed)
    else:
        ids = engine.fts_leg(parsed, engine.settings.search.fusion.weights, 10)
    labels = engine.chunk_labels(ids)
    return [
        SearchHit(rank=i, path=labels[cid][0], heading=labels[cid][1], score=0.0)
        for i, cid in enumerate(ids, start=1)
    ]


def report_quality(leg: str, golden: GoldenSet, engine: Engine) -> None:
    groups: dict[str, list[QueryMetrics]] = {"single": [], "multi": []}
    for q in golden.queries:
        group = "single" if len(q.expected) == 1 else "multi"
        groups[group].append(query_metrics(q.expected, ranked(engine, q.query, leg), (1, 5, 10)))
    for group, metrics in groups.items():
        agg = aggregate(metrics)
        print(
            f"{leg:12s} {group:6s} n={agg.query_count:2d}  R@1 {agg.recall_at_k[1]:.2f}  "
            f"R@5 {agg.recall_at_k[5]:.2f}  MRR {agg.mrr:.3f}  nDCG@5 {agg.ndcg_at_k[5]:.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
