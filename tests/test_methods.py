"""PL, LPL and SVM: the paper's equations, LIBSVM agreement, caching, scikit-learn API."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from libsvm.svmutil import svm_predict, svm_train
from sklearn.model_selection import StratifiedKFold
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks
from svm_reference import canonical

import lkm.methods.svm as svm_module
from lkm.errors import ParameterClipped
from lkm.methods import (
    METHODS,
    LocalizedProjectionLearning,
    ProjectionLearning,
    SVMClassifier,
)
from lkm.methods.projection import EPS, RUN_DEPENDENT_INFO, auto_k
from lkm.numerics.kernels import DistanceCache, gaussian_kernel
from lkm.numerics.psd_pinv import psd_pinv_solve

# ---------------------------------------------------------------- data


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    return np.array([r[:-1] for r in rows], dtype=float), np.array([r[-1] for r in rows])


def _standardized_fold(X: np.ndarray, y: np.ndarray, n_splits: int = 5):
    train, test = next(StratifiedKFold(n_splits, shuffle=True, random_state=0).split(X, y))
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    return (X[train] - mean) / std, y[train], (X[test] - mean) / std, y[test]


@pytest.fixture(scope="module")
def sonar(data_dir: Path):
    """Sonar (208 x 60, string labels 'M'/'R'), one standardized stratified fold."""
    return _standardized_fold(*_read_csv(data_dir / "sonar" / "sonar.all-data"))


@pytest.fixture(scope="module")
def iris(data_dir: Path):
    return _standardized_fold(*_read_csv(data_dir / "iris" / "iris.data"))


def _blobs_with_duplicates(seed: int = 0):
    """Two Gaussian blobs whose rows repeat, some repeats with the opposite label."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1, size=(25, 3)), rng.normal(1, 1, size=(25, 3))])
    y = np.repeat([0, 1], 25)
    X = np.vstack([X, X[:6], X[30:33]])
    y = np.concatenate([y, y[:3], 1 - y[3:6], y[30:33]])  # rows 3..5 repeat with flipped labels
    return X, y


# ---------------------------------------------------------------- PL (eq. (4))


def test_pl_interpolates_training_labels_when_g_is_invertible() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 2, size=40)
    model = ProjectionLearning(sigma=0.5, solver="cholesky").fit(X, y)
    assert model.info_["route"] == "inverse" and model.info_["rank_G"] == 40
    assert ProjectionLearning(sigma=0.5).fit(X, y).info_["rank_G"] == 40
    np.testing.assert_allclose(model.decision_function(X), np.where(y == 1, 1.0, -1.0), atol=1e-8)
    np.testing.assert_array_equal(model.predict(X), y)


@pytest.mark.parametrize("n, rank", [(40, 12), (40, 30), (40, 39), (40, 40)])
@pytest.mark.parametrize("n_columns", [1, 3])
def test_psd_pinv_solve_equals_moore_penrose(n: int, rank: int, n_columns: int) -> None:
    """Both branches of (I + WᵀW)⁻¹ (Woodbury when n - r < r, direct otherwise)."""
    rng = np.random.default_rng(rank)
    B = rng.normal(size=(n, rank))
    G = B @ B.T
    Y = rng.normal(size=(n, n_columns)).squeeze()
    solution, r, route = psd_pinv_solve(G, Y)
    assert r == rank
    assert route == ("inverse" if rank == n else "pseudo-inverse")
    expected = np.linalg.pinv(G, hermitian=True) @ Y
    np.testing.assert_allclose(solution, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    assert np.array_equal(G, B @ B.T)  # not overwritten by default


def test_psd_pinv_solve_on_gram_matrix_with_repeated_rows() -> None:
    X, y = _blobs_with_duplicates()
    G = gaussian_kernel(X, X, sigma=1.0)
    Y = np.where(y == 1, 1.0, -1.0)
    solution, r, route = psd_pinv_solve(G, Y)
    assert route == "pseudo-inverse" and r == 50
    np.testing.assert_allclose(solution, np.linalg.pinv(G, hermitian=True) @ Y, rtol=1e-6, atol=1e-8)


def test_pl_equals_pinv_formula_with_repeated_and_conflicting_rows() -> None:
    """Merging repeated rows is exact: dual_coef_ = G⁺ y and f(x) = K(x, X) G⁺ y."""
    X, y = _blobs_with_duplicates()
    Q = np.random.default_rng(5).normal(size=(30, 3))
    model = ProjectionLearning(sigma=1.0).fit(X, y)
    G = gaussian_kernel(X, X, sigma=1.0)
    alpha = np.linalg.pinv(G, hermitian=True) @ np.where(y == 1, 1.0, -1.0)
    np.testing.assert_allclose(model.dual_coef_, alpha, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.decision_function(Q), gaussian_kernel(Q, X, sigma=1.0) @ alpha, atol=1e-8)
    assert model.info_["n_unique_rows"] == 50 and model.info_["rank_G"] == 50
    # conflicting duplicates average to 0 in both copies' fitted outputs
    np.testing.assert_allclose(model.decision_function(X[3:6]), 0.0, atol=1e-8)


def test_pl_block_diagonal_gram_is_solved_blockwise_exactly() -> None:
    """Small sigma: kernel entries underflow to exactly 0 between far groups of points."""
    rng = np.random.default_rng(3)
    centers = np.repeat(np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [40.0, 40.0]]), [12, 9, 1, 6], axis=0)
    X = centers + rng.normal(scale=0.3, size=centers.shape)
    X = np.vstack([X, X[:2], X[25:26]])  # repeated rows too
    y = rng.integers(0, 3, size=X.shape[0])
    sigma = 0.06
    G = gaussian_kernel(X, X, sigma=sigma)
    model = ProjectionLearning(sigma=sigma).fit(X, y)
    assert model.info_["n_blocks"] == 4  # the lone point is a 1×1 block
    Y = model._dummy_outputs(np.searchsorted(model.classes_, y))
    whole, rank, _ = psd_pinv_solve(G, Y)
    np.testing.assert_allclose(model.dual_coef_, whole, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.dual_coef_, np.linalg.pinv(G, hermitian=True) @ Y, rtol=1e-7, atol=1e-10)
    assert model.info_["rank_G"] == rank


# ---------------------------------------------------------------- LPL (Sec. 5)


def test_lpl_auto_k_is_the_papers_rule() -> None:
    rng = np.random.default_rng(0)
    for n, k in [(9, 1), (10, 2), (99, 2), (100, 3), (999, 3), (1000, 4)]:
        X, y = rng.normal(size=(n, 2)), np.arange(n) % 2
        model = LocalizedProjectionLearning().fit(X, y)
        assert model.k_ == k == auto_k(n)
        assert model.info_["k"] == k
    with pytest.warns(ParameterClipped, match=r"k=50 > 20 training rows; using k=20"):
        assert LocalizedProjectionLearning(k=50).fit(X[:20], y[:20]).k_ == 20  # clipped to ℓ


def test_lpl_with_k_equal_to_l_is_pl(sonar) -> None:
    X_train, y_train, X_test, _ = sonar
    sigma = 3.0
    G = gaussian_kernel(X_train, X_train, sigma=sigma)
    assert np.linalg.cond(G) < 1e6  # well-conditioned, so the two solvers must agree
    pl = ProjectionLearning(sigma=sigma).fit(X_train, y_train)
    lpl = LocalizedProjectionLearning(sigma=sigma, k=X_train.shape[0]).fit(X_train, y_train)
    np.testing.assert_allclose(lpl.decision_function(X_test), pl.decision_function(X_test), atol=1e-8)
    assert lpl.info_["singular_local_systems"] == 0


def test_lpl_batched_equals_per_point_loop() -> None:
    X, y = _blobs_with_duplicates(1)
    Q = np.vstack([np.random.default_rng(2).normal(size=(25, 3)), X[:4]])
    k, sigma = 6, 0.8
    model = LocalizedProjectionLearning(sigma=sigma, k=k).fit(X, y)
    Y = np.where(y == 1, 1.0, -1.0)
    expected = []
    for q in Q:
        near = np.argsort(((X - q) ** 2).sum(axis=1), kind="stable")[:k]
        G = gaussian_kernel(X[near], X[near], sigma=sigma)
        k_q = gaussian_kernel(q[None, :], X[near], sigma=sigma)[0]
        expected.append(k_q @ np.linalg.pinv(G, rcond=k * EPS, hermitian=True) @ Y[near])
    np.testing.assert_allclose(model.decision_function(Q), expected, atol=1e-9)
    assert model.info_["singular_local_systems"] > 0  # queries at repeated rows


# ---------------------------------------------------------------- SVM vs LIBSVM


def _libsvm_direct(X_train, labels, X_test, sigma: float, C: float = 1.0):
    """libsvm-official's own svm_train/svm_predict, on the training rows in SVMClassifier's
    canonical order (LIBSVM's solution and its vote ties follow the row order)."""
    order = canonical(X_train, labels)
    options = f"-s 0 -t 2 -g {1.0 / (2 * sigma**2)!r} -c {C!r} -q"
    model = svm_train(labels[order].astype(float), scipy.sparse.csr_matrix(X_train[order]), options)
    predicted, _, values = svm_predict(np.zeros(X_test.shape[0]), scipy.sparse.csr_matrix(X_test), model, "-q")
    return model, np.asarray(predicted), np.asarray(values)


@pytest.fixture(params=["precomputed", "rbf"])
def svm_route(request, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rbf":
        monkeypatch.setattr(svm_module, "PRECOMPUTED_MAX_BYTES", 0)
    return request.param


def test_svm_binary_decisions_equal_libsvm(sonar, svm_route: str) -> None:
    X_train, y_train, X_test, y_test = sonar
    classes = np.unique(y_train)
    ours = SVMClassifier(C=2.0, sigma=4.0).fit(X_train, y_train)
    assert ours.info_["route"] == svm_route
    model, predicted, values = _libsvm_direct(
        X_train, np.where(y_train == classes[1], 1.0, -1.0), X_test, sigma=4.0, C=2.0
    )
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0  # LIBSVM: positive = its first label
    np.testing.assert_allclose(ours.decision_function(X_test), sign * values[:, 0], atol=1e-8)
    np.testing.assert_array_equal(ours.predict(X_test), classes[(predicted == 1).astype(int)])
    assert ours.info_["n_support"] == model.get_nr_sv()
    assert np.mean(ours.predict(X_test) == y_test) > 0.7


def test_svm_multiclass_predictions_equal_libsvm(iris, svm_route: str) -> None:
    X_train, y_train, X_test, _ = iris
    # a query grid around the data makes one-vs-one vote ties likely
    grid = np.random.default_rng(0).uniform(-3, 3, size=(400, 4))
    X_query = np.vstack([X_test, grid])
    ours = SVMClassifier(C=1.0, sigma=0.7).fit(X_train, y_train)
    classes = ours.classes_
    labels = np.searchsorted(classes, y_train)
    _, predicted, _ = _libsvm_direct(X_train, labels, X_query, sigma=0.7)
    np.testing.assert_array_equal(ours.predict(X_query), classes[predicted.astype(int)])
    decision = ours.decision_function(X_query)
    assert decision.shape == (X_query.shape[0], 3)
    np.testing.assert_array_equal(np.floor(decision).sum(axis=1), 3)  # 3 pairwise votes


# ---------------------------------------------------------------- shared behaviour


def test_multiclass_one_vs_rest_on_iris(iris) -> None:
    X_train, y_train, X_test, y_test = iris
    for model in (ProjectionLearning(sigma=0.5), LocalizedProjectionLearning(sigma=0.5, k=9)):
        model.fit(X_train, y_train)
        decision = model.decision_function(X_test)
        assert decision.shape == (X_test.shape[0], 3)
        np.testing.assert_array_equal(model.predict(X_test), model.classes_[decision.argmax(axis=1)])
        assert np.mean(model.predict(X_test) == y_test) >= 0.8  # chance is 1/3


@pytest.mark.parametrize("make", [
    lambda: ProjectionLearning(sigma=2.0),
    lambda: LocalizedProjectionLearning(sigma=2.0),
    lambda: SVMClassifier(sigma=5.0),
])
def test_string_labels(sonar, make) -> None:
    X_train, y_train, X_test, y_test = sonar
    model = make().fit(X_train, y_train)
    assert list(model.classes_) == ["M", "R"]
    predicted = model.predict(X_test)
    assert set(predicted) <= {"M", "R"}
    np.testing.assert_array_equal(predicted == "R", model.decision_function(X_test) > 0)
    assert np.mean(predicted == y_test) > 0.65


@pytest.mark.parametrize("make", [
    lambda: ProjectionLearning(sigma=2.0),
    lambda: LocalizedProjectionLearning(sigma=2.0),
    lambda: LocalizedProjectionLearning(sigma=2.0, k=7, neighbors="annoy", random_state=0),
    lambda: LocalizedProjectionLearning(sigma=2.0, k=7, neighbors="hnswlib", ef=10, random_state=0),
    lambda: SVMClassifier(sigma=5.0),
])
def test_cache_and_no_cache_agree(sonar, make) -> None:
    X_train, y_train, X_test, _ = sonar
    plain = make().fit(X_train, y_train)
    cache = DistanceCache()
    cached = make().fit(X_train, y_train, cache=cache)
    np.testing.assert_allclose(
        cached.decision_function(X_test, cache=cache), plain.decision_function(X_test), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_array_equal(cached.predict(X_test, cache=cache), plain.predict(X_test))
    drop = set(RUN_DEPENDENT_INFO)  # wall times and the cache flag differ by construction
    assert {k: v for k, v in cached.info_.items() if k not in drop} == {k: v for k, v in plain.info_.items() if k not in drop}
    # a second sigma on the same split adds nothing to the cache
    entries = len(cache)
    other = make().set_params(sigma=3.0).fit(X_train, y_train, cache=cache)
    other.predict(X_test, cache=cache)
    assert len(cache) == entries


def test_pl_cache_is_bitwise_identical(sonar) -> None:
    X_train, y_train, X_test, _ = sonar
    X_dup, y_dup = np.vstack([X_train, X_train[:5]]), np.concatenate([y_train, y_train[:5]])
    for X, y in ((X_train, y_train), (X_dup, y_dup)):
        cache = DistanceCache()
        cached = ProjectionLearning(sigma=8.0).fit(X, y, cache=cache)
        plain = ProjectionLearning(sigma=8.0).fit(X, y)
        np.testing.assert_array_equal(cached.dual_coef_, plain.dual_coef_)
        np.testing.assert_array_equal(cached.decision_function(X_test, cache=cache), plain.decision_function(X_test))


def test_registry_and_parameter_validation() -> None:
    assert {"pl": ProjectionLearning, "lpl": LocalizedProjectionLearning, "svm": SVMClassifier}.items() <= METHODS.items()
    bad = [
        ProjectionLearning(sigma=0.0),
        ProjectionLearning(sigma=-1.0),
        LocalizedProjectionLearning(sigma=0.0),
        LocalizedProjectionLearning(k=0),
        LocalizedProjectionLearning(k="log"),
        LocalizedProjectionLearning(neighbors="kdtree"),
        LocalizedProjectionLearning(n_trees=0),
        SVMClassifier(C=0.0),
        SVMClassifier(sigma=-2.0),
        SVMClassifier(tol=0.0),
    ]
    for estimator in bad:
        with pytest.raises(InvalidParameterError):
            estimator._validate_params()
        with pytest.raises(InvalidParameterError):
            estimator.fit(np.eye(4), [0, 1, 0, 1])
    for good in (ProjectionLearning(sigma=1e-3), LocalizedProjectionLearning(k=3, neighbors="annoy"), SVMClassifier(C=10)):
        good._validate_params()


def test_one_class_is_rejected() -> None:
    for cls in METHODS.values():
        with pytest.raises(ValueError, match="at least two classes"):
            cls().fit(np.eye(3), [1, 1, 1])


@parametrize_with_checks(
    [ProjectionLearning(), LocalizedProjectionLearning(), SVMClassifier()],
)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


# ---------------------------------------------------------------- bench


def test_bench_runs_on_a_subset(data_dir: Path) -> None:
    from lkm.bench.speed import format_bench, run_bench

    results = run_bench(
        data_dir=data_dir, repeats=1, max_rows=300, sigma_grid=np.array([1.0, 5.0]), usps_rows=300, tangent=False
    )
    assert [r["name"] for r in results] == [
        "lpl_vs_knn", "pl_vs_kernel_ridge", "svm_vs_svc", "pl_sweep_vs_kernel_ridge", "svm_small_vs_svc",
        "prls_vs_kernel_ridge", "laprls_vs_kernel_ridge", "plaprls_vs_kernel_ridge", "annoy_usps_vs_exact",
        "hnswlib_usps_vs_exact", "hknn_vs_knn", "hknn_2threads_vs_knn", "svm_knn_letter_vs_loop", "svm_knn_letter_task_vs_loop",
        "svm_knn_isolet_vs_loop", "svm_knn_isolet_task_vs_loop",
    ]
    small = results[4]  # SVMClassifier() and SVC() fit the same model on 455 breast-cancer rows
    assert small["ours_accuracy"] == small["reference_accuracy"]
    dgemm_keys = {"dgemm_gflops", "fit_gflops", "fit_dgemm_fraction"}  # PL.fit against dgemm, in (b) only
    for r in results:
        assert set(r) == {
            "name", "ours", "reference", "ours_seconds", "reference_seconds", "ratio", "target",
            "target_seconds", "passed", "ours_accuracy", "reference_accuracy",
        } | (dgemm_keys if r["name"] == "pl_vs_kernel_ridge" else set())
        assert r["ours_seconds"] > 0 and r["reference_seconds"] > 0
        assert r["ratio"] == pytest.approx(r["ours_seconds"] / r["reference_seconds"])
        assert isinstance(r["passed"], bool) and 0.0 <= r["ours_accuracy"] <= 1.0
        assert r["target"] > 0 and r["target_seconds"] is None
    by_name = {r["name"]: r for r in results}
    for name, threads in (("hknn_vs_knn", "one thread"), ("hknn_2threads_vs_knn", "two threads")):  # like for like
        hknn = by_name[name]
        assert hknn["target"] == 1.5 and "300/300" in hknn["ours"] and threads in hknn["reference"]
        assert hknn["ours_accuracy"] == by_name["hknn_vs_knn"]["ours_accuracy"] > 0.5  # the same labels at n_jobs=2
        assert hknn["reference_accuracy"] > 0.5  # 10 digit classes
    assert "lpl_vs_knn" in format_bench(results) and "hknn_vs_knn" in format_bench(results)
    assert 0 < results[1]["fit_dgemm_fraction"] and "of dgemm" in format_bench(results)
    hnsw = by_name["hnswlib_usps_vs_exact"]  # recall@10 against the exact lists, and queries/s in the description
    assert hnsw["reference_accuracy"] == 1.0 and hnsw["ours_accuracy"] > 0.9 and "queries/s" in hnsw["ours"]
    for key in ("letter", "isolet"):  # (p): the trainer and the previous loop give the same predictions
        svm_knn = by_name[f"svm_knn_{key}_vs_loop"]
        assert svm_knn["ours_accuracy"] == svm_knn["reference_accuracy"] > 0.5 and "400/100" in svm_knn["ours"]


def test_bench_absolute_target_row() -> None:
    """A comparison with an absolute target (the tangent 1-NN): passed from ours' seconds,
    shown as seconds in the table."""
    from lkm.bench.speed import _result, format_bench

    row = _result("tangent_1nn_usps", "ours", "ref", (120.0, 0.2, 0.97, 0.94), None, 300.0)
    assert row["passed"] is True and row["target"] is None and row["ratio"] == pytest.approx(600.0)
    assert _result("t", "ours", "ref", (301.0, 0.2, 0.9, 0.9), None, 300.0)["passed"] is False
    assert "<= 300 s" in format_bench([row])
