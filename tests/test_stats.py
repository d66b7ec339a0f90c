"""The paired test every claims table uses (lkm.numerics.stats): hand-checkable p and CI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lkm.numerics.stats import count_words, detectable_effect, mcnemar, paired_test


def test_paired_t_matches_the_closed_form_with_two_degrees_of_freedom() -> None:
    # d = (0, 2, 4): mean 2, s = 2, se = 2/sqrt(3), t = sqrt(3), df = 2.
    # With 2 df: p = 1 - t / sqrt(t^2 + 2) and t_{0.975} = 0.95 * sqrt(2 / (4 * 0.975 * 0.025)).
    r = paired_test(np.array([1.0, 3.0, 5.0]), np.array([1.0, 1.0, 1.0]))
    assert r.n == 3 and r.mean == pytest.approx(2.0)
    assert r.p == pytest.approx(1 - math.sqrt(3) / math.sqrt(5))  # 0.2254
    half = 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025)) * 2 / math.sqrt(3)  # 4.3027 * 1.1547
    assert (r.ci_low, r.ci_high) == pytest.approx((2 - half, 2 + half))
    assert (r.wins, r.ties, r.losses) == (2, 1, 0)
    assert not r.significant() and not r.equivalent(1.0)


def test_nadeau_bengio_correction_widens_the_interval() -> None:
    # n_test / n_train = 1/3: se = 2 * sqrt(1/3 + 1/3), t = sqrt(1.5), p = 1 - t / sqrt(t^2 + 2)
    r = paired_test(np.array([0.0, 2.0, 4.0]), np.zeros(3), test_train_ratio=1 / 3)
    assert r.p == pytest.approx(1 - math.sqrt(1.5) / math.sqrt(3.5))  # 0.3453
    plain = paired_test(np.array([0.0, 2.0, 4.0]), np.zeros(3))
    assert r.ci_high - r.ci_low == pytest.approx((plain.ci_high - plain.ci_low) * math.sqrt(2))


def test_significance_and_ci_are_one_statement() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = rng.normal(0.02, 0.03, size=10)
        r = paired_test(d, np.zeros(10), test_train_ratio=1 / 9)
        assert r.significant() == (r.ci_low > 0 or r.ci_high < 0)


def test_constant_and_too_few_differences() -> None:
    same = paired_test(np.array([0.5, 0.6]), np.array([0.5, 0.6]))
    assert same.p == 1.0 and same.ci_low == same.ci_high == 0.0
    shifted = paired_test(np.array([0.6, 0.7]), np.array([0.5, 0.6]))
    assert shifted.p == 0.0 and shifted.better() == 1
    one = paired_test(np.array([0.6]), np.array([0.5]))
    assert not one.tested and math.isnan(one.p) and "untested" in one.describe()


def test_equivalence_needs_the_whole_interval_inside_the_margin() -> None:
    close = paired_test(np.full(10, 0.80) + np.linspace(-0.002, 0.002, 10), np.full(10, 0.80))
    assert close.equivalent(0.02) and not close.significant()
    noisy = paired_test(np.array([0.9, 0.7, 0.85, 0.75]), np.full(4, 0.8))
    assert not noisy.significant() and not noisy.equivalent(0.02)


def test_count_words_says_not_significant() -> None:
    up = paired_test(np.array([0.9, 0.91, 0.92]), np.array([0.8, 0.8, 0.81]))
    flat = paired_test(np.array([0.9, 0.7, 0.8]), np.array([0.8, 0.8, 0.8]))
    text = count_words({"a": up, "b": flat, "c": flat}, "SVM", "LPL")
    assert text == "SVM significantly better on 1, not significant on 2 of 3"


def test_mcnemar_counts_discordant_samples_and_matches_the_exact_binomial():
    from scipy.stats import binomtest

    from lkm.numerics.stats import mcnemar

    # a wrong on {1, 2}, b wrong on {2, 3, 4, 5, 6, 7, 8, 9}: a right where b wrong on 7, the reverse on 1
    res = mcnemar(100, [1, 2], [2, 3, 4, 5, 6, 7, 8, 9])
    assert (res.wins, res.losses, res.ties, res.n) == (7, 1, 92, 100)
    assert res.mean == pytest.approx(0.06)
    assert res.p == pytest.approx(binomtest(7, 8, 0.5).pvalue)
    assert res.tested and res.ci_low < res.mean < res.ci_high
    swapped = mcnemar(100, [2, 3, 4, 5, 6, 7, 8, 9], [1, 2])
    assert swapped.mean == -res.mean and swapped.p == res.p
    same = mcnemar(50, [3, 4], [4, 3])
    assert same.mean == 0 and same.p == 1.0 and not same.significant()
    # 30 discordant all one way is significant; the verdict words follow
    assert mcnemar(1000, [], range(30)).better() == 1


def test_detectable_effect_of_the_paired_t_agrees_with_statsmodels_power() -> None:
    # statsmodels solves the noncentral t exactly for the standardized effect d = δ / s;
    # the shift approximation (t_{0.975} + t_{0.80}) · s / sqrt(n) is within 2 % for n ≥ 5.
    from statsmodels.stats.power import TTestPower

    for n in (5, 10, 30):
        d = np.random.default_rng(n).normal(0.5, 1.0, n)
        r = paired_test(d, np.zeros(n))
        s = float(d.std(ddof=1))
        exact = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8) * s
        assert r.detectable_effect() == pytest.approx(exact, rel=0.02)


def test_detectable_effect_has_80_percent_power_in_a_simulation() -> None:
    # 10 independent differences of sd 2 around the detectable effect of their se: the t-test
    # finds about 80 % of 4,000 simulated runs significant.
    from scipy.stats import t as student

    n, sigma = 10, 2.0
    x = detectable_effect(sigma / math.sqrt(n), n - 1)
    d = x + sigma * np.random.default_rng(0).standard_normal((4000, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    assert 0.77 < float((np.abs(t) > student.ppf(0.975, n - 1)).mean()) < 0.83


def test_nadeau_bengio_correction_raises_the_detectable_effect_by_its_se_factor() -> None:
    d = np.array([0.0, 2.0, 4.0, 1.0, 3.0])
    plain, corrected = paired_test(d, np.zeros(5)), paired_test(d, np.zeros(5), test_train_ratio=1 / 4)
    assert corrected.detectable_effect() == pytest.approx(plain.detectable_effect() * math.sqrt((1 / 5 + 1 / 4) / (1 / 5)))


def test_detectable_effect_of_mcnemar_has_about_80_percent_power_in_a_simulation() -> None:
    # 2,007 test samples, 4 % of them discordant (USPS-like): simulate discordant counts whose
    # wins − losses equals the detectable effect and count the exact test's rejections.
    from scipy.stats import binomtest

    n, q = 2007, 0.04
    r = mcnemar(n, range(40), range(40, 40 + round(q * n) - 40))
    x = r.detectable_effect()
    assert x == pytest.approx((1.959964 + 0.841621) * math.sqrt(q / n), rel=0.01)
    rng = np.random.default_rng(1)
    p_win = (q + x) / 2 / q  # P(a right | discordant) that gives E[(wins − losses)/n] = x
    hits = 0
    for _ in range(1000):
        k = rng.binomial(n, q)
        w = rng.binomial(k, p_win)
        hits += binomtest(w, k, 0.5).pvalue < 0.05
    assert 0.72 < hits / 1000 < 0.86  # the exact test is a little more conservative than the normal one


def test_an_untested_comparison_has_no_detectable_effect() -> None:
    assert math.isnan(paired_test(np.array([1.0]), np.array([0.0])).detectable_effect())
