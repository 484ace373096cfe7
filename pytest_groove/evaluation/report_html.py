"""The optional HTML report (``groove eval --html PATH``, ``pytest --groove-html PATH``).

One self-contained file: inline CSS, every plot embedded as a base64 PNG, no
JavaScript, no external assets, so it can be attached to a CI run and opened
anywhere.  It shows the same run the text and JSON reports show, laid out for
reading rather than diffing:

- a header: title, run time, model, reranker, limit, corpus, fingerprint summary,
  and what the run was compared with;
- the aggregate table, with the diff against the baseline;
- one trend plot per aggregate metric across the history's runs with the same
  fingerprint (oldest to newest, this run last; other runs are left out and
  counted);
- a per-query delta chart (recall and nDCG at the largest k, now minus baseline),
  only when a comparable baseline exists;
- the per-query table: id, query, expected entries with their ranks, metrics and
  the top hits.

Every number comes from the :class:`~pytest_groove.evaluation.run.RunRecord` and
:class:`~pytest_groove.evaluation.compare.Comparison` the other reports use; this
module computes no metric and no aggregate diff of its own.  Every string that came
from a user (queries, ids, paths, headings, model names, the title) is HTML-escaped.
The output depends only on its inputs (no generation time), so the same run gives
the same bytes.

The page fits a 1280-pixel window: the per-query table has a fixed layout, long
ids and paths wrap, and each query's hits fold into a ``<details>`` element (no
JavaScript), so a row is a few lines tall.  Plots label queries by id.  Text in
Japanese, Chinese or Korean is drawn with a CJK-capable font when the system has
one (:func:`cjk_font_family`, e.g. Debian's ``fonts-noto-cjk``); without one the
report says that such labels may show as boxes and how to fix it.

matplotlib is an optional extra (``pip install "pytest-groove[plots]"``), imported
only when a report is written.  Plots are drawn on an Agg canvas directly, never
through pyplot: inside a user's pytest session, switching pyplot's backend would
close the figures their own tests hold.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib.util
import io
import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC
from html import escape
from pathlib import Path
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.compare import (
    UNCHANGED_EPSILON,
    Comparison,
    find_query,
    format_delta,
    largest_k,
    project_baseline,
)
from pytest_groove.evaluation.metrics import AggregateMetrics, entry_satisfied, expected_ranks
from pytest_groove.evaluation.run import QueryResult, RunRecord, format_timestamp

#: the install hint every missing-matplotlib message carries
PLOTS_EXTRA = 'pip install "pytest-groove[plots]"'
#: the delta chart shows at most this many queries (those that moved most)
MAX_DELTA_ROWS = 50
#: query ids longer than this are shortened on plot axes (the table has them whole)
AXIS_LABEL_CHARS = 32
#: at most this many run times are written under a trend plot's x axis
MAX_TREND_TICKS = 10

_UP = "#2e7d32"
_DOWN = "#c62828"
_FLAT = "#9e9e9e"
_LINE = "#1f5fa8"


def missing_matplotlib_message(flag: str | None = None) -> str:
    """The one-line error for a missing matplotlib, naming the option that asked for it."""
    what = flag if flag is not None else "the HTML report"
    drop = f" (or drop {flag})" if flag is not None else ""
    return (
        f"{what} needs matplotlib, which is an optional extra: install it with {PLOTS_EXTRA}{drop}"
    )


def check_html_available(flag: str) -> None:
    """Fail fast, before any search runs, when the report could not be drawn."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # a broken or stubbed-out entry in sys.modules
        found = False
    if not found:
        raise GrooveError(missing_matplotlib_message(flag))


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class _Metric:
    """One aggregate metric: its report name and how to read it from a run."""

    #: the name Comparison.regressions and the text report use ("recall@5", "MRR", ...)
    name: str
    value: Callable[[AggregateMetrics], float]
    #: None when the comparison has no diff
    delta: Callable[[Comparison], float | None]


def _recall(k: int) -> _Metric:
    return _Metric(
        f"recall@{k}",
        lambda agg: agg.recall_at_k.get(k, 0.0),
        lambda c: None if c.diff is None else c.diff.recall_at_k.get(k, 0.0),
    )


def _ndcg(k: int) -> _Metric:
    return _Metric(
        f"nDCG@{k}",
        lambda agg: agg.ndcg_at_k.get(k, 0.0),
        lambda c: None if c.diff is None else c.diff.ndcg_at_k.get(k, 0.0),
    )


_MRR = _Metric("MRR", lambda agg: agg.mrr, lambda c: None if c.diff is None else c.diff.mrr)


def _metrics(run: RunRecord) -> list[_Metric]:
    """recall@k for every k, MRR, nDCG@k for every k (the JSON report's aggregate)."""
    ks = run.fingerprint.k_values
    return [*(_recall(k) for k in ks), _MRR, *(_ndcg(k) for k in ks)]


# --------------------------------------------------------------------------- formatting


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "n/a"


def _when(run: RunRecord) -> str:
    return format_timestamp(run.timestamp, zulu=False)


def _delta_class(delta: float, threshold: float) -> str:
    """The colour the text report gives this delta (green / red beyond the threshold)."""
    if not math.isfinite(delta) or abs(delta) < UNCHANGED_EPSILON:
        return "same"
    if delta > threshold:
        return "up"
    if delta < -threshold:
        return "down"
    return "moved"


def _delta_cell(delta: float | None, threshold: float) -> str:
    if delta is None:
        return "<td></td>"
    # the text report's wording ("↑ 0.200", "—", "n/a") without its column padding
    text = format_delta(delta, threshold, color=False).strip()[1:-1].strip()
    return f'<td class="{_delta_class(delta, threshold)}">{_e(text)}</td>'


def _entry_label(path: str, heading: str | None) -> str:
    return path if heading is None else f"{path} # {heading}"


def _short(text: str) -> str:
    return text if len(text) <= AXIS_LABEL_CHARS else text[: AXIS_LABEL_CHARS - 1] + "…"


# --------------------------------------------------------------------------- fonts

#: family names of fonts that cover Japanese (and mostly Chinese and Korean), best first
CJK_FAMILIES = (
    "Noto Sans CJK JP",
    "Noto Sans JP",
    "Source Han Sans JP",
    "Source Han Sans",
    "IPAexGothic",
    "IPAGothic",
    "TakaoGothic",
    "VL Gothic",
    "Hiragino Sans",
    "Hiragino Kaku Gothic ProN",
    "Yu Gothic",
    "Meiryo",
    "MS Gothic",
    "Noto Sans CJK SC",
    "Noto Sans CJK KR",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Microsoft YaHei",
)
#: font file names that announce CJK coverage (matched when the font cache is stale)
_CJK_FILE = re.compile(r"cjk|ipa|takao|wqy|droidsansfallback|sourcehansans|notosansjp", re.I)
#: Hiragana, Katakana, CJK ideographs, Hangul and their punctuation and forms
_CJK_TEXT = re.compile(
    "[\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
#: what the report says when CJK labels cannot be drawn
NO_CJK_FONT_NOTE = (
    "No font with Japanese, Chinese or Korean glyphs was found, so such text in the plots "
    "may show as boxes (the tables are unaffected). Install one, for example Debian's "
    "fonts-noto-cjk (apt-get install fonts-noto-cjk), and write the report again."
)


def has_cjk(text: str) -> bool:
    return _CJK_TEXT.search(text) is not None


@functools.cache
def cjk_font_family() -> str | None:
    """The family name of an installed CJK-capable font matplotlib can use, or None.

    Looks in matplotlib's font list first; that list is cached on disk and misses
    fonts installed after it was built, so the system's font files are scanned
    next and a match is added to it.
    """
    from matplotlib import font_manager

    manager = font_manager.fontManager
    known = {entry.name for entry in manager.ttflist}
    for family in CJK_FAMILIES:
        if family in known:
            return family
    try:
        files = font_manager.findSystemFonts()
    except (OSError, RuntimeError, ValueError):  # fc-list missing or unreadable dirs
        return None
    for path in sorted(files):
        if not _CJK_FILE.search(Path(path).name):
            continue
        try:
            manager.addfont(path)
        except (OSError, RuntimeError, ValueError):
            continue
    known = {entry.name for entry in manager.ttflist}
    return next((family for family in CJK_FAMILIES if family in known), None)


# --------------------------------------------------------------------------- plots


def _matplotlib() -> tuple[Any, Any, Any]:
    """(matplotlib, Figure, FigureCanvasAgg), or the missing-extra error."""
    try:
        import matplotlib
        import matplotlib.style
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise GrooveError(missing_matplotlib_message()) from None
    return matplotlib, Figure, FigureCanvasAgg


class _Plotter:
    """Draws figures to base64 PNG under a fixed style (the user's matplotlibrc ignored).

    Use as a context manager: the style is set once for every figure drawn inside.
    """

    def __init__(self) -> None:
        self._mpl, self._figure, self._canvas = _matplotlib()
        self._stack = contextlib.ExitStack()
        #: a CJK-capable family used for glyphs the default font lacks (None: none found)
        self.cjk_family = cjk_font_family()

    def __enter__(self) -> _Plotter:
        mpl = self._mpl
        self._stack.enter_context(mpl.style.context("default"))
        rc: dict[str, Any] = {"text.parse_math": False}  # ids are text, never mathtext
        if self.cjk_family is not None:
            # per-glyph fallback (matplotlib >= 3.6) works across the families named in
            # font.family, not within a generic one: Latin from the default font, the
            # rest from the CJK one
            rc["font.family"] = [mpl.rcParamsDefault["font.sans-serif"][0], self.cjk_family]
        self._stack.enter_context(mpl.rc_context(rc))
        self._stack.enter_context(warnings.catch_warnings())
        # a query id in a script the default font lacks draws boxes, not a warning
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def new(self, width: float, height: float) -> Any:
        fig = self._figure(figsize=(width, height), dpi=100)
        self._canvas(fig)
        return fig

    def png(self, fig: Any) -> str:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
        return base64.b64encode(buffer.getvalue()).decode("ascii")


def _trend_figure(
    plotter: _Plotter,
    metric: _Metric,
    runs: Sequence[RunRecord],
    baseline_index: int | None,
) -> Any:
    fig = plotter.new(3.9, 2.4)
    ax = fig.subplots()
    xs = list(range(len(runs)))
    ys = [metric.value(r.aggregate) for r in runs]
    ax.plot(xs, ys, color=_LINE, marker="o", markersize=4, linewidth=1.5)
    if baseline_index is not None:
        ax.plot(
            [baseline_index],
            [ys[baseline_index]],
            linestyle="none",
            marker="o",
            markersize=11,
            markerfacecolor="none",
            markeredgecolor="black",
        )
    ax.plot(
        [xs[-1]],
        [ys[-1]],
        linestyle="none",
        marker="o",
        markersize=7,
        color=_DOWN,
    )
    step = max(1, math.ceil(len(runs) / MAX_TREND_TICKS))
    ticks = sorted({*range(0, len(runs), step), len(runs) - 1})
    labels = [runs[i].timestamp.astimezone(UTC).strftime("%m-%d %H:%M:%S") for i in ticks]
    ax.set_xticks(ticks, labels, rotation=30, ha="right", fontsize=7)
    ax.set_xlim(-0.5, len(runs) - 0.5)
    ax.set_ylim(-0.03, 1.03)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(metric.name, fontsize=10)
    # fixed margins, not tight_layout: measuring every label costs a second draw
    fig.subplots_adjust(left=0.16, right=0.97, top=0.89, bottom=0.27)
    return fig


@dataclass(frozen=True)
class _DeltaRow:
    id: str
    recall: float
    ndcg: float


def _delta_rows(comparison: Comparison) -> tuple[list[_DeltaRow], int]:
    """(rows shown, rows available): queries the baseline also has, in run order.

    recall's delta is read from the comparison's per-query rows; nDCG at the same k
    from both runs' stored per-query metrics.
    """
    baseline = comparison.baseline
    if baseline is None or not comparison.compatible:
        return [], 0
    rows: list[_DeltaRow] = []
    for result, delta in zip(comparison.run.per_query, comparison.queries, strict=True):
        before = find_query(baseline, result)
        if delta.previous is None or before is None:
            continue
        rows.append(
            _DeltaRow(
                id=result.id,
                recall=delta.now - delta.previous,
                ndcg=result.metrics.ndcg_at_k.get(delta.k, 0.0)
                - before.metrics.ndcg_at_k.get(delta.k, 0.0),
            )
        )
    available = len(rows)
    if available > MAX_DELTA_ROWS:

        def moved(item: tuple[int, _DeltaRow]) -> float:
            size = max(abs(item[1].recall), abs(item[1].ndcg))
            return size if math.isfinite(size) else 0.0

        kept = sorted(enumerate(rows), key=lambda item: (-moved(item), item[0]))
        rows = [row for _, row in sorted(kept[:MAX_DELTA_ROWS], key=lambda item: item[0])]
    return rows, available


def _bar_colour(value: float) -> str:
    if not math.isfinite(value) or abs(value) < UNCHANGED_EPSILON:
        return _FLAT
    return _UP if value > 0 else _DOWN


def _delta_figure(plotter: _Plotter, rows: Sequence[_DeltaRow], k: int) -> Any:
    height = 0.9 + 0.24 * len(rows)
    fig = plotter.new(8.0, height)
    axes = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(rows)))
    panels = ((f"Δ recall@{k}", [r.recall for r in rows]), (f"Δ nDCG@{k}", [r.ndcg for r in rows]))
    for ax, (label, values) in zip(axes, panels, strict=True):
        shown = [v if math.isfinite(v) else 0.0 for v in values]
        ax.barh(ys, shown, color=[_bar_colour(v) for v in values], height=0.7)
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_xlim(-1.05, 1.05)
        ax.set_title(label, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    axes[0].set_yticks(ys, [_short(r.id) for r in rows], fontsize=7)
    axes[0].set_ylim(len(rows) - 0.5, -0.5)  # first query on top
    # ids are at most AXIS_LABEL_CHARS long: a fixed 2-inch label margin fits them
    fig.subplots_adjust(
        left=0.25, right=0.98, wspace=0.08, top=1 - 0.35 / height, bottom=0.4 / height
    )
    return fig


# --------------------------------------------------------------------------- trend runs


@dataclass(frozen=True)
class _Trend:
    #: compatible runs, oldest first, this run last
    runs: list[RunRecord]
    #: stored runs with another fingerprint, left out
    left_out: int
    #: index of the comparison's baseline in ``runs`` (None = no compatible baseline)
    baseline_index: int | None
    #: this run covers only some golden queries; stored runs were projected onto them
    projected: bool


def _trend(run: RunRecord, comparison: Comparison, history: Sequence[RunRecord]) -> _Trend:
    """The runs to plot: the history's runs with this run's fingerprint, plus this run.

    A run that is already in ``history`` (same time, same fingerprint) is not counted
    twice.  For a subset run, stored runs are restricted to the same queries and
    re-averaged (as its baseline is), so the trend compares like with like.
    """
    ids = [q.id for q in run.per_query]
    stored = [
        r
        for r in history
        if not (r.timestamp == run.timestamp and r.fingerprint == run.fingerprint)
    ]
    compatible = [r for r in stored if r.fingerprint == run.fingerprint]
    projected = False
    same: list[RunRecord] = []
    for r in compatible:
        if [q.id for q in r.per_query] != ids:
            r = project_baseline(r, run.per_query)
            projected = True
        same.append(r)
    # oldest first; a stable sort keeps the history's order for equal times
    runs = [*sorted(same, key=lambda r: r.timestamp), run]
    baseline_index = None
    baseline = comparison.baseline
    if comparison.compatible and baseline is not None:
        baseline_index = next(
            (i for i, r in enumerate(runs[:-1]) if r.timestamp == baseline.timestamp), None
        )
    return _Trend(runs, len(stored) - len(compatible), baseline_index, projected)


# --------------------------------------------------------------------------- HTML parts

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans CJK JP",
       "Hiragino Sans", "Yu Gothic", "Noto Sans JP", sans-serif;
       max-width: 1240px; margin: 1rem auto; padding: 0 1rem; box-sizing: border-box;
       color: #212121; line-height: 1.4; font-size: 14px; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.4rem; text-align: left;
         vertical-align: top; overflow-wrap: anywhere; }
table.queries { table-layout: fixed; width: 100%; }
table.queries th { font-size: 0.85em; overflow-wrap: break-word; }
table.queries ul { margin: 0; padding-left: 1rem; }
details summary { cursor: pointer; }
th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta th { background: none; border: none; padding-right: 1rem; color: #616161; }
.meta td { border: none; }
.note { color: #616161; }
.warn { color: #8d6e00; }
.up { color: #2e7d32; font-weight: 600; }
.down { color: #c62828; font-weight: 600; }
.moved { color: #757575; }
.same { color: #9e9e9e; }
tr.miss td:first-child { border-left: 4px solid #c62828; }
tr.regressed td:first-child { border-left: 4px solid #ef6c00; }
.plots { display: flex; flex-wrap: wrap; gap: 0.5rem; }
.plots img { width: 390px; }
img { max-width: 100%; }
ol.hits { margin: 0; padding-left: 1.6rem; }
.expected-hit { font-weight: 600; }
code { font-size: 0.9em; }
"""


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
        rows.append(("corpus", f"{run.corpus.documents} docs / {run.corpus.chunks} chunks"))
    if fp.retriever is not None:
        rows.append(("retriever", fp.retriever))
    summary = [
        f"golden {fp.golden_hash[:12]}",
        f"metric_version {fp.metric_version}",
        f"fts_query_version {fp.fts_query_version}",
    ]
    optional = {
        "mmr": fp.mmr,
        "parent_retriever": fp.parent_retriever,
        "fusion": fp.fusion,
        "context": fp.context,
    }
    for name, values in optional.items():
        if values is not None:
            inner = ", ".join(f"{key}={values[key]}" for key in sorted(values))
            summary.append(f"{name}({inner})")
    rows.append(("fingerprint", "; ".join(summary)))
    return rows


def _header(run: RunRecord, comparison: Comparison, title: str) -> list[str]:
    out = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">run of {_e(_when(run))}</p>',
        '<table class="meta">',
    ]
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in _fingerprint_rows(run)]
    out.append("</table>")
    baseline = comparison.baseline
    if baseline is None:
        out.append('<p class="note">No previous run to compare with.</p>')
    elif not comparison.compatible:
        out.append(
            f'<p class="warn">⚠️ {_e(comparison.reason)}, diff disabled '
            f"(newest stored run: {_e(_when(baseline))}).</p>"
        )
    else:
        out.append(f"<p>Compared with the run of {_e(_when(baseline))}.</p>")
    if comparison.corpus_changed:
        out.append(
            f'<p class="warn">⚠️ corpus changed since last run ({_e(comparison.corpus_phrase)}): '
            "a delta below may reflect that, not retrieval.</p>"
        )
    return out


def _aggregate_table(run: RunRecord, comparison: Comparison) -> list[str]:
    baseline = comparison.baseline if comparison.compatible else None
    limits = comparison.limits
    head = "<tr><th>metric</th><th>this run</th>"
    if baseline is not None:
        head += "<th>baseline</th><th>Δ</th>"
    out = ["<h2>Aggregate</h2>", "<table>", head + "</tr>"]
    regressions = set(comparison.regressions)
    for metric in _metrics(run):
        row = f"<td>{_e(metric.name)}</td><td class='num'>{_num(metric.value(run.aggregate))}</td>"
        if baseline is not None:
            row += f"<td class='num'>{_num(metric.value(baseline.aggregate))}</td>"
            row += _delta_cell(metric.delta(comparison), limits.for_metric(metric.name))
        css = ' class="regressed"' if metric.name in regressions else ""
        out.append(f"<tr{css}>{row}</tr>")
    out.append("</table>")
    if regressions:
        out.append(
            f'<p class="down">Regressed by more than {_e(limits.describe())}: '
            f"{_e(', '.join(comparison.regressions))}.</p>"
        )
    return out


def _trend_section(plotter: _Plotter, run: RunRecord, trend: _Trend) -> list[str]:
    out = ["<h2>Trend</h2>"]
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
    out.append(f'<p class="note">{_e(note)}</p>')
    out.append('<div class="plots">')
    for metric in _metrics(run):
        png = plotter.png(_trend_figure(plotter, metric, trend.runs, trend.baseline_index))
        out.append(f'<img alt="{_e(metric.name)} trend" src="data:image/png;base64,{png}">')
    out.append("</div>")
    return out


def _delta_section(plotter: _Plotter, comparison: Comparison) -> list[str]:
    rows, available = _delta_rows(comparison)
    if not rows:
        return []
    k = comparison.queries[0].k
    note = f"Now minus baseline, per query, at k={k}."
    if available > len(rows):
        note += f" Showing the {len(rows)} of {available} queries that moved most."
    png = plotter.png(_delta_figure(plotter, rows, k))
    if plotter.cjk_family is None and any(has_cjk(row.id) for row in rows):
        note += " " + NO_CJK_FONT_NOTE
    return [
        "<h2>Per-query change</h2>",
        f'<p class="note">{_e(note)}</p>',
        f'<img alt="per-query deltas" src="data:image/png;base64,{png}">',
    ]


def _expected_cell(result: QueryResult) -> tuple[str, str]:
    """(expected entries with their ranks, first expected rank)."""
    ranks = expected_ranks(result.expected, result.top_k)
    items = []
    for entry, rank in zip(result.expected, ranks, strict=True):
        where = "not retrieved" if rank is None else f"rank {rank}"
        items.append(
            f"<li><code>{_e(_entry_label(entry.path, entry.heading))}</code> "
            f'<span class="note">({where})</span></li>'
        )
    found = [r for r in ranks if r is not None]
    first = str(min(found)) if found else "—"
    return f"<ul>{''.join(items)}</ul>", first


def _hits_cell(result: QueryResult, k: int) -> str:
    """The top ``k`` hits, folded: the summary says where the first expected one is."""
    shown = result.top_k[:k]
    items = []
    first_wanted: int | None = None
    for hit in shown:
        wanted = any(entry_satisfied(e, hit.path, hit.heading) for e in result.expected)
        if wanted and first_wanted is None:
            first_wanted = hit.rank
        css = ' class="expected-hit"' if wanted else ""
        mark = "✓ " if wanted else ""
        items.append(
            f"<li value='{hit.rank}'{css}>{mark}<code>{_e(_entry_label(hit.path, hit.heading))}"
            f"</code> <span class='note'>{_num(hit.score, 4)}</span></li>"
        )
    if not items:
        return "—"
    more = len(result.top_k) - len(shown)
    tail = f'<div class="note">{more} more not shown</div>' if more > 0 else ""
    top = shown[0]
    summary = f"{len(shown)} hits, top: <code>{_e(top.path)}</code>"
    if first_wanted is not None and first_wanted != top.rank:
        summary += f" <span class='note'>(✓ at {first_wanted})</span>"
    elif first_wanted is not None:
        summary = "✓ " + summary
    return (
        f"<details><summary>{summary}</summary>"
        f"<ol class='hits'>{''.join(items)}</ol>{tail}</details>"
    )


def _query_table(run: RunRecord, comparison: Comparison) -> list[str]:
    ks = run.fingerprint.k_values
    k = largest_k(ks)
    show_delta = comparison.compatible
    limits = comparison.limits
    # (header, column width): fixed widths keep the table inside a 1280-pixel window
    columns = [("#", "2rem"), ("id", "9rem"), ("query", "13.4rem"), ("expected", "12rem")]
    columns.append(("first expected rank", "4.6rem"))
    columns += [(f"recall@{x}", "3.4rem") for x in ks]
    columns.append(("RR", "3rem"))
    if ks:
        columns.append((f"nDCG@{k}", "3.4rem"))
    if show_delta:
        columns.append((f"Δ recall@{k}", "4rem"))
    columns.append((f"top {k} hits", "auto"))
    out = [
        "<h2>Per query</h2>",
        '<p class="note">Rows marked red missed (nothing expected in the top '
        f"{k}); orange regressed by more than {limits.for_metric(f'recall@{k}'):g}. "
        "Open a row's hits to see them all.</p>",
        '<table class="queries">',
        "<colgroup>" + "".join(f'<col style="width: {w}">' for _, w in columns) + "</colgroup>",
        "<tr>" + "".join(f"<th>{_e(h)}</th>" for h, _ in columns) + "</tr>",
    ]
    # compare() gives one row per query of the run, in run order
    for position, (result, delta) in enumerate(
        zip(run.per_query, comparison.queries, strict=True), 1
    ):
        expected, first = _expected_cell(result)
        m = result.metrics
        cells = [
            f"<td class='num'>{position}</td>",
            f"<td><code>{_e(result.id)}</code></td>",
            f"<td>{_e(result.query)}</td>",
            f"<td>{expected}</td>",
            f"<td class='num'>{first}</td>",
        ]
        cells += [f"<td class='num'>{_num(m.recall_at_k.get(x, 0.0), 2)}</td>" for x in ks]
        cells.append(f"<td class='num'>{_num(m.reciprocal_rank, 2)}</td>")
        if ks:
            cells.append(f"<td class='num'>{_num(m.ndcg_at_k.get(k, 0.0), 2)}</td>")
        if show_delta:
            change = None if delta.previous is None else delta.now - delta.previous
            cells.append(_delta_cell(change, limits.for_metric(f"recall@{k}")))
        cells.append(f"<td>{_hits_cell(result, k)}</td>")
        css = ""
        if delta.miss:
            css = ' class="miss"'
        elif delta.regressed:
            css = ' class="regressed"'
        out.append(f"<tr{css}>{''.join(cells)}</tr>")
    out.append("</table>")
    return out


def _findings_section(run: RunRecord) -> list[str]:
    if not run.findings:
        return []
    out = [
        "<h2>Documents that quote the golden set</h2>",
        '<p class="note">These documents quote several golden queries verbatim: either '
        "they leaked into the corpus or they belong in <code>expected</code>.</p>",
        "<ul>",
    ]
    for finding in run.findings:
        quoted = ", ".join(
            f"{q.query_id} (not in top_k)"
            if q.rank_in_top_k is None
            else f"{q.query_id} (rank {q.rank_in_top_k})"
            for q in finding.quoted
        )
        out.append(f"<li><code>{_e(finding.path)}</code>: {_e(quoted)}</li>")
    out.append("</ul>")
    return out


# --------------------------------------------------------------------------- entry point


def render_html_report(
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    *,
    title: str,
) -> str:
    """The whole report as one HTML document (see the module docstring)."""
    trend = _trend(run, comparison, history)
    body: list[str] = []
    body += _header(run, comparison, title)
    body += _aggregate_table(run, comparison)
    with _Plotter() as plotter:
        body += _trend_section(plotter, run, trend)
        body += _delta_section(plotter, comparison)
    body += _query_table(run, comparison)
    body += _findings_section(run)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)} — {_e(_when(run))}</title>",
            f"<style>{_CSS}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def write_html_report(
    path: Path,
    run: RunRecord,
    comparison: Comparison,
    history: Sequence[RunRecord],
    *,
    title: str,
) -> None:
    """Write :func:`render_html_report` to ``path`` (UTF-8; parent directories created).

    ``history`` is the stored runs (any order; this run may or may not be among
    them).  Raises :class:`GrooveError` when matplotlib is missing and
    :class:`OSError` when the file cannot be written.
    """
    text = render_html_report(run, comparison, history, title=title)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
