"""NHKNN's and NLDCV's kernel PCA by certified Cholesky factors (issue 41, point 6)
against the eigendecomposition route.

``lkm.methods.subspace.CHOLESKY_KPCA = False`` keeps ``eigh`` of every query's centred
local kernel matrix (Cevikalp et al., eqs. (15)-(22)) and, for NLDCV, the SVD of the
pooled within-class differences: the reference. The Cholesky route
(:mod:`lkm.numerics.kernel_pca`) gives coordinates isometric to kernel PCA's where it
certifies that the eigendecomposition keeps the whole R(S_T^Φ); the predictions must be
the same on every row and the decision values equal to round-off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import lkm.methods.subspace as subspace
import lkm.numerics.kernel_pca as kernel_pca
from lkm.methods.subspace import NHKNN, NLDCV
from lkm.numerics.kernel_pca import (
    independent_within,
    isometric_coordinates,
    null_basis,
    pooled_residuals,
)

#: Decision values of the two routes agree to this share of the row's largest |value|
#: (measured: below 1e-12 on letter-recognition and isolet at 500 to 2,000 rows).
TOLERANCE = 1e-9


def _letter(data_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """300 rows of letter-recognition (the benchmark's stratified draw), standardized,
    200 training and 100 test rows: integer features, so repeated rows."""
    from lkm.data import load_dataset, subsample_rows

    ds = subsample_rows(load_dataset("letter-recognition", data_dir=data_dir), 300)
    X, y = np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=100, stratify=y, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


def _ties() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Small integer data: repeated rows within and across classes, queries on training rows."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(180, 12)).astype(float)
    y = rng.integers(0, 4, size=180)
    X, y = np.vstack([X, X[:60], X[:20]]), np.concatenate([y, y[:60], (y[:20] + 1) % 4])
    Xq = np.vstack([X[:40], rng.integers(0, 3, size=(60, 12)).astype(float)])
    return X, y, Xq


def _both(monkeypatch: pytest.MonkeyPatch, est: Any, X: np.ndarray, y: np.ndarray, Xq: np.ndarray) -> dict[str, Any]:
    out = {}
    for route in (True, False):
        monkeypatch.setattr(subspace, "CHOLESKY_KPCA", route)
        fitted = est.fit(X, y)
        out["cholesky" if route else "eigh"] = (fitted.predict(Xq), fitted.decision_function(Xq), dict(fitted.info_))
    return out


def _certified(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each query's coordinates were certified."""
    seen: list[bool] = []
    original = kernel_pca.isometric_coordinates

    def spy(*args: Any) -> Any:
        result = original(*args)
        seen.append(result is not None)
        return result

    monkeypatch.setattr(subspace, "isometric_coordinates", spy)
    return seen


def _assert_same(runs: dict[str, Any]) -> None:
    (p_fast, d_fast, i_fast), (p_ref, d_ref, i_ref) = runs["cholesky"], runs["eigh"]
    np.testing.assert_array_equal(p_fast, p_ref)
    scale = np.abs(d_ref).max(axis=1, keepdims=True)
    assert (np.abs(d_fast - d_ref) <= TOLERANCE * scale).all()
    for key in ("non_psd_local_grams", "empty_null_space"):
        assert i_fast.get(key) == i_ref.get(key)


@pytest.mark.parametrize("cls, k", [(NHKNN, 5), (NLDCV, 4)])
@pytest.mark.parametrize("sigma", [2.0, 16.0])
def test_cholesky_route_predicts_as_eigh_on_letter(data_dir, monkeypatch, cls, k, sigma):
    """A real draw with repeated rows: the same labels on every row, decision values to
    round-off, and the Cholesky route taken for most queries."""
    Xtr, Xte, ytr, _ = _letter(data_dir)
    seen = _certified(monkeypatch)
    runs = _both(monkeypatch, cls(sigma=sigma, n_neighbors=k), Xtr, ytr, Xte)
    _assert_same(runs)
    assert len(seen) == 2 * len(Xte) and sum(seen) >= 0.9 * len(seen)  # predict, decision_function


@pytest.mark.parametrize("cls, k", [(NHKNN, 6), (NLDCV, 5)])
@pytest.mark.parametrize("sigma", [0.7, 3.0])
def test_cholesky_route_with_repeated_rows_and_queries_on_rows(monkeypatch, cls, k, sigma):
    """Repeated rows within and across classes. A query equal to a training row that is
    in two classes lies on both classes' hulls (NHKNN) or common vectors (NLDCV): the
    Cholesky route gives both distances exactly 0 and the documented tie rule decides,
    where the eigh route leaves round-off (~1e-16) that picks a class by chance. Every
    other row: the same label, distances to round-off."""
    X, y, Xq = _ties()
    est = cls(sigma=sigma, n_neighbors=k)
    dist = {}
    for route in (True, False):
        monkeypatch.setattr(subspace, "CHOLESKY_KPCA", route)
        fitted = est.fit(X, y)
        dist[route] = (fitted.class_distances(Xq), fitted.predict(Xq))
    (d_fast, p_fast), (d_ref, p_ref) = dist[True], dist[False]
    scale = d_ref.max(axis=1, keepdims=True)
    assert (np.abs(d_fast - d_ref) <= TOLERANCE * scale).all()
    # rows tied up to round-off in the reference (exact ties of the integer data, which
    # the eigh route's last bits break by chance): the same label everywhere else, and
    # the reference's round-off zeros exact zeros here
    near_min = d_ref - d_ref.min(axis=1, keepdims=True) <= 1e-12 * np.maximum(scale, 1e-300)
    tied = near_min.sum(axis=1) >= 2
    np.testing.assert_array_equal(p_fast[~tied], p_ref[~tied])
    assert (d_fast[d_ref <= 1e-12 * scale] == 0.0).all()
    assert (~tied).sum() >= 30


def test_cholesky_route_falls_back_where_not_certified(monkeypatch):
    """Queries whose local kernel matrix is not certified take eigh (here: all of them,
    the certificate's floor raised out of reach), with eigh's results."""
    X, y, Xq = _ties()
    seen = _certified(monkeypatch)
    monkeypatch.setattr(kernel_pca, "CERT_FLOOR", 1.0)
    for est in (NHKNN(sigma=3.0, n_neighbors=6), NLDCV(sigma=3.0, n_neighbors=5)):
        runs = _both(monkeypatch, est, X, y, Xq)
        np.testing.assert_array_equal(runs["cholesky"][0], runs["eigh"][0])
        np.testing.assert_allclose(runs["cholesky"][1], runs["eigh"][1], rtol=0, atol=1e-12)
    assert seen and not any(seen)


def test_isometric_coordinates_reproduce_the_centred_kernel():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(30, 5))
    P[7], P[19], P[20] = P[3], P[3], P[11]  # repeated points
    groups = np.unique(P, axis=0, return_inverse=True)[1].reshape(-1).astype(np.intp)
    q = rng.normal(size=5)
    D = ((P[:, None] - P[None]) ** 2).sum(-1)
    G, lq = np.exp(-D / 8.0), np.exp(-((P - q) ** 2).sum(-1) / 8.0)
    coords = isometric_coordinates(G, np.arange(30), lq, groups, 1e-12)
    assert coords is not None
    Y, yq = coords
    J = np.eye(30) - 1.0 / 30
    np.testing.assert_allclose(Y @ Y.T, J @ G @ J, atol=1e-12)
    np.testing.assert_allclose(Y @ yq, J @ (lq - G.mean(axis=1)), atol=1e-12)
    W = null_basis(groups)
    np.testing.assert_allclose(W.T @ W, np.eye(W.shape[1]), atol=1e-14)
    np.testing.assert_allclose(J @ G @ J @ W, 0.0, atol=1e-12)


def test_independent_within_keeps_a_spanning_forest():
    # classes of 3: [a, b, a] (b repeats the anchor's class partner), [c, b, d], [e, e, f]
    groups = np.array([0, 1, 0, 2, 1, 3, 4, 4, 5], dtype=np.intp)
    keep = independent_within(groups, np.array([0, 3, 6], dtype=np.intp), np.array([3, 3, 3], dtype=np.intp))
    np.testing.assert_array_equal(keep, [True, False, True, True, False, True])


def test_pooled_residuals_match_the_svd():
    rng = np.random.default_rng(1)
    Z, R = rng.normal(size=(6, 10)), rng.normal(size=(4, 10))
    out = pooled_residuals(Z, R)
    assert out is not None
    np.testing.assert_allclose(out, subspace._residual_norms(Z[None], R[None], 1e-10)[0], rtol=1e-12)
    assert pooled_residuals(np.vstack([Z, Z[:1]]), R) is None  # dependent rows: not certified
