"""The human report (``groove eval`` stdout, the pytest terminal summary).

Layout (spec-eval §11; the seed's sample)::

    groove eval — 2026-04-24T05:32:01+00:00
      model: e5-small    reranker: none    limit: 10    queries: 2
      corpus: 646 docs / 11215 chunks
        ⚠️ corpus changed since last run (642 -> 646 documents, 11090 -> 11215 chunks)
           a delta below may reflect that, not retrieval

    Aggregate (previous run: 2026-04-23T09:10:11.500+00:00)
      recall@1   0.250  (↑ 0.100)
      MRR        0.500  (—       )
      nDCG@10    0.460  (↓ 0.020)

    Per-query (regressions and misses, 1 of 2)
      ✗ How are chunks deduplicated? recall@10: 1.00 → 0.00

Only the largest k's nDCG is shown; the JSON report has everything.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_groove.evaluation.compare import Comparison, format_delta, largest_k
from pytest_groove.evaluation.history import BaselineChoice
from pytest_groove.evaluation.run import RunRecord, display_timestamp

#: metric labels are left-aligned in a field this wide
LABEL_WIDTH = 11
#: ids in per-query rows are left-aligned in a field this wide (never truncated)
ID_WIDTH = 24
NEXT_RUN_HINT = "On the next run it will automatically show a diff against this one."


def _metric_line(
    label: str, value: float, delta: float | None, threshold: float, color: bool
) -> str:
    # at least one space after the label, even for recall@1000
    line = f"  {label.ljust(max(LABEL_WIDTH, len(label) + 1))}{value:.3f}"
    if delta is not None:
        line += format_delta(delta, threshold, color)
    return line


def _delta(diff: Mapping[int, float] | None, k: int) -> float | None:
    return None if diff is None else diff.get(k, 0.0)


def _aggregate_header(comparison: Comparison, choice: BaselineChoice | None) -> list[str]:
    baseline = comparison.baseline
    if baseline is None:
        return ["Aggregate"]
    if not comparison.compatible:
        return [f"⚠️ {comparison.reason}, diff disabled", "Aggregate"]
    label = f"previous run: {display_timestamp(baseline.timestamp)}"
    if choice is not None and choice.named:
        label = f"baseline run you named: {display_timestamp(baseline.timestamp)}"
    elif choice is not None and choice.frozen:
        label += ", frozen baseline"
    if choice is not None and choice.skipped and not choice.named:
        label += f"; {choice.skipped} newer run(s) with another fingerprint skipped"
    return [f"Aggregate ({label})"]


def render_text(
    run: RunRecord,
    comparison: Comparison,
    *,
    color: bool = False,
    choice: BaselineChoice | None = None,
    footer: str | None = None,
    title: str = "groove eval",
) -> str:
    """The text report for ``run`` compared as ``comparison`` says.

    ``choice`` (optional) adds how the baseline was chosen (frozen, runs skipped);
    ``footer`` is a closing line, e.g. :data:`NEXT_RUN_HINT` or a subset note.
    """
    fp = run.fingerprint
    agg = run.aggregate
    limits = comparison.limits
    diff = comparison.diff
    lines = [f"{title} — {display_timestamp(run.timestamp)}"]
    line2 = (
        f"  model: {fp.model}    reranker: {fp.reranker or 'none'}    limit: {fp.limit}"
        f"    queries: {agg.query_count}"
    )
    if fp.retriever is not None:
        line2 += f"    retriever: {fp.retriever}"
    lines.append(line2)
    if run.corpus is not None:
        lines.append(f"  corpus: {run.corpus.documents} docs / {run.corpus.chunks} chunks")
        if comparison.corpus_changed:
            lines.append(f"    ⚠️ corpus changed since last run ({comparison.corpus_phrase})")
            lines.append("       a delta below may reflect that, not retrieval")
    lines.append("")
    lines += _aggregate_header(comparison, choice)
    for k in fp.k_values:
        lines.append(
            _metric_line(
                f"recall@{k}",
                agg.recall_at_k.get(k, 0.0),
                _delta(None if diff is None else diff.recall_at_k, k),
                limits.for_metric(f"recall@{k}"),
                color,
            )
        )
    lines.append(
        _metric_line(
            "MRR", agg.mrr, None if diff is None else diff.mrr, limits.for_metric("mrr"), color
        )
    )
    if fp.k_values:
        k = largest_k(fp.k_values)
        lines.append(
            _metric_line(
                f"nDCG@{k}",
                agg.ndcg_at_k.get(k, 0.0),
                _delta(None if diff is None else diff.ndcg_at_k, k),
                limits.for_metric(f"ndcg@{k}"),
                color,
            )
        )

    rows = [row for row in comparison.queries if row.miss or row.regressed]
    if rows:
        lines.append("")
        lines.append(f"Per-query (regressions and misses, {len(rows)} of {len(run.per_query)})")
        for row in rows:
            mark = "✗" if row.miss else "↓"
            values = (
                f"{row.now:.2f}"
                if row.previous is None
                else (f"{row.previous:.2f} → {row.now:.2f}")
            )
            lines.append(f"  {mark} {row.id.ljust(ID_WIDTH)} recall@{row.k}: {values}")
    if footer:
        lines.append("")
        lines.append(footer)
    return "\n".join(lines) + "\n"
