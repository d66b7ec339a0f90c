"""Compiled per-query work of the local subspace classifiers of Cevikalp, Larlus, Douze
and Jurie, "Local subspace classifiers: linear and nonlinear approaches" (MLSP 2007).

Two numba kernels, each a loop over queries with no Python in it, compiled once
(``cache=True``: later processes load the machine code from ``__pycache__``) and run
with the GIL released (``nogil=True``), so the caller's threads over row blocks
(:func:`lkm.numerics.threads.map_row_blocks`) run them in parallel:

- :func:`select_class_neighbors`: each class's K nearest training samples of every
  query, by insertion over one row of BLAS distances at a time (ordered by (distance,
  position), ties to the lower position; only the entries below a threshold from group
  minima are visited), the squared-Euclidean expansion applied on the fly; the distance
  product itself stays a BLAS gemm.
- :func:`span_residuals`: the distance of vectors to the span of a few difference
  vectors Z, ``||r - Zᵀ G⁻¹ Z r||`` with G = ZZᵀ, formed explicitly and twice (the
  second pass removes what the first left), G by Cholesky. HKNN's distance to the
  affine hull of a class's K neighbours (eqs. (3)-(5): Z the neighbours minus the
  nearest one, r the query minus it) and LDCV's distance to a class's common vector
  (eq. (23): Z every class's differences pooled, the span of the within-class scatter,
  r the query minus each class's nearest neighbour) are both this residual.

The small Gram matrix is used only where it is safe: a query whose G is certified to
have ``λ_min > ratio·λ_max`` (``tr(G)·||L⁻¹||_F² < 1/ratio``: λ_max ≤ tr G and
1/λ_min ≤ tr G⁻¹ = ||L⁻¹||_F²) is computed here; the others (repeated or dependent
neighbours, near rank deficiency) are flagged for the caller's rank-revealing SVD.
Residuals at or below ``snap·||r||`` become exactly 0 (round-off of a query on the
subspace), so exact ties stay exact.

Two gathers for :mod:`lkm.numerics.kernel_pca` (NHKNN and NLDCV): :func:`gather_gram`
(a query's local kernel matrix from the training rows' kernel, with its row means) and
:func:`centre_gram` (its double centring in place).

Imports only numpy and numba.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba
import numpy as np


def _jit(**flags: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, nogil=True, **flags)``; where no cache directory is
    writable (a read-only install with no writable ``NUMBA_CACHE_DIR`` or home), numba
    refuses ``cache=True`` at decoration, and the function is compiled per process
    instead, silently."""

    def decorate(func: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, nogil=True, **flags)(func)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, nogil=True, **flags)(func)

    return decorate


@_jit(fastmath={"reassoc"})
def _dot(A: np.ndarray, i: int, B: np.ndarray, j: int) -> float:
    """``A[i] · B[j]`` (rows of length p), summed in SIMD lanes (reassociation allowed:
    the order of the additions is the compiled loop's, the same on every call)."""
    s = 0.0
    for t in range(A.shape[1]):
        s += A[i, t] * B[j, t]
    return s


#: Columns per group in :func:`select_class_neighbors`'s first pass (and in the numpy
#: route's :func:`lkm.methods.subspace._k_smallest_by_groups`).
SELECT_GROUP = 8


@_jit()
def select_class_neighbors(
    D: np.ndarray,
    row_norms: np.ndarray,
    col_norms: np.ndarray,
    expand: bool,
    class_ends: np.ndarray,
    ks: np.ndarray,
    order: np.ndarray,
    idx: np.ndarray,
    dist: np.ndarray,
) -> None:
    """Each class's ``ks[c]`` smallest entries of every row of ``D`` (b, n), whose
    columns are the training rows in class blocks ending at ``class_ends``.

    With ``expand`` the entries are ``max(-2·D[i, j] + row_norms[i] + col_norms[j], 0)``
    (D the product Xq·Xsᵀ: squared Euclidean distances, added in that order, as numpy
    does), else D's own values. Per class, the selected columns are ordered by (value,
    position) and written as training rows ``order[column]`` into ``idx`` (b, Σ ks) and
    their values into ``dist``, class blocks in order (Cevikalp et al., Sec. II-A: the K
    nearest samples of each class).

    Two passes per row and class: the minima of groups of :data:`SELECT_GROUP`
    consecutive entries (a loop without branches), and their k-th smallest t (each is an
    entry, so at least k entries are ≤ t: the k smallest are among them); then only the
    groups whose minimum is ≤ t are scanned, their entries ≤ t inserted in column order.
    The result is a full scan's; about two thirds of its time (USPS: 10 of ~730 per
    class)."""
    kmax = 0
    longest = 0
    start = 0
    for c in range(ks.size):
        kmax = max(kmax, ks[c])
        longest = max(longest, class_ends[c] - start)
        start = class_ends[c]
    top = np.empty(kmax)
    group_min = np.empty(longest // SELECT_GROUP + 1)
    for i in range(D.shape[0]):
        col = 0
        start = 0
        qn = row_norms[i] if expand else 0.0
        for c in range(class_ends.size):
            k = ks[c]
            end = class_ends[c]
            groups = _group_minima(D, i, expand, qn, col_norms, start, end, group_min)
            t = _kth_smallest(group_min, groups, k, top)
            if expand and t < 0.0:  # the minima are not clipped; the entries are
                t = 0.0
            found = _insert_below(D, i, expand, qn, col_norms, start, end, group_min, t, k, idx, dist, col)
            if found < k:  # not by the argument above; a full scan, should round-off ever disagree
                _insert_below(D, i, expand, qn, col_norms, start, end, group_min, np.inf, k, idx, dist, col)
            for q in range(k):
                idx[i, col + q] = order[idx[i, col + q]]
            col += k
            start = end


@_jit()
def _insert_below(D: np.ndarray, i: int, expand: bool, qn: float, col_norms: np.ndarray, start: int, end: int,
                  group_min: np.ndarray, t: float, k: int, idx: np.ndarray, dist: np.ndarray, col: int) -> int:
    """The second pass of :func:`select_class_neighbors` for row i and the class in
    columns start:end: its entries ≤ t (in groups whose minimum is ≤ t) inserted in
    column order into the k smallest, ``idx[i, col:col + k]`` and ``dist`` (positions,
    not yet training rows); returns how many were kept (k, or fewer when fewer are ≤ t).
    With t = +inf every entry is visited, as a plain scan would (NaN included)."""
    everything = t == np.inf
    filled = 0
    worst = np.inf  # the k-th smallest so far (any value enters while filling)
    g = 0
    for lo in range(start, end, SELECT_GROUP):
        if everything or group_min[g] <= t:
            for j in range(lo, min(lo + SELECT_GROUP, end)):
                v = D[i, j]
                if expand:
                    v = v * -2.0 + qn + col_norms[j]
                    if v < 0.0:
                        v = 0.0
                if not (everything or v <= t):
                    continue
                if filled == k:
                    if not v < worst:  # ties keep the earlier column
                        continue
                    pos = k - 1
                else:
                    pos = filled
                    filled += 1
                while pos > 0 and dist[i, col + pos - 1] > v:
                    dist[i, col + pos] = dist[i, col + pos - 1]
                    idx[i, col + pos] = idx[i, col + pos - 1]
                    pos -= 1
                dist[i, col + pos] = v
                idx[i, col + pos] = j
                if filled == k:
                    worst = dist[i, col + k - 1]
        g += 1
    return filled


@_jit()
def _group_minima(D: np.ndarray, i: int, expand: bool, qn: float, col_norms: np.ndarray, start: int, end: int,
                  out: np.ndarray) -> int:
    """``out[g]``: the minimum of row i's entries (with ``expand``,
    ``-2·D[i, j] + qn + col_norms[j]``, not clipped at 0) over the g-th group of
    :data:`SELECT_GROUP` columns from ``start`` (the last one shorter); returns the
    number of groups."""
    groups = 0
    for lo in range(start, end, SELECT_GROUP):
        m = np.inf
        for j in range(lo, min(lo + SELECT_GROUP, end)):
            m = min(m, D[i, j] * -2.0 + qn + col_norms[j] if expand else D[i, j])
        out[groups] = m
        groups += 1
    return groups


@_jit()
def _kth_smallest(values: np.ndarray, n: int, k: int, top: np.ndarray) -> float:
    """The k-th smallest of ``values[:n]`` (+inf when n < k), by insertion into ``top``."""
    filled = 0
    worst = np.inf
    for j in range(n):
        v = values[j]
        if filled == k:
            if not v < worst:
                continue
            pos = k - 1
        else:
            pos = filled
            filled += 1
        while pos > 0 and top[pos - 1] > v:
            top[pos] = top[pos - 1]
            pos -= 1
        top[pos] = v
        if filled == k:
            worst = top[k - 1]
    return worst


@_jit()
def _cholesky_certified(G: np.ndarray, m: int, L: np.ndarray, dinv: np.ndarray, col: np.ndarray, ratio: float) -> bool:
    """Cholesky factor L of G[:m, :m] (lower, in L's leading block; ``dinv`` the
    reciprocals of its diagonal) when G is certified to have ``λ_min > ratio·λ_max``
    (``tr(G)·||L⁻¹||_F² < 1/ratio``); ``col`` is work space of length m."""
    trace = 0.0
    for j in range(m):
        trace += G[j, j]
        s = G[j, j]
        for t in range(j):
            s -= L[j, t] * L[j, t]
        if not s > 0.0:
            return False
        ljj = math.sqrt(s)
        L[j, j] = ljj
        dinv[j] = 1.0 / ljj
        for i in range(j + 1, m):
            s = G[i, j]
            for t in range(j):
                s -= L[i, t] * L[j, t]
            L[i, j] = s * dinv[j]
    # ||L⁻¹||_F² by forward substitution, column by column of the identity
    frob = 0.0
    for e in range(m):
        for i in range(e, m):
            s = 1.0 if i == e else 0.0
            for t in range(e, i):
                s -= L[i, t] * col[t]
            col[i] = s * dinv[i]
            frob += col[i] * col[i]
    return trace * frob * (1.0 + 1e-6) < 1.0 / ratio


@_jit()
def _residual(
    Z: np.ndarray, m: int, L: np.ndarray, dinv: np.ndarray, r: np.ndarray, work: np.ndarray, coef: np.ndarray
) -> float:
    """``||r - Zᵀ G⁻¹ Z r||`` for Z's first m rows (G = L Lᵀ) and r (1, p), formed twice:
    each pass projects out what the previous one left (Gram-Schmidt twice). ``work``
    (1, p) holds the residual; r is not changed."""
    p = r.shape[1]
    for t in range(p):
        work[0, t] = r[0, t]
    for _ in range(2):
        for j in range(m):
            coef[j] = _dot(Z, j, work, 0)
        for j in range(m):  # L y = Z r
            s = coef[j]
            for t in range(j):
                s -= L[j, t] * coef[t]
            coef[j] = s * dinv[j]
        for j in range(m - 1, -1, -1):  # Lᵀ c = y
            s = coef[j]
            for t in range(j + 1, m):
                s -= L[t, j] * coef[t]
            coef[j] = s * dinv[j]
        for j in range(m):
            cj = coef[j]
            for t in range(p):
                work[0, t] -= cj * Z[j, t]
    return math.sqrt(_dot(work, 0, work, 0))


@_jit()
def _norm(r: np.ndarray) -> float:
    return math.sqrt(_dot(r, 0, r, 0))


@_jit()
def _gram(Z: np.ndarray, m: int, G: np.ndarray) -> None:
    for i in range(m):
        for j in range(i + 1):
            s = _dot(Z, i, Z, j)
            G[i, j] = s
            G[j, i] = s


@_jit()
def span_residuals(
    X: np.ndarray,
    Q: np.ndarray,
    idx: np.ndarray,
    class_starts: np.ndarray,
    ks: np.ndarray,
    pooled: bool,
    ratio: float,
    snap: float,
    out: np.ndarray,
    slow: np.ndarray,
) -> None:
    """Class distances ``out`` (b, C) of queries Q (b, p) from their neighbours
    ``X[idx]`` (idx (b, Σ ks), class c's ``ks[c]`` neighbours from ``class_starts[c]``,
    nearest first).

    ``pooled=False`` (HKNN, Cevikalp et al. eqs. (3)-(5)): class c's difference vectors
    Z_c (its neighbours minus its nearest one) and ``r = x_q - x_c1``; the distance to the
    affine hull is ``||(I - P_c) r||``. ``pooled=True`` (LDCV, eq. (23)): every class's
    differences pooled into one Z, whose span is the range of the within-class scatter,
    and ``||P_N(S_W)(x_q - x_c1)||`` for each class c, which equals the paper's
    ``||P_NS (x_q - μ_c)||`` (μ_c - x_c1 lies in R(S_W)). Queries (HKNN: query and
    class) whose Gram matrix is not certified at ``ratio`` get ``slow = True`` and no
    distance (the caller's SVD route); residuals at or below ``snap·||r||`` are 0."""
    b, p = Q.shape
    C = ks.size
    mmax = 0
    for c in range(C):
        mmax += ks[c] - 1
    mmax = max(mmax, 1)
    Z = np.empty((mmax, p))
    G = np.empty((mmax, mmax))
    L = np.zeros((mmax, mmax))
    r = np.empty((1, p))  # rows, for _dot
    work = np.empty((1, p))
    coef = np.empty(mmax)
    dinv = np.empty(mmax)
    col = np.empty(mmax)
    for i in range(b):
        if pooled:
            m = 0
            for c in range(C):
                a0 = idx[i, class_starts[c]]
                for j in range(1, ks[c]):
                    a = idx[i, class_starts[c] + j]
                    for t in range(p):
                        Z[m, t] = X[a, t] - X[a0, t]
                    m += 1
            ok = True
            if m > 0:
                _gram(Z, m, G)
                ok = _cholesky_certified(G, m, L, dinv, col, ratio)
            if not ok:
                for c in range(C):
                    slow[i, c] = True
                continue
        for c in range(C):
            a0 = idx[i, class_starts[c]]
            for t in range(p):
                r[0, t] = Q[i, t] - X[a0, t]
            if not pooled:
                m = ks[c] - 1
                for j in range(m):
                    a = idx[i, class_starts[c] + 1 + j]
                    for t in range(p):
                        Z[j, t] = X[a, t] - X[a0, t]
                if m > 0:
                    _gram(Z, m, G)
                    if not _cholesky_certified(G, m, L, dinv, col, ratio):
                        slow[i, c] = True
                        continue
            if m == 0:
                out[i, c] = _norm(r)
                continue
            value = _residual(Z, m, L, dinv, r, work, coef)
            out[i, c] = 0.0 if value <= snap * _norm(r) else value


@_jit()
def gather_gram(K: np.ndarray, nb: np.ndarray, F: np.ndarray, r: np.ndarray) -> None:
    """NHKNN/NLDCV's local kernel matrix (Cevikalp et al., eq. (14)) of the neighbours
    ``nb`` (M,) from the training rows' symmetric kernel matrix K: ``F[i, j] =
    K[nb[j], nb[i]]`` (F (M, M), Fortran order: column j is K's row nb[j] gathered), and
    ``r`` (M,) the means of F's columns (= its rows')."""
    M = nb.size
    for j in range(M):
        row = nb[j]
        s = 0.0
        for i in range(M):
            v = K[row, nb[i]]
            F[i, j] = v
            s += v
        r[j] = s / M


@_jit()
def centre_gram(F: np.ndarray, r: np.ndarray, c: float) -> None:
    """``F[i, j] ← F[i, j] - r[i] - r[j] + c`` in place (F Fortran order): the double
    centring ``J G J`` of eq. (15) with ``c`` its grand mean (plus any constant added)."""
    M = r.size
    for j in range(M):
        rj = r[j]
        for i in range(M):
            F[i, j] = F[i, j] - r[i] - rj + c
