"""``neighbors="approximate"`` (issue 41, point 5): hnswlib where installed, else annoy;
the resolved name is recorded, and specs that name annoy keep annoy."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

import lkm.numerics.neighbors as nb
from lkm.methods import NPPSSVM


@pytest.fixture
def without_hnswlib(monkeypatch):
    def missing():
        raise ImportError("neighbors='hnswlib' needs hnswlib")

    nb.hnswlib_available.cache_clear()
    monkeypatch.setattr(nb, "_import_hnswlib", missing)
    yield
    nb.hnswlib_available.cache_clear()


def _digits():
    X, y = load_digits(n_class=4, return_X_y=True)
    return X.astype(np.float64), y


def test_approximate_is_a_backend_name():
    assert nb.APPROXIMATE in nb.NEIGHBOR_BACKENDS
    assert nb.resolve_backend("annoy") == "annoy" and nb.resolve_backend("exact") == "exact"


def test_approximate_is_hnswlib_where_installed():
    pytest.importorskip("hnswlib")
    nb.hnswlib_available.cache_clear()
    X, _ = _digits()
    backend = nb.make_neighbors("approximate", ef=40, n_trees=5, search_k=-1, random_state=0).fit(X)
    assert backend.name == "hnswlib" and backend.ef == 40  # annoy's settings dropped
    ref = nb.make_neighbors("hnswlib", ef=40, random_state=0).fit(X)
    for got, want in zip(backend.kneighbors(X[:50], 5), ref.kneighbors(X[:50], 5), strict=True):
        assert np.array_equal(got, want)


def test_approximate_falls_back_to_annoy(without_hnswlib):
    X, _ = _digits()
    assert nb.resolve_backend("approximate") == "annoy"
    backend = nb.make_neighbors("approximate", ef=40, n_trees=5, random_state=0).fit(X)
    assert backend.name == "annoy" and backend.n_trees == 5
    ref = nb.make_neighbors("annoy", n_trees=5, random_state=0).fit(X)
    for got, want in zip(backend.kneighbors(X[:50], 5), ref.kneighbors(X[:50], 5), strict=True):
        assert np.array_equal(got, want)


def test_npps_records_which_index_ran():
    pytest.importorskip("hnswlib")
    nb.hnswlib_available.cache_clear()
    X, y = _digits()
    approx = NPPSSVM(k=5, neighbors="approximate", random_state=0).fit(X, y)
    hnsw = NPPSSVM(k=5, neighbors="hnswlib", random_state=0).fit(X, y)
    assert approx.info_["neighbors"] == "approximate" and approx.info_["neighbors_backend"] == "hnswlib"
    assert np.array_equal(approx.sample_indices_, hnsw.sample_indices_)
    assert "neighbors_backend" not in hnsw.info_  # records of the named backends are unchanged


def test_npps_approximate_without_hnswlib_is_annoy(without_hnswlib):
    X, y = _digits()
    approx = NPPSSVM(k=5, neighbors="approximate", n_trees=5, random_state=0).fit(X, y)
    annoy = NPPSSVM(k=5, neighbors="annoy", n_trees=5, random_state=0).fit(X, y)
    assert approx.info_["neighbors_backend"] == "annoy"
    assert np.array_equal(approx.sample_indices_, annoy.sample_indices_)
    assert "neighbors_backend" not in annoy.info_


def test_lpl_approximate_is_the_resolved_backend_and_records_it():
    pytest.importorskip("hnswlib")
    from lkm.methods import LocalizedProjectionLearning

    nb.hnswlib_available.cache_clear()
    X, y = _digits()
    params = dict(sigma=20.0, k=7, ef=40, random_state=0)
    approx = LocalizedProjectionLearning(neighbors="approximate", **params).fit(X[:600], y[:600])
    named = LocalizedProjectionLearning(neighbors="hnswlib", **params).fit(X[:600], y[:600])
    assert approx.info_["neighbors_backend"] == "hnswlib" and approx.neighbors_.name == "hnswlib"
    np.testing.assert_array_equal(approx.predict(X[600:]), named.predict(X[600:]))


def test_lpl_approximate_without_hnswlib_is_annoy(without_hnswlib):
    from lkm.methods import LocalizedProjectionLearning

    X, y = _digits()
    params = dict(sigma=20.0, k=7, n_trees=5, random_state=0)
    approx = LocalizedProjectionLearning(neighbors="approximate", **params).fit(X[:600], y[:600])
    named = LocalizedProjectionLearning(neighbors="annoy", **params).fit(X[:600], y[:600])
    assert approx.info_["neighbors_backend"] == "annoy" and approx.neighbors_.name == "annoy"
    assert "neighbors_backend" not in named.info_
    np.testing.assert_array_equal(approx.predict(X[600:]), named.predict(X[600:]))
