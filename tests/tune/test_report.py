"""The text and JSON reports, on hand-made metric tables."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from pytest_groove.scoring.records import ExpectedEntry, GoldenQuery
from pytest_groove.settings.config import FusionParams, parse_settings
from pytest_groove.tune.grid import (
    DEFAULT_CONDITION,
    DEFAULT_INDEX,
    Condition,
    condition_index,
    toml_snippet,
)
from pytest_groove.tune.report import TuneResult, analyse, render_json, render_text, to_json
from pytest_groove.tune.sweep import MetricTable, run_preflight
from tests.tune.test_sweep import FakeSource, fixed

WINNER = condition_index(3, 1, 1, 4)  # h=4.0 ctx=1.0 content=1.0 k=60
K_VALUES = (1, 5, 10)


def _result(
    n: int,
    gains: list[float] | None = None,
    *,
    n_effective: int | None = None,
    context_chunks: int = 0,
    recall_drop: bool = False,
) -> TuneResult:
    """n queries; the first n_effective have 2 FTS candidates, the rest 1."""
    n_effective = n if n_effective is None else n_effective
    texts = [f"query{i:02d}" for i in range(n)]
    src = FakeSource(
        vec={t: [1, 2, 3] for t in texts},
        fts={t: fixed([4, 5] if i < n_effective else [4]) for i, t in enumerate(texts)},
        context_chunks=context_chunks,
    )
    queries = [
        GoldenQuery(id=f"q{i}", query=t, expected=(ExpectedEntry("doc4.md"),))
        for i, t in enumerate(texts)
    ]
    pre = run_preflight(src, queries, 10, K_VALUES)
    table = MetricTable.empty(n, K_VALUES)
    for k in K_VALUES:
        table.ndcg[k][:] = 0.5
        table.recall[k][:] = 0.5
    table.rr[:] = 0.5
    if gains is not None:
        table.ndcg[5][:, WINNER] += np.asarray(gains)
    if recall_drop:
        table.recall[1][:, WINNER] = 0.25
    return analyse("kb", "kb/.groove-eval.yml", "hash", pre, table)


def _adopting() -> TuneResult:
    return _result(12, [0.30 + 0.01 * (i % 3) for i in range(12)])


def test_adopt_text_carries_the_recommendation_and_exactly_the_snippet() -> None:
    result = _adopting()
    assert result.verdict.adopt
    text = render_text(result)
    label = Condition.from_index(WINNER).label
    assert f"Recommendation: {label}" in text
    assert "groove eval" in text
    snippet = toml_snippet(Condition.from_index(WINNER))
    assert text.endswith(snippet)
    assert text.count("[search.fusion]") == 1


def test_adopt_json_snippet_parses_validates_and_round_trips() -> None:
    data = to_json(_adopting())
    verdict = data["verdict"]
    assert verdict["decision"] == "adopt"
    assert verdict["condition"] == {
        "rrf_k": 60.0,
        "bm25_heading_weight": 4.0,
        "bm25_context_weight": 1.0,
        "bm25_content_weight": 1.0,
    }
    settings = parse_settings(tomllib.loads(verdict["toml_snippet"]), Path("groove.toml"))
    assert settings.search.fusion == FusionParams(rrf_k=60.0, bm25_heading_weight=4.0)
    assert settings.search.fusion != FusionParams()
    assert 0.0 < verdict["permutation_p_value"] < 0.01


def test_keep_default_text_has_no_snippet() -> None:
    text = render_text(_result(12))
    assert "[search.fusion]" not in text
    assert "keep the built-in defaults (h=2.0 ctx=1.0 content=1.0 k=60)" in text
    assert "    - refit selected the built-in defaults" in text


def test_text_has_every_section() -> None:
    text = render_text(_result(12, [0.01] * 12))
    for needle in (
        "Query diagnostics",
        "candidate pool",
        "Grid (coordinate descent over 12 effective queries)",
        "Nested leave-one-query-out CV",
        "paired SE",
        "sign test",
        "selection stability",
        "Secondary metrics (all 12 golden queries)",
        "Per-query impact",
        "## Verdict",
        "permutation test",
    ):
        assert needle in text, needle
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_colour_only_when_asked() -> None:
    result = _result(4)
    assert "\x1b[" not in render_text(result, color=False)
    coloured = render_text(result, color=True)
    assert "\x1b[1m## Verdict\x1b[0m" in coloured


def test_json_shape_and_key_order() -> None:
    result = _result(6, [0.0] * 6, n_effective=3)
    text = render_json(result)
    data = json.loads(text)
    assert text.endswith("}\n")
    assert list(data) == sorted(data)
    assert data["effective_query_count"] == 3
    assert data["query_count"] == 6
    assert data["verdict"]["decision"] == "keep_default"
    assert [d["effective"] for d in data["diagnostics"]] == [True] * 3 + [False] * 3
    assert isinstance(data["loo"]["paired_se"], float)
    assert data["loo"]["folds"] == 3
    assert len(data["loo"]["held_out_diffs"]) == 3
    assert data["primary_k"] == 5
    assert data["k_values"] == [1, 5, 10]
    assert data["candidate_pool"] == 50
    assert data["reranker"] is None
    assert data["grid"]["rrf_k"] == [5.0, 10.0, 20.0, 30.0, 60.0, 100.0]
    assert len(data["grid"]["top_weight_conditions"]) == 5
    assert len(data["grid"]["rrf_k_sweep"]) == 6
    baseline = data["secondary_metrics"]["baseline"]
    assert baseline["recall_at_k"] == {"1": 0.5, "5": 0.5, "10": 0.5}
    assert baseline["query_count"] == 6
    assert set(data["per_query_impact"]) == {"improved", "degraded", "worst_delta"}


def test_a_single_effective_query_has_an_infinite_se_shown_as_null_and_inf() -> None:
    result = _result(3, [0.3, 0.3, 0.3], n_effective=1)
    assert to_json(result)["loo"]["paired_se"] is None
    text = render_text(result)
    assert "paired SE (SD/sqrt(N)): inf" in text
    # strict: Python's json.loads would accept NaN / Infinity tokens silently
    json.loads(render_json(result), parse_constant=_refuse_non_json)


def _refuse_non_json(token: str) -> None:
    raise AssertionError(f"the report holds {token}, which is not JSON")


def test_the_strict_parse_refuses_what_json_loads_accepts() -> None:
    with pytest.raises(AssertionError, match="NaN"):
        json.loads('{"x": NaN}', parse_constant=_refuse_non_json)


def test_context_axis_noop_is_surfaced() -> None:
    noop = _result(4)
    assert to_json(noop)["context_axis_noop"] is True
    assert "bm25_context_weight" in render_text(noop)
    measured = _result(4, context_chunks=1)
    assert to_json(measured)["context_axis_noop"] is False
    assert "bm25_context_weight" not in render_text(measured)


def test_secondary_degradation_is_listed() -> None:
    result = _result(12, [0.3] * 12, recall_drop=True)
    assert not result.verdict.adopt
    text = render_text(result)
    assert "  DEGRADED: recall@1 0.2500 < baseline 0.5000" in text
    assert to_json(result)["secondary_metrics"]["violations"] == [
        "recall@1 0.2500 < baseline 0.5000"
    ]


def test_secondary_values_match_the_json_aggregates_and_show_no_negative_zero() -> None:
    result = _result(12, [0.3] * 12)
    column = [0.1, 0.2, 0.3] * 4
    result.table.recall[1][:, DEFAULT_INDEX] = column
    result.table.recall[1][:, WINNER] = column[::-1]
    again = analyse("kb", "kb/.groove-eval.yml", "hash", result.preflight, result.table)
    data = to_json(again)["secondary_metrics"]
    base, refit = again.verdict.secondary.values["recall@1"]
    assert data["baseline"]["recall_at_k"]["1"] == base
    assert data["refit"]["recall_at_k"]["1"] == refit
    assert again.verdict.adopt
    text = render_text(again)
    assert "  recall@1  default 0.2000 -> refit 0.2000 (+0.0000)" in text
    assert "-0.0000" not in text


def test_worst_query_is_named_only_when_something_degraded() -> None:
    gains = [0.3] * 11 + [-0.25]
    text = render_text(_result(12, gains))
    assert "worst delta: -0.2500 (q11)" in text
    assert "worst delta: +0.0000\n" in render_text(_result(4))


@pytest.mark.parametrize("n", [12])
def test_phase_rows_in_the_text(n: int) -> None:
    text = render_text(_result(n, [0.3] * n))
    first_w = text.split("at k=60:\n")[1].splitlines()[0]
    assert first_w.strip().startswith(Condition.from_index(WINNER).label)
    assert DEFAULT_INDEX != WINNER


def test_phase_w_always_lists_the_selected_weights() -> None:
    result = _result(12)  # a flat landscape: every weight triple ties, the default wins
    assert result.verdict.refit.index == DEFAULT_INDEX
    phase_w = render_text(result).split("Phase W")[1].split("Phase K")[0]
    first = phase_w.splitlines()[1]
    assert first.split() == [*DEFAULT_CONDITION.label.split(), "nDCG@5", "0.5000", "<-", "selected"]
    assert phase_w.count("<- selected") == 1
    rows = to_json(result)["grid"]["top_weight_conditions"]
    assert rows[0]["condition"] == DEFAULT_CONDITION.to_json()


def test_repeated_texts_count_once_in_the_report() -> None:
    src = FakeSource(
        vec={t: [1, 2, 3] for t in ("alpha", "beta", "  ALPHA ")},
        fts={t: fixed([4, 5]) for t in ("alpha", "beta", "  ALPHA ")},
    )
    expected = (ExpectedEntry("doc4.md"),)
    queries = [
        GoldenQuery(id="a1", query="alpha", expected=expected),
        GoldenQuery(id="b", query="beta", expected=expected),
        GoldenQuery(id="a2", query="  ALPHA ", expected=expected),  # same text, normalised
    ]
    pre = run_preflight(src, queries, 10, K_VALUES)
    table = MetricTable.empty(3, K_VALUES)
    result = analyse("kb", "kb/.groove-eval.yml", "hash", pre, table)
    assert result.verdict.loo.folds == 2
    data = to_json(result)
    assert data["repeated_queries"] == [["a1", "a2"]]
    assert data["effective_query_count"] == 3 and data["loo"]["folds"] == 2
    text = render_text(result)
    assert "repeated texts: 1 effective queries repeat another's text" in text
    assert "## Grid (coordinate descent over 2 distinct texts of the 3 effective queries)" in text
