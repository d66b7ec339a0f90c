"""The compiled route of the local subspace classifiers (issue 41) against the numpy route.

:mod:`lkm.numerics.local_hulls` selects each class's K nearest neighbours and forms
HKNN's hull distances (Cevikalp et al., eqs. (3)-(5)) and LDCV's common-vector distances
(eq. (23)) in numba loops; ``lkm.methods.subspace.COMPILED = False`` keeps the numpy
route, the reference here. The neighbours (indices and squared distances) must be the
same bit for bit (the same BLAS product, the same tie rule); the class distances equal to
round-off, with exact zeros (queries on a hull, snapped) at the same places; so the
predictions are the same.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris

import lkm.methods.subspace as subspace
from lkm.errors import ParameterClipped
from lkm.methods.subspace import HKNN, LDCV, NHKNN, NLDCV
from lkm.numerics.kernels import DistanceCache


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[::2], y[::2], X[1::2]


def _ties() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Small integer data: many repeated rows and exactly tied distances, singular hull
    Gram matrices (the SVD fallback), and queries on training rows (distance 0)."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(180, 12)).astype(float)
    y = rng.integers(0, 4, size=180)
    X, y = np.vstack([X, X[:60]]), np.concatenate([y, y[:60]])  # repeated rows
    Xq = np.vstack([X[:40], rng.integers(0, 3, size=(60, 12)).astype(float)])
    return X, y, Xq


def _iris() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    return X[::2], y[::2], X[1::2]


DATA = {"digits": _digits, "ties": _ties, "iris": _iris}


def _both(monkeypatch: pytest.MonkeyPatch, run: Any) -> tuple[Any, Any]:
    """``run()`` on the compiled route, then on the numpy route."""
    monkeypatch.setattr(subspace, "COMPILED", True)
    compiled = run()
    monkeypatch.setattr(subspace, "COMPILED", False)
    return compiled, run()


def _assert_round_off(compiled: np.ndarray, reference: np.ndarray) -> None:
    """Equal to round-off (1e-12 of the row's largest distance), exact zeros alike."""
    np.testing.assert_array_equal(compiled == 0.0, reference == 0.0)
    scale = np.abs(reference).max(axis=1, keepdims=True)
    assert (np.abs(compiled - reference) <= 1e-12 * scale).all(), np.abs(compiled - reference).max()


@pytest.mark.parametrize("data", list(DATA))
@pytest.mark.parametrize("cached", [False, True], ids=["expansion", "distance-matrix"])
@pytest.mark.parametrize("estimator", [HKNN(n_neighbors=4), NLDCV(n_neighbors=7)], ids=["K4", "K7"])
def test_compiled_neighbours_equal_the_numpy_selection(monkeypatch, data: str, cached: bool, estimator: Any) -> None:
    """Indices, squared distances and the nearest sample's class, bit for bit: from the
    squared-Euclidean expansion of the block's product (no cache) and from a whole
    distance matrix (a cache, as the runner passes), ties to the lower training row."""
    X, y, Xq = DATA[data]()
    est = estimator.fit(X, y)
    compiled, reference = _both(monkeypatch, lambda: est._neighbors(Xq, DistanceCache() if cached else None))
    for a, b in zip(compiled, reference, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("expand", [True, False], ids=["expansion", "distances"])
def test_the_grouped_selection_equals_a_stable_sort(expand: bool) -> None:
    """The selection kernel alone (group minima, then only the entries below their k-th
    smallest) against a stable sort by (value, position): heavy exact ties, classes
    shorter than k groups and of every length modulo the group size, and (expansion)
    queries on training rows, whose slightly negative expansions are clipped to 0."""
    from lkm.numerics.local_hulls import SELECT_GROUP, select_class_neighbors

    rng = np.random.default_rng(11)
    sizes = [3, SELECT_GROUP * 2 + 1, 37, 64, 101, 7]
    X = rng.integers(0, 4, size=(sum(sizes), 5)).astype(float) * 0.1  # 0.1: inexact in binary
    Xq = np.vstack([X[::9], rng.integers(0, 4, size=(20, 5)) * 0.1])
    ends = np.cumsum(sizes)
    ks = np.array([3, 5, 4, 6, 9, 2], dtype=np.intp)
    order = rng.permutation(X.shape[0])
    norms, qn = np.einsum("ij,ij->i", X, X), np.einsum("ij,ij->i", Xq, Xq)
    product = Xq @ X.T
    values = np.maximum(product * -2.0 + qn[:, None] + norms[None, :], 0.0) if expand else product
    idx = np.empty((Xq.shape[0], int(ks.sum())), dtype=np.intp)
    dist = np.empty(idx.shape)
    select_class_neighbors(product, qn, norms, expand, ends, ks, order, idx, dist)
    starts, col = np.concatenate([[0], ends[:-1]]), 0
    assert expand is False or (values == 0.0).sum() > Xq.shape[0] // 2  # clipped round-off at the query's own row
    for a, b, k in zip(starts, ends, ks, strict=True):
        want = np.argsort(values[:, a:b], axis=1, kind="stable")[:, :k]  # (value, position)
        np.testing.assert_array_equal(idx[:, col:col + k], order[a + want])
        np.testing.assert_array_equal(dist[:, col:col + k], np.take_along_axis(values[:, a:b], want, axis=1))
        col += k


def test_the_selection_names_training_rows_even_among_nan_distances() -> None:
    """Distances that overflowed to NaN (features near 1e154) get no threshold: the
    selection falls back to a plain scan and still names k training rows per class,
    never an unwritten index."""
    from lkm.numerics.local_hulls import select_class_neighbors

    D = np.random.default_rng(2).random((3, 40))
    D[0, :] = np.nan
    D[1, 5:30] = np.nan
    ends = np.array([20, 40], dtype=np.intp)
    ks = np.array([4, 4], dtype=np.intp)
    idx = np.full((3, 8), -1, dtype=np.intp)
    dist = np.empty(idx.shape)
    select_class_neighbors(D, np.zeros(3), np.zeros(40), False, ends, ks, np.arange(40), idx, dist)
    assert ((idx[:, :4] >= 0) & (idx[:, :4] < 20)).all() and ((idx[:, 4:] >= 20) & (idx[:, 4:] < 40)).all()
    np.testing.assert_array_equal(idx[2], np.concatenate([np.argsort(D[2, :20])[:4], 20 + np.argsort(D[2, 20:])[:4]]))


@pytest.mark.parametrize("data", list(DATA))
@pytest.mark.parametrize(
    "estimator",
    [HKNN(n_neighbors=1), HKNN(n_neighbors=3), HKNN(n_neighbors=10), LDCV(n_neighbors=1), LDCV(n_neighbors=2),
     LDCV(n_neighbors=3)],
    ids=["HKNN1", "HKNN3", "HKNN10", "LDCV1", "LDCV2", "LDCV3"],
)
def test_compiled_distances_and_predictions_equal_the_numpy_route(monkeypatch, data: str, estimator: Any) -> None:
    """HKNN's and LDCV's class distances to round-off, the same exact zeros and the same
    predictions (tie rule included), with the SVD fallback for the uncertified Gram
    matrices (repeated neighbours in ``ties``)."""
    X, y, Xq = DATA[data]()
    if isinstance(estimator, LDCV) and estimator.n_neighbors > 1 and data == "iris":
        pytest.skip("LDCV needs C·(K-1) < d; iris has d = 4")
    if isinstance(estimator, HKNN) and estimator.n_neighbors > X.shape[1]:
        with pytest.warns(ParameterClipped, match="fill the space"):
            est = estimator.fit(X, y)
    else:
        est = estimator.fit(X, y)
    (d1, p1), (d0, p0) = _both(monkeypatch, lambda: (est.class_distances(Xq), est.predict(Xq)))
    _assert_round_off(d1, d0)
    np.testing.assert_array_equal(p1, p0)


def test_uncertified_gram_matrices_take_the_svd_fallback(monkeypatch) -> None:
    """Repeated neighbours make a hull's Gram matrix singular: the compiled route hands
    exactly those (query, class) pairs to the rank-revealing SVD, and only those."""
    X, y, Xq = _ties()
    est = HKNN(n_neighbors=6).fit(X, y)
    calls: list[int] = []
    real = subspace._residual_norms

    def spy(V: np.ndarray, R: np.ndarray, rcond: float) -> np.ndarray:
        calls.append(V.shape[0])
        return real(V, R, rcond)

    monkeypatch.setattr(subspace, "_residual_norms", spy)
    monkeypatch.setattr(subspace, "COMPILED", True)
    est.class_distances(Xq)
    assert 0 < sum(calls) < Xq.shape[0] * est.classes_.size


def test_kernel_methods_keep_their_predictions(monkeypatch) -> None:
    """NHKNN and NLDCV share the compiled neighbour selection: their distances do not move."""
    X, y, Xq = _digits()
    for est in (NHKNN(n_neighbors=5).fit(X[:400], y[:400]), NLDCV(n_neighbors=3).fit(X[:400], y[:400])):
        compiled, reference = _both(monkeypatch, lambda e=est: e.class_distances(Xq[:200]))
        np.testing.assert_array_equal(compiled, reference)


def test_no_cache_directory_compiles_silently() -> None:
    """With no writable cache location numba refuses ``cache=True``; the kernels are then
    compiled per process, with no warning (``-W error``)."""
    code = (
        "import numba.core.caching as c\n"
        "def refuse(self):\n    raise OSError('read-only')\n"
        "c._CacheLocator.ensure_cache_path = refuse\n"
        "import numpy as np\n"
        "from lkm.methods.subspace import HKNN\n"
        "X = np.random.default_rng(0).random((60, 5)); y = np.arange(60) % 3\n"
        "print(HKNN(n_neighbors=3).fit(X, y).predict(X[:3]))\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("delta", [3e-4, 1e-5], ids=["certified", "svd"])
def test_thin_hulls_give_the_reference_distance(monkeypatch, delta: float) -> None:
    """A class of three points 0, u, u + δ·v (u, v orthonormal in 20 dimensions): the
    difference vectors are nearly parallel, so the hull's Gram matrix has condition
    about 4/δ². The distance of 0.3·u + 2·v + c·w (w ⊥ u, v) is |c|. At δ = 3e-4 (4e7) the
    compiled Gram route is certified and needs both explicit passes to match the numpy
    route; at δ = 1e-5 it must leave the query to the SVD."""
    rng = np.random.default_rng(0)
    u, v, w = np.linalg.qr(rng.standard_normal((20, 3)))[0].T
    hull = np.array([np.zeros(20), u, u + delta * v])
    far = 50.0 + rng.standard_normal((6, 20))
    X, y = np.vstack([hull, far]), np.array([0, 0, 0, 1, 1, 1, 1, 1, 1])
    c = np.array([1e-6, 1e-4, 3e-2])
    Xq = 0.3 * u + 2.0 * v + c[:, None] * w
    est = HKNN(n_neighbors=3).fit(X, y)
    compiled, reference = _both(monkeypatch, lambda: est.class_distances(Xq)[:, 0])
    np.testing.assert_allclose(compiled, reference, rtol=1e-6)
    np.testing.assert_allclose(reference, c, rtol=1e-3)  # the data's own rounding: ~1e-16/δ


def test_fortran_ordered_inputs_give_the_same_distances() -> None:
    """Training rows and queries in Fortran order reach the kernels as C-contiguous
    copies: the same distances bit for bit."""
    X, y, Xq = _digits()
    for est in (HKNN(n_neighbors=5), LDCV(n_neighbors=2)):
        c_order = est.fit(X, y).class_distances(Xq)
        f_order = est.fit(np.asfortranarray(X), y).class_distances(np.asfortranarray(Xq))
        np.testing.assert_array_equal(c_order, f_order)
