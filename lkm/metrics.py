"""Scores of one fit beyond accuracy: balanced accuracy, macro-F1 and ROC AUC.

:func:`fit_scores` is what the runner records for every successful fit; the names in
:data:`SCORES` are the metrics a spec may select by (``selection: {metric: ...}``) and
that the report aggregates. ROC AUC needs decision values: the estimator's
``decision_function`` (or, without one, ``predict_proba``); it is None when the
estimator has neither, when they fail, or when the test part holds a single class.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: Every per-fit score a record may carry, in the order tables show them.
SCORES = ("accuracy", "balanced_accuracy", "macro_f1", "roc_auc")

#: How tables and figures name each score.
SCORE_LABELS = {
    "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy", "macro_f1": "macro-F1",
    "roc_auc": "ROC AUC",
}


def decision_values(est: Any, X: np.ndarray, cache: Any = None) -> np.ndarray | None:
    """The estimator's decision values on ``X`` (``decision_function``, else
    ``predict_proba``), passing ``cache`` only where accepted
    (:func:`lkm.methods.base.cache_kwargs`); None when it has neither
    or they fail (a missing score is not a failed fit)."""
    from lkm.methods.base import cache_kwargs

    for name in ("decision_function", "predict_proba"):
        fn = getattr(est, name, None)  # getattr: predict_proba may raise AttributeError by design
        if fn is None:
            continue
        try:
            values = fn(X, **cache_kwargs(est, name, cache))
        except Exception:  # noqa: BLE001  (a score we cannot compute is left out, the fit stands)
            return None
        values = np.asarray(values, dtype=float)
        if name == "predict_proba" and values.ndim == 2 and values.shape[1] == 2:
            values = values[:, 1]
        return values if np.all(np.isfinite(values)) else None
    return None


def roc_auc(y_true: np.ndarray, decision: np.ndarray | None, classes: np.ndarray) -> float | None:
    """ROC AUC from decision values: two classes, of the values for ``classes[1]`` (shape
    (n,)); more, the macro mean of one-vs-rest AUCs of each class's column over the
    classes present in ``y_true``. None without decision values or with one class."""
    from sklearn.metrics import roc_auc_score

    present = np.unique(y_true)
    if decision is None or present.size < 2:
        return None
    if decision.ndim == 1:
        if classes.size != 2:
            return None
        return float(roc_auc_score(y_true == classes[1], decision))
    if decision.shape[1] != classes.size:
        return None
    aucs = [roc_auc_score(y_true == c, decision[:, j]) for j, c in enumerate(classes) if c in present]
    return float(np.mean(aucs)) if aucs else None


def fit_scores(y_true: np.ndarray, y_pred: np.ndarray, decision: np.ndarray | None,
               classes: np.ndarray) -> dict[str, float | None]:
    """``balanced_accuracy``, ``macro_f1`` (over the classes in the test part and the
    predictions) and ``roc_auc`` (see :func:`roc_auc`) of one fit's test predictions."""
    from sklearn.metrics import balanced_accuracy_score, f1_score

    with warnings.catch_warnings():  # e.g. "y_pred contains classes not in y_true": expected on small test parts
        warnings.simplefilter("ignore")
        return {
            "balanced_accuracy": float(balanced_accuracy_score(y_true, y_pred)),
            "macro_f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
            "roc_auc": roc_auc(y_true, decision, np.asarray(classes)),
        }

