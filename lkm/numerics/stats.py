"""Paired comparison of two methods over the same splits: the one test every claims
table and ``tables/lrr_paired`` use.

The test is a two-sided **paired t-test on the per-split accuracy differences** with the
variance correction of Nadeau & Bengio (2003, "Inference for the generalization
error", Machine Learning 52) for splits drawn from one pool of data:

    d_i = a_i − b_i,  d̄ = mean(d),  s² = var(d, ddof=1),
    se = s · sqrt(1/n + n_test/n_train),  t = d̄ / se,  df = n − 1,
    95 % CI = d̄ ± t_{0.975, n−1} · se.

k-fold folds, hold-out repeats and resampled realizations share training rows, so
their differences are positively correlated and the plain t-test (``1/n`` alone) is
too confident (Dietterich 1998; Bouckaert & Frank 2004). ``test_train_ratio = 0``
gives the plain paired t-test, right for independent data sets (e.g. four draws of a
generator). The t-test, not Wilcoxon's signed-rank test, because its p-value and its
confidence interval of the mean difference are one statement (p < 0.05 exactly when the
95 % CI excludes 0) and because Wilcoxon cannot reach p < 0.05 with fewer than six
pairs.

On **one fixed split** (a predefined train/test split such as USPS's) there is one
accuracy per method, and the test samples are the pairs: :func:`mcnemar` is McNemar's
exact test on the samples one method gets right and the other wrong.

Words. *Significant*: p < alpha. *Not significant* says only that: it is not evidence
of equality. *Equivalent within ±m*: the whole 95 % CI lies inside (−m, m) (two
one-sided tests at level 2.5 % each, Schuirmann 1987) — the reading we use for the
papers' "comparable" and "almost the same".

*Could detect ≥ X at 80 % power*: :func:`detectable_effect`, the smallest true
difference the test would call significant four times in five, so that a claim the
numbers neither support nor refute says how large an effect would have shown.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: Significance level of every claims table.
ALPHA = 0.05
#: Power at which a claim that is neither shown nor refuted states what the test could detect.
POWER = 0.8
#: The equivalence margin (accuracy points) of every claim that states none of its own.
MARGIN_POINTS = 1.0


def detectable_effect(se: float, df: float, power: float = POWER, alpha: float = ALPHA) -> float:
    """The minimum detectable effect of a two-sided test at ``alpha`` with ``power``:
    ``(t_{1−α/2, df} + t_{power, df}) · se`` (the shift approximation to the noncentral
    t, which ignores the far tail; ``df = inf``: the normal quantiles). ``se``: the
    standard error of the estimated difference under no difference."""
    from scipy.stats import t as student

    if math.isnan(se) or math.isnan(df) or df <= 0:
        return math.nan
    return float(student.ppf(1.0 - alpha / 2.0, df) + student.ppf(power, df)) * se


@dataclass(frozen=True)
class Paired:
    """The result of :func:`paired_test`; differences are a − b in the input's units."""

    n: int
    mean: float
    ci_low: float
    ci_high: float
    p: float
    wins: int  # splits where a > b
    ties: int
    losses: int
    test_train_ratio: float = 0.0
    se: float = math.nan  # standard error of the mean difference under no difference
    df: float = math.nan  # its degrees of freedom (inf: normal)

    def detectable_effect(self, power: float = POWER, alpha: float = ALPHA) -> float:
        """The smallest |a − b| this test finds significant at ``alpha`` with ``power``
        (:func:`detectable_effect`): paired t, Nadeau–Bengio corrected where used,
        ``(t_{1−α/2,n−1} + t_{power,n−1}) · s·sqrt(1/n + ρ)``; McNemar: the normal
        approximation with the observed share of discordant samples (:func:`mcnemar`).
        NaN when untested."""
        return detectable_effect(self.se, self.df, power, alpha) if self.tested else math.nan

    @property
    def tested(self) -> bool:
        """At least two pairs: a p-value and an interval exist."""
        return self.n >= 2 and not math.isnan(self.p)

    def significant(self, alpha: float = ALPHA) -> bool:
        return self.tested and self.p < alpha

    def better(self, alpha: float = ALPHA) -> int:
        """+1: a significantly better; −1: b significantly better; 0: not significant (or untested)."""
        return 0 if not self.significant(alpha) else (1 if self.mean > 0 else -1)

    def equivalent(self, margin: float) -> bool:
        """The 95 % CI lies strictly inside (−margin, margin)."""
        return self.tested and -margin < self.ci_low and self.ci_high < margin

    def describe(self, scale: float = 100.0, unit: str = "") -> str:
        """``+1.23 [−0.45, +2.91], p 0.15`` (scaled, e.g. to accuracy points)."""
        if self.n == 0:
            return "no shared splits"
        if not self.tested:
            return f"{scale * self.mean:+.2f}{unit} (1 split, untested)"
        return (f"{scale * self.mean:+.2f}{unit} [{scale * self.ci_low:+.2f}, {scale * self.ci_high:+.2f}], "
                f"p {format_p(self.p)}")


def format_p(p: float | None) -> str:
    """A p-value as every table prints it: ``< 0.001``, ``0.023``, ``0.15``; "–" for none."""
    if p is None or math.isnan(p):
        return "–"
    return "< 0.001" if p < 0.001 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def paired_test(a: ArrayLike, b: ArrayLike, *, test_train_ratio: float = 0.0, level: float = 0.95) -> Paired:
    """Paired t-test of a − b over the same splits (module docstring), with the
    Nadeau–Bengio correction ``test_train_ratio`` = n_test / n_train (0: none).

    All differences equal: the interval is that value, p = 1 if it is 0 and p = 0
    otherwise. Fewer than two pairs: mean only, p and the interval NaN.
    """
    from scipy.stats import t as student

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = int(d.size)
    wins, ties, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    if n == 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan, 0, 0, 0, test_train_ratio)
    mean = float(d.mean())
    if n < 2:
        return Paired(n, mean, math.nan, math.nan, math.nan, wins, ties, losses, test_train_ratio)
    se = float(d.std(ddof=1)) * math.sqrt(1.0 / n + test_train_ratio)
    df = n - 1
    if se == 0.0:
        return Paired(n, mean, mean, mean, 1.0 if mean == 0 else 0.0, wins, ties, losses, test_train_ratio, se, df)
    p = float(2.0 * student.sf(abs(mean / se), df))
    half = float(student.ppf(0.5 + level / 2.0, df)) * se
    return Paired(n, mean, mean - half, mean + half, p, wins, ties, losses, test_train_ratio, se, df)


def mcnemar(n: int, wrong_a: Iterable[Any], wrong_b: Iterable[Any], *, level: float = 0.95) -> Paired:
    """Accuracy of a − b on one fixed test set of ``n`` samples, from the samples each got
    wrong (McNemar's test: the split is fixed, so the test samples are the pairs).

    p is the exact two-sided binomial test of the discordant samples (a right and b wrong:
    ``wins``; the reverse: ``losses``) against 1/2; the interval is the Wald interval of
    the paired difference of proportions, ``mean ± z·sqrt((wins + losses)/n − mean²)/sqrt(n)``.
    No discordant sample: mean 0, p = 1. Its detectable effect (:meth:`Paired.detectable_effect`)
    is the normal approximation to McNemar's test with the observed discordant share
    ``q = max(wins + losses, 1)/n`` held fixed, ``se = sqrt(q/n)`` with normal quantiles
    (Connor 1987 with the null variance on both sides, so slightly conservative).
    """
    from scipy.stats import binomtest, norm

    a, b = set(wrong_a), set(wrong_b)
    wins, losses = len(b - a), len(a - b)
    ties = n - wins - losses
    if n <= 0:
        return Paired(0, math.nan, math.nan, math.nan, math.nan, 0, 0, 0)
    mean = (wins - losses) / n
    discordant = wins + losses
    p = 1.0 if discordant == 0 else float(binomtest(wins, discordant, 0.5).pvalue)
    half = float(norm.ppf(0.5 + level / 2.0)) * math.sqrt(max(discordant / n - mean * mean, 0.0) / n)
    se0 = math.sqrt(max(discordant, 1) / n / n)
    return Paired(n, mean, mean - half, mean + half, p, wins, ties, losses, 0.0, se0, math.inf)


def rate_interval(rates: Any, n_test: Any, n_train: Any, *, resampled: bool = True,
                  level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval of a method's mean rate (accuracy or error, as fractions)
    over its splits — the interval the report compares a paper's number with.

    - **One split** (a fixed test set of ``n_test`` rows): the exact (Clopper–Pearson)
      binomial interval of ``round(rate · n_test)`` successes, since the test rows are
      the only sample.
    - **Several splits**: ``mean ± t_{(1+level)/2, n−1} · s · sqrt(1/n + ρ)`` with
      ``ρ = mean(n_test) / mean(n_train)`` when ``resampled`` (Nadeau–Bengio, as in
      :func:`paired_test`: the splits share training rows) and ``ρ = 0`` for splits that
      do not (independent draws, or semi-supervised realizations of a few labeled rows).
      When every split gives the same rate, the binomial interval of the pooled test
      rows is used, since ``s = 0`` would claim certainty.
    """
    r = np.asarray(rates, dtype=float).ravel()
    nt = np.broadcast_to(np.asarray(n_test, dtype=float), r.shape)
    keep = ~np.isnan(r)
    r, nt = r[keep], nt[keep]
    if r.size == 0:
        return math.nan, math.nan

    def binomial(successes: float, trials: float) -> tuple[float, float]:
        if not math.isfinite(trials) or not math.isfinite(successes):
            return math.nan, math.nan
        n = int(round(trials))
        if n <= 0:
            return math.nan, math.nan
        return _exact_binomial_interval(int(round(successes)), n, level)

    if r.size == 1 or float(r.std()) == 0.0:
        return binomial(float((r * nt).sum()), float(nt.sum()))
    ratio = 0.0
    if resampled:
        ntr = np.broadcast_to(np.asarray(n_train, dtype=float), keep.shape)[keep]
        ratio = float(nt.mean() / ntr.mean()) if ntr.mean() > 0 else 0.0
    se = float(r.std(ddof=1)) * math.sqrt(1.0 / r.size + ratio)
    half = _t_quantile(0.5 + level / 2.0, r.size - 1) * se
    return max(0.0, float(r.mean()) - half), min(1.0, float(r.mean()) + half)  # a rate lies in [0, 1]


# scipy's quantile and binomial test cost about a millisecond a call; a report asks for the
# same few (level, df) and (successes, trials) pairs thousands of times.
@functools.lru_cache(maxsize=4096)
def _t_quantile(q: float, df: int) -> float:
    """Student's t quantile ``q`` with ``df`` degrees of freedom (cached)."""
    from scipy.stats import t as student

    return float(student.ppf(q, df))


@functools.lru_cache(maxsize=65536)
def _exact_binomial_interval(successes: int, trials: int, level: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) ``level`` interval of ``successes`` of ``trials`` (cached)."""
    from scipy.stats import binomtest

    ci = binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def count_words(results: dict[str, Paired], a: str, b: str, alpha: float = ALPHA,
                margin: float | None = None) -> str:
    """``"A significantly better on 1, B on 2, not significant on 3 of 6"``, plus how many
    are equivalent within ``margin`` when one is given."""
    n = len(results)
    a_sig = sum(r.better(alpha) > 0 for r in results.values())
    b_sig = sum(r.better(alpha) < 0 for r in results.values())
    untested = sum(not r.tested for r in results.values())
    parts = []
    if a_sig:
        parts.append(f"{a} significantly better on {a_sig}")
    if b_sig:
        parts.append(f"{b} significantly better on {b_sig}")
    rest = n - a_sig - b_sig - untested
    if rest:
        parts.append(f"not significant on {rest}")
    if untested:
        parts.append(f"untested (one split) on {untested}")
    text = ", ".join(parts) + f" of {n}"
    if margin is not None:
        eq = sum(r.equivalent(margin) for r in results.values())
        text += f"; equivalent within ±{100 * margin:g} points on {eq}"
    return text


# -- comparisons of several methods over several data sets (Demšar 2006) ------------------
#
# J. Demšar, "Statistical comparisons of classifiers over multiple data sets", JMLR 7
# (2006) 1-30, Sec. 3.2.2. With N data sets and k methods, r_i^j is the rank of method j
# on data set i (1 = best, ties share the average of the ranks they span) and
# R_j = (1/N) Σ_i r_i^j its average rank. Under the null hypothesis that all methods are
# equivalent every R_j is (k + 1)/2, and
#
#     χ²_F = 12N / (k(k+1)) · [Σ_j R_j² − k(k+1)²/4]          (Friedman; χ², k − 1 df)
#     F_F  = (N − 1) χ²_F / (N(k − 1) − χ²_F)                  (Iman & Davenport;
#                                                               F, k − 1 and (k − 1)(N − 1) df)
#     CD   = q_α · sqrt(k(k+1) / (6N))                          (Nemenyi)
#
# Two methods whose average ranks differ by at least CD differ significantly (Nemenyi
# post-hoc test, meaningful after the Friedman test rejects). q_α is the Studentized
# range statistic for k groups and infinite degrees of freedom divided by sqrt(2)
# (Demšar's Table 5a: 1.960, 2.343, 2.569, ... for k = 2, 3, 4 at α = 0.05).


def _score_matrix(scores: Any) -> np.ndarray:
    a = np.asarray(scores, dtype=float)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2:
        raise ValueError(f"scores must be a data sets × methods array with at least 2 methods; got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("scores hold NaN or infinite values: drop the methods (or data sets) with missing results first")
    return a


def rank_matrix(scores: Any) -> np.ndarray:
    """Per data set (row), the rank of each method (column): 1 = the highest score,
    tied scores share the average of the ranks they span (Demšar 2006, Sec. 3.2.2)."""
    from scipy.stats import rankdata

    return np.asarray(rankdata(-_score_matrix(scores), method="average", axis=1), dtype=float)


def average_ranks(scores: Any) -> Any:
    """Average rank R_j of each method over the data sets (Demšar 2006, Sec. 3.2.2).

    ``scores``: a data sets × methods array or DataFrame, higher is better (accuracies).
    Rank 1 is the best method of a data set; ties get the average of the ranks they
    span (two methods tied for first both get 1.5). Returns a ``pandas.Series`` indexed
    by the columns for a DataFrame, else a 1-D array in column order.
    """
    ranks = rank_matrix(scores).mean(axis=0)
    columns = getattr(scores, "columns", None)
    if columns is not None:
        import pandas as pd

        return pd.Series(ranks, index=list(columns), name="average rank")
    return ranks


@dataclass(frozen=True)
class Friedman:
    """The result of :func:`friedman` (Demšar 2006, Sec. 3.2.2)."""

    n_datasets: int  # N
    n_methods: int  # k
    methods: tuple[str, ...]
    average_ranks: tuple[float, ...]  # R_j, in the order of ``methods``
    chi2: float  # Friedman's χ²_F, k − 1 degrees of freedom
    p_chi2: float
    f_f: float  # Iman and Davenport's F_F
    p_f: float  # F_F against F(k − 1, (k − 1)(N − 1))
    df1: int  # k − 1
    df2: int  # (k − 1)(N − 1)

    @property
    def ranks(self) -> dict[str, float]:
        """``{method: average rank}``."""
        return dict(zip(self.methods, self.average_ranks, strict=True))

    def significant(self, alpha: float = ALPHA) -> bool:
        """The Iman–Davenport test rejects "all methods are equivalent" at ``alpha``
        (Demšar recommends F_F over the more conservative χ²_F)."""
        return self.p_f < alpha

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (average ranks as ``{method: rank}``)."""
        return {
            "n_datasets": self.n_datasets, "n_methods": self.n_methods, "average_ranks": self.ranks,
            "chi2": self.chi2, "p_chi2": self.p_chi2, "f_f": self.f_f, "p_f": self.p_f,
            "df1": self.df1, "df2": self.df2,
        }


def friedman_from_ranks(ranks: Any, n_datasets: int, methods: Iterable[str] | None = None) -> Friedman:
    """Friedman's χ²_F and Iman–Davenport's F_F from the average ranks R_j of k methods
    over N data sets (Demšar 2006, Sec. 3.2.2; formulas in this module's section
    comment). F_F is infinite (p = 0) when every data set ranks the methods alike
    (χ²_F = N(k − 1)); with N = 1 there is no F test (F_F and its p are NaN)."""
    from scipy.stats import chi2 as chi2_dist
    from scipy.stats import f as f_dist

    R = np.asarray(ranks, dtype=float).ravel()
    k, N = int(R.size), int(n_datasets)
    if k < 2 or N < 1:
        raise ValueError(f"need at least 2 methods and 1 data set; got k={k}, N={N}")
    names = tuple(str(m) for m in methods) if methods is not None else tuple(str(j) for j in range(k))
    if len(names) != k:
        raise ValueError(f"{len(names)} method names for {k} average ranks")
    chi2 = 12.0 * N / (k * (k + 1)) * (float(np.sum(R**2)) - k * (k + 1) ** 2 / 4.0)
    chi2 = max(chi2, 0.0)  # round-off below 0 when all ranks are (k + 1)/2
    df1, df2 = k - 1, (k - 1) * (N - 1)
    p_chi2 = float(chi2_dist.sf(chi2, df1))
    denom = N * (k - 1) - chi2
    if df2 == 0:
        f_f, p_f = math.nan, math.nan
    elif denom <= 1e-12 * N * (k - 1):
        f_f, p_f = math.inf, 0.0
    else:
        f_f = (N - 1) * chi2 / denom
        p_f = float(f_dist.sf(f_f, df1, df2))
    return Friedman(N, k, names, tuple(float(r) for r in R), float(chi2), p_chi2, float(f_f), p_f, df1, df2)


def friedman(scores: Any) -> Friedman:
    """Friedman test of k methods over N data sets with Iman and Davenport's F_F
    (Demšar 2006, Sec. 3.2.2, the two equations after "The Friedman test").

    ``scores``: a data sets × methods array or DataFrame, higher is better; the methods
    are named by the DataFrame's columns (else "0", "1", ...). Ranks as in
    :func:`average_ranks`; χ²_F is the statistic *without* the tie correction, as
    Demšar writes it (the one scipy.stats.friedmanchisquare corrects for ties).
    """
    a = _score_matrix(scores)
    columns = getattr(scores, "columns", None)
    return friedman_from_ranks(rank_matrix(a).mean(axis=0), a.shape[0],
                               [str(c) for c in columns] if columns is not None else None)


def nemenyi_q(k: int, alpha: float = ALPHA) -> float:
    """q_α of the Nemenyi test for k methods: the Studentized range statistic of k groups
    and infinite degrees of freedom at 1 − α, divided by sqrt(2) (Demšar 2006, Table 5a:
    α = 0.05 gives 1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164 for
    k = 2 ... 10)."""
    from scipy.stats import studentized_range

    if int(k) < 2:
        raise ValueError(f"the Nemenyi test needs at least 2 methods; got k={k}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha}")
    return float(studentized_range.ppf(1.0 - alpha, int(k), math.inf)) / math.sqrt(2.0)


def nemenyi_cd(k: int, n: int, alpha: float = ALPHA) -> float:
    """Critical difference of the Nemenyi test, CD = q_α · sqrt(k(k+1)/(6N)), for k
    methods over N = ``n`` data sets (Demšar 2006, Sec. 3.2.2): two average ranks that
    differ by at least CD differ significantly at ``alpha``. k = 4, N = 14, α = 0.05
    gives 2.569 · sqrt(20/84) = 1.25 (the paper's example)."""
    if int(n) < 1:
        raise ValueError(f"need at least one data set; got n={n}")
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n))


# -- pairwise comparisons over data sets (issue 27) ---------------------------------------
#
# Mean-rank post-hoc tests (Nemenyi) compare two methods through the ranks of all the
# others, so adding or removing a method can change their verdict (Benavoli, Corani,
# Mangili 2016, JMLR 17). The pairwise tests below look at the two methods' own scores:
# Wilcoxon's signed-rank test on the per-data-set differences (Demšar 2006, Sec. 3.1.3;
# zero differences split between the two rank sums, "zsplit", as Demšar does) with
# Holm's step-down correction over the family of pairs, and the Bayesian signed-rank
# test of Benavoli et al. (2014, ICML; 2017, JMLR 18) with a region of practical
# equivalence. The libraries, not this module, compute them:
#   scipy.stats.wilcoxon ........................ the signed-rank test
#   statsmodels.stats.multitest.multipletests ... Holm's correction
#   scikit_posthocs.posthoc_nemenyi_friedman .... the Nemenyi p-value of every pair
#   baycomp ..................................... the Bayesian signed-rank test (the
#                                                 authors' implementation; we draw its
#                                                 posterior by one matrix product, checked equal)
# Friedman's χ²_F and Iman–Davenport's F_F above stay in Demšar's form: scipy's
# friedmanchisquare applies the tie correction, which Demšar's worked example does not.

#: Width of the region of practical equivalence (accuracy points) of the Bayesian test.
ROPE = 1.0
#: Posterior probability at which the Bayesian test decides (Benavoli et al. 2017).
BAYES_DECISION = 0.95
#: Monte Carlo draws of the Bayesian posterior for every pair, and their seed (same seed,
#: same numbers): a probability near the decision level has a Monte Carlo standard error
#: (:func:`bayes_mcse`) of sqrt(0.95 · 0.05 / 10⁵) = 0.0007.
BAYES_SAMPLES = 100_000
BAYES_SEED = 0
#: A posterior probability decides only when it clears :data:`BAYES_DECISION` by more
#: than this many Monte Carlo standard errors (issue 42: a pair at P = 0.950 must be
#: neither decided nor left undecided by the draws).
BAYES_MC_MARGIN = 2.0
#: Draws for a pair one of whose probabilities lies within BAYES_MC_MARGIN standard errors
#: of the decision level after :data:`BAYES_SAMPLES` (the same stream continued; standard
#: error 0.00015 at 0.95): draws go where they can change a verdict.
BAYES_NEAR_SAMPLES = 2_000_000
#: Posterior draws summed at a time (each array holds (n + 1) · chunk floats).
BAYES_CHUNK = 25_000


def wilcoxon_p(a: Any, b: Any) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of the paired scores ``a`` and ``b`` over data
    sets (scipy, ``zero_method="zsplit"``): ``(T, p)`` with T = min(R+, R−). All
    differences zero: ``(nan, 1.0)``."""
    from scipy.stats import wilcoxon

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not np.any(d):
        return math.nan, 1.0
    result = wilcoxon(np.asarray(a, dtype=float), np.asarray(b, dtype=float), zero_method="zsplit")
    return float(result.statistic), float(result.pvalue)


def holm(p_values: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values of a family of tests (statsmodels)."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return p
    return np.asarray(multipletests(p, method="holm")[1], dtype=float)


def nemenyi_p_values(scores: Any) -> Any:
    """The Nemenyi test's p-value of every pair of methods (columns) over the data sets
    (rows) of ``scores`` (scikit-posthocs' ``posthoc_nemenyi_friedman``): a symmetric
    DataFrame, 1 on the diagonal."""
    import pandas as pd
    import scikit_posthocs

    frame = pd.DataFrame(_score_matrix(scores), columns=[str(c) for c in getattr(scores, "columns", range(np.shape(scores)[1]))])
    return scikit_posthocs.posthoc_nemenyi_friedman(frame)


def dirichlet_stream(size: int, prior: float, seed: int, nsamples: int,
                     stops: Iterable[int] = ()) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``nsamples`` draws of Dir(prior, 1, …, 1) of dimension ``size`` from
    ``RandomState(seed)`` (baycomp's draws: the same stream as one
    ``dirichlet(weights, nsamples)`` call), :data:`BAYES_CHUNK` at a time and never across
    one of ``stops``: ``(draws so far, w, q)`` with the chunk ``w`` transposed to
    ``(size, rows)`` (one component of every draw a contiguous row) and its prefix sums
    over components 1…k, ``q[k] = w[1] + … + w[k]`` (``q[0] = 0``)."""
    weights = np.ones(size)
    weights[0] = prior
    random = np.random.RandomState(seed)
    bounds = sorted({*(int(s) for s in stops if 0 < s < nsamples), int(nsamples)})
    done = 0
    while done < nsamples:
        end = min(done + BAYES_CHUNK, next(b for b in bounds if b > done))
        w = np.ascontiguousarray(random.dirichlet(weights, end - done).T)
        q = np.zeros_like(w)
        for k in range(1, size):
            np.add(q[k - 1], w[k], out=q[k])
        done = end
        yield done, w, q


def canonical_differences(a: Any, b: Any) -> tuple[np.ndarray, bool]:
    """The per-data-set differences ``b − a`` in the order the Bayesian test draws them:
    sorted ascending, so that the posterior does not depend on the order of the data sets
    (issue 42). ``flipped`` is True when the sorted ``a − b`` comes first
    lexicographically and is returned instead; the test then draws for ``(b, a)`` and
    swaps the answer back, so that naming the methods the other way round gives the
    mirrored probabilities draw for draw (except when the differences are symmetric about
    0, where both orientations draw the same vector)."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    up, down = np.sort(d), np.sort(-d)
    differ = np.flatnonzero(up != down)
    flipped = bool(differ.size and down[differ[0]] < up[differ[0]])
    return (down if flipped else up), flipped


def _staircase(diffs: np.ndarray, rope: float, above: bool) -> tuple[float, np.ndarray, np.ndarray]:
    """Benavoli et al.'s quadratic form θ = Σ_ij w_i w_j H_ij over z = (0, ``diffs``),
    ``diffs`` ascending, H_ij = H(z_i + z_j − 2r) (``above``) or H(−z_i − z_j − 2r),
    H(0) = ½, with z_i + z_j rounded as baycomp adds them, in a few prefix sums
    Q_k = w_1 + … + w_k of each draw.

    Over j = 1…n a row of H is 0 …, ½ …, 1 … (``above``; the reverse below: rounding is
    monotone), so V_i = Σ_{j≥1} H_ij w_j = ½(Q_p + Q_q) below, Q_n − ½(Q_p + Q_q) above
    (p = q unless a sum is exactly ±2r). Rows 1…n with the same (p, q) form runs
    ending at rows h_1 < … < h_R = n, so Σ_{i≥1} w_i V_i = Σ_k (Q_{h_k} − Q_{h_{k−1}}) V_k
    = Σ_k Q_{h_k} (V_k − V_{k+1}) (V_{R+1} = 0), and, H being symmetric,
    θ = w_0 (H_00 w_0 + 2 V_0) + Σ_k Q_{h_k} (V_k − V_{k+1}): a handful of rows per
    draw instead of n² terms. Returns H_00, the (p, q) of row 0 and of each run, and
    the h_k."""
    z = np.concatenate([[0.0], diffs])
    n = diffs.size
    sums = z[:, None] + z[None, :]
    if not above:
        sums = -sums
    h = (sums > 2 * rope) + 0.5 * (sums == 2 * rope)
    ones, halves = (h[:, 1:] == 1).sum(axis=1), (h[:, 1:] == 0.5).sum(axis=1)
    pq = np.stack([n - ones, n - ones - halves] if above else [ones, ones + halves], axis=1)
    ends = [i for i in range(1, n + 1) if i == n or tuple(pq[i]) != tuple(pq[i + 1])]
    return float(h[0, 0]), pq[[0, *ends]], np.array(ends, dtype=np.intp)


def _quadratic_form(w: np.ndarray, q: np.ndarray, h00: float, pq: np.ndarray, ends: np.ndarray,
                    above: bool) -> np.ndarray:
    """θ of :func:`_staircase` for each draw (a column of ``w``, prefix sums ``q``)."""
    if np.array_equal(pq[:, 0], pq[:, 1]):
        v = q[pq[:, 0]]  # row 0, then each run
    else:
        v = q[pq[:, 0]] + q[pq[:, 1]]
        v *= 0.5
    if above:
        np.subtract(q[-1], v, out=v)
    theta = w[0] * (h00 * w[0] + 2.0 * v[0])
    v[1:-1] -= v[2:]
    theta += np.einsum("ij,ij->j", q[ends], v[1:])
    return theta


def _thetas(w: np.ndarray, q: np.ndarray, forms: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(θ_below, θ_above) of each draw of the chunk ``w`` (:func:`_staircase`'s ``forms``)."""
    (h00_b, pq_b, ends_b), (h00_a, pq_a, ends_a) = forms
    return _quadratic_form(w, q, h00_b, pq_b, ends_b, above=False), _quadratic_form(w, q, h00_a, pq_a, ends_a, above=True)


def signed_rank_posterior(a: Any, b: Any, rope: float = ROPE, seed: int = BAYES_SEED,
                          nsamples: int = BAYES_SAMPLES, prior: float = 0.5) -> np.ndarray:
    """Posterior draws ``(nsamples, 3)`` of (θ_a, θ_rope, θ_b) of Benavoli et al.'s
    Bayesian signed-rank test (ICML 2014, Sec. 4; a Dirichlet process with a pseudo-
    observation at 0 of weight ``prior``): θ_b = Σ_ij w_i w_j H(z_i + z_j − 2·rope),
    z = (0, b − a), w ~ Dir(prior, 1, …, 1), H(0) = ½; θ_a likewise below −2·rope.

    The differences are drawn in :func:`canonical_differences`' order (sorted), so the
    draws do not depend on the order of the data sets. They are baycomp's draws
    (``SignedRankTest.sample`` of the sorted differences, the same RandomState calls),
    summed through prefix sums (:func:`_staircase`) where baycomp loops over the draws
    in Python: tests/test_benchmark_stats.py checks the two agree to round-off."""
    diffs, flipped = canonical_differences(a, b)
    forms = (_staircase(diffs, rope, False), _staircase(diffs, rope, True))
    parts = [_thetas(w, q, forms) for _, w, q in dirichlet_stream(diffs.size + 1, prior, seed, nsamples)]
    below = np.concatenate([p[0] for p in parts])
    above = np.concatenate([p[1] for p in parts])
    out = np.empty((nsamples, 3))
    out[:, 0], out[:, 2] = (above, below) if flipped else (below, above)
    out[:, 1] = -below - above + 1  # baycomp's order of operations
    return out


def _winners(below: np.ndarray, above: np.ndarray) -> np.ndarray:
    """How many draws each region wins (baycomp's ``argmax``: the first on a tie)."""
    rope = -below - above + 1
    first = (below >= rope) & (below >= above)
    middle = ~first & (rope >= above)
    n_first, n_middle = np.count_nonzero(first), np.count_nonzero(middle)
    return np.array([n_first, n_middle, below.size - n_first - n_middle])


def bayesian_signed_rank_pairs(pairs: Iterable[tuple[Any, Any]], rope: float = ROPE, seed: int = BAYES_SEED,
                               nsamples: int = BAYES_SAMPLES, near_samples: int | None = BAYES_NEAR_SAMPLES,
                               prior: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bayesian_signed_rank` of many pairs ``(a, b)`` at once: the probabilities
    ``(len(pairs), 3)`` and the number of draws behind each pair's. Every pair gets
    ``nsamples`` draws; a pair with a probability within :data:`BAYES_MC_MARGIN` Monte
    Carlo standard errors of :data:`BAYES_DECISION` then gets ``near_samples`` (the same
    stream continued; ``None``: no second stage). A pair's answer depends only on its
    own scores (not on the order of the data sets, nor on the other pairs): pairs over
    the same number of data sets share one stream of draws, drawn once, a chunk at a
    time, as separate calls would draw it."""
    pairs = list(pairs)
    probs, draws = np.zeros((len(pairs), 3)), np.zeros(len(pairs), dtype=np.int64)
    canon = [canonical_differences(a, b) for a, b in pairs]
    total = max(nsamples, near_samples or 0)
    for size in sorted({d.size for d, _ in canon}):
        members = [i for i, (d, _) in enumerate(canon) if d.size == size]
        forms = [(_staircase(canon[i][0], rope, False), _staircase(canon[i][0], rope, True)) for i in members]
        counts = np.zeros((len(members), 3), dtype=np.int64)
        seen = np.zeros(len(members), dtype=np.int64)
        active = list(range(len(members)))
        for done, w, q in dirichlet_stream(size + 1, prior, seed, total, stops=[nsamples]):
            for k in active:
                counts[k] += _winners(*_thetas(w, q, forms[k]))
            seen[active] = done
            if done == nsamples:
                active = [k for k in active if any(bayes_near_threshold(c / done, done) for c in counts[k])]
                if not active:
                    break
        for k, i in enumerate(members):
            probs[i] = (counts[k][::-1] if canon[i][1] else counts[k]) / seen[k]
            draws[i] = seen[k]
    return probs, draws


def bayesian_signed_rank(a: Any, b: Any, rope: float = ROPE, seed: int = BAYES_SEED,
                         nsamples: int = BAYES_SAMPLES,
                         near_samples: int | None = BAYES_NEAR_SAMPLES) -> tuple[float, float, float]:
    """Benavoli et al.'s Bayesian signed-rank test of the paired scores ``a`` and ``b``
    over data sets: ``(P(a better by more than rope), P(within rope), P(b better by more
    than rope))``, each the share of posterior draws (:func:`signed_rank_posterior`) in
    which that region is the most probable (baycomp's ``Posterior.probs``), from
    ``nsamples`` draws or, near the decision level, ``near_samples``
    (:func:`bayesian_signed_rank_pairs`, which also gives the draws for
    :func:`bayes_mcse`). The answer does not depend on the order of the data sets."""
    p = bayesian_signed_rank_pairs([(a, b)], rope=rope, seed=seed, nsamples=nsamples, near_samples=near_samples)[0][0]
    return float(p[0]), float(p[1]), float(p[2])


def bayes_mcse(p: float, nsamples: int = BAYES_SAMPLES) -> float:
    """Monte Carlo standard error of a posterior probability estimated as the share ``p``
    of ``nsamples`` independent draws: sqrt(p(1 − p)/nsamples) (binomial; the draws are
    independent, so no batch estimate is needed)."""
    return math.sqrt(max(p * (1.0 - p), 0.0) / nsamples)


def bayes_clears(p: float, nsamples: int = BAYES_SAMPLES, decision: float = BAYES_DECISION,
                 margin: float = BAYES_MC_MARGIN) -> bool:
    """``p`` clears ``decision`` by more than ``margin`` Monte Carlo standard errors:
    p − margin · MCSE ≥ decision."""
    return p - margin * bayes_mcse(p, nsamples) >= decision


def bayes_near_threshold(p: float, nsamples: int = BAYES_SAMPLES, decision: float = BAYES_DECISION,
                         margin: float = BAYES_MC_MARGIN) -> bool:
    """``p`` lies within ``margin`` Monte Carlo standard errors of ``decision``: more
    draws, not the data, would settle which side it is on."""
    return abs(p - decision) < margin * bayes_mcse(p, nsamples)


def bayes_verdict(p_a: float, p_rope: float, p_b: float, decision: float = BAYES_DECISION,
                  nsamples: int = BAYES_SAMPLES) -> str:
    """``"better"``, ``"equivalent"``, ``"worse"`` (for the first method) when one posterior
    probability clears ``decision`` by more than its Monte Carlo error
    (:func:`bayes_clears`), else ``"undecided"``."""
    for word, p in (("better", p_a), ("equivalent", p_rope), ("worse", p_b)):
        if bayes_clears(p, nsamples, decision):
            return word
    return "undecided"


@dataclass(frozen=True)
class PairComparison:
    """Method ``a`` against method ``b`` over the same data sets (scores in points)."""

    a: str
    b: str
    wins: int  # data sets on which a scores higher than b
    ties: int
    losses: int
    mean_difference: float  # mean of a − b
    wilcoxon_t: float
    wilcoxon_p: float  # unadjusted
    holm_p: float  # Holm-adjusted over the family of pairs compared together
    nemenyi_p: float | None  # None when the pair was not part of a pool of methods
    p_a_better: float
    p_rope: float
    p_b_better: float
    bayes_draws: int = BAYES_SAMPLES  # Monte Carlo draws behind the three probabilities

    @property
    def bayes_mcse(self) -> tuple[float, float, float]:
        """Monte Carlo standard errors of ``p_a_better``, ``p_rope``, ``p_b_better``."""
        return (bayes_mcse(self.p_a_better, self.bayes_draws), bayes_mcse(self.p_rope, self.bayes_draws),
                bayes_mcse(self.p_b_better, self.bayes_draws))

    @property
    def bayes_near_threshold(self) -> bool:
        """One of the three probabilities is within its Monte Carlo error of the decision
        level (:func:`bayes_near_threshold`): undecided for want of draws."""
        return any(bayes_near_threshold(p, self.bayes_draws) for p in (self.p_a_better, self.p_rope, self.p_b_better))

    def significant(self, alpha: float = ALPHA) -> bool:
        """Wilcoxon–Holm rejects "a and b are equivalent" at ``alpha``."""
        return self.holm_p < alpha

    @property
    def bayes(self) -> str:
        """:func:`bayes_verdict` of this pair, for ``a``."""
        return bayes_verdict(self.p_a_better, self.p_rope, self.p_b_better, nsamples=self.bayes_draws)

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "bayes": self.bayes}


def pairwise_comparisons(scores: Any, pairs: Iterable[tuple[str, str]] | None = None, *,
                         rope: float = ROPE, seed: int = BAYES_SEED, tie_decimals: int = 9,
                         nsamples: int = BAYES_SAMPLES,
                         near_samples: int | None = BAYES_NEAR_SAMPLES) -> list[PairComparison]:
    """Wilcoxon–Holm, Nemenyi and Bayesian signed-rank comparisons of method pairs over the
    data sets of ``scores`` (a data sets × methods DataFrame of accuracies in points,
    complete). ``pairs`` defaults to every pair (a before b in column order); Holm's
    correction runs over the pairs compared. Scores equal to ``tie_decimals`` are ties."""
    import pandas as pd

    frame = pd.DataFrame(_score_matrix(scores), index=getattr(scores, "index", None),
                         columns=[str(c) for c in getattr(scores, "columns", range(np.shape(scores)[1]))]).round(tie_decimals)
    names = list(frame.columns)
    chosen = list(pairs) if pairs is not None else [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
    nemenyi = nemenyi_p_values(frame) if frame.shape[1] > 2 else None
    raw = []
    for a, b in chosen:
        x, y = frame[a].to_numpy(), frame[b].to_numpy()
        t, p = wilcoxon_p(x, y)
        raw.append((a, b, x, y, t, p))
    adjusted = holm([r[5] for r in raw])
    bayes, draws = bayesian_signed_rank_pairs([(r[2], r[3]) for r in raw], rope=rope, seed=seed,
                                              nsamples=nsamples, near_samples=near_samples)
    out = []
    for (a, b, x, y, t, p), p_holm, (pa, pr, pb), n in zip(raw, adjusted, bayes, draws, strict=True):
        d = x - y
        out.append(PairComparison(
            a, b, int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()), float(d.mean()), t, p, float(p_holm),
            float(nemenyi.loc[a, b]) if nemenyi is not None else None, float(pa), float(pr), float(pb), int(n)))
    return out
