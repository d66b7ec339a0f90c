"""k-nearest-neighbour backends: exact against brute force and scikit-learn, annoy recall."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

import lkm.numerics.neighbors as nb
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.neighbors import ExactNeighbors, make_neighbors, neighbor_recall


def brute_force(Q: np.ndarray, X: np.ndarray, k: int, exclude_self: bool = False):
    """Reference: full distance matrix, stable sort (ties -> lower index)."""
    D = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    if exclude_self:
        np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, idx, axis=1), idx


@pytest.fixture(scope="module")
def tied_points() -> np.ndarray:
    """Integer grid points with many repeated rows, so distances tie everywhere."""
    rng = np.random.default_rng(0)
    return rng.integers(0, 3, size=(120, 3)).astype(float)


@pytest.mark.parametrize("k", [1, 4, 17])
def test_exact_matches_brute_force_with_ties(tied_points: np.ndarray, k: int) -> None:
    X = tied_points
    Q = np.random.default_rng(1).integers(0, 3, size=(40, 3)).astype(float)
    sq, idx = ExactNeighbors().fit(X).kneighbors(Q, k)
    ref_sq, ref_idx = brute_force(Q, X, k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(sq, ref_sq, atol=1e-12)


def test_exact_matches_sklearn() -> None:
    rng = np.random.default_rng(2)
    X, Q = rng.normal(size=(500, 8)), rng.normal(size=(60, 8))
    sq, idx = ExactNeighbors().fit(X).kneighbors(Q, 7)
    dist, ref_idx = NearestNeighbors(n_neighbors=7, algorithm="brute").fit(X).kneighbors(Q)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(sq, dist**2, rtol=1e-10)
    assert np.all(np.diff(sq, axis=1) >= 0)


def test_exact_blocks_and_cache_give_the_same_answer(
    tied_points: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    X = tied_points
    Q = np.random.default_rng(3).normal(size=(300, 3))
    expected = ExactNeighbors().fit(X).kneighbors(Q, 5)
    cache = DistanceCache()
    cached = ExactNeighbors().fit(X).kneighbors(Q, 5, cache=cache)
    assert len(cache) == 1
    monkeypatch.setattr(nb, "BLOCK_BYTES", 8 * X.shape[0] * 7)  # 7 query rows per block
    blocked = ExactNeighbors().fit(X).kneighbors(Q, 5)
    for got in (cached, blocked):
        np.testing.assert_array_equal(got[1], expected[1])
        np.testing.assert_array_equal(got[0], expected[0])


def test_exclude_self_keeps_duplicates(tied_points: np.ndarray) -> None:
    X = tied_points
    sq, idx = ExactNeighbors().fit(X).kneighbors(None, 3, exclude_self=True)
    ref_sq, ref_idx = brute_force(X, X, 3, exclude_self=True)
    np.testing.assert_array_equal(idx, ref_idx)
    assert not np.any(idx == np.arange(X.shape[0])[:, None])
    # 120 points on 27 grid cells: every point has a duplicate at distance 0
    assert np.all(sq[:, 0] == 0.0)
    cache_idx = ExactNeighbors().fit(X).kneighbors(X, 3, exclude_self=True, cache=DistanceCache())[1]
    np.testing.assert_array_equal(cache_idx, ref_idx)


def test_exact_rejects_bad_requests(tied_points: np.ndarray) -> None:
    backend = ExactNeighbors().fit(tied_points)
    with pytest.raises(ValueError, match="neighbours requested"):
        backend.kneighbors(tied_points[:2], tied_points.shape[0] + 1)
    with pytest.raises(ValueError, match="neighbours requested"):
        backend.kneighbors(None, tied_points.shape[0], exclude_self=True)
    with pytest.raises(ValueError, match="exclude_self"):
        backend.kneighbors(tied_points[:5], 2, exclude_self=True)


@pytest.fixture(scope="module")
def cloud() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    return rng.normal(size=(600, 10)), rng.normal(size=(100, 10))


def test_annoy_recall_and_exact_distances(cloud: tuple[np.ndarray, np.ndarray]) -> None:
    X, Q = cloud
    exact_sq, exact_idx = ExactNeighbors().fit(X).kneighbors(Q, 10)
    sq, idx = make_neighbors("annoy", n_trees=50, random_state=0).fit(X).kneighbors(Q, 10)
    assert neighbor_recall(idx, exact_idx) >= 0.9
    # distances are recomputed exactly for whatever annoy proposes, and sorted
    np.testing.assert_allclose(sq, ((Q[:, None, :] - X[idx]) ** 2).sum(axis=2), rtol=1e-12)
    assert np.all(np.diff(sq, axis=1) >= 0)


def test_annoy_is_deterministic_with_a_seed(cloud: tuple[np.ndarray, np.ndarray]) -> None:
    X, Q = cloud
    runs = [make_neighbors("annoy", n_trees=3, random_state=7).fit(X).kneighbors(Q, 5)[1] for _ in range(2)]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_annoy_exclude_self(cloud: tuple[np.ndarray, np.ndarray]) -> None:
    X, _ = cloud
    sq, idx = make_neighbors("annoy", n_trees=20, random_state=0).fit(X).kneighbors(None, 4, exclude_self=True)
    assert not np.any(idx == np.arange(X.shape[0])[:, None])
    exact_idx = ExactNeighbors().fit(X).kneighbors(None, 4, exclude_self=True)[1]
    assert neighbor_recall(idx, exact_idx) >= 0.8


def test_neighbor_recall_and_factory() -> None:
    exact = np.array([[0, 1], [2, 3]])
    assert neighbor_recall(exact, exact) == 1.0
    assert neighbor_recall(np.array([[1, 5], [6, 7]]), exact) == 0.25
    assert isinstance(make_neighbors("exact"), ExactNeighbors)
    with pytest.raises(ValueError, match="did you mean 'annoy'"):
        make_neighbors("anoy")


# ---------------------------------------------------------------- hnswlib


def test_hnswlib_equals_exact_at_high_ef(cloud: tuple[np.ndarray, np.ndarray]) -> None:
    pytest.importorskip("hnswlib")
    X, Q = cloud
    backend = make_neighbors("hnswlib", ef=400, random_state=0).fit(X)
    for kwargs in ({"Q": Q}, {"Q": None, "exclude_self": True}):
        exact_sq, exact_idx = ExactNeighbors().fit(X).kneighbors(k=10, **kwargs)
        sq, idx = backend.kneighbors(k=10, **kwargs)
        np.testing.assert_array_equal(idx, exact_idx)
        np.testing.assert_array_equal(sq, exact_sq)  # the same recomputed float64 distances


def test_hnswlib_ranks_tied_candidates_by_index(tied_points: np.ndarray) -> None:
    pytest.importorskip("hnswlib")
    sq, idx = make_neighbors("hnswlib", ef=200, random_state=0).fit(tied_points).kneighbors(tied_points[:30], 6)
    exact_sq, _ = brute_force(tied_points[:30], tied_points, 6)
    np.testing.assert_array_equal(sq, exact_sq)
    ties = sq[:, 1:] == sq[:, :-1]
    assert np.all(idx[:, 1:][ties] > idx[:, :-1][ties])


def test_hnswlib_is_deterministic_and_independent_of_threads(
    cloud: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One build thread makes a seeded graph reproducible; queries on 1 or several
    threads, under 1 or 2 BLAS threads, give the same lists."""
    pytest.importorskip("hnswlib")
    from lkm.numerics.threads import blas_threads

    X, Q = cloud
    runs = []
    for workers, blas in [(4, 2), (1, 1), (4, 1)]:
        monkeypatch.setattr(nb, "MAX_WORKERS", workers)
        with blas_threads(blas):
            runs.append(make_neighbors("hnswlib", M=4, ef_construction=8, ef=5, random_state=7).fit(X).kneighbors(Q, 5))
    for sq, idx in runs[1:]:
        np.testing.assert_array_equal(idx, runs[0][1])
        np.testing.assert_array_equal(sq, runs[0][0])


def test_hnswlib_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "hnswlib", None)  # import hnswlib now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'lkm\[fast\]'"):
        make_neighbors("hnswlib").fit(np.zeros((3, 2)))


def test_lpl_with_hnswlib_pickles_and_measures_recall() -> None:
    pytest.importorskip("hnswlib")
    import pickle

    from sklearn.datasets import make_moons

    from lkm.methods.projection import LocalizedProjectionLearning

    X, y = make_moons(300, noise=0.3, random_state=0)
    X_query, _ = make_moons(150, noise=0.3, random_state=1)
    model = LocalizedProjectionLearning(k=5, neighbors="hnswlib", ef=30, random_state=0, measure_recall=True).fit(X, y)
    before = model.decision_function(X_query)
    assert model.info_["neighbor_recall"] > 0.95
    loaded = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(loaded.decision_function(X_query), before)
    np.testing.assert_array_equal(loaded.predict(X_query), model.predict(X_query))
    exact = LocalizedProjectionLearning(k=5, ef=400, neighbors="hnswlib", random_state=0).fit(X, y)
    np.testing.assert_array_equal(
        exact.decision_function(X_query), LocalizedProjectionLearning(k=5).fit(X, y).decision_function(X_query))
