"""PRLS and PLapRLS by the semiparametric solve (issue 41, point 1).

Yang, King and Lyu, eqs. (10) and (12), with the bracket B = K - E: where the certificate
ρ (the objective's relative gradient at the semiparametric solution, -λ₁Ea over its
terms) is at most √rcond the estimators keep that solution, otherwise they take the
rank-revealing route. Checked here: both routes are stationary for the true objective
(B formed explicitly), the route's objective is never above the other route's, the
certificate rejects where d is small (letter, d = 16) and without it the fit there would
not be stationary, and the shipped PRLS / PLapRLS records are reproduced label for label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shipped_records import refit_records

import lkm.methods.manifold as manifold
from lkm.data import load_dataset
from lkm.methods.manifold import PRLS, PLapRLS, PRLSRegressor
from lkm.numerics.heat_semigroup import bracket_correction_product, penalty_bracket
from lkm.numerics.kernels import heat_from_sq, sq_dists
from lkm.numerics.manifold_solvers import certificate_tolerance, solve_belkin, solve_semiparametric

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- the true objective


def _problem(model: Any, X: np.ndarray, y: np.ndarray, labeled: np.ndarray) -> dict[str, Any]:
    """The fitted model's objective, in the solver's scaling: eq. (10)/(12) times l,
    ``(Y - f)ᵀJ(Y - f) + λ₁aᵀBa + λ₂fᵀLf`` with B = k_t - 2·2^(-d/2)k_{2t} + 3^(-d/2)k_{3t}
    formed explicitly (:func:`penalty_bracket`), f = Ka + β."""
    info = model.info_
    Xf = model.X_fit_
    D = sq_dists(Xf, Xf)
    K = heat_from_sq(D, info["t"])
    B = penalty_bracket(D, info["t"], Xf.shape[1])
    classes = model.classes_
    y_fit = y if Xf.shape[0] == X.shape[0] else y[labeled]
    lab = labeled if Xf.shape[0] == X.shape[0] else np.ones(Xf.shape[0], dtype=bool)
    Y = np.where(y_fit[:, None] == classes[None, :], 1.0, -1.0)
    if classes.size == 2:
        Y = Y[:, 1:]
    Y[~lab] = 0.0
    L = model.laplacian_ if "laplacian_" in model.__dict__ else None
    a = model.dual_coef_.reshape(Xf.shape[0], -1)
    beta = np.atleast_1d(model.intercept_)[None, :]
    return {"K": K, "B": B, "Y": Y, "J": lab.astype(float), "L": L, "a": a, "beta": beta,
            "lam1": info["lambda_1"], "lam2": info["lambda_2"], "psi": info["null_space_dim"]}


def objective(p: dict[str, Any], a: np.ndarray | None = None, beta: np.ndarray | None = None) -> np.ndarray:
    """Per column, ``(Y - f)ᵀJ(Y - f) + λ₁aᵀBa + λ₂fᵀLf`` at (a, β) (the fit's by default)."""
    a = p["a"] if a is None else a
    beta = p["beta"] if beta is None else beta
    f = p["K"] @ a + beta
    value = (p["J"][:, None] * (p["Y"] - f) ** 2).sum(axis=0) + p["lam1"] * (a * (p["B"] @ a)).sum(axis=0)
    if p["L"] is not None:
        value = value + p["lam2"] * (f * (p["L"] @ f)).sum(axis=0)
    return value


def relative_gradient(p: dict[str, Any]) -> float:
    """max over columns of ``‖∇F‖ / (‖∇data‖ + ‖∇penalty‖ + ‖∇graph‖)`` at the fit, over
    [a; β] (β's rows only with an unpenalized constant), each term computed on its own."""
    K, a = p["K"], p["a"]
    f = K @ a + p["beta"]
    resid = p["J"][:, None] * (f - p["Y"])
    data = [K @ resid, resid.sum(axis=0, keepdims=True)]
    pen = [p["lam1"] * (p["B"] @ a), np.zeros((1, a.shape[1]))]
    Lf = p["L"] @ f if p["L"] is not None else np.zeros_like(f)
    graph = [p["lam2"] * (K @ Lf), p["lam2"] * Lf.sum(axis=0, keepdims=True)]
    rows = slice(None) if p["psi"] else slice(0, 1)

    def stack(parts: list[np.ndarray]) -> np.ndarray:
        return np.vstack(parts[rows])

    total = stack(data) + stack(pen) + stack(graph)
    scale = sum(np.linalg.norm(stack(t), axis=0) for t in (data, pen, graph))
    return float(np.max(np.linalg.norm(total, axis=0) / scale))


def _standardized(name: str, data_dir: Path, rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    data = load_dataset(name, data_dir=data_dir)
    pick = np.sort(np.random.default_rng(seed).choice(data.X.shape[0], rows, replace=False))
    X, y = np.asarray(data.X, dtype=np.float64)[pick], np.asarray(data.y)[pick]
    std = X.std(axis=0)
    std[std == 0] = 1.0
    return (X - X.mean(axis=0)) / std, y


def _forced(monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """Force the route: "fallback" rejects every certificate, "semiparametric" accepts any."""
    monkeypatch.setattr(manifold, "certificate_tolerance", lambda rcond: -1.0 if route == "fallback" else np.inf)


# ---------------------------------------------------------------- the route and its certificate


def _graph_fit(X: np.ndarray, y: np.ndarray, sigma: float, **params: Any) -> tuple[PLapRLS, np.ndarray]:
    labeled = np.zeros(y.size, dtype=bool)
    labeled[::3] = True
    model = PLapRLS(kernel="gaussian", sigma=sigma, gamma_I=1.0, unlabeled_label=None, **params)
    return model.fit(X, y, unlabeled=~labeled), labeled


def test_high_dimension_takes_the_route_and_is_stationary() -> None:
    """d = 120 (2·2^(-d/2) = 2e-18): the semiparametric route, certified (ρ ≤ √rcond and
    recorded), stationary for eq. (10) and eq. (12) with B formed explicitly; three
    classes, sample weights, unlabeled rows and the graph."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 120))
    y = np.repeat([0, 1, 2], 50)
    sigma = 8.0
    weights = rng.uniform(0.5, 2.0, size=150)
    for model in (PRLS(kernel="gaussian", sigma=sigma, gamma=1e-3).fit(X, y),
                  PRLS(kernel="gaussian", sigma=sigma, gamma=1e-2).fit(X, y, sample_weight=weights)):
        info = model.info_
        assert info["solver"] == "semiparametric" and info["factorization"] == "cholesky"
        assert info["certificate"] <= info["certificate_tol"] == certificate_tolerance(model.rcond) == 1e-6
        if "sample_weight" not in info:
            assert relative_gradient(_problem(model, X, y, np.ones(150, dtype=bool))) < 1e-10
    model, labeled = _graph_fit(X, y, sigma, gamma_A=1e-3)
    assert model.info_["solver"] == "semiparametric" and model.info_["factorization"] == "lu"
    assert relative_gradient(_problem(model, X, y, labeled)) < 1e-10


def test_weighted_semiparametric_solution_solves_the_weighted_system() -> None:
    """The Cholesky of K + λ₁W⁻¹ (PRLS with sample weights) gives the solution of
    (WK + λ₁I)a + WΨβ = WY, Ψᵀa = 0: the LU of that system (:func:`solve_belkin`'s)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5))
    K = heat_from_sq(sq_dists(X, X), 2.0)
    w = rng.uniform(0.2, 3.0, size=60)
    Y = rng.normal(size=(60, 2))
    every = np.ones(60, dtype=bool)
    chol, how = solve_semiparametric(K, np.ones((60, 1)), Y, every, 0.3, weights=w)
    lu = solve_belkin(K, np.ones((60, 1)), Y, every, 0.3, weights=w)[0]
    assert how["factorization"] == "cholesky"
    np.testing.assert_allclose(chol, lu, rtol=1e-9, atol=1e-11)
    assert np.abs(chol[:60].sum(axis=0)).max() < 1e-10  # Ψᵀa = 0


def test_certificate_rejects_on_letter_and_the_route_would_not_be_stationary(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """letter (d = 16, 2·2^(-d/2) = 7.8e-3): the certificate rejects the route (measured
    ρ ≈ 6e-3 against 1e-6) and the rank-revealing fit is stationary; forced through
    without the certificate, the semiparametric fit is not stationary and its objective
    is higher (measured +1e-5 relative on 2,000 rows) — the certificate is what keeps it
    out."""
    X, y = _standardized("letter-recognition", data_dir, 400)
    sigma = float(np.sqrt(X.shape[1] * X.var() / 2.0))
    every = np.ones(y.size, dtype=bool)
    model = PRLS(kernel="gaussian", sigma=sigma, gamma=1e-3).fit(X, y)
    assert model.info_["solver"] != "semiparametric"
    assert model.info_["certificate"] > 100 * model.info_["certificate_tol"]
    kept = _problem(model, X, y, every)
    assert relative_gradient(kept) < 1e-8
    _forced(monkeypatch, "semiparametric")
    forced = PRLS(kernel="gaussian", sigma=sigma, gamma=1e-3).fit(X, y)
    assert forced.info_["solver"] == "semiparametric"
    uncertified = _problem(forced, X, y, every)
    assert relative_gradient(uncertified) > 1e-4
    assert (objective(uncertified) > objective(kept) * (1 + 1e-8)).all()
    graph_model, labeled = _graph_fit(X, y, sigma, gamma_A=1e-3)
    assert graph_model.info_["solver"] == "semiparametric"  # forced: the graph route too
    monkeypatch.undo()
    graph_model, labeled = _graph_fit(X, y, sigma, gamma_A=1e-3)
    assert graph_model.info_["solver"] != "semiparametric"
    assert relative_gradient(_problem(graph_model, X, y, labeled)) < 1e-8


@pytest.mark.parametrize(("name", "rows"), [("spambase", 1200), ("usps", 800)])
def test_route_objective_never_above_the_rank_revealing_route(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str, rows: int
) -> None:
    """Real data where the route is taken (spambase d = 57, the bench fold's set; USPS d =
    256): the objective of eq. (10) / (12) at the semiparametric solution is at most the
    rank-revealing route's (to 1e-13 relative: where E is 0 to round-off both are the
    minimizer), both are stationary, and no label moves."""
    X, y = _standardized(name, data_dir, rows)
    every = np.ones(y.size, dtype=bool)
    fits = {}
    for route in ("semiparametric", "fallback"):
        if route == "fallback":
            _forced(monkeypatch, "fallback")
        prls = PRLS(kernel="gaussian", sigma=5.0 if name == "spambase" else 8.0, gamma=1e-3).fit(X, y)
        graph, labeled = _graph_fit(X, y, 5.0 if name == "spambase" else 8.0, gamma_A=1e-3)
        fits[route] = (prls, graph)
    monkeypatch.undo()
    assert [m.info_["solver"] for m in fits["semiparametric"]] == ["semiparametric"] * 2
    assert all(m.info_["solver"] != "semiparametric" for m in fits["fallback"])
    for (new, old), lab in zip(zip(fits["semiparametric"], fits["fallback"], strict=True), (every, labeled), strict=True):
        p_new, p_old = _problem(new, X, y, lab), _problem(old, X, y, lab)
        assert (objective(p_new) <= objective(p_old) * (1 + 1e-13)).all()
        assert relative_gradient(p_new) < certificate_tolerance(1e-12)
        assert relative_gradient(p_old) < certificate_tolerance(1e-12)
        np.testing.assert_array_equal(new.predict(X), old.predict(X))


def test_regressor_constant_target_and_gamma_zero() -> None:
    """A constant target is fitted by the route (a = 0 to round-off, β = c); γ = 0 has
    no semiparametric system (λ₁ = 0) and keeps the rank-revealing route."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 100))
    flat = PRLSRegressor(kernel="gaussian", sigma=6.0, gamma=1.0).fit(X, np.full(40, 3.0))
    assert flat.info_["solver"] == "semiparametric" and flat.info_["certificate"] < 1e-12
    assert np.abs(flat.dual_coef_).max() < 1e-12
    np.testing.assert_allclose(flat.predict(X[:5]), 3.0, rtol=1e-12)
    y = rng.normal(size=40)
    zero = PRLSRegressor(kernel="gaussian", sigma=6.0, gamma=0.0).fit(X, y)
    assert zero.info_["solver"] != "semiparametric" and "certificate" not in zero.info_


def test_certificate_weights_match_the_bracket() -> None:
    """The certificate's E a (:func:`bracket_correction_product`) is k_t a - B_t a."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 6))
    D = sq_dists(X, X)
    a = rng.normal(size=(70, 3))
    E = heat_from_sq(D, 1.5) - penalty_bracket(D, 1.5, 6)
    np.testing.assert_allclose(bracket_correction_product(D, 1.5, 6, a, block=16), E @ a,
                               rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- the shipped records


#: The default test run's subset: both routes, tuned and untuned, with and without a graph.
REPRESENTATIVE = [
    ("cross_paper", lambda r: r["dataset"] == "sonar" and r["split"] == "r0f0"),  # tuned, d = 60: the route
    ("prls_isolet", lambda r: r["split"] == "speaker1" and r["method"] in ("PRLS", "PLapRLS")),  # d = 617
    ("prls_letter", lambda r: r["split"] == "r0" and r["dataset"] == "letter[Q|rest]"),  # d = 16: refused
]


@pytest.mark.parametrize(("run", "keep"), REPRESENTATIVE, ids=[r for r, _ in REPRESENTATIVE])
def test_shipped_records_are_reproduced(data_dir: Path, run: str, keep: Any) -> None:
    """A representative subset of the shipped PRLS / PLapRLS records (docs/runs): the
    same accuracy, unlabeled accuracy, misclassified rows and labels, tuned setting."""
    count, differences = refit_records(run, data_dir, ("prls", "laprls", "plaprls"), keep, ("status", "accuracy", "unlabeled_accuracy", "errors"), ("tuned_params",))
    assert count > 0 and differences == []


PRLS_RUNS = ["prls_letter", "prls_letter.binary_graph", "prls_letter.normalized_graph", "prls_letter.scaled",
             "prls_isolet", "cross_paper"]


@pytest.mark.shipped_refit
@pytest.mark.parametrize("run", PRLS_RUNS)
def test_every_shipped_record_is_reproduced(data_dir: Path, run: str) -> None:
    """Every shipped PRLS / PLapRLS record of ``run`` (docs/runs), label for label."""
    count, differences = refit_records(run, data_dir, ("prls", "laprls", "plaprls"), lambda r: True, ("status", "accuracy", "unlabeled_accuracy", "errors"), ("tuned_params",))
    assert count > 0 and differences == []
