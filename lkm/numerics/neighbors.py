"""k-nearest-neighbour backends behind one interface (Tsuji et al., Sec. 5 and 7).

LPL needs the k nearest training patterns of every query; the paper used ANN with
eta = 0 (exact neighbours) and notes that approximate neighbours are acceptable.
Backends:

* ``"exact"`` -- matrix-product scores in blocks of queries × tiles of training rows
  (bounded memory, no query × training matrix), a running k-th-score bound to pick
  candidates, which are ranked by distances recomputed from coordinate differences
  (:func:`tie_ruled_kneighbors`); a :class:`DistanceCache` memoizes the lists.
* ``"annoy"`` -- Spotify's annoy (random projection forests); candidates come from annoy
  and are ranked by exact squared distances recomputed in float64.
* ``"hnswlib"`` -- hnswlib's hierarchical navigable small-world graphs (optional extra
  ``lkm[fast]``); candidates ranked as annoy's.
* ``"approximate"`` -- hnswlib where it is installed, else annoy (:func:`resolve_backend`;
  the fitted backend's ``name`` says which one ran). Specs that name annoy keep annoy
  (Tsuji et al.'s experiment); hnswlib answered 5.4× more queries per second than annoy
  at recall 0.997 against 0.746 on MNIST (issue 41).

Every backend returns ``(sq_dist, idx)`` of shape ``(m, k)`` sorted by ascending
distance, ties broken by the lower training index.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np
from sklearn.utils import check_random_state

from lkm.errors import did_you_mean
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.threads import map_row_blocks, usable_cores

#: Bytes of query × training scores an exact query holds at once per worker thread: a
#: block of at most :data:`QUERY_ROWS` queries against a tile of training rows.
BLOCK_BYTES = 4 * 2**20
#: Queries per block: enough rows for the matrix product to run at BLAS speed (each block
#: reads every training row once).
QUERY_ROWS = 256
#: Bytes of coordinate differences gathered at once when candidates' distances are recomputed
#: (large enough that the per-feature summation loop of :func:`pair_sq_dists` is cheap).
PAIR_BYTES = 16 * 2**20
#: Training rows are split by index modulo this many groups (at least 2k) to bound each
#: query's k-th smallest score from above (:func:`upper_kth`).
SELECT_GROUPS = 256
#: Below this many features the squared norms ride along in the matrix product as an
#: extra column (a copy of the training rows, cheap when they are narrow).
AUGMENT_FEATURES = 64
#: Unit round-off of float64.
_U = np.finfo(np.float64).eps / 2


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


def pair_sq_dists(Q: np.ndarray, X: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``||Q[rows[i]] - X[cols[i]]||²`` from coordinate differences, in bounded chunks.

    The one distance every neighbour list (LPL's, NPPS's) is ranked by and reports. The
    squares are summed feature by feature in a fixed order, so that equal points give
    bit-identical distances wherever they sit in memory and whatever the other pairs
    (a matrix product or a vectorized reduction does not promise that), independent of
    the BLAS and the thread count.
    """
    out = np.empty(rows.size)
    step = max(1, PAIR_BYTES // (8 * max(1, X.shape[1])))
    for lo in range(0, rows.size, step):
        hi = min(lo + step, rows.size)
        diff = np.ascontiguousarray((X[cols[lo:hi]] - Q[rows[lo:hi]]).T)  # (p, pairs)
        np.multiply(diff, diff, out=diff)
        acc = out[lo:hi]
        acc[:] = diff[0] if diff.shape[0] else 0.0
        for f in range(1, diff.shape[0]):
            acc += diff[f]
    return out


def _sq_dists_to_rows(Q: np.ndarray, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """:func:`pair_sq_dists` of every query with its listed training rows, shape of idx."""
    m, k = idx.shape
    return pair_sq_dists(Q, X, np.repeat(np.arange(m), k), idx.ravel()).reshape(m, k)


def _score_margin(p: int, q_sq: np.ndarray, x_sq_max: float) -> np.ndarray:
    """Per-query margin M on the scores ``s_j = |x_j|² - 2 q·x_j`` (matrix product in
    float64) that no round-off can bridge.

    With u the unit round-off, the computed score is within E = 2(p+2)u(|q|² + 3 max|x|²)
    of |x_j - q|² - |q|², and the distance recomputed from differences within
    δ = 2(p+3)u(2|q|² + 2 max|x|²) of |x_j - q|² (Higham's γ_n bounds for sums of n
    products, doubled). A training row whose score exceeds the k-th smallest score by
    more than M = 2(E + δ) is farther, by its recomputed distance, than each of the k
    rows with the smallest scores, so it cannot be in the list.
    """
    return 4.0 * (p + 3) * _U * (3.0 * q_sq + 5.0 * x_sq_max)


#: Unit round-off of float32.
_U32 = float(np.finfo(np.float32).eps) / 2
#: Half the smallest float32 subnormal: the absolute error of a float32 rounding (of an
#: input or a product) that underflows.
_TINY32 = 2.0**-150


@overload
def _score_margin32(p: int, q_sq: np.ndarray, x_sq_max: float, q_abs_max: np.ndarray, x_abs_max: float) -> np.ndarray: ...
@overload
def _score_margin32(p: int, q_sq: float, x_sq_max: float, q_abs_max: float, x_abs_max: float) -> float: ...
def _score_margin32(p: int, q_sq: np.ndarray | float, x_sq_max: float, q_abs_max: np.ndarray | float,
                    x_abs_max: float) -> np.ndarray | float:
    """Per-query margin M on scores computed in float32 (:func:`tie_ruled_kneighbors`'s
    candidate pass with ``float32``) that no round-off can bridge.

    Derivation (u = 2⁻²⁴, float32's unit round-off; |·| Euclidean norms; X = max|x|²,
    Q = |q|²; the exact score is t = |x|² − 2q·x = |x − q|² − |q|²):

    * rounding the inputs: q̃ = fl32(q), x̃ = fl32(x) have |q̃ᵢ − qᵢ| ≤ u|qᵢ| + η and
      |x̃ᵢ − xᵢ| ≤ u|xᵢ| + η (η = 2⁻¹⁵⁰ where a coordinate underflows), so
      |q̃·x̃ − q·x| ≤ (2u + u²)|q||x| + pη(2 + max|qᵢ| + max|xᵢ|);
    * the float32 product of p (p + 1 with the norms as an extra column) terms, in any
      order of summation (BLAS blocks, FMA or not): |fl32(q̃·x̃) − q̃·x̃| ≤ γ_{p+1}(1 + u)²|q||x|
      + (p + 1)η, γ_n = nu/(1 − nu) (Higham, Thm. 3.4), and the scaling by −2 is exact;
    * the norm |x|², computed in float64 and rounded to float32 (u|x|², plus float64's
      γ_p|x|²), and the one float32 addition of the norm to −2q̃·x̃ (u times
      |x|² + 2|q||x|, to first order), or the same terms inside the product's sum.

    With 2|q||x| ≤ Q + X these add up, for pu ≤ 1/2, to at most
    E = 2(p + 5)·u·(Q + X) + 4(p + 1)η(1 + max|qᵢ| + max|xᵢ|). The candidates are then
    ranked by distances recomputed in float64 from differences, within
    δ = 2(p + 3)u₆₄(2Q + 2X) of |x − q|² (:func:`_score_margin`). As there, a training row
    whose float32 score exceeds the k-th smallest float32 score by more than
    M = 2(E + δ) is farther, by its recomputed distance, than each of the k rows with the
    smallest scores (its distance exceeds k-th score + M − E − δ + Q, theirs are at most
    k-th score + E + δ + Q), so it cannot be in the list: every true k-nearest row (by the
    recomputed distance, ties by index) is among the candidates, and the lists are the
    float64 route's, bit for bit.
    """
    E = 2.0 * (p + 5) * _U32 * (q_sq + x_sq_max) + 4.0 * (p + 1) * _TINY32 * (1.0 + q_abs_max + x_abs_max)
    delta = 2.0 * (p + 3) * _U * (2.0 * q_sq + 2.0 * x_sq_max)
    return 2.0 * (E + delta)


def upper_kth(scores: np.ndarray, k: int) -> np.ndarray:
    """An upper bound on each row's k-th smallest score, usually equal to it.

    Minima of groups of columns are entries of the row, so the k-th smallest of at least
    k group minima is at least the row's k-th smallest entry. Groups are the columns by
    index modulo G (G ≥ 2k): the k nearest rarely share one, whatever the training
    order, and the minima are one pass over contiguous memory. Short rows are
    partitioned whole.
    """
    m, n = scores.shape
    groups = _groups(k)
    per_group = n // groups
    if per_group < 2:
        return np.partition(scores, k - 1, axis=1)[:, k - 1]
    return np.partition(_group_mins(scores, groups), k - 1, axis=1)[:, k - 1]


def _groups(k: int) -> int:
    return max(SELECT_GROUPS, 2 * k)


def _group_mins(scores: np.ndarray, groups: int) -> np.ndarray:
    """Minimum of each row over the columns ≡ g (mod groups), whole sets of groups only."""
    m, n = scores.shape
    return scores[:, : n - n % groups].reshape(m, -1, groups).min(axis=1)


def _best_per_row(rows: np.ndarray, cols: np.ndarray, d: np.ndarray, k: int, m: int):
    """The first k pairs of each of the m rows in (distance, column) order: ``(rows,
    cols, d)`` sorted by row, at most k per row.

    Pairs of equal row and distance must come in ascending column order: two stable
    sorts (distance, then row; a radix sort for the small row numbers) keep it, at a
    fraction of a three-key lexsort's time.
    """
    order = np.argsort(d, kind="stable")
    order = order[np.argsort(rows[order].astype(np.uint16 if m <= 2**16 else np.intp), kind="stable")]
    rows, cols, d = rows[order], cols[order], d[order]
    rank = np.arange(rows.size) - np.searchsorted(rows, np.arange(m))[rows]
    keep = rank < k
    return rows[keep], cols[keep], d[keep]


def _block_lists(
    q: np.ndarray,
    X: np.ndarray,
    rhs: np.ndarray,
    add_norms: np.ndarray | None,
    x_sq_max: float,
    x_abs_max: float,
    k: int,
    exclude: np.ndarray | None,
    buffer: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tie_ruled_kneighbors` for one block of queries, tile by tile of training rows.

    Scores are ``[-2q, 1]·rhs`` (``rhs`` the training rows, with their squared norms as
    an extra column, or without, then ``add_norms`` is added), in ``buffer``'s dtype
    (float32 for the single-precision candidate pass, with :func:`_score_margin32`).
    A running upper bound on each query's k-th smallest score (the k-th smallest minimum
    over index groups, :func:`upper_kth`) admits a tile's candidates; the bound only
    falls, so every row within the margin of the final k-th score is admitted. At the end
    the admitted rows beyond the final bound plus margin are dropped and the rest ranked
    by recomputed distance (float64, from ``X``). Heavy ties (many candidates) are pruned
    on the way to each query's k best by (distance, index), which keeps the candidates'
    memory bounded. Candidates stay in ascending column order per query (tiles in order,
    pruned ones first), as :func:`_best_per_row` needs.
    """
    (b, p), n = q.shape, X.shape[0]
    groups = _groups(k)
    width = max(groups, buffer.size // b // groups * groups)
    lhs = np.empty((b, rhs.shape[1]), dtype=buffer.dtype)
    np.multiply(q, -2.0, out=lhs[:, :p])  # float32: q rounded, then scaled by -2 (exact)
    lhs[:, p:] = 1.0
    q_sq = np.einsum("ij,ij->i", q, q)
    if buffer.dtype == np.float64:
        margin = _score_margin(p, q_sq, x_sq_max)
    else:
        margin = _score_margin32(p, q_sq, x_sq_max, np.abs(q).max(axis=1, initial=0.0), x_abs_max)
    mins = np.full((b, groups), np.inf)
    bound = np.full(b, np.inf)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (rows, cols, scores)
    held, budget = 0, max(4 * k * b, b * width // 4)
    kept = (np.empty(0, np.intp), np.empty(0, np.intp), np.empty(0))  # pruned: (rows, cols, d)

    def exact(rows, cols, scores):  # candidates still within the bound, with distances
        inside = scores <= (bound + margin)[rows]
        rows, cols = rows[inside], cols[inside]
        return rows, cols, pair_sq_dists(q, X, rows, cols)

    for tile, lo in enumerate(range(0, n, width)):
        cols = min(width, n - lo)
        S = np.matmul(lhs, rhs[lo : lo + cols].T, out=buffer[: b * cols].reshape(b, cols))
        if add_norms is not None:
            S += add_norms[lo : lo + cols]
        if exclude is not None:
            mine = np.flatnonzero((exclude >= lo) & (exclude < lo + cols))
            S[mine, exclude[mine] - lo] = np.inf
        if n <= width:
            bound = upper_kth(S, k)
        elif cols >= groups:
            np.minimum(mins, _group_mins(S, groups), out=mins)
            if tile & (tile + 1) == 0:  # tiles 0, 1, 3, 7, ...: tighten the bound
                bound = np.partition(mins, k - 1, axis=1)[:, k - 1]
        flat = np.flatnonzero(S <= (bound + margin)[:, None])
        found.append((flat // cols, flat % cols + lo, S.ravel()[flat]))
        held += flat.size
        if held > budget:
            parts = [kept, exact(*map(np.concatenate, zip(*found, strict=True)))]  # kept: lower columns
            c_rows, c_cols, c_d = map(np.concatenate, zip(*parts, strict=True))
            kept = _best_per_row(c_rows, c_cols, c_d, k, b)
            found, held = [], kept[0].size
    if n > width:
        bound = np.partition(mins, k - 1, axis=1)[:, k - 1]
    parts = [kept, exact(*map(np.concatenate, zip(*found, strict=True)))] if found else [kept]
    c_rows, c_cols, c_d = map(np.concatenate, zip(*parts, strict=True))
    _, cols, d = _best_per_row(c_rows, c_cols, c_d, k, b)
    return d.reshape(b, k), cols.reshape(b, k)


def tie_ruled_kneighbors(
    Q: np.ndarray,
    X: np.ndarray,
    k: int,
    exclude: np.ndarray | None = None,
    sq_norms: np.ndarray | None = None,
    precision: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """``(sq_dist, idx)``, shape (m, k): the k nearest rows of ``X`` to each row of ``Q``
    by squared distance recomputed from coordinate differences (:func:`pair_sq_dists`),
    ties broken by the lower training index; exact, in blocks of bounded memory.

    Scores ``|x|² - 2 q·x`` (matrix products, one block of queries × one tile of training
    rows at a time, :data:`BLOCK_BYTES`; with few features one product of [-2q, 1] with
    [x, |x|²], :data:`AUGMENT_FEATURES`) only propose candidates: every training row
    within the round-off margin of :func:`_score_margin` of the k-th smallest score is
    recomputed, so the lists do not depend on the BLAS, its threads, the blocks or the
    training order. ``exclude[i]`` (optional) is a training row left out of query i's
    list; ``sq_norms`` is ``|x|²`` per training row if already at hand.

    ``precision="float32"`` computes the scores in single precision (sgemm, twice
    dgemm's speed, half the memory traffic of the selection) with the margin derived
    again for float32's round-off and the rounding of the inputs
    (:func:`_score_margin32`): the candidates still contain every true neighbour and
    are ranked by the same float64 distances, so the lists are bit-identical to
    ``"float64"``'s. ``"auto"`` takes float32 where it pays and its margin stays narrow
    (:func:`_float32_pays`).

    Blocks run in a small thread pool, each product on one BLAS thread (as scikit-learn's
    brute-force reductions do): a multi-threaded product per block waits for its
    slowest thread, which on a busy core made the query several times slower.
    """
    n, p = X.shape
    m = Q.shape[0]
    if not 1 <= k <= n - (exclude is not None):
        raise ValueError(f"k={k} neighbours requested from {n} rows" + (" (one excluded)" if exclude is not None else ""))
    if precision not in ("auto", "float32", "float64"):
        raise ValueError(f"precision must be 'auto', 'float32' or 'float64', got {precision!r}")
    if sq_norms is None:
        sq_norms = np.einsum("ij,ij->i", X, X)
    x_sq_max = float(sq_norms.max())
    single = precision == "float32" or (precision == "auto" and _float32_pays(Q, X, x_sq_max))
    x_abs_max = float(np.abs(X).max(initial=0.0)) if single else 0.0
    # few features: the norms' addition, a pass over the scores, folded into the product
    aug = p < AUGMENT_FEATURES
    if single:
        rhs = np.empty((n, p + aug), dtype=np.float32)
        rhs[:, :p] = X
        if aug:
            rhs[:, p] = sq_norms
        add_norms = None if aug else sq_norms.astype(np.float32)
    else:
        rhs = np.hstack([X, sq_norms[:, None]]) if aug else X
        add_norms = None if aug else sq_norms
    dtype = np.float32 if single else np.float64
    sq = np.empty((m, k))
    idx = np.empty((m, k), dtype=np.intp)
    workers = min(usable_cores(), MAX_WORKERS)
    # at least one whole set of groups per tile; fewer queries per block if that is large
    rows = max(1, min(QUERY_ROWS, -(-m // workers), BLOCK_BYTES // (8 * _groups(k))))
    size = max(BLOCK_BYTES // 8, rows * _groups(k))

    def block(lo: int) -> None:
        hi = min(lo + rows, m)
        ex = None if exclude is None else exclude[lo:hi]
        sq[lo:hi], idx[lo:hi] = _block_lists(Q[lo:hi], X, rhs, add_norms, x_sq_max, x_abs_max, k, ex,
                                             _score_tile(size, dtype)[:size])

    map_row_blocks(lambda blk: block(blk.start), m, rows, workers)
    return sq, idx


#: The float32 candidate pass is taken from this many features on (measured, issue 41:
#: 0.75-0.86 of the float64 query's time on letter (16 features), spambase (57), USPS
#: (256) and MNIST (784); below a few features the product is a small part of it).
FLOAT32_MIN_FEATURES = 8
#: ... and where its margin (:func:`_score_margin32` at the largest norms) is at most this
#: share of the rows' mean squared distance to their mean: a wider band would admit many
#: candidates, each recomputed from differences (large offsets, e.g. X + 1e4).
FLOAT32_MARGIN_SHARE = 1e-2


def _float32_pays(Q: np.ndarray, X: np.ndarray, x_sq_max: float) -> bool:
    """Whether ``precision="auto"`` takes the float32 candidate pass: enough features
    (:data:`FLOAT32_MIN_FEATURES`), norms far inside float32's range, and a margin
    narrow against the data's spread (:data:`FLOAT32_MARGIN_SHARE`)."""
    n, p = X.shape
    if p < FLOAT32_MIN_FEATURES or n < 2 or not x_sq_max < 1e30:
        return False
    q_sq_max = float(np.einsum("ij,ij->i", Q, Q).max(initial=0.0))
    if not q_sq_max < 1e30:
        return False
    mean = X.mean(axis=0)
    spread = float(np.einsum("ij,ij->", X, X)) / n - float(mean @ mean)  # mean |x - mean|²
    margin = float(_score_margin32(p, np.float64(q_sq_max), x_sq_max, np.float64(np.abs(Q).max(initial=0.0)),
                                   float(np.abs(X).max(initial=0.0))))
    return margin <= FLOAT32_MARGIN_SHARE * spread


#: Threads an exact query uses at most (blocks are independent).
MAX_WORKERS = 4
_TILES = threading.local()


def _score_tile(size: int, dtype: Any = np.float64) -> np.ndarray:
    """This thread's score buffer of at least ``size`` floats of ``dtype``, kept between
    queries (a fresh one costs its page faults on every query)."""
    name = f"scores_{np.dtype(dtype).name}"
    if getattr(_TILES, name, np.empty(0)).size < size:
        setattr(_TILES, name, np.empty(size, dtype=dtype))
    return getattr(_TILES, name)


class ExactNeighbors:
    """Exact k-NN: blocked matrix-product scores, candidates re-ranked by exact distance
    (:func:`tie_ruled_kneighbors`)."""

    name = "exact"

    def fit(self, X: np.ndarray) -> ExactNeighbors:
        self.X_ = np.asarray(X, dtype=np.float64)
        self.sq_norms_ = np.einsum("ij,ij->i", self.X_, self.X_)
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
        cache, the lists are memoized per (query, training) pair for the largest k asked
        so far; a smaller k is their prefix (lists are sorted by (distance, index)). No
        query × training distance matrix is kept.
        """
        X = self.X_
        Q = _check_query(X, Q, k, exclude_self)
        if cache is None:
            return self._query(Q, k, exclude_self)
        lists = cache.memo(("exact_neighbor_lists", exclude_self), dict, Q, X)
        if lists.get("k", 0) < k:
            lists["sq"], lists["idx"] = self._query(Q, k, exclude_self)
            lists["k"] = k
        return lists["sq"][:, :k].copy(), lists["idx"][:, :k].copy()

    def _query(self, Q: np.ndarray, k: int, exclude_self: bool) -> tuple[np.ndarray, np.ndarray]:
        exclude = np.arange(Q.shape[0]) if exclude_self else None
        # a backend pickled before sq_norms_ existed gets its norms computed per query
        return tie_ruled_kneighbors(Q, self.X_, k, exclude, getattr(self, "sq_norms_", None))


#: The distances annoy builds its trees with.
AnnoyMetric = Literal["angular", "euclidean", "manhattan", "hamming", "dot"]


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
        metric: AnnoyMetric = "euclidean",
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
        return rank_candidates(Q, X, idx, np.asarray(short, dtype=np.intp), exclude_self)


def rank_candidates(
    Q: np.ndarray, X: np.ndarray, idx: np.ndarray, short: np.ndarray, exclude_self: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``(sq_dist, idx)`` of an approximate backend's candidate lists ``idx`` (m, k),
    ranked by squared distances recomputed in float64 (:func:`pair_sq_dists`), ties by
    the lower training index. Rows listed in ``short`` (the backend found fewer than k
    candidates) are answered exactly."""
    k = idx.shape[1]
    if short.size:
        idx[short] = tie_ruled_kneighbors(Q[short], X, k, short if exclude_self else None)[1]
    sq = _sq_dists_to_rows(Q, X, idx)
    order = np.lexsort((idx, sq), axis=1)
    return np.take_along_axis(sq, order, axis=1), np.take_along_axis(idx, order, axis=1)


#: hnswlib indices may be shared (a cache); ``set_ef`` then the query must not interleave.
_HNSW_LOCK = threading.Lock()


class HnswNeighbors:
    """Approximate k-NN with hnswlib (Malkov & Yashunin's HNSW graphs); ``M`` links per
    node, ``ef_construction`` and ``ef`` the candidate lists of the build and the query.

    The graph is built on one thread: with several, the insertion order, hence the
    graph, depends on scheduling. ``random_state`` seeds the level draws, so a fitted
    index is reproducible. Queries are independent of each other (each only reads the
    graph), so they run on up to :data:`MAX_WORKERS` threads without changing the
    answer. hnswlib proposes candidates in float32; they are ranked as annoy's
    (:func:`rank_candidates`). Fitted indices pickle natively (hnswlib ≥ 0.7).
    """

    name = "hnswlib"

    def __init__(self, M: int = 16, ef_construction: int = 200, ef: int = 50, random_state: Any = None) -> None:
        self.M = M
        self.ef_construction = ef_construction
        self.ef = ef
        self.random_state = random_state

    def fit(self, X: np.ndarray) -> HnswNeighbors:
        hnswlib = _import_hnswlib()
        self.X_ = np.asarray(X, dtype=np.float64)
        n, p = self.X_.shape
        seed = 100 if self.random_state is None else int(check_random_state(self.random_state).randint(2**31 - 1))
        index = hnswlib.Index(space="l2", dim=p)
        index.init_index(max_elements=max(1, n), M=self.M, ef_construction=self.ef_construction, random_seed=seed)
        index.add_items(self.X_.astype(np.float32), np.arange(n), num_threads=1)  # see the class doc
        self.index_ = index
        return self

    def kneighbors(
        self,
        Q: np.ndarray | None,
        k: int,
        exclude_self: bool = False,
        cache: DistanceCache | None = None,
        ef: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Same contract as :meth:`ExactNeighbors.kneighbors` (``cache`` is not used);
        ``ef`` overrides the constructor's for this query (the graph does not depend on it).
        hnswlib searches with max(ef, k + exclude_self)."""
        X = self.X_
        Q = _check_query(X, Q, k, exclude_self)
        want = k + 1 if exclude_self else k
        data = Q.astype(np.float32)
        threads = min(usable_cores(), MAX_WORKERS)
        with _HNSW_LOCK:
            self.index_.set_ef(self.ef if ef is None else ef)
            try:
                found = self.index_.knn_query(data, want, num_threads=threads)[0].astype(np.intp)
                short: list[int] = []
            except RuntimeError:  # some query found fewer than want: ask row by row
                found, short = np.zeros((Q.shape[0], want), dtype=np.intp), []
                for i in range(Q.shape[0]):
                    try:
                        found[i] = self.index_.knn_query(data[i : i + 1], want, num_threads=1)[0]
                    except RuntimeError:
                        short.append(i)
        if exclude_self:  # drop row i from its own list (stable: the others keep their order)
            others = found != np.arange(Q.shape[0])[:, None]
            found = np.take_along_axis(found, np.argsort(~others, axis=1, kind="stable"), axis=1)
        return rank_candidates(Q, X, np.ascontiguousarray(found[:, :k]), np.asarray(short, dtype=np.intp), exclude_self)


def _import_hnswlib() -> Any:
    try:
        import hnswlib
    except ImportError as err:
        raise ImportError("neighbors='hnswlib' needs hnswlib: pip install 'lkm[fast]'") from err
    return hnswlib


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


#: The backend name for "an approximate index, the best installed": hnswlib where it
#: imports, else annoy (:func:`resolve_backend`).
APPROXIMATE = "approximate"


@functools.lru_cache(maxsize=1)
def hnswlib_available() -> bool:
    """Whether hnswlib imports (the optional extra ``lkm[fast]``); looked up once."""
    try:
        _import_hnswlib()
    except ImportError:
        return False
    return True


def resolve_backend(kind: str) -> str:
    """The backend a name stands for: ``"approximate"`` is ``"hnswlib"`` where hnswlib is
    installed, else ``"annoy"``; every other name is itself."""
    if kind != APPROXIMATE:
        return kind
    return "hnswlib" if hnswlib_available() else "annoy"


def _approximate(**params: Any) -> AnnoyNeighbors | HnswNeighbors:
    """The :data:`APPROXIMATE` backend: hnswlib's or annoy's, given the parameters of
    both; those of the other one are dropped (e.g. ``n_trees`` when hnswlib runs)."""
    cls = NEIGHBOR_BACKENDS[resolve_backend(APPROXIMATE)]
    accepted = inspect.signature(cls).parameters
    return cls(**{key: value for key, value in params.items() if key in accepted})


#: Neighbour backends by the name a spec uses (constructors: ``"approximate"`` returns
#: the hnswlib or annoy backend, whose ``name`` is the one that runs).
NEIGHBOR_BACKENDS: dict[str, Callable[..., Any]] = {
    "exact": ExactNeighbors, "annoy": AnnoyNeighbors, "hnswlib": HnswNeighbors, APPROXIMATE: _approximate,
}


def make_neighbors(kind: str, **params: Any) -> ExactNeighbors | AnnoyNeighbors | HnswNeighbors:
    """Instantiate the backend ``kind`` ("exact", "annoy", "hnswlib" or "approximate")
    with its parameters; for "approximate" those of the backend not chosen are ignored."""
    if kind not in NEIGHBOR_BACKENDS:
        raise ValueError(f"unknown neighbour backend '{kind}'" + did_you_mean(kind, NEIGHBOR_BACKENDS))
    return NEIGHBOR_BACKENDS[kind](**params)


def neighbor_recall(approx_idx: np.ndarray, exact_idx: np.ndarray) -> float:
    """Fraction of the true k nearest neighbours found by an approximate search."""
    approx_idx = np.asarray(approx_idx)
    exact_idx = np.asarray(exact_idx)
    hits = sum(np.intersect1d(a, e).size for a, e in zip(approx_idx, exact_idx, strict=True))
    return hits / exact_idx.size
