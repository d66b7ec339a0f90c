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
from lkm.numerics.kernel_pca import POOLED_RATIO, REFINE_TOL, isometric_coordinates
from lkm.numerics.local_hulls import (
    common_vector_distances,
    hull_residuals_in_coordinates,
    independent_differences,
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
    original = kernel_pca.isometric_block

    def spy(*args: Any) -> Any:
        ok = original(*args)
        seen.extend(bool(v) for v in ok)
        return ok

    monkeypatch.setattr(subspace, "isometric_block", spy)
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


@pytest.mark.parametrize("cls", [NHKNN, NLDCV])
@pytest.mark.parametrize("route", ["cholesky", "eigh", "whole classes"])
def test_query_identical_to_rows_of_two_classes_ties_exactly_in_every_route(monkeypatch, cls, route):
    """Real-valued features on very different scales, whose squared distances by the
    expansion leave round-off (~1e-15) where they are 0: a query identical to training
    rows of two classes lies on both classes' hulls / common vectors, so both distances
    are exactly 0 in every route (Cholesky, eigh, one kernel PCA for whole classes) and
    the tie rule (the larger prior), not round-off, decides; the labels do not change
    when the training rows are permuted."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 7)) * [1e-3, 1.0, 10.0, 100.0, 0.1, 3.0, 7.0] + 0.3
    y = np.repeat([0, 1, 2], [50, 40, 30])
    shared = rng.choice(120, size=12, replace=False)
    X, y = np.vstack([X, X[shared]]), np.concatenate([y, (y[shared] + 1) % 3])
    Xq = X[shared] * 1.0
    monkeypatch.setattr(subspace, "CHOLESKY_KPCA", route == "cholesky")
    k = 200 if route == "whole classes" else (6 if cls is NHKNN else 5)
    est = cls(sigma=4.0, n_neighbors=k).fit(X, y)
    dist = est.class_distances(Xq)
    holds = np.zeros_like(dist, dtype=bool)
    holds[np.arange(12), y[shared]] = holds[np.arange(12), (y[shared] + 1) % 3] = True
    assert (dist[holds] == 0.0).all()
    # every class at distance 0 ties (NLDCV: a third one too where the shared rows leave
    # no null space); the larger training prior wins
    counts = np.bincount(y).astype(float)
    np.testing.assert_array_equal(est.predict(Xq), np.argmax(np.where(dist == 0.0, counts, -1.0), axis=1))
    perm = np.random.default_rng(1).permutation(y.size)
    np.testing.assert_array_equal(cls(sigma=4.0, n_neighbors=k).fit(X[perm], y[perm]).predict(Xq), est.predict(Xq))


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
    np.testing.assert_array_equal(Y[7], Y[3])  # identical points: bit-equal coordinates
    np.testing.assert_array_equal(Y[19], Y[3])
    np.testing.assert_array_equal(Y[20], Y[11])
    # a query identical to a neighbour gets that neighbour's coordinates (its kernel
    # values carry round-off: they are not what decides)
    on_point = isometric_coordinates(G, np.arange(30), G[11] * (1 + 1e-15), groups, 1e-12, on=11)
    assert on_point is not None
    np.testing.assert_array_equal(on_point[1], on_point[0][11])


def test_independent_differences_keep_a_spanning_forest():
    # classes of 3: [a, b, a] (b repeats the anchor's class partner), [c, b, d], [e, e, f]
    groups = np.array([0, 1, 0, 2, 1, 3, 4, 4, 5], dtype=np.intp)
    keep, work = np.empty(6, dtype=np.bool_), np.empty(9, dtype=np.intp)
    kept = independent_differences(groups, np.array([0, 3, 6], dtype=np.intp), np.array([3, 3, 3], dtype=np.intp),
                                   work, work.copy(), keep)
    np.testing.assert_array_equal(keep, [True, False, True, True, False, True])
    assert kept == 4


def _common_vectors(Y: np.ndarray, yq: np.ndarray, groups: np.ndarray, ks: np.ndarray) -> tuple[np.ndarray, bool]:
    starts = np.concatenate([[0], np.cumsum(ks)[:-1]]).astype(np.intp)
    out, scale, ok = np.empty((1, ks.size)), np.empty(1), np.empty(1, dtype=np.bool_)
    common_vector_distances(Y[None], yq[None], groups[None].astype(np.intp), starts, ks.astype(np.intp),
                            POOLED_RATIO, REFINE_TOL, 8, subspace.SNAP_ZERO, out, scale, ok)
    return out[0], bool(ok[0])


def test_common_vector_distances_match_the_svd():
    """NLDCV's compiled residuals equal the rank-revealing SVD's; a repeated point's
    difference is dropped (the same span), and dependent differences that are not
    repeats are left to the caller's SVD."""
    rng = np.random.default_rng(1)
    ks = np.array([3, 2, 4])
    Y, yq = rng.normal(size=(9, 12)), rng.normal(size=12)
    Z = np.concatenate([Y[1:3] - Y[0], Y[4:5] - Y[3], Y[6:9] - Y[5]])
    R = yq - Y[[0, 3, 5]]
    reference = subspace._residual_norms(Z[None], R[None], 1e-10)[0]
    out, ok = _common_vectors(Y, yq, np.arange(9), ks)
    assert ok
    np.testing.assert_allclose(out, reference, rtol=1e-12)
    repeated = Y.copy()
    repeated[8] = repeated[6]  # the same point twice in class 2: one difference dropped
    groups = np.arange(9)
    groups[8] = 6
    Zr = np.concatenate([Z[:3], repeated[6:8] - repeated[5]])
    out, ok = _common_vectors(repeated, yq, groups, ks)
    assert ok
    np.testing.assert_allclose(out, subspace._residual_norms(Zr[None], R[None], 1e-10)[0], rtol=1e-12)
    dependent = Y.copy()
    dependent[2] = 2.0 * Y[1] - Y[0]  # distinct points, collinear differences
    assert not _common_vectors(dependent, yq, np.arange(9), ks)[1]


def test_hulls_in_coordinates_with_repeated_neighbours_keep_the_gram_route():
    """NHKNN's compiled hulls in each query's own coordinates, where identical neighbours
    have bit-equal rows: marked as repeated they are left out of the differences, every
    (query, class) pair is certified (none left to the SVD) and the distances are the
    SVD's."""
    rng = np.random.default_rng(4)
    ks = np.array([6, 4], dtype=np.intp)
    starts = np.array([0, 6], dtype=np.intp)
    Y, yq = rng.normal(size=(50, 10, 20)), rng.normal(size=(50, 20))
    Y[:, 3], Y[:25, 5], Y[::2, 2], Y[:, 9] = Y[:, 0], Y[:25, 1], Y[::2, 1], Y[:, 7]  # repeats in both classes
    repeated = np.zeros((50, 10), dtype=bool)
    repeated[:, 3], repeated[:25, 5], repeated[::2, 2], repeated[:, 9] = True, True, True, True
    out, slow = np.empty((50, 2)), np.zeros((50, 2), dtype=bool)
    hull_residuals_in_coordinates(Y, yq, starts, ks, repeated, 1e-8, subspace.SNAP_ZERO, out, slow)
    assert not slow.any()
    for c, (s0, k) in enumerate(zip(starts, ks, strict=True)):
        N = Y[:, s0:s0 + k]
        reference = subspace._residual_norms(N[:, 1:] - N[:, :1], yq - N[:, 0], 1e-10)  # the SVD for every query
        np.testing.assert_allclose(out[:, c], reference, rtol=1e-12)
    unmarked = np.zeros_like(slow)
    hull_residuals_in_coordinates(Y, yq, starts, ks, np.zeros_like(repeated), 1e-8, subspace.SNAP_ZERO,
                                  np.empty((50, 2)), unmarked)
    assert unmarked.all()  # unmarked repeats: singular Gram matrices, left to the SVD
