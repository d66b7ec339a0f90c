"""Scores of one fit beyond accuracy: balanced accuracy, macro-F1 and ROC AUC.

:func:`fit_scores` is what the runner records for every successful fit; the names in
:data:`SCORES` are the metrics a spec may select by (``selection: {metric: ...}``) and
that the report aggregates. ROC AUC needs decision values: the estimator's
``decision_function`` (or, without one, ``predict_proba``); it is None when the
estimator has neither, when they fail, or when the test part holds a single class.
"""

from __future__ import annotations

import numpy as np

#: Every per-fit score a record may carry, in the order tables show them.
SCORES = ("accuracy", "balanced_accuracy", "macro_f1", "roc_auc")

#: How tables and figures name each score.
SCORE_LABELS = {
    "accuracy": "accuracy", "balanced_accuracy": "balanced accuracy", "macro_f1": "macro-F1",
    "roc_auc": "ROC AUC",
}


def _binary_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve as the Mann-Whitney statistic: the share of
    (positive, negative) pairs ranked correctly, ties counted one half — the trapezoidal
    ROC area scikit-learn's ``roc_auc_score`` gives, without its per-call validation
    (which cost more than the fits on small data)."""
    from scipy.stats import rankdata

    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    ranks = rankdata(score)  # average ranks: a tie between classes counts 1/2
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def roc_auc(y_true: np.ndarray, decision: np.ndarray | None, classes: np.ndarray) -> float | None:
    """ROC AUC from decision values: two classes, of the values for ``classes[1]`` (shape
    (n,)); more, the macro mean of one-vs-rest AUCs of each class's column over the
    classes present in ``y_true``. None without decision values or with one class."""
    present = np.unique(y_true)
    if decision is None or present.size < 2:
        return None
    if decision.ndim == 1:
        if classes.size != 2:
            return None
        return _binary_auc(y_true == classes[1], decision)
    if decision.shape[1] != classes.size:
        return None
    aucs = [_binary_auc(y_true == c, decision[:, j]) for j, c in enumerate(classes) if c in present]
    return float(np.mean(aucs)) if aucs else None


def fit_scores(y_true: np.ndarray, y_pred: np.ndarray, decision: np.ndarray | None,
               classes: np.ndarray) -> dict[str, float | None]:
    """``balanced_accuracy`` (mean recall over the classes in the test part), ``macro_f1``
    (mean F1 over the classes in the test part and the predictions, 0 where undefined) and
    ``roc_auc`` (see :func:`roc_auc`) of one fit's test predictions: scikit-learn's
    ``balanced_accuracy_score`` and ``f1_score(average="macro", zero_division=0)``, from
    one confusion matrix (tests/test_report_outputs.py checks them against scikit-learn)."""
    labels, index = np.unique(np.concatenate([y_true, y_pred]), return_inverse=True)
    k = labels.size
    confusion = np.bincount(index[: y_true.size] * k + index[y_true.size:], minlength=k * k).reshape(k, k)
    hits = np.diag(confusion).astype(float)
    true_counts, pred_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    recall = hits[true_counts > 0] / true_counts[true_counts > 0]
    f1_denominator = true_counts + pred_counts  # F1 = 2 TP / (2 TP + FP + FN)
    f1 = np.divide(2 * hits, f1_denominator, out=np.zeros(k), where=f1_denominator > 0)
    return {
        "balanced_accuracy": float(recall.mean()),
        "macro_f1": float(f1.mean()),
        "roc_auc": roc_auc(y_true, decision, np.asarray(classes)),
    }


def _float_or_zero(x: object) -> float:
    """An object label as a float for the finiteness test: None is NaN, text and other labels 0."""
    if x is None:
        return float("nan")
    return float(x) if isinstance(x, (float, np.floating)) else 0.0


def non_finite_rows(values: object) -> dict[str, int]:
    """How many rows of ``values`` (one per test row; 2-D: in any column) hold NaN (or
    None) and how many an infinity: ``{"NaN": 12}``, counts of zero left out. Labels that
    are text or integers are never non-finite."""
    v = np.asarray(values)
    if v.dtype == object:
        v = np.array([_float_or_zero(x) for x in v.ravel()], dtype=float).reshape(v.shape)
    elif v.dtype.kind != "f":
        return {}
    rows = v.reshape(len(v), -1) if v.ndim else v.reshape(1, 1)
    counts = {"NaN": int(np.isnan(rows).any(axis=1).sum()), "infinite values": int(np.isinf(rows).any(axis=1).sum())}
    return {what: n for what, n in counts.items() if n}


def one_class_warning(y_true: np.ndarray, y_pred: np.ndarray) -> str | None:
    """A warning when the predictions are one class and the true labels several: the
    classifier learnt nothing a score tells apart from a constant (None otherwise)."""
    predicted, present = set(np.asarray(y_pred).tolist()), set(np.asarray(y_true).tolist())
    if len(predicted) != 1 or len(present) < 2:
        return None
    return (f"predicted one class ({next(iter(predicted))}) for all {len(y_pred)} test rows, "
            f"which hold {len(present)} classes")
