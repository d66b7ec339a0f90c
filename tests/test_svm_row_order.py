"""SVMClassifier trains LIBSVM on its rows in a canonical order (class, then features), so
no prediction depends on the order the training rows came in — not LIBSVM's working-set
path, not its label order, which decides one-vs-one vote ties (issue 42, point 6)."""

from __future__ import annotations

import numpy as np
import pytest
from libsvm.svmutil import svm_predict, svm_problem, svm_train
from sklearn.datasets import make_blobs

import lkm.methods.svm as svm_module
from lkm.methods.base import canonical_row_order
from lkm.methods.svm import SVMClassifier, _parameter


@pytest.fixture(scope="module")
def blobs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Five overlapping classes and queries over their whole box: one-vs-one votes tie often."""
    X, y = make_blobs(300, centers=5, cluster_std=3.0, random_state=0)
    queries = np.random.default_rng(2).uniform(X.min(0), X.max(0), size=(4000, 2))
    return X, y, queries


def _votes(decision: np.ndarray) -> np.ndarray:
    return np.floor(decision)


@pytest.mark.parametrize("params", [
    {"multiclass": "ovo"}, {"multiclass": "ova"}, {"multiclass": "ovo", "kernel": "linear"},
])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("route", ["precomputed", "own"])
def test_predictions_do_not_depend_on_training_row_order(blobs, params, weighted, route, monkeypatch) -> None:
    """The same model bit for bit: LIBSVM's run, and the sums over the support vectors
    (kept in training order, one-vs-rest's union too)."""
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", route)  # the weighted fits go through SVC either way
    X, y, queries = blobs
    weights = np.random.default_rng(3).uniform(0.5, 2.0, size=len(y)) if weighted else None
    fits = []
    for seed in (None, 1, 2):
        perm = np.arange(len(y)) if seed is None else np.random.default_rng(seed).permutation(len(y))
        kw = {} if weights is None else {"sample_weight": weights[perm]}
        fits.append(SVMClassifier(C=1, sigma=2.0, **params).fit(X[perm], y[perm], **kw))
    first = fits[0]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.predict(queries), first.predict(queries))
        np.testing.assert_array_equal(other.decision_function(queries), first.decision_function(queries))
        np.testing.assert_array_equal(other.support_vectors_, first.support_vectors_)


def test_vote_ties_go_as_libsvm_decides_them_on_the_canonical_order(blobs) -> None:
    """lkm's one-vs-one prediction is LIBSVM's own ``svm_predict`` for the model trained on
    the canonical order — at vote ties too (LIBSVM: the label it lists first, which that
    order makes the lowest class index)."""
    X, y, queries = blobs
    ours = SVMClassifier(C=1, sigma=2.0, multiclass="ovo")
    predicted = ours.fit(X, y).predict(queries)
    tied = _votes(ours.decision_function(queries))
    top = np.sort(tied, axis=1)
    assert (top[:, -1] == top[:, -2]).sum() > 20  # the rule is exercised
    order = canonical_row_order(X, np.searchsorted(ours.classes_, y))
    model = svm_train(svm_problem(np.searchsorted(ours.classes_, y[order]).astype(float), X[order]),
                      _parameter(f"-s 0 -t 2 -c 1 -g {1 / (2 * 2.0 ** 2)!r} -q"))
    labels, _, _ = svm_predict(np.zeros(len(queries)), queries, model, "-q")
    np.testing.assert_array_equal(predicted, ours.classes_[np.asarray(labels, dtype=int)])
    np.testing.assert_array_equal(ours.libsvm_class_order_, np.arange(ours.classes_.size))


def test_canonical_order_is_the_same_for_any_input_order() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(50, 3)).astype(float)  # many equal rows
    y = rng.integers(0, 2, size=50)
    base = canonical_row_order(X, y)
    perm = rng.permutation(50)
    again = perm[canonical_row_order(X[perm], y[perm])]
    np.testing.assert_array_equal(np.column_stack([y, X])[again], np.column_stack([y, X])[base])


@pytest.mark.parametrize("levels", [1, 2, 3, None])  # None: continuous features, no ties
def test_canonical_order_is_numpys_lexsort_by_class_then_every_column(levels) -> None:
    """The run-by-run refinement gives exactly the order of one lexsort over all columns
    (the order the shipped SVM records were trained in), signed zeros and equal rows included."""
    rng = np.random.default_rng(levels or 0)
    for _ in range(200):
        n, p = rng.integers(1, 60), rng.integers(1, 8)
        X = rng.normal(size=(n, p)) if levels is None else rng.integers(0, levels, size=(n, p)) * 1.0
        X[rng.random(X.shape) < 0.2] = -0.0
        y = rng.integers(0, 3, size=n)
        np.testing.assert_array_equal(canonical_row_order(X, y), np.lexsort((*X.T[::-1], y)))


@pytest.mark.parametrize("multiclass", ["ovo", "ova"])
def test_platt_probabilities_are_the_same_for_the_same_fit(blobs, multiclass) -> None:
    """LIBSVM draws Platt scaling's inner folds from C's ``rand()``, one state per process:
    lkm seeds it per fit, so refitting the same model gives the same probabilities."""
    X, y, queries = blobs
    first = SVMClassifier(C=1, sigma=2.0, multiclass=multiclass, probability=True).fit(X, y).predict_proba(queries)
    SVMClassifier(C=3, sigma=1.0, probability=True).fit(X[::2], y[::2])  # moves the shared state
    again = SVMClassifier(C=1, sigma=2.0, multiclass=multiclass, probability=True).fit(X, y).predict_proba(queries)
    np.testing.assert_array_equal(again, first)
