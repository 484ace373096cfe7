"""The HTML report's plots: matplotlib on an Agg canvas, each figure a base64 PNG.

Plots are drawn on an Agg canvas directly, never through pyplot: inside a user's
pytest session, switching pyplot's backend would close the figures their own tests
hold.  Every figure is drawn under matplotlib's default style (the user's
matplotlibrc ignored), so the same run gives the same bytes.

Text in Japanese, Chinese or Korean is drawn with a CJK-capable font when the
system has one (:func:`cjk_font_family`, e.g. Debian's ``fonts-noto-cjk``); without
one the report says that such labels may show as boxes and how to fix it
(:data:`NO_CJK_FONT_NOTE`).  Plots label queries by id.

matplotlib is the ``plots`` extra, imported only when a report is drawn.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from pytest_groove.errors import GrooveError
from pytest_groove.evaluation.gate.compare import (
    UNCHANGED_EPSILON,
    Comparison,
    find_query,
    project_baseline,
)
from pytest_groove.evaluation.gate.query_names import report_names
from pytest_groove.evaluation.runs.record import RunRecord
from pytest_groove.scoring.metric_table import NDCG, RECALL, Metric

#: the install hint every missing-extra message carries
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


def missing_extra_message(package: str, flag: str | None = None) -> str:
    """The one-line error for a missing ``plots`` package, naming the option that asked."""
    what = flag if flag is not None else "the HTML report"
    drop = f" (or drop {flag})" if flag is not None else ""
    return (
        f"{what} needs {package}, which is an optional extra: install it with {PLOTS_EXTRA}{drop}"
    )


def _short(text: str) -> str:
    """``text`` cut to fit an axis, its end kept: a name made unique by a suffix (the
    node id of a query sharing its id, ``…-939e472e``) stays told apart."""
    if len(text) <= AXIS_LABEL_CHARS:
        return text
    return text[: AXIS_LABEL_CHARS - 10] + "…" + text[-9:]


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
        raise GrooveError(missing_extra_message("matplotlib")) from None
    return matplotlib, Figure, FigureCanvasAgg


class Plotter:
    """Draws figures to base64 PNG under a fixed style (the user's matplotlibrc ignored).

    Use as a context manager: the style is set once for every figure drawn inside.
    """

    def __init__(self) -> None:
        self._mpl, self._figure, self._canvas = _matplotlib()
        self._stack = contextlib.ExitStack()
        #: a CJK-capable family used for glyphs the default font lacks (None: none found)
        self.cjk_family = cjk_font_family()

    def __enter__(self) -> Plotter:
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


def trend_figure(
    plotter: Plotter, metric: Metric, runs: Sequence[RunRecord], baseline_index: int | None
) -> Any:
    """One aggregate metric over ``runs`` (oldest first): this run red, the baseline ringed."""
    fig = plotter.new(3.9, 2.4)
    ax = fig.subplots()
    xs = list(range(len(runs)))
    ys = [metric.of_aggregate(r.aggregate) for r in runs]
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
    ax.set_title(metric.label, fontsize=10)
    # fixed margins, not tight_layout: measuring every label costs a second draw
    fig.subplots_adjust(left=0.16, right=0.97, top=0.89, bottom=0.27)
    return fig


@dataclass(frozen=True)
class DeltaRow:
    id: str
    recall: float
    ndcg: float


def delta_rows(comparison: Comparison) -> tuple[list[DeltaRow], int]:
    """(rows shown, rows available): queries the baseline also has, in run order.

    recall's delta is read from the comparison's per-query rows; nDCG at the same k
    from both runs' stored per-query metrics.
    """
    baseline = comparison.baseline
    if baseline is None or not comparison.compatible:
        return [], 0
    rows: list[DeltaRow] = []
    # two queries sharing an id are named apart, as in every report
    names = report_names(comparison.run.per_query)
    for result, delta, name in zip(
        comparison.run.per_query, comparison.queries, names, strict=True
    ):
        before = find_query(baseline, result)
        if delta.previous is None or before is None:
            continue
        rows.append(
            DeltaRow(
                id=name,
                recall=delta.now - delta.previous,
                ndcg=Metric(NDCG, delta.k).of_query(result.metrics)
                - Metric(NDCG, delta.k).of_query(before.metrics),
            )
        )
    available = len(rows)
    if available > MAX_DELTA_ROWS:

        def moved(item: tuple[int, DeltaRow]) -> float:
            size = max(abs(item[1].recall), abs(item[1].ndcg))
            return size if math.isfinite(size) else 0.0

        kept = sorted(enumerate(rows), key=lambda item: (-moved(item), item[0]))
        rows = [row for _, row in sorted(kept[:MAX_DELTA_ROWS], key=lambda item: item[0])]
    return rows, available


def _bar_colour(value: float) -> str:
    if not math.isfinite(value) or abs(value) < UNCHANGED_EPSILON:
        return _FLAT
    return _UP if value > 0 else _DOWN


def delta_figure(plotter: Plotter, rows: Sequence[DeltaRow], k: int) -> Any:
    height = 0.9 + 0.24 * len(rows)
    fig = plotter.new(8.0, height)
    axes = fig.subplots(1, 2, sharey=True)
    ys = list(range(len(rows)))
    panels = (
        (f"Δ {Metric(RECALL, k).label}", [r.recall for r in rows]),
        (f"Δ {Metric(NDCG, k).label}", [r.ndcg for r in rows]),
    )
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
class Trend:
    #: compatible runs, oldest first, this run last
    runs: list[RunRecord]
    #: stored runs with another fingerprint, left out
    left_out: int
    #: index of the comparison's baseline in ``runs`` (None = no compatible baseline)
    baseline_index: int | None
    #: this run covers only some golden queries; stored runs were projected onto them
    projected: bool


def trend_runs(run: RunRecord, comparison: Comparison, history: Sequence[RunRecord]) -> Trend:
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
    return Trend(runs, len(stored) - len(compatible), baseline_index, projected)
