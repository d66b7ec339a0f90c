"""The benchmark's pairwise statistics (lkm.numerics.stats, issue 27) against published
worked examples and the definitions they come from: Demšar's (2006, JMLR 7) Wilcoxon
example (Table 2), Holm's step-down, Nemenyi p-values that agree with the critical
difference, and Benavoli et al.'s (2014, ICML) Bayesian signed-rank posterior."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_cross_paper import DEMSAR_METHODS, DEMSAR_TABLE6

from lkm.numerics import stats
from lkm.numerics.stats import (
    BAYES_NEAR_SAMPLES,
    BAYES_SAMPLES,
    bayes_mcse,
    bayes_verdict,
    bayesian_signed_rank,
    bayesian_signed_rank_pairs,
    canonical_differences,
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


def test_the_bayesian_posterior_is_baycomps_draw_for_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our prefix sums draw the same posterior as baycomp's loop (same seed) over the
    sorted differences, chunk boundaries included, sums exactly at ±2·rope (H = ½) and
    zero differences included, in either orientation."""
    from baycomp import SignedRankTest

    monkeypatch.setattr(stats, "BAYES_CHUNK", 700)  # several chunks, one not full
    rng = np.random.default_rng(1)
    cases = [(a, a + rng.normal(0.7, 1.5, n)) for n in (3, 14, 26) for a in [rng.normal(80, 8, n)]]
    whole = rng.integers(60, 95, 20).astype(float)  # whole points: differences of exactly ±2, ±1, 0
    cases += [(whole, whole + rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0], 20)),
              (whole, whole - rng.choice([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0], 20))]
    flips = set()
    for a, b in cases:
        diffs, flipped = canonical_differences(a, b)
        flips.add(flipped)
        theirs = SignedRankTest.sample(np.zeros(diffs.size), diffs, rope=1.0, nsamples=2000, random_state=3)
        ours = signed_rank_posterior(a, b, rope=1.0, seed=3, nsamples=2000)
        assert ours == pytest.approx(theirs[:, ::-1] if flipped else theirs, abs=1e-12)
        probs = SignedRankTest.probs(np.zeros(diffs.size), diffs, rope=1.0, nsamples=2000, random_state=3)
        assert bayesian_signed_rank(a, b, seed=3, nsamples=2000, near_samples=None) == \
            pytest.approx(probs[::-1] if flipped else probs, abs=0)
    assert flips == {True, False}


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
    assert bayesian_signed_rank(b, a) == (pb, pr, pa)  # the same draws, mirrored
    close = a + rng.normal(0, 0.1, 20)  # within a tenth of a point
    assert bayes_verdict(*bayesian_signed_rank(a, close)) == "equivalent"


#: Differences b − a over 12 data sets whose P(b better) is 0.9504 after the first
#: 100,000 draws: within two Monte Carlo standard errors (0.0007) of 0.95.
NEAR_THRESHOLD = np.array([-1.0, 4.0, 4.5, 4.0, 4.0, 2.5, 3.0, 2.0, -0.5, 0.0, 1.0, 0.0])


def test_a_probability_within_its_monte_carlo_error_of_the_threshold_decides_nothing() -> None:
    """Issue 42: 0.950 against 0.949 was Monte Carlo noise. A probability decides only when
    it clears 0.95 by more than two standard errors; a pair that does not after the
    first draws gets more (the same stream continued), and stays undecided if it still
    does not."""
    assert bayes_mcse(0.95, 100_000) == pytest.approx(math.sqrt(0.95 * 0.05 / 100_000))
    assert bayes_verdict(0.0, 0.0496, 0.9504, nsamples=100_000) == "undecided"  # 0.9504 − 2·0.00069 < 0.95
    assert bayes_verdict(0.0, 0.0485, 0.9515, nsamples=100_000) == "worse"  # 0.9515 − 0.0014 ≥ 0.95
    assert bayes_verdict(0.0, 0.0496, 0.9504, nsamples=2_000_000) == "worse"  # 0.9504 − 0.0003 ≥ 0.95
    assert bayes_verdict(0.9999, 0.0001, 0.0, nsamples=100) == "better"

    a = np.full(12, 80.0)
    first = bayesian_signed_rank(a, a + NEAR_THRESHOLD, near_samples=None)
    assert 0.95 <= first[2] < 0.95 + 2 * bayes_mcse(first[2])  # the old rule (P ≥ 0.95) decided it
    assert bayes_verdict(*first) == "undecided"
    probs, draws = bayesian_signed_rank_pairs([(a, a + 3 + NEAR_THRESHOLD), (a, a + NEAR_THRESHOLD)])
    assert draws.tolist() == [BAYES_SAMPLES, BAYES_NEAR_SAMPLES]  # only the pair near 0.95 is drawn again
    assert bayes_verdict(*probs[0], nsamples=draws[0]) == "worse"
    assert bayes_verdict(*probs[1], nsamples=draws[1]) == "undecided"
    assert abs(probs[1, 2] - 0.95) < 0.003  # 0.9488 after 2·10⁶ draws
    assert probs[0].tolist() == list(bayesian_signed_rank(a, a + 3 + NEAR_THRESHOLD))  # not the other pairs


def test_the_bayesian_answer_does_not_depend_on_the_order_of_data_sets() -> None:
    """Every probability identical, and so every decision, near the threshold too."""
    rng = np.random.default_rng(4)
    a = rng.normal(85, 6, 26).round(2)
    whole = rng.integers(70, 90, 12).astype(float)
    for x, y in ((a, a + rng.normal(0.8, 1.2, 26).round(2)), (whole, whole + NEAR_THRESHOLD)):
        probs, draws = bayesian_signed_rank_pairs([(x, y)], near_samples=300_000)
        for _ in range(2):
            order = rng.permutation(x.size)
            again, again_draws = bayesian_signed_rank_pairs([(x[order], y[order])], near_samples=300_000)
            assert again.tolist() == probs.tolist() and again_draws.tolist() == draws.tolist()
    assert draws[0] == 300_000  # drawn again: near the threshold


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
    """Every statistic of every pair — Wilcoxon, Holm, Nemenyi, the Bayesian probabilities,
    their draws and verdicts — is the same with the data sets in another order."""
    scores = pd.DataFrame(DEMSAR_TABLE6 * 100, columns=DEMSAR_METHODS)
    scores["near"] = scores["C4.5"] + np.resize(NEAR_THRESHOLD, len(scores))
    reference = [c.as_dict() for c in pairwise_comparisons(scores)]
    for seed in range(3):
        shuffled = scores.iloc[np.random.default_rng(seed).permutation(len(scores))]
        assert [c.as_dict() for c in pairwise_comparisons(shuffled)] == reference


def test_complete_scores_drop_sets_before_methods() -> None:
    nan = np.nan
    table = pd.DataFrame({"A": [90, 80, 70, 60], "B": [91, nan, 71, 61], "C": [nan, nan, nan, 62],
                          "D": [89, 79, 69, 59]}, index=["d1", "d2", "d3", "d4"], dtype=float)
    scores, dropped_methods, dropped_sets = complete_scores(table)
    assert list(dropped_methods) == ["C"]  # results on 1 of 4 sets
    assert list(dropped_sets) == ["d2"]  # B has no result there
    assert list(scores.columns) == ["A", "B", "D"] and list(scores.index) == ["d1", "d3", "d4"]


def test_the_ranking_does_not_depend_on_the_order_of_data_sets_or_methods() -> None:
    """Average ranks, Friedman and Iman–Davenport, the critical difference, the Nemenyi
    groups, and every pair's Wilcoxon, Holm, Nemenyi and Bayesian result are the same
    with the data sets (rows) and the methods (columns) shuffled."""
    from lkm.report.ranking import rank_methods

    rng = np.random.default_rng(7)
    skill = np.array([0.0, 0.4, 1.1, 1.9, 2.6, 3.8])
    table = pd.DataFrame(80 + skill + rng.normal(0, 1.5, (15, 6)).round(1),
                         index=[f"set{i}" for i in range(15)], columns=[f"m{j}" for j in range(6)])
    ref = rank_methods(table, "test")
    assert len(set(ref.friedman.ranks.values())) == 6  # no tied average ranks: the order is the ranks'
    assert {c.bayes_draws for c in ref.pairs} == {BAYES_SAMPLES, BAYES_NEAR_SAMPLES}  # a pair near 0.95 too
    for seed in range(1):
        shuffle = np.random.default_rng(seed)
        other = table.iloc[shuffle.permutation(15), shuffle.permutation(6)]
        again = rank_methods(other, "test")
        assert again.order == ref.order and again.groups == ref.groups and again.counts == ref.counts
        stats_again, stats_ref = again.friedman.as_dict(), ref.friedman.as_dict()
        assert stats_again.pop("average_ranks") == pytest.approx(stats_ref.pop("average_ranks"))
        assert stats_again == pytest.approx(stats_ref)
        assert again.cd == ref.cd
        for x, y in zip(again.pairs, ref.pairs, strict=True):
            assert x.as_dict() == pytest.approx(y.as_dict())
