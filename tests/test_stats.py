"""The paired test every claims table uses (lkm.numerics.stats): hand-checkable p and CI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lkm.numerics.stats import count_words, paired_test


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
