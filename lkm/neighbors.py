"""k-nearest-neighbour backends behind one interface (Tsuji et al., Sec. 5 and 7).

LPL needs the k nearest training patterns of every query; the paper used ANN with
eta = 0 (exact neighbours) and notes that approximate neighbours are acceptable.
Backends:

* ``"exact"`` -- squared Euclidean distances through matrix products, in row chunks of
  bounded memory, then ``argpartition``; optionally reusing a :class:`DistanceCache`.
* ``"annoy"`` -- Spotify's annoy (random projection forests); candidates come from annoy
  and are ranked by exact squared distances recomputed in float64.

Every backend returns ``(sq_dist, idx)`` of shape ``(m, k)`` sorted by ascending
distance, ties broken by the lower training index.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from lkm.errors import did_you_mean
from lkm.kernels import DistanceCache, squared_euclidean

#: Bytes of distance matrix the exact backend materializes at once.
CHUNK_BYTES = 64 * 2**20


def k_smallest(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k smallest entries of each row, ordered by (score, index).

    ``argpartition`` picks arbitrarily among values tied at the k-th position; in rows
    where the (k+1)-th smallest value equals the k-th, the tied entries with the lowest
    indices are taken instead.
    """
    m, n = scores.shape
    if k >= n:
        return np.argsort(scores, axis=1, kind="stable")[:, :k]
    part = np.argpartition(scores, k, axis=1)  # one kth: several are much slower
    idx = part[:, :k]
    vals = np.take_along_axis(scores, idx, axis=1)
    kth = vals.max(axis=1)
    tied = np.flatnonzero(kth == scores[np.arange(m), part[:, k]])
    if tied.size:
        rows = scores[tied]
        below = rows < kth[tied, None]
        at = rows == kth[tied, None]
        take_at = k - below.sum(axis=1)
        chosen = below | (at & (np.cumsum(at, axis=1) <= take_at[:, None]))
        idx[tied] = np.nonzero(chosen)[1].reshape(tied.size, k)
        vals[tied] = np.take_along_axis(rows, idx[tied], axis=1)
    order = np.lexsort((idx, vals), axis=1)
    return np.take_along_axis(idx, order, axis=1)


_POOL: ThreadPoolExecutor | None = None


def _select_in_threads(scores: np.ndarray, k: int) -> np.ndarray:
    """:func:`k_smallest` over blocks of rows in a thread pool (numpy releases the
    GIL in argpartition, which dominates an exact neighbour query)."""
    global _POOL
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers = min(cpus, 4, scores.shape[0] // 64)
    if workers <= 1:
        return k_smallest(scores, k)
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="lkm-knn")
    bounds = np.linspace(0, scores.shape[0], workers + 1).astype(int)
    blocks = _POOL.map(lambda lo, hi: k_smallest(scores[lo:hi], k), bounds[:-1], bounds[1:])
    return np.concatenate(list(blocks))


def _sq_dists_to_rows(Q: np.ndarray, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Squared distances ``||Q[i] - X[idx[i, j]]||²`` from coordinate differences, shape of idx.

    Both backends, with or without a cache, report distances computed this one way.
    """
    diff = X[idx] - Q[:, None, :]
    return np.einsum("mkp,mkp->mk", diff, diff)


class ExactNeighbors:
    """Exact k-NN by batched squared Euclidean distances through matrix products."""

    name = "exact"

    def fit(self, X: np.ndarray) -> ExactNeighbors:
        self.X_ = np.asarray(X, dtype=np.float64)
        # Row ranking needs only |x|² - 2 q·x (|q|² is constant along a row): as one matrix
        # product of [-2q, 1] with [x, |x|²].
        self.augmented_ = np.hstack([self.X_, np.einsum("ij,ij->i", self.X_, self.X_)[:, None]])
        return self

    def kneighbors(
        self,
        Q: np.ndarray | None,
        k: int,
        exclude_self: bool = False,
        cache: DistanceCache | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(sq_dist, idx)`` of the k nearest fitted rows of each query row.

        ``exclude_self=True`` queries the fitted rows themselves (``Q`` None or the fitted
        array) and leaves row i out of its own list; its duplicates stay eligible. With a
        cache, the query-to-training squared distances are taken from (and left in) it.
        """
        X = self.X_
        Q = _check_query(X, Q, k, exclude_self)
        if cache is not None:
            D = cache.sq_dists(Q, X)
            scores = D
            if exclude_self:
                scores = D.copy()
                np.fill_diagonal(scores, np.inf)
            idx = _select_in_threads(scores, k)
            return _sq_dists_to_rows(Q, X, idx), idx
        n = X.shape[0]
        rows = max(1, CHUNK_BYTES // (8 * n))
        idx = np.empty((Q.shape[0], k), dtype=np.intp)
        for start in range(0, Q.shape[0], rows):
            q = Q[start : start + rows]
            scores = np.hstack([q * -2.0, np.ones((q.shape[0], 1))]) @ self.augmented_.T
            if exclude_self:
                r = np.arange(q.shape[0])
                scores[r, start + r] = np.inf
            idx[start : start + rows] = _select_in_threads(scores, k)
        return _sq_dists_to_rows(Q, X, idx), idx


class AnnoyNeighbors:
    """Approximate k-NN with annoy; ``random_state`` seeds the forest for reproducibility.

    Annoy only proposes candidates: their squared distances are recomputed exactly in
    float64 and sorted by (distance, index), as for :class:`ExactNeighbors`.
    """

    name = "annoy"

    def __init__(
        self,
        n_trees: int = 10,
        search_k: int = -1,
        metric: str = "euclidean",
        random_state: Any = None,
    ) -> None:
        self.n_trees = n_trees
        self.search_k = search_k
        self.metric = metric
        self.random_state = random_state

    def fit(self, X: np.ndarray) -> AnnoyNeighbors:
        from annoy import AnnoyIndex

        self.X_ = np.asarray(X, dtype=np.float64)
        index = AnnoyIndex(self.X_.shape[1], self.metric)
        if self.random_state is not None:
            index.set_seed(int(check_random_state(self.random_state).randint(2**31 - 1)))
        for i, row in enumerate(self.X_.tolist()):
            index.add_item(i, row)
        index.build(self.n_trees, n_jobs=1)  # one thread: a seeded build is then deterministic
        self.index_ = index
        return self

    def kneighbors(
        self,
        Q: np.ndarray | None,
        k: int,
        exclude_self: bool = False,
        cache: DistanceCache | None = None,
        search_k: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Same contract as :meth:`ExactNeighbors.kneighbors` (``cache`` is not used).

        ``search_k`` overrides the constructor's for this query: the forest does not depend
        on it, so one index serves every search_k."""
        search_k = self.search_k if search_k is None else search_k
        X = self.X_
        Q = _check_query(X, Q, k, exclude_self)
        want = k + 1 if exclude_self else k
        idx = np.empty((Q.shape[0], k), dtype=np.intp)
        short = []
        for i, q in enumerate(Q.tolist()):
            found = self.index_.get_nns_by_vector(q, want, search_k=search_k)
            if exclude_self:
                found = [j for j in found if j != i]
            if len(found) < k:
                short.append(i)
            else:
                idx[i] = found[:k]
        if short:  # the forest proposed fewer than k candidates: answer those rows exactly
            rows = np.asarray(short)
            scores = squared_euclidean(Q[rows], X)
            if exclude_self:
                scores[np.arange(rows.size), rows] = np.inf
            idx[rows] = k_smallest(scores, k)
        sq = _sq_dists_to_rows(Q, X, idx)
        order = np.lexsort((idx, sq), axis=1)
        return np.take_along_axis(sq, order, axis=1), np.take_along_axis(idx, order, axis=1)


def _check_query(X: np.ndarray, Q: np.ndarray | None, k: int, exclude_self: bool) -> np.ndarray:
    if exclude_self:
        if Q is not None and Q is not X and not (Q.shape == X.shape and np.array_equal(Q, X)):
            raise ValueError("exclude_self=True queries the fitted points: pass Q=None or the fitted array")
        Q = X
    elif Q is None:
        raise ValueError("Q is required unless exclude_self=True")
    available = X.shape[0] - (1 if exclude_self else 0)
    if not 1 <= k <= available:
        raise ValueError(f"k={k} neighbours requested but only {available} points are available")
    return np.asarray(Q, dtype=np.float64)


#: Neighbour backends by the name a spec uses.
NEIGHBOR_BACKENDS: dict[str, type] = {"exact": ExactNeighbors, "annoy": AnnoyNeighbors}


def make_neighbors(kind: str, **params: Any) -> ExactNeighbors | AnnoyNeighbors:
    """Instantiate the backend ``kind`` ("exact" or "annoy") with its parameters."""
    if kind not in NEIGHBOR_BACKENDS:
        raise ValueError(f"unknown neighbour backend '{kind}'" + did_you_mean(kind, NEIGHBOR_BACKENDS))
    return NEIGHBOR_BACKENDS[kind](**params)


def neighbor_recall(approx_idx: np.ndarray, exact_idx: np.ndarray) -> float:
    """Fraction of the true k nearest neighbours found by an approximate search."""
    approx_idx = np.asarray(approx_idx)
    exact_idx = np.asarray(exact_idx)
    hits = sum(np.intersect1d(a, e).size for a, e in zip(approx_idx, exact_idx, strict=True))
    return hits / exact_idx.size
