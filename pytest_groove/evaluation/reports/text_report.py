"""The human report (``groove eval`` stdout, the pytest terminal summary).

Layout (spec-eval §11): a title line, the engine and corpus lines (with a warning
when the corpus changed), the aggregate block — one line per metric of
:func:`~pytest_groove.scoring.metric_table.summary_metrics`, each with its delta
against the baseline — and the queries that missed or regressed.  ``docs/eval.md``
shows a sample; only the largest k's nDCG is shown, the JSON report has everything.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

from pytest_groove.errors import clip_path
from pytest_groove.evaluation.gate.compare import Comparison, format_delta
from pytest_groove.evaluation.gate.verdict import RunVerdicts, comparison_verdicts
from pytest_groove.evaluation.history.file import BaselineChoice
from pytest_groove.evaluation.reports.explain_text import failure_lines, moved_lines
from pytest_groove.evaluation.runs.record import RunRecord, display_timestamp
from pytest_groove.scoring.metric_table import summary_metrics
from pytest_groove.scoring.records import question_key
from pytest_groove.scoring.significance import detectable_drop_line, with_p_value

#: metric labels are left-aligned in a field this wide
LABEL_WIDTH = 11
#: ids in per-query rows are left-aligned in a field this wide (never truncated)
ID_WIDTH = 24
NEXT_RUN_HINT = "On the next run it will automatically show a diff against this one."


def _metric_line(
    label: str, value: float, delta: float | None, threshold: float, color: bool
) -> str:
    # at least one space after the label, even for a four-digit k
    line = f"  {label.ljust(max(LABEL_WIDTH, len(label) + 1))}{value:.3f}"
    if delta is not None:
        line += format_delta(delta, threshold, color)
    return line


def _aggregate_header(comparison: Comparison, choice: BaselineChoice | None) -> list[str]:
    baseline = comparison.baseline
    if baseline is None:
        return ["Aggregate"]
    if not comparison.compatible:
        return [f"⚠️ {comparison.reason}, diff disabled", "Aggregate"]
    if choice is not None and choice.accepted is not None:
        return [
            f"Aggregate (accepted baseline: {clip_path(choice.accepted)})",
            *_changes(comparison),
        ]
    if comparison.across_changes:
        label = f"run of {display_timestamp(baseline.timestamp)}, compared across changes"
        return [f"Aggregate ({label})", *_changes(comparison)]
    label = f"previous run: {display_timestamp(baseline.timestamp)}"
    if choice is not None and choice.named:
        label = f"baseline run you named: {display_timestamp(baseline.timestamp)}"
    elif choice is not None and choice.frozen:
        label += ", frozen baseline"
    if choice is not None and choice.skipped and not choice.named:
        label += f"; {choice.skipped} newer run(s) with another fingerprint skipped"
    return [f"Aggregate ({label})"]


def _changes(comparison: Comparison) -> list[str]:
    """What differs from the baseline a comparison across changes was made with."""
    lines = []
    if comparison.settings_changes:
        lines.append(f"  settings changed: {'; '.join(comparison.settings_changes)}")
    if comparison.golden:
        lines.append(f"  golden changed: {comparison.golden.describe()}")
    if comparison.left_out:
        lines.append(f"  left out: {', '.join(comparison.left_out)}")
    return lines


def _since(comparison: Comparison, choice: BaselineChoice | None) -> str:
    """The run the corpus changed since, named as the aggregate header names it: "last
    run" only when the baseline is the newest stored run, else that run's moment.
    """
    baseline = comparison.baseline
    if baseline is None or choice is None:
        return "last run"
    when = display_timestamp(baseline.timestamp)
    if choice.accepted is not None:
        return "the accepted baseline"
    if choice.named:
        return f"the baseline run you named ({when})"
    if choice.frozen:
        return f"the frozen baseline run of {when}"
    if choice.skipped:
        return f"the run of {when}"
    return "last run"


def describe_corpus(run: RunRecord) -> str:
    """The corpus the run was judged against, as every report says it.  A custom
    retriever keeps its own chunks: it counts the KB's documents alone, not groove's
    chunking of them."""
    assert run.corpus is not None
    if run.fingerprint.retriever is not None:
        return (
            f"{run.corpus.documents} docs in the knowledge base (the hits are judged "
            "against them; the retriever's own chunks are not counted)"
        )
    return f"{run.corpus.documents} docs / {run.corpus.chunks} chunks"


def _corpus_line(run: RunRecord) -> str:
    return f"  corpus: {describe_corpus(run)}"


def render_text(
    run: RunRecord,
    comparison: Comparison,
    *,
    color: bool = False,
    choice: BaselineChoice | None = None,
    footer: str | None = None,
    title: str = "groove eval",
    verdicts: RunVerdicts | None = None,
) -> str:
    """The text report for ``run`` compared as ``comparison`` says.

    ``choice`` (optional) adds how the baseline was chosen (frozen, runs skipped);
    ``footer`` is a closing line, e.g. :data:`NEXT_RUN_HINT` or a subset note;
    ``verdicts`` are the run's (computed from ``comparison`` when not given).
    """
    lines = _heading_lines(run, comparison, choice, title)
    lines.append("")
    lines += _aggregate_header(comparison, choice)
    lines += _aggregate_lines(run, comparison, color)
    # one verdict per query (evaluation/gate/verdict.py), the same the items and the
    # JSON and HTML reports show
    judged = verdicts if verdicts is not None else comparison_verdicts(comparison)
    lines += failure_lines(judged, len(run.per_query))
    lines += moved_lines(judged, len(run.per_query))
    if footer:
        lines.append("")
        lines.append(footer)
    return "\n".join(lines) + "\n"


def _heading_lines(
    run: RunRecord, comparison: Comparison, choice: BaselineChoice | None, title: str
) -> list[str]:
    """The title, the engine line and the corpus lines."""
    fp = run.fingerprint
    lines = [f"{title} — {display_timestamp(run.timestamp)}"]
    line2 = (
        f"  model: {fp.model}    reranker: {fp.reranker or 'none'}    limit: {fp.limit}"
        f"    queries: {run.aggregate.query_count}"
    )
    if fp.retriever is not None:
        line2 += f"    retriever: {fp.retriever}"
    lines.append(line2)
    if run.corpus is not None:
        lines.append(_corpus_line(run))
        if comparison.corpus_changed:
            since = _since(comparison, choice)
            lines.append(f"    ⚠️ corpus changed since {since} ({comparison.corpus_phrase})")
            if comparison.compatible and comparison.diff is not None:  # else no delta below
                lines.append("       a delta below may reflect that, not retrieval")
    return lines


def _aggregate_lines(run: RunRecord, comparison: Comparison, color: bool) -> list[str]:
    """One line per summary metric with its delta (and p-value), then what the
    p-values can show."""
    fp = run.fingerprint
    diff = comparison.diff
    lines: list[str] = []
    for metric in summary_metrics(fp.k_values, fp.metrics or ()):
        line = _metric_line(
            metric.label,
            metric.of_aggregate(run.aggregate),
            None if diff is None else metric.of_aggregate(diff),
            comparison.limits.for_metric(metric.threshold_key),
            color,
        )
        lines.append(with_p_value(line, comparison.p_values, metric))
    if comparison.p_values is not None:
        # what the p-values above can and cannot show, at this set's size
        per_query = [q.metrics for q in run.per_query]
        units = [question_key(q.query) for q in run.per_query]
        lines.append(f"  {detectable_drop_line(per_query, fp.k_values, units)}")
    return lines
