"""The optional HTML report (``groove eval --html PATH``, ``pytest --groove-html PATH``).

One self-contained file: inline CSS, every plot embedded as a base64 PNG, no
JavaScript, no external assets, so it can be attached to a CI run and opened
anywhere.  It shows the same run the text and JSON reports show, laid out for
reading rather than diffing:

- the verdict first (:mod:`.headline`): passed, or which gate failed and why, the
  known misses, the failing queries with their reasons at full width, what changed;
- a header: title, run time, model, reranker, limit, corpus, fingerprint summary,
  and what the run was compared with;
- the aggregate table, with the diff against the baseline;
- one trend plot per aggregate metric across the history's runs with the same
  fingerprint (oldest to newest, this run last; other runs are left out and
  counted);
- a per-query delta chart (recall and nDCG at the largest k, now minus baseline),
  only when a comparable baseline exists;
- the per-query table: id, query, expected entries with their ranks, every metric
  the run measured (a small grid with a column per k for the per-k metrics, then
  RR -- and AP, R-prec when measured -- on one line) and the top hits (the folded
  summary names the top hit as ``path#heading``).

Every number comes from the :class:`~pytest_groove.evaluation.runs.record.RunRecord` and
:class:`~pytest_groove.evaluation.gate.compare.Comparison` the other reports use, every
metric and its label from :mod:`.metric_table`; this module computes no metric and
no aggregate diff of its own.  It builds plain values (text and numbers, never
markup) and renders them through ``templates/report.html.j2`` with Jinja2's
autoescaping: each value is escaped once, on its way into the page, so text from
the golden file, the KB or the configuration (queries, ids, paths, headings, model
names, the title) can never become markup.  The output depends only on its inputs
(no generation time), so the same run gives the same bytes.

The page fits a 1280-pixel window: the per-query table has a fixed layout, long
ids and paths wrap, and each query's hits fold into a ``<details>`` element (no
JavaScript), so a row is a few lines tall.  The plots are drawn by
:mod:`.html_plots`.

matplotlib and Jinja2 are the ``plots`` extra (``pip install "pytest-groove[plots]"``),
imported only when a report is written.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.compare import (
    UNCHANGED_EPSILON,
    Comparison,
    format_delta,
    largest_k,
)
from pytest_groove.evaluation.gate.verdict import RunVerdicts, comparison_verdicts
from pytest_groove.evaluation.reports.headline import (
    Headline,
    ReportGate,
    headline,
    headline_of,
)
from pytest_groove.evaluation.reports.html_plots import (
    MAX_DELTA_ROWS,
    NO_CJK_FONT_NOTE,
    PLOTS_EXTRA,
    Plotter,
    Trend,
    delta_figure,
    delta_rows,
    has_cjk,
    missing_extra_message,
    trend_figure,
    trend_runs,
)
from pytest_groove.evaluation.reports.text_report import describe_corpus
from pytest_groove.evaluation.reports.verdict_html import (
    VERDICT_CSS,
    VerdictCell,
    moved_rows,
    verdict_banner,
    verdict_cell,
)
from pytest_groove.evaluation.runs.coverage import Coverage
from pytest_groove.evaluation.runs.record import QueryResult, RunRecord, format_timestamp
from pytest_groove.scoring.metric_table import (
    RECALL,
    Metric,
    MetricKind,
    all_metrics,
)
from pytest_groove.scoring.metrics import entry_satisfied, expected_ranks
from pytest_groove.scoring.significance import with_p_value
from pytest_groove.search.hits import grouping_note, hit_label

if TYPE_CHECKING:
    from pytest_groove.evaluation.reports.formats import ReportInputs

__all__ = [
    "MAX_DELTA_ROWS",
    "PLOTS_EXTRA",
    "check_html_available",
    "render_html_report",
    "write_html_report",
    "write_report",
]

#: folders, never-returned documents and displacers the coverage section lists
COVERAGE_ROWS = 10
#: what the ``plots`` extra brings for this report: (import name, name in messages)
_EXTRA_PACKAGES = (("matplotlib", "matplotlib"), ("jinja2", "Jinja2"))


def check_html_available(flag: str) -> None:
    """Fail fast, before any search runs, when the report could not be drawn."""
    for module, name in _EXTRA_PACKAGES:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken or stubbed-out entry in sys.modules
            found = False
        if not found:
            raise GrooveError(missing_extra_message(name, flag))


# --------------------------------------------------------------------------- template


def _escape(value: object) -> Any:
    """The page's one escaping boundary: every ``{{ value }}`` of the template.

    ``html.escape`` with quotes (as the report always wrote its text); a macro's
    output is already escaped markup and passes as it is -- known by the ``__html__``
    protocol, not by class: a second import of markupsafe (a process that reloaded
    it) makes a second ``Markup`` class, and by class the markup of a macro
    rendered through the first was escaped again, printing its tags as text.
    """
    from markupsafe import Markup

    html = getattr(value, "__html__", None)
    if callable(html):
        return Markup(html())
    return Markup(escape("" if value is None else str(value), quote=True))


@functools.cache
def _template() -> Any:
    """The report template (Jinja2 imported here: it is part of the plots extra)."""
    try:
        import jinja2
    except ImportError:
        raise GrooveError(missing_extra_message("Jinja2")) from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_groove.evaluation.reports", "templates"),
        autoescape=True,
        finalize=_escape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("report.html.j2")


# --------------------------------------------------------------------------- values


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "n/a"


def _when(run: RunRecord) -> str:
    return format_timestamp(run.timestamp)


@dataclass(frozen=True)
class _DeltaCell:
    #: the colour class the text report's colours map to
    css: str
    #: the text report's wording ("↑ 0.200", "—", "n/a") without its column padding
    text: str


def _delta_class(delta: float, threshold: float) -> str:
    """The colour the text report gives this delta (green / red beyond the threshold)."""
    if not math.isfinite(delta) or abs(delta) < UNCHANGED_EPSILON:
        return "same"
    if delta > threshold:
        return "up"
    if delta < -threshold:
        return "down"
    return "moved"


def _delta_cell(delta: float | None, threshold: float) -> _DeltaCell | None:
    if delta is None:
        return None
    text = format_delta(delta, threshold, color=False).strip()[1:-1].strip()
    return _DeltaCell(_delta_class(delta, threshold), text)


def _entry_label(path: str, heading: str | None) -> str:
    return hit_label(path, heading)


def _fingerprint_rows(run: RunRecord) -> list[tuple[str, str]]:
    fp = run.fingerprint
    rows = [
        ("model", fp.model),
        ("reranker", fp.reranker or "none"),
        ("limit", str(fp.limit)),
        ("k values", ", ".join(str(k) for k in fp.k_values)),
        ("queries", str(run.aggregate.query_count)),
    ]
    if run.corpus is not None:
        rows.append(("corpus", describe_corpus(run)))
    if fp.retriever is not None:
        rows.append(("retriever", fp.retriever))
    summary = [f"golden {fp.golden_hash[:12]}", f"metric_version {fp.metric_version}"]
    # a team's own retriever ran no query compiler: show only what the searcher used
    if fp.retriever is None:
        summary.append(f"fts_query_version {fp.fts_query_version}")
    optional = {
        "mmr": fp.mmr,
        "parent_retriever": fp.parent_retriever,
        "fusion": fp.fusion,
        "context": fp.context,
    }
    for name, values in optional.items():
        if values is not None and fp.retriever is None:
            inner = ", ".join(f"{key}={values[key]}" for key in sorted(values))
            summary.append(f"{name}({inner})")
    rows.append(("fingerprint", "; ".join(summary)))
    return rows


def _header(run: RunRecord, comparison: Comparison, title: str) -> dict[str, Any]:
    baseline = comparison.baseline
    return {
        "title": title,
        "when": _when(run),
        "fingerprint": _fingerprint_rows(run),
        "baseline_when": None if baseline is None else _when(baseline),
        "reason": None if comparison.compatible else comparison.reason,
        "corpus_phrase": comparison.corpus_phrase if comparison.corpus_changed else None,
    }


@dataclass(frozen=True)
class _AggregateRow:
    label: str
    value: str
    baseline: str
    delta: _DeltaCell | None
    regressed: bool


def _with_p(cell: _DeltaCell | None, comparison: Comparison, metric: Metric) -> _DeltaCell | None:
    """The delta with its sign-flip p-value, as the text report shows it."""
    if cell is None:
        return None
    shown = with_p_value(f"({cell.text})", comparison.p_values, metric)
    return _DeltaCell(cell.css, shown[1:-1])


def _aggregate(run: RunRecord, comparison: Comparison) -> dict[str, Any]:
    baseline = comparison.baseline if comparison.compatible else None
    diff = comparison.diff
    limits = comparison.limits
    regressions = set(comparison.regressions)
    rows = [
        _AggregateRow(
            label=metric.label,
            value=_num(metric.of_aggregate(run.aggregate)),
            baseline="" if baseline is None else _num(metric.of_aggregate(baseline.aggregate)),
            delta=_with_p(
                _delta_cell(
                    None if diff is None else metric.of_aggregate(diff),
                    limits.for_metric(metric.threshold_key),
                ),
                comparison,
                metric,
            ),
            regressed=metric.label in regressions,
        )
        for metric in all_metrics(run.fingerprint.k_values, run.fingerprint.metrics or ())
    ]
    return {
        "compared": baseline is not None,
        "rows": rows,
        "limits": limits.describe(),
        "regressions": ", ".join(comparison.regressions),
    }


def _trend(plotter: Plotter, run: RunRecord, trend: Trend) -> dict[str, Any]:
    note = (
        f"{len(trend.runs)} run(s) with this fingerprint, oldest to newest; "
        "the red point is this run"
    )
    if trend.baseline_index is not None:
        note += ", the ringed point the baseline"
    note += "."
    if trend.left_out:
        note += f" {trend.left_out} stored run(s) with another fingerprint left out."
    if trend.projected:
        note += " Stored runs are restricted to the queries of this subset run."
    plots = [
        (metric.label, plotter.png(trend_figure(plotter, metric, trend.runs, trend.baseline_index)))
        for metric in all_metrics(run.fingerprint.k_values)
    ]
    return {"note": note, "plots": plots}


def _deltas(plotter: Plotter, comparison: Comparison) -> dict[str, str] | None:
    rows, available = delta_rows(comparison)
    if not rows:
        return None
    k = comparison.queries[0].k
    note = f"Now minus baseline, per query, at k={k}."
    if available > len(rows):
        note += f" Showing the {len(rows)} of {available} queries that moved most."
    png = plotter.png(delta_figure(plotter, rows, k))
    if plotter.cjk_family is None and any(has_cjk(row.id) for row in rows):
        note += " " + NO_CJK_FONT_NOTE
    return {"note": note, "png": png}


@dataclass(frozen=True)
class _Hit:
    rank: int
    wanted: bool
    label: str
    score: str


@dataclass(frozen=True)
class _Hits:
    """A query's top hits, folded: the summary says where the first expected one is."""

    shown: list[_Hit]
    more: int
    #: the top hit as the hits are spelled, ``path#heading`` (``path`` without one)
    top_label: str
    top_rank: int
    first_wanted: int | None
    #: why the scores do not descend, when document-first grouping reordered them
    grouping: str | None = None


@dataclass(frozen=True)
class _MetricRow:
    """One per-k metric of a query: its name without ``@k`` and its value at each k."""

    name: str
    values: list[str]


@dataclass(frozen=True)
class _Metrics:
    """Every metric the run measured, for one query: a grid of the per-k metrics (a
    column per k) and the metrics measured once (RR, AP, R-prec) as ``name value``."""

    per_k: list[_MetricRow]
    single: list[tuple[str, str]]


def _hits(result: QueryResult, k: int, grouped: bool) -> _Hits | None:
    shown = result.top_k[:k]
    if not shown:
        return None
    hits = [
        _Hit(
            rank=hit.rank,
            wanted=any(entry_satisfied(e, hit.path, hit.heading) for e in result.expected),
            label=_entry_label(hit.path, hit.heading),
            score=_num(hit.score, 4),
        )
        for hit in shown
    ]
    first_wanted = next((hit.rank for hit in hits if hit.wanted), None)
    more = len(result.top_k) - len(shown)
    top = shown[0]
    grouping = grouping_note([hit.score for hit in shown], grouped)
    return _Hits(hits, more, _entry_label(top.path, top.heading), top.rank, first_wanted, grouping)


def _metric_name(kind: MetricKind) -> str:
    """A per-k metric's row name: its per-query label without the ``@k``."""
    return kind.query_label.replace("@{k}", "")


def _metrics(result: QueryResult, ks: Sequence[int], measured: Sequence[MetricKind]) -> _Metrics:
    values = result.metrics
    return _Metrics(
        per_k=[
            _MetricRow(_metric_name(kind), [_num(Metric(kind, k).of_query(values), 2) for k in ks])
            for kind in measured
            if kind.per_k
        ],
        single=[
            (kind.query_label, _num(Metric(kind).of_query(values), 2))
            for kind in measured
            if not kind.per_k
        ],
    )


#: width of the metrics grid's name column and of each of its k columns (rem)
_METRIC_NAME_REM = 4.2
_METRIC_VALUE_REM = 2.6


@dataclass(frozen=True)
class _QueryRow:
    position: int
    id: str
    query: str
    #: (entry, "rank N" or "not retrieved") per expected entry
    expected: list[tuple[str, str]]
    first: str
    metrics: _Metrics
    delta: _DeltaCell | None
    hits: _Hits | None
    #: "miss", "regressed" or None
    css: str | None
    #: the verdict's column: pass / regressed / missed, and why
    verdict: VerdictCell | None = None


def _queries(run: RunRecord, comparison: Comparison, verdicts: RunVerdicts) -> dict[str, Any]:
    ks = run.fingerprint.k_values
    k = largest_k(ks)
    show_delta = comparison.compatible
    limits = comparison.limits
    recall = Metric(RECALL, k)
    # every metric the run measured: the default three and the optional ones it asked for
    measured = list(dict.fromkeys(m.kind for m in all_metrics(ks, run.fingerprint.metrics or ())))
    # (header, column width): fixed widths keep the table inside a 1280-pixel window
    # (a header breaks between words or before its "@k", never inside a word); the
    # metrics share one column, a small grid with a column per k
    columns = [("#", "2rem"), ("id", "9rem"), ("verdict", "6rem"), ("query", "9.4rem")]
    columns += [("expected", "10rem"), ("first expected rank", "4.4rem")]
    if show_delta:
        columns.append(("baseline rank", "4.4rem"))
    columns.append(("metrics", f"{_METRIC_NAME_REM + _METRIC_VALUE_REM * len(ks):g}rem"))
    if show_delta:
        columns.append((f"Δ {recall.query_label}", "4.4rem"))
    columns.append((f"top {k} hits", "auto"))
    rows = []
    # compare() gives one row per query of the run, in run order
    for position, (result, delta, verdict) in enumerate(
        zip(run.per_query, comparison.queries, verdicts.queries, strict=True), 1
    ):
        ranks = expected_ranks(result.expected, result.top_k)
        found = [r for r in ranks if r is not None]
        change = None if delta.previous is None else delta.now - delta.previous
        rows.append(
            _QueryRow(
                position=position,
                id=verdict.label,
                query=result.query,
                expected=[
                    (
                        _entry_label(entry.path, entry.heading),
                        "not retrieved" if rank is None else f"rank {rank}",
                    )
                    for entry, rank in zip(result.expected, ranks, strict=True)
                ],
                first=str(min(found)) if found else "—",
                metrics=_metrics(result, ks, measured),
                delta=_delta_cell(change, limits.for_metric(recall.threshold_key)),
                hits=_hits(result, k, bool(run.fingerprint.document_first)),
                css=VERDICT_CSS[verdict.verdict],
                verdict=verdict_cell(verdict, k),
            )
        )
    return {
        "k": k,
        "threshold": f"{limits.for_metric(recall.threshold_key):g}",
        # under --significance a regressed query fails no item (finish.py, lifecycle.py)
        "significance": None
        if run.gate is None or run.gate.significance is None
        else f"{run.gate.significance:g}",
        "columns": columns,
        "ks": list(ks),
        "compared": show_delta,
        "rows": rows,
    }


def _findings(run: RunRecord) -> list[tuple[str, str]]:
    return [
        (
            finding.path,
            ", ".join(
                f"{q.query_id} (not in top_k)"
                if q.rank_in_top_k is None
                else f"{q.query_id} (rank {q.rank_in_top_k})"
                for q in finding.quoted
            ),
        )
        for finding in run.findings
    ]


# --------------------------------------------------------------------------- entry point


def render_html_report(
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    *,
    title: str,
    verdicts: RunVerdicts | None = None,
    gate: ReportGate | None = None,
    said: Headline | None = None,
    coverage: Coverage | None = None,
) -> str:
    """The whole report as one HTML document (see the module docstring); ``said`` is
    the verdict it leads with (else made from ``gate``, else from what the run
    recorded of its gate)."""
    template = _template()
    judged = verdicts if verdicts is not None else comparison_verdicts(comparison)
    if said is None:
        said = _headline(run, comparison, history, judged, title, gate)
    trend = trend_runs(run, comparison, history)
    with Plotter() as plotter:
        trend_values = _trend(plotter, run, trend)
        deltas = _deltas(plotter, comparison)
    known = gate.known_misses if gate is not None else frozenset()
    text: str = template.render(
        verdict=verdict_banner(said, judged, known),
        **_header(run, comparison, title),
        aggregate=_aggregate(run, comparison),
        trend=trend_values,
        deltas=deltas,
        queries=_queries(run, comparison, judged),
        moved=moved_rows(judged),
        findings=_findings(run),
        coverage=coverage,
        coverage_rows=COVERAGE_ROWS,
    )
    return text


def _headline(
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    verdicts: RunVerdicts,
    title: str,
    gate: ReportGate | None,
) -> Headline:
    """The verdict of a run drawn without the judge's decision at hand: what the run
    recorded of its gate (the regression gate's failures)."""
    if gate is None:
        failed = () if run.gate is None else run.gate.failed
        gate = ReportGate(applied=run.gate is not None, failures=failed)
    return headline_of(run, comparison, verdicts, gate, prog=title.removesuffix(" report"))


def write_html_report(
    path: Path,
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    *,
    title: str,
    verdicts: RunVerdicts | None = None,
    gate: ReportGate | None = None,
    said: Headline | None = None,
    coverage: Coverage | None = None,
) -> None:
    """Write :func:`render_html_report` to ``path`` (UTF-8; parent directories created).

    ``history`` is the stored runs (any order; this run may or may not be among
    them).  Raises :class:`GrooveError` when matplotlib or Jinja2 is missing and
    :class:`OSError` when the file cannot be written.
    """
    text = render_html_report(
        run,
        comparison,
        history,
        title=title,
        verdicts=verdicts,
        gate=gate,
        said=said,
        coverage=coverage,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_report(path: Path, inputs: ReportInputs) -> None:
    """The report table's hook (``formats.py``): :func:`write_html_report` of the run."""
    write_html_report(
        path,
        inputs.run,
        inputs.comparison,
        inputs.history,
        title=f"{inputs.prog} report",
        verdicts=inputs.verdicts,
        gate=inputs.gate,
        said=headline(inputs),
        coverage=inputs.coverage,
    )
