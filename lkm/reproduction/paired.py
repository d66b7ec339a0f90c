"""Per-split scores of a method at its selected setting, and the paired test
(:func:`lkm.numerics.stats.paired_test`) of two methods over the splits they share — what
``tables/lrr_paired`` and every claims table (:mod:`lkm.papers`) read.

The Nadeau–Bengio correction uses n_test / n_train of the records (mean over the
shared splits): every protocol here (k-fold, hold-out repeats, realizations) draws
its splits from one pool of rows.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from lkm.numerics.stats import Paired, paired_test


def _setting(p: dict[str, Any]) -> str:
    return json.dumps(p, sort_keys=True, default=str)


def split_scores(ok: pd.DataFrame, best: pd.DataFrame, dataset: str, method: str,
                 others: dict[str, Any] | None = None, column: str = "accuracy") -> pd.DataFrame:
    """``column``, ``n_train`` and ``n_test`` per split (index: split id) of ``method`` on
    ``dataset`` at its selected setting (``best`` rows, :func:`lkm.report.aggregation.select_best`);
    ``others`` picks among several selected rows (e.g. ``{"k": 17}`` with ``selection.over``).
    Empty when the method is not in the run."""
    sel = best[(best["dataset"] == dataset) & (best["method"] == method)] if not best.empty else best
    if others and not sel.empty:
        sel = sel[sel["params"].map(lambda p: all(str(p.get(k)) == str(v) for k, v in others.items()))]
    if sel.empty:
        return pd.DataFrame(columns=[column, "n_train", "n_test"])
    return setting_scores(ok, dataset, method, sel.iloc[0]["params"], column)


def setting_scores(ok: pd.DataFrame, dataset: str, method: str, params: dict[str, Any],
                   column: str = "accuracy") -> pd.DataFrame:
    """``column``, ``n_train``, ``n_test`` per split of one (dataset, method, parameter setting)."""
    rows = ok[(ok["dataset"] == dataset) & (ok["method"] == method)]
    rows = rows[rows["params"].map(_setting) == _setting(params)]
    cols = [c for c in (column, "n_train", "n_test") if c in rows.columns]
    return rows.set_index("split")[cols].astype(float)


def compare_scores(a: pd.DataFrame, b: pd.DataFrame, column: str = "accuracy",
                   resampled: bool = True) -> Paired:
    """The paired test of a − b over their shared splits; ``resampled`` applies the
    Nadeau–Bengio correction from the records' n_test / n_train."""
    common = a.index.intersection(b.index)
    ratio = 0.0
    if resampled and len(common) and {"n_train", "n_test"} <= set(a.columns):
        n_train = float(a.loc[common, "n_train"].mean())
        ratio = float(a.loc[common, "n_test"].mean()) / n_train if n_train > 0 else 0.0
    return paired_test(a.loc[common, column].to_numpy(), b.loc[common, column].to_numpy(), test_train_ratio=ratio)


def compare(ok: pd.DataFrame, best: pd.DataFrame, dataset: str, a: str, b: str,
            a_others: dict[str, Any] | None = None, b_others: dict[str, Any] | None = None) -> Paired:
    """Accuracy of method ``a`` minus ``b`` on ``dataset``, each at its selected setting,
    paired over the splits both have."""
    return compare_scores(split_scores(ok, best, dataset, a, a_others), split_scores(ok, best, dataset, b, b_others))
