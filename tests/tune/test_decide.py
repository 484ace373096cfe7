"""Selection, nested LOO, statistics and the five adoption criteria."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_groove.tune import Verdict, decide
from pytest_groove.tune.decide import (
    PHASE_W_COLUMNS,
    decide_from_loo,
    mean,
    nested_loo,
    paired_se,
    per_query_impact,
    permutation_p_value,
    phase_k_sweep,
    phase_w_ranking,
    sample_sd,
    select_condition,
    select_from_means,
    sign_test,
)
from pytest_groove.tune.grid import DEFAULT_INDEX, Condition, condition_index

FloatArray = npt.NDArray[np.float64]
WINNER = condition_index(3, 1, 1, 4)  # h=4.0 ctx=1.0 content=1.0 k=60


def flat(n: int, value: float = 0.5) -> FloatArray:
    return np.full((n, 384), value)


def same(table: FloatArray) -> dict[str, FloatArray]:
    return {"recall@1": table, "recall@5": table, "recall@10": table, "mrr": table}


# --------------------------------------------------------------------------- statistics


def test_mean_and_sample_sd() -> None:
    assert mean([1.0, 2.0, 3.0]) == 2.0
    assert mean([]) == 0.0
    assert sample_sd([1.0, 2.0, 3.0]) == 1.0
    assert sample_sd([7.0]) == 0.0


def test_paired_se_is_sd_over_sqrt_n() -> None:
    d = [1.0, 2.0, 3.0, 4.0]
    assert paired_se(d) == pytest.approx(sample_sd(d) / 2.0)
    assert paired_se([0.3]) == math.inf
    assert paired_se([]) == math.inf


def test_sign_test_counts_and_exact_p() -> None:
    t = sign_test([0.1, 0.2, -0.1, 0.0])
    assert (t.improved, t.degraded, t.tied) == (2, 1, 1)
    assert t.p_value == 1.0
    assert sign_test([0.1] * 5).p_value == 0.0625
    assert sign_test([0.0, 1e-13, -1e-13]).tied == 3
    assert sign_test([]).p_value == 1.0


def test_permutation_p_exact_small_cases() -> None:
    # 3 positive differences of equal size: only the all-plus and all-minus flips
    # reach |sum| = 3, so p = 2/8
    assert permutation_p_value([0.1, 0.1, 0.1]) == 0.25
    assert permutation_p_value([0.0, 0.0]) == 1.0
    assert permutation_p_value([]) == 1.0
    # one large difference cannot be significant with n = 3: 6 of the 8 flips
    # reach |sum| >= 0.5 (only +-(0.5 - 0.01 - 0.01) fall short)
    assert permutation_p_value([0.5, -0.01, 0.01]) == 0.75


@given(st.lists(st.sampled_from([-0.5, -0.25, 0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=8))
def test_permutation_p_matches_brute_force_and_is_sign_symmetric(d: list[float]) -> None:
    observed = abs(sum(d))
    hits = sum(
        1
        for signs in itertools.product((1.0, -1.0), repeat=len(d))
        if abs(sum(s * v for s, v in zip(signs, d, strict=True))) >= observed - 1e-9
    )
    expected = 1.0 if all(v == 0.0 for v in d) else hits / 2 ** len(d)
    assert permutation_p_value(d) == pytest.approx(expected)
    assert permutation_p_value([-v for v in d]) == pytest.approx(expected)


def test_permutation_p_monte_carlo_branch_is_reproducible_and_small_for_a_clear_gain() -> None:
    d = [0.1 + 0.01 * i for i in range(30)]
    p = permutation_p_value(d)
    assert p == permutation_p_value(d)
    assert 0.0 < p < 0.001
    noisy = [(-1.0) ** i * 0.1 for i in range(30)]
    assert permutation_p_value(noisy) > 0.5


def test_permutation_p_ignores_ties() -> None:
    # one improvement among many ties: the exact answer over the one non-zero flip
    assert permutation_p_value([0.2] + [0.0] * 40) == 1.0
    assert permutation_p_value([0.1, 0.1, 0.1] + [0.0] * 40) == 0.25


# --------------------------------------------------------------------------- selection


def test_flat_landscape_selects_the_default() -> None:
    assert select_condition(flat(5), range(5)) == DEFAULT_INDEX


def test_empty_query_set_selects_the_default() -> None:
    assert select_condition(flat(3, 0.9), []) == DEFAULT_INDEX


def test_plateau_prefers_the_grid_centre() -> None:
    table = flat(2, 0.0)
    a = condition_index(0, 0, 0, 4)
    b = condition_index(1, 1, 1, 4)
    table[:, [a, b]] = 1.0
    assert select_condition(table, [0, 1]) == b


def test_default_beats_an_equally_central_tie() -> None:
    table = flat(2, 0.0)
    table[:, [DEFAULT_INDEX, condition_index(1, 1, 1, 4)]] = 1.0
    assert select_condition(table, [0, 1]) == DEFAULT_INDEX


def test_coordinate_descent_ignores_a_trap_off_k60() -> None:
    table = flat(3, 0.3)
    trap = condition_index(0, 0, 0, 0)
    table[:, trap] = 0.9  # the global argmax, but its triple loses at k=60
    table[:, condition_index(3, 1, 1, 4)] = 0.5
    table[:, condition_index(3, 1, 1, 0)] = 0.6
    chosen = select_condition(table, [0, 1, 2])
    assert chosen == condition_index(3, 1, 1, 0)
    assert chosen != trap


def test_flat_k_axis_under_non_default_weights_moves_k_to_20() -> None:
    table = flat(2, 0.3)
    table[:, WINNER - 4 : WINNER + 2] = 0.7  # all six k at h=4.0 ctx=1.0 content=1.0
    chosen = Condition.from_index(select_condition(table, [0, 1]))
    assert chosen.weights == (4.0, 1.0, 1.0)
    assert chosen.rrf_k == 20.0


def test_a_flat_context_axis_keeps_ctx_at_one() -> None:
    table = flat(2, 0.3)
    for ctx in range(4):
        table[:, condition_index(3, ctx, 1, 4)] = 0.7
    chosen = Condition.from_index(select_condition(table, [0, 1]))
    assert chosen.weights == (4.0, 1.0, 1.0)
    assert chosen.rrf_k == 60.0


def test_a_k_cell_within_eps_joins_the_plateau() -> None:
    table = flat(1, 0.3)
    table[0, WINNER] = 0.7
    table[0, WINNER - 1] = 0.7 + 1e-10  # k=30: a tie, and closer to the centre than k=60
    assert Condition.from_index(select_condition(table, [0])).rrf_k == 30.0
    table[0, WINNER - 4] = 0.8  # k=5: clearly better
    assert Condition.from_index(select_condition(table, [0])).rrf_k == 5.0


def test_phase_k_carries_the_running_best_of_phase_w() -> None:
    table = flat(1, 0.3)
    far = condition_index(0, 0, 0, 4)
    near = condition_index(1, 1, 1, 4)
    table[0, far] = 0.7  # sets the running best
    table[0, near] = 0.7 - 0.9e-9  # joins the plateau and wins on centre distance
    table[0, condition_index(1, 1, 1, 0)] = 0.7 + 0.5e-9
    # measured from score(near) the k=5 cell would be a clear gain (1.4e-9); from the
    # carried best (0.7) it is only a tie, and k=60 is closer to the centre than k=5
    assert select_condition(table, [0]) == near


def test_select_from_means_rejects_a_wrong_length() -> None:
    with pytest.raises(ValueError):
        select_from_means(np.zeros(383))


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float64, (4, 384), elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
    hnp.arrays(np.float64, (4, 384), elements=st.sampled_from([0.0, 0.5, 1.0])),
)
def test_cells_outside_the_descent_path_never_matter(table: FloatArray, noise: FloatArray) -> None:
    chosen = select_condition(table, range(4))
    winner_base = (chosen // 6) * 6
    visited = set(PHASE_W_COLUMNS) | set(range(winner_base, winner_base + 6))
    other = table.copy()
    untouched = [c for c in range(384) if c not in visited]
    other[:, untouched] = noise[:, untouched]
    assert select_condition(other, range(4)) == chosen


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, (5, 384), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0])))
def test_selection_never_scores_below_the_default(table: FloatArray) -> None:
    chosen = select_condition(table, range(5))
    means = table.mean(axis=0)
    assert means[chosen] >= means[DEFAULT_INDEX] - 1e-9
    # Phase W's winner is a best weight triple at k=60
    best_w = max(means[c] for c in PHASE_W_COLUMNS)
    assert means[chosen] >= best_w - 1e-9


# --------------------------------------------------------------------------- nested LOO


def test_nested_loo_with_a_uniform_winner() -> None:
    table = flat(4, 0.5)
    table[:, WINNER] = 0.8
    loo = nested_loo(table)
    assert loo.refit == WINNER
    assert loo.folds == 4
    assert loo.stability == 1.0
    assert loo.diffs == pytest.approx([0.3] * 4)


def test_nested_loo_stability_falls_when_folds_disagree() -> None:
    table = flat(4, 0.5)
    a = condition_index(3, 1, 1, 4)
    b = condition_index(1, 1, 1, 4)
    table[:2, a] = 0.9
    table[2:, b] = 0.9
    loo = nested_loo(table)
    assert loo.stability < 1.0
    assert set(loo.fold_selections) == {a, b}


def test_each_fold_scores_its_own_selection_on_the_held_out_query() -> None:
    # query 0 alone likes A; the other three like B.  Fold 0 (trained on 1-3)
    # picks B, so d_0 is B's value on query 0 (a loss), not the refit's.
    table = flat(4, 0.5)
    a = condition_index(3, 1, 1, 4)
    b = condition_index(1, 1, 1, 4)
    table[0, a] = 1.0
    table[0, b] = 0.2
    table[1:, b] = 0.8
    loo = nested_loo(table)
    assert loo.refit == b
    assert loo.fold_selections[0] == b
    assert loo.diffs[0] == pytest.approx(-0.3)


def test_single_effective_query_has_an_empty_training_set() -> None:
    table = flat(3, 0.5)
    table[:, WINNER] = 0.9
    loo = nested_loo(table, [1])
    assert loo.refit == WINNER
    assert loo.fold_selections == (DEFAULT_INDEX,)
    assert loo.diffs == (0.0,)
    assert loo.paired_se == math.inf


def test_no_effective_query() -> None:
    loo = nested_loo(flat(2), [])
    assert (loo.refit, loo.folds, loo.stability, loo.mean_delta) == (DEFAULT_INDEX, 0, 0.0, 0.0)


# --------------------------------------------------------------------------- decide


def test_decide_keeps_default_when_the_gain_is_small() -> None:
    table = flat(12, 0.5)
    table[:, WINNER] = 0.505
    v = decide(table, same(table))
    assert not v.adopt
    assert 2 in v.failed
    assert any("mean" in r for r in v.reasons)
    assert v.condition == Condition.from_index(DEFAULT_INDEX)


def test_decide_keeps_default_on_a_flat_landscape() -> None:
    v = decide(flat(12), same(flat(12)))
    assert not v.adopt
    assert v.failed[0] == 1
    assert v.reasons[0] == "refit selected the built-in defaults"
    assert v.decision == "keep_default"


def test_decide_adopts_a_large_consistent_gain() -> None:
    rng = np.random.default_rng(3)
    table = flat(12, 0.4) + rng.normal(0.0, 0.01, (12, 1))
    table[:, WINNER] += 0.30 + rng.normal(0.0, 0.01, 12)
    v = decide(table, same(table))
    assert isinstance(v, Verdict)
    assert v.adopt, v.reasons
    assert v.failed == () and v.reasons == ()
    assert v.condition.params.weights == (4.0, 1.0, 1.0)
    assert v.condition.rrf_k == 60.0
    assert v.held_out_mean == pytest.approx(0.30, abs=0.02)
    assert v.stability == 1.0
    assert v.permutation_p < 0.001


def _between_two_and_three_se() -> FloatArray:
    table = flat(12, 0.5)
    table[:, WINNER] = 0.5 + np.array([-0.02, 0.05, 0.12] * 4)
    return table


def test_a_gain_between_two_and_three_paired_se_is_rejected_at_the_shipping_multiplier() -> None:
    table = _between_two_and_three_se()
    v = decide(table, same(table))
    assert v.held_out_mean == pytest.approx(0.05)
    assert v.paired_se == pytest.approx(0.01723, abs=1e-5)
    assert 2.0 < v.held_out_mean / v.paired_se < 3.0
    assert not v.adopt
    assert v.failed == (3,)
    assert any("paired SE" in r for r in v.reasons)
    assert not any("threshold" in r for r in v.reasons)
    assert v.reasons[0] == "held-out mean delta +0.0500 <= 3.0 x paired SE 0.0517"
    assert decide(table, same(table), multiplier=2.0).adopt


def test_secondary_degradation_blocks_adoption_and_names_the_metrics() -> None:
    table = flat(12, 0.5)
    table[:, WINNER] = 0.9
    recall = flat(12, 0.8)
    recall[:, WINNER] = 0.7
    mrr = flat(12, 0.6)
    mrr[:, WINNER] = 0.5
    secondary = {"mrr": mrr, "recall@5": recall, "recall@1": flat(12, 0.4)}
    v = decide(table, secondary)
    assert not v.adopt
    assert v.failed == (5,)
    assert v.violations == ("recall@5 0.7000 < baseline 0.8000", "MRR 0.5000 < baseline 0.6000")
    assert v.reasons == (
        "secondary metrics degraded: recall@5 0.7000 < baseline 0.8000; "
        "MRR 0.5000 < baseline 0.6000",
    )
    assert list(v.secondary.values) == ["recall@1", "recall@5", "mrr"]


def test_secondary_check_has_no_tolerance() -> None:
    table = flat(3, 0.5)
    table[:, WINNER] = 0.9
    recall = flat(3, 0.5)
    recall[:, WINNER] = 0.5 - 1e-12
    v = decide(table, {"recall@5": recall})
    assert v.failed == (5,)
    assert v.reasons == ("secondary metrics degraded: recall@5 0.5000 < baseline 0.5000",)
    recall[:, WINNER] = 0.5
    assert decide(table, {"recall@5": recall}).adopt


def test_secondary_values_are_eval_means_but_the_check_is_exact() -> None:
    """Reported like ``groove eval`` (left-to-right sums); compared exactly, so the
    refit moving the same values between queries is no degradation -- and is shown
    with the default's value, so the JSON's full digits show no one-ulp drop."""
    table = flat(3, 0.5)
    table[:, WINNER] = 0.9
    recall = flat(3, 0.5)
    recall[:, DEFAULT_INDEX] = [0.1, 0.2, 0.3]  # 0.6000000000000001 summed in order
    recall[:, WINNER] = [0.3, 0.2, 0.1]  # 0.6 summed in order
    v = decide(table, {"recall@5": recall})
    shown = (0.1 + 0.2 + 0.3) / 3
    assert v.secondary.values["recall@5"] == (shown, shown)
    assert v.violations == () and v.adopt
    # a real difference is shown as eval computes each side
    recall[:, WINNER] = [0.3, 0.2, 0.2]
    v = decide(table, {"recall@5": recall})
    assert v.secondary.values["recall@5"] == (shown, (0.3 + 0.2 + 0.2) / 3)


def test_secondary_uses_all_rows_while_selection_uses_the_effective_ones() -> None:
    table = flat(13, 0.5)
    table[:12, WINNER] = 0.9
    recall = flat(13, 0.5)
    recall[12, WINNER] = 0.0  # only the non-effective query loses recall
    v = decide(table, {"recall@5": recall}, effective=range(12))
    assert v.failed == (5,)
    v_all_ok = decide(table, {"recall@5": flat(13, 0.5)}, effective=range(12))
    assert v_all_ok.adopt


def test_stability_of_exactly_one_half_fails() -> None:
    table = flat(4, 0.5)
    a = condition_index(3, 1, 1, 4)
    table[:, a] = 0.5 + np.array([0.4, 0.4, 0.4, 0.4])
    v = decide(table, same(table))
    assert v.stability == 1.0
    loo = nested_loo(table)
    # rebuild a LOO result with half the folds off the refit
    forged = type(loo)(loo.refit, loo.effective, (a, a, DEFAULT_INDEX, DEFAULT_INDEX), loo.diffs)
    verdict = decide_from_loo(forged, same(table))
    assert verdict.stability == 0.5
    assert 4 in verdict.failed
    assert "selection stability 0.50 <= 0.50 (folds disagree = overfit signal)" in verdict.reasons


def test_all_failing_reasons_are_listed_in_criterion_order() -> None:
    table = flat(12, 0.5)
    table[:, condition_index(1, 1, 1, 4)] = 0.5 + np.array([0.3, -0.3] * 6)
    v = decide(table, same(table))
    assert list(v.failed) == sorted(v.failed)
    assert len(v.failed) == len(v.reasons)


def test_an_infinite_se_fails_criterion_three() -> None:
    table = flat(3, 0.5)
    table[:, WINNER] = 0.9
    v = decide(table, same(table), effective=[0])
    assert v.paired_se == math.inf
    assert 3 in v.failed
    assert any("paired SE inf" in r for r in v.reasons)


def test_decide_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError):
        decide(np.zeros((3, 10)), {})
    with pytest.raises(ValueError):
        decide(flat(3), {"mrr": flat(2)})


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(np.float64, (6, 384), elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
    st.permutations(list(range(6))),
)
def test_decision_does_not_depend_on_query_order(table: FloatArray, order: list[int]) -> None:
    # quarter values make every column sum exact, so no rounding can reorder ties
    a = decide(table, same(table))
    b = decide(table[order], same(table[order]))
    assert (a.adopt, a.refit, a.failed) == (b.adopt, b.refit, b.failed)
    assert sorted(a.loo.diffs) == sorted(b.loo.diffs)
    assert a.stability == b.stability


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, (5, 384), elements=st.floats(0.0, 1.0)))
def test_verdict_invariants(table: FloatArray) -> None:
    v = decide(table, same(table))
    assert v.adopt == (v.failed == ())
    assert 0.0 <= v.stability <= 1.0
    assert v.paired_se >= 0.0
    if v.adopt:
        assert v.held_out_mean > 0.02
        assert v.held_out_mean > 3.0 * v.paired_se
        assert v.refit.index != DEFAULT_INDEX
        assert v.condition == v.refit
    else:
        assert v.condition.index == DEFAULT_INDEX


# --------------------------------------------------------------------------- report helpers


def test_per_query_impact_reports_the_worst_degradation() -> None:
    table = flat(3, 0.5)
    table[:, WINNER] = [0.75, 0.25, 0.5]
    impact = per_query_impact(table, WINNER)
    assert (impact.improved, impact.degraded) == (1, 1)
    assert impact.worst_delta == -0.25
    assert impact.worst_query == 1
    nothing = per_query_impact(flat(2), DEFAULT_INDEX)
    assert (nothing.worst_delta, nothing.worst_query) == (0.0, None)


def test_phase_w_ranking_is_stable_and_phase_k_ascends() -> None:
    table = flat(2, 0.5)
    table[:, WINNER] = 0.9
    ranking = phase_w_ranking(table, [0, 1])
    assert ranking[0] == (WINNER, 0.9)
    # the rest tie at 0.5 and keep grid order
    assert [c for c, _ in ranking[1:]] == list(PHASE_W_COLUMNS[:4])
    sweep = phase_k_sweep(table, [0, 1], WINNER)
    assert [Condition.from_index(c).rrf_k for c, _ in sweep] == [5.0, 10.0, 20.0, 30.0, 60.0, 100.0]


def test_moving_the_same_values_between_queries_is_not_a_degradation() -> None:
    # left-to-right float sums of a permutation differ: 0.1+0.2+0.3 != 0.3+0.2+0.1
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1
    table = flat(3, 0.5)
    table[:, WINNER] = 0.9
    recall = flat(3, 0.0)
    recall[:, DEFAULT_INDEX] = [0.1, 0.2, 0.3]
    recall[:, WINNER] = [0.3, 0.2, 0.1]
    v = decide(table, {"recall@5": recall})
    assert v.violations == ()
    assert v.adopt


# --------------------------------------------------------------------------- repeated queries


def test_copies_of_a_query_count_once_in_the_statistics() -> None:
    """Tripled rows shrink the paired SE by about sqrt(3) and turn a rejection into an
    adoption; as units (held out whole, counted once) they decide as the 12 queries do."""
    table = _between_two_and_three_se()
    once = decide(table, same(table))
    tripled = np.repeat(table, 3, axis=0)
    assert decide(tripled, same(tripled)).adopt  # the defect: copies look independent
    units = [(3 * i, 3 * i + 1, 3 * i + 2) for i in range(12)]
    v = decide(tripled, same(tripled), units=units)
    assert not v.adopt and v.failed == once.failed == (3,)
    assert (v.held_out_mean, v.paired_se, v.stability) == (
        once.held_out_mean,
        once.paired_se,
        once.stability,
    )
    assert v.loo.diffs == once.loo.diffs and v.loo.folds == 12
    assert v.loo.units == tuple(units) and v.loo.effective == tuple(range(36))


def test_phase_w_lists_the_selected_triple_before_those_it_ties_with() -> None:
    # flat: every triple ties, the default is selected -- grid order alone leaves it out
    ranking = phase_w_ranking(flat(3), [0, 1, 2], chosen=DEFAULT_INDEX)
    assert ranking[0] == (DEFAULT_INDEX, 0.5) and len(ranking) == 5
    # eight triples tie above the default; the centre tie-break picks the sixth of them
    table = flat(3, 0.5)
    table[:, list(PHASE_W_COLUMNS[:8])] = 0.9
    refit = decide(table, same(table)).refit.index
    assert refit == PHASE_W_COLUMNS[5]
    assert refit not in [c for c, _ in phase_w_ranking(table, [0, 1, 2])]
    ranking = phase_w_ranking(table, [0, 1, 2], chosen=refit)
    assert [c for c, _ in ranking] == [refit, *PHASE_W_COLUMNS[:4]]
    # a triple that beats the pick by more than the plateau tolerance stays above it
    table[:, PHASE_W_COLUMNS[7]] = 0.95
    ranking = phase_w_ranking(table, [0, 1, 2], chosen=refit)
    assert [c for c, _ in ranking[:2]] == [PHASE_W_COLUMNS[7], refit]
