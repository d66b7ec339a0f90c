"""The float32 candidate pass of the exact query (issue 41, point 5): scores in single
precision only propose candidates, within a margin derived for float32's round-off
(lkm.numerics.neighbors._score_margin32); the lists equal the float64 route's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits

import lkm.numerics.neighbors as nb


def _both(Q, X, k, exclude=None):
    lists = [nb.tie_ruled_kneighbors(Q, X, k, exclude, precision=p) for p in ("float64", "float32")]
    return lists


def _assert_same(lists):
    (d64, i64), (d32, i32) = lists
    assert np.array_equal(i64, i32)
    assert np.array_equal(d64, d32)


@pytest.mark.parametrize("k", [1, 5, 17])
def test_float32_lists_equal_float64_lists_on_bundled_sets(k):
    for X in (load_digits().data.astype(np.float64), load_breast_cancer().data):
        _assert_same(_both(X[::3], X, k))
        _assert_same(_both(X, X, k, exclude=np.arange(X.shape[0])))


@pytest.mark.parametrize("name, rows, scale", [("usps", 3000, None), ("letter-recognition", 4000, "std"),
                                               ("spambase", 4601, "std"), ("mnist", 4000, 255.0)])
def test_float32_lists_equal_float64_lists_on_real_sets(data_dir, name, rows, scale):
    from lkm.data import load_dataset

    X = np.asarray(load_dataset(name, data_dir=data_dir).X, dtype=np.float64)[:rows]
    if scale == "std":
        X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    elif scale is not None:
        X = X / scale
    train, query = X[: rows * 3 // 4], X[rows * 3 // 4 :]
    _assert_same(_both(query, train, 10))
    _assert_same(_both(train[:500], train, 3, exclude=np.arange(500)))


def _adversarial(offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    lattice = rng.integers(-3, 4, size=(600, 40)).astype(np.float64)  # many rows at equal distance
    dup = np.vstack([lattice, lattice[:150], lattice[:50]])  # duplicated rows
    return dup + offset


@pytest.mark.parametrize("offset", [0.0, 1e4, -3e2])
def test_float32_lists_equal_float64_lists_on_ties_duplicates_and_offsets(offset):
    X = _adversarial(offset)
    Q = np.vstack([X[:100], X[:40] + 0.5, _adversarial(offset, seed=1)[:60]])
    for k in (1, 7, 30):
        _assert_same(_both(Q, X, k))
    _assert_same(_both(X, X, 7, exclude=np.arange(X.shape[0])))


def test_near_ties_below_float32_resolution():
    # rows whose distances to the query differ by less than float32 can tell apart
    rng = np.random.default_rng(3)
    base = rng.standard_normal((1, 64))
    X = base + rng.standard_normal((400, 64)) * 1e-6 + 50.0
    X[::7] = X[0]  # duplicates of the nearest candidates too
    Q = base + 50.0 + rng.standard_normal((30, 64)) * 1e-7
    for k in (1, 4, 25):
        _assert_same(_both(Q, X, k))


def test_a_margin_made_too_small_loses_true_neighbours(monkeypatch):
    X = _adversarial(1e3)
    Q = _adversarial(1e3, seed=1)[:200]
    exact = nb.tie_ruled_kneighbors(Q, X, 10, precision="float64")
    _assert_same([exact, nb.tie_ruled_kneighbors(Q, X, 10, precision="float32")])
    real = nb._score_margin32
    monkeypatch.setattr(nb, "_score_margin32", lambda *a: real(*a) * 1e-3)
    thin = nb.tie_ruled_kneighbors(Q, X, 10, precision="float32")
    assert not np.array_equal(thin[1], exact[1])


def test_auto_takes_float32_only_where_its_margin_is_narrow():
    X = load_digits().data.astype(np.float64)
    norms = float(np.einsum("ij,ij->i", X, X).max())
    assert nb._float32_pays(X[:50], X, norms)
    far = X + 1e4
    assert not nb._float32_pays(far[:50], far, float(np.einsum("ij,ij->i", far, far).max()))
    narrow = X[:, :4]  # few features: the float64 route
    assert not nb._float32_pays(narrow[:50], narrow, float(np.einsum("ij,ij->i", narrow, narrow).max()))
    huge = X * 1e16
    assert not nb._float32_pays(huge[:50], huge, float(np.einsum("ij,ij->i", huge, huge).max()))


def test_precision_is_checked():
    X = np.eye(5)
    with pytest.raises(ValueError, match="precision"):
        nb.tie_ruled_kneighbors(X, X, 2, precision="half")
