"""How indexing, opening and searching scale with the size of a KB.

Usage::

    python benchmarks/bench_scale.py [--docs 2000] [--model hash] [--sections 5]
                                     [--queries 200] [--or-rows 5000] [--seed 7]

Generates a deterministic synthetic Markdown KB (frontmatter, ``##``/``###``
sections of 80-400 words from a Zipf-weighted vocabulary, some Japanese lines) of
``--docs`` files in a temporary directory and measures, through the public engine
API only (``run_indexer``, ``open_engine``, ``Engine.search``,
``Engine.corpus_snapshot``):

* full index time, chunks/s and the share spent inside the embedder;
* a no-op re-index (must embed 0 chunks), a re-index after editing one file and
  one after moving every file one folder down (rename detection, 0 chunks embedded);
* peak RSS (``ru_maxrss``) after indexing and after opening + searching;
* index size on disk (SQLite database + WAL + faiss cache);
* cold open (no faiss cache: built from the database) vs warm open (cache read);
* search latency, median / p90 over ``--queries`` realistic queries (one word,
  English questions, Japanese, quoted phrases, ``-term`` exclusions);
* ``corpus_snapshot`` time (``groove eval`` computes it on every run);
* the FTS OR expansion: 32 common words vs 1 on the generated index, and the worst
  case -- a 32-phrase OR where every phrase matches every row vs a single phrase --
  on a separate synthetic store of ``--or-rows`` rows, once with one-trigram terms
  (``w00``..``w31``, the shape of the reference implementation's guard, which kept
  the multiple under 20x and measured ~10-11x) and once with 5+ letter words.

The default model is ``hash`` so the figures describe the engine, not a neural
embedder; pass ``--model e5-small`` for the real default model.  Nothing is asserted:
the script prints figures and ratios.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from pathlib import Path

import numpy as np

from pytest_groove.embed.base import Embedder, Matrix
from pytest_groove.embed.registry import get_embedder
from pytest_groove.engine.builtin import Engine, index_dir_for, open_engine, run_indexer
from pytest_groove.kb.index_group import IndexReport
from pytest_groove.kb.source.records import Chunk, ParsedDocument
from pytest_groove.kb.store.database import Store
from pytest_groove.search.query.fts_query import build_fts_query, parse_query, query_phrases
from pytest_groove.settings.config import IndexSettings, Settings

#: bm25 column weights of the default search (heading, context, content)
WEIGHTS = (2.0, 1.0, 1.0)
#: rows the FTS leg asks for in a default search (max(limit x 5, 50) at limit 10)
FTS_FETCH = 50

# ----------------------------------------------------------------------------- corpus

#: Zipf-weighted in this order: earlier words are drawn more often
_WORDS: list[str] = " ".join(
    [
        "the a of to and in is for that with on as by this be are from or at it an not can",
        "when which each every one all any more than if then only into after before over",
        "index search query cache deploy rollback canary release build test suite runner",
        "fixture plugin config setting option flag default value timeout retry backoff",
        "request response header status error code message log trace metric alert oncall",
        "incident postmortem database backup restore snapshot replica primary shard table",
        "column row schema migration transaction lock commit write read latency throughput",
        "queue worker job batch stream event handler callback service endpoint client server",
        "token credential secret rotation policy permission role user account session cookie",
        "document chunk heading section paragraph embedding vector model score rank recall",
        "precision golden baseline regression threshold history report finding fingerprint",
        "branch merge review approval pipeline stage artifact container image registry",
        "cluster node pod volume network proxy gateway certificate domain route quota limit",
        "budget cost invoice usage dashboard monitor health probe readiness liveness restart",
        "memory disk cpu thread process signal shutdown startup warmup profile benchmark",
        "parser tokenizer trigram phrase exclusion fusion rerank candidate pool neighbour",
        "frontmatter title topic tag date depth breadcrumb context digest generation file",
        "folder path rename delete prune watch change hash checksum compare diff patch version",
        "should must may will could would might first second third last next previous new",
        "old same different small large fast slow safe stable flaky broken green red simple",
        "team owner reader writer operator developer maintainer customer partner vendor",
        "always never usually sometimes often rarely quickly slowly carefully exactly",
        "configure enable disable install upgrade downgrade migrate verify validate inspect",
        "explain describe document measure compare record replay escalate page notify",
    ]
).split()

_JAPANESE_LINES = [
    "デプロイの前にステージング環境で必ず動作を確認してください。",
    "ロールバックの手順は五分以内に完了することを目標にしています。",
    "キャッシュの無効化はイベント駆動で行い、手動の削除は避けます。",
    "障害が発生したら、まずオンコール担当者に連絡してください。",
    "評価用のゴールデンクエリは毎週見直し、古いものは削除します。",
    "検索結果の順位はベクトル検索と全文検索の融合で決まります。",
    "バックアップは毎日取得し、復元の訓練を月に一度実施します。",
    "新しいメンバーは最初の週にローカル環境を構築します。",
    "コードレビューでは設計の意図を説明するコメントを重視します。",
    "レート制限に達した場合は、指数バックオフで再試行してください。",
    "ログは構造化された形式で出力し、個人情報を含めてはいけません。",
    "コスト監視のダッシュボードは毎朝チームで確認しています。",
    "エラーコードの一覧は参照資料にまとめてあります。",
    "機能フラグを使うと、リリースと公開を分けることができます。",
    "埋め込みモデルを変更した場合は、索引を作り直す必要があります。",
    "認証キーは九十日ごとに更新し、古いキーは失効させます。",
    "再ランキングの評価には時間がかかるため、夜間に実行します。",
    "事後検証では個人を責めず、仕組みの改善に集中します。",
    "テスト戦略では単体テストと結合テストの比率を決めておきます。",
    "ドキュメントを書くときは、読者が最初に知りたいことから始めます。",
]

_JAPANESE_QUERIES = [
    "デプロイ",
    "ロールバックの手順",
    "キャッシュの無効化",
    "オンコール担当者",
    "ゴールデンクエリ",
    "ベクトル検索と全文検索",
    "バックアップの復元",
    "ローカル環境を構築",
    "コードレビュー",
    "レート制限 再試行",
    "構造化ログ",
    "コスト監視",
    "エラーコードの一覧",
    "機能フラグ",
    "埋め込みモデルを変更",
    "認証キーの更新",
    "再ランキングの評価",
    "事後検証",
    "テスト戦略",
    "ドキュメントを書く",
]

_CATEGORIES = ["guide", "ops", "ref", "notes/2024", "notes/2025"]
_TOPICS = ["api", "cache", "deploy", "search", "eval", "ops", "security", "testing"]
_DEPTHS = ["intro", "detail", "reference"]


@dataclass
class Corpus:
    """What the generator wrote, and material for realistic queries."""

    root: Path
    files: list[Path]
    chunks: int
    bytes: int
    #: adjacent word pairs seen in generated text (for quoted-phrase queries)
    bigrams: list[tuple[str, str]] = field(default_factory=list)


class _Writer:
    """Draws words from a Zipf-like distribution so some terms are common."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cum_weights = list(accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(len(_WORDS))))

    def words(self, count: int) -> list[str]:
        return self.rng.choices(_WORDS, cum_weights=self.cum_weights, k=count)

    def sentence(self, count: int) -> str:
        words = self.words(count)
        if self.rng.random() < 0.1:
            words[self.rng.randrange(count)] = (
                f"`{self.rng.choice(_WORDS)}_{self.rng.choice(_WORDS)}`"
            )
        return " ".join(words).capitalize() + "."

    def section_body(self, target_words: int, japanese_share: float) -> str:
        lines: list[str] = []
        written = 0
        while written < target_words:
            if self.rng.random() < japanese_share:
                lines.append(self.rng.choice(_JAPANESE_LINES))
                written += 12  # a Japanese line reads like a dozen English words
                continue
            if self.rng.random() < 0.08:
                for _ in range(self.rng.randint(2, 4)):
                    n = self.rng.randint(4, 9)
                    lines.append("- " + self.sentence(n))
                    written += n
                lines.append("")
                continue
            paragraph: list[str] = []
            for _ in range(self.rng.randint(2, 5)):
                n = min(self.rng.randint(6, 18), max(3, target_words - written))
                paragraph.append(self.sentence(n))
                written += n
                if written >= target_words:
                    break
            lines.append(" ".join(paragraph))
            lines.append("")
        return "\n".join(lines).strip() + "\n"

    def heading(self) -> str:
        return " ".join(self.words(self.rng.randint(2, 4))).title()


def generate_kb(root: Path, docs: int, sections: int, seed: int) -> Corpus:
    """Write ``docs`` Markdown files with ``sections`` chunks each under ``root``."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    corpus = Corpus(root=root, files=[], chunks=0, bytes=0)
    for number in range(docs):
        category = _CATEGORIES[number % len(_CATEGORIES)]
        topic = rng.choice(_TOPICS)
        japanese = rng.random() < 0.15
        suffix = ".ja" if japanese else ""
        path = root / category / f"{topic}-{number:05d}{suffix}.md"
        tags = ", ".join(rng.sample(_TOPICS, rng.randint(1, 3)))
        parts = [
            "---",
            f"title: {writer.heading()} {number}",
            f"topic: {topic}",
            f"tags: [{tags}]",
            f"date: 20{rng.randint(23, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            f"depth: {rng.choice(_DEPTHS)}",
            "---",
            "",
        ]
        for index in range(sections):
            level = "##" if index == 0 or rng.random() < 0.7 else "###"
            body = writer.section_body(rng.randint(80, 400), 0.5 if japanese else 0.04)
            parts += [f"{level} {writer.heading()}", "", body]
            if rng.random() < 0.05:
                words = body.split()
                at = rng.randrange(len(words) - 1)
                pair = (words[at].strip(".`"), words[at + 1].strip(".`"))
                if all(len(w) >= 3 and w.isascii() and w.isalpha() for w in pair):
                    corpus.bigrams.append(pair)
        text = "\n".join(parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        corpus.files.append(path)
        corpus.chunks += sections
        corpus.bytes += len(text.encode("utf-8"))
    return corpus


def make_queries(corpus: Corpus, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (kind, query) pairs in a fixed mix of query shapes."""
    rng = random.Random(seed + 1)
    writer = _Writer(rng)
    content = [w for w in _WORDS if len(w) >= 4]
    bigrams = corpus.bigrams or [("search", "index")]
    templates: list[Callable[[], str]] = [
        lambda: f"how do I {rng.choice(content)} the {rng.choice(content)}",
        lambda: f"what happens to the {rng.choice(content)} when a {rng.choice(content)} fails",
        lambda: (
            f"why is {rng.choice(content)} {rng.choice(content)} slow after {rng.choice(content)}"
        ),
        lambda: (
            f"steps to {rng.choice(content)} {rng.choice(content)} before {rng.choice(content)}"
        ),
        lambda: " ".join(writer.words(rng.randint(5, 10))),
    ]
    shapes: list[tuple[str, float, Callable[[], str]]] = [
        ("one-word", 0.2, lambda: rng.choice(content)),
        ("english", 0.3, lambda: rng.choice(templates)()),
        ("japanese", 0.2, lambda: rng.choice(_JAPANESE_QUERIES)),
        ("quoted", 0.15, lambda: '"{} {}" {}'.format(*rng.choice(bigrams), rng.choice(content))),
        (
            "exclusion",
            0.15,
            lambda: (
                f"{rng.choice(content)} {rng.choice(content)} -{rng.choice(content)}"
                if rng.random() < 0.7
                else '{} -"{} {}"'.format(rng.choice(content), *rng.choice(bigrams))
            ),
        ),
    ]
    queries: list[tuple[str, str]] = []
    for kind, share, make in shapes:
        queries += [(kind, make()) for _ in range(round(count * share))]
    return queries


# ----------------------------------------------------------------------------- measuring


class TimedEmbedder:
    """Wraps an embedder to measure the time spent embedding passages (indexing)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.passage_seconds = 0.0
        self.passages = 0

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        started = time.perf_counter()
        out = self.inner.embed_passages(texts)
        self.passage_seconds += time.perf_counter() - started
        self.passages += len(texts)
        return out

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)


def peak_rss() -> str:
    """High-water resident set size of this process, or n/a where unsupported."""
    try:
        import resource  # Unix only
    except ImportError:
        return "n/a"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes
    mib = peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
    return f"{mib:.0f} MiB"


def dir_size_mib(directory: Path) -> dict[str, float]:
    """MiB per file of an index directory (faiss cache files summed as one entry)."""
    sizes: dict[str, float] = {}
    for path in directory.iterdir():
        if path.is_file():
            name = "faiss cache" if path.suffix == ".faiss" else path.name
            sizes[name] = sizes.get(name, 0.0) + path.stat().st_size / (1024 * 1024)
    return sizes


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def best_of(runs: int, action: Callable[[], object]) -> float:
    return min(timed(action) for _ in range(runs))


def percentile(sorted_values: Sequence[float], share: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


class Table:
    """Collects (figure, value, note) rows and prints them aligned."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def add(self, figure: str, value: str, note: str = "") -> None:
        self.rows.append((figure, value, note))
        # stream progress so a long run shows where it is
        print(f"  .. {figure}: {value} {note}".rstrip(), file=sys.stderr, flush=True)

    def print(self, indent: str = "") -> None:
        width = max(len(r[0]) for r in self.rows)
        vwidth = max(len(r[1]) for r in self.rows)
        for figure, value, note in self.rows:
            print(f"{indent}{figure:<{width}}  {value:>{vwidth}}  {note}".rstrip())


# ----------------------------------------------------------------------------- FTS guard


#: 32 three-character terms: each phrase is a single trigram, like the reference's tests
SHORT_TERMS = [f"w{i:02d}" for i in range(32)]
#: 32 distinct vocabulary words of 5+ letters: each phrase is several trigrams
WORD_TERMS = list(dict.fromkeys(w for w in _WORDS if len(w) >= 5))[:32]


def or_expansion(
    directory: Path, terms: Sequence[str], rows: int, seed: int
) -> tuple[dict[int, float], int]:
    """Best-of-5 seconds per phrase count (1..32), every phrase matching every row.

    A separate store holds ``rows`` chunks, each containing all 32 ``terms`` (in a
    shuffled order, among 40 filler words), so FTS5 must visit every row once per
    phrase: the worst case of the OR expansion the query compiler produces.  Returns
    the timings and how many rows the 32-phrase expression matched.
    """
    rng = random.Random(seed + 2)
    filler = [w for w in _WORDS if len(w) >= 3 and w not in terms]
    store = Store.open(directory, create=True)
    try:
        per_doc = 100
        for start in range(0, rows, per_doc):
            n = min(per_doc, rows - start)
            chunks = []
            for i in range(n):
                words = [*terms, *rng.choices(filler, k=40)]
                rng.shuffle(words)
                chunks.append(Chunk(i, f"Section {start + i}", 2, " ".join(words), None))
            store.write_document(
                f"doc-{start:06d}.md",
                f"{start:064x}",
                0,
                ParsedDocument(title=None, chunks=tuple(chunks)),
                np.zeros((n, 4), dtype=np.float32),
                store_context=False,
                token_counts=[72] * n,
                quality_scores=[1.0] * n,
            )
        seconds: dict[int, float] = {}
        matched = 0
        for phrases in (1, 2, 4, 8, 16, 32):
            text = " ".join(terms[:phrases])
            expr = build_fts_query(text)
            if expr is None or len(query_phrases(text)) != phrases:
                raise RuntimeError(f"{text!r} does not compile to {phrases} phrases: {expr}")
            if phrases == 32:
                matched = store.fts_match_count(expr)
            seconds[phrases] = best_of(5, partial(store.fts_candidates, expr, WEIGHTS, FTS_FETCH))
        return seconds, matched
    finally:
        store.close()


def report_or_expansion(
    tmp: Path, label: str, terms: Sequence[str], rows: int, seed: int, table: Table
) -> float:
    seconds, matched = or_expansion(tmp / f"or-{label}", terms, rows, seed)
    scaling = " / ".join(f"{seconds[n] * 1000:.1f}" for n in sorted(seconds))
    table.add(
        f"FTS worst case, {label}",
        f"{seconds[32] * 1000:.1f} ms",
        f"32 phrases vs {seconds[1] * 1000:.1f} ms for 1; {matched}/{rows} rows match; "
        f"1/2/4/8/16/32: {scaling} ms",
    )
    return seconds[32] / seconds[1]


# ----------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000, help="documents to generate")
    parser.add_argument("--model", default="hash", help="embedder (hash measures the engine)")
    parser.add_argument("--sections", type=int, default=5, help="sections (chunks) per document")
    parser.add_argument("--queries", type=int, default=200, help="searches for the latency figure")
    parser.add_argument(
        "--or-rows", type=int, default=5000, help="rows of the FTS worst-case store"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.docs < 2 or args.sections < 1 or args.queries < 10 or args.or_rows < 1:
        parser.error("need --docs >= 2, --sections >= 1, --queries >= 10, --or-rows >= 1")

    table = Table()
    ratios = Table()
    with tempfile.TemporaryDirectory(prefix="groove-bench-") as tmp:
        kb = Path(tmp) / "kb"
        started = time.perf_counter()
        corpus = generate_kb(kb, args.docs, args.sections, args.seed)
        table.add(
            "generate KB",
            f"{time.perf_counter() - started:.2f} s",
            f"{len(corpus.files)} files, {corpus.chunks} sections, "
            f"{corpus.bytes / (1024 * 1024):.1f} MiB of Markdown",
        )
        queries = make_queries(corpus, args.queries, args.seed)
        settings = Settings(index=IndexSettings(model=args.model))

        started = time.perf_counter()
        embedder = TimedEmbedder(get_embedder(args.model))
        embedder.embed_passages(["warm up the model"])
        embedder.passage_seconds, embedder.passages = 0.0, 0
        table.add("load embedder", f"{time.perf_counter() - started:.2f} s", args.model)
        rss_before = peak_rss()

        # --- indexing --------------------------------------------------------------
        started = time.perf_counter()
        first = run_indexer(kb, settings, embedder=embedder, progress=False)
        full = time.perf_counter() - started
        table.add(
            "full index",
            f"{full:.2f} s",
            f"{first.chunks_embedded} chunks, {first.chunks_embedded / full:.0f} chunks/s; "
            f"embedder {embedder.passage_seconds:.2f} s "
            f"({100 * embedder.passage_seconds / full:.0f}%), engine "
            f"{(full - embedder.passage_seconds) / first.chunks_embedded * 1000:.2f} ms/chunk",
        )
        if first.warnings:
            table.add("index warnings", str(len(first.warnings)), first.warnings[0])
        table.add("peak RSS after index", peak_rss(), f"{rss_before} before")

        def reindex(label: str, detail: Callable[[IndexReport], str]) -> IndexReport:
            """Index again, and add a row of the time it took and ``detail`` of its report."""
            report = run_indexer(kb, settings, embedder=embedder, progress=False)
            table.add(label, f"{report.seconds * 1000:.0f} ms", detail(report))
            return report

        noop = reindex(
            "no-op re-index",
            lambda r: f"{r.chunks_embedded} chunks embedded, {r.unchanged} unchanged",
        )
        ratios.add("full index / no-op re-index", f"{full / max(noop.seconds, 1e-9):.0f}x")

        target = corpus.files[len(corpus.files) // 2]
        target.write_text(
            target.read_text(encoding="utf-8") + "\nOne more sentence about the index.\n",
            encoding="utf-8",
        )
        reindex(
            "re-index, 1 file edited",
            lambda r: f"{r.chunks_embedded} chunks embedded, {r.changed} changed",
        )

        # reorganising a KB: every file moved one folder down (same bytes, new paths)
        archive = kb / "archive"
        archive.mkdir()
        for top in sorted({c.split("/")[0] for c in _CATEGORIES}):
            (kb / top).rename(archive / top)
        moved = reindex(
            "re-index, all files moved",
            lambda r: f"{r.renamed} files renamed, {r.chunks_embedded} chunks embedded",
        )
        ratios.add("all files moved / no-op re-index", f"{moved.seconds / noop.seconds:.1f}x")

        # --- opening ---------------------------------------------------------------
        index_dir = index_dir_for(kb.resolve(), settings, embedder.name)

        def open_and_close() -> None:
            open_engine(kb, settings, embedder=embedder, reindex=False).close()

        def drop_cache() -> None:
            # the faiss file beside the database is only a cache of its embeddings
            for cache in index_dir.glob("*.faiss"):
                cache.unlink()

        cold_runs = []
        for _ in range(3):
            drop_cache()
            cold_runs.append(timed(open_and_close))
        cold = min(cold_runs)
        warm = best_of(3, open_and_close)
        table.add("cold open (builds faiss)", f"{cold * 1000:.0f} ms", "best of 3")
        table.add("warm open (faiss cache)", f"{warm * 1000:.0f} ms", "best of 3")
        ratios.add("cold open / warm open", f"{cold / warm:.1f}x")

        sizes = dir_size_mib(index_dir)
        detail = ", ".join(
            f"{name} {mib:.1f}" for name, mib in sorted(sizes.items()) if mib >= 0.05
        )
        table.add(
            "index on disk",
            f"{sum(sizes.values()):.1f} MiB",
            f"{detail}; {sum(sizes.values()) * 1024 * 1024 / corpus.bytes:.1f}x the Markdown",
        )

        # --- searching -------------------------------------------------------------
        with open_engine(kb, settings, embedder=embedder, reindex=False) as engine:
            search_figures(engine, queries, table)
            table.add("peak RSS after open+search", peak_rss())

            snapshot_runs = [timed(engine.corpus_snapshot) for _ in range(3)]
            snap = engine.corpus_snapshot()
            tracemalloc.start()
            engine.corpus_snapshot()
            _, snap_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            table.add(
                "corpus_snapshot",
                f"{statistics.median(snapshot_runs) * 1000:.0f} ms",
                f"median of 3, {snap.chunks} chunks, "
                f"{snap.chunks / statistics.median(snapshot_runs):.0f} chunks/s, "
                f"Python peak {snap_peak / 1024:.0f} KiB",
            )
            built_index_or(engine, table, ratios)

        # --- FTS worst case ---------------------------------------------------------
        tmp_path = Path(tmp)
        short = report_or_expansion(
            tmp_path, "w00..w31", SHORT_TERMS, args.or_rows, args.seed, table
        )
        words = report_or_expansion(
            tmp_path, "5+ letter words", WORD_TERMS, args.or_rows, args.seed, table
        )
        ratios.add(
            "32-phrase / 1-phrase, worst case w00..w31",
            f"{short:.1f}x",
            "reference guard < 20x, reference measured 10-11x",
        )
        ratios.add("32-phrase / 1-phrase, worst case words", f"{words:.1f}x")

    print(f"\nbench_scale: {args.docs} docs x {args.sections} sections, model {args.model}")
    table.print()
    print("ratios:")
    ratios.print(indent="  ")
    return 0


def search_figures(engine: Engine, queries: list[tuple[str, str]], table: Table) -> None:
    """Latency of every query once (after one warm-up pass over a few of them)."""
    for _, query in queries[:5]:
        engine.search(query, 10)
    per_kind: dict[str, list[float]] = {}
    empty = 0
    for kind, query in queries:
        started = time.perf_counter()
        hits = engine.search(query, 10)
        per_kind.setdefault(kind, []).append(time.perf_counter() - started)
        empty += not hits
    every = sorted(t for times in per_kind.values() for t in times)
    table.add(
        "search latency",
        f"{statistics.median(every) * 1000:.1f} ms",
        f"median; p90 {percentile(every, 0.9) * 1000:.1f} ms, max {every[-1] * 1000:.1f} ms, "
        f"{len(every)} queries, {empty} with no hit",
    )
    kinds = ", ".join(
        f"{kind} {statistics.median(times) * 1000:.1f}" for kind, times in per_kind.items()
    )
    table.add("  median by query shape", "", f"{kinds} ms")


def built_index_or(engine: Engine, table: Table, ratios: Table) -> None:
    """The same comparison on the generated index: the 32 most common words vs 1."""
    common = [w for w in _WORDS if len(w) >= 3 and w.isalpha()][:32]
    wide = parse_query(" ".join(common))
    narrow = parse_query(common[0])
    assert wide.fts is not None and narrow.fts is not None
    one = best_of(5, lambda: engine.fts_leg(narrow, WEIGHTS, FTS_FETCH))
    many = best_of(5, lambda: engine.fts_leg(wide, WEIGHTS, FTS_FETCH))
    table.add(
        "FTS on this KB, 32 common words",
        f"{many * 1000:.1f} ms",
        f"vs 1 word {one * 1000:.1f} ms; {engine.fts_match_count(wide.fts)} / "
        f"{engine.chunk_count()} rows match; best of 5",
    )
    ratios.add("32-phrase / 1-phrase, this KB", f"{many / one:.1f}x", "32 common words vs 1")


if __name__ == "__main__":
    sys.exit(main())
