"""Retrieval quality of every pipeline configuration on the bilingual corpora.

    python benchmarks/bench_quality.py [--model e5-small] [--cache DIR] [--only NAME ...]
        [--corpus NAME ...] [--misses]

For each corpus (tests/corpora/kb-eval, kb-bilingual, kb-paraphrase, examples/kb) and
each configuration below, prints the single-answer group's recall@1 and MRR, the
multi-answer group's
recall@5 and nDCG@5, the share of cross-language queries (ids starting ``x-``)
answered in the top 3, and the low-confidence flag's precision and recall
(a query is "wrong" when its rank-1 hit is not an expected document; precision =
wrong among flagged, recall = flagged among wrong).  ``--misses`` also lists every
single-answer query whose first hit is wrong, by kind: cross-language, section-level
(the right note, another part of it) or paraphrase.

Indexes are built once per (corpus, index-affecting settings) under ``--cache``
(default: a temporary directory), and every embedding is kept there too, keyed by
model and exact text, so a re-chunked or re-indexed corpus only embeds text it has
not seen.  Nothing is asserted; the figures are for docs/retrieval-pipeline.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pytest_groove.embed.base import Embedder, Matrix
from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import Engine, open_engine
from pytest_groove.evaluation.golden.file import load_golden
from pytest_groove.scoring.metrics import QueryMetrics, aggregate, query_metrics
from pytest_groove.scoring.records import GoldenQuery
from pytest_groove.search.hits import SearchHit
from pytest_groove.search.query.fts_query import parse_query
from pytest_groove.settings.config import IndexSettings, SearchSettings, Settings

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {
    "kb-eval": (ROOT / "tests/corpora/kb-eval", ROOT / "tests/corpora/kb-eval-golden.yml"),
    "kb-bilingual": (
        ROOT / "tests/corpora/kb-bilingual",
        ROOT / "tests/corpora/kb-bilingual-golden.yml",
    ),
    # questions phrased the way people ask them: no title, heading or distinctive term
    # of the answer (tests/corpora/check_paraphrase.py checks it)
    "kb-paraphrase": (
        ROOT / "tests/corpora/kb-paraphrase",
        ROOT / "tests/corpora/kb-paraphrase-golden.yml",
    ),
    # the README's example: mostly English, a few Japanese notes
    "examples-kb": (ROOT / "examples/kb", ROOT / "examples/kb/.groove-eval.yml"),
}
LIMIT = 10


@dataclass(frozen=True)
class Configuration:
    name: str
    #: which legs' ranking is scored: "hybrid", "vector", "fts"
    leg: str = "hybrid"
    contextual: bool = False
    #: with ``contextual``: False embeds the breadcrumb without searching it
    context_full_text: bool = True
    search: Callable[[SearchSettings], SearchSettings] = lambda s: s


def _with(**changes: object) -> Callable[[SearchSettings], SearchSettings]:
    """These settings changed, and the full-text list voting in full as it did before
    the coverage vote existed (unless ``changes`` say otherwise)."""
    changes = {"fts_coverage_vote": False, **changes}

    def apply(search: SearchSettings) -> SearchSettings:
        return dataclasses.replace(search, **changes)  # type: ignore[arg-type]

    return apply


_NO_NOTES = _with(note_order=False)
_REFERENCE = _with(
    vector_centring=False, fts_script_gate=False, document_first=False, note_order=False
)

#: the reference pipeline first (the reference implementation's behaviour, only the
#: chunker differs), then one lever at a time, then the default with each lever off
CONFIGURATIONS = (
    Configuration("reference hybrid (no centring, no gate)", search=_REFERENCE),
    Configuration("vector leg alone, not centred", leg="vector", search=_REFERENCE),
    Configuration("full-text leg alone (v3)", leg="fts"),
    Configuration("full-text leg alone (v4)", leg="fts", search=_with(fts_query_version=4)),
    Configuration(
        "+ centring (no gate)", search=_with(fts_script_gate=False, document_first=False)
    ),
    Configuration("vector leg alone, centred", leg="vector"),
    Configuration("+ centring + script gate", search=_with(document_first=False)),
    Configuration("+ centring + script gate + document-first", search=_NO_NOTES),
    Configuration("+ note order", search=_with()),
    Configuration("+ full-text coverage vote = default"),
    Configuration("document-first, no gate", search=_with(fts_script_gate=False, note_order=False)),
    Configuration(
        "document-first with full-text v4", search=_with(fts_query_version=4, note_order=False)
    ),
    Configuration(
        "centring, v4, no gate",
        search=_with(fts_query_version=4, fts_script_gate=False, note_order=False),
    ),
    Configuration("reference hybrid, contextual on", contextual=True, search=_REFERENCE),
    Configuration("vector leg alone, centred, contextual on", leg="vector", contextual=True),
    Configuration("document-first, contextual on", contextual=True, search=_NO_NOTES),
    Configuration(
        "centring, v4, no gate, contextual on",
        contextual=True,
        search=_with(fts_query_version=4, fts_script_gate=False, note_order=False),
    ),
    Configuration(
        "contextual, breadcrumb embedded only",
        contextual=True,
        context_full_text=False,
        search=_NO_NOTES,
    ),
    Configuration(
        "contextual, breadcrumb embedded only, no document-first",
        contextual=True,
        context_full_text=False,
        search=_with(document_first=False),
    ),
)


class CachedEmbedder:
    """An embedder that remembers every vector on disk (one .npy file per text)."""

    def __init__(self, inner: Embedder, folder: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.folder = folder / "embeddings" / inner.name.replace("/", "_")
        self.folder.mkdir(parents=True, exist_ok=True)

    def _cached(
        self, kind: str, texts: Sequence[str], embed: Callable[[list[str]], Matrix]
    ) -> Matrix:
        files = [
            self.folder / (hashlib.sha256(f"{kind}\0{t}".encode()).hexdigest() + ".npy")
            for t in texts
        ]
        missing = sorted({t for t, f in zip(texts, files, strict=True) if not f.exists()})
        if missing:
            for text, vector in zip(missing, embed(missing), strict=True):
                key = hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()
                np.save(self.folder / f"{key}.npy", vector)
        return np.stack([np.load(f) for f in files]).astype(np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._cached("passage", texts, self.inner.embed_passages)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._cached("query", texts, self.inner.embed_queries)


@dataclass(frozen=True)
class Row:
    single_r1: float
    single_mrr: float
    multi_r5: float
    multi_ndcg5: float
    cross_top3: tuple[int, int]
    flag_precision: float | None
    flag_recall: float | None
    flagged: int
    wrong: int


def ranked(
    engine: Engine, query: str, leg: str, search: SearchSettings
) -> tuple[list[SearchHit], bool]:
    """Top hits of the pipeline (and its low-confidence flag), or of one leg alone."""
    if leg == "hybrid":
        response = engine.search_response(query, LIMIT, search)
        return response.hits, response.low_confidence
    parsed = parse_query(query, version=search.fts_query_version)
    if leg == "vector":
        ids = engine.vector_leg(engine.embed_queries([parsed.positive])[0], LIMIT, parsed)
    else:  # the full-text leg on its own: no gate
        ids = engine.fts_leg(parsed, search.fusion.weights, LIMIT)
    labels = engine.chunk_labels(ids)
    hits = [
        SearchHit(rank=i, path=labels[cid][0], heading=labels[cid][1], score=0.0)
        for i, cid in enumerate(ids, start=1)
    ]
    return hits, False


def miss_kind(query: GoldenQuery, hits: list[SearchHit]) -> str:
    """Why a single-answer query's first hit is wrong: ``cross-language`` (an ``x-`` id),
    ``section-level`` (the right note, another part of it) or ``paraphrase``."""
    if query.id.startswith("x-"):
        return "cross-language"
    want = query.expected[0]
    if want.heading is not None and hits and hits[0].path == want.path:
        return "section-level"
    return "paraphrase"


def print_misses(engine: Engine, queries: tuple[GoldenQuery, ...], config: Configuration) -> None:
    """One line per single-answer query whose first hit is wrong, and a count per kind."""
    search = config.search(engine.settings.search)
    kinds: dict[str, int] = {}
    for q in queries:
        if len(q.expected) != 1:
            continue
        hits, _ = ranked(engine, q.query, config.leg, search)
        metrics = query_metrics(q.expected, hits, (1,))
        if metrics.recall_at_k[1] > 0:
            continue
        kind = miss_kind(q, hits)
        kinds[kind] = kinds.get(kind, 0) + 1
        rank = f"{1 / metrics.reciprocal_rank:.0f}" if metrics.reciprocal_rank else f">{LIMIT}"
        first = f"{hits[0].path}#{hits[0].heading}" if hits else "nothing"
        print(f"    {kind:14} {q.id:28} rank {rank:>3}  first: {first}")
    print("    misses: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"))


def measure(engine: Engine, queries: tuple[GoldenQuery, ...], config: Configuration) -> Row:
    search = config.search(engine.settings.search)
    singles: list[QueryMetrics] = []
    multis: list[QueryMetrics] = []
    cross_hit = cross_all = 0
    flagged = wrong = flagged_wrong = 0
    for q in queries:
        hits, flag = ranked(engine, q.query, config.leg, search)
        metrics = query_metrics(q.expected, hits, (1, 3, 5, 10))
        (singles if len(q.expected) == 1 else multis).append(metrics)
        if q.id.startswith("x-"):
            cross_all += 1
            cross_hit += metrics.recall_at_k[3] > 0
        is_wrong = metrics.recall_at_k[1] == 0
        wrong += is_wrong
        flagged += flag
        flagged_wrong += flag and is_wrong
    single, multi = aggregate(singles), aggregate(multis)
    return Row(
        single_r1=single.recall_at_k[1],
        single_mrr=single.mrr,
        multi_r5=multi.recall_at_k[5],
        multi_ndcg5=multi.ndcg_at_k[5],
        cross_top3=(cross_hit, cross_all),
        flag_precision=flagged_wrong / flagged if flagged else None,
        flag_recall=flagged_wrong / wrong if wrong else None,
        flagged=flagged,
        wrong=wrong,
    )


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="e5-small")
    parser.add_argument("--cache", type=Path, default=None, help="keep indexes here")
    parser.add_argument("--only", nargs="*", default=None, help="configuration names")
    parser.add_argument("--corpus", nargs="*", default=list(CORPORA))
    parser.add_argument(
        "--misses", action="store_true", help="list each single-answer rank-1 miss and its kind"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        configs = [c for c in CONFIGURATIONS if args.only is None or c.name in args.only]
        embedder = CachedEmbedder(get_embedder(args.model), cache)
        for corpus in args.corpus:
            kb, golden_path = CORPORA[corpus]
            golden = load_golden(golden_path, kb)
            print(f"\n{corpus}: {len(golden.queries)} queries")
            print(
                "| configuration | single r@1 | single MRR | multi r@5 | multi nDCG@5 "
                "| cross-language in top 3 | low-confidence precision / recall (flagged, wrong) |"
            )
            print("|---|---|---|---|---|---|---|")
            for config in configs:
                embedded_only = config.contextual and not config.context_full_text
                suffix = "embedded" if embedded_only else str(int(config.contextual))
                index = IndexSettings(
                    model=args.model,
                    contextual=config.contextual,
                    contextual_full_text=config.context_full_text,
                    index_dir=cache / f"{corpus}-ctx{suffix}",
                )
                settings = Settings(index=index, search=config.search(SearchSettings()))
                with open_engine(kb, settings, embedder=embedder, progress=False) as engine:
                    row = measure(engine, golden.queries, config)
                    if args.misses:
                        print(f"  {config.name}:")
                        print_misses(engine, golden.queries, config)
                hit, total = row.cross_top3
                cross = f"{hit}/{total}" if total else "—"
                print(
                    f"| {config.name} | {row.single_r1:.2f} | {row.single_mrr:.3f} "
                    f"| {row.multi_r5:.2f} | {row.multi_ndcg5:.3f} | {cross} "
                    f"| {_ratio(row.flag_precision)} / {_ratio(row.flag_recall)} "
                    f"({row.flagged}, {row.wrong}) |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
