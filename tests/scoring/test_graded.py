"""Graded nDCG@k: trec_eval's ndcg_cut (gain = grade) on the exported run, and the
binary nDCG exactly when every grade is 1."""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groove.evaluation.reports.trec import entry_id, run_lines
from pytest_groove.scoring.graded import graded_ndcg_at_k
from pytest_groove.scoring.metrics import ndcg_at_k
from pytest_groove.scoring.records import ExpectedEntry
from tests.evaluation.reports.test_trec import Query, _ranked

KS = (1, 3, 5, 10)
_PATHS = st.sampled_from(["a.md", "b.md", "c d.md", "e.md"])
_HEADINGS = st.one_of(st.none(), st.sampled_from(["Setup", " setup", "Data flow"]))


@st.composite
def _graded(draw: Any) -> tuple[Query, list[int]]:
    entries: dict[tuple[str, str | None], ExpectedEntry] = {}
    for path, heading in draw(st.lists(st.tuples(_PATHS, _HEADINGS), min_size=1, max_size=6)):
        entries.setdefault(
            (path, heading and heading.strip().lower()), ExpectedEntry(path, heading)
        )
    expected = tuple(entries.values())
    grades = draw(st.lists(st.integers(0, 3), min_size=len(expected), max_size=len(expected)))
    hits = _ranked(draw(st.lists(st.tuples(_PATHS, _HEADINGS), max_size=12)))
    return Query(draw(st.text("abcxyz", min_size=1, max_size=4)), expected, hits), grades


def _trec_ndcg(pairs: list[tuple[Query, list[int]]]) -> dict[str, dict[str, float]]:
    qrels = {
        q.id: {entry_id(e): grade for e, grade in zip(q.expected, grades, strict=True)}
        for q, grades in pairs
    }
    # the run is exported from the graded entries: a grade-0 entry is credited nothing
    graded = [
        replace(
            q, expected=tuple(replace(e, grade=g) for e, g in zip(q.expected, grades, strict=True))
        )
        for q, grades in pairs
    ]
    text = "".join(f"{line}\n" for line in run_lines(graded))
    run = pytrec_eval.parse_run(io.StringIO(text))
    measure = "ndcg_cut." + ",".join(map(str, KS))
    return pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)


@settings(max_examples=150)
@given(st.lists(_graded(), min_size=1, max_size=5, unique_by=lambda pair: pair[0].id))
def test_graded_ndcg_equals_trec_eval_ndcg_cut(pairs: list[tuple[Query, list[int]]]) -> None:
    found = _trec_ndcg(pairs)
    for query, grades in pairs:
        for k in KS:
            ours = graded_ndcg_at_k(query.expected, grades, query.top_k, k)
            theirs = found.get(query.id, {}).get(f"ndcg_cut_{k}", 0.0)
            assert ours == pytest.approx(theirs, abs=1e-12), (query, grades, k)


@given(_graded())
def test_all_grades_one_is_the_binary_ndcg_bit_for_bit(pair: tuple[Query, list[int]]) -> None:
    query, _grades = pair
    ones = [1] * len(query.expected)
    for k in KS:
        assert graded_ndcg_at_k(query.expected, ones, query.top_k, k) == ndcg_at_k(
            query.expected, query.top_k, k
        )


def test_a_higher_grade_found_first_scores_higher() -> None:
    expected = (ExpectedEntry("a.md"), ExpectedEntry("b.md"))
    good_first = _ranked([("a.md", None), ("b.md", None)])
    worse_first = _ranked([("b.md", None), ("a.md", None)])
    assert graded_ndcg_at_k(expected, [3, 1], good_first, 2) == 1.0
    assert graded_ndcg_at_k(expected, [3, 1], worse_first, 2) < 1.0
    assert graded_ndcg_at_k(expected, [0, 0], good_first, 2) == 0.0


def test_grades_must_fit_the_entries() -> None:
    with pytest.raises(ValueError, match="grade"):
        graded_ndcg_at_k((ExpectedEntry("a.md"),), [1, 2], (), 1)
    with pytest.raises(ValueError, match="0 or more"):
        graded_ndcg_at_k((ExpectedEntry("a.md"),), [-1], (), 1)
