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

from lkm.methods import METHOD_PATHS, LocalKernelClassifier, resolve_estimator

#: Registered classifiers whose fit takes no sample_weight (the rest weigh their loss).
UNWEIGHTED = ["pl", "lpl", "svm", "svm_knn", "hknn", "ldcv", "nhknn", "nldcv", "npps_svm", "lrr_pair", "nn"]
WEIGHTED = ["rls", "lrr", "prls", "laprls", "plaprls"]


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


def test_svm_reason_holds_libsvm_official_has_no_instance_weights() -> None:
    """SVMClassifier refuses sample_weight because libsvm-official's problem struct is
    (l, y, x): LIBSVM's instance weights live in a separate fork ("LIBSVM Tools:
    weights for data instances"), and scikit-learn's bundled copy is a second
    implementation. When a release adds a ``W`` field, implement sample_weight instead."""
    from libsvm.svm import svm_problem

    assert [name for name, _ in svm_problem._fields_] == ["l", "y", "x"]
    assert "class_weight" in resolve_estimator("svm")._get_param_names()  # the -wi weights the reason names


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
