"""SVMClassifier's LIBSVM problem layout and its optional scikit-learn-intelex backend."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris

from lkm.methods import SVMClassifier
from lkm.methods import svm as svm_module
from lkm.numerics.kernels import gaussian_gram


def _standardized(loader) -> tuple[np.ndarray, np.ndarray]:
    X, y = loader(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.mark.parametrize("n", [1, 2, 7, 40, 301])
def test_precomputed_problem_gives_libsvm_every_kernel_entry_and_serial_number(n: int, monkeypatch) -> None:
    """Two rows share one node array (8 bytes per entry): what LIBSVM reads through
    ``x[i][s].value`` must be the serial number (s = 0) and K[i, s - 1] of the rows in
    training order (here a shuffle of X's), for even and odd rows, across several blocks,
    with the upper triangle mirrored below; on both fillers (one distance block for n <= 3,
    blocks of distances beyond)."""
    monkeypatch.setattr(svm_module, "GRAM_BLOCK_BYTES", 8 * 3 * max(n, 1))  # blocks of 4 rows
    X = np.random.default_rng(0).normal(size=(n, 5))
    order = np.random.default_rng(1).permutation(n)
    K = gaussian_gram(X[order], X[order], 1.3)
    model = SVMClassifier(sigma=1.3)
    model.sigma_ = 1.3  # the filler reads the resolved width
    model.kernel = "gaussian"
    problem = svm_module._precomputed_problem(n, np.ones(n), model._gram_filler(X, None, order))
    read = np.array([[problem.x[i][s].value for s in range(n + 1)] for i in range(n)])
    np.testing.assert_array_equal(read[:, 0], np.arange(1, n + 1))  # positions in training order
    np.testing.assert_allclose(read[:, 1:], K, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(read[:, 1:], read[:, 1:].T)
    model.kernel = "linear"
    problem = svm_module._precomputed_problem(n, np.ones(n), model._gram_filler(X, None, order))
    read = np.array([[problem.x[i][s].value for s in range(1, n + 1)] for i in range(n)])
    np.testing.assert_allclose(read, X[order] @ X[order].T, rtol=1e-13, atol=1e-13)  # BLAS blocks round apart


def test_a_user_gram_is_copied_whole_not_mirrored() -> None:
    G = np.arange(16.0).reshape(4, 4)  # not symmetric: nothing may be inferred from half of it
    problem = svm_module._precomputed_problem(
        4, np.ones(4), lambda start, stop, first, out: np.copyto(out, G[start:stop, first:]), symmetric=False)
    read = np.array([[problem.x[i][s].value for s in range(1, 5)] for i in range(4)])
    np.testing.assert_array_equal(read, G)


def test_intelex_backend_fits_libsvms_model_to_the_solver_tolerance() -> None:
    pytest.importorskip("sklearnex")
    X, y = _standardized(load_breast_cancer)
    libsvm = SVMClassifier(C=10.0, sigma=4.0).fit(X, y)
    intelex = SVMClassifier(C=10.0, sigma=4.0, backend="intelex").fit(X, y)
    assert intelex.info_["route"] == "intelex"
    # both stop at tol = 1e-3 on the same dual: the values agree to about that, not bitwise
    np.testing.assert_allclose(intelex.decision_function(X), libsvm.decision_function(X), atol=2e-2)
    assert np.mean(intelex.predict(X) == libsvm.predict(X)) >= 0.995
    assert abs(intelex.info_["n_support"] - libsvm.info_["n_support"]) <= 3


@pytest.mark.parametrize("multiclass", ["ovo", "ova"])
def test_intelex_backend_agrees_with_libsvm_on_three_classes(multiclass: str) -> None:
    pytest.importorskip("sklearnex")
    X, y = _standardized(load_iris)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    make = lambda backend: SVMClassifier(C=3.0, sigma=1.0, multiclass=multiclass, backend=backend)  # noqa: E731
    libsvm, intelex = make("libsvm").fit(X, labels), make("intelex").fit(X, labels)
    np.testing.assert_array_equal(intelex.predict(X), libsvm.predict(X))
    if multiclass == "ova":
        np.testing.assert_allclose(intelex.decision_function(X), libsvm.decision_function(X), atol=2e-2)


def test_intelex_backend_takes_class_weight_and_refuses_platt_scaling() -> None:
    pytest.importorskip("sklearnex")
    X, y = _standardized(load_breast_cancer)
    weighted = SVMClassifier(C=1.0, sigma=4.0, class_weight={0: 5.0}, backend="intelex").fit(X, y)
    libsvm = SVMClassifier(C=1.0, sigma=4.0, class_weight={0: 5.0}).fit(X, y)
    np.testing.assert_allclose(weighted.decision_function(X), libsvm.decision_function(X), atol=2e-2)
    with pytest.raises(ValueError, match="backend='libsvm' with probability=True"):
        SVMClassifier(backend="intelex", probability=True).fit(X, y)


def test_libsvm_stays_the_default_backend() -> None:
    assert SVMClassifier().backend == "libsvm"


def test_bench_anchor_times_the_intelex_backend_or_says_why_not(monkeypatch) -> None:
    import importlib.util

    from lkm.bench.speed import intelex_anchor

    X, y = _standardized(load_breast_cancer)
    if importlib.util.find_spec("sklearnex") is not None:
        anchor = intelex_anchor(X[:300], y[:300], X[300:], y[300:], C=1.0, sigma=4.0)
        assert anchor["seconds"] > 0 and 0.9 < anchor["accuracy"] <= 1.0
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearnex" else real_find_spec(name, *a))
    assert "not installed" in intelex_anchor(X, y, X, y, C=1.0, sigma=4.0)["note"]


def test_bench_times_svc_given_lkms_memory_and_prints_it() -> None:
    from lkm.bench.speed import format_bench, svc_given_lkms_memory

    X, y = _standardized(load_breast_cancer)
    same = svc_given_lkms_memory(X[:300], y[:300], X[300:], y[300:], C=1.0, sigma=4.0)
    assert same["name"] == "SVC(cache_size=200)"  # 300² entries are far below the default
    assert same["seconds"] > 0 and 0.9 < same["accuracy"] <= 1.0
    row = {"name": "svm_x_vs_svc", "ours": "o", "reference": "r", "ours_seconds": 1.0, "reference_seconds": 2.0,
           "ratio": 0.5, "target": 1.1, "target_seconds": None, "passed": True, "ours_accuracy": 0.9,
           "reference_accuracy": 0.9, "same_memory": {**same, "seconds": 4.0}}
    assert "svm_x_vs_svc given lkm's memory: SVC(cache_size=200) 4.00 s (ours / it 0.25)" in format_bench([row])


def test_sparsest_translation_zeros_the_background_and_keeps_the_model(monkeypatch) -> None:
    """MNIST-like rows: a background value at each column's minimum. LIBSVM's own kernel gets
    the translated rows (fewer stored values), the fitted model is the same."""
    rng = np.random.default_rng(0)
    X = np.where(rng.random((400, 200)) < 0.8, -1.0, rng.uniform(-1, 1, (400, 200)))
    y = (X[:, :20].sum(axis=1) > X[:, :20].sum(axis=1).mean()).astype(int)
    Z = svm_module.sparsest_translation(X)
    assert np.count_nonzero(Z) < 0.3 * X.size
    np.testing.assert_allclose((Z - X)[0], (Z - X)[-1])  # one translation for every row
    small = X[:10, :10]
    assert svm_module.sparsest_translation(small) is small  # too small to be worth counting
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", "own")
    own = SVMClassifier(sigma=6.0).fit(X, y)
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", "precomputed")
    pre = SVMClassifier(sigma=6.0).fit(X, y)
    np.testing.assert_array_equal(own.support_, pre.support_)
    np.testing.assert_allclose(own.decision_function(X), pre.decision_function(X), atol=1e-6)
