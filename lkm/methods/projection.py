"""Projection learning (PL) and localized projection learning (LPL), Tsuji, Kudo, Tanaka.

PL (eq. (4)):  f(x) = K(x, X) G⁺ y with the Gaussian Gram matrix G = (K(x_i, x_j)).
LPL (Sec. 5):  f(x) = K(x, X_N) G_N⁺ y_N over the k nearest training patterns N(x).

G⁺ is the Moore–Penrose inverse: G is singular whenever training patterns repeat (and
numerically whenever they nearly do), so both methods solve pseudo-inverse systems.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.utils._param_validation import Interval, StrOptions

from lkm.errors import ParameterClipped
from lkm.methods.base import SCALE, SIGMA_CONSTRAINT, LocalKernelClassifier, memoized
from lkm.numerics.kernels import (
    EXP_FLUSH_BELOW,
    DistanceCache,
    check_memory,
    exp_rows_scaled,
    exponent_scale,
    format_bytes,
    gaussian_from_sq,
    sq_dists,
    underflow_share,
)
from lkm.numerics.neighbors import (
    APPROXIMATE,
    NEIGHBOR_BACKENDS,
    AnnoyNeighbors,
    ExactNeighbors,
    HnswNeighbors,
    make_neighbors,
    neighbor_recall,
    resolve_backend,
)
from lkm.numerics.psd_pinv import DEFAULT_RCOND, eigh_pinv_solve, largest_eigenvalue, psd_pinv_solve
from lkm.numerics.threads import blas_threads, map_row_blocks

EPS = float(np.finfo(np.float64).eps)
#: Bytes of gathered neighbour coordinates LPL materializes at once.
CHUNK_BYTES = 64 * 2**20
#: Entries of :class:`LocalizedProjectionLearning`'s ``info_`` that depend on the run
#: (wall times, and whether the neighbour lists came from a cache), not on the model.
RUN_DEPENDENT_INFO = ("neighbor_seconds", "neighbor_cached", "recall_seconds")
#: LPL solves its k×k local systems in blocks of this many queries, one block per task
#: with ``n_jobs``; the blocks (and so every output's arithmetic) do not depend on n_jobs.
LOCAL_SYSTEMS_BLOCK = 512


#: Bytes of the test × training kernel block PL's predict evaluates at a time.
QUERY_BLOCK_BYTES = 32 * 2**20


#: ``solver="auto"`` uses :func:`~lkm.numerics.psd_pinv.eigh_pinv_solve` up to this many distinct training rows
#: (about a second) and :func:`~lkm.numerics.psd_pinv.psd_pinv_solve` above.
EIGH_MAX_ROWS = 2000


def batched_pinv_forms(
    G: np.ndarray, left: np.ndarray, right: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``leftᵀ G⁺ right`` for a stack of small symmetric PSD systems, by one stacked eigh.

    G: (m, k, k); left: (m, k); right: (m, k) or (m, k, c). Eigenvalues at or below
    ``k·eps·max eigenvalue`` are dropped (the pseudo-inverse). Returns the values, shape
    (m,) or (m, c), and a boolean mask of the systems that were singular.
    """
    k = G.shape[-1]
    w, V = np.linalg.eigh(G)
    keep = w > k * EPS * w[:, -1:]
    inv_w = np.divide(1.0, w, out=np.zeros_like(w), where=keep)
    a = np.einsum("mk,mkj->mj", left, V) * inv_w
    if right.ndim == 2:
        values = np.einsum("mj,mk,mkj->m", a, right, V)
    else:
        values = np.einsum("mj,mkc,mkj->mc", a, right, V)
    return values, ~keep.all(axis=1)


def auto_k(n_train: int) -> int:
    """The paper's neighbourhood size k = floor(log10 ℓ + 1) (Sec. 9)."""
    return math.floor(math.log10(n_train) + 1)


def _unique_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of X in lexicographic order, the inverse (row -> distinct row)
    and each distinct row's multiplicity.

    Sorting makes the order canonical: PL solves in this order, so its numbers do not
    depend on the order of the training rows at all (not even through round-off)."""
    unique, inverse, counts = np.unique(X + 0.0, axis=0, return_inverse=True, return_counts=True)
    return np.ascontiguousarray(unique), inverse.ravel(), counts


def _gram_blocks(
    D: np.ndarray, sigma: float, cache: DistanceCache | None, X: np.ndarray
) -> list[np.ndarray] | None:
    """Index sets of the diagonal blocks of G = exp(-D / 2σ²), or None for one block.

    :func:`gaussian_from_sq` returns exact zeros for exponents below EXP_FLUSH_BELOW, so
    G vanishes between single-linkage clusters of D cut at 2σ²·(|EXP_FLUSH_BELOW| + 1).
    G is surely one block when some point is within the cut of every other point, which
    spares the clustering at large sigma. Blocks are only used when they at least halve
    the O(n³) factorization work.
    """
    cut = 2.0 * sigma * sigma * (1.0 - EXP_FLUSH_BELOW)
    if memoized(cache, ("pl_gram_radius",), lambda: float(D.max(axis=1).min()), X) <= cut:
        return None
    n = D.shape[0]

    def single_linkage() -> np.ndarray:
        check_memory(4 * n * (n - 1), f"PL block search on n = {n:,} distinct training rows (condensed distances)")
        return linkage(squareform(D, checks=False), "single")

    tree = memoized(cache, ("pl_single_linkage",), single_linkage, X)
    labels = fcluster(tree, cut, criterion="distance")
    sizes = np.bincount(labels).astype(np.float64)
    if np.sum(sizes**3) > 0.5 * float(D.shape[0]) ** 3:
        return None  # gathering the blocks would cost more than the factorization saves
    order = np.argsort(labels, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(labels[order])) + 1)


def _blockwise_pinv_solve(
    gram: Callable[[np.ndarray], np.ndarray], diag: np.ndarray, b: np.ndarray,
    blocks: list[np.ndarray], rcond: float, solve: Callable[..., tuple[np.ndarray, int, str]],
) -> tuple[np.ndarray, int, str]:
    """``solve`` (:func:`~lkm.numerics.psd_pinv.psd_pinv_solve` or :func:`~lkm.numerics.psd_pinv.eigh_pinv_solve`) of a block-diagonal
    matrix given its diagonal and a function returning the (new, writable) block for an
    index set. λ_max is that of the whole matrix (the largest over the blocks) and one
    cutoff serves every block, so the rank decisions are those of the whole matrix."""
    singles = np.array([block[0] for block in blocks if block.size == 1], dtype=np.intp)
    grams = [(block, gram(block)) for block in blocks if block.size > 1]
    lam_max = max([float(diag[singles].max()) if singles.size else 0.0]
                  + [largest_eigenvalue(A, iterations=50) for _, A in grams])  # blocks are small: iterate to convergence
    solution = np.zeros(b.shape)
    kept = singles[diag[singles] > rcond * lam_max]
    solution[kept] = b[kept] / diag[kept].reshape((-1,) + (1,) * (b.ndim - 1))
    rank = kept.size
    for block, A in grams:
        solution[block], r, _ = solve(A, b[block], rcond=rcond, lam_max=lam_max, overwrite_g=True)
        rank += r
    return solution, rank, "inverse" if rank == diag.size else "pseudo-inverse"


def pl_fit_memory(
    n_unique: int, solver: str, cache: DistanceCache | None = None, X_unique: np.ndarray | None = None
) -> tuple[int, str]:
    """Bytes PL's fit allocates on ``n_unique`` distinct rows, and a description of them,
    for :func:`lkm.numerics.kernels.check_memory`: the n × n distance matrix (unless ``cache``
    already holds it for ``X_unique``); the Gram matrix, built in the distances' place
    unless a cache keeps those alive; and for ``solver="eigh"`` the workspace of LAPACK's
    dsyevd (2n² doubles). The pivoted Cholesky factorizes in place; its null-space terms
    are checked once the rank is known (:func:`~lkm.numerics.psd_pinv.psd_pinv_solve`)."""
    entries = 8 * n_unique * n_unique
    have_dist = cache is not None and X_unique is not None and cache.has_sq_dists(X_unique, X_unique)
    parts = {"distance matrix": 0 if have_dist else entries,
             "Gram matrix (the cache keeps the distances)": entries if cache is not None else 0,
             "eigh workspace": 2 * entries if solver == "eigh" else 0}
    needed = sum(parts.values())
    shown = " + ".join(f"{name} {format_bytes(b)}" for name, b in parts.items() if b)
    return needed, f"PL fit on n = {n_unique:,} distinct training rows ({shown or 'nothing large'})"


class ProjectionLearning(LocalKernelClassifier):
    """Projection learning (Tsuji et al., eq. (4)) with a Gaussian kernel of width sigma.

    ``f(x) = K(x, X) G⁺ y`` (Tsuji et al. [1]_, Sec. 3, eq. (4)) with the Gaussian Gram
    matrix G and eigen-directions of G at or below ``rcond·λ_max(G)`` treated as null.
    Two exact structures of G are exploited:

    * repeated training rows are merged: with M the 0/1 membership matrix,
      G = M G_u Mᵀ, and G⁺ y follows exactly from the pseudo-inverse of the smaller
      C^½ G_u C^½ (C = multiplicities); this removes the commonest cause of singularity
      and shrinks the O(ℓ³) factorization. The distinct rows are taken in lexicographic
      order, so the result does not depend on the order of the training rows;
    * with small sigma, G is block diagonal (kernel values between distant groups are
      exactly 0) and each block is solved on its own.

    Predictions use each test row's kernel values divided by its largest
    (:func:`lkm.numerics.kernels.exp_rows_scaled`): the sign of f is exact even where
    every kernel value underflows (tiny sigma, far points). ``decision_function``
    returns the unscaled f, which is then 0; ``predict`` never reads it.

    Memory: G⁺ needs the whole n × n Gram matrix (8n² bytes, twice that when a
    :class:`~lkm.numerics.kernels.DistanceCache` keeps the distances alive;
    :func:`pl_fit_memory`), so fit checks it against the memory available first and
    raises :class:`~lkm.errors.InsufficientMemory` naming n, the bytes needed and those
    available instead of allocating; predictions are computed in blocks of test rows
    (:data:`QUERY_BLOCK_BYTES`), so no test × training matrix is held without a cache.

    Parameters
    ----------
    sigma : float or "scale", default="scale"
        The Gaussian width. ``"scale"`` (the paper sweeps sigma and fixes no value) is
        the width scikit-learn's ``gamma="scale"`` gives, sqrt(p·Var(X)/2) of the
        training data (:func:`lkm.methods.base.scaled_sigma`).
    rcond : float, default=1e-10
        Relative rank cutoff of the pseudo-inverse (default and reason at
        :data:`~lkm.numerics.psd_pinv.DEFAULT_RCOND`).
    solver : {"auto", "eigh", "cholesky"}, default="auto"
        ``"eigh"`` (:func:`~lkm.numerics.psd_pinv.eigh_pinv_solve`, robust to round-off), ``"cholesky"``
        (:func:`~lkm.numerics.psd_pinv.psd_pinv_solve`, a pivoted Cholesky stopped at the same cutoff, ~10×
        faster but its outputs can move with round-off where G's spectrum decays
        smoothly through the cutoff) or ``"auto"`` (eigh up to :data:`EIGH_MAX_ROWS`
        distinct rows).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sigma_ : float
        The width in use (also ``info_['sigma']``).
    X_unique_ : ndarray of shape (n_unique, n_features)
        The distinct training rows, sorted.
    unique_coef_ : ndarray of shape (n_unique,) or (n_unique, n_classes)
        Their coefficients: ``f(x) = K(x, X_unique_) unique_coef_``.
    dual_coef_ : ndarray of shape (n_train,) or (n_train, n_classes)
        G⁺ y per training row.
    info_ : dict
        ``rank_G``, ``route`` ("inverse", "pseudo-inverse" or "eigen"), ``n_train``,
        ``n_unique_rows``, ``n_blocks`` (diagonal blocks of G), ``rcond``, ``solver``,
        ``sigma``; after ``predict`` also ``tie_share`` and ``underflow_share`` (test
        points whose unscaled kernel row is all zeros in float64).

    See Also
    --------
    LocalizedProjectionLearning : The same projection over each query's k neighbours.

    References
    ----------
    .. [1] K. Tsuji, M. Kudo, A. Tanaka, "Localized Projection Learning", Structural,
       Syntactic, and Statistical Pattern Recognition (S+SSPR), LNCS, Springer, 2010,
       Sec. 3, eq. (4).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from lkm.methods import ProjectionLearning
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> clf = ProjectionLearning(sigma=3.0).fit(X[:400], y[:400])
    >>> print(round(clf.score(X[400:], y[400:]), 3))
    0.935
    >>> clf.info_["route"], clf.info_["n_unique_rows"]
    ('inverse', 400)
    """

    sample_weight_refusal = (
        "f(x) = K(x, X) G⁺ y (Tsuji et al., eq. (4)) solves for the training outputs with no loss to weigh"
    )

    _parameter_constraints: dict[str, list[Any]] = {
        "sigma": SIGMA_CONSTRAINT,
        "rcond": [Interval(Real, 0, 1, closed="left")],
        "solver": [StrOptions({"auto", "eigh", "cholesky"})],
    }

    def __init__(self, sigma: float | str = SCALE, rcond: float = DEFAULT_RCOND, solver: str = "auto") -> None:
        self.sigma = sigma
        self.rcond = rcond
        self.solver = solver

    def _solver(self, n_unique: int) -> str:
        if self.solver != "auto":
            return self.solver
        return "eigh" if n_unique <= EIGH_MAX_ROWS else "cholesky"

    def fit(
        self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None
    ) -> ProjectionLearning:
        """Solve ``G⁺ y`` on the training data (eq. (4)).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Class labels (±1 dummy outputs per class are built from them).
        cache : DistanceCache or None, default=None
            Memoizes the distinct rows, their distances and the block search, so a
            sigma sweep on one split computes them once.

        Returns
        -------
        ProjectionLearning
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        Y = self._dummy_outputs(y_index)
        X_u, inverse, counts = memoized(cache, ("pl_unique_rows",), lambda: _unique_rows(X), X)
        solver = self._solver(counts.size)
        check_memory(*pl_fit_memory(counts.size, solver, cache, X_u))
        D = sq_dists(X_u, X_u, cache)
        blocks = _gram_blocks(D, self.sigma_, cache, X_u)
        # With C = diag(multiplicities), A = C^½ G_u C^½ and b = C^-½ Mᵀ y give
        # G⁺ y = M C^-½ A⁺ b exactly, and f(x) = K(x, X_u) C^½ A⁺ b.
        root = np.sqrt(counts)

        def gram(index: np.ndarray | None = None) -> np.ndarray:
            """A, or its block on ``index``, as a writable array (computed in D's place
            when D is not shared through a cache)."""
            if index is None:
                A = gaussian_from_sq(D, self.sigma_, out=None if cache is not None else D)
                index = np.arange(counts.size)
            else:
                A = gaussian_from_sq(D[np.ix_(index, index)], self.sigma_)
            repeated = np.flatnonzero(counts[index] > 1)
            A[repeated, :] *= root[index[repeated], None]
            A[:, repeated] *= root[index[repeated]]
            return A

        column = (-1,) + (1,) * (Y.ndim - 1)  # broadcasts per-row factors over Y's columns
        b = np.zeros((counts.size,) + Y.shape[1:])
        np.add.at(b, inverse, Y)
        b /= root.reshape(column)
        solve = eigh_pinv_solve if solver == "eigh" else psd_pinv_solve
        if blocks is None:
            beta, rank, route = solve(gram(), b, rcond=self.rcond, overwrite_g=True)
        else:
            diag = gaussian_from_sq(np.diagonal(D), self.sigma_) * counts
            beta, rank, route = _blockwise_pinv_solve(gram, diag, b, blocks, self.rcond, solve)
        self.X_unique_ = X_u
        self.unique_coef_ = beta * root.reshape(column)
        self.dual_coef_ = (beta / root.reshape(column))[inverse]
        # class of each distinct row by its summed dummy outputs, for the tie rule
        self.unique_class_ = (b > 0).astype(np.intp) if b.ndim == 1 else np.argmax(b, axis=1)
        self.info_: dict[str, Any] = {
            "rank_G": rank,
            "route": route,
            "n_train": X.shape[0],
            "n_unique_rows": int(counts.size),
            "n_blocks": 1 if blocks is None else len(blocks),
            "rcond": float(self.rcond),
            "solver": solver,
            "sigma": self.sigma_,
        }
        return self

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """``K(x, X_train) G⁺ y`` (eq. (4)) for every query.

        Exactly 0 where every kernel value underflows; :meth:`predict` does not use it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            f(x): one value for two classes (positive for ``classes_[1]``), else one
            column per class.
        """
        X = self._validate_query(X)
        out = np.empty((X.shape[0],) + self.unique_coef_.shape[1:])
        for rows, D in self._query_blocks(X, cache):
            out[rows] = gaussian_from_sq(D, self.sigma_, out=None if cache is not None else D) @ self.unique_coef_
        return out

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        X = self._validate_query(X)
        scale = exponent_scale(2.0 * self.sigma_, self.sigma_)
        out = np.empty((X.shape[0],) + self.unique_coef_.shape[1:])
        row_min = np.empty(X.shape[0])
        nearest = np.empty(X.shape[0], dtype=np.intp)
        for rows, D in self._query_blocks(X, cache):
            k_x, row_min[rows] = exp_rows_scaled(D, scale)
            out[rows] = k_x @ self.unique_coef_
            nearest[rows] = self.unique_class_[np.argmin(D, axis=1)]
        self.info_["underflow_share"] = underflow_share(row_min, scale)
        return out, nearest

    def _query_blocks(
        self, X: np.ndarray, cache: DistanceCache | None
    ) -> Iterator[tuple[slice, NDArray[np.float64]]]:
        """``(rows, squared distances of X[rows] to X_unique_)`` over blocks of query rows
        (:data:`QUERY_BLOCK_BYTES`): each block computed on its own, so no full test ×
        training matrix exists, except with a cache, which keeps the whole matrix for
        later fits on the split (then blocks are its rows, and read-only)."""
        D = sq_dists(X, self.X_unique_, cache) if cache is not None else None
        step = max(1, QUERY_BLOCK_BYTES // (8 * max(1, self.X_unique_.shape[0])))
        for start in range(0, X.shape[0], step):
            rows = slice(start, min(start + step, X.shape[0]))
            yield rows, D[rows] if D is not None else sq_dists(X[rows], self.X_unique_)


class LocalizedProjectionLearning(LocalKernelClassifier):
    """Localized projection learning (Tsuji et al., Sec. 5).

    For each query x: ``f(x) = K(x, X_N) G_N⁺ y_N`` over its k nearest training
    patterns N(x) (Euclidean; Tsuji et al. [1]_, Sec. 5). With k = ℓ every neighbourhood
    is the whole training set, so one ℓ×ℓ system is solved at fit time instead of one
    per query. One neighbour query serves all test points, and the k×k systems are
    solved together by a stacked eigendecomposition (:func:`batched_pinv_forms`:
    eigenvalues at or below ``k·eps·λ_max`` dropped, the pseudo-inverse). With a cache,
    the neighbour lists and local squared distances are memoized, so a sigma sweep only
    recomputes the exponentials and the eigendecompositions.

    Parameters
    ----------
    sigma : float or "scale", default="scale"
        The Gaussian width (the paper sweeps sigma); ``"scale"`` is resolved at fit as
        for :class:`ProjectionLearning`.
    k : int or "auto", default="auto"
        Neighbourhood size; ``"auto"`` is the paper's k = floor(log10 ℓ + 1) (Sec. 9).
        A k above ℓ is clipped to ℓ with a UserWarning (once per fit) and ``info_``
        entries ``k_requested``, ``k_clipped`` and ``note``.
    neighbors : {"exact", "annoy", "hnswlib", "approximate"}, default="exact"
        The neighbour search: exact, or approximate (Sec. 7: "suboptimal k nearest
        neighbors are acceptable"; annoy and hnswlib need ``lkm[fast]``).
        ``"approximate"`` is hnswlib where it is installed, else annoy (the one that ran
        is ``info_['neighbors_backend']``).
    n_trees : int, default=10
        annoy: trees of the forest.
    search_k : int, default=-1
        annoy: nodes inspected per query (-1: annoy's default).
    random_state : int, RandomState instance or None, default=None
        Seeds annoy's forest or hnswlib's graph.
    measure_recall : bool, default=False
        Also run an exact query and store the recall of the approximate neighbour lists
        in ``info_['neighbor_recall']`` (the Sec. 7 experiment); with exact neighbours
        the recall is 1.0 and nothing is recomputed.
    ef : int, default=50
        hnswlib: candidates per query (graphs with M = 16, ef_construction = 200).
    n_jobs : int or None, default=None
        Threads (joblib; None is 1, -1 every core) that solve the local k×k systems,
        in blocks of :data:`LOCAL_SYSTEMS_BLOCK` queries that do not depend on
        ``n_jobs``, so the outputs are identical at every value (letter, 15,000 training
        rows, k = 30, neighbours from a cache: 1.75 s at 1 thread, 1.27 s at 2, on a
        loaded two-core machine). The neighbour query runs before them, on BLAS's
        threads. The local systems always run on one BLAS thread each (a k×k
        eigendecomposition gains nothing from more).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    sigma_ : float
        The width in use (also ``info_['sigma']``).
    k_ : int
        The k used (also ``info_['k']``).
    X_fit_ : ndarray of shape (n_train, n_features)
        The training patterns.
    dummy_outputs_ : ndarray of shape (n_train,) or (n_train, n_classes)
        Their ±1 dummy outputs.
    neighbors_ : object or None
        The fitted neighbour index (None when k = ℓ).
    info_ : dict
        ``k``, ``sigma``, ``neighbors``; after each ``decision_function``:
        ``neighbor_seconds`` (wall time of the neighbour query spent in that call; ~0
        with ``neighbor_cached`` True when the lists came from the cache),
        ``neighbor_recall`` (1.0 for exact neighbours; for annoy and hnswlib the
        measured recall with ``measure_recall``, else None), ``recall_seconds`` (time
        of the exact reference query, 0 unless it ran in that call) and
        ``singular_local_systems``; after ``predict`` also ``tie_share`` and
        ``underflow_share``.

    See Also
    --------
    ProjectionLearning : The global projection, one ℓ×ℓ system.
    lkm.methods.SVMClassifier : The SVM Tsuji et al. compare LPL with (Sec. 6 and 9).

    References
    ----------
    .. [1] K. Tsuji, M. Kudo, A. Tanaka, "Localized Projection Learning", Structural,
       Syntactic, and Statistical Pattern Recognition (S+SSPR), LNCS, Springer, 2010,
       Sec. 5 (the local solution), Sec. 7 (approximate neighbours), Sec. 9 (k).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from lkm.methods import LocalizedProjectionLearning
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> clf = LocalizedProjectionLearning(sigma=3.0).fit(X[:400], y[:400])
    >>> clf.k_
    3
    >>> print(round(clf.score(X[400:], y[400:]), 3))
    0.941
    """

    sample_weight_refusal = (
        "each local f(x) = K(x, X_N) G_N⁺ y_N (Tsuji et al., Sec. 5) solves for its neighbours' outputs with no loss to weigh"
    )

    #: The annoy and hnswlib settings are read only with those neighbours.
    conditional_params = {"n_trees": ("neighbors", ("annoy", APPROXIMATE)),
                          "search_k": ("neighbors", ("annoy", APPROXIMATE)),
                          "ef": ("neighbors", ("hnswlib", APPROXIMATE))}
    _parameter_constraints: dict[str, list[Any]] = {
        "sigma": SIGMA_CONSTRAINT,
        "k": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "neighbors": [StrOptions(set(NEIGHBOR_BACKENDS))],
        "n_trees": [Interval(Integral, 1, None, closed="left")],
        "search_k": [Interval(Integral, -1, None, closed="left")],
        "random_state": ["random_state"],
        "measure_recall": ["boolean"],
        "ef": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
    }
    #: The fitted neighbour index (None when k = ℓ: no search).
    neighbors_: ExactNeighbors | AnnoyNeighbors | HnswNeighbors | None

    def __init__(
        self,
        sigma: float | str = SCALE,
        k: int | str = "auto",
        neighbors: str = "exact",
        n_trees: int = 10,
        search_k: int = -1,
        random_state: Any = None,
        measure_recall: bool = False,
        ef: int = 50,
        n_jobs: int | None = None,
    ) -> None:
        self.sigma = sigma
        self.k = k
        self.neighbors = neighbors
        self.n_trees = n_trees
        self.search_k = search_k
        self.random_state = random_state
        self.measure_recall = measure_recall
        self.ef = ef
        self.n_jobs = n_jobs

    def __getstate__(self) -> dict[str, Any]:
        """Pickle support: an annoy index is a C object, so its forest is stored as the
        bytes of annoy's own file format (:func:`_annoy_to_bytes`) and loaded back by
        :meth:`__setstate__`: the same trees, hence the same neighbours and predictions.
        hnswlib's index pickles natively."""
        state = dict(super().__getstate__())  # a copy: object.__getstate__ gives __dict__ itself
        backend: Any = state.get("neighbors_")  # a neighbour index, or None
        if getattr(backend, "name", None) == "annoy" and hasattr(backend, "index_"):
            backend = backend.__class__.__new__(backend.__class__)
            backend.__dict__.update(state["neighbors_"].__dict__)
            backend.index_ = _annoy_to_bytes(backend.index_)
            state["neighbors_"] = backend
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        backend: Any = state.get("neighbors_")  # a neighbour index, or None
        if getattr(backend, "name", None) == "annoy" and isinstance(getattr(backend, "index_", None), bytes):
            backend.index_ = _annoy_from_bytes(backend.index_, backend.X_.shape[1], backend.metric)
        super().__setstate__(state)

    def _backend_key(self) -> tuple[Any, ...] | None:
        """What identifies the neighbour lists in a cache; None when they cannot be shared
        (annoy or hnswlib seeded by a RandomState instance). Entry 2 is the query-time
        setting, which the index does not depend on."""
        kind = resolve_backend(self.neighbors)
        if kind == "exact":
            return ("exact",)
        if self.random_state is not None and not isinstance(self.random_state, Integral):
            return None
        if kind == "hnswlib":
            return ("hnswlib", None, self.ef, self.random_state)
        return ("annoy", self.n_trees, self.search_k, self.random_state)

    def _make_backend(self, X: np.ndarray) -> ExactNeighbors | AnnoyNeighbors | HnswNeighbors:
        kind = resolve_backend(self.neighbors)
        if kind == "exact":
            return make_neighbors("exact").fit(X)
        if kind == "hnswlib":
            return make_neighbors("hnswlib", ef=self.ef, random_state=self.random_state).fit(X)
        return make_neighbors(
            "annoy", n_trees=self.n_trees, search_k=self.search_k, random_state=self.random_state
        ).fit(X)

    def fit(
        self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None
    ) -> LocalizedProjectionLearning:
        """Store the training patterns and build the neighbour index (LPL is local).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Class labels (±1 dummy outputs per class are built from them).
        cache : DistanceCache or None, default=None
            Memoizes the neighbour index (one per forest or graph) for later fits on
            the same split.

        Returns
        -------
        LocalizedProjectionLearning
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        n = X.shape[0]
        k_requested = auto_k(n) if self.k == "auto" else int(self.k)
        self.k_ = min(k_requested, n)
        self.X_fit_ = X
        self.dummy_outputs_ = self._dummy_outputs(y_index)
        backend_key = self._backend_key()
        if self.k_ == n:
            # Every query's neighbourhood is the whole training set (in another order):
            # one ℓ×ℓ system instead of one per query, and no neighbour search.
            self._fit_global(X, cache)
            self.neighbors_ = None
        elif cache is None or backend_key is None:
            self.neighbors_ = self._make_backend(X)
        else:
            # The index does not depend on search_k or ef (query-time settings): one per forest or graph.
            index_key = backend_key if backend_key[0] == "exact" else backend_key[:2] + backend_key[3:]
            key = ("lpl_neighbor_index", *index_key)
            self.neighbors_ = cache.memo(key, lambda: self._make_backend(X), X)
        self.info_: dict[str, Any] = {
            "k": self.k_,
            "sigma": self.sigma_,
            "neighbors": self.neighbors,
            "singular_local_systems": None,  # counted by each decision_function call
            "neighbor_seconds": None,  # these four are set by each decision_function call
            "neighbor_cached": None,
            "neighbor_recall": None,
            "recall_seconds": None,
        }
        if self.neighbors == APPROXIMATE:
            self.info_["neighbors_backend"] = resolve_backend(APPROXIMATE)
        if self.k_ < k_requested:
            note = f"LPL: k={k_requested} > {n} training rows; using k={self.k_}"
            warnings.warn(note, ParameterClipped, stacklevel=3)  # fit < base's sample_weight check < caller
            self.info_.update(k_requested=k_requested, k_clipped=True, note=note)
        return self

    def _fit_global(self, X: np.ndarray, cache: DistanceCache | None) -> None:
        """For k = ℓ: ``global_coef_ = G⁺ y`` over all training rows, with the cutoff of
        :func:`batched_pinv_forms` (eigenvalues at or below ``ℓ·eps·λ_max`` dropped), and
        ``global_singular_`` (whether any was dropped). Then f(x) = K(x, X) G⁺ y, the same
        function the per-query systems give (each is G with its rows permuted), at the cost
        of one ℓ×ℓ eigendecomposition instead of one per query; its memory is planned as
        PL's with the ``eigh`` solver."""
        needed, what = pl_fit_memory(X.shape[0], "eigh", cache, X)
        what = what.replace("PL fit", "LPL fit with k = ℓ (one global system)", 1).replace(" distinct", "", 1)
        check_memory(needed, what)
        D = sq_dists(X, X, cache)
        G = gaussian_from_sq(D, self.sigma_, out=None if cache is not None else D)
        w, V = np.linalg.eigh(G)
        keep = w > X.shape[0] * EPS * w[-1:]
        Vk = V[:, keep]
        Y = self.dummy_outputs_.reshape(X.shape[0], -1)
        self.global_coef_ = (Vk @ ((Vk.T @ Y) / w[keep, None])).reshape(self.dummy_outputs_.shape)
        self.global_singular_ = bool(not keep.all())

    def _local_geometry(
        self, X: np.ndarray, cache: DistanceCache | None, timing: dict[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Neighbour squared distances (m, k), indices (m, k), local squared distances (m, k, k).

        ``timing["neighbor_seconds"]`` receives the wall time of the neighbour query.
        """
        k, Xt = self.k_, self.X_fit_
        t0 = time.perf_counter()
        neighbors = self.neighbors_
        assert neighbors is not None, "k < ℓ: the fit made a neighbour index"
        query: dict[str, Any] = {"annoy": {"search_k": self.search_k}, "hnswlib": {"ef": self.ef}}.get(neighbors.name, {})
        sq, idx = neighbors.kneighbors(X, k, cache=cache, **query)
        if timing is not None:
            timing["neighbor_seconds"] = time.perf_counter() - t0
        local = np.empty((X.shape[0], k, k))
        rows = max(1, CHUNK_BYTES // (8 * k * (Xt.shape[1] + k)))
        for start in range(0, X.shape[0], rows):
            Z = Xt[idx[start : start + rows]]
            norms = np.einsum("mkp,mkp->mk", Z, Z)
            block = local[start : start + rows]
            np.matmul(Z, Z.transpose(0, 2, 1), out=block)
            block *= -2.0
            block += norms[:, :, None]
            block += norms[:, None, :]
            np.maximum(block, 0.0, out=block)
        local[:, np.arange(k), np.arange(k)] = 0.0
        return sq, idx, local

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """``K(x, X_N) G_N⁺ y_N`` for every query (Sec. 5).

        Exactly 0 where every neighbour's kernel value underflows; :meth:`predict` does
        not use it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the neighbour lists and local squared distances.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            f(x): one value for two classes (positive for ``classes_[1]``), else one
            column per class.
        """
        return self._local_decision(X, cache, scaled=False)[0]

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return self._local_decision(X, cache, scaled=True)

    def _local_decision(
        self, X: np.ndarray, cache: DistanceCache | None, *, scaled: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Outputs (scaled: each query's kernel vector divided by its nearest neighbour's
        value, :func:`lkm.numerics.kernels.exp_rows_scaled`) and each query's nearest neighbour's
        class index. The local Gram matrices keep their unit diagonal either way."""
        X = self._validate_query(X)
        if self.neighbors_ is None:
            return self._global_decision(X, cache, scaled=scaled)
        backend_key = self._backend_key()
        timing: dict[str, float] = {}
        if cache is None or backend_key is None:
            sq, idx, local = self._local_geometry(X, cache, timing)
        else:
            key = ("lpl_local_geometry", self.k_, *backend_key)
            sq, idx, local = cache.memo(key, lambda: self._local_geometry(X, cache, timing), X, self.X_fit_)
        scale = exponent_scale(2.0 * self.sigma_, self.sigma_)

        def solve_block(rows: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
            """Outputs, singular mask and (scaled) row minima of the queries ``rows``, on one
            BLAS thread: a k×k eigendecomposition is microseconds of work, and extra BLAS
            threads made it 10x slower on a loaded machine (letter, k = 30: 20 s against 2 s)."""
            G = gaussian_from_sq(local[rows], self.sigma_)
            if scaled:
                k_x, row_min = exp_rows_scaled(sq[rows], scale)
            else:
                k_x, row_min = gaussian_from_sq(sq[rows], self.sigma_), None
            with blas_threads(1):
                return *batched_pinv_forms(G, k_x, self.dummy_outputs_[idx[rows]]), row_min

        blocks = map_row_blocks(solve_block, X.shape[0], LOCAL_SYSTEMS_BLOCK, self.n_jobs) or [solve_block(slice(0, 0))]
        values = np.concatenate([b[0] for b in blocks])
        singular = np.concatenate([b[1] for b in blocks])
        if scaled:
            self.info_["underflow_share"] = underflow_share(np.concatenate([b[2] for b in blocks]), scale)
        self.info_["singular_local_systems"] = int(singular.sum())
        self.info_["neighbor_cached"] = "neighbor_seconds" not in timing
        self.info_["neighbor_seconds"] = timing.get("neighbor_seconds", 0.0)
        self._record_recall(X, idx, cache, backend_key)
        nearest_outputs = self.dummy_outputs_[idx[:, 0]] if idx.shape[0] else self.dummy_outputs_[:0]
        nearest = (nearest_outputs > 0).astype(np.intp) if nearest_outputs.ndim == 1 else np.argmax(nearest_outputs, axis=1)
        return values, nearest

    def _global_decision(
        self, X: np.ndarray, cache: DistanceCache | None, *, scaled: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_local_decision` for k = ℓ, where every neighbourhood is the training
        set: ``K(x, X) G⁺ y`` from :meth:`_fit_global`; nearest pattern by the lower
        index among ties, as the exact neighbour lists order them."""
        D = sq_dists(X, self.X_fit_, cache)
        if scaled:
            scale = exponent_scale(2.0 * self.sigma_, self.sigma_)
            k_x, row_min = exp_rows_scaled(D, scale)
            self.info_["underflow_share"] = underflow_share(row_min, scale)
        else:
            k_x = gaussian_from_sq(D, self.sigma_)
        values = k_x @ self.global_coef_
        self.info_.update(
            singular_local_systems=X.shape[0] if self.global_singular_ else 0,
            neighbor_cached=False, neighbor_seconds=0.0, neighbor_recall=1.0, recall_seconds=0.0,
        )
        nearest_outputs = self.dummy_outputs_[np.argmin(D, axis=1)] if D.shape[0] else self.dummy_outputs_[:0]
        nearest = (nearest_outputs > 0).astype(np.intp) if nearest_outputs.ndim == 1 else np.argmax(nearest_outputs, axis=1)
        return values, nearest

    def _record_recall(
        self, X: np.ndarray, idx: np.ndarray, cache: DistanceCache | None, backend_key: tuple[Any, ...] | None
    ) -> None:
        """``info_['neighbor_recall']`` and ``info_['recall_seconds']`` (see the class doc).

        The exact reference lists are memoized per (query, training) pair in the cache and
        computed in bounded-memory chunks, so a sweep over annoy settings pays one exact
        query per split; the recall itself is memoized with the approximate lists.
        """
        self.info_["recall_seconds"] = 0.0
        if self.neighbors == "exact":
            self.info_["neighbor_recall"] = 1.0
            return
        if not self.measure_recall:
            self.info_["neighbor_recall"] = None
            return
        spent = {"seconds": 0.0}

        def exact_lists() -> np.ndarray:
            t0 = time.perf_counter()
            _, exact_idx = make_neighbors("exact").fit(self.X_fit_).kneighbors(X, self.k_)
            spent["seconds"] = time.perf_counter() - t0
            return exact_idx

        def recall() -> float:
            exact_idx = memoized(cache, ("lpl_exact_neighbor_lists", self.k_), exact_lists, X, self.X_fit_)
            return float(neighbor_recall(idx, exact_idx))

        if cache is None or backend_key is None:
            value = recall()
        else:
            value = cache.memo(("lpl_neighbor_recall", self.k_, *backend_key), recall, X, self.X_fit_)
        self.info_["neighbor_recall"] = value
        self.info_["recall_seconds"] = spent["seconds"]


def _annoy_to_bytes(index: Any) -> bytes:
    """The bytes of annoy's index file (annoy writes only to files; the index afterwards
    maps that file, which POSIX keeps alive after it is removed)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "index.ann")
        index.save(path)
        with open(path, "rb") as f:
            return f.read()


def _annoy_from_bytes(
    data: bytes, n_features: int, metric: Literal["angular", "euclidean", "manhattan", "hamming", "dot"]
) -> Any:
    """An annoy index loaded from :func:`_annoy_to_bytes`'s bytes (fully read into memory)."""
    from annoy import AnnoyIndex

    index = AnnoyIndex(n_features, metric)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "index.ann")
        with open(path, "wb") as f:
            f.write(data)
        index.load(path, prefault=True)
    return index
