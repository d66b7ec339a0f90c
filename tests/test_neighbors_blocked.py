"""The blocked exact neighbour query (lkm.numerics.neighbors.tie_ruled_kneighbors) against a
full-matrix reference with the same tie rule: ties, duplicates, round-off, real data,
exclude_self, tiny blocks, the cache and memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import lkm.numerics.neighbors as nb
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.neighbors import ExactNeighbors, pair_sq_dists


def reference(Q: np.ndarray, X: np.ndarray, k: int, exclude_self: bool = False):
    """Every pair's distance by :func:`pair_sq_dists`, then a stable sort (ties -> lower index)."""
    m, n = Q.shape[0], X.shape[0]
    D = pair_sq_dists(Q, X, np.repeat(np.arange(m), n), np.tile(np.arange(n), m)).reshape(m, n)
    if exclude_self:
        np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(D, idx, axis=1), idx


def assert_same(got, expected) -> None:
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])


@pytest.fixture(params=["augmented", "norms added"])
def small_blocks(request, monkeypatch: pytest.MonkeyPatch):
    """Blocks of ``rows`` query rows against tiles of about a quarter of the training
    rows and few selection groups, so that small problems take every path (several
    tiles, the group threshold, pruning of heavy ties, several blocks in the thread
    pool), with the squared norms in the product or added after it."""
    monkeypatch.setattr(nb, "AUGMENT_FEATURES", 10**6 if request.param == "augmented" else 0)

    def set_rows(rows: int, n: int) -> None:
        monkeypatch.setattr(nb, "QUERY_ROWS", rows)
        monkeypatch.setattr(nb, "BLOCK_BYTES", 8 * rows * max(8, n // 4))
        monkeypatch.setattr(nb, "SELECT_GROUPS", 4)

    return set_rows


@pytest.fixture(scope="module")
def duplicated_grid() -> tuple[np.ndarray, np.ndarray]:
    """Integer points on a 4×4×4 grid with most rows repeated: exact ties everywhere."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(300, 3)).astype(float)
    X = np.vstack([X, X[::3]])  # more duplicates, far from their twins in index
    Q = rng.integers(0, 4, size=(90, 3)).astype(float)
    return X, Q


@pytest.mark.parametrize("rows", [1, 7, 1000])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_blocked_query_equals_reference_with_ties_and_duplicates(
    duplicated_grid: tuple[np.ndarray, np.ndarray], small_blocks, rows: int, k: int
) -> None:
    X, Q = duplicated_grid
    small_blocks(rows, X.shape[0])  # k = 40 ≥ the block's 1 or 7 rows, and > 2 * 4 groups
    assert_same(ExactNeighbors().fit(X).kneighbors(Q, k), reference(Q, X, k))


@pytest.mark.parametrize("rows", [1, 7])
def test_blocked_exclude_self_keeps_duplicates(duplicated_grid, small_blocks, rows: int) -> None:
    X, _ = duplicated_grid
    small_blocks(rows, X.shape[0])
    got = ExactNeighbors().fit(X).kneighbors(None, 6, exclude_self=True)
    assert_same(got, reference(X, X, 6, exclude_self=True))
    assert not np.any(got[1] == np.arange(X.shape[0])[:, None])


def test_candidates_within_round_off_are_ranked_by_exact_distance(small_blocks) -> None:
    """Far from the origin the matrix-product scores cannot tell these points apart
    (cancellation leaves errors far above their distance gaps): the lists must still
    follow the distances recomputed from differences."""
    rng = np.random.default_rng(5)
    X = 1e4 + rng.normal(size=(400, 6)) * 1e-5
    X[50:60] = X[7]  # duplicates among near ties
    Q = 1e4 + rng.normal(size=(30, 6)) * 1e-5
    small_blocks(4, X.shape[0])
    assert_same(ExactNeighbors().fit(X).kneighbors(Q, 12), reference(Q, X, 12))


@pytest.fixture(scope="module")
def spambase(data_dir) -> tuple[np.ndarray, np.ndarray]:
    from lkm.bench.speed import spambase_fold

    X, _, Q, _ = spambase_fold(data_dir)
    return X, Q


def test_blocked_query_equals_reference_on_spambase(spambase, small_blocks) -> None:
    X, Q = spambase  # standardized counts: many rows repeat (e.g. all-zero e-mails)
    Q = Q[:120]
    expected = reference(Q, X, 20)
    assert_same(ExactNeighbors().fit(X).kneighbors(Q, 20), expected)
    small_blocks(3, X.shape[0])
    assert_same(ExactNeighbors().fit(X).kneighbors(Q, 20), expected)


def test_blocked_exclude_self_on_spambase(spambase) -> None:
    X = spambase[0][:1500]
    assert_same(ExactNeighbors().fit(X).kneighbors(None, 8, exclude_self=True), reference(X, X, 8, True))


def test_lists_do_not_depend_on_blas_threads_or_training_order(spambase) -> None:
    X, Q = spambase
    Q = Q[:200]
    expected = ExactNeighbors().fit(X).kneighbors(Q, 10)
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            assert_same(ExactNeighbors().fit(X).kneighbors(Q, 10), expected)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    sq, idx = ExactNeighbors().fit(X[perm]).kneighbors(Q, 10)
    np.testing.assert_array_equal(sq, expected[0])
    # the same rows, listed by (distance, original index) once mapped back, wherever the
    # 10th distance is not tied with the 11th (there the tie rule picks by index)
    back = perm[idx]
    back = np.take_along_axis(back, np.lexsort((back, sq), axis=1), axis=1)
    eleventh = ExactNeighbors().fit(X).kneighbors(Q, 11)[0][:, 10]
    clear = sq[:, 9] < eleventh
    assert clear.mean() > 0.8
    np.testing.assert_array_equal(back[clear], expected[1][clear])


def test_cache_memoizes_lists_and_serves_smaller_k_as_prefix(
    duplicated_grid, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, Q = duplicated_grid
    calls = []
    query = nb.tie_ruled_kneighbors
    monkeypatch.setattr(nb, "tie_ruled_kneighbors", lambda *a, **kw: calls.append(a[2]) or query(*a, **kw))
    backend, cache = ExactNeighbors().fit(X), DistanceCache()
    for k in (9, 4, 9, 15, 2):
        assert_same(backend.kneighbors(Q, k, cache=cache), reference(Q, X, k))
    assert calls == [9, 15]  # 4, the second 9 and 2 are prefixes of the lists held
    assert_same(backend.kneighbors(None, 3, exclude_self=True, cache=cache), reference(X, X, 3, True))
    assert calls == [9, 15, 3]  # the self-excluding lists are kept apart


def test_cached_query_keeps_no_query_by_training_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(6)
    X, Q = rng.normal(size=(6000, 5)), rng.normal(size=(2000, 5))
    full = 8 * Q.shape[0] * X.shape[0]  # 96 MB
    monkeypatch.setattr(nb, "BLOCK_BYTES", 2**20)
    backend, cache = ExactNeighbors().fit(X), DistanceCache()
    backend.kneighbors(Q[:600], 10)  # every worker thread allocates its score tile (kept)
    tracemalloc.start()  # numpy reports its allocations to tracemalloc
    try:
        before = tracemalloc.get_traced_memory()[0]
        sq, idx = backend.kneighbors(Q, 10, cache=cache)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - before < full / 8  # about 2 MB per worker thread besides its tile
    assert held - before < full / 50  # the lists (and this call's results), not distances
    assert_same((sq[:50], idx[:50]), reference(Q[:50], X, 10))
