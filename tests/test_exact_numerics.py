"""Numbers that do not depend on accidents (issue 8): exact decision signs where kernel
rows underflow, one explicit tie rule, PL's rank cutoff relative to λ_max, and PL's
invariance to the order of the training rows and to round-off-level perturbations."""

from __future__ import annotations

import numpy as np
import pytest

from lkm.data import load_dataset
from lkm.methods import LocalizedProjectionLearning, ProjectionLearning
from lkm.methods.risk import LocalRiskPair, RegularizedLeastSquares
from lkm.numerics.kernels import exp_rows_scaled, underflows
from lkm.numerics.preprocessing import preprocess
from lkm.numerics.psd_pinv import (
    clear_inverse_solve,
    eigh_pinv_solve,
    largest_eigenvalue,
    psd_pinv_solve,
)


def _fold(name: str, data_dir, fold: int = 0):
    from sklearn.model_selection import StratifiedKFold

    ds = load_dataset(name, data_dir=data_dir)
    train, test = list(StratifiedKFold(10, shuffle=True, random_state=0).split(ds.X, ds.y))[fold]
    X_train, X_test = preprocess("standardize", ds.X[train], ds.X[test])
    return X_train, ds.y[train], X_test, ds.y[test]


@pytest.fixture(scope="module")
def ionosphere(data_dir):
    return _fold("ionosphere", data_dir)


@pytest.fixture(scope="module")
def liver(data_dir):
    return _fold("liver-disorders", data_dir)


# ---------------------------------------------------------------- exact signs


def test_scaled_rows_keep_one_exact_one_per_row_and_report_underflow() -> None:
    D = np.array([[1e6, 2e6, 1e6 + 1.0], [0.5, 0.0, 3.0]])
    rows, row_min = exp_rows_scaled(D, scale=0.5)
    np.testing.assert_array_equal(rows.max(axis=1), [1.0, 1.0])
    np.testing.assert_allclose(rows[0], [1.0, 0.0, np.exp(-0.5)])
    np.testing.assert_array_equal(underflows(row_min, 0.5), [True, False])
    # the unscaled rows are the scaled ones times exp(-scale * row_min)
    np.testing.assert_allclose(rows[1] * np.exp(-0.5 * row_min[1]), np.exp(-0.5 * D[1]))


@pytest.mark.parametrize("estimator", [ProjectionLearning, LocalizedProjectionLearning])
def test_predictions_at_tiny_sigma_do_not_depend_on_label_order(estimator, ionosphere) -> None:
    """At sigma = 0.01 every kernel value of most ionosphere test points underflows; the
    unscaled f is 0 there, and predicting from it gave the label that sorts first."""
    X_train, y_train, X_test, _ = ionosphere
    renamed = {"b": "z-bad", "g": "a-good"}  # reverses the sort order of the two labels
    y_renamed = np.array([renamed[v] for v in y_train])
    model = estimator(sigma=0.01).fit(X_train, y_train)
    pred = model.predict(X_test)
    assert model.info_["underflow_share"] > 0.5  # the case this test is about
    assert np.mean(model.decision_function(X_test) == 0) > 0.5
    pred_renamed = estimator(sigma=0.01).fit(X_train, y_renamed).predict(X_test)
    np.testing.assert_array_equal(pred_renamed, [renamed[v] for v in pred])
    # with the exact signs, tiny-sigma PL/LPL is the nearest-neighbour rule, not a constant
    assert set(pred) == {"b", "g"}


@pytest.mark.parametrize("estimator", [ProjectionLearning, LocalizedProjectionLearning])
def test_scaled_prediction_agrees_with_the_sign_of_f_where_f_is_nonzero(estimator, ionosphere) -> None:
    X_train, y_train, X_test, _ = ionosphere
    model = estimator(sigma=1.5).fit(X_train, y_train)
    f = model.decision_function(X_test)
    assert np.all(f != 0)
    np.testing.assert_array_equal(model.predict(X_test), model.classes_[(f > 0).astype(int)])


@pytest.mark.parametrize("labels", [("a", "b"), ("b", "a")])
def test_exact_ties_go_to_the_class_with_the_larger_training_prior(labels) -> None:
    """A test point midway between two far-apart training points of opposite classes at
    tiny sigma: G = I, f = 1·(+1) + 1·(-1) = 0 exactly in the scaled form."""
    major, minor = labels
    X = np.array([[-1.0], [1.0], [-30.0], [-31.0], [-32.0]])
    y = np.array([major, minor, major, major, minor])
    for est in (ProjectionLearning(sigma=0.05), LocalizedProjectionLearning(sigma=0.05, k=2)):
        est.fit(X, y)
        assert est.predict(np.array([[0.0]]))[0] == major
        assert est.info_["tie_share"] == 1.0


def test_equal_priors_break_ties_by_the_nearest_patterns_class() -> None:
    X = np.array([[-1.0], [1.0], [5.0], [7.0]])
    y = np.array(["p", "q", "q", "p"])
    model = ProjectionLearning(sigma=0.05).fit(X, y)
    # 6.0 is midway between rows 2 (q) and 3 (p): exact tie, equal priors; the nearest
    # distinct row in sorted order is [5.0] (argmin takes the first of equal distances)
    assert model.predict(np.array([[6.0]]))[0] == "q"
    assert model.info_["tie_share"] == 1.0


@pytest.mark.parametrize("estimator", [RegularizedLeastSquares, LocalRiskPair])
def test_risk_methods_predict_exact_signs_where_heat_rows_underflow(estimator, ionosphere) -> None:
    X_train, y_train, X_test, _ = ionosphere
    params = {"kernel": "heat", "t": 2e-5, "unit_diagonal": True, "lam": 0.5}
    model = estimator(**params).fit(X_train, y_train)
    pred = model.predict(X_test)
    assert model.info_["underflow_share"] > 0.5
    renamed = {"b": "z", "g": "a"}
    other = estimator(**params).fit(X_train, np.array([renamed[v] for v in y_train])).predict(X_test)
    np.testing.assert_array_equal(other, [renamed[v] for v in pred])


# ---------------------------------------------------------------- rank cutoff


def test_largest_eigenvalue_estimate_matches_eigh_on_a_gram_matrix(liver) -> None:
    X = liver[0]
    for sigma in (0.5, 5.0, 50.0):
        G = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))
        assert largest_eigenvalue(G) == pytest.approx(np.linalg.eigvalsh(G)[-1], rel=1e-3)


def test_psd_pinv_solve_drops_eigenvalues_below_rcond_times_lambda_max() -> None:
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(60, 60)))
    # λ_max = 100; a gap between 1e-2 and 1e-10 holds both cutoffs below
    eigenvalues = np.concatenate([np.logspace(2, -2, 30), np.logspace(-10, -16, 30)])
    G = (Q * eigenvalues) @ Q.T
    G = (G + G.T) / 2
    y = rng.normal(size=60)
    for rcond in (1e-6, 1e-10):
        solution, rank, route = psd_pinv_solve(G, y, rcond=rcond)
        kept = eigenvalues > rcond * 100
        expected = (Q[:, kept] / eigenvalues[kept]) @ (Q[:, kept].T @ y)
        assert rank == kept.sum() and route != "inverse"
        np.testing.assert_allclose(solution, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def _spd(eigenvalues: np.ndarray, seed: int = 5) -> np.ndarray:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(eigenvalues.size, eigenvalues.size)))
    G = (Q * eigenvalues) @ Q.T
    return (G + G.T) / 2


def test_clear_inverse_solve_is_the_inverse_of_a_clearly_nonsingular_matrix_and_keeps_it() -> None:
    G = _spd(np.logspace(2, -4, 50))
    y = np.random.default_rng(0).normal(size=(50, 2))
    kept = G.copy()
    solution = clear_inverse_solve(G, y)
    np.testing.assert_array_equal(G, kept)
    np.testing.assert_allclose(solution, np.linalg.solve(G, y), rtol=1e-8)
    eigen, rank, route = eigh_pinv_solve(G, y)
    assert (rank, route) == (50, "inverse")
    np.testing.assert_allclose(eigen, np.linalg.solve(G, y), rtol=1e-8)


@pytest.mark.parametrize("smallest", [0.0, 1e-9, 5e-8])
def test_clear_inverse_solve_declines_a_matrix_with_an_eigenvalue_near_the_cutoff(smallest) -> None:
    """λ_max = 100 and rcond = 1e-10 put the cutoff at 1e-8: an eigenvalue at or near it
    (within the margin) sends eigh_pinv_solve to its eigendecomposition."""
    G = _spd(np.concatenate([np.logspace(2, -2, 29), [smallest]]))
    y = np.random.default_rng(1).normal(size=30)
    assert clear_inverse_solve(G, y, rcond=1e-10) is None
    assert eigh_pinv_solve(G, y, rcond=1e-10)[2] == "eigen"


@pytest.mark.parametrize("sigma", [0.5, 3.0, 20.0])
def test_pl_outputs_do_not_depend_on_the_blas_thread_count(sigma, liver) -> None:
    from lkm.numerics.threads import blas_threads

    X_train, y_train, X_test, _ = liver
    with blas_threads(1):
        one = ProjectionLearning(sigma=sigma).fit(X_train, y_train)
        f_one, pred_one = one.decision_function(X_test), one.predict(X_test)
    two = ProjectionLearning(sigma=sigma).fit(X_train, y_train)
    assert two.info_["route"] == one.info_["route"] and two.info_["rank_G"] == one.info_["rank_G"]
    np.testing.assert_allclose(two.decision_function(X_test), f_one, rtol=1e-6, atol=1e-6 * np.abs(f_one).max())
    np.testing.assert_array_equal(two.predict(X_test), pred_one)


def test_larger_rcond_gives_lower_rank(liver) -> None:
    X_train, y_train, _, _ = liver
    ranks = [ProjectionLearning(sigma=20.0, rcond=r).fit(X_train, y_train).info_["rank_G"] for r in (1e-14, 1e-10, 1e-6)]
    assert ranks[0] > ranks[1] > ranks[2]


@pytest.mark.parametrize("sigma", [0.3, 3.0, 11.3, 78.5])
def test_pl_is_invariant_to_the_order_of_the_training_rows(sigma, liver) -> None:
    X_train, y_train, X_test, _ = liver
    base = ProjectionLearning(sigma=sigma).fit(X_train, y_train)
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(y_train))
        permuted = ProjectionLearning(sigma=sigma).fit(X_train[order], y_train[order])
        np.testing.assert_array_equal(permuted.decision_function(X_test), base.decision_function(X_test))
        np.testing.assert_array_equal(permuted.predict(X_test), base.predict(X_test))


@pytest.mark.parametrize("sigma", [3.0, 11.3, 37.9, 78.5])
def test_pl_outputs_survive_roundoff_perturbations_of_the_data(sigma, liver) -> None:
    """A relative 1e-15 perturbation of the training data (a unit of round-off) changed
    PL's outputs on liver-disorders by hundreds at sigma >= 10 with the old cutoff
    ``n·eps·max(diag G)``; with ``rcond·λ_max`` they move by far less than their size."""
    X_train, y_train, X_test, _ = liver
    f = ProjectionLearning(sigma=sigma).fit(X_train, y_train).decision_function(X_test)
    for seed in range(3):
        noise = 1e-15 * np.random.default_rng(seed).standard_normal(X_train.shape)
        g = ProjectionLearning(sigma=sigma).fit(X_train * (1 + noise), y_train).decision_function(X_test)
        assert np.abs(g - f).max() < 0.2
        clear = np.abs(f) > 0.2
        np.testing.assert_array_equal(np.sign(g[clear]), np.sign(f[clear]))


@pytest.mark.parametrize("sigma", [0.5, 20.0])
def test_cholesky_and_eigh_solvers_agree_where_g_is_well_separated(sigma, liver) -> None:
    X_train, y_train, X_test, _ = liver
    eigh = ProjectionLearning(sigma=sigma, solver="eigh").fit(X_train, y_train)
    chol = ProjectionLearning(sigma=sigma, solver="cholesky").fit(X_train, y_train)
    assert eigh.info_["solver"] == "eigh" and chol.info_["solver"] == "cholesky"
    assert abs(eigh.info_["rank_G"] - chol.info_["rank_G"]) <= 0.05 * eigh.info_["rank_G"] + 2
    agree = np.mean(eigh.predict(X_test) == chol.predict(X_test))
    assert agree >= (1.0 if sigma < 1 else 0.8)
