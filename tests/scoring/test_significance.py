"""The paired sign-flip test beside every delta, and the detectable-drop line."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from pytest_groove.scoring.metric_table import RR, Metric
from pytest_groove.scoring.metrics import QueryMetrics
from pytest_groove.scoring.significance import (
    EXACT_MAX_FLIPS,
    detectable_drop,
    detectable_drop_line,
    format_p,
    paired_p_values,
    sign_flip_p_value,
    significant,
)


def brute_force(differences: list[float]) -> float:
    """Every sign assignment of every difference, zeros included (the definition)."""
    observed = abs(sum(differences))
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(differences)):
        total += 1
        if abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12:
            hits += 1
    return hits / total


def test_hand_computed_small_cases_are_exact() -> None:
    # |d| = 0.5, 0.5, 1: sums 2, 1, 1, 0, 0, -1, -1, -2; |sum| >= 1 in 6 of 8
    assert sign_flip_p_value([0.5, -0.5, 1.0]) == 0.75
    # four equal gains: only all-plus and all-minus reach 4, 2 of 16; zeros change nothing
    assert sign_flip_p_value([1.0, 1.0, 1.0, 1.0]) == 0.125
    assert sign_flip_p_value([1.0, 1.0, 1.0, 1.0, 0.0, 0.0]) == 0.125
    assert sign_flip_p_value([0.0, 0.0]) == 1.0
    assert sign_flip_p_value([]) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_exact_enumeration_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    diffs = [rng.choice((0.0, 0.25, -0.5, 1.0, -1.0, 0.5)) for _ in range(12)]
    assert sign_flip_p_value(diffs) == pytest.approx(brute_force(diffs), abs=1e-12)


def test_sixteen_flips_are_enumerated_and_seventeen_sampled_deterministically() -> None:
    diffs = [0.1 * (i % 4 + 1) for i in range(EXACT_MAX_FLIPS)]
    exact = sign_flip_p_value(diffs)
    assert exact * 2**EXACT_MAX_FLIPS == pytest.approx(round(exact * 2**EXACT_MAX_FLIPS))
    more = [*diffs, 0.1]
    assert sign_flip_p_value(more) == sign_flip_p_value(more)  # fixed seed
    # a sampled p-value is never 0, even when no draw reaches the observed sum
    assert 0 < sign_flip_p_value([1.0] * 40) < 1e-3


def test_a_clear_drop_is_significant_and_noise_is_not() -> None:
    rng = random.Random(3)
    drop = [-0.3 + rng.gauss(0, 0.1) for _ in range(40)]
    noise = [rng.gauss(0, 0.3) for _ in range(40)]
    assert sign_flip_p_value(drop) < 0.001
    assert sign_flip_p_value(noise) > 0.05


def metrics(rr: float, recall: float) -> QueryMetrics:
    return QueryMetrics(recall_at_k={5: recall}, reciprocal_rank=rr, ndcg_at_k={5: recall})


def test_every_metric_gets_a_p_value_in_the_shape_of_the_diff() -> None:
    pairs = [(metrics(0.0, 0.0), metrics(1.0, 1.0))] * 4
    p = paired_p_values(pairs, (5,))
    assert p.of(Metric(RR)) == 0.125
    assert p.to_json() == {"recall_at_k": {"5": 0.125}, "mrr": 0.125, "ndcg_at_k": {"5": 0.125}}


def test_the_detectable_drop_counts_each_question_once() -> None:
    rng = random.Random(5)
    per_query = [metrics(rng.choice((0.0, 0.5, 1.0)), rng.choice((0.0, 1.0))) for _ in range(30)]
    once = detectable_drop_line(per_query, (5,))
    thrice = detectable_drop_line(
        [q for q in per_query for _ in range(3)],
        (5,),
        [f"question {at}" for at in range(30) for _ in range(3)],
    )
    # 90 copies of 30 questions can tell what 30 can, not what 90 independent ones could
    assert thrice == once.replace("with 30 queries", "with 90 queries (30 distinct)")


def test_copies_of_a_question_are_one_observation() -> None:
    """Four queries asked three times each: the test sees four differences, not twelve
    (counted apart, 12 same-sign flips reach p = 0.0005 from a p = 0.125 set)."""
    pairs = [(metrics(0.0, 0.0), metrics(1.0, 1.0))] * 4
    once = paired_p_values(pairs, (5,)).of(Metric(RR))
    copies = [pair for pair in pairs for _ in range(3)]
    keys = [f"Question {at}" for at in range(4) for _ in range(3)]
    assert paired_p_values(copies, (5,)).of(Metric(RR)) < 0.001  # counted apart
    assert paired_p_values(copies, (5,), keys).of(Metric(RR)) == once == 0.125


def test_repeated_golden_texts_do_not_make_a_drop_significant() -> None:
    """Through the comparison: ids differ, the text differs only in case and spaces."""
    from pytest_groove.evaluation.gate.compare import compare
    from pytest_groove.evaluation.runs.record import RunRecord
    from tests.helpers.eval_factories import query, run

    def runs(copies: int) -> tuple[RunRecord, RunRecord]:
        texts = [f"how do I {word}" for word in ("deploy", "roll back", "page", "rotate")]
        per_query = [
            (f"q{at}-{copy}", text.upper() if copy else f"  {text} ")
            for at, text in enumerate(texts)
            for copy in range(copies)
        ]
        now = run(minutes=1, per_query=[query(i, 0.0, 0.0, text=t) for i, t in per_query])
        before = run(minutes=0, per_query=[query(i, 1.0, 1.0, text=t) for i, t in per_query])
        return now, before

    p_once = compare(*runs(1), 0.05).p_values
    p_thrice = compare(*runs(3), 0.05).p_values
    assert p_once is not None and p_thrice is not None
    assert p_thrice.of(Metric(RR)) == p_once.of(Metric(RR)) == 0.125


def test_p_formatting_and_the_alpha_rule() -> None:
    assert format_p(0.0312) == "p=0.031"
    assert format_p(0.0001) == "p<0.001"
    assert format_p(1.0) == "p=1.00"
    assert significant(0.01, 0.05) and not significant(0.2, 0.05)
    assert significant(0.9, None)  # off: every drop over its threshold counts


def test_detectable_drop_is_where_simulated_drops_start_to_reach_p_05() -> None:
    """Differences of spread s and mean -m: p < 0.05 from m = detectable_drop on."""
    rng = random.Random(11)
    n = 30
    values = [rng.random() for _ in range(n)]
    spread = statistics.pstdev(values)
    drop = detectable_drop(values)
    assert drop is not None
    noise = [rng.gauss(0, 1) for _ in range(n)]
    centre, scale = statistics.fmean(noise), statistics.pstdev(noise)
    unit = [(x - centre) / scale for x in noise]  # mean 0, spread 1 exactly

    def p_at(mean_drop: float) -> float:
        return sign_flip_p_value([-mean_drop + spread * u for u in unit])

    assert p_at(drop * 1.25) < 0.05 < p_at(drop * 0.75)
    # and over many simulated sets, about half of the drops of exactly that size reach it
    reached = 0
    for _ in range(60):
        sample = [-drop + rng.gauss(0, spread) for _ in range(n)]
        reached += sign_flip_p_value(sample) < 0.05
    assert 15 <= reached <= 45


def test_detectable_drop_line_names_the_size_and_both_metrics() -> None:
    rng = random.Random(5)
    per_query = [metrics(rng.choice((0.0, 0.5, 1.0)), rng.choice((0.0, 1.0))) for _ in range(30)]
    line = detectable_drop_line(per_query, (1, 5, 10))
    assert line.startswith("with 30 queries, drops under 0.")
    assert " in MRR and " in line and " in recall@5 cannot be told from chance" in line
    assert detectable_drop_line(per_query[:3], (5,)).startswith("with 3 queries, no drop")
    assert detectable_drop([1.0] * 30) == pytest.approx(6 / 30)  # six lost queries
    assert sign_flip_p_value([-1.0] * 6 + [0.0] * 24) < 0.05 < sign_flip_p_value([-1.0] * 5)
    assert detectable_drop([0.0, 1.0, 0.0, 1.0]) is None  # 4 queries: > 1 would be needed
    assert detectable_drop([1.0, 0.0] * 50) == pytest.approx(
        1.96 * 0.5 / math.sqrt(100 - 3.84), 1e-3
    )


@pytest.mark.slow
def test_p_values_equal_ranx_fisher_test_within_monte_carlo_error() -> None:
    ranx = pytest.importorskip("ranx")
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(8)]
    qrels: dict[str, dict[str, int]] = {}
    run_a: dict[str, dict[str, float]] = {}
    run_b: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q}"
        qrels[qid] = {rng.choice(docs): 1}
        for run in (run_a, run_b):
            order = rng.sample(docs, len(docs))
            run[qid] = {doc: float(len(docs) - rank) for rank, doc in enumerate(order)}
    a, b = ranx.Run(run_a, name="a"), ranx.Run(run_b, name="b")
    report = ranx.compare(
        ranx.Qrels(qrels),
        runs=[a, b],
        metrics=["mrr", "recall@5"],
        stat_test="fisher",
        n_permutations=20_000,
    )
    for metric in ("mrr", "recall@5"):
        theirs = report.to_dict()["a"]["comparisons"]["b"][metric]
        diffs = [a.scores[metric][q] - b.scores[metric][q] for q in qrels]
        mine = sign_flip_p_value(diffs)
        # two Monte Carlo estimates (10 000 and 20 000 draws): a few standard errors apart
        error = 4 * math.sqrt(theirs * (1 - theirs) * (1 / 10_000 + 1 / 20_000)) + 1e-3
        assert abs(mine - theirs) <= error, (metric, mine, theirs)


@pytest.mark.slow
def test_enumerated_p_values_equal_ranx_on_a_small_set() -> None:
    ranx = pytest.importorskip("ranx")
    qrels = {f"q{i}": {"d1": 1} for i in range(6)}
    first = {q: {"d1": 2.0, "d2": 1.0} for q in qrels}
    second = {q: ({"d2": 2.0, "d1": 1.0} if i < 4 else {"d1": 2.0}) for i, q in enumerate(qrels)}
    report = ranx.compare(
        ranx.Qrels(qrels),
        runs=[ranx.Run(first, name="a"), ranx.Run(second, name="b")],
        metrics=["mrr"],
        stat_test="fisher",
        n_permutations=50_000,
    )
    theirs = report.to_dict()["a"]["comparisons"]["b"]["mrr"]
    exact = sign_flip_p_value([0.5, 0.5, 0.5, 0.5, 0.0, 0.0])
    assert exact == 0.125
    assert abs(exact - theirs) < 0.01
