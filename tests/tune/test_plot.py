"""The optional heatmap: its numbers, and the checks made before any sweep."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_groove.errors import GrooveError, UsageError
from pytest_groove.tune.grid import DEFAULT_INDEX, condition_index
from pytest_groove.tune.plot import check_plot_target, heatmap_grid, write_heatmap


def test_heatmap_grid_is_the_delta_against_the_default() -> None:
    table = np.full((3, 384), 0.5)
    refit = condition_index(3, 1, 1, 2)  # h=4.0, ctx/content at the defaults, k=20
    table[:, refit] = 0.8
    table[0, condition_index(0, 1, 1, 0)] = 0.2  # only query 0, which is not effective
    grid = heatmap_grid(table, ((1,), (2,)), refit)
    assert grid.shape == (4, 6)
    assert grid[3, 2] == pytest.approx(0.3)
    assert grid[2, 4] == 0.0  # the default cell
    assert grid[0, 0] == 0.0
    assert np.count_nonzero(grid) == 1


def test_heatmap_grid_follows_the_refits_other_weights() -> None:
    table = np.full((2, 384), 0.5)
    refit = condition_index(1, 3, 0, 4)  # ctx=4.0 content=0.5
    table[:, condition_index(2, 3, 0, 1)] = 0.9
    table[:, DEFAULT_INDEX] = 0.4
    grid = heatmap_grid(table, ((0,), (1,)), refit)
    assert grid[2, 1] == pytest.approx(0.5)
    assert grid[0, 0] == pytest.approx(0.1)


def test_queries_asking_one_text_count_once_as_in_the_selection() -> None:
    # ten copies of query 1 weigh as much as query 0, not ten times as much (tune's
    # selection counts each text once: the map shows the landscape it walked)
    table = np.full((11, 384), 0.5)
    refit = condition_index(3, 1, 1, 2)
    table[0, refit] = 0.9
    table[1:, refit] = 0.5
    grid = heatmap_grid(table, ((0,), tuple(range(1, 11))), refit)
    assert grid[3, 2] == pytest.approx(0.2)


def test_no_effective_rows_give_a_flat_map() -> None:
    assert not heatmap_grid(np.ones((2, 384)), (), DEFAULT_INDEX).any()


def test_cell_text_never_shows_a_signed_zero() -> None:
    from pytest_groove.tune.plot import _cell_text

    assert [_cell_text(v) for v in (0.0123, -0.2, -1e-17, 0.0004, -0.0006)] == [
        "+0.012",
        "-0.200",
        "0.000",
        "0.000",
        "-0.001",
    ]


def test_plot_target_checks(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"\.png"):
        check_plot_target(tmp_path / "grid.jpeg")
    with pytest.raises(UsageError, match="does not exist"):
        check_plot_target(tmp_path / "missing" / "grid.png")


def test_missing_matplotlib_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(GrooveError, match=r"pytest-groove\[plots\]"):
        check_plot_target(tmp_path / "grid.png")
    with pytest.raises(GrooveError, match="optional extra"):
        write_heatmap(tmp_path / "grid.png", np.zeros((1, 384)), ((0,),), DEFAULT_INDEX)


@pytest.mark.slow
def test_write_heatmap_draws_an_svg(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    table = np.full((2, 384), 0.5)
    refit = condition_index(3, 1, 1, 4)
    table[:, refit] = 0.7
    target = tmp_path / "grid.svg"
    write_heatmap(target, table, ((0,), (1,)), refit)
    svg = target.read_text(encoding="utf-8")
    assert "<svg" in svg and "+0.200" in svg
