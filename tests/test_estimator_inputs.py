"""What users expect of the estimators' inputs (issue 29, point 3): ``sample_weight`` in
the regularized least-squares family and LRR (integer weights = repeated rows, ones = no
weights, zero gradient of the weighted objective at the solution), scipy sparse X,
``transduction_`` on the semi-supervised estimators, the regressors exported and listed,
and NPPS.fit_resample keeping pandas types."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.utils import get_tags

from lkm.methods import (
    HKNN,
    LDCV,
    NHKNN,
    NLDCV,
    NPPS,
    NPPSSVM,
    PRLS,
    REGRESSOR_PATHS,
    SVMKNN,
    LapRLS,
    LapRLSRegressor,
    LocalizedProjectionLearning,
    LocalRiskRegularization,
    NearestNeighbor,
    PLapRLS,
    PRLSRegressor,
    ProjectionLearning,
    RegularizedLeastSquares,
    SVMClassifier,
    describe_estimators,
)
from lkm.numerics.heat_semigroup import penalty_bracket
from lkm.numerics.kernels import heat_from_sq, squared_euclidean


def _data(seed: int, n: int = 24, d: int = 3, classes: int = 2, shift: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, d)) + shift * y[:, None]
    return X, y


def _repeated(X: np.ndarray, y: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(X, counts, axis=0), np.repeat(y, counts)


def _outputs(model: Any, X: np.ndarray) -> np.ndarray:
    return model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)


# Estimators whose weighted objective equals the repeated-rows objective (no graph; fixed widths).
NO_GRAPH = [
    lambda: RegularizedLeastSquares(kernel="gaussian", sigma=2.0, lam=0.05),
    lambda: RegularizedLeastSquares(kernel="heat", t=2.0, lam=0.05, unit_diagonal=True),
    lambda: LocalRiskRegularization(kernel="gaussian", sigma=2.0, lam=0.05, beta=3.0, x0=[0.5, 0.5, 0.5]),
    lambda: LocalRiskRegularization(kernel="gaussian", sigma=2.0, lam=0.05, beta=2.0, vicinity="hard",
                                    x0=[0.5, 0.5, 0.5]),
    lambda: PRLS(kernel="gaussian", sigma=2.0, gamma=0.05),
    lambda: LapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.0, unlabeled_label=None),
    lambda: LapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.0, null_space="constant",
                   unlabeled_label=None),
    lambda: PLapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.0, unlabeled_label=None),
    lambda: PRLSRegressor(kernel="gaussian", sigma=2.0, gamma=0.05),
    lambda: LapRLSRegressor(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.0),
]
# Every estimator taking sample_weight (the graph ones too: ones = no weights).
ALL_WEIGHTED = [
    *NO_GRAPH,
    lambda: LapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.5, unlabeled_label=None),
    lambda: PLapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.5, unlabeled_label=None),
    lambda: PLapRLS(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.5, system="printed",
                    normalized_laplacian=True, unlabeled_label=None),
    lambda: LapRLSRegressor(kernel="gaussian", sigma=2.0, gamma_A=0.05, gamma_I=0.5),
]


def _ids(makers: list) -> list[str]:
    return [repr(m()) for m in makers]


@pytest.mark.parametrize("make", NO_GRAPH, ids=_ids(NO_GRAPH))
def test_integer_weights_equal_repeated_rows(make) -> None:
    X, y = _data(1)
    rng = np.random.default_rng(2)
    counts = rng.integers(0, 4, size=y.size)
    counts[:4] = [1, 2, 1, 3]  # both classes present
    if getattr(make(), "_uses_unlabeled", False) and "PLapRLS" in repr(make()):
        counts = np.maximum(counts, 1)  # a zero weight makes a PLapRLS row unlabeled, not absent
    Xq = rng.normal(size=(15, 3)) + 0.7
    weighted = make().fit(X, y, sample_weight=counts)
    repeated = make().fit(*_repeated(X, y, counts))
    np.testing.assert_allclose(_outputs(weighted, Xq), _outputs(repeated, Xq), rtol=0, atol=1e-8)
    np.testing.assert_allclose(_outputs(weighted, X), _outputs(repeated, X), rtol=0, atol=1e-8)


@pytest.mark.parametrize("make", ALL_WEIGHTED, ids=_ids(ALL_WEIGHTED))
def test_unit_weights_equal_no_weights(make) -> None:
    X, y = _data(3)
    Xq = np.random.default_rng(4).normal(size=(10, 3))
    plain = make().fit(X, y)
    ones = make().fit(X, y, sample_weight=np.ones(y.size))
    np.testing.assert_allclose(_outputs(ones, Xq), _outputs(plain, Xq), rtol=0, atol=1e-10)
    scalar = make().fit(X, y, sample_weight=1.0)
    np.testing.assert_allclose(_outputs(scalar, Xq), _outputs(plain, Xq), rtol=0, atol=1e-10)


def _gaussian(X: np.ndarray, sigma: float) -> np.ndarray:
    return heat_from_sq(squared_euclidean(X, X), 0.5 * sigma * sigma)


def test_weighted_rls_and_lrr_are_stationary() -> None:
    """RLS: ∇_α [(1/Σw)(y - Kα)ᵀW(y - Kα) + λαᵀKα] = -(2/Σw)KW(y - Kα) + 2λKα = 0;
    LRR the same with W = diag(s·k(x, x0)) (Li, Chen, Tang eq. (2.2)-(2.4))."""
    X, y = _data(5)
    w = np.random.default_rng(6).uniform(0.0, 3.0, size=y.size)
    K = _gaussian(X, 2.0)
    t = np.where(y == 1, 1.0, -1.0)
    for model, loss in [
        (RegularizedLeastSquares(kernel="gaussian", sigma=2.0, lam=0.05), w),
        (LocalRiskRegularization(kernel="gaussian", sigma=2.0, lam=0.05, beta=3.0, x0=[0.5, 0.5, 0.5]), None),
    ]:
        model.fit(X, y, sample_weight=w)
        if loss is None:
            loss = w * model.vicinity_weights_
        a = model.dual_coef_
        data_grad = -(2.0 / loss.sum()) * K @ (loss * (t - K @ a))
        grad = data_grad + 2.0 * 0.05 * K @ a
        assert np.linalg.norm(grad) <= 1e-10 * np.linalg.norm(data_grad), type(model).__name__


@pytest.mark.parametrize("graph", [0.0, 0.5])
@pytest.mark.parametrize("cls", [PRLS, LapRLS, PLapRLS])
def test_weighted_manifold_objective_is_stationary(cls, graph: float) -> None:
    """Yang, King, Lyu eq. (12) with the weighted loss, E = (1/Σw)(Y - f)ᵀW(Y - f) +
    γ_A αᵀPα + (γ_I/n²)fᵀLf, f = Kα + Ψβ: ∂E/∂α = -(2/Σw)KWr + 2γ_A Pα + (2γ_I/n²)KLf
    and ∂E/∂β = -(2/Σw)ΨᵀWr + (2γ_I/n²)ΨᵀLf vanish (r = Y - f; W = 0 on unlabeled rows)."""
    if cls is PRLS and graph:
        pytest.skip("PRLS has no graph")
    X, y = _data(7, n=30)
    labeled = np.arange(30) % 5 != 0
    w = np.random.default_rng(8).uniform(0.2, 3.0, size=30)
    params: dict[str, Any] = {"kernel": "gaussian", "sigma": 1.5}
    params.update({"gamma": 0.05} if cls is PRLS else {"gamma_A": 0.05, "gamma_I": graph})
    model = cls(**params).fit(X, y, unlabeled=~labeled, sample_weight=w)
    Xf = model.X_fit_
    rows = labeled if cls is PRLS else np.ones(30, dtype=bool)
    Wd = np.where(labeled, w, 0.0)[rows]
    n = Xf.shape[0]
    D = squared_euclidean(Xf, Xf)
    t = 0.5 * 1.5 * 1.5
    K = heat_from_sq(D, t)
    P = K if cls is LapRLS else penalty_bracket(D, t, X.shape[1], K)
    Y = np.where(y[rows] == model.classes_[1], 1.0, -1.0)
    f = K @ model.dual_coef_ + model.intercept_
    r = Y - f
    Lf = model.laplacian_ @ f if graph else np.zeros(n)
    scale = 2.0 / Wd.sum()
    data_grad = -scale * K @ (Wd * r)
    grad_a = data_grad + 2.0 * 0.05 * P @ model.dual_coef_ + 2.0 * graph / n**2 * K @ Lf
    assert np.linalg.norm(grad_a) <= 1e-8 * np.linalg.norm(data_grad)
    if cls is not LapRLS:  # constant Ψ (LapRLS's default has no Ψ)
        grad_b = -scale * np.sum(Wd * r) + 2.0 * graph / n**2 * np.sum(Lf)
        assert abs(grad_b) <= 1e-8 * np.abs(scale * Wd * r).sum()


@pytest.mark.parametrize("cls", [RegularizedLeastSquares, PRLS, LapRLS])
def test_bad_sample_weights_are_refused(cls) -> None:
    X, y = _data(9)
    kwargs = {} if cls is RegularizedLeastSquares else {"unlabeled_label": None}
    with pytest.raises(ValueError, match="sample_weight must be 24"):
        cls(**kwargs).fit(X, y, sample_weight=np.ones(5))
    with pytest.raises(ValueError, match="non-negative"):
        cls(**kwargs).fit(X, y, sample_weight=-np.ones(24))
    with pytest.raises(ValueError, match="all sample weights are zero"):
        cls(**kwargs).fit(X, y, sample_weight=np.zeros(24))


# ---------------------------------------------------------------- labels (issue 29, point 2)


def test_prls_is_supervised_and_takes_plus_minus_one_labels() -> None:
    X, y = _data(10)
    pm = np.where(y == 1, 1, -1)
    model = PRLS(kernel="gaussian", sigma=2.0).fit(X, pm)
    assert list(model.classes_) == [-1, 1] and model.info_["n_unlabeled"] == 0
    assert PRLS().unlabeled_label is None and PRLSRegressor().unlabeled_label is None


@pytest.mark.parametrize("cls", [LapRLS, PLapRLS])
def test_semi_supervised_default_names_unlabeled_label_when_it_empties_a_class(cls) -> None:
    X, y = _data(11)
    pm = np.where(y == 1, 1, -1)
    with pytest.raises(ValueError, match=r"unlabeled_label=-1.*unlabeled_label=None.*unlabeled=mask"):
        cls(kernel="gaussian").fit(X, pm)
    ok = cls(kernel="gaussian", unlabeled_label=None).fit(X, pm)
    by_mask = cls(kernel="gaussian").fit(X, pm, unlabeled=np.zeros(y.size, dtype=bool))
    np.testing.assert_allclose(ok.decision_function(X), by_mask.decision_function(X), atol=1e-12)


# ---------------------------------------------------------------- transduction_


@pytest.mark.parametrize("cls", [LapRLS, PLapRLS])
@pytest.mark.parametrize("classes", [2, 3])
def test_transduction_labels_every_training_row(cls, classes: int) -> None:
    X, y = _data(12, n=30, classes=classes, shift=3.0)
    unlabeled = np.arange(30) % 5 < 2
    y_semi = np.where(unlabeled, -1, y)
    model = cls(kernel="gaussian", gamma_I=0.5).fit(X, y_semi)
    assert model.transduction_.shape == (30,)
    assert set(model.transduction_) <= set(model.classes_)
    np.testing.assert_array_equal(model.transduction_, model.predict(X))
    assert np.mean(model.transduction_[unlabeled] == y[unlabeled]) > 0.6


def test_supervised_prls_has_no_transduction() -> None:
    X, y = _data(13)
    assert not hasattr(PRLS(kernel="gaussian").fit(X, y), "transduction_")


# ---------------------------------------------------------------- sparse input

SPARSE = [
    lambda: RegularizedLeastSquares(kernel="gaussian", sigma=2.0),
    lambda: LocalRiskRegularization(kernel="gaussian", sigma=2.0, x0=0),
    lambda: PRLS(kernel="gaussian"),
    lambda: LapRLS(kernel="gaussian", unlabeled_label=None),
    lambda: PLapRLS(kernel="gaussian", unlabeled_label=None),
    lambda: PRLSRegressor(kernel="gaussian"),
    lambda: LapRLSRegressor(kernel="gaussian"),
    lambda: NPPSSVM(k=3, method="naive", sigma=1.0),
]


@pytest.mark.parametrize("make", SPARSE, ids=_ids(SPARSE))
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_gives_the_dense_results(make, fmt: str) -> None:
    X, y = _data(14)
    X[np.abs(X) < 0.5] = 0.0
    Xs = sp.csr_matrix(X).asformat(fmt)
    dense = make().fit(X, y)
    sparse = make().fit(Xs, y)
    np.testing.assert_allclose(_outputs(sparse, Xs), _outputs(dense, X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparse.predict(Xs), dense.predict(X), rtol=0, atol=1e-12)


# Methods that start from distances (or LIBSVM's SVM): sparse X densified once, same results.
SPARSE_DENSIFIED = [
    lambda: NearestNeighbor(),
    lambda: HKNN(n_neighbors=3),
    lambda: LDCV(n_neighbors=2),
    lambda: NHKNN(n_neighbors=5, sigma=2.0),
    lambda: NLDCV(n_neighbors=4, sigma=2.0),
    lambda: ProjectionLearning(sigma=2.0),
    lambda: LocalizedProjectionLearning(sigma=2.0, k=8),
    lambda: SVMKNN(n_neighbors=6, sigma=2.0),
    lambda: SVMClassifier(C=2.0, sigma=2.0),
    lambda: SVMClassifier(kernel="linear"),
    lambda: SVMClassifier(sigma=2.0, multiclass="ova"),
]


@pytest.mark.parametrize("make", SPARSE_DENSIFIED, ids=_ids(SPARSE_DENSIFIED))
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("classes", [2, 3])
def test_sparse_input_of_distance_methods_gives_the_dense_results(make, fmt: str, classes: int) -> None:
    X, y = _data(16, n=36, d=4, classes=classes)
    X[np.abs(X) < 0.5] = 0.0
    Xs = sp.csr_matrix(X).asformat(fmt)
    assert get_tags(make()).input_tags.sparse
    dense = make().fit(X, y)
    sparse = make().fit(Xs, y)
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(X))
    np.testing.assert_allclose(sparse.decision_function(Xs), dense.decision_function(X), rtol=0, atol=1e-8)


def test_npps_accepts_sparse_and_keeps_it() -> None:
    X, y = _data(15, n=60)
    Xr, yr = NPPS(k=5, method="naive").fit_resample(sp.csr_matrix(X), y)
    Xd, yd = NPPS(k=5, method="naive").fit_resample(X, y)
    assert sp.issparse(Xr)
    np.testing.assert_array_equal(Xr.toarray(), Xd)
    np.testing.assert_array_equal(yr, yd)


# ---------------------------------------------------------------- NPPS keeps pandas types


def test_npps_fit_resample_keeps_dataframes_and_series() -> None:
    X, y = _data(16, n=60)
    index = pd.Index([f"r{i}" for i in range(60)], name="row")
    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=index)
    labels = pd.Series(np.where(y == 1, "yes", "no"), index=index, name="label")
    sampler = NPPS(k=5, method="naive")
    Xr, yr = sampler.fit_resample(frame, labels)
    assert isinstance(Xr, pd.DataFrame) and isinstance(yr, pd.Series)
    assert list(Xr.columns) == ["a", "b", "c"] and yr.name == "label"
    kept = sampler.sample_indices_
    assert list(Xr.index) == list(index[kept]) and list(yr.index) == list(index[kept])
    pd.testing.assert_frame_equal(Xr, frame.iloc[kept])
    Xa, ya = NPPS(k=5, method="naive").fit_resample(X, labels.to_numpy())
    assert isinstance(Xa, np.ndarray) and isinstance(ya, np.ndarray)
    np.testing.assert_array_equal(Xa, Xr.to_numpy())
    np.testing.assert_array_equal(ya, yr.to_numpy())


# ---------------------------------------------------------------- exports


def test_regressors_are_exported_and_listed() -> None:
    rows = {r["key"]: r for r in describe_estimators()}
    for key, cls in [("prls_regressor", PRLSRegressor), ("laprls_regressor", LapRLSRegressor)]:
        assert REGRESSOR_PATHS[key].endswith(cls.__name__)
        assert rows[key]["kind"] == "regressor" and rows[key]["class"] == f"lkm.methods.{cls.__name__}"
        expected = ", ".join(f"{k}={v!r}" for k, v in cls().get_params().items())
        assert sorted(rows[key]["parameters"].split(", ")) == sorted(expected.split(", "))
