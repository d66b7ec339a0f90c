"""SVMClassifier's training routes (lkm.methods.svm.choose_route): the precomputed Gram and
LIBSVM's own kernel on the feature nodes fit the same model; the route rule; LIBSVM's
OpenMP thread limit is one during training and restored after."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris
from sklearn.model_selection import train_test_split

import lkm.methods.svm as svm_module
from lkm.methods import SVMClassifier


def _split(load, standardize: bool = True, **kw) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = load(return_X_y=True, **kw)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    if not standardize:
        return X_train / 16.0, y_train, X_test / 16.0, y_test  # digits' pixels 0..16 to [0, 1]
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    std[std == 0] = 1.0
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


def _fit_on(route: str, monkeypatch: pytest.MonkeyPatch, estimator: SVMClassifier, X, y) -> SVMClassifier:
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", route)
    return estimator.fit(X, y)


def _assert_same_model(a: SVMClassifier, b: SVMClassifier, X_test: np.ndarray) -> None:
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.decision_function(X_test), b.decision_function(X_test), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(a.predict(X_test), b.predict(X_test))


@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_both_routes_fit_the_same_binary_model(kernel: str, monkeypatch) -> None:
    X_train, y_train, X_test, _ = _split(load_breast_cancer)
    make = lambda: SVMClassifier(C=2.0, kernel=kernel, sigma=4.0)  # noqa: E731
    pre = _fit_on("precomputed", monkeypatch, make(), X_train, y_train)
    own = _fit_on("own", monkeypatch, make(), X_train, y_train)
    assert pre.info_["route"] == "precomputed"
    assert own.info_["route"] == ("rbf" if kernel == "gaussian" else "linear")
    _assert_same_model(pre, own, X_test)
    np.testing.assert_allclose(pre.dual_coef_, own.dual_coef_, atol=1e-6)
    np.testing.assert_allclose(pre.rho_, own.rho_, atol=1e-6)


@pytest.mark.parametrize("multiclass", ["ovo", "ova"])
def test_both_routes_fit_the_same_multiclass_model(multiclass: str, monkeypatch) -> None:
    """Digits: 10 classes, 64 pixel features of which many are zero (sparse feature nodes)."""
    X_train, y_train, X_test, y_test = _split(load_digits, standardize=False)
    assert (X_train == 0).mean() > 0.3  # the own-kernel route stores only the nonzeros
    make = lambda: SVMClassifier(C=3.0, sigma=2.0, multiclass=multiclass)  # noqa: E731
    pre = _fit_on("precomputed", monkeypatch, make(), X_train, y_train)
    own = _fit_on("own", monkeypatch, make(), X_train, y_train)
    assert (pre.info_["route"], own.info_["route"]) == ("precomputed", "rbf")
    _assert_same_model(pre, own, X_test)
    assert np.mean(pre.predict(X_test) == y_test) > 0.95


def test_both_routes_fit_the_same_three_class_model_with_probability(monkeypatch) -> None:
    """(The Platt sigmoids themselves come from LIBSVM's CV on rand()'s folds, which differ
    from one training to the next on either route; the decision values do not.)"""
    X_train, y_train, X_test, _ = _split(load_iris)
    make = lambda: SVMClassifier(sigma=0.8, probability=True)  # noqa: E731
    pre = _fit_on("precomputed", monkeypatch, make(), X_train, y_train)
    own = _fit_on("own", monkeypatch, make(), X_train, y_train)
    _assert_same_model(pre, own, X_test)
    assert pre.predict_proba(X_test).shape == own.predict_proba(X_test).shape == (len(X_test), 3)


def test_route_rule_prefers_the_gram_for_many_features_and_libsvms_kernel_otherwise(monkeypatch) -> None:
    monkeypatch.setattr(svm_module, "available_memory", lambda: (2**40, "test"))
    choose = svm_module.choose_route
    assert choose(2_000, 784.0, 2, "gaussian") == "precomputed"  # MNIST pixels
    assert choose(11_982, 784.0, 2, "gaussian") == "precomputed"  # 2.3 GB of nodes
    assert choose(30_000, 784.0, 2, "gaussian") == "rbf"  # 14 GB: over PRECOMPUTED_MAX_BYTES
    assert choose(2_000, 16.0, 2, "gaussian") == "rbf"  # letter's 16 features
    assert choose(455, 30.0, 2, "gaussian") == "rbf"  # breast cancer
    assert choose(4_140, 57.0, 2, "gaussian") == "precomputed"  # spambase
    assert choose(2_000, 784.0, 26, "gaussian") == "rbf"  # one-vs-one pairs need only their rows
    assert choose(2_000, 784.0, 26, "gaussian", ova=True) == "precomputed"  # one Gram, 26 models
    assert choose(2_000, 784.0, 2, "linear") == "precomputed"
    assert choose(2_000, 16.0, 2, "linear") == "linear"
    assert choose(50, 3.0, 2, "precomputed") == "precomputed"


def test_route_rule_leaves_the_gram_when_memory_is_short(monkeypatch) -> None:
    monkeypatch.setattr(svm_module, "available_memory", lambda: (100 * 2**20, "test"))
    assert svm_module.choose_route(2_000, 784.0, 2, "gaussian") == "rbf"  # 64 MB > 25 MB
    assert svm_module.choose_route(1_000, 784.0, 2, "gaussian") == "precomputed"  # 16 MB


def test_mnist_like_features_take_the_precomputed_route_by_default() -> None:
    X_train, y_train, _, _ = _split(load_digits, n_class=2)
    X_wide = np.hstack([X_train] * 3)  # 192 features
    assert SVMClassifier().fit(X_wide, y_train).info_["route"] == "precomputed"
    assert SVMClassifier().fit(X_train[:, :16], y_train).info_["route"] == "rbf"


@pytest.mark.parametrize("route", ["precomputed", "own"])
def test_libsvm_trains_on_one_openmp_thread_and_the_limit_is_restored(route: str, monkeypatch) -> None:
    knob = svm_module._libsvm_openmp()
    if knob is None:
        pytest.skip("LIBSVM's OpenMP runtime is not reachable through its library handle here")
    get, set_ = knob
    seen = []
    to_model = svm_module.toPyModel
    monkeypatch.setattr(svm_module, "toPyModel", lambda m: seen.append(get()) or to_model(m))
    X_train, y_train, _, _ = _split(load_iris)
    before = get()
    set_(2)
    try:
        _fit_on(route, monkeypatch, SVMClassifier(), X_train, y_train)
        assert get() == 2
    finally:
        set_(before)
    assert seen == [1]  # one multi-class svm_train, on one thread


def test_scikit_learns_own_openmp_runtime_is_left_alone(monkeypatch) -> None:
    """Only LIBSVM's libgomp is limited, not the copy scikit-learn bundles (if loaded)."""
    from threadpoolctl import threadpool_info

    def threads() -> dict[str, int]:
        return {d["filepath"]: d["num_threads"] for d in threadpool_info() if d["user_api"] == "openmp"}

    seen = []
    to_model = svm_module.toPyModel
    monkeypatch.setattr(svm_module, "toPyModel", lambda m: seen.append(threads()) or to_model(m))
    before = threads()
    X_train, y_train, _, _ = _split(load_breast_cancer)
    SVMClassifier().fit(X_train, y_train)
    assert threads() == before
    limited = {path for path, n in seen[0].items() if n == 1 and before[path] != 1}
    assert len(limited) <= 1  # LIBSVM's runtime only (none if it already had one thread)
    assert all("scikit_learn" not in path for path in limited)


def test_bench_busy_core_runs_a_burner_only_inside_the_block() -> None:
    import multiprocessing

    from lkm.bench.speed import busy_core

    before = set(multiprocessing.active_children())
    with busy_core():
        burners = set(multiprocessing.active_children()) - before
        assert len(burners) == 1 and all(p.is_alive() for p in burners)
    assert not any(p.is_alive() for p in burners)
    assert set(multiprocessing.active_children()) == before
