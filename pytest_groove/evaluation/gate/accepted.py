"""Comparing a run with the accepted baseline, whatever the pull request changed.

A run log's baseline must have the run's fingerprint, or there is no diff: the seed's
rule for trying a knob and seeing the diff.  The accepted baseline is the reviewed
reference of a CI gate, so the changes it exists to judge never switch it off:

- **golden file edited**: queries are paired by id, text and expected entries
  (:func:`~.compare.match_queries`); the paired ones are compared and gated as
  ever, the added, removed and edited ones are listed, and the aggregate gate runs
  on the paired queries and says so;
- **settings changed** (model, reranker, retriever, search settings, limit): compared
  all the same -- that is the change under review -- each difference named
  (``model e5-small -> hash``);
- a metric only one side measures (another k) is named and left out;
- **corpus changed**: told from the accepted per-document digests.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields, replace
from typing import Any

from pytest_groove.evaluation.gate.compare import (
    Comparison,
    GoldenChanges,
    aggregate_diff,
    aggregate_regressions,
    corpus_change,
    match_queries,
    query_rows,
    run_p_values,
)
from pytest_groove.evaluation.runs.corpus_files import document_digests
from pytest_groove.evaluation.runs.fingerprint import Fingerprint
from pytest_groove.evaluation.runs.record import QueryResult, RunRecord
from pytest_groove.kb.source.records import CorpusSnapshot
from pytest_groove.scoring.metric_table import all_metrics
from pytest_groove.scoring.metrics import QueryMetrics, aggregate
from pytest_groove.scoring.thresholds import Thresholds, as_thresholds
from pytest_groove.settings.records import FusionParams

__all__ = [
    "GoldenChanges",
    "compare_across",
    "golden_changes",
    "settings_changes",
]

#: how a fingerprint key is named in a settings change (others by their key)
_SETTING_NAMES = {
    "fusion": "[search.fusion]",
    "mmr": "[search.mmr]",
    "parent_retriever": "[search.parent_retriever]",
    "context": "[contextual]",
    "metric_version": "metric version",
    "fts_query_version": "query compiler version",
    "chunker_version": "chunker version",
}


def golden_changes(run: RunRecord, baseline: RunRecord) -> GoldenChanges:
    """Which queries were added, removed or edited since the accepted baseline."""
    paired = match_queries(run.per_query, baseline)
    taken = {id(result) for result in paired if result is not None}
    new = [q.id for q, before in zip(run.per_query, paired, strict=True) if before is None]
    gone = [q.id for q in baseline.per_query if id(q) not in taken]
    edited = [i for i in dict.fromkeys(new) if i in gone]
    return GoldenChanges(
        added=tuple(i for i in new if i not in edited),
        removed=tuple(i for i in gone if i not in edited),
        edited=tuple(edited),
        paired=len(taken),
    )


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _or_default(key: str, value: Any) -> Any:
    """A fingerprint value with ``None`` read as what it stands for: the built-in
    fusion values (recorded only when one differs)."""
    if key == "fusion" and value is None:
        return asdict(FusionParams())
    return value


def settings_changes(now: Fingerprint, accepted: Fingerprint) -> tuple[str, ...]:
    """Each setting that differs, ``name accepted -> now`` (a table's keys one by one;
    the golden file's hash is the golden changes' business)."""
    mine, theirs = now.to_json(), accepted.to_json()
    changes: list[str] = []
    for key in [*mine, *(k for k in theirs if k not in mine)]:
        if key == "golden_hash" or mine.get(key) == theirs.get(key):
            continue
        name = _SETTING_NAMES.get(key, key)
        before, after = _or_default(key, theirs.get(key)), _or_default(key, mine.get(key))
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            changes += [
                f"{name} {sub} {_value(before.get(sub))} -> {_value(after.get(sub))}"
                for sub in [*after, *(s for s in before if s not in after)]
                if before.get(sub) != after.get(sub)
            ]
        else:
            changes.append(f"{name} {_value(before)} -> {_value(after)}")
    return tuple(changes)


def _left_out(now: Fingerprint, accepted: Fingerprint) -> tuple[str, ...]:
    """The metrics only one side measures, named with the side that has them."""
    mine = {m.label for m in all_metrics(now.k_values, now.metrics or ())}
    theirs = {m.label for m in all_metrics(accepted.k_values, accepted.metrics or ())}
    order = [
        m.label
        for m in all_metrics(
            sorted({*now.k_values, *accepted.k_values}),
            sorted({*(now.metrics or ()), *(accepted.metrics or ())}),
        )
    ]
    return tuple(
        f"{label} (only {'this run' if label in mine else 'the accepted baseline'})"
        for label in order
        if (label in mine) != (label in theirs)
    )


#: the optional fields of :class:`QueryMetrics` and the metric each measures
_OPTIONAL_FIELDS = {
    "precision_at_k": "precision",
    "hit_rate_at_k": "hit_rate",
    "average_precision": "map",
    "r_precision": "r_precision",
}


def _common(metrics: QueryMetrics, ks: frozenset[int], shared: set[str]) -> QueryMetrics:
    """``metrics`` at the k values both sides measure, with only the optional metrics
    both sides measure."""
    out: dict[str, Any] = {}
    for field in fields(metrics):
        value = getattr(metrics, field.name)
        if field.name in _OPTIONAL_FIELDS and _OPTIONAL_FIELDS[field.name] not in shared:
            value = None
        elif isinstance(value, dict):
            value = {k: v for k, v in value.items() if k in ks}
        out[field.name] = value
    return QueryMetrics(**out)


def _paired_views(run: RunRecord, baseline: RunRecord) -> tuple[RunRecord, RunRecord]:
    """Both runs restricted to their paired queries, at the k values both measure,
    with the optional metrics only both measure, re-aggregated."""
    ks = frozenset(run.fingerprint.k_values) & frozenset(baseline.fingerprint.k_values)
    both = set(run.fingerprint.metrics or ()) & set(baseline.fingerprint.metrics or ())
    pairs = [
        (now, before)
        for now, before in zip(run.per_query, match_queries(run.per_query, baseline), strict=True)
        if before is not None
    ]

    def view(record: RunRecord, results: list[QueryResult]) -> RunRecord:
        kept = [replace(r, metrics=_common(r.metrics, ks, both)) for r in results]
        k_values = tuple(k for k in record.fingerprint.k_values if k in ks)
        fingerprint = replace(
            record.fingerprint, k_values=k_values, metrics=tuple(sorted(both)) or None
        )
        return replace(
            record,
            fingerprint=fingerprint,
            per_query=tuple(kept),
            aggregate=aggregate([r.metrics for r in kept]),
        )

    return view(run, [now for now, _ in pairs]), view(baseline, [before for _, before in pairs])


def _corpus(run: RunRecord, baseline: RunRecord) -> tuple[bool | None, str | None]:
    """Whether the documents changed since the accepted baseline, and how."""
    now, before = document_digests(run.corpus), document_digests(baseline.corpus)
    if now is None or before is None:
        return corpus_change(run.corpus, _counts_only(baseline.corpus))
    added = sum(1 for path in now if path not in before)
    removed = sum(1 for path in before if path not in now)
    changed = sum(1 for path, digest in now.items() if before.get(path, digest) != digest)
    if not (added or removed or changed):
        return False, None
    parts = [
        f"{n} {what}"
        for n, what in ((changed, "changed"), (added, "added"), (removed, "removed"))
        if n
    ]
    return True, f"{len(before)} -> {len(now)} documents: {', '.join(parts)}"


def _counts_only(corpus: CorpusSnapshot | None) -> CorpusSnapshot | None:
    return None if corpus is None or corpus.chunks < 0 else corpus


def compare_across(
    run: RunRecord, baseline: RunRecord, threshold: float | Thresholds
) -> Comparison:
    """Compare ``run`` with ``baseline`` (the accepted one, or any run ``groove
    history diff`` names) across whatever changed: always a diff, over the paired
    queries and the metrics both measure, with what changed named."""
    thresholds = as_thresholds(threshold)
    now_view, accepted_view = _paired_views(run, baseline)
    changed, phrase = _corpus(run, baseline)
    paired = bool(now_view.per_query)
    return Comparison(
        run=run,
        baseline=baseline,
        compatible=True,
        reason=None,
        diff=aggregate_diff(now_view.aggregate, accepted_view.aggregate) if paired else None,
        queries=query_rows(run, baseline, thresholds),
        corpus_changed=changed,
        corpus_phrase=phrase,
        regressions=aggregate_regressions(now_view, accepted_view, thresholds) if paired else (),
        threshold=thresholds.default,
        thresholds=thresholds,
        p_values=run_p_values(now_view, accepted_view) if paired else None,
        across_changes=True,
        golden=golden_changes(run, baseline),
        settings_changes=settings_changes(run.fingerprint, baseline.fingerprint),
        left_out=_left_out(run.fingerprint, baseline.fingerprint),
    )
