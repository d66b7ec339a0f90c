"""LapRLS's system with every row in the loss by refinement on the graph-free symmetric
system (:func:`lkm.numerics.manifold_solvers._solve_refined`: one Cholesky instead of
Belkin et al.'s LU): stationary for the same system, within 1e-10 of the LU's decision
values with the same labels on real data, and the LU kept wherever the refinement
would not converge or the loss leaves rows out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import lkm.numerics.manifold_solvers as solvers
from lkm.data import load_dataset
from lkm.methods.manifold import LapRLS, PLapRLS
from lkm.numerics.graph_laplacian import knn_laplacian
from lkm.numerics.kernels import gaussian_from_sq, sq_dists


@pytest.fixture(scope="module")
def spambase(data_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1,200 spambase rows (standardized), the last 300 the queries."""
    data = load_dataset("spambase", data_dir=data_dir)
    rows = np.random.default_rng(0).choice(len(data.y), 1200, replace=False)
    X, y = np.asarray(data.X, dtype=np.float64)[rows], np.asarray(data.y)[rows]
    X = (X - X[:900].mean(axis=0)) / np.where(X[:900].std(axis=0) > 0, X[:900].std(axis=0), 1.0)
    return X[:900], y[:900], X[900:]


def _lu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solvers, "_solve_refined", lambda *args, **kwargs: None)


@pytest.mark.parametrize("method", [LapRLS, PLapRLS])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_refined_route_gives_the_lus_labels_and_values(spambase, monkeypatch, method, weighted: bool) -> None:
    X, y, Xq = spambase
    weight = np.random.default_rng(1).uniform(0.5, 2.0, y.size) if weighted else None
    params = {"kernel": "gaussian", "sigma": 5.0, "gamma_A": 1e-3, "gamma_I": 1e-3}
    refined = method(**params).fit(X, y, sample_weight=weight)
    route = refined.info_.get("factorization", refined.info_["solver"])
    assert route in ("refined", "cholesky, refined") and refined.info_["corrections"] <= 5
    _lu_only(monkeypatch)
    lu = method(**params).fit(X, y, sample_weight=weight)
    assert lu.info_.get("factorization", lu.info_["solver"]) == "lu"
    f, f_lu = refined.decision_function(Xq), lu.decision_function(Xq)
    assert np.abs(f - f_lu).max() <= 1e-10 * np.abs(f_lu).max()
    np.testing.assert_array_equal(refined.predict(Xq), lu.predict(Xq))


def _system(n: int = 120, seed: int = 0, graph: float = 1e-3) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    D = sq_dists(X, X)
    K = gaussian_from_sq(D, 1.5)
    L = knn_laplacian(D, 6, "heat", 1.0, False)
    Y = np.where(rng.random((n, 2)) < 0.5, 1.0, -1.0)
    return K, np.ones((n, 1)), Y, np.ones(n, dtype=bool), 0.5, L, graph


def test_refined_solution_solves_belkins_system_to_round_off() -> None:
    """(GK + λ₁I)α + GΨβ = Y and Ψᵀα = 0 (W = I), residual at round-off."""
    K, Psi, Y, labeled, ridge, L, graph = _system()
    x, how = solvers.solve_belkin(K, Psi, Y, labeled, ridge, L, graph)
    assert how["solver"] == "refined"
    a, beta = x[:-1], x[-1:]
    G = np.eye(K.shape[0]) + graph * L.toarray()
    residual = (G @ K + ridge * np.eye(K.shape[0])) @ a + G @ Psi @ beta - Y
    assert np.abs(residual).max() <= 1e-12 * np.abs(Y).max()
    assert np.abs(Psi.T @ a).max() <= 1e-12 * np.abs(a).max()


def test_a_graph_too_strong_to_refine_against_takes_the_lu() -> None:
    """λ₂‖L‖ far above 1: the corrections grow, so the route gives up (after a few) and the LU solves."""
    K, Psi, Y, labeled, ridge, L, _ = _system()
    assert solvers._solve_refined(K, Psi, Y, np.ones(K.shape[0]), ridge, L, 50.0, solvers.RCOND) is None
    assert solvers.solve_belkin(K, Psi, Y, labeled, ridge, L, 50.0)[1]["solver"] == "lu"


def test_rows_outside_the_loss_keep_the_lu() -> None:
    """Unlabeled rows (w = 0) have no W⁻¹: the LU, as before."""
    K, Psi, Y, labeled, ridge, L, graph = _system()
    labeled = np.arange(K.shape[0]) % 4 != 0
    Y = np.where(labeled[:, None], Y, 0.0)
    assert solvers.solve_belkin(K, Psi, Y, labeled, ridge, L, graph)[1]["solver"] == "lu"
