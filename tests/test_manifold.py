"""PRLS, LapRLS and PLapRLS (Yang, King, Lyu; Belkin, Niyogi, Sindhwani 2006): stationarity
of the objectives, the kernel scalings, the null-space option, the printed eq. (14)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from lkm.errors import NumericalError
from lkm.methods import METHODS, PRLS, LapRLS, PLapRLS, RegularizedLeastSquares, resolve_estimator
from lkm.methods.manifold import LapRLSRegressor, PRLSRegressor, poly_gram
from lkm.numerics.kernels import DistanceCache, gaussian_gram, heat_gram, squared_euclidean
from lkm.numerics.manifold_solvers import (
    solve_belkin,
    solve_reduced,
    solve_semidefinite,
    solve_stationary,
    stationary_system,
)
from lkm.numerics.threads import blas_threads


def _data(seed: int = 0, n: int = 40, d: int = 3, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=n), np.linspace(-0.5, 0.5, classes - 1))
    return X, y


def _bracket(X: np.ndarray, sigma: float) -> np.ndarray:
    """K - 2K' + K'' of the normalized heat kernel over c_t, from Gaussian Grams (t = σ²/2)."""
    d = X.shape[1]
    return (gaussian_gram(X, X, sigma) - 2 * 2 ** (-d / 2) * gaussian_gram(X, X, sigma * math.sqrt(2))
            + 3 ** (-d / 2) * gaussian_gram(X, X, sigma * math.sqrt(3)))


def _objective(model, X: np.ndarray, Y: np.ndarray, labeled: np.ndarray, a: np.ndarray, beta: float,
               P: np.ndarray, gamma_A: float, gamma_I: float, K: np.ndarray | None = None) -> float:
    """Eq. (10)/(12) with the squared loss, written out: (1/l)Σ_lab (y - f)² + γ_A aᵀPa
    + γ_I/(2n²) Σ_ij W_ij (f_i - f_j)² (Belkin's fᵀLf; the ordered-pair sum counts each edge
    twice), or γ_I/n² fᵀLf for the normalized Laplacian. K: the Gaussian Gram unless given."""
    K = gaussian_gram(X, X, model.sigma_) if K is None else K
    f = K @ a + beta
    n, n_lab = X.shape[0], labeled.sum()
    value = np.sum((Y[labeled] - f[labeled]) ** 2) / n_lab + gamma_A * a @ P @ a
    if gamma_I:
        L = model.laplacian_.toarray()
        if model.normalized_laplacian:  # fᵀ(I - D^(-1/2)WD^(-1/2))f: no pairwise-difference form
            return float(value + gamma_I / (n * n) * f @ L @ f)
        W = np.diag(np.diag(L)) - L
        value += gamma_I / (2 * n * n) * np.sum(W * (f[:, None] - f[None, :]) ** 2)
    return float(value)


def test_registered_keys() -> None:
    for key, cls in {"prls": PRLS, "laprls": LapRLS, "plaprls": PLapRLS}.items():
        assert resolve_estimator(key) is cls and METHODS[key] is cls


# ---------------------------------------------------------------- PRLS


def test_prls_solution_satisfies_eq_11_to_roundoff() -> None:
    X, y = _data(1, classes=3)
    sigma, gamma = 1.3, 0.05
    model = PRLS(kernel="gaussian", sigma=sigma, gamma=gamma).fit(X, y)
    K, P, n = gaussian_gram(X, X, sigma), _bracket(X, sigma), X.shape[0]
    Y = np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0)
    a, beta = model.dual_coef_, model.intercept_
    one = np.ones((n, 1))
    row1 = (gamma * n * P + K @ K) @ a + K @ one @ beta[None, :] - K @ Y  # eq. (11), first row
    row2 = one.T @ (Y - K @ a - one @ beta[None, :])  # eq. (11), second row
    assert model.info_["solver"] == "cholesky" and model.info_["null_space_dim"] == 1
    assert np.abs(row1).max() < 1e-10 * np.abs(K @ Y).max()
    assert np.abs(row2).max() < 1e-10 * n


def test_prls_perturbations_never_lower_the_objective() -> None:
    X, y = _data(2)
    model = PRLS(kernel="gaussian", sigma=0.9, gamma=0.01).fit(X, y)
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    P, labeled = _bracket(X, 0.9), np.ones(X.shape[0], dtype=bool)
    a, beta = model.dual_coef_, float(model.intercept_)
    best = _objective(model, X, Y, labeled, a, beta, P, 0.01, 0.0)
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1e-3, 1.0):
        for _ in range(50):
            da, db = scale * rng.normal(size=a.size), scale * rng.normal()
            assert _objective(model, X, Y, labeled, a + da, beta + db, P, 0.01, 0.0) >= best - 1e-12 * best


def test_penalty_k_without_null_space_is_rls() -> None:
    """null_space="none" with the penalty matrix replaced by K: the block system is
    K(K + γlI)α = KY, RLS's (K + γlI)α = Y times K."""
    X, y = _data(3, classes=3)
    rls = RegularizedLeastSquares(kernel="heat", t=0.8, lam=0.02, unit_diagonal=True).fit(X, y)
    K = heat_gram(X, X, 0.8, normalized=False)
    Y = np.where(y[:, None] == rls.classes_[None, :], 1.0, -1.0)
    M, r = stationary_system(K, K, np.zeros((40, 0)), Y, np.ones(40, dtype=bool), 0.02 * 40)
    alpha, info = solve_stationary(M, r)
    Xq = _data(4)[0]
    np.testing.assert_allclose(heat_gram(Xq, X, 0.8, normalized=False) @ alpha, rls.decision_function(Xq),
                               rtol=1e-8, atol=1e-10)
    assert info["solver"] == "cholesky"


def test_prls_without_null_space_is_rls_in_high_dimension() -> None:
    """Where 2^(-d/2) and 3^(-d/2) vanish (d = 1400) the bracket is k_t: PRLS with
    null_space="none" is RLS with the same gamma, end to end."""
    rng = np.random.default_rng(5)
    X, Xq = rng.normal(size=(30, 1400)), rng.normal(size=(10, 1400))
    y = np.repeat([0, 1, 2], 10)
    prls = PRLS(kernel="heat", t=400.0, gamma=0.03, null_space="none").fit(X, y)
    rls = RegularizedLeastSquares(kernel="heat", t=400.0, lam=0.03, unit_diagonal=True).fit(X, y)
    assert prls.info_["weight_2t"] < 1e-200 and prls.info_["weight_3t"] == 0.0
    np.testing.assert_allclose(prls.decision_function(Xq), rls.decision_function(Xq), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(prls.predict(Xq), rls.predict(Xq))


def test_normalized_heat_kernel_equals_the_safe_form() -> None:
    """d = 3: K_t, K_{2t}, K_{3t} normalized, computed directly, against unit_diagonal=False
    (γ/c_t on the bracket) and unit_diagonal=True with γ/c_t given by hand."""
    X, y = _data(6, d=3)
    t, gamma, n, d = 0.7, 0.02, 40, 3
    K, K1, K2 = (heat_gram(X, X, s * t, normalized=True) for s in (1, 2, 3))
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    M, r = stationary_system(K, K - 2 * K1 + K2, np.ones((n, 1)), Y, np.ones(n, dtype=bool), gamma * n)
    x, _ = solve_stationary(M, r)
    Xq = _data(7, d=3)[0]
    direct = heat_gram(Xq, X, t, normalized=True) @ x[:n, 0] + x[n, 0]
    normalized = PRLS(kernel="heat", t=t, gamma=gamma, unit_diagonal=False).fit(X, y)
    np.testing.assert_allclose(normalized.decision_function(Xq), direct, rtol=1e-8, atol=1e-10)
    c_t = (4 * math.pi * t) ** (-d / 2)
    by_hand = PRLS(kernel="heat", t=t, gamma=gamma / c_t).fit(X, y)
    np.testing.assert_allclose(by_hand.decision_function(Xq), direct, rtol=1e-8, atol=1e-10)


def test_gaussian_width_sigma_is_heat_time_sigma_squared_over_two() -> None:
    X, y = _data(8, classes=3)
    gaussian = PLapRLS(kernel="gaussian", sigma=1.7, gamma_A=0.01, gamma_I=0.1).fit(X, y)
    heat = PLapRLS(kernel="heat", t=1.7**2 / 2, gamma_A=0.01, gamma_I=0.1).fit(X, y)
    np.testing.assert_allclose(gaussian.decision_function(X), heat.decision_function(X), rtol=1e-10, atol=1e-12)


def test_normalized_penalty_overflow_names_d_and_t() -> None:
    X = np.random.default_rng(0).normal(size=(6, 617))
    with pytest.raises(NumericalError, match=r"d=617, t=8\.0.*unit_diagonal=True") as caught:
        PRLS(t=8.0, unit_diagonal=False).fit(X, [0, 1] * 3)
    assert "\n" not in str(caught.value)
    PRLS(t=8.0).fit(X, [0, 1] * 3)  # the safe form fits


def test_gamma_zero_with_singular_kernel_is_the_min_norm_least_squares_fit() -> None:
    """γ = 0 and duplicated rows: β is eliminated exactly, α is the minimum-norm
    least-squares solution of the centred problem, (QK)⁺QY, and β = mean(Y - Kα)."""
    X, y = _data(9, n=20)
    X, y = np.vstack([X, X[:5]]), np.concatenate([y, y[:5]])  # duplicated rows: K is singular
    model = PRLS(kernel="gaussian", sigma=1.0, gamma=0.0).fit(X, y)
    assert model.info_["solver"] == "eigh" and model.info_["rank"] < X.shape[0] + 1
    K = gaussian_gram(X, X, 1.0)
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = np.linalg.lstsq(K - K.mean(axis=0), Y - Y.mean(), rcond=None)[0]
    beta = np.mean(Y - K @ alpha)
    np.testing.assert_allclose(K @ model.dual_coef_ + model.intercept_, K @ alpha + beta, atol=1e-6)
    np.testing.assert_allclose(np.append(model.dual_coef_, model.intercept_), np.append(alpha, beta),
                               rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- LapRLS, PLapRLS


def _dense_laplacian(X: np.ndarray, k: int, t: float) -> np.ndarray:
    D = squared_euclidean(X)
    np.fill_diagonal(D, np.inf)
    W = np.zeros_like(D)
    for i, row in enumerate(D):
        nearest = np.argsort(row, kind="stable")[:k]
        W[i, nearest] = np.exp(-row[nearest] / (4 * t))
    W = np.maximum(W, W.T)
    return np.diag(W.sum(axis=1)) - W


def test_laprls_is_belkins_closed_form() -> None:
    X, y = _data(10, n=50)
    labeled = np.zeros(50, dtype=bool)
    labeled[::5] = True
    gamma_A, gamma_I, t, n, n_lab = 0.02, 0.5, 0.6, 50, 10
    model = LapRLS(kernel="heat", t=t, gamma_A=gamma_A, gamma_I=gamma_I, graph_k=5).fit(X, y, unlabeled=~labeled)
    K, L = heat_gram(X, X, t, normalized=False), _dense_laplacian(X, 5, t)
    J = np.diag(labeled.astype(float))
    Y = np.where(labeled, np.where(y == model.classes_[1], 1.0, -1.0), 0.0)
    alpha = np.linalg.solve(J @ K + gamma_A * n_lab * np.eye(n) + gamma_I * n_lab / n**2 * L @ K, Y)
    np.testing.assert_allclose(model.laplacian_.toarray(), L, atol=1e-14)
    np.testing.assert_allclose(model.dual_coef_, alpha, rtol=1e-7, atol=1e-9)
    assert (model.info_["n_labeled"], model.info_["n_unlabeled"]) == (10, 40)


def _fd_gradient(fun, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    step = np.eye(x.size) * h
    return np.array([(fun(x + s) - fun(x - s)) / (2 * h) for s in step])


@pytest.mark.parametrize("normalized_laplacian", [False, True])
def test_plaprls_is_a_stationary_point_of_eq_12_and_printed_14_is_not(normalized_laplacian: bool) -> None:
    X, y = _data(11, n=36)
    labeled = np.zeros(36, dtype=bool)
    labeled[::4] = True
    params = dict(kernel="gaussian", sigma=1.1, gamma_A=0.05, gamma_I=2.0, graph_k=4,
                  normalized_laplacian=normalized_laplacian)
    gradients = {}
    for system in ("derived", "printed"):
        model = PLapRLS(system=system, **params).fit(X, y, unlabeled=~labeled)
        Y = np.where(y == model.classes_[1], 1.0, -1.0)
        P = _bracket(X, 1.1)

        def fun(v: np.ndarray, model=model, Y=Y, P=P) -> float:
            return _objective(model, X, Y, labeled, v[:-1], v[-1], P, 0.05, 2.0)

        x = np.append(model.dual_coef_, model.intercept_)
        gradients[system] = _fd_gradient(fun, x)
        assert model.info_["system"] == ("derived" if system == "derived" else "printed eq. (14)")
    scale = np.abs(_fd_gradient(fun, np.zeros(37))).max()  # the gradient at 0: -(2/l)[K; 1]JY
    assert np.abs(gradients["derived"]).max() < 1e-7 * scale
    assert np.abs(gradients["printed"]).max() > 1e-3 * scale  # the β equation differs (ΨᵀΨ = n, not l)


def test_laprls_is_a_stationary_point_of_its_objective() -> None:
    X, y = _data(12, n=30)
    labeled = np.arange(30) % 3 == 0
    model = LapRLS(kernel="gaussian", sigma=0.8, gamma_A=0.03, gamma_I=1.0, graph_k=4,
                   graph_weights="binary").fit(X, y, unlabeled=~labeled)
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    K = gaussian_gram(X, X, 0.8)
    grad = _fd_gradient(lambda a: _objective(model, X, Y, labeled, a, 0.0, K, 0.03, 1.0), model.dual_coef_)
    scale = np.abs(_fd_gradient(lambda a: _objective(model, X, Y, labeled, a, 0.0, K, 0.03, 1.0), 0 * grad)).max()
    assert np.abs(grad).max() < 1e-7 * scale
    assert set(np.unique(model.laplacian_.toarray()[~np.eye(30, dtype=bool)])) <= {0.0, -1.0}


# ---------------------------------------------------------------- labels


def test_unlabeled_mask_wins_and_minus_one_can_be_a_class() -> None:
    X, y = _data(13, n=30)
    y = np.where(y == 0, -1, 1)  # a legitimate ±1 task
    mask = np.arange(30) >= 20
    model = PLapRLS(kernel="gaussian", sigma=1.0).fit(X, y, unlabeled=mask)
    assert list(model.classes_) == [-1, 1] and model.info_["n_labeled"] == 20
    assert model.info_["unlabeled_rule"] == "mask"
    disabled = PRLS(kernel="gaussian", sigma=1.0, unlabeled_label=None).fit(X, y)
    assert list(disabled.classes_) == [-1, 1] and disabled.info_["n_unlabeled"] == 0
    # the default rule: y == -1 is unlabeled (scikit-learn's convention)
    z = np.where(mask, -1, np.where(y == -1, 0, 1))
    default = PLapRLS(kernel="gaussian", sigma=1.0).fit(X, z)
    assert list(default.classes_) == [0, 1] and default.info_["n_unlabeled"] == 10
    strings = np.where(mask, "?", np.where(y == -1, "no", "yes"))
    by_string = PLapRLS(kernel="gaussian", sigma=1.0, unlabeled_label="?").fit(X, strings)
    np.testing.assert_allclose(by_string.decision_function(X), default.decision_function(X), atol=1e-12)


def test_prls_ignores_unlabeled_rows() -> None:
    X, y = _data(14, n=40, classes=3)
    mask = np.arange(40) % 4 == 0
    semi = PRLS(kernel="gaussian").fit(X, y, unlabeled=mask)
    plain = PRLS(kernel="gaussian").fit(X[~mask], y[~mask])
    np.testing.assert_allclose(semi.decision_function(X), plain.decision_function(X), atol=1e-12)
    assert semi.sigma_ == plain.sigma_


@pytest.mark.parametrize("cls", [PRLS, LapRLS, PLapRLS])
def test_bad_labels_give_one_line_errors(cls) -> None:
    X, y = _data(15, n=10)
    semi = {"unlabeled_label": -1}  # PRLS is supervised: no unlabeled convention by default
    with pytest.raises(ValueError, match="all 10 points are unlabeled.*unlabeled_label=None") as caught:
        cls(**semi).fit(X, np.full(10, -1))
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="at least two classes.*unlabeled_label=None.*unlabeled=mask") as caught:
        cls(**semi).fit(X, np.where(np.arange(10) < 5, 3, -1))  # the other class has no labeled point
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="at least two classes") as caught:  # no -1 involved: no hint
        cls(**semi).fit(X, np.full(10, 3))
    assert "unlabeled_label" not in str(caught.value)
    with pytest.raises(ValueError, match="boolean mask"):
        cls().fit(X, y, unlabeled=np.arange(10) % 2)  # ints, not a mask


def test_laplacian_is_shared_across_label_sets_through_the_cache() -> None:
    X, y = _data(16, n=30)
    cache = DistanceCache()
    first = LapRLS().fit(X, y, unlabeled=np.arange(30) < 10, cache=cache)
    second = LapRLS().fit(X, y, unlabeled=np.arange(30) >= 20, cache=cache)
    assert first.laplacian_ is second.laplacian_
    np.testing.assert_allclose(first.decision_function(X, cache=cache), first.decision_function(X), atol=1e-12)


def _expected_failed_checks(estimator) -> dict[str, str]:
    failed = {}
    if getattr(estimator, "unlabeled_label", None) == -1:
        failed["check_classifiers_classes"] = ("uses -1 as a class label, which unlabeled_label=-1 "
                                               "(scikit-learn's semi-supervised convention) reads as 'unlabeled'")
    if getattr(estimator, "gamma_I", 0.0) > 0.0:
        reason = ("repeated rows change the k-NN graph and the n of gamma_I/n², and a zero weight keeps the row "
                  "(unlabeled) in the graph; weights = repeated rows holds with gamma_I=0 (test_estimator_inputs.py)")
        failed["check_sample_weight_equivalence_on_dense_data"] = reason
        failed["check_sample_weight_equivalence_on_sparse_data"] = reason
    return failed


@parametrize_with_checks(
    [PRLS(unlabeled_label=None), LapRLS(unlabeled_label=None), PLapRLS(kernel="gaussian", system="printed"),
     PRLSRegressor(), LapRLSRegressor(), LapRLSRegressor(kernel="poly", null_space="constant", gamma_I=0.0)],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


def test_graph_neighbours_tied_in_distance_go_to_the_lower_index():
    """knn_laplacian selects with lkm.numerics.neighbors.k_smallest: point 0 is 1 away from both
    point 1 and point 2, and with k = 1 joins point 1 (whose own nearest, like point 2's,
    is elsewhere, so symmetrization adds no 0-2 edge)."""
    from lkm.numerics.graph_laplacian import knn_laplacian
    from lkm.numerics.kernels import squared_euclidean

    X = np.array([[0.0], [1.0], [-1.0], [1.1], [-1.1]])
    L = knn_laplacian(squared_euclidean(X, None), 1, "binary", 1.0, False).toarray()
    assert L[0, 1] == -1.0 and L[0, 2] == 0.0


# ---------------------------------------------------------------- the solve routes


def _full_solution(K, P, Psi, Y, labeled, ridge, L=None, graph=0.0) -> np.ndarray:
    """The reference: the normal equations of the stationarity system, by solve_stationary."""
    M, r = stationary_system(K, P, Psi, Y, labeled, ridge, L, graph)
    return solve_stationary(M, r)[0]


@pytest.mark.parametrize("null_space", ["none", "constant"])
@pytest.mark.parametrize("gamma_I", [0.0, 0.7])
def test_belkin_lu_route_gives_the_normal_equations_function(null_space: str, gamma_I: float) -> None:
    """LapRLS's one LU, (GK + λ₁I)α + GΨβ = JY with Ψᵀα = 0, against the symmetric
    normal equations: the same f (α may differ by a null vector of K, not here: K is PD)."""
    X, y = _data(17, n=40, classes=3)
    labeled = np.arange(40) % 3 != 0
    model = LapRLS(kernel="gaussian", sigma=1.2, gamma_A=0.02, gamma_I=gamma_I, null_space=null_space,
                   graph_k=5).fit(X, y, unlabeled=~labeled)
    assert model.info_["solver"] == "lu"
    K = gaussian_gram(X, X, 1.2)
    Y = np.where(labeled[:, None], np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0), 0.0)
    Psi = np.ones((40, 1)) if null_space == "constant" else np.zeros((40, 0))
    lam2 = model.info_["lambda_2"]
    x = _full_solution(K, K, Psi, Y, labeled, model.info_["lambda_1"], getattr(model, "laplacian_", None), lam2)
    Xq = _data(18)[0]
    Kq = gaussian_gram(Xq, X, 1.2)
    reference = Kq @ x[:40] + (x[40] if null_space == "constant" else 0.0)
    np.testing.assert_allclose(model.decision_function(Xq), reference, rtol=1e-8, atol=1e-10)
    if null_space == "constant":  # the β rows of the symmetric system reduce to Ψᵀα = 0
        np.testing.assert_allclose(model.dual_coef_.sum(axis=0), 0.0, atol=1e-10)


@pytest.mark.parametrize("gamma_I", [0.0, 0.9])
@pytest.mark.parametrize("normalized_laplacian", [False, True])
def test_reduced_cholesky_route_equals_the_full_system(gamma_I: float, normalized_laplacian: bool) -> None:
    """β eliminated first (syrk without a graph, one product with it), against the full
    normal equations, coefficient by coefficient."""
    X, y = _data(19, n=36, classes=3)
    labeled = np.arange(36) % 4 != 1
    model = PLapRLS(kernel="gaussian", sigma=1.0, gamma_A=0.03, gamma_I=gamma_I, graph_k=4,
                    normalized_laplacian=normalized_laplacian).fit(X, y, unlabeled=~labeled)
    assert model.info_["solver"] == "cholesky"
    K, P = gaussian_gram(X, X, 1.0), _bracket(X, 1.0)
    Y = np.where(labeled[:, None], np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0), 0.0)
    args = (K, P, np.ones((36, 1)), Y, labeled, model.info_["lambda_1"], getattr(model, "laplacian_", None),
            model.info_["lambda_2"])
    x = _full_solution(*args)
    np.testing.assert_allclose(np.vstack([model.dual_coef_, model.intercept_]), x, rtol=1e-8, atol=1e-10)
    reduced, info = solve_reduced(*args)
    np.testing.assert_allclose(reduced, x, rtol=1e-8, atol=1e-10)


def test_singular_systems_are_refused_by_the_fast_routes() -> None:
    """λ₁ = 0 with duplicated rows: Belkin's LU is skipped and the reduced system takes
    the rank-revealing route; the result is a stationary point."""
    X, y = _data(20, n=20)
    X, y = np.vstack([X, X[:4]]), np.concatenate([y, y[:4]])
    K = gaussian_gram(X, X, 1.0)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    every = np.ones(24, dtype=bool)
    assert solve_belkin(K, np.zeros((24, 0)), Y, every, 0.0) is None
    assert solve_reduced(K, K, np.ones((24, 1)), Y, every, 0.0)[1]["solver"] == "eigh"
    model = LapRLS(kernel="gaussian", sigma=1.0, gamma_A=0.0, gamma_I=0.0).fit(X, y)
    assert model.info_["solver"] == "eigh"
    grad = _fd_gradient(lambda a: _objective(model, X, Y[:, 0], every, a, 0.0, K, 0.0, 0.0), model.dual_coef_)
    assert np.abs(grad).max() < 1e-6


def _singular_prls_system(dup: int, n: int = 60, d: int = 3, sigma: float = 1.0, gamma: float = 0.01,
                          seed: int = 1) -> tuple:
    """(X, Y, K, P, Psi, labeled, λ₁) of PRLS on Gaussian data, the first ``dup`` rows repeated."""
    X = np.random.default_rng(seed).normal(size=(n, d))
    X = np.vstack([X, X[:dup]])
    Y = np.where(X[:, 0] > 0.1, 1.0, -1.0)[:, None]
    K = gaussian_gram(X, X, sigma)
    return X, Y, K, _bracket(X, sigma), np.ones((X.shape[0], 1)), np.ones(X.shape[0], dtype=bool), gamma * X.shape[0]


def test_pivoted_cholesky_route_equals_eigh_on_a_full_rank_system() -> None:
    """Nothing to truncate: the pivoted Cholesky and eigh routes (solve_semidefinite) are
    both M⁻¹r, coefficients and predictions."""
    X, Y, K, P, Psi, labeled, ridge = _singular_prls_system(dup=0)
    M, r = stationary_system(K, P, Psi, Y, labeled, ridge)
    pivoted, info = solve_semidefinite(M, r, route="pivoted-cholesky")
    eigen, info_eigh = solve_semidefinite(M, r, route="eigh")
    assert info["rank"] == info_eigh["rank"] == M.shape[0]
    np.testing.assert_allclose(pivoted, eigen, rtol=1e-7, atol=1e-9 * np.abs(eigen).max())
    np.testing.assert_allclose(pivoted, np.linalg.solve(M, r), rtol=1e-7, atol=1e-9 * np.abs(eigen).max())
    Kq = gaussian_gram(np.random.default_rng(2).normal(size=(50, 3)), X, 1.0)
    np.testing.assert_allclose(Kq @ pivoted[:-1] + pivoted[-1], Kq @ eigen[:-1] + eigen[-1], atol=1e-10)


@pytest.mark.parametrize("graph", [0.0, 0.5])
def test_pivoted_cholesky_route_gives_eighs_solution_on_a_singular_gaussian_system(graph: float) -> None:
    """Duplicated rows make K, P and the reduced system exactly singular: the pivoted
    Cholesky route (PRLS's and PLapRLS's default for γ > 0) gives eigh's minimum-norm
    solution, coefficients and predictions, and it is a stationary point of the objective."""
    X, Y, K, P, Psi, labeled, ridge = _singular_prls_system(dup=10)
    L = _dense_laplacian(X, 4, 0.5) if graph else None
    pivoted, info = solve_reduced(K, P, Psi, Y, labeled, ridge, L, graph)
    eigen, info_eigh = solve_reduced(K, P, Psi, Y, labeled, ridge, L, graph, rank_revealing="eigh")
    assert info["solver"] == "pivoted-cholesky" and info_eigh["solver"] == "eigh"
    assert info["rank"] == info_eigh["rank"] < X.shape[0] + 1
    np.testing.assert_allclose(pivoted, eigen, rtol=1e-6, atol=1e-8 * np.abs(eigen).max())
    Kq = gaussian_gram(np.random.default_rng(3).normal(size=(50, 3)), X, 1.0)
    np.testing.assert_allclose(Kq @ pivoted[:-1] + pivoted[-1], Kq @ eigen[:-1] + eigen[-1], atol=1e-9)
    a, beta = pivoted[:-1, 0], pivoted[-1, 0]
    n = X.shape[0]
    graph_term = (lambda f: graph * f @ L @ f / n) if graph else (lambda f: 0.0)

    def objective(coef: np.ndarray) -> float:  # (l/2)·eq. (10)/(12) in the solver's scaling
        f = K @ coef[:-1] + coef[-1]
        return float(0.5 * np.sum((Y[:, 0] - f) ** 2) + 0.5 * ridge * coef[:-1] @ P @ coef[:-1]
                     + 0.5 * n * graph_term(f))

    grad = _fd_gradient(objective, np.append(a, beta))
    assert np.abs(grad).max() < 1e-6 * n


def test_pivoted_cholesky_route_moves_f_little_on_a_numerically_singular_gaussian_system() -> None:
    """Distinct rows, two features, a wide Gaussian: M is singular only to round-off and
    the routes truncate different near-null directions (flat to round-off for the
    objective), so the coefficients differ but f agrees to ~1e-3 (measured 2e-3) and no
    sign changes."""
    X, Y, K, P, Psi, labeled, ridge = _singular_prls_system(dup=0, n=80, d=2, sigma=2.0, gamma=1e-3)
    pivoted, info = solve_reduced(K, P, Psi, Y, labeled, ridge)
    eigen, _ = solve_reduced(K, P, Psi, Y, labeled, ridge, rank_revealing="eigh")
    assert info["solver"] == "pivoted-cholesky"
    Kq = gaussian_gram(np.random.default_rng(4).normal(size=(300, 2)), X, 2.0)
    f_pivoted, f_eigen = Kq @ pivoted[:-1] + pivoted[-1], Kq @ eigen[:-1] + eigen[-1]
    assert np.abs(f_pivoted - f_eigen).max() < 1e-2
    assert np.array_equal(np.sign(f_pivoted), np.sign(f_eigen))


@pytest.mark.parametrize("cls", [PRLS, PLapRLS])
def test_singular_fits_do_not_depend_on_row_order_or_blas_threads(cls) -> None:
    """The pivoted Cholesky route: permuted training rows and one BLAS thread give the
    same decision values (measured 1e-6) on a numerically singular Gaussian system (wide σ;
    distinct rows: duplicated ones tie in the k-NN graph, whose ties go by row index)."""
    X, _, _, _, _, _, _ = _singular_prls_system(dup=0, n=150, d=3, sigma=3.0)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    params = {"gamma": 1e-3} if cls is PRLS else {"gamma_A": 1e-3, "gamma_I": 0.1, "unlabeled_label": None}
    model = cls(kernel="gaussian", sigma=3.0, **params).fit(X, y)
    assert model.info_["solver"] == "pivoted-cholesky"
    Xq = np.random.default_rng(5).normal(size=(200, 3))
    f = model.decision_function(Xq)
    order = np.random.default_rng(6).permutation(X.shape[0])
    np.testing.assert_allclose(cls(kernel="gaussian", sigma=3.0, **params).fit(X[order], y[order])
                               .decision_function(Xq), f, atol=1e-5)
    with blas_threads(1):
        f_one = cls(kernel="gaussian", sigma=3.0, **params).fit(X, y).decision_function(Xq)
    np.testing.assert_allclose(f_one, f, atol=1e-5)


def test_laprls_with_a_constant_is_stationary() -> None:
    X, y = _data(21, n=30)
    labeled = np.arange(30) % 3 == 0
    model = LapRLS(kernel="gaussian", sigma=0.9, gamma_A=0.05, gamma_I=1.5, graph_k=4,
                   null_space="constant").fit(X, y, unlabeled=~labeled)
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    K = gaussian_gram(X, X, 0.9)

    def fun(v: np.ndarray) -> float:
        return _objective(model, X, Y, labeled, v[:-1], v[-1], K, 0.05, 1.5)

    grad = _fd_gradient(fun, np.append(model.dual_coef_, model.intercept_))
    assert np.abs(grad).max() < 1e-7 * np.abs(_fd_gradient(fun, np.zeros(31))).max()
    assert model.info_["null_space_dim"] == 1 and model.info_["solver"] == "lu"


# ---------------------------------------------------------------- the polynomial kernel


def test_poly_kernel_is_the_inner_product_over_d_plus_coef0_to_the_degree() -> None:
    X, Xq = _data(22, n=6, d=5)[0], _data(23, n=4, d=5)[0]
    np.testing.assert_allclose(poly_gram(Xq, X, 3, 1.0), (Xq @ X.T / 5 + 1.0) ** 3, rtol=1e-14)
    model = LapRLS(kernel="poly", degree=2, coef0=0.5, gamma_I=0.0).fit(X, [0, 1, 0, 1, 0, 1])
    assert (model.info_["kernel"], model.info_["degree"], model.info_["coef0"]) == ("poly", 2, 0.5)
    assert "t" not in model.info_


@pytest.mark.parametrize("null_space", ["none", "constant"])
def test_poly_laprls_is_a_stationary_point(null_space: str) -> None:
    X, y = _data(24, n=30, d=4)
    X = np.abs(X) / 3  # pixel-like features in [0, 1]
    labeled = np.arange(30) % 2 == 0
    model = LapRLS(kernel="poly", degree=3, gamma_A=0.02, gamma_I=0.8, graph_k=4, graph_weights="binary",
                   null_space=null_space).fit(X, y, unlabeled=~labeled)
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    K = (X @ X.T / 4 + 1.0) ** 3
    beta = float(model.intercept_)

    def fun(v: np.ndarray) -> float:
        return _objective(model, X, Y, labeled, v[:30], v[30] if v.size > 30 else beta, K, 0.02, 0.8, K)

    x = np.append(model.dual_coef_, model.intercept_) if null_space == "constant" else model.dual_coef_
    grad = _fd_gradient(fun, x, h=1e-5)
    assert np.abs(grad).max() < 1e-7 * np.abs(_fd_gradient(fun, 0 * x, h=1e-5)).max()


def test_poly_rls_with_an_unpenalized_constant_is_the_bordered_system() -> None:
    """LapRLS(kernel="poly", gamma_I=0, null_space="constant") is Yang et al.'s Sec. 5.3
    RLS with f = Σ α_i K(x_i, ·) + a, a unpenalized: [[K + γl I, 1], [1ᵀ, 0]] [α; a] = [y; 0]."""
    X, y = _data(25, n=25, d=6)
    model = LapRLS(kernel="poly", gamma_A=0.01, gamma_I=0.0, null_space="constant").fit(X, y)
    K = (X @ X.T / 6 + 1.0) ** 3
    Y = np.where(y == model.classes_[1], 1.0, -1.0)
    M = np.block([[K + 0.01 * 25 * np.eye(25), np.ones((25, 1))], [np.ones((1, 25)), np.zeros((1, 1))]])
    x = np.linalg.solve(M, np.append(Y, 0.0))
    np.testing.assert_allclose(model.dual_coef_, x[:25], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(model.intercept_, x[25], rtol=1e-8, atol=1e-10)
    belkin = LapRLS(kernel="poly", gamma_A=0.01, gamma_I=0.0).fit(X, y)  # Belkin's RLS: no constant
    np.testing.assert_allclose(belkin.dual_coef_, np.linalg.solve(K + 0.25 * np.eye(25), Y), rtol=1e-8)


def test_laprls_without_graph_or_constant_is_rls() -> None:
    """RegularizedLeastSquares solves (K + lam·ℓ·I)α = y; LapRLS's ridge is gamma_A·l."""
    X, y = _data(26, n=40, classes=3)
    Xq = _data(27)[0]
    laprls = LapRLS(kernel="gaussian", sigma=1.4, gamma_A=0.03, gamma_I=0.0, null_space="none").fit(X, y)
    rls = RegularizedLeastSquares(kernel="gaussian", sigma=1.4, lam=0.03).fit(X, y)
    np.testing.assert_allclose(laprls.decision_function(Xq), rls.decision_function(Xq), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", [PRLS, PLapRLS, PRLSRegressor])
def test_bracket_penalty_refuses_the_polynomial_kernel(cls) -> None:
    X, y = _data(28, n=12)
    with pytest.raises(ValueError, match="heat/Gaussian kernel.*kernel='poly'") as caught:
        cls(kernel="poly").fit(X, y)
    assert "\n" not in str(caught.value)


def test_poly_graph_needs_its_own_heat_time() -> None:
    X, y = _data(29, n=12)
    with pytest.raises(ValueError, match="give graph_t or graph_weights='binary'") as caught:
        LapRLS(kernel="poly", gamma_I=0.1).fit(X, y)
    assert "\n" not in str(caught.value)
    LapRLS(kernel="poly", gamma_I=0.1, graph_t=2.0).fit(X, y)


# ---------------------------------------------------------------- regressors


def _toy(seed: int = 30, n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Yang et al.'s Fig. 1: x uniform on [0, 1], y = 1 + 0.005ε."""
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 1)), 1.0 + 0.005 * rng.normal(size=n)


def test_prls_regressor_is_a_stationary_point_for_real_targets() -> None:
    X, y = _toy()
    model = PRLSRegressor(kernel="gaussian", sigma=0.3, gamma=0.01).fit(X, y)
    P, every = _bracket(X, 0.3), np.ones(20, dtype=bool)

    def fun(v: np.ndarray) -> float:
        return _objective(model, X, y, every, v[:-1], v[-1], P, 0.01, 0.0)

    grad = _fd_gradient(fun, np.append(model.dual_coef_, model.intercept_))
    assert np.abs(grad).max() < 1e-7 * np.abs(_fd_gradient(fun, np.zeros(21))).max()
    assert model.predict(X).shape == (20,)


def test_laprls_regressor_is_a_stationary_point_for_real_targets() -> None:
    X, y = _toy(31, n=30)
    labeled = np.arange(30) % 3 == 0
    model = LapRLSRegressor(kernel="gaussian", sigma=0.2, gamma_A=0.01, gamma_I=0.5, graph_k=3,
                            null_space="constant").fit(X, y, unlabeled=~labeled)
    K = gaussian_gram(X, X, 0.2)

    def fun(v: np.ndarray) -> float:
        return _objective(model, X, y, labeled, v[:-1], v[-1], K, 0.01, 0.5)

    grad = _fd_gradient(fun, np.append(model.dual_coef_, model.intercept_))
    assert np.abs(grad).max() < 1e-7 * np.abs(_fd_gradient(fun, np.zeros(31))).max()


@pytest.mark.parametrize("gamma", [1e-6, 1e-3, 1.0, 1000.0])
def test_prls_regressor_fits_constant_targets_exactly(gamma: float) -> None:
    """The constant is unpenalized: y = c gives α = 0, β = c for every gamma."""
    X = _toy()[0]
    model = PRLSRegressor(kernel="gaussian", sigma=0.3, gamma=gamma).fit(X, np.full(20, 2.5))
    np.testing.assert_allclose(model.predict(np.linspace(-1, 2, 31)[:, None]), 2.5, rtol=1e-9)


def test_laprls_regressor_without_graph_is_kernel_ridge() -> None:
    from sklearn.kernel_ridge import KernelRidge

    X, y = _toy(32)
    ours = LapRLSRegressor(kernel="gaussian", sigma=0.3, gamma_A=0.01, gamma_I=0.0).fit(X, y)
    reference = KernelRidge(kernel="rbf", gamma=1 / (2 * 0.3**2), alpha=0.01 * 20).fit(X, y)
    Xq = np.linspace(0, 1, 17)[:, None]
    np.testing.assert_allclose(ours.predict(Xq), reference.predict(Xq), rtol=1e-9, atol=1e-12)


def test_regressors_keep_minus_one_targets_and_reject_all_unlabeled() -> None:
    X, _ = _toy(33, n=10)
    y = np.where(np.arange(10) % 2, 1.0, -1.0)
    model = PRLSRegressor(kernel="gaussian", sigma=0.3).fit(X, y)
    assert model.info_["n_labeled"] == 10  # unlabeled_label=None: -1.0 is a target
    with pytest.raises(ValueError, match="all 10 points are unlabeled") as caught:
        LapRLSRegressor().fit(X, y, unlabeled=np.ones(10, dtype=bool))
    assert "\n" not in str(caught.value)


def test_lower_product_is_the_lower_triangle_of_the_full_product(monkeypatch) -> None:
    from lkm.numerics import manifold_solvers

    monkeypatch.setattr(manifold_solvers, "LOWER_PRODUCT_BLOCK", 7)  # several column blocks, one ragged
    rng = np.random.default_rng(0)
    K = rng.normal(size=(30, 30))
    K = K @ K.T
    G = np.diag(rng.random(30)) + 0.1
    M = manifold_solvers.lower_product(K, G @ K)
    full = K @ (G @ K)
    np.testing.assert_allclose(np.tril(M), np.tril(full), rtol=0, atol=1e-12 * np.abs(full).max())
    assert M.flags.f_contiguous and not np.triu(M, 7).any()  # above the diagonal blocks: nothing
