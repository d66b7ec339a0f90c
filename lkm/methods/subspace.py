"""Local subspace classifiers, Cevikalp, Larlus, Douze, Jurie (MLSP 2007).

For a query x_q every method takes, for each class i, the K training samples of that
class nearest to x_q (distances from :func:`lkm.numerics.kernels.sq_dists` under ``metric``, so a
registered distance such as a tangent distance plugs in) and measures a distance from
x_q to a local model of each class; the nearest class wins:

- :class:`HKNN` (Sec. II-A, eqs. (3)-(5)): distance to the affine hull of the class's K
  neighbours, ``||(I - P⁽ⁱ⁾)(x_q - μ_i)||``.
- :class:`LDCV` (Sec. III, eq. (23)): one pooled indifference subspace, the null space of
  the within-class scatter of all C·K neighbours: ``||P_NS (x_q - μ_i)||``.
- :class:`NHKNN` (Sec. II-C, eqs. (12)-(22)): HKNN in a kernel feature space, restricted
  to the range of the local total scatter R(S_T^Φ) (kernel PCA of the C·K neighbours).
- :class:`NLDCV` (Sec. III, kernel DCV of Cevikalp, Neamtu, Wilkes 2006 on the C·K
  neighbours): LDCV in the same kernel-PCA coordinates.

Every projection uses a rank-revealing basis (SVD or eigh with a relative cutoff
``rcond``): the difference vectors are dependent whenever neighbours repeat or K > d + 1,
where eq. (4)'s inv(ZᵀZ) does not exist. The neighbour selection and HKNN's and LDCV's
distances run as compiled loops over queries (:mod:`lkm.numerics.local_hulls`: the small
Gram matrix ZZᵀ by Cholesky where its conditioning is certified, the SVD otherwise);
NHKNN and NLDCV (Gaussian kernel) take each query's kernel-PCA coordinates from two
Cholesky factors of its centred local kernel matrix where they certifiably span what the
eigendecomposition keeps (:mod:`lkm.numerics.kernel_pca`: isometric coordinates, the same
distances; about a fifth of the cost of an ``eigh`` per query), and NLDCV its
common-vector residuals from the pooled differences' certified Gram matrix; the other
queries (and the linear kernel) take ``eigh`` and the SVD, as stacked arrays per block of
queries (:data:`CHOLESKY_KPCA`).
When K reaches every class's size (small classes, e.g. 26 letters in a few hundred
rows), every query's neighbourhood is the whole training set and NHKNN/NLDCV take one
kernel PCA for all of them (the same subspaces as the per-query route).

Prediction runs over fixed blocks of query rows; ``n_jobs`` spreads the blocks over
threads (:func:`lkm.numerics.threads.map_row_blocks`), each on one BLAS thread, so every
row's arithmetic, hence every output bit, is the same at any ``n_jobs``.

Kernel width: the paper writes the Gaussian kernel as ``k(x, y) = exp(-d²(x, y)/q)``;
lkm's is ``exp(-d²/(2σ²))``, so ``q = 2σ²``. The kernel estimators accept either
``sigma`` or ``q`` (``q`` wins when given).
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils._param_validation import Interval, StrOptions

from lkm.errors import NotApplicable, ParameterClipped
from lkm.methods.base import SCALE, SIGMA_CONSTRAINT, LocalKernelClassifier
from lkm.numerics.kernel_pca import MAX_PASSES, POOLED_RATIO, REFINE_TOL, isometric_block
from lkm.numerics.kernels import DISTANCES, DistanceCache, check_metric, gaussian_from_sq, sq_dists
from lkm.numerics.local_hulls import (
    SELECT_GROUP,
    common_vector_distances,
    hull_residuals_in_coordinates,
    independent_differences,
    select_class_neighbors,
    span_residuals,
)
from lkm.numerics.neighbors import k_smallest
from lkm.numerics.threads import blas_threads, map_row_blocks

#: Default relative rank cutoff: singular values at or below ``rcond·s_max`` (HKNN, LDCV,
#: the class and pooled scatters of NHKNN/NLDCV) count as zero, and so do kernel-PCA
#: eigenvalues at or below ``rcond²·λ_max`` (the same rule for the singular values of the
#: centred feature matrix, so NHKNN with a linear kernel keeps the directions HKNN
#: keeps), but never below the round-off floor :data:`KPCA_NOISE`. Exactly dependent
#: difference vectors leave singular values of order ``1e-16·s_max``; 1e-10 sits well
#: above that round-off. A Gram matrix squares the conditioning: directions with singular
#: values below about ``sqrt(10·M·eps)·s_max`` (≈ 2e-7; near-duplicate neighbours that
#: differ in the float32 digits of the data) are resolved by HKNN and not by NHKNN.
DEFAULT_RCOND = 1e-10
EPS = float(np.finfo(np.float64).eps)
#: Kernel-PCA eigenvalues at or below ``KPCA_NOISE·M·eps·λ_max`` (M local neighbours) are
#: round-off of the centred Gram matrix and count as zero whatever ``rcond``.
KPCA_NOISE = 10.0
#: Tolerance of the PSD check of local kernel matrices: an eigenvalue of the centred
#: Gram matrix below ``-PSD_TOL·λ_max`` marks it non-PSD (round-off stays far above).
PSD_TOL = 1e-8
#: Kernel methods with a costly metric compute the whole training set's distance matrix
#: (about n²/2 distances, n² float64) up to this many training rows, and gather every
#: local Gram matrix from it; above it, each query's C·K neighbours get their own.
FULL_TRAIN_GRAM_MAX = 12_000
#: Kernel methods whose K reaches every class's size (every query's neighbourhood is the
#: whole training set) take one kernel PCA for all queries (off: the per-query route).
SHARE_WHOLE_CLASSES = True
#: Neighbour coordinates / local kernel entries gathered at once (bytes).
CHUNK_BYTES = 32 * 2**20
#: NHKNN and NLDCV (Gaussian kernel) take each query's kernel-PCA coordinates from
#: Cholesky factors where they certifiably span the same subspace as the
#: eigendecomposition (:func:`lkm.numerics.kernel_pca.isometric_block`; the other
#: queries take ``eigh``), and NLDCV its null-space residuals from the pooled
#: differences' certified Gram matrix (:func:`lkm.numerics.local_hulls.common_vector_distances`;
#: otherwise the SVD). Off: ``eigh`` and the SVD for every query, the reference the
#: Cholesky route is tested against (the same predictions; distances equal to round-off
#: amplified by the local kernel matrix's conditioning, measured below 1e-9 relative).
#: A query identical to a training row takes that neighbour's coordinates in every route
#: (:meth:`_KernelSubspaceClassifier._position_on_neighbour`), so its distance to every
#: hull through the row is exactly 0 and classes that both hold the row tie exactly.
#: Exception: rows whose class distances tie up to round-off for another reason (a
#: kernel so narrow that every query's kernel values underflow, e.g. isolet at
#: sigma <= 2, where all C distances agree to 1e-15) are exact ties here, which the tie
#: rule decides, and round-off decides them in ``eigh``'s route.
CHOLESKY_KPCA = True
#: The Cholesky route computes the training rows' kernel matrix once per prediction (n²
#: float64: 128 MiB at 4,000 rows) up to this many training rows; above, the
#: eigendecomposition route.
CHOLESKY_TRAIN_MAX = 4000


#: Neighbours within ``IDENTICAL_FILTER·(|x_q|² + max |x|²)`` squared distance of a query
#: (far above the expansion's round-off, a few ``eps`` of that scale) are compared with it
#: feature by feature; the identical ones get distance exactly 0.
IDENTICAL_FILTER = 1e-9

#: Queries per block of the neighbour selection: at most SELECT_ROWS, and at most
#: SELECT_BLOCK_BYTES of distances per block. Each block's product packs the whole
#: training matrix again in BLAS: on USPS (7,291 × 256 training rows, one thread) the
#: product took 0.193 s in blocks of 128 queries, 0.153 s in blocks of 512 and 0.141 s
#: whole; HKNN's fit + predict 0.387 → 0.346 s.
SELECT_ROWS = 512
SELECT_BLOCK_BYTES = 64 << 20
#: Queries per block of the compiled class distances (no product: small blocks spread
#: the work evenly over the threads).
DISTANCE_ROWS = 128
#: The neighbour selection and HKNN's and LDCV's distances run as compiled loops over
#: queries (:mod:`lkm.numerics.local_hulls`, numba); off: the numpy route (stacked
#: arrays per block), the reference the compiled one is tested against (same neighbours,
#: distances equal to round-off).
COMPILED = True


def _select_rows(n_train: int) -> int:
    """Queries per block of the neighbour selection against ``n_train`` training rows:
    :data:`SELECT_ROWS`, fewer where a block's distances would exceed
    :data:`SELECT_BLOCK_BYTES` (at least 16)."""
    return max(16, min(SELECT_ROWS, SELECT_BLOCK_BYTES // (8 * max(n_train, 1))))


def _k_smallest_by_groups(scores: np.ndarray, k: int) -> np.ndarray:
    """:func:`lkm.numerics.neighbors.k_smallest` (column indices of each row's k smallest entries,
    ordered by (score, index)) in about two thirds of its time when k is much smaller
    than the row length (measured: 10 of 730 columns).

    The minima of groups of :data:`SELECT_GROUP` consecutive columns are entries of the
    row, so their k-th smallest t is at least the row's k-th smallest: the entries ≤ t
    (usually k plus a few) contain the answer, ties at the k-th value included. They are
    sorted by (row, score, index) and the first k of each row kept. Rows with many
    candidates (heavy ties) and short rows go to :func:`k_smallest`."""
    m, n = scores.shape
    groups = n // SELECT_GROUP
    if groups < k or m == 0:
        return k_smallest(scores, k)
    end = groups * SELECT_GROUP
    mins = scores[:, 0:end:SELECT_GROUP].copy()  # strided passes: much faster than a
    for j in range(1, SELECT_GROUP):  # reduction over a short last axis
        np.minimum(mins, scores[:, j:end:SELECT_GROUP], out=mins)
    t = np.partition(mins, k - 1, axis=1)[:, k - 1]
    mask = scores <= t[:, None]
    counts = mask.sum(axis=1)
    heavy = counts > 4 * k + SELECT_GROUP
    out = np.empty((m, k), dtype=np.intp)
    if heavy.any():
        out[heavy] = k_smallest(scores[heavy], k)
        mask[heavy] = False
        counts[heavy] = 0
    rows, cols = np.nonzero(mask)
    order = np.lexsort((scores[rows, cols], rows))  # stable: columns stay ascending in ties
    starts = np.cumsum(counts) - counts
    light = ~heavy
    out[light] = cols[order[starts[light, None] + np.arange(k)]]
    return out


class _LocalSubspaceClassifier(LocalKernelClassifier):
    """Shared part: per-class K nearest neighbours, class distances, decision values.

    ``decision_function`` follows :class:`LocalKernelClassifier`: (n, n_classes) of
    negative distances with three or more classes; with two classes the (n,) vector
    ``d_0 - d_1`` (the difference of the two negative distances, positive when the
    query is nearer ``classes_[1]``'s model). :meth:`class_distances` always returns the
    (n, n_classes) distances. Exact ties (e.g. two hulls through the query) follow the
    base rule (:meth:`LocalKernelClassifier._break_ties`): larger training prior, then the
    class of the nearest training sample, then the lower class index — not the label
    order alone; ``decision_function`` raises the tied winner by one ulp, so
    ``argmax(decision_function) == predict`` (sign for two classes) everywhere.
    """

    _numerical_params: tuple[str, ...] = ("n_neighbors",)

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> Any:
        """Store the training data; the local models are built per query.

        The methods are lazy: fitting validates the data, sorts the training rows by class
        and records each class's K (``n_neighbors`` clipped to the class's size); every
        neighbour search, hull and subspace is computed at prediction time.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training samples (sparse input is densified once).
        y : array-like of shape (n_samples,)
            Class labels; at least two classes.
        cache : DistanceCache or None, default=None
            Accepted for the runner's uniform calls; fitting computes no distances.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        TypeError
            When given ``sample_weight``: the local models of Cevikalp et al. have no
            per-sample weights (the message names the class and the reason).
        """
        X, y_index = self._validate_training(X, y)
        check_metric(self.metric, type(self).__name__)
        self.X_ = X
        order = np.argsort(y_index, kind="stable")
        self.class_rows_ = [order[y_index[order] == c] for c in range(self.classes_.size)]
        self.k_per_class_ = np.minimum(self.n_neighbors, self.class_count_)
        clipped = {
            self.classes_[c].item() if hasattr(self.classes_[c], "item") else self.classes_[c]: int(k)
            for c, k in enumerate(self.k_per_class_) if k < self.n_neighbors
        }
        self.info_: dict[str, Any] = {
            "n_neighbors": int(self.n_neighbors),
            "k_clipped": clipped,
            "n_features": int(X.shape[1]),
        }
        self._fit_extra(X)
        return self

    def _fit_extra(self, X: np.ndarray) -> None:
        """Subclass hook (validation that depends on the data)."""

    def _neighbors(
        self, Xq: np.ndarray, cache: DistanceCache | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Training-row indices (n, M) of each class's K_i nearest neighbours (class
        blocks in ``classes_`` order), their squared distances (n, M), and the class
        index of each query's nearest training sample (n,).

        The distance columns are put in class order once (Euclidean without a cache:
        computed against the class-sorted training rows directly, by the expansion of
        :func:`lkm.numerics.kernels.squared_euclidean`, per block of queries), so each class is a
        contiguous block, and the selection (:func:`_k_smallest_by_groups`: ordered by
        (distance, row), ties to the lower training row, as :func:`lkm.numerics.neighbors.k_smallest`)
        runs over blocks of queries (:func:`_select_rows`), on ``n_jobs`` threads."""
        order = np.concatenate(self.class_rows_)
        n = Xq.shape[0]
        if self.metric == "euclidean" and cache is None:
            # computed per block of queries inside the threads (squared_euclidean's
            # expansion), so each block is selected from while it is in cache
            D, Xs = None, self.X_[order]
            norms = np.einsum("ij,ij->i", Xs, Xs)
        else:
            D, norms = sq_dists(Xq, self.X_, cache, self.metric)[:, order], np.empty(0)
        ends = np.cumsum([rows.size for rows in self.class_rows_])
        ks = self.k_per_class_.astype(np.intp)
        idx = np.empty((n, int(self.k_per_class_.sum())), dtype=np.intp)
        dist = np.empty(idx.shape)

        def select(blk: slice) -> None:
            a, b = blk.start, blk.stop
            if COMPILED:  # the same values and order, one row at a time by insertion
                if D is None:
                    Db, qn = Xq[a:b] @ Xs.T, np.einsum("ij,ij->i", Xq[a:b], Xq[a:b])
                else:
                    Db, qn = np.ascontiguousarray(D[a:b]), norms
                select_class_neighbors(Db, qn, norms, D is None, ends, ks, order, idx[a:b], dist[a:b])
                return
            if D is None:
                Db = Xq[a:b] @ Xs.T
                Db *= -2.0
                Db += np.einsum("ij,ij->i", Xq[a:b], Xq[a:b])[:, None]
                Db += norms[None, :]
                np.maximum(Db, 0.0, out=Db)
            else:
                Db = D[a:b]
            col = 0
            for c, rows in enumerate(self.class_rows_):
                k = int(self.k_per_class_[c])
                Dc = Db[:, ends[c] - rows.size : ends[c]]
                # ordered by (distance, position in the class block); positions follow
                # the training row order within a class, so ties go to the lower row
                nearest = _k_smallest_by_groups(Dc, k)
                idx[a:b, col : col + k] = rows[nearest]
                dist[a:b, col : col + k] = np.take_along_axis(Dc, nearest, axis=1)
                col += k

        # the same blocks whatever n_jobs (the products' bits do not depend on it), one BLAS thread
        with blas_threads(1):
            map_row_blocks(select, n, _select_rows(self.X_.shape[0]), self.n_jobs)
        self._zero_identical(Xq, idx, dist, norms)
        firsts = np.concatenate([[0], np.cumsum(self.k_per_class_)[:-1]])
        nearest_class = np.argmin(dist[:, firsts], axis=1)
        return idx, dist, nearest_class

    def _zero_identical(self, Xq: np.ndarray, idx: np.ndarray, dist: np.ndarray, train_sq_norms: np.ndarray) -> None:
        """Set to exactly 0 the squared distance (in ``dist`` (n, M)) of every neighbour
        whose features equal the query's: such a query is that training point. The
        expansion leaves round-off of order ``eps·|x|²`` there, and round-off would pick
        the tie rule's nearest class and (kernel methods) the query's coordinates.
        ``train_sq_norms``: the training rows' squared norms, if computed (else empty)."""
        if not train_sq_norms.size:
            train_sq_norms = np.einsum("ij,ij->i", self.X_, self.X_)
        scale = np.einsum("ij,ij->i", Xq, Xq) + float(np.max(train_sq_norms))
        rows, cols = np.nonzero(dist <= IDENTICAL_FILTER * scale[:, None])
        if rows.size:
            same = (Xq[rows] == self.X_[idx[rows, cols]]).all(axis=1)
            dist[rows[same], cols[same]] = 0.0

    def _class_slices(self) -> list[slice]:
        ends = np.cumsum(self.k_per_class_)
        return [slice(int(e - k), int(e)) for e, k in zip(ends, self.k_per_class_, strict=True)]

    def _distances(
        self, Xq: np.ndarray, cache: DistanceCache | None
    ) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def class_distances(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Return the distance of each query to each class's local model.

        The local model of a class is built from that class's K nearest training samples
        to the query (the affine hull for HKNN, the common vector for LDCV, their
        kernel-feature-space forms for NHKNN and NLDCV); the nearest model's class is
        predicted.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays (the runner passes one); None computes them here.

        Returns
        -------
        distances : ndarray of shape (n_queries, n_classes)
            Non-negative distances, columns in ``classes_`` order, for two classes too.
        """
        return self._distances(self._validate_query(X), cache)[0]

    def _compiled_distances(
        self, X: np.ndarray, Xq: np.ndarray, idx: np.ndarray, blk: slice, out: np.ndarray, pooled: bool
    ) -> None:
        """HKNN's (``pooled=False``) or LDCV's (``pooled=True``) class distances of the
        queries ``blk`` into ``out`` by the compiled small-Gram route
        (:func:`lkm.numerics.local_hulls.span_residuals`; X the training rows,
        C-contiguous), certified at the cutoff :func:`_hull_distances` uses; the queries
        it does not certify take the rank-revealing SVD of :func:`_residual_norms`, as
        in the numpy route."""
        slices = self._class_slices()
        starts = np.array([sl.start for sl in slices], dtype=np.intp)
        ks = self.k_per_class_.astype(np.intp)
        Ib, Qb = idx[blk], np.ascontiguousarray(Xq[blk])  # one compiled layout (C)
        Ob = np.empty((Qb.shape[0], self.classes_.size))
        slow = np.zeros(Ob.shape, dtype=np.bool_)
        ratio = max(FAST_COND, self.rcond) ** 2
        span_residuals(X, Qb, Ib, starts, ks, pooled, ratio, SNAP_ZERO, Ob, slow)
        if pooled and slow[:, 0].any():
            rows = np.flatnonzero(slow[:, 0])
            Z, R = _pooled_differences(X[Ib[rows]], Qb[rows][:, None], slices)
            Ob[rows] = _residual_norms(Z, R[:, 0], self.rcond)
        elif not pooled:
            for c, sl in enumerate(slices):
                rows = np.flatnonzero(slow[:, c])
                if rows.size:
                    N = X[Ib[rows, sl]]
                    Ob[rows, c] = _residual_norms(N[:, 1:] - N[:, :1], Qb[rows] - N[:, 0], self.rcond)
        out[blk] = Ob

    def _to_decision(self, dist: np.ndarray) -> np.ndarray:
        return dist[:, 0] - dist[:, 1] if dist.shape[1] == 2 else -dist

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Return the negative class distances, or their difference for two classes.

        Exact ties are broken as ``predict`` breaks them: the winning class's value is
        raised by one ulp (larger training prior first, then the class of the nearest
        training sample, then the lower class index), so
        ``argmax(decision_function(X)) == predict(X)`` (the sign for two classes) on
        every row.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays; None computes them here.

        Returns
        -------
        decision : ndarray of shape (n_queries,) or (n_queries, n_classes)
            ``-class_distances(X)`` with three or more classes; with two classes
            ``d_0 - d_1``, positive when the query is nearer ``classes_[1]``'s model.
        """
        decision, nearest = self._scaled_decision(X, cache)
        return self._break_ties(decision, nearest)[0]

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        dist, nearest = self._distances(self._validate_query(X), cache)
        return self._to_decision(dist), nearest

    def _predict_and_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``predict(X)`` and ``decision_function(X)`` (None where it would raise), bit for
        bit, from one computation of the class distances (the runner records both)."""
        decision, nearest = self._scaled_decision(X, cache)
        labels, broken = self._labels_and_decision(self._check_finite(decision), nearest)
        return labels, self._finite_or_none(broken)

    @staticmethod
    def _query_block(per_query_bytes: int) -> int:
        """Queries per block when each needs ``per_query_bytes`` of work arrays (:data:`CHUNK_BYTES`)."""
        return max(1, CHUNK_BYTES // max(1, per_query_bytes))


#: Residuals at or below ``SNAP_ZERO·||r||`` are round-off of a point on the subspace
#: (about ``1e-16·||r||``) and become exactly 0, so that queries on several hulls (e.g.
#: every hull when K > d + 1) tie exactly and the documented tie rule decides.
SNAP_ZERO = 1e-12
#: :func:`_residual_norms` takes its fast route for a query when every singular value is
#: above ``FAST_COND·s_max``: the basis ``S⁻¹ Vᵀ V`` from the small triangular factor is
#: then orthonormal to ``eps/FAST_COND`` ≈ 2e-12.
FAST_COND = 1e-4


def _residual_norms(V: np.ndarray, R: np.ndarray, rcond: float) -> np.ndarray:
    """``||(I - P)r||`` for stacks: V (b, m, p) rows spanning a subspace, R (b, p) or
    (b, j, p) vectors; P projects onto the row space of V.

    Rank-revealing: the singular values s of V come from an SVD, and directions with
    ``s <= rcond·s_max`` count as zero, so dependent or repeated rows are harmless.
    When the rows are few (m ≤ p/4), s comes from the m×m triangular factor of a QR of
    Vᵀ and, for queries whose rows are all well conditioned (:data:`FAST_COND`), the
    orthonormal basis is ``S⁻¹ Wᵀ V`` (W the right singular vectors); the other queries
    take ``(Q U)ᵀ`` from a QR ``Vᵀ = QR`` (U the left singular vectors of R: V's right
    singular vectors, orthonormal however small S is; a gesdd SVD of V does the same LQ
    first). More rows: an SVD of V. The residual is formed explicitly (no ``|r|² - |Pr|²``
    cancellation)."""
    single = R.ndim == 2
    Rb = R[:, None, :] if single else R
    b, m, p = V.shape
    if m == 0:
        out: NDArray[np.float64] = np.linalg.norm(Rb, axis=-1)
        return out[:, 0] if single else out
    basis = np.empty((b, min(m, p), p))
    if 4 * m <= p:
        tri = np.linalg.qr(np.swapaxes(V, 1, 2), mode="r")  # (b, m, m), same singular values as V
        U_R, s, Wt = np.linalg.svd(tri)
        slow = ~(s[:, -1] > FAST_COND * s[:, 0])
        fast = ~slow
        if fast.any():
            basis[fast] = (Wt[fast] / s[fast, :, None]) @ V[fast]
        if slow.any():
            # Vᵀ = Q R and R = U_R S W: V's right singular vectors are the columns of
            # Q U_R, orthonormal whatever S (Q from the slow queries' own QR: the same R)
            Q = np.linalg.qr(np.swapaxes(V[slow], 1, 2))[0]
            keep = s[slow] > rcond * s[slow, :1]
            basis[slow] = np.swapaxes(Q @ U_R[slow], 1, 2) * keep[:, :, None]
    else:
        _, s, Vt = np.linalg.svd(V, full_matrices=False)
        keep = s > rcond * s[:, :1]
        basis[:] = Vt * keep[:, :, None]
    coef = np.einsum("bkp,bjp->bjk", basis, Rb)
    resid = Rb - np.einsum("bjk,bkp->bjp", coef, basis)
    out = np.linalg.norm(resid, axis=-1)
    out[out <= SNAP_ZERO * np.linalg.norm(Rb, axis=-1)] = 0.0  # round-off of an exact 0
    return out[:, 0] if single else out


#: Neighbour coordinates per block of :func:`_hull_distances` (bytes; small enough to
#: stay in cache while the block's Gram matrices, solves and residuals are formed).
HULL_BLOCK_BYTES = 2**20


def _well_conditioned(G: np.ndarray, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """Which of the PSD matrices G (b, m, m) have ``λ_min > ratio·λ_max``, certified
    without an eigensolver, and their inverses (garbage rows elsewhere).

    A batched LU inverse X is checked by its residual: with ``max|G X − I| ≤ 1e-6`` it is
    G⁻¹ to that relative accuracy, so ``tr(G)·tr(X) < 1/ratio`` (up to the 1e-6) bounds
    ``λ_max/λ_min`` (``λ_max ≤ tr G``, ``1/λ_min ≤ tr G⁻¹``) with a margin of at most
    m² (queries near the cutoff take the exact route). A stack with an exactly singular
    matrix (repeated neighbours) makes LAPACK fail: then eigenvalues decide, and the
    inverses of the well-conditioned ones are formed separately."""
    b, m, _ = G.shape
    trace = np.einsum("bii->b", G)
    try:
        with np.errstate(all="ignore"):
            X = np.linalg.inv(G)
            err = np.abs(G @ X - np.eye(m)).max(axis=(1, 2))
            ok = (err <= 1e-6) & (trace * np.einsum("bii->b", X) * (1.0 + 1e-6) < 1.0 / ratio)
        return ok, X
    except np.linalg.LinAlgError:
        w = np.linalg.eigvalsh(G)
        ok = w[:, 0] > ratio * w[:, -1]
        X = np.zeros_like(G)
        if ok.any():
            X[ok] = np.linalg.inv(G[ok])
        return ok, X


def _hull_distances(N: np.ndarray, Q: np.ndarray, rcond: float) -> np.ndarray:
    """HKNN's distances (b,) of queries Q (b, p) to the affine hulls of their neighbours
    N (b, k, p), through the small (b, k-1, k-1) Gram matrices G = ZZᵀ of the difference
    vectors Z (neighbours minus the first one).

    A query whose G has all eigenvalues above ``max(FAST_COND, rcond)²·λ_max`` (the
    singular values of Z above ``max(FAST_COND, rcond)·s_max``; certified by
    :func:`_well_conditioned`, conservatively) takes the fast route: the
    residual of r = x_q - n_1 is formed explicitly, ``r - Zᵀ G⁻¹ Z r``, twice (the second
    pass removes what the first left; G⁻¹ is accurate to about ``eps/FAST_COND²`` ≈ 2e-8,
    so two passes reach round-off, as Gram-Schmidt twice does). The other queries
    (dependent or repeated neighbours, near rank deficiency) take the rank-revealing SVD
    of :func:`_residual_norms`, with the same cutoff ``rcond``."""
    b, k, _ = N.shape
    R = Q - N[:, 0]
    if k == 1:
        distances: NDArray[np.float64] = np.linalg.norm(R, axis=-1)
        return distances
    Z = N[:, 1:] - N[:, :1]
    G = Z @ np.swapaxes(Z, 1, 2)
    fast, Ginv = _well_conditioned(G, max(FAST_COND, rcond) ** 2)
    out = np.empty(b)
    every = bool(fast.all())
    if every or fast.any():
        Zf, Rf, Ginv = (Z, R, Ginv) if every else (Z[fast], R[fast], Ginv[fast])
        resid = Rf
        for _ in range(2):
            coef = np.einsum("bij,bj->bi", Ginv, np.einsum("bid,bd->bi", Zf, resid))
            resid = resid - np.einsum("bid,bi->bd", Zf, coef)
        norms = np.linalg.norm(resid, axis=-1)
        norms[norms <= SNAP_ZERO * np.linalg.norm(Rf, axis=-1)] = 0.0  # round-off of an exact 0
        out[fast] = norms
    if not every:
        out[~fast] = _residual_norms(Z[~fast], R[~fast], rcond)
    return out


def _pooled_differences(N: np.ndarray, Q: np.ndarray, slices: list[slice]) -> tuple[np.ndarray, np.ndarray]:
    """Each class's neighbours minus its first (nearest) one, pooled (b, M - C, p): they
    span the range of the within-class scatter S_W, like the class-centred vectors but
    without their one dependency per class; and the queries Q (b, j, p) minus each
    class's anchor (b, j, C, p), whose projections onto N(S_W) equal those of x_q - μ_i
    (μ_i - x_1 lies in R(S_W))."""
    Z = np.concatenate([N[:, sl][:, 1:] - N[:, sl][:, :1] for sl in slices], axis=1)
    R = np.stack([Q - N[:, sl.start, None] for sl in slices], axis=2)
    return Z, R


class HKNN(_LocalSubspaceClassifier):
    """K-local hyperplane distance nearest neighbour: the nearest local affine hull wins.

    Vincent & Bengio's HKNN [2]_ as described by Cevikalp et al. [1]_ (Sec. II-A). For each class
    i the K nearest training samples of that class (under ``metric``; the hull itself is
    Euclidean, eq. (1)) span the affine hull LH_i (eqs. (1)-(2)); the distance is
    ``||(I - P⁽ⁱ⁾)(x_q - μ_i)||`` (eqs. (3)-(5)) with P⁽ⁱ⁾ the projection onto the
    difference subspace, spanned by the neighbours minus the nearest one (same span as
    the centred ones, eq. (2); then the distance of x_q minus that anchor), keeping the
    singular values above ``rcond·s_max``. For well-conditioned neighbours the residual
    comes from the small Gram matrix of the difference vectors, refined by a second
    pass; otherwise from a rank-revealing SVD. The paper's inv(ZᵀZ) of eq. (4) is never
    used where it does not exist. K above a class's training count uses all of that
    class (``info_['k_clipped']``: class -> K used).

    Low-dimensional data (fallback, not in the paper): the affine hull of K ≥ d + 1
    neighbours in general position is all of R^d, so every distance would be 0 and the
    tie rule alone would predict (e.g. the larger class everywhere). When some class's
    K_i - 1 ≥ d, ``fit`` warns (naming K and d) and uses K_i = min(K_i, d): hulls of
    dimension d - 1 at most (d = 1: the nearest sample of each class, i.e. 1-NN).
    ``info_['k_effective']`` is the largest K_i used. The paper's settings (USPS d = 256,
    K = 10; image segmentation d = 19, K ≤ 15) never reach it.

    Exact ties (e.g. two hulls through the query) go to the larger training prior, then
    the class of the nearest training sample, then the lower class index.

    Parameters
    ----------
    n_neighbors : int, default=10
        K, the number of nearest training samples of each class that span its hull.
    metric : str, default="euclidean"
        The distance that selects the neighbours: ``"euclidean"`` or a registered
        distance such as ``"tangent"`` (the paper's tangent distance, square images).
    rcond : float, default=1e-10
        Relative rank cutoff: singular values of the difference vectors at or below
        ``rcond·s_max`` count as zero (repeated or dependent neighbours are harmless).
    n_jobs : int or None, default=None
        Threads over blocks of query rows in ``predict``, ``decision_function`` and
        ``class_distances`` (scikit-learn's meaning: None is 1 outside a joblib
        ``parallel_config`` context, -1 is every core). The blocks do not depend on
        ``n_jobs``, so the outputs are bit for bit the same at every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class (the prior used by the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_ : ndarray of shape (n_samples, n_features)
        The training samples (the method is lazy: all work happens per query).
    class_rows_ : list of ndarray
        Training-row indices of each class, in ``classes_`` order.
    k_per_class_ : ndarray of shape (n_classes,)
        The K used for each class.
    info_ : dict
        Facts of the fit and the last prediction: ``n_neighbors``, ``k_clipped`` (class
        -> K used where clipped), ``n_features``, ``k_effective``, and after
        ``predict`` ``tie_share`` (share of exactly tied queries).

    See Also
    --------
    LDCV : The linear local discriminative common vectors of the same paper.
    NHKNN : HKNN in a kernel feature space.

    References
    ----------
    .. [1] H. Cevikalp, D. Larlus, M. Douze and F. Jurie, "Local subspace classifiers:
       linear and nonlinear approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), pp. 57-62, 2007.
    .. [2] P. Vincent and Y. Bengio, "K-local hyperplane and convex distance nearest
       neighbor algorithms", Advances in Neural Information Processing Systems 14, 2002.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from lkm.methods.subspace import HKNN
    >>> X, y = load_digits(return_X_y=True)
    >>> X = X / 16.0
    >>> clf = HKNN(n_neighbors=10).fit(X[:1000:2], y[:1000:2])
    >>> round(clf.score(X[1:1000:2], y[1:1000:2]), 3)
    0.978
    >>> clf.predict(X[1:11:2])
    array([1, 3, 9, 7, 9])
    >>> clf.class_distances(X[1:4:2]).round(2)[:, :4]
    array([[2.97, 0.82, 1.58, 2.45],
           [2.33, 1.71, 1.72, 0.97]])
    """

    sample_weight_refusal = (
        "its distance to the affine hull of each class's K neighbours (Cevikalp et al., eqs. (3)-(5)) has no per-row weights"
    )

    _parameter_constraints: dict[str, list[Any]] = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "metric": [str],
        "rcond": [Interval(Real, 0, 1, closed="neither")],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self, n_neighbors: int = 10, metric: str = "euclidean", rcond: float = DEFAULT_RCOND, n_jobs: int | None = None
    ) -> None:
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.rcond = rcond
        self.n_jobs = n_jobs

    def _fit_extra(self, X: np.ndarray) -> None:
        d = X.shape[1]
        if (self.k_per_class_ > d).any():  # K_i - 1 >= d: the hull can fill R^d
            warnings.warn(
                f"HKNN: n_neighbors K={self.n_neighbors} with d={d} features: affine hulls of K >= d + 1 "
                f"neighbours fill the space (every distance 0); using K={d} (hulls of dimension {d - 1})",
                ParameterClipped, stacklevel=4,  # _fit_extra < fit < base's sample_weight check < caller
            )
            self.k_per_class_ = np.minimum(self.k_per_class_, d)
        self.info_["k_effective"] = int(self.k_per_class_.max())

    def _distances(self, Xq: np.ndarray, cache: DistanceCache | None) -> tuple[np.ndarray, np.ndarray]:
        idx, _, nearest = self._neighbors(Xq, cache)
        n, d = Xq.shape
        out = np.empty((n, self.classes_.size))
        slices = self._class_slices()
        if COMPILED:
            X = np.ascontiguousarray(self.X_)
            with blas_threads(1):
                map_row_blocks(lambda blk: self._compiled_distances(X, Xq, idx, blk, out, pooled=False),
                               n, DISTANCE_ROWS, self.n_jobs)
            return out, nearest
        step = max(1, HULL_BLOCK_BYTES // (8 * int(self.k_per_class_.max()) * d))

        def block(blk: slice) -> None:
            for c, sl in enumerate(slices):
                out[blk, c] = _hull_distances(np.take(self.X_, idx[blk, sl], axis=0), Xq[blk], self.rcond)

        # small blocks, one BLAS thread each (module doc: threaded BLAS slows these tiny
        # batched solves down), spread over n_jobs threads (numpy releases the GIL in the
        # gathers, products and batched solves)
        with blas_threads(1):
            map_row_blocks(block, n, step, self.n_jobs)
        return out, nearest


class LDCV(_LocalSubspaceClassifier):
    """Local discriminative common vectors: the nearest class common vector wins.

    Cevikalp et al. [1]_, Sec. III, eq. (23). The C·K neighbours (K per class) pool their
    within-class difference vectors (each class's neighbours minus its nearest one);
    their span is the range of the local within-class scatter S_W, and the class
    distance is ``||P_NS (x_q - μ_i)||`` with P_NS the projection onto N(S_W) (the
    residual against the pooled differences, through their small Gram matrix where it is
    well conditioned, else an SVD with relative cutoff ``rcond``). N(S_W) is empty once the pooled differences can span the
    input space: ``Σ_i (K_i - 1) ≥ d`` (K·C - C ≥ d with no clipped class). Then every
    distance is 0 and the method is undefined, so ``fit`` raises a one-line
    :class:`~lkm.errors.NotApplicable` naming K, C and d (image segmentation, d = 19,
    C = 7, allows K ≤ 3; the paper's K sweep shows "n/a" there) instead of returning
    tie-broken guesses.

    Fallback when no K ≥ 2 is admissible (C ≥ d with two or more samples per class, e.g.
    two classes in the plane; not in the paper): there is no K to ask for, so instead of
    refusing ``fit`` warns (naming K, C and d) and uses K = 1, where N(S_W) is all of
    R^d and the class distance is the distance to the class's nearest sample (1-NN).
    ``info_['k_effective']`` is the K used.

    Parameters
    ----------
    n_neighbors : int, default=2
        K, the number of nearest training samples of each class; ``C·(K - 1) < d`` is
        needed for a non-empty null space.
    metric : str, default="euclidean"
        The distance that selects the neighbours: ``"euclidean"`` or a registered
        distance such as ``"tangent"``.
    rcond : float, default=1e-10
        Relative rank cutoff of the pooled difference vectors' singular values.
    n_jobs : int or None, default=None
        Threads over blocks of query rows in ``predict``, ``decision_function`` and
        ``class_distances`` (scikit-learn's meaning: None is 1 outside a joblib
        ``parallel_config`` context, -1 is every core). The blocks do not depend on
        ``n_jobs``, so the outputs are bit for bit the same at every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class (the prior used by the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_ : ndarray of shape (n_samples, n_features)
        The training samples (the method is lazy: all work happens per query).
    class_rows_ : list of ndarray
        Training-row indices of each class, in ``classes_`` order.
    k_per_class_ : ndarray of shape (n_classes,)
        The K used for each class.
    info_ : dict
        ``n_neighbors``, ``k_clipped``, ``n_features``, ``k_effective``,
        ``null_space_dim_min`` (d minus the number of pooled difference vectors), and
        after ``predict`` ``tie_share``.

    See Also
    --------
    HKNN : The nearest local affine hull, Sec. II-A of the same paper.
    NLDCV : LDCV in a kernel feature space, with no limit of K by d.

    References
    ----------
    .. [1] H. Cevikalp, D. Larlus, M. Douze and F. Jurie, "Local subspace classifiers:
       linear and nonlinear approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), pp. 57-62, 2007.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from lkm.methods.subspace import LDCV
    >>> X, y = load_digits(return_X_y=True)
    >>> X = X / 16.0
    >>> clf = LDCV(n_neighbors=2).fit(X[:1000:2], y[:1000:2])
    >>> round(clf.score(X[1:1000:2], y[1:1000:2]), 3)
    0.976
    >>> clf.info_["null_space_dim_min"]
    54
    """

    sample_weight_refusal = (
        "its distance to each class's common vector (Cevikalp et al., eq. (23)) has no per-row weights"
    )

    _parameter_constraints: dict[str, list[Any]] = HKNN._parameter_constraints

    def __init__(
        self, n_neighbors: int = 2, metric: str = "euclidean", rcond: float = DEFAULT_RCOND, n_jobs: int | None = None
    ) -> None:
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.rcond = rcond
        self.n_jobs = n_jobs

    def _fit_extra(self, X: np.ndarray) -> None:
        pooled = int((self.k_per_class_ - 1).sum())
        C, d = self.classes_.size, X.shape[1]
        if pooled >= d and int((np.minimum(self.k_per_class_, 2) - 1).sum()) >= d:
            warnings.warn(
                f"LDCV: n_neighbors K={self.n_neighbors} with C={C} classes and d={d} features: no K >= 2 "
                "leaves a within-class null space (eq. (23) needs C·(K-1) < d); using K=1 "
                "(each class's nearest sample: 1-NN)",
                ParameterClipped, stacklevel=4,  # _fit_extra < fit < base's sample_weight check < caller
            )
            self.k_per_class_ = np.ones_like(self.k_per_class_)
            pooled = 0
        self.info_["k_effective"] = int(self.k_per_class_.max())
        if pooled >= d:
            raise NotApplicable(
                f"LDCV: n_neighbors K={self.n_neighbors} with C={C} classes gives {pooled} pooled "
                f"difference vectors >= d={d} features, so the within-class null space is empty "
                f"(eq. (23) needs C·(K-1) < d); use K <= {(d - 1) // C + 1} or NLDCV"
            )
        self.info_["null_space_dim_min"] = d - pooled

    def _distances(self, Xq: np.ndarray, cache: DistanceCache | None) -> tuple[np.ndarray, np.ndarray]:
        idx, _, nearest = self._neighbors(Xq, cache)
        n, d = Xq.shape
        slices = self._class_slices()
        M = idx.shape[1]
        out = np.empty((n, self.classes_.size))
        if COMPILED:
            X = np.ascontiguousarray(self.X_)
            with blas_threads(1):
                map_row_blocks(lambda blk: self._compiled_distances(X, Xq, idx, blk, out, pooled=True),
                               n, DISTANCE_ROWS, self.n_jobs)
            return out, nearest

        def block(blk: slice) -> None:
            N = self.X_[idx[blk]]  # (b, M, d)
            Z, R = _pooled_differences(N, Xq[blk][:, None], slices)
            out[blk] = _residual_norms(Z, R[:, 0], self.rcond)

        with blas_threads(1):
            map_row_blocks(block, n, self._query_block(8 * M * d * 2), self.n_jobs)
        return out, nearest


def _centred_columns(G: NDArray[np.float64]) -> NDArray[np.float64]:
    """``J G`` for a stack G (b, M, M), J = I - 1_M: each column minus its mean."""
    centred: NDArray[np.float64] = G - G.mean(axis=1, keepdims=True)
    return centred


#: What a kernel subspace classifier does with a non-PSD local kernel matrix (``non_psd``).
NON_PSD_REPAIRS = ("shift", "gram", "drop")


class _KernelSubspaceClassifier(_LocalSubspaceClassifier):
    """Kernel PCA of the C·K local neighbours (Sec. II-C, eqs. (12)-(18)) shared by
    :class:`NHKNN` and :class:`NLDCV`.

    Per query: the local kernel matrix G (eq. (14)), centred ``G̃ = (I - 1_M) G (I - 1_M)``
    (eq. (15)) and ``eigh``; eigenvalues above ``rcond²·λ_max`` (and the round-off floor
    ``KPCA_NOISE·M·eps·λ_max``) span R(S_T^Φ), and every point x gets the coordinates ``y(x) = Λ^{-1/2} Uᵀ (l_x - 1_M l_x)`` (eqs. (21)-(22),
    l_x its kernel values with the neighbours). The neighbours' coordinates form the
    local sample; the subclass measures distances there.

    Kernels: ``"gaussian"`` ``exp(-d²/(2σ²)) = exp(-d²/q)`` on ``metric``'s squared
    distance, and ``"linear"``, taken as ``-d²/2`` (its centred form is the linear
    kernel's centred Gram matrix ``(x_m - μ)·(x_n - μ)`` exactly for the Euclidean
    metric; only centred quantities enter). Non-PSD local kernels (possible with a
    non-Euclidean metric such as the tangent distance): when the centred matrix has an
    eigenvalue ``λ_min < -PSD_TOL·λ_max`` the query is counted in
    ``info_['non_psd_local_grams']`` and ``non_psd`` says what is done (readings of the
    paper's remedy, Sec. IV-A): ``"shift"`` adds |λ_min| to G's diagonal (applied to the
    matrix that is decomposed, eq. (15); the smallest shift that makes it PSD),
    ``"gram"`` adds the most negative eigenvalue of the uncentred local kernel matrix,
    ``"drop"`` adds nothing (kernel PCA keeps the positive eigenvalues only).
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "kernel": [StrOptions({"gaussian", "linear"})],
        "sigma": SIGMA_CONSTRAINT,
        "q": [Interval(Real, 0, None, closed="neither"), None],
        "metric": [str],
        "rcond": [Interval(Real, 0, 1, closed="neither")],
        "non_psd": [StrOptions(set(NON_PSD_REPAIRS))],
        "n_jobs": [Integral, None],
    }
    conditional_params = {"sigma": ("kernel", ("gaussian",)), "q": ("kernel", ("gaussian",))}
    _numerical_params = ("n_neighbors", "sigma", "q")

    def _fit_extra(self, X: np.ndarray) -> None:
        # identical training rows share a label (their features coincide: exact null
        # directions of every local kernel matrix they both enter)
        self._row_group = np.unique(X, axis=0, return_inverse=True)[1].reshape(-1).astype(np.intp)
        if self.q is not None:
            self.sigma_ = math.sqrt(self.q / 2.0)
        self.info_["sigma"] = self.sigma_
        self.info_["q"] = 2.0 * self.sigma_ * self.sigma_
        self.info_["non_psd_local_grams"] = 0

    def _kernel(self, D: np.ndarray) -> np.ndarray:
        if self.kernel == "linear":
            return -0.5 * D
        return gaussian_from_sq(D, self.sigma_)

    def _local_coordinates(
        self, idx: np.ndarray, dq: np.ndarray, on: np.ndarray, D_train: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Kernel-PCA coordinates of one block: neighbours (b, M, r), query (b, r), with
        the columns beyond each query's rank set to 0, and the number of non-PSD grams.
        ``on``: as :meth:`_position_on_neighbour`; ``D_train``: the training rows' squared
        distances, if computed, to gather from."""
        A, JG, n_bad = self._local_basis(idx, D_train)
        Yn = np.swapaxes(A @ JG, 1, 2)  # (b, M neighbours, M coords)
        groups = self._groups_of(idx)
        first = np.argmax(groups[:, :, None] == groups[:, None, :], axis=2)  # (b, M)
        Yn = np.take_along_axis(Yn, first[:, :, None], axis=1)  # identical neighbours: bit-equal rows
        Yq = self._query_coordinates(A, dq)
        rows = np.flatnonzero(on >= 0)
        Yq[rows] = Yn[rows, on[rows]]
        return Yn, Yq, n_bad

    def _position_on_neighbour(self, Xq: np.ndarray, idx: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """For each query, the first position among its neighbours (idx (n, M), squared
        distances dq) of a training row whose features equal the query's, -1 where none.
        Such a query is that point and takes that neighbour's coordinates, bit for bit:
        its distance to every hull through the point is then exactly 0, and ties between
        classes that both hold the point go to the tie rule, not to round-off."""
        on = np.full(idx.shape[0], -1, dtype=np.intp)
        rows, cols = np.nonzero(dq == 0.0)  # row-major: each query's positions ascending
        if rows.size:
            same = (Xq[rows] == self.X_[idx[rows, cols]]).all(axis=1)
            rows, cols = rows[same], cols[same]
            first = np.unique(rows, return_index=True)[1]
            on[rows[first]] = cols[first]
        return on

    def _query_coordinates(self, A: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """``y(x) = A J l_x`` (b, r) of queries with squared distances dq (b, M) to the
        neighbours, in each query's own basis A (b, M, M), or in one shared basis (1, M, M)."""
        lq = self._kernel(dq)
        lq -= lq.mean(axis=1, keepdims=True)  # J l_x
        coordinates: NDArray[np.float64] = lq @ A[0].T if A.shape[0] == 1 else np.einsum("brm,bm->br", A, lq)
        return coordinates

    def _local_basis(self, idx: np.ndarray, D_train: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
        """For each neighbourhood (rows of idx, (b, M)): ``A`` (b, M, M), whose rows are
        ``Λ^{-1/2}uᵀ`` (zero beyond the rank), so that ``y(x) = A J l_x`` (eqs. (21)-(22));
        the centred columns ``J G`` (b, M, M); and the number of non-PSD local grams."""
        b, M = idx.shape
        if D_train is not None:
            Dnn = D_train[idx[:, :, None], idx[:, None, :]]  # (b, M, M)
        else:
            uniq, inv = np.unique(idx, return_inverse=True)
            inv = inv.reshape(b, M)
            DU = DISTANCES[self.metric](self.X_[uniq], None)
            Dnn = DU[inv[:, :, None], inv[:, None, :]]
        G = self._kernel(Dnn)
        JG = _centred_columns(G)  # J G, J = I - 1_M (eq. (15)): O(M²), not a product
        Gc = _centred_columns(np.swapaxes(JG, 1, 2))  # J G J (G symmetric)
        w, U = np.linalg.eigh(Gc)
        top = np.maximum(w[:, -1:], np.finfo(np.float64).tiny)
        bad = w[:, 0] < -PSD_TOL * top[:, 0]
        n_bad = int(bad.sum())
        if n_bad and self.non_psd != "drop":
            # "shift": the centred matrix's most negative eigenvalue (the smallest shift that
            # makes what eq. (15) decomposes PSD); "gram": the kernel matrix's own, as the
            # paper words it (Sec. IV-A)
            shift = -w[bad, 0] if self.non_psd == "shift" else np.maximum(-np.linalg.eigvalsh(G[bad])[:, 0], 0.0)
            G[bad] += shift[:, None, None] * np.eye(M)
            JG[bad] = _centred_columns(G[bad])
            Gc[bad] = _centred_columns(np.swapaxes(JG[bad], 1, 2))
            w[bad], U[bad] = np.linalg.eigh(Gc[bad])
            top = np.maximum(w[:, -1:], np.finfo(np.float64).tiny)
        # singular values of the centred features above rcond·s_max, and above round-off
        keep = w > max(self.rcond**2, KPCA_NOISE * M * EPS) * top
        scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, w, 1.0)), 0.0)  # (b, M)
        A = np.swapaxes(U, 1, 2) * scale[:, :, None]  # (b, M, M): rows are Λ^{-1/2}uᵀ
        return A, JG, n_bad

    def _distances(self, Xq: np.ndarray, cache: DistanceCache | None) -> tuple[np.ndarray, np.ndarray]:
        idx, dq, nearest = self._neighbors(Xq, cache)
        on = self._position_on_neighbour(Xq, idx, dq)
        n = Xq.shape[0]
        M = idx.shape[1]
        out = np.empty((n, self.classes_.size))
        # Any metric but the Euclidean one (a tangent distance) is the cost itself: up to
        # FULL_TRAIN_GRAM_MAX training rows, all their distances once (persisted, shared by
        # every query, K, q and method on this training set)
        D_train = None
        if self.metric != "euclidean" and self.X_.shape[0] <= FULL_TRAIN_GRAM_MAX:
            D_train = sq_dists(self.X_, self.X_, cache, self.metric)
        with blas_threads(1):
            if SHARE_WHOLE_CLASSES and (self.k_per_class_ == self.class_count_).all():
                n_bad, n_empty = self._whole_class_distances(idx, dq, on, D_train, out)
            elif CHOLESKY_KPCA and self.kernel == "gaussian" and self.X_.shape[0] <= CHOLESKY_TRAIN_MAX:
                # the training rows' kernel once per prediction (Euclidean: not kept in the
                # cache, an n² array per training set; the kernel overwrites the distances)
                if D_train is not None:
                    K_train = self._kernel(D_train)
                else:
                    D_own = DISTANCES[self.metric](self.X_, None)
                    K_train = gaussian_from_sq(D_own, self.sigma_, out=D_own)

                def cholesky_block(blk: slice) -> tuple[int, int]:
                    out[blk], bad, empty = self._cholesky_block(idx[blk], dq[blk], on[blk], K_train, D_train)
                    return bad, empty

                counts = map_row_blocks(cholesky_block, n, self._query_block(8 * M * M), self.n_jobs)
                n_bad, n_empty = sum(c[0] for c in counts), sum(c[1] for c in counts)
            else:
                # the union of a block's neighbours gets one distance matrix, about (b·M)²
                # entries for b·M² needed: Euclidean ones are cheap BLAS (keep b·M near
                # 2048); other metrics gather from D_train, else one query at a time
                step = max(1, 2048 // M) if self.metric == "euclidean" or D_train is not None else 1

                def block(blk: slice) -> tuple[int, int]:
                    Yn, Yq, bad = self._local_coordinates(idx[blk], dq[blk], on[blk], D_train)
                    out[blk], empty = self._feature_distances(Yn, Yq)
                    return bad, empty

                counts = map_row_blocks(block, n, step, self.n_jobs)
                n_bad, n_empty = sum(c[0] for c in counts), sum(c[1] for c in counts)
        self.info_["non_psd_local_grams"] = n_bad
        if self._counts_empty:
            self.info_["empty_null_space"] = n_empty
        return out, nearest

    def _cholesky_block(
        self, idx: np.ndarray, dq: np.ndarray, on: np.ndarray, K_train: np.ndarray, D_train: np.ndarray | None
    ) -> tuple[np.ndarray, int, int]:
        """Class distances (b, C) of one block of queries (neighbours idx, squared
        distances dq (b, M), ``on`` as :meth:`_position_on_neighbour`) by
        :data:`CHOLESKY_KPCA`'s route, K_train the training rows'
        kernel matrix; the queries it does not certify take :meth:`_local_coordinates`
        (``eigh``). Returns them with the non-PSD and empty-null-space counts."""
        b, M = idx.shape
        cutoff = max(self.rcond**2, KPCA_NOISE * M * EPS)
        lq = self._kernel(dq)
        Yn, Yq = np.empty((b, M, M)), np.empty((b, M))
        ok = isometric_block(K_train, idx, lq, on, self._groups_of(idx), cutoff, Yn, Yq)
        out = np.empty((b, self.classes_.size))
        n_bad = n_empty = 0
        if ok.all():
            out[:], n_empty = self._isometric_distances(Yn, Yq, idx)
        elif ok.any():
            out[ok], n_empty = self._isometric_distances(Yn[ok], Yq[ok], idx[ok])
        if not ok.all():
            slow = ~ok
            Yn_s, Yq_s, n_bad = self._local_coordinates(idx[slow], dq[slow], on[slow], D_train)
            out[slow], empty = self._feature_distances(Yn_s, Yq_s)
            n_empty += empty
        return out, n_bad, n_empty

    def _groups_of(self, rows: np.ndarray) -> np.ndarray:
        """Labels of the training ``rows`` equal exactly for identical rows (computed
        here for an estimator fitted before they were recorded in ``fit``)."""
        if getattr(self, "_row_group", None) is None:
            self._row_group = np.unique(self.X_, axis=0, return_inverse=True)[1].reshape(-1).astype(np.intp)
        groups: np.ndarray = self._row_group[rows]
        return groups

    def _isometric_distances(self, Yn: np.ndarray, Yq: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, int]:
        """Class distances from coordinates isometric to kernel PCA's (Yn (b, M, M), Yq
        (b, M), the neighbours idx (b, M)): :meth:`_feature_distances` unless a subclass
        has a faster exact route."""
        return self._feature_distances(Yn, Yq)

    def _whole_class_distances(
        self, idx: np.ndarray, dq: np.ndarray, on: np.ndarray, D_train: np.ndarray | None, out: np.ndarray
    ) -> tuple[int, int]:
        """Class distances into ``out`` when K reaches every class's size: every query's
        neighbourhood is the whole training set (in its own order), so one kernel PCA
        serves all queries, exactly the same subspaces as the per-query route (the
        coordinates differ by an orthogonal change of basis and the anchors by a point of
        the same hull, so the distances agree to round-off). The training rows are taken in
        class blocks, each sorted by content, so the result does not depend on the order
        of the training rows. Returns the non-PSD and empty-null-space counts (per query)."""
        n = dq.shape[0]
        rows = [r[np.lexsort(self.X_[r].T[::-1])] for r in self.class_rows_]
        canonical = np.concatenate(rows)
        where = np.empty(self.X_.shape[0], dtype=np.intp)
        where[canonical] = np.arange(canonical.size)
        dq_canonical = np.empty_like(dq)
        np.put_along_axis(dq_canonical, where[idx], dq, axis=1)
        A, JG, bad = self._local_basis(canonical[None], D_train)
        Yn = np.swapaxes(A @ JG, 1, 2)  # (1, M neighbours, M coords)
        first, inverse = np.unique(self._groups_of(canonical), return_index=True, return_inverse=True)[1:]
        Yn = Yn[:, first[inverse.reshape(-1)]]  # identical rows: bit-equal coordinates

        def block(blk: slice) -> int:
            Yq = self._query_coordinates(A, dq_canonical[blk])
            rows = np.flatnonzero(on[blk] >= 0)
            Yq[rows] = Yn[0, where[idx[blk][rows, on[blk][rows]]]]
            out[blk], empty = self._feature_distances(Yn, Yq)
            return empty

        step = self._query_block(8 * canonical.size * self.classes_.size)
        return n if bad else 0, sum(map_row_blocks(block, n, step, self.n_jobs))

    #: Whether :meth:`_feature_distances` counts queries with an empty null space.
    _counts_empty = False

    def _feature_distances(self, Yn: np.ndarray, Yq: np.ndarray) -> tuple[np.ndarray, int]:
        """Class distances (b, C) from the block's coordinates: neighbours Yn (b, M, r),
        or (1, M, r) shared by every query, and queries Yq (b, r); and the number of
        queries whose null space is empty (every distance 0)."""
        raise NotImplementedError


def _as_stack(Yn: np.ndarray, Yq: np.ndarray) -> np.ndarray:
    """The queries Yq (b, r) as :func:`_residual_norms`' (stack, vectors, r): one vector
    per stack entry (b, 1, r), or all of them against one shared stack entry (1, b, r)."""
    return Yq[None] if Yn.shape[0] == 1 else Yq[:, None]


class NHKNN(_KernelSubspaceClassifier):
    """Nonlinear HKNN: the nearest local hull in a kernel feature space wins.

    Cevikalp et al. [1]_, Sec. II-C, eqs. (12)-(22): HKNN in the kernel feature space,
    restricted to the range of the local total scatter R(S_T^Φ) (kernel PCA of the C·K
    local neighbours).
    Per query, the C·K local neighbours (K per class) give the local kernel matrix G
    (eq. (14)), centred ``G̃ = (I - 1_M) G (I - 1_M)`` (eq. (15)) and eigendecomposed;
    eigenvalues above ``rcond²·λ_max`` (and the round-off floor) span R(S_T^Φ), and
    every point x gets the coordinates ``y(x) = Λ^{-1/2} Uᵀ (l_x - 1_M l_x)``
    (eqs. (21)-(22), l_x its kernel values with the neighbours). Non-PSD local kernel
    matrices (centred eigenvalue ``λ_min < -1e-8·λ_max``) are counted in
    ``info_['non_psd_local_grams']`` and repaired as ``non_psd`` says. When K reaches
    every class's size, every query's neighbourhood is the whole training set and one
    kernel PCA serves all queries (the same subspaces; distances agree to round-off).

    For each class the null space of its scatter in those coordinates (eqs. (16)-(19),
    from an SVD of the class's centred coordinates with cutoff ``rcond``), the common
    vector (eq. (21)) and the query's features (eq. (22)) give the class distance
    ``||Q⁽ⁱ⁾ᵀ(y_q - y_m)||``, eq. (8).

    Linear kernel = HKNN. Write x_q - μ_i = a_i + b with a_i in R(S_T) (the span of the
    centred neighbours) and b orthogonal to it; b is the same for every class (μ_i - μ
    lies in R(S_T)) and every class's difference subspace lies in R(S_T), so
    HKNN's d_i² = NHKNN's d_i² + ||b||²: the distances differ by one per-query constant
    and the predictions coincide (tested on data with d ≥ C·K). This holds for any d;
    when d < C·K, R(S_T) is all of R^d, b = 0 and the distances themselves agree, but once
    K_i - 1 ≥ rank S_T (e.g. K > d) a class's hull fills R(S_T), its distance is 0 in
    HKNN and round-off (~1e-8) here, so exact ties resolve differently. The Gram matrix
    also loses directions with singular values below ≈ 2e-7·s_max that HKNN keeps
    (near-duplicate neighbours). Measured on image segmentation (d = 19 ≥ C·K = 14, 224
    duplicate rows; 10 folds, K = 2): all 2310 predictions agree.

    Parameters
    ----------
    n_neighbors : int, default=15
        K, the number of nearest training samples of each class (clipped to the class's
        size).
    kernel : {"gaussian", "linear"}, default="gaussian"
        ``"gaussian"``: ``exp(-d²/(2σ²)) = exp(-d²/q)`` on ``metric``'s squared distance;
        ``"linear"``: ``-d²/2``, whose centred form is the linear kernel's centred Gram
        matrix exactly for the Euclidean metric (only centred quantities enter).
    sigma : float or "scale", default="scale"
        Gaussian width σ; ``"scale"`` takes scikit-learn's ``gamma="scale"`` width of the
        training data, sqrt(p·Var(X)/2). Unused by the linear kernel.
    q : float or None, default=None
        The paper's width (``k = exp(-d²/q)``); when given it replaces ``sigma``
        (σ = sqrt(q/2)).
    metric : str, default="euclidean"
        The distance that selects the neighbours and enters the kernel:
        ``"euclidean"`` or a registered distance such as ``"tangent"``.
    rcond : float, default=1e-10
        Relative rank cutoff: kernel-PCA eigenvalues at or below ``rcond²·λ_max`` (and
        the round-off floor ``10·M·eps·λ_max``, M local neighbours) and singular values
        of the class (or pooled) scatters at or below ``rcond·s_max`` count as zero.
    non_psd : {"shift", "gram", "drop"}, default="shift"
        What is done with a non-PSD local kernel matrix (possible with a non-Euclidean
        metric; readings of the paper's remedy, Sec. IV-A): ``"shift"`` adds the centred
        matrix's ``|λ_min|`` to G's diagonal (the smallest shift that makes what eq. (15)
        decomposes PSD), ``"gram"`` adds the most negative eigenvalue of the uncentred
        local kernel matrix, ``"drop"`` adds nothing (kernel PCA keeps the positive
        eigenvalues only).
    n_jobs : int or None, default=None
        Threads over blocks of query rows in ``predict``, ``decision_function`` and
        ``class_distances`` (scikit-learn's meaning: None is 1 outside a joblib
        ``parallel_config`` context, -1 is every core). The blocks do not depend on
        ``n_jobs``, so the outputs are bit for bit the same at every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class (the prior used by the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_ : ndarray of shape (n_samples, n_features)
        The training samples (the method is lazy: all work happens per query).
    class_rows_ : list of ndarray
        Training-row indices of each class, in ``classes_`` order.
    k_per_class_ : ndarray of shape (n_classes,)
        The K used for each class.
    sigma_ : float
        The Gaussian width in use (``"scale"`` resolved, or sqrt(q/2)).
    info_ : dict
        ``n_neighbors``, ``k_clipped``, ``n_features``, ``sigma``, ``q`` (= 2σ²),
        ``non_psd_local_grams`` (queries of the last prediction whose local kernel
        matrix was not PSD), and after ``predict`` ``tie_share``.

    See Also
    --------
    HKNN : The same rule in the input space (the linear kernel's predictions).
    NLDCV : Local discriminative common vectors in the same feature space.

    References
    ----------
    .. [1] H. Cevikalp, D. Larlus, M. Douze and F. Jurie, "Local subspace classifiers:
       linear and nonlinear approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), pp. 57-62, 2007.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from lkm.methods.subspace import NHKNN
    >>> X, y = load_digits(return_X_y=True)
    >>> X = X / 16.0
    >>> clf = NHKNN(n_neighbors=5).fit(X[:600:2], y[:600:2])
    >>> round(clf.score(X[1:600:2], y[1:600:2]), 3)
    0.94
    >>> round(clf.sigma_, 3), clf.info_["non_psd_local_grams"]
    (2.13, 0)
    """

    sample_weight_refusal = (
        "its feature-space hull distance (Cevikalp et al., eqs. (8), (12)-(22)) has no per-row weights"
    )

    def __init__(
        self,
        n_neighbors: int = 15,
        kernel: str = "gaussian",
        sigma: float | str = SCALE,
        q: float | None = None,
        metric: str = "euclidean",
        rcond: float = DEFAULT_RCOND,
        non_psd: str = "shift",
        n_jobs: int | None = None,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.sigma = sigma
        self.q = q
        self.metric = metric
        self.rcond = rcond
        self.non_psd = non_psd
        self.n_jobs = n_jobs

    def _isometric_distances(self, Yn: np.ndarray, Yq: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, int]:
        # HKNN in these coordinates, by :func:`_hull_distances`: the small Gram matrix of
        # each class's differences where it is certified well conditioned, the SVD of
        # :func:`_residual_norms` (cutoff rcond) elsewhere, the residual explicit
        # (compiled; identical neighbours have bit-equal coordinates here and are left
        # out of their class's differences: the same hull)
        slices = self._class_slices()
        b, M = idx.shape
        groups = self._groups_of(idx)
        repeated = np.zeros((b, M), dtype=np.bool_)
        for sl in slices:
            g = groups[:, sl]
            repeated[:, sl] = np.tril(g[:, :, None] == g[:, None, :], -1).any(axis=2)
        out, slow = np.empty((b, self.classes_.size)), np.zeros((b, self.classes_.size), dtype=np.bool_)
        starts = np.array([sl.start for sl in slices], dtype=np.intp)
        ratio = max(FAST_COND, self.rcond) ** 2
        hull_residuals_in_coordinates(Yn, Yq, starts, self.k_per_class_.astype(np.intp), repeated, ratio, SNAP_ZERO,
                                      out, slow)
        for c, sl in enumerate(slices):
            rows = np.flatnonzero(slow[:, c])
            if rows.size:
                N = Yn[rows][:, sl]
                out[rows, c] = _residual_norms(N[:, 1:] - N[:, :1], Yq[rows] - N[:, 0], self.rcond)
        return out, 0

    def _feature_distances(self, Yn: np.ndarray, Yq: np.ndarray) -> tuple[np.ndarray, int]:
        out = np.empty((Yq.shape[0], self.classes_.size))
        Q = _as_stack(Yn, Yq)
        for c, sl in enumerate(self._class_slices()):
            V = Yn[:, sl][:, 1:] - Yn[:, sl][:, :1]
            out[:, c] = _residual_norms(V, Q - Yn[:, sl.start, None], self.rcond).reshape(-1)
        return out, 0


class NLDCV(_KernelSubspaceClassifier):
    """Nonlinear local discriminative common vectors: LDCV in a kernel feature space.

    Cevikalp et al. [1]_, Sec. III: the kernel DCV of Cevikalp, Neamtu and Wilkes [2]_ on the C·K local neighbours of each query.
    Per query, the C·K local neighbours (K per class) give the local kernel matrix G
    (eq. (14)), centred ``G̃ = (I - 1_M) G (I - 1_M)`` (eq. (15)) and eigendecomposed;
    eigenvalues above ``rcond²·λ_max`` (and the round-off floor) span R(S_T^Φ), and
    every point x gets the coordinates ``y(x) = Λ^{-1/2} Uᵀ (l_x - 1_M l_x)``
    (eqs. (21)-(22), l_x its kernel values with the neighbours). Non-PSD local kernel
    matrices (centred eigenvalue ``λ_min < -1e-8·λ_max``) are counted in
    ``info_['non_psd_local_grams']`` and repaired as ``non_psd`` says. When K reaches
    every class's size, every query's neighbourhood is the whole training set and one
    kernel PCA serves all queries (the same subspaces; distances agree to round-off).

    In those coordinates: the null space of the pooled within-class scatter (SVD of all
    class-centred coordinates, cutoff ``rcond``), each class's common vector and the
    query's projection; the nearest common vector wins (eq. (23) in feature space). With
    a strictly positive definite kernel (Gaussian, distinct neighbours) that null space
    has dimension C - 1, so K is not limited by d as in :class:`LDCV`. When it is empty
    for a query (linear kernel with small d, or repeated neighbours) every distance is 0
    and the tie rule decides (larger prior, then the nearest sample's class); such
    queries are counted in ``info_['empty_null_space']``.

    Parameters
    ----------
    n_neighbors : int, default=7
        K, the number of nearest training samples of each class (clipped to the class's
        size).
    kernel : {"gaussian", "linear"}, default="gaussian"
        ``"gaussian"``: ``exp(-d²/(2σ²)) = exp(-d²/q)`` on ``metric``'s squared distance;
        ``"linear"``: ``-d²/2``, whose centred form is the linear kernel's centred Gram
        matrix exactly for the Euclidean metric (only centred quantities enter).
    sigma : float or "scale", default="scale"
        Gaussian width σ; ``"scale"`` takes scikit-learn's ``gamma="scale"`` width of the
        training data, sqrt(p·Var(X)/2). Unused by the linear kernel.
    q : float or None, default=None
        The paper's width (``k = exp(-d²/q)``); when given it replaces ``sigma``
        (σ = sqrt(q/2)).
    metric : str, default="euclidean"
        The distance that selects the neighbours and enters the kernel:
        ``"euclidean"`` or a registered distance such as ``"tangent"``.
    rcond : float, default=1e-10
        Relative rank cutoff: kernel-PCA eigenvalues at or below ``rcond²·λ_max`` (and
        the round-off floor ``10·M·eps·λ_max``, M local neighbours) and singular values
        of the class (or pooled) scatters at or below ``rcond·s_max`` count as zero.
    non_psd : {"shift", "gram", "drop"}, default="shift"
        What is done with a non-PSD local kernel matrix (possible with a non-Euclidean
        metric; readings of the paper's remedy, Sec. IV-A): ``"shift"`` adds the centred
        matrix's ``|λ_min|`` to G's diagonal (the smallest shift that makes what eq. (15)
        decomposes PSD), ``"gram"`` adds the most negative eigenvalue of the uncentred
        local kernel matrix, ``"drop"`` adds nothing (kernel PCA keeps the positive
        eigenvalues only).
    n_jobs : int or None, default=None
        Threads over blocks of query rows in ``predict``, ``decision_function`` and
        ``class_distances`` (scikit-learn's meaning: None is 1 outside a joblib
        ``parallel_config`` context, -1 is every core). The blocks do not depend on
        ``n_jobs``, so the outputs are bit for bit the same at every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class (the prior used by the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_ : ndarray of shape (n_samples, n_features)
        The training samples (the method is lazy: all work happens per query).
    class_rows_ : list of ndarray
        Training-row indices of each class, in ``classes_`` order.
    k_per_class_ : ndarray of shape (n_classes,)
        The K used for each class.
    sigma_ : float
        The Gaussian width in use (``"scale"`` resolved, or sqrt(q/2)).
    info_ : dict
        ``n_neighbors``, ``k_clipped``, ``n_features``, ``sigma``, ``q`` (= 2σ²),
        ``non_psd_local_grams`` and ``empty_null_space`` (counts over the last
        prediction's queries), and after ``predict`` ``tie_share``.

    See Also
    --------
    LDCV : The same rule in the input space.
    NHKNN : The nearest local hull in the same feature space.

    References
    ----------
    .. [1] H. Cevikalp, D. Larlus, M. Douze and F. Jurie, "Local subspace classifiers:
       linear and nonlinear approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), pp. 57-62, 2007.
    .. [2] H. Cevikalp, M. Neamtu and M. Wilkes, "Discriminative common vector method
       with kernels", IEEE Transactions on Neural Networks 17(6), pp. 1550-1565, 2006.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from lkm.methods.subspace import NLDCV
    >>> X, y = load_digits(return_X_y=True)
    >>> X = X / 16.0
    >>> clf = NLDCV(n_neighbors=3).fit(X[:600:2], y[:600:2])
    >>> round(clf.score(X[1:600:2], y[1:600:2]), 3)
    0.953
    >>> clf.predict(X[1:11:2])
    array([1, 3, 9, 7, 9])
    """

    sample_weight_refusal = (
        "its feature-space common-vector distance (Cevikalp et al., Sec. III, eq. (23)) has no per-row weights"
    )

    def __init__(
        self,
        n_neighbors: int = 7,
        kernel: str = "gaussian",
        sigma: float | str = SCALE,
        q: float | None = None,
        metric: str = "euclidean",
        rcond: float = DEFAULT_RCOND,
        non_psd: str = "shift",
        n_jobs: int | None = None,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.kernel = kernel
        self.sigma = sigma
        self.q = q
        self.metric = metric
        self.rcond = rcond
        self.non_psd = non_psd
        self.n_jobs = n_jobs

    _counts_empty = True

    def _fit_extra(self, X: np.ndarray) -> None:
        super()._fit_extra(X)
        self.info_["empty_null_space"] = 0

    def _isometric_distances(self, Yn: np.ndarray, Yq: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, int]:
        # per query, compiled: the residual off the pooled within-class differences
        # (exactly dependent ones dropped: the same span) from their certified Gram
        # matrix; the queries not certified take the SVD of :func:`_residual_norms` with
        # the cutoff rcond, as the eigh route
        slices = self._class_slices()
        starts = np.array([sl.start for sl in slices], dtype=np.intp)
        ks = self.k_per_class_.astype(np.intp)
        b, M = idx.shape
        groups = self._groups_of(idx)
        dist, scale, ok = np.empty((b, self.classes_.size)), np.empty(b), np.empty(b, dtype=np.bool_)
        common_vector_distances(
            Yn, Yq, groups, starts, ks, POOLED_RATIO, REFINE_TOL, MAX_PASSES, SNAP_ZERO, dist, scale, ok
        )
        lead, parent = np.empty(M, dtype=np.intp), np.empty(M, dtype=np.intp)
        keep = np.empty(int((ks - 1).sum()), dtype=np.bool_)
        for i in np.flatnonzero(~ok):
            Z, R = _pooled_differences(Yn[i][None], Yq[i][None, None], slices)
            independent_differences(groups[i], starts, ks, lead, parent, keep)
            _, first, back = np.unique(lead[starts], return_index=True, return_inverse=True)
            dist[i] = _residual_norms(Z[:, keep], R[:, 0, first], self.rcond)[0][back.reshape(-1)]
        empty = int((dist.max(axis=1) <= 1e-8 * np.maximum(scale, np.finfo(float).tiny)).sum())
        return dist, empty

    def _feature_distances(self, Yn: np.ndarray, Yq: np.ndarray) -> tuple[np.ndarray, int]:
        Z, R = _pooled_differences(Yn, _as_stack(Yn, Yq), self._class_slices())
        dist = _residual_norms(Z, R.reshape(Z.shape[0], -1, R.shape[-1]), self.rcond).reshape(Yq.shape[0], -1)
        R = R.reshape(dist.shape + R.shape[-1:])
        scale = np.linalg.norm(R, axis=-1).max(axis=1)
        empty = int((dist.max(axis=1) <= 1e-8 * np.maximum(scale, np.finfo(float).tiny)).sum())
        return dist, empty
