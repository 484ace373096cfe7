"""A query's metrics by name, for the plugin's item texts and JUnit properties."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_groove.evaluation.run import QueryResult


def metric_value(result: QueryResult, metric: str) -> float:
    """The value of ``metric`` (``recall@5``, ``MRR``, ``nDCG@10``) for one query."""
    metrics = result.metrics
    if metric.startswith("recall@"):
        return metrics.recall_at_k.get(int(metric.removeprefix("recall@")), 0.0)
    if metric.startswith("nDCG@"):
        return metrics.ndcg_at_k.get(int(metric.removeprefix("nDCG@")), 0.0)
    return metrics.reciprocal_rank


def junit_properties(result: QueryResult, k_values: Sequence[int]) -> list[tuple[str, object]]:
    """The query's metrics as JUnit ``<properties>``."""
    metrics = result.metrics
    props: list[tuple[str, object]] = [
        (f"groove.recall@{k}", f"{metrics.recall_at_k.get(k, 0.0):.4f}") for k in k_values
    ]
    props.append(("groove.reciprocal_rank", f"{metrics.reciprocal_rank:.4f}"))
    props.extend((f"groove.ndcg@{k}", f"{metrics.ndcg_at_k.get(k, 0.0):.4f}") for k in k_values)
    return props
