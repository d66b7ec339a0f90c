"""lkm's estimators behave like their scikit-learn peers (issue 10, part 6):
``sigma="scale"`` is scikit-learn's ``gamma="scale"``, SVMClassifier has LIBSVM's
calibrated ``predict_proba`` (and the others a clear AttributeError), LPL with annoy
pickles, and `lkm methods` lists every estimator, untruncated."""

from __future__ import annotations

import io
import math
import pickle
import sys

import numpy as np
import pytest
from rich.console import Console
from sklearn.datasets import load_breast_cancer, load_iris, make_moons
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC
from svm_reference import canonical

import lkm.methods.svm as svm_module
from lkm.methods import (
    METHODS,
    NPPSSVM,
    LocalizedProjectionLearning,
    LocalRiskRegularization,
    ProjectionLearning,
    RegularizedLeastSquares,
    SVMClassifier,
    describe_estimators,
)
from lkm.methods.base import scaled_sigma
from lkm.numerics.kernels import DistanceCache, gaussian_gram


def _split(load) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = load(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
    mean, std = X_train.mean(axis=0), X_train.std(axis=0)
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


# ---------------------------------------------------------------- sigma="scale"


def test_scaled_sigma_is_sklearns_gamma_scale() -> None:
    X = np.random.default_rng(0).normal(size=(50, 7)) * 3.0
    gamma = 1.0 / (X.shape[1] * X.var())
    assert scaled_sigma(X) == pytest.approx(math.sqrt(1.0 / (2.0 * gamma)), rel=1e-12)
    assert scaled_sigma(X) == pytest.approx(math.sqrt(X.shape[1] * X.var() / 2.0), rel=1e-12)
    assert scaled_sigma(np.ones((5, 2))) == pytest.approx(math.sqrt(0.5))  # zero variance: gamma = 1


@pytest.mark.parametrize("cls", [ProjectionLearning, LocalizedProjectionLearning, SVMClassifier, NPPSSVM])
def test_scale_is_the_default_and_is_recorded(cls) -> None:
    X, y = make_moons(120, noise=0.3, random_state=0)
    X = X * 4.0
    # NPPS draws its initial patterns at random: the same seed for both fits (random_state=None
    # would give two selections, and two models, by design)
    seeded = {"random_state": 0} if "random_state" in cls().get_params() else {}
    model = cls(**seeded).fit(X, y)
    assert cls().sigma == "scale"
    assert model.sigma_ == pytest.approx(scaled_sigma(X)) and model.info_["sigma"] == model.sigma_
    # the same model as with that width given explicitly
    fixed = cls(sigma=model.sigma_, **seeded).fit(X, y)
    np.testing.assert_array_equal(model.decision_function(X), fixed.decision_function(X))


def test_scale_for_the_gaussian_kernel_of_rls_and_lrr() -> None:
    X, y = make_moons(80, noise=0.3, random_state=0)
    for cls in (RegularizedLeastSquares, LocalRiskRegularization):
        model = cls(kernel="gaussian").fit(X, y)
        assert model.sigma_ == pytest.approx(scaled_sigma(X)) and model.info_["sigma"] == model.sigma_


def test_scale_works_with_a_distance_cache_across_a_sweep() -> None:
    """The cache memoizes distances, not kernels: a width resolved at fit reuses them."""
    X, y = make_moons(100, noise=0.3, random_state=1)
    cache = DistanceCache()
    for sigma in ("scale", 0.5, "scale"):
        for cls in (ProjectionLearning, SVMClassifier):
            cached = cls(sigma=sigma).fit(X, y, cache=cache)
            plain = cls(sigma=sigma).fit(X, y)
            np.testing.assert_allclose(cached.decision_function(X, cache=cache), plain.decision_function(X), atol=1e-10)


def test_svm_scale_matches_svc_gamma_scale_on_breast_cancer() -> None:
    X_train, y_train, X_test, y_test = _split(load_breast_cancer)
    order = canonical(X_train, y_train)  # SVC trained on the rows in SVMClassifier's order
    ours, svc = SVMClassifier().fit(X_train, y_train), SVC().fit(X_train[order], y_train[order])
    np.testing.assert_array_equal(ours.predict(X_test), svc.predict(X_test))
    # LIBSVM stops at tol=1e-3 and the two builds evaluate the kernel with different round-off
    np.testing.assert_allclose(ours.decision_function(X_test), svc.decision_function(X_test), atol=5e-3)
    assert ours.n_support_.sum() == svc.n_support_.sum()
    assert np.mean(ours.predict(X_test) == y_test) > 0.95  # the issue: 0.805 with sigma = 1


def test_one_openmp_thread_on_the_precomputed_route_keeps_the_model(monkeypatch) -> None:
    """The small-data speed fix trains the precomputed route with one OpenMP thread;
    LIBSVM's own threads give the same model."""
    import contextlib

    monkeypatch.setattr(svm_module, "FORCE_ROUTE", "precomputed")
    X_train, y_train, X_test, _ = _split(load_breast_cancer)
    fast = SVMClassifier().fit(X_train, y_train)
    assert fast.info_["route"] == "precomputed"
    monkeypatch.setattr(svm_module, "_one_openmp_thread", contextlib.nullcontext)
    threaded = SVMClassifier().fit(X_train, y_train)
    np.testing.assert_array_equal(fast.support_, threaded.support_)
    np.testing.assert_array_equal(fast.decision_function(X_test), threaded.decision_function(X_test))


# ---------------------------------------------------------------- predict_proba


def _libsvm_probabilities(model, K: np.ndarray) -> np.ndarray:
    """LIBSVM's own svm_predict_probability on precomputed kernel rows (LIBSVM's label order)."""
    import ctypes

    from libsvm.svm import gen_svm_nodearray, libsvm

    n_class = model.get_nr_class()
    out = []
    for row in K:
        nodes, _ = gen_svm_nodearray([0.0, *row], isKernel=True)
        estimates = (ctypes.c_double * n_class)()
        libsvm.svm_predict_probability(model, nodes, estimates)
        out.append(list(estimates))
    return np.array(out)


@pytest.mark.parametrize("load", [load_breast_cancer, load_iris])
def test_svm_predict_proba_is_libsvms(load, monkeypatch) -> None:
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", "precomputed")
    X_train, y_train, X_test, _ = _split(load)
    models = []
    train = svm_module.svm_train
    monkeypatch.setattr(svm_module, "svm_train", lambda *a: models.append(train(*a)) or models[-1])
    clf = SVMClassifier(probability=True).fit(X_train, y_train)
    proba = clf.predict_proba(X_test)
    assert proba.shape == (len(X_test), clf.classes_.size)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    reference = np.empty_like(proba)
    # the model's precomputed-kernel columns are its training rows in the order LIBSVM got them
    order = canonical(X_train, y_train)
    reference[:, clf.libsvm_class_order_] = _libsvm_probabilities(
        models[-1], gaussian_gram(X_test, X_train[order], clf.sigma_))
    np.testing.assert_allclose(proba, reference, atol=1e-12)  # columns in classes_ order
    assert np.mean(clf.classes_[proba.argmax(axis=1)] == clf.predict(X_test)) > 0.9
    # -b 1 only adds the sigmoids: the classifier itself is unchanged
    np.testing.assert_array_equal(clf.predict(X_test), SVMClassifier().fit(X_train, y_train).predict(X_test))


@pytest.mark.parametrize("estimator", [SVMClassifier(), *(cls() for cls in METHODS.values() if cls is not SVMClassifier)])
def test_no_calibrated_route_means_a_clear_attribute_error(estimator) -> None:
    assert not hasattr(estimator, "predict_proba")
    with pytest.raises(AttributeError, match="predict_proba") as caught:
        estimator.predict_proba  # noqa: B018
    assert type(estimator).__name__ in str(caught.value)
    assert "probability=True" in str(caught.value)


# ---------------------------------------------------------------- pickling LPL with annoy


@pytest.mark.parametrize("random_state", [0, None, np.random.RandomState(3)])
def test_lpl_with_annoy_pickles(random_state) -> None:
    X, y = make_moons(300, noise=0.3, random_state=0)
    X_query, _ = make_moons(150, noise=0.3, random_state=1)
    model = LocalizedProjectionLearning(k=5, neighbors="annoy", n_trees=3, search_k=20,
                                        random_state=random_state).fit(X, y)
    before = model.decision_function(X_query)
    loaded = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(loaded.decision_function(X_query), before)
    np.testing.assert_array_equal(loaded.predict(X_query), model.predict(X_query))
    again = pickle.loads(pickle.dumps(loaded))  # a loaded model pickles too
    np.testing.assert_array_equal(again.predict(X_query), model.predict(X_query))
    np.testing.assert_array_equal(model.decision_function(X_query), before)  # the original still works


# ---------------------------------------------------------------- `lkm methods`


def test_static_descriptions_match_the_classes() -> None:
    """`lkm methods` reads parameters from the source without importing; they must be
    the classes' own."""
    rows = {r["key"]: r for r in describe_estimators()}
    from lkm.methods import NPPS

    assert rows["npps"]["kind"] == "sampler" and rows["npps"]["class"] == "lkm.methods.NPPS"
    for key, cls in [*METHODS.items(), ("npps", NPPS)]:
        expected = ", ".join(f"{k}={v!r}" for k, v in cls().get_params().items())
        assert sorted(rows[key]["parameters"].split(", ")) == sorted(expected.split(", ")), key
        assert rows[key]["kind"] == ("sampler" if key == "npps" else "classifier")
        assert rows[key]["doc"] and rows[key]["doc"].startswith(cls.__doc__.strip().split()[0])


@pytest.mark.parametrize(("terminal", "width", "table"), [(True, 250, True), (True, 60, False), (False, 250, False)])
def test_lkm_methods_never_truncates(monkeypatch, terminal: bool, width: int, table: bool) -> None:
    import lkm.cli.methods as cli_methods

    stdout = io.StringIO()
    console = Console(file=stdout, force_terminal=terminal, width=width, color_system=None, markup=False,
                      emoji=False, highlight=False, soft_wrap=True)
    monkeypatch.setattr(cli_methods, "console", console)
    # print_rows, the one table printer (sys.modules: the package's `app` attribute is the Typer app)
    monkeypatch.setattr(sys.modules["lkm.cli.app"], "console", console)
    cli_methods.methods()
    out = stdout.getvalue()
    assert ("│" in out) is table
    assert "…" not in out
    for row in describe_estimators():
        assert row["class"] in out and row["key"] in out
        if not table:  # plain: one tab-separated line per estimator, whole
            assert "\t".join(row.values()) in out.splitlines()
