"""Optional heatmap of the grid: rrf_k against the bm25 heading weight.

Each cell is the in-sample mean change of the primary metric (nDCG at k = 5,
:data:`~pytest_groove.tune.decide.PRIMARY`) over the effective queries against the
built-in default, with the context and content weights held at the refit's
values (so the refit is always on the map).  It is a picture of the landscape the
selection walked, not evidence: the held-out numbers in the report are what the
decision uses.

matplotlib is an optional extra (``pip install 'pytest-groove[plots]'``); it is
imported only when a plot is asked for.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.tune.decide import PRIMARY
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    DEFAULT_INDEX,
    N_K,
    N_W,
    RRF_K_VALUES,
    WEIGHT_VALUES,
    Condition,
    condition_index,
)
from pytest_groove.tune.units import Units, unit_table

FloatArray = npt.NDArray[np.float64]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
MISSING_MATPLOTLIB = (
    "--plot needs matplotlib, which is an optional extra: "
    "install it with pip install 'pytest-groove[plots]' (or drop --plot)"
)


def check_plot_target(path: Path) -> None:
    """Fail fast, before any sweep, if the plot could not be written."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(
            f"--plot {path}: the file name must end in {', '.join(PLOT_SUFFIXES)} "
            "(e.g. --plot tune.png)"
        )
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--plot {path}: directory {parent} does not exist")
    if importlib.util.find_spec("matplotlib") is None:
        raise GrooveError(MISSING_MATPLOTLIB)


def heatmap_grid(ndcg5: FloatArray, units: Units, refit: int) -> FloatArray:
    """Δ mean primary metric vs the default, shape (4 heading weights, 6 rrf_k values):
    each unit (the effective queries asking one text, :mod:`.units`) counts once, as in
    the selection the map shows.

    Context and content weights are fixed at the refit's.
    """
    if not units:
        return np.zeros((N_W, N_K))
    means = unit_table(ndcg5, units).mean(axis=0)
    at = Condition.from_index(refit)
    grid = np.empty((N_W, N_K))
    for h in range(N_W):
        for k in range(N_K):
            grid[h, k] = means[condition_index(h, at.ctx, at.content, k)] - means[DEFAULT_INDEX]
    return grid


def _cell_text(value: float) -> str:
    """Three decimals with a sign; a value that rounds to zero is shown unsigned."""
    text = f"{value:+.3f}"
    return "0.000" if text in ("+0.000", "-0.000") else text


def _load_pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window or need a display
        import matplotlib.pyplot as plt
    except ImportError:
        raise GrooveError(MISSING_MATPLOTLIB) from None
    return plt


def write_heatmap(
    path: Path, ndcg5: FloatArray, units: Units, refit: int, *, title: str = ""
) -> None:
    """Draw :func:`heatmap_grid` to ``path`` (format from the suffix)."""
    plt = _load_pyplot()
    grid = heatmap_grid(ndcg5, units, refit)
    at = Condition.from_index(refit)
    span = float(np.max(np.abs(grid))) or 0.01
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    try:
        image = ax.imshow(grid, cmap="RdBu", vmin=-span, vmax=span, origin="lower", aspect="auto")
        ax.set_xticks(range(N_K), [f"{k:g}" for k in RRF_K_VALUES])
        ax.set_yticks(range(N_W), [f"{w:g}" for w in WEIGHT_VALUES])
        ax.set_xlabel("rrf_k")
        ax.set_ylabel("bm25_heading_weight")
        for h in range(N_W):
            for k in range(N_K):
                ax.text(k, h, _cell_text(grid[h, k]), ha="center", va="center", fontsize=8)
        marks = [(at, "refit", "black")]
        if (at.ctx, at.content) == (DEFAULT_CONDITION.ctx, DEFAULT_CONDITION.content):
            marks.append((DEFAULT_CONDITION, "default", "dimgray"))
        for cond, label, colour in marks:
            ax.add_patch(
                plt.Rectangle(
                    (cond.k - 0.5, cond.h - 0.5),
                    1,
                    1,
                    fill=False,
                    edgecolor=colour,
                    linewidth=2.0,
                    linestyle="-" if label == "refit" else "--",
                    label=label,
                )
            )
        ax.legend(loc="upper left", bbox_to_anchor=(1.25, 1.0), fontsize=8, frameon=False)
        ctx_w, content_w = WEIGHT_VALUES[at.ctx], WEIGHT_VALUES[at.content]
        ax.set_title(
            title
            or f"mean Δ{PRIMARY.label} vs default over {len(units)} effective queries\n"
            f"(in-sample; bm25_context_weight={ctx_w:g}, bm25_content_weight={content_w:g})",
            fontsize=9,
        )
        fig.colorbar(image, ax=ax, label=f"Δ{PRIMARY.label}")
        fig.tight_layout()
        try:
            fig.savefig(path)
        except OSError as exc:
            raise GrooveError(f"could not write --plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
