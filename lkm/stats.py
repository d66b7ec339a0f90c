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
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Significance level of every claims table.
ALPHA = 0.05


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
                f"p {_fmt_p(self.p)}")


def _fmt_p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def paired_test(a: np.ndarray, b: np.ndarray, *, test_train_ratio: float = 0.0, level: float = 0.95) -> Paired:
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
    if se == 0.0:
        return Paired(n, mean, mean, mean, 1.0 if mean == 0 else 0.0, wins, ties, losses, test_train_ratio)
    df = n - 1
    p = float(2.0 * student.sf(abs(mean / se), df))
    half = float(student.ppf(0.5 + level / 2.0, df)) * se
    return Paired(n, mean, mean - half, mean + half, p, wins, ties, losses, test_train_ratio)


def mcnemar(n: int, wrong_a: Iterable[Any], wrong_b: Iterable[Any], *, level: float = 0.95) -> Paired:
    """Accuracy of a − b on one fixed test set of ``n`` samples, from the samples each got
    wrong (McNemar's test: the split is fixed, so the test samples are the pairs).

    p is the exact two-sided binomial test of the discordant samples (a right and b wrong:
    ``wins``; the reverse: ``losses``) against 1/2; the interval is the Wald interval of
    the paired difference of proportions, ``mean ± z·sqrt((wins + losses)/n − mean²)/sqrt(n)``.
    No discordant sample: mean 0, p = 1.
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
    return Paired(n, mean, mean - half, mean + half, p, wins, ties, losses)


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
