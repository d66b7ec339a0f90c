"""The benchmark's pairwise statistics (lkm.numerics.stats, issue 27) against published
worked examples and the definitions they come from: Demšar's (2006, JMLR 7) Wilcoxon
example (Table 2), Holm's step-down, Nemenyi p-values that agree with the critical
difference, and Benavoli et al.'s (2014, ICML) Bayesian signed-rank posterior."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_cross_paper import DEMSAR_METHODS, DEMSAR_TABLE6

from lkm.numerics.stats import (
    bayes_verdict,
    bayesian_signed_rank,
    holm,
    nemenyi_cd,
    nemenyi_p_values,
    pairwise_comparisons,
    signed_rank_posterior,
    wilcoxon_p,
)
from lkm.report.ranking import complete_scores


def test_wilcoxon_gives_demsars_table2_example() -> None:
    """C4.5+m against C4.5 on his 14 data sets: R+ = 93, R− = 12 (the two zero
    differences split), T = min = 12, below the critical 21 for N = 14 at α = 0.05."""
    c45, c45m = DEMSAR_TABLE6[:, 0], DEMSAR_TABLE6[:, 1]
    t, p = wilcoxon_p(c45m, c45)
    assert t == 12.0
    assert p < 0.05
    assert wilcoxon_p(c45, c45m) == (t, p)  # two-sided: symmetric


def test_wilcoxon_of_identical_scores_is_no_evidence() -> None:
    t, p = wilcoxon_p([0.8, 0.9, 0.7], [0.8, 0.9, 0.7])
    assert np.isnan(t) and p == 1.0


def test_holm_step_down_matches_the_hand_computation() -> None:
    # sorted p: 0.01, 0.03, 0.04 -> 3·0.01, max(0.03, 2·0.03), max(0.06, 1·0.04)
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])


def test_nemenyi_p_values_agree_with_the_critical_difference() -> None:
    """scikit-posthocs' p-values and Demšar's CD are one test: a pair's p < 0.05 exactly
    when its average ranks differ by at least CD (Table 6, tie broken as he did)."""
    table = DEMSAR_TABLE6.copy()
    table[12, 2] = 0.97501
    scores = pd.DataFrame(table, columns=DEMSAR_METHODS)
    p = nemenyi_p_values(scores)
    ranks = scores.rank(axis=1, ascending=False).mean()
    cd = nemenyi_cd(4, 14)
    for a in DEMSAR_METHODS:
        for b in DEMSAR_METHODS:
            if a != b:
                assert (p.loc[a, b] < 0.05) == (abs(ranks[a] - ranks[b]) >= cd)
    # Demšar: C4.5 and C4.5+m+cf, 1.18 ranks apart, fall just short of CD = 1.25
    assert 0.05 < p.loc["C4.5", "C4.5+m+cf"] < 0.1


def test_the_bayesian_posterior_is_baycomps_draw_for_draw() -> None:
    """Our einsum draws the same posterior as baycomp's loop (same seed)."""
    from baycomp import SignedRankTest

    rng = np.random.default_rng(1)
    for n in (3, 14, 26):
        a = rng.normal(80, 8, n)
        b = a + rng.normal(0.7, 1.5, n)
        ours = signed_rank_posterior(a, b, rope=1.0, seed=3, nsamples=2000)
        theirs = SignedRankTest.sample(a, b, rope=1.0, nsamples=2000, random_state=3)
        assert ours == pytest.approx(theirs, abs=1e-12)
        assert bayesian_signed_rank(a, b, seed=3, nsamples=2000) == \
            pytest.approx(SignedRankTest.probs(a, b, rope=1.0, nsamples=2000, random_state=3), abs=0)


def test_the_bayesian_posterior_mean_is_benavolis_closed_form() -> None:
    """Benavoli et al. (2014): w ~ Dir(s, 1, …, 1) over z = (0, b − a), θ_b =
    Σ_ij w_i w_j H(z_i + z_j − 2r); E[w_i w_j] = α_i(α_j + δ_ij)/(A(A + 1)), so the
    posterior mean of θ_b has a closed form the Monte Carlo draws must approach."""
    a = DEMSAR_TABLE6[:, 0] * 100
    b = DEMSAR_TABLE6[:, 1] * 100
    rope, s = 1.0, 0.5
    z = np.concatenate([[0.0], b - a])
    sums = z[:, None] + z[None, :]
    above = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    alpha = np.ones(z.size)
    alpha[0] = s
    total = alpha.sum()
    second_moment = (np.outer(alpha, alpha) + np.diag(alpha)) / (total * (total + 1))
    expected = float((second_moment * above).sum())
    draws = signed_rank_posterior(a, b, rope=rope, nsamples=50_000)
    assert draws[:, 2].mean() == pytest.approx(expected, abs=3e-3)
    assert draws.sum(axis=1) == pytest.approx(np.ones(len(draws)))


def test_the_bayesian_test_is_symmetric_and_decides_clear_cases() -> None:
    rng = np.random.default_rng(2)
    a = rng.normal(80, 8, 20)
    b = a + 5 + rng.normal(0, 0.5, 20)  # b better by ~5 points on every set
    pa, pr, pb = bayesian_signed_rank(a, b)
    assert pb > 0.99 and bayes_verdict(pa, pr, pb) == "worse"
    assert bayesian_signed_rank(b, a) == pytest.approx((pb, pr, pa))
    close = a + rng.normal(0, 0.1, 20)  # within a tenth of a point
    assert bayes_verdict(*bayesian_signed_rank(a, close)) == "equivalent"


def test_pairwise_comparisons_count_wins_and_correct_over_the_family() -> None:
    scores = pd.DataFrame(DEMSAR_TABLE6 * 100, columns=DEMSAR_METHODS)
    pairs = pairwise_comparisons(scores)
    assert [(c.a, c.b) for c in pairs][:3] == [("C4.5", "C4.5+m"), ("C4.5", "C4.5+cf"), ("C4.5", "C4.5+m+cf")]
    first = pairs[0]
    assert (first.wins, first.ties, first.losses) == (2, 2, 10)
    assert first.wilcoxon_t == 12.0
    raw = [c.wilcoxon_p for c in pairs]
    assert [c.holm_p for c in pairs] == pytest.approx(holm(raw).tolist())
    one = pairwise_comparisons(scores, [("C4.5+m", "C4.5")])
    assert one[0].holm_p == pytest.approx(one[0].wilcoxon_p)  # a family of one is not corrected


def test_pairwise_results_do_not_depend_on_the_order_of_data_sets() -> None:
    scores = pd.DataFrame(DEMSAR_TABLE6 * 100, columns=DEMSAR_METHODS)
    shuffled = scores.iloc[np.random.default_rng(0).permutation(len(scores))]
    a = [c.as_dict() for c in pairwise_comparisons(scores)]
    b = [c.as_dict() for c in pairwise_comparisons(shuffled)]
    for x, y in zip(a, b, strict=True):
        # the Bayesian draws see the differences in another order: equal up to Monte Carlo error
        for key in ("p_a_better", "p_rope", "p_b_better"):
            assert x.pop(key) == pytest.approx(y.pop(key), abs=0.02)
        x.pop("bayes"), y.pop("bayes")
        assert x == pytest.approx(y)


def test_complete_scores_drop_sets_before_methods() -> None:
    nan = np.nan
    table = pd.DataFrame({"A": [90, 80, 70, 60], "B": [91, nan, 71, 61], "C": [nan, nan, nan, 62],
                          "D": [89, 79, 69, 59]}, index=["d1", "d2", "d3", "d4"], dtype=float)
    scores, dropped_methods, dropped_sets = complete_scores(table)
    assert list(dropped_methods) == ["C"]  # results on 1 of 4 sets
    assert list(dropped_sets) == ["d2"]  # B has no result there
    assert list(scores.columns) == ["A", "B", "D"] and list(scores.index) == ["d1", "d3", "d4"]
