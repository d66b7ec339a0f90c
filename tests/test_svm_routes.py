"""SVMClassifier's training routes (lkm.methods.svm.choose_route): the precomputed Gram and
LIBSVM's own kernel on the feature nodes fit the same model; the route rule; LIBSVM's
OpenMP thread limit is one during training and restored after."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris
from sklearn.model_selection import train_test_split
from svm_reference import canonical, libsvm_binary_decisions

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
    assert choose(11_982, 784.0, 2, "gaussian") == "precomputed"  # 1.15 GB, 8 bytes per entry
    assert choose(32_000, 784.0, 2, "gaussian") == "precomputed"  # 8.2 GB
    assert choose(60_000, 784.0, 2, "gaussian") == "rbf"  # 28.8 GB: over PRECOMPUTED_MAX_BYTES
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
    assert svm_module.choose_route(3_000, 784.0, 2, "gaussian") == "rbf"  # 72 MB > 40 MB
    assert svm_module.choose_route(1_000, 784.0, 2, "gaussian") == "precomputed"  # 8 MB


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


# ---------------------------------------------------------------- class_weight (LIBSVM's -wi)

#: Decision values of SVMClassifier before class_weight existed (commit 44fd0cf) on
#: standardized breast cancer, fit on X[::2], evaluated on X[1::40]: LIBSVM's model on the
#: rows in the order given (SVMClassifier has since trained on a canonical order).
_BEFORE_CLASS_WEIGHT = {
    "gaussian": [-1.77031696, 0.20692879, 0.34555793, -2.07143266, -0.85964481, -1.72663657, 1.74879347,
                 1.54150966, -1.48482492, 1.58414442, 1.88677479, -1.79388586, 0.9226015, -1.37455489,
                 1.02096558],
    "linear": [-4.75746273, 0.79071358, 0.74992968, -4.40886545, -4.73259031, -2.75512798, 4.74392442,
               2.76917409, -5.15131222, 2.15157832, 3.98757408, -3.5395487, 1.52345132, -11.7482078,
               5.52089237],
}


def _standardized_breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.mark.parametrize("kernel", ["gaussian", "linear"])
def test_class_weight_none_keeps_the_model(kernel: str) -> None:
    """class_weight=None is LIBSVM without per-label weights: the recorded model (LIBSVM
    on the rows as given) and SVMClassifier's (LIBSVM on its canonical row order)."""
    X, y = _standardized_breast_cancer()
    params = {"C": 2.0, "sigma": 4.0} if kernel == "gaussian" else {"C": 0.5, "kernel": "linear"}
    options = "-s 0 -t 2 -g 0.03125 -c 2.0" if kernel == "gaussian" else "-s 0 -t 0 -c 0.5"  # gamma = 1/(2 sigma^2)
    X_train, y_train, X_query = X[::2], y[::2], X[1::40]
    recorded = libsvm_binary_decisions(X_train, y_train == 1, X_query, options)
    np.testing.assert_allclose(recorded, _BEFORE_CLASS_WEIGHT[kernel], rtol=0, atol=1e-7)
    model = SVMClassifier(**params, class_weight=None).fit(X_train, y_train)
    order = canonical(X_train, y_train)
    reference = libsvm_binary_decisions(X_train[order], y_train[order] == 1, X_query, options)
    np.testing.assert_allclose(model.decision_function(X_query), reference, rtol=0, atol=1e-7)
    ones = SVMClassifier(**params, class_weight={0: 1.0, 1: 1.0}).fit(X_train, y_train)
    np.testing.assert_array_equal(ones.support_, model.support_)
    np.testing.assert_allclose(ones.decision_function(X), model.decision_function(X), rtol=0, atol=1e-12)


def test_class_weight_of_ones_equals_none_with_three_classes() -> None:
    X_train, y_train, X_test, _ = _split(load_iris)
    plain = SVMClassifier(C=2.0, sigma=1.0).fit(X_train, y_train)
    ones = SVMClassifier(C=2.0, sigma=1.0, class_weight={0: 1, 1: 1, 2: 1}).fit(X_train, y_train)
    np.testing.assert_allclose(ones.dual_coef_, plain.dual_coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ones.decision_function(X_test), plain.decision_function(X_test), rtol=0, atol=1e-12)


def test_balanced_class_weight_raises_minority_recall() -> None:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(300, 2)), rng.normal(size=(30, 2)) + 1.2])
    y = np.r_[np.zeros(300, int), np.ones(30, int)]
    Xt = np.vstack([rng.normal(size=(600, 2)), rng.normal(size=(600, 2)) + 1.2])
    yt = np.r_[np.zeros(600, int), np.ones(600, int)]
    recall = {cw: np.mean(SVMClassifier(sigma=1.0, class_weight=cw).fit(X, y).predict(Xt)[yt == 1] == 1)
              for cw in (None, "balanced")}
    assert recall["balanced"] > recall[None] + 0.2, recall


@pytest.mark.parametrize("class_weight", [{0: 3.0, 1: 0.5}, {1: 4.0}, "balanced"])
@pytest.mark.parametrize("route", ["precomputed", "own"])
def test_class_weight_matches_svc(class_weight, route: str, monkeypatch) -> None:
    from sklearn.svm import SVC

    X, y = _standardized_breast_cancer()
    X_train, y_train, X_test = X[::3], y[::3], X[1::7]
    sigma = 4.0
    ours = _fit_on(route, monkeypatch, SVMClassifier(C=2.0, sigma=sigma, tol=1e-8, class_weight=class_weight),
                   X_train, y_train)
    order = canonical(X_train, y_train)  # SVC on the rows in SVMClassifier's order
    svc = SVC(C=2.0, gamma=1.0 / (2.0 * sigma**2), tol=1e-8, class_weight=class_weight).fit(X_train[order],
                                                                                           y_train[order])
    np.testing.assert_allclose(ours.decision_function(X_test), svc.decision_function(X_test), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X_test), svc.predict(X_test))


def test_class_weight_matches_svc_with_three_classes() -> None:
    from sklearn.svm import SVC

    X_train, y_train, X_test, _ = _split(load_iris)
    weights = {0: 0.5, 1: 3.0, 2: 1.5}
    ours = SVMClassifier(C=2.0, sigma=1.0, tol=1e-8, class_weight=weights).fit(X_train, y_train)
    order = canonical(X_train, y_train)  # SVC on the rows in SVMClassifier's order
    svc = SVC(C=2.0, gamma=0.5, tol=1e-8, class_weight=weights, decision_function_shape="ovo").fit(X_train[order],
                                                                                                  y_train[order])
    # same dual solution (LIBSVM's label order and pair signs differ from SVC's: compared as sorted sets)
    assert ours.n_support_.sum() == svc.n_support_.sum()
    np.testing.assert_allclose(np.sort(np.abs(ours.dual_coef_.ravel())), np.sort(np.abs(svc.dual_coef_.ravel())),
                               rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.sort(np.abs(ours.rho_)), np.sort(np.abs(svc.intercept_)), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X_test), svc.predict(X_test))


def test_one_vs_rest_class_weights_give_each_side_its_rows_total_weight() -> None:
    """One-vs-rest: class c's model weighs c by its weight and the rest by its rows' mean
    weight; all-ones weights equal no weights, and a heavy class wins more test rows."""
    X_train, y_train, X_test, _ = _split(load_iris)
    plain = SVMClassifier(multiclass="ova").fit(X_train, y_train)
    ones = SVMClassifier(multiclass="ova", class_weight={0: 1.0, 1: 1.0, 2: 1.0}).fit(X_train, y_train)
    np.testing.assert_allclose(ones.decision_function(X_test), plain.decision_function(X_test), rtol=0, atol=1e-10)
    heavy = SVMClassifier(multiclass="ova", C=0.1, class_weight={0: 1.0, 1: 50.0, 2: 1.0}).fit(X_train, y_train)
    light = SVMClassifier(multiclass="ova", C=0.1).fit(X_train, y_train)
    assert (heavy.predict(X_test) == 1).sum() >= (light.predict(X_test) == 1).sum()
    weights, counts = np.array([1.0, 50.0, 1.0]), np.array([10, 30, 60])
    assert SVMClassifier._ova_weight_options(weights, counts, 1) == " -w1 50.0 -w-1 1.0"
    assert SVMClassifier._ova_weight_options(weights, counts, 0) == f" -w1 1.0 -w-1 {(50 * 30 + 60) / 90!r}"


@pytest.mark.parametrize("route", ["precomputed", "own"])
def test_the_model_does_not_depend_on_libsvms_cache_size(route: str, monkeypatch) -> None:
    """A cache of 0.05 MB (a few columns: LIBSVM recomputes most of them) and "auto" fit
    bit-identical models: the cache decides how often a column is computed, not its values."""
    X_train, y_train, X_test, _ = _split(load_digits, standardize=False)
    small = _fit_on(route, monkeypatch, SVMClassifier(C=3.0, sigma=2.0, cache_size=0.05), X_train, y_train)
    auto = _fit_on(route, monkeypatch, SVMClassifier(C=3.0, sigma=2.0), X_train, y_train)
    np.testing.assert_array_equal(small.support_, auto.support_)
    np.testing.assert_array_equal(small.dual_coef_, auto.dual_coef_)
    np.testing.assert_array_equal(small.rho_, auto.rho_)


def test_auto_cache_holds_every_own_kernel_column_within_the_memory_share(monkeypatch) -> None:
    monkeypatch.setattr(svm_module, "available_memory", lambda: (10 * 2**30, "test"))
    auto = SVMClassifier()
    assert auto._cache_mb(5_000, own_kernel=False) == svm_module.DEFAULT_CACHE_MB
    assert auto._cache_mb(1_000, own_kernel=True) == svm_module.DEFAULT_CACHE_MB  # 3.8 MB of columns
    assert auto._cache_mb(20_000, own_kernel=True) == pytest.approx(4.0 * 20_000**2 / 2**20)
    assert auto._cache_mb(60_000, own_kernel=True) == pytest.approx(0.4 * 10 * 1024)  # the share binds
    assert SVMClassifier(cache_size=50)._cache_mb(60_000, own_kernel=True) == 50.0


@pytest.mark.parametrize("multiclass", ["ovo", "ova"])
def test_check_input_false_fits_and_predicts_the_same_model(multiclass: str) -> None:
    """``check_input=False`` (SVM-KNN's local SVMs) skips scikit-learn's checks only."""
    X_train, y_train, X_test, _ = _split(load_iris)
    gram = np.exp(-((X_train[:, None] - X_train[None]) ** 2).sum(-1) / 8.0)
    query = np.exp(-((X_test[:, None] - X_train[None]) ** 2).sum(-1) / 8.0)
    checked = SVMClassifier(kernel="precomputed", multiclass=multiclass).fit(gram, y_train)
    trusted = SVMClassifier(kernel="precomputed", multiclass=multiclass).fit(gram, y_train, check_input=False)
    np.testing.assert_array_equal(checked.support_, trusted.support_)
    np.testing.assert_array_equal(checked.decision_function(query), trusted.decision_function(query, check_input=False))
    np.testing.assert_array_equal(checked.predict(query), trusted.predict(query, check_input=False))
