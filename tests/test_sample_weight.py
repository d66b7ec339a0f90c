"""``fit(X, y, sample_weight=w)`` on an estimator without weights: one line naming the
public class and why (not Python's "unexpected keyword argument" naming a private base
class), while its signature stays without ``sample_weight`` (scikit-learn's
``has_fit_parameter`` and ``check_estimator`` see no weights)."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.utils.validation import has_fit_parameter
from svm_reference import canonical

from lkm.methods import METHOD_PATHS, LocalKernelClassifier, resolve_estimator

#: Registered classifiers whose fit takes no sample_weight (the rest weigh their loss).
UNWEIGHTED = ["pl", "lpl", "svm_knn", "hknn", "ldcv", "nhknn", "nldcv", "npps_svm", "lrr_pair", "nn"]
WEIGHTED = ["rls", "lrr", "prls", "laprls", "plaprls", "svm"]


def _data() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X[::8], y[::8]  # 72 rows, 30 features, two classes


def test_the_lists_cover_every_registered_classifier() -> None:
    assert sorted(UNWEIGHTED + WEIGHTED) == sorted(METHOD_PATHS)


@pytest.mark.parametrize("key", UNWEIGHTED)
def test_sample_weight_is_refused_in_one_line_naming_the_public_class(key: str) -> None:
    cls = resolve_estimator(key)
    X, y = _data()
    with pytest.raises(TypeError) as caught:
        cls().fit(X, y, sample_weight=np.ones(y.size))
    message = str(caught.value)
    assert message.startswith(f"{cls.__name__} does not take sample_weight: "), message
    assert "\n" not in message and "._" not in message and " _" not in message, message
    assert message.removeprefix(f"{cls.__name__} does not take sample_weight: ") == cls.sample_weight_refusal
    # the signature is the method's own: scikit-learn sees no weights
    assert "sample_weight" not in inspect.signature(cls.fit).parameters
    assert not has_fit_parameter(cls(), "sample_weight")


@pytest.mark.parametrize("key", ["hknn", "lpl", "svm"])
def test_sample_weight_none_is_the_unweighted_fit(key: str) -> None:
    cls = resolve_estimator(key)
    X, y = _data()
    plain = cls().fit(X, y).decision_function(X)
    np.testing.assert_array_equal(cls().fit(X, y, sample_weight=None).decision_function(X), plain)


@pytest.mark.parametrize("key", WEIGHTED)
def test_weighted_estimators_keep_their_sample_weight(key: str) -> None:
    cls = resolve_estimator(key)
    assert has_fit_parameter(cls(), "sample_weight")
    assert not getattr(cls.fit, "__lkm_refuses_sample_weight__", False)


def test_libsvm_official_still_has_no_instance_weights() -> None:
    """SVMClassifier fits weighted problems through scikit-learn's SVC because
    libsvm-official's problem struct is (l, y, x): LIBSVM's instance weights live in a
    separate fork ("LIBSVM Tools: weights for data instances"), and scikit-learn's bundled
    copy carries them. When a release adds a ``W`` field, train weighted fits on it."""
    from libsvm.svm import svm_problem

    assert [name for name, _ in svm_problem._fields_] == ["l", "y", "x"]


def _svc_like(est: Any) -> Any:
    """scikit-learn's SVC with SVMClassifier ``est``'s C, gamma = 1/(2σ²), tolerance and class weights."""
    from sklearn.svm import SVC

    return SVC(C=est.C, gamma=1.0 / (2.0 * est.sigma**2), tol=est.tol, class_weight=est.class_weight)


def _iris() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_svm_sample_weight_is_scikit_learns_weighted_svc_binary(class_weight: str | None) -> None:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    w = np.random.default_rng(0).uniform(0.1, 3.0, y.size)
    train, test = slice(0, 400), slice(400, None)
    est = resolve_estimator("svm")(C=2.0, sigma=3.0, class_weight=class_weight)
    est.fit(X[train], y[train], sample_weight=w[train])
    order = np.arange(y.size)[train][canonical(X[train], y[train])]  # SVC on SVMClassifier's row order
    ref = _svc_like(est).fit(X[order], y[order], sample_weight=w[order])
    np.testing.assert_allclose(est.decision_function(X[test]), ref.decision_function(X[test]), rtol=0, atol=1e-8)
    np.testing.assert_array_equal(est.predict(X[test]), ref.predict(X[test]))
    assert est.info_["backend"] == "sklearn-svc (sample_weight)"
    assert est.info_["sample_weight_sum"] == pytest.approx(w[train].sum())


def test_svm_sample_weight_is_scikit_learns_weighted_svc_multiclass() -> None:
    """One-vs-one: the votes of SVC's pairwise values (exactly) and its predictions;
    one-vs-rest: each class's weighted binary SVC's decision value."""
    X, y = _iris()
    w = np.random.default_rng(1).uniform(0.1, 3.0, y.size)
    train, test = np.arange(y.size) % 3 != 0, np.arange(y.size) % 3 == 0
    est = resolve_estimator("svm")(sigma=1.0).fit(X[train], y[train], sample_weight=w[train])
    order = np.flatnonzero(train)[canonical(X[train], y[train])]  # SVC on SVMClassifier's row order
    ref = _svc_like(est).set_params(decision_function_shape="ovo").fit(X[order], y[order], sample_weight=w[order])
    pairs = ref.decision_function(X[test])  # pairs (i, j), i < j, positive for i
    votes = np.zeros((pairs.shape[0], 3))
    for p, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        votes[:, i] += pairs[:, p] > 0
        votes[:, j] += pairs[:, p] <= 0
    np.testing.assert_array_equal(np.floor(est.decision_function(X[test])), votes)
    np.testing.assert_array_equal(est.predict(X[test]), ref.predict(X[test]))

    ova = resolve_estimator("svm")(sigma=1.0, multiclass="ova").fit(X[train], y[train], sample_weight=w[train])
    # each binary model on the same order as SVMClassifier's: the three-class canonical one
    columns = [_svc_like(ova).fit(X[order], (y[order] == c).astype(int), sample_weight=w[order]).decision_function(X[test])
               for c in range(3)]
    np.testing.assert_allclose(ova.decision_function(X[test]), np.column_stack(columns), rtol=0, atol=1e-8)


@pytest.mark.parametrize("multiclass", ["ovo", "ova"])
def test_svm_unit_weights_predict_as_the_unweighted_libsvm_fit(multiclass: str) -> None:
    """Same model, two LIBSVM builds (libsvm-official and scikit-learn's): identical
    predictions, decision values within the solvers' stopping tolerance."""
    X, y = _iris()
    est = resolve_estimator("svm")(sigma=1.0, multiclass=multiclass)
    plain = est.fit(X[::2], y[::2]).predict(X[1::2])
    unit = est.fit(X[::2], y[::2], sample_weight=np.ones(75)).predict(X[1::2])
    np.testing.assert_array_equal(unit, plain)


def test_svm_zero_weights_act_as_removed_rows() -> None:
    """scikit-learn's LIBSVM drops zero-weight rows before training (``remove_zero_weight``),
    so the model is the fit without them, given a numeric sigma (``"scale"`` is resolved
    from every row of X, weighted or not, as SVC's ``gamma="scale"``)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    w = np.random.default_rng(2).uniform(0.5, 2.0, 400)
    w[::3] = 0.0
    keep = w > 0
    est = resolve_estimator("svm")(sigma=3.0)
    zeroed = est.fit(X[:400], y[:400], sample_weight=w).decision_function(X[400:])
    removed = est.fit(X[:400][keep], y[:400][keep], sample_weight=w[keep]).decision_function(X[400:])
    np.testing.assert_allclose(zeroed, removed, rtol=0, atol=1e-8)
    assert ((zeroed > 0) == (removed > 0)).all()
    # scikit-learn numbers the support vectors within the kept rows; lkm maps them back
    assert (w[est.fit(X[:400], y[:400], sample_weight=w).support_] > 0).all()
    np.testing.assert_allclose(est.decision_function(X[400:]), zeroed, rtol=0, atol=0)


def test_svm_sample_weight_refusals_are_one_line() -> None:
    X, y = _data()
    svm = resolve_estimator("svm")
    with pytest.raises(ValueError, match=r"^SVMClassifier\(probability=True\) does not take sample_weight: [^\n]*$"):
        svm(probability=True).fit(X, y, sample_weight=np.ones(y.size))
    with pytest.raises(ValueError, match="sample_weight must be 72 finite non-negative numbers"):
        svm().fit(X, y, sample_weight=-np.ones(y.size))


def test_a_fit_taking_keywords_is_left_alone() -> None:
    class Keywords(LocalKernelClassifier):
        def fit(self, X: Any, y: Any, **fit_params: Any) -> Keywords:
            self.fit_params_ = fit_params
            return self

    est = Keywords().fit(np.zeros((2, 1)), [0, 1], sample_weight=[1.0, 2.0])
    assert est.fit_params_ == {"sample_weight": [1.0, 2.0]}


def test_a_user_subclass_without_a_reason_gets_the_generic_one() -> None:
    class Plain(LocalKernelClassifier):
        def fit(self, X: Any, y: Any) -> Plain:
            return self

    with pytest.raises(TypeError, match=r"^Plain does not take sample_weight: its fit has no per-sample weights$"):
        Plain().fit(np.zeros((2, 1)), [0, 1], sample_weight=[1.0, 1.0])
    with pytest.raises(TypeError, match="unexpected keyword argument 'weights'"):  # other keywords: Python's error
        Plain().fit(np.zeros((2, 1)), [0, 1], weights=[1.0, 1.0])


@pytest.mark.parametrize(("key", "params", "features"), [
    ("hknn", {}, 1),  # K = 10 > d + 1: hulls clipped
    ("ldcv", {"n_neighbors": 2}, 1),  # no K >= 2 admissible: 1-NN
    ("lpl", {"k": 50}, 3),  # k above the training rows: clipped
    ("npps_svm", {"k": 50}, 3),  # NPPS's k above the other patterns: clipped
])
def test_fit_warnings_still_point_at_the_caller(key: str, params: dict, features: int) -> None:
    """The refusing wrapper adds a frame: the fit warnings' stacklevels count it."""
    X = np.random.default_rng(0).normal(size=(12, features))
    y = np.arange(12) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resolve_estimator(key)(**params).fit(X, y)
    assert caught, key
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}, [(w.filename, str(w.message)) for w in caught]
