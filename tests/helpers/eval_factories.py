"""Small builders of evaluation records for the history/compare/report tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pytest_groove.evaluation.runs.record import (
    Finding,
    Fingerprint,
    QueryResult,
    QuotedQuery,
    RunRecord,
    TopHit,
)
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.metrics import AggregateMetrics, QueryMetrics
from pytest_groove.scoring.records import ExpectedEntry
from pytest_groove.settings.config import SearchSettings

GOLDEN_HASH = "9c1e" + "0" * 56 + "77d2"
EPOCH = datetime(2026, 4, 24, 5, 32, 1, tzinfo=UTC)


def fingerprint(**changes: object) -> Fingerprint:
    """A current fingerprint (model m, no reranker, limit 10, k 1/5/10)."""
    fp = Fingerprint.build("bge-m3", None, 10, (1, 5, 10), GOLDEN_HASH, SearchSettings(), "off")
    if not changes:
        return fp
    from dataclasses import replace

    return replace(fp, **changes)  # type: ignore[arg-type]


def at(minutes: int) -> datetime:
    """A timestamp ``minutes`` after a fixed instant (bigger = newer)."""
    return EPOCH + timedelta(minutes=minutes)


def query(
    qid: str,
    recall: Mapping[int, float] | float = 1.0,
    rr: float = 1.0,
    ndcg: Mapping[int, float] | float | None = None,
    *,
    text: str | None = None,
    expected: Sequence[str] = ("a.md",),
    top: Sequence[str] = ("a.md",),
    k_values: Sequence[int] = (1, 5, 10),
) -> QueryResult:
    recall_map = dict(recall) if isinstance(recall, Mapping) else dict.fromkeys(k_values, recall)
    if ndcg is None:
        ndcg_map = dict(recall_map)
    else:
        ndcg_map = dict(ndcg) if isinstance(ndcg, Mapping) else dict.fromkeys(k_values, ndcg)
    return QueryResult(
        id=qid,
        query=text if text is not None else f"query text of {qid}",
        expected=tuple(ExpectedEntry(p) for p in expected),
        top_k=tuple(
            TopHit(rank=i, path=p, heading=None, score=1.0 / i) for i, p in enumerate(top, 1)
        ),
        metrics=QueryMetrics(recall_at_k=recall_map, reciprocal_rank=rr, ndcg_at_k=ndcg_map),
    )


def run(
    *,
    minutes: int = 0,
    recall: Mapping[int, float] | float = 0.5,
    mrr: float = 0.5,
    ndcg: Mapping[int, float] | float = 0.5,
    fp: Fingerprint | None = None,
    corpus: CorpusSnapshot | None = None,
    per_query: Sequence[QueryResult] = (),
    findings: Sequence[Finding] = (),
    query_count: int = 2,
) -> RunRecord:
    """A run whose aggregate is given directly (not derived from ``per_query``)."""
    fp = fp or fingerprint()
    recall_map = dict(recall) if isinstance(recall, Mapping) else dict.fromkeys(fp.k_values, recall)
    ndcg_map = dict(ndcg) if isinstance(ndcg, Mapping) else dict.fromkeys(fp.k_values, ndcg)
    return RunRecord(
        timestamp=at(minutes),
        fingerprint=fp,
        corpus=corpus,
        per_query=tuple(per_query),
        aggregate=AggregateMetrics(
            recall_at_k=recall_map, mrr=mrr, ndcg_at_k=ndcg_map, query_count=query_count
        ),
        findings=tuple(findings),
    )


def corpus(documents: int = 4, chunks: int = 5, digest: str = "d" * 64) -> CorpusSnapshot:
    return CorpusSnapshot(documents=documents, chunks=chunks, digest=digest)


def finding(path: str, *quoted: tuple[str, int | None]) -> Finding:
    return Finding(
        "golden-queries-quoted", path, tuple(QuotedQuery(qid, rank) for qid, rank in quoted)
    )


def big_run(minutes: int, queries: int = 25, hits: int = 10) -> RunRecord:
    """A realistic-size run: ``queries`` golden queries with ``hits`` hits each."""
    per_query = [
        query(
            f"query-{i:03d}",
            recall=0.5,
            rr=0.5,
            text=f"how does feature number {i} of the system behave under load?",
            expected=(f"docs/area-{i}/expected-answer.md",),
            top=tuple(f"docs/area-{i}/retrieved-document-{j}.md" for j in range(hits)),
        )
        for i in range(queries)
    ]
    return run(minutes=minutes, per_query=per_query, corpus=corpus(), query_count=queries)


# --------------------------------------------------------------------------- evaluations


class StaticSearcher:
    """A searcher whose corpus and texts are given (for the finish tests)."""

    def __init__(
        self,
        identity: Any = None,
        corpus: CorpusSnapshot | None = None,
        texts: Iterable[Any] | None = None,
        headings: Mapping[str, Any] | None = None,
    ) -> None:
        from pytest_groove.engine.searcher import SearcherIdentity

        self.identity = identity or SearcherIdentity("hash", context_mode="off")
        self.corpus = corpus
        self.texts = texts
        self.headings = headings

    def search(self, query: str, limit: int) -> list[Any]:
        return []

    def prepare_queries(self, queries: Sequence[str]) -> None:
        return None

    def read_snapshot(self) -> Any:
        from contextlib import nullcontext

        return nullcontext()

    def headings_by_path(self) -> Mapping[str, Any] | None:
        return self.headings

    def corpus_snapshot(self) -> CorpusSnapshot | None:
        return self.corpus

    def document_digests(self) -> Mapping[str, str] | None:
        return None

    def quoted_by_document(self, needles: Sequence[str]) -> dict[str, set[int]]:
        from pytest_groove.kb.derived.quote_scan import quoted_needles

        return {} if self.texts is None else quoted_needles(needles, self.texts)

    def check_hits(self, hits: Sequence[Any]) -> None:
        return None

    def answer_warnings(self, results: Sequence[Any], deepest_k: int) -> list[str]:
        return []

    def search_notes(self) -> dict[str, Any]:
        return {}

    def add_search_notes(self, notes: Mapping[str, Any]) -> None:
        return None

    def close(self) -> None:
        return None


def begun(
    kb: Any,
    *,
    corpus: CorpusSnapshot | None = None,
    texts: Iterable[Any] | None = None,
    fingerprint_changes: Mapping[str, object] | None = None,
    history_cap: int | None = None,
    prog: str = "groove eval",
    identity_retriever: str | None = None,
    **options: Any,
) -> Any:
    """An evaluation begun over ``kb``'s golden file as a door would begin it, with
    ``options`` as the door's :class:`RunOptions` and a :class:`StaticSearcher`."""
    from dataclasses import replace

    from pytest_groove.evaluation.lifecycle import (
        Evaluation,
        baseline_counterparts,
        build_fingerprint,
        pick_baseline_for,
    )
    from pytest_groove.evaluation.plan import plan_evaluation, read_stored_runs
    from pytest_groove.settings.options import RunOptions

    plan = plan_evaluation(kb, RunOptions(**options), prog=prog)
    if history_cap is not None:
        plan = replace(plan, history_cap=history_cap)
    from pytest_groove.engine.searcher import SearcherIdentity

    identity = (
        SearcherIdentity("custom", retriever=identity_retriever)
        if identity_retriever is not None
        else None
    )
    searcher = StaticSearcher(identity=identity, corpus=corpus, texts=texts)
    fp = build_fingerprint(plan, searcher.identity)
    if fingerprint_changes:
        fp = replace(fp, **fingerprint_changes)  # type: ignore[arg-type]
    stored = read_stored_runs(plan)
    choice = pick_baseline_for(plan, stored, fp)
    return Evaluation(
        plan=plan,
        fingerprint=fp,
        stored=stored,
        choice=choice,
        baseline_queries=baseline_counterparts(plan.golden.queries, choice),
        searcher=searcher,
    )
