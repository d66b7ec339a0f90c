"""Compiled per-query work of the local subspace classifiers of Cevikalp, Larlus, Douze
and Jurie, "Local subspace classifiers: linear and nonlinear approaches" (MLSP 2007).

Numba kernels, each a loop over queries with no Python in it, compiled once
(``cache=True``: later processes load the machine code from ``__pycache__``) and run
with the GIL released (``nogil=True``), so the caller's threads over row blocks
(:func:`lkm.numerics.threads.map_row_blocks`) run them in parallel:

- :func:`select_class_neighbors`: each class's K nearest training samples of every
  query, by insertion over one row of BLAS distances at a time (ordered by (distance,
  position), ties to the lower position; only the entries below a threshold from group
  minima are visited), the squared-Euclidean expansion applied on the fly; the distance
  product itself stays a BLAS gemm.
- :func:`span_residuals` (and :func:`hull_residuals_in_coordinates`, NHKNN's hulls in
  each query's own kernel-PCA coordinates): the distance of vectors to the span of a few difference
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

For NHKNN and NLDCV (:mod:`lkm.numerics.kernel_pca`): :func:`isometric_prepare` (each
query's centred local kernel matrix plus its null directions, from the training rows'
kernel) and :func:`isometric_finish` (the kernel-PCA-isometric coordinates from its
Cholesky factor, which LAPACK computes in between); :func:`common_vector_distances`
(NLDCV's residuals off the pooled within-class differences in those coordinates, by
their certified Gram matrix and refinement, the exactly dependent differences dropped
by :func:`independent_differences`).

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
def hull_residuals_in_coordinates(
    Y: np.ndarray,
    yq: np.ndarray,
    starts: np.ndarray,
    ks: np.ndarray,
    repeated: np.ndarray,
    ratio: float,
    snap: float,
    out: np.ndarray,
    slow: np.ndarray,
) -> None:
    """NHKNN's class distances (Cevikalp et al., eq. (8): HKNN's affine hulls in
    kernel-PCA coordinates) ``out`` (b, C): each query's own neighbour coordinates Y
    (b, M, p) and its coordinates yq (b, p); class c's ``ks[c]`` neighbours start at
    ``starts[c]``. :func:`span_residuals`' certified Gram route, per (query, class):
    Z the class's neighbours minus its first, r = y_q minus it. A neighbour marked
    ``repeated`` (b, M) (bit-equal coordinates to an earlier one of its class) adds
    nothing to the hull and is left out of Z, so repeated points do not spoil the
    certificate. Pairs not certified at ``ratio`` get ``slow = True`` and no distance
    (the caller's SVD); residuals at or below ``snap·||r||`` are 0."""
    b, M, p = Y.shape
    C = ks.size
    kmax = 1
    for c in range(C):
        kmax = max(kmax, ks[c])
    Z = np.empty((kmax, p))
    G = np.empty((kmax, kmax))
    L = np.zeros((kmax, kmax))
    r = np.empty((1, p))
    work = np.empty((1, p))
    coef = np.empty(kmax)
    dinv = np.empty(kmax)
    col = np.empty(kmax)
    for i in range(b):
        for c in range(C):
            s0 = starts[c]
            for t in range(p):
                r[0, t] = yq[i, t] - Y[i, s0, t]
            m = 0
            for j in range(1, ks[c]):
                if repeated[i, s0 + j]:
                    continue
                for t in range(p):
                    Z[m, t] = Y[i, s0 + j, t] - Y[i, s0, t]
                m += 1
            if m == 0:
                out[i, c] = _norm(r)
                continue
            _gram(Z, m, G)
            if not _cholesky_certified(G, m, L, dinv, col, ratio):
                slow[i, c] = True
                continue
            value = _residual(Z, m, L, dinv, r, work, coef)
            out[i, c] = 0.0 if value <= snap * _norm(r) else value


@_jit()
def _group_structure(groups: np.ndarray, lead: np.ndarray, rank: np.ndarray, size: np.ndarray) -> int:
    """For positions labelled ``groups`` (M,): ``lead[j]`` the first position with j's
    label, ``rank[j]`` how many earlier positions share it, ``size[j]`` (at leads) the
    group's size. Returns the number of null directions: 1 + Σ (size - 1)."""
    M = groups.size
    g = 1
    for j in range(M):
        lead[j] = j
        rank[j] = 0
        size[j] = 0
        for t in range(j):
            if groups[t] == groups[j]:
                lead[j] = lead[t]
                break
        a = lead[j]
        rank[j] = size[a]
        size[a] += 1
        if rank[j] > 0:
            g += 1
    return g


@_jit()
def isometric_prepare(
    K: np.ndarray,
    idx: np.ndarray,
    groups: np.ndarray,
    margin: float,
    F: np.ndarray,
    means: np.ndarray,
    scalars: np.ndarray,
    ok: np.ndarray,
) -> None:
    """The matrices :func:`lkm.numerics.kernel_pca.isometric_block` factors, for queries
    with neighbours ``idx`` (b, M) (``groups`` (b, M): equal labels for identical rows)
    and the training rows' symmetric kernel matrix K: ``F[i] = J G J + α W Wᵀ`` (M, M;
    symmetric, every entry written), G = K[nb][:, nb] (Cevikalp et al., eq. (14)), J the
    centring (eq. (15)) and W the orthonormal null basis (the constant vector, and for
    each group of s identical rows the projection ``I - 11ᵀ/s`` on its positions, which
    Helmert contrasts span). ``scalars[i] = (tr J G J, τ, α)`` with τ = margin · trace
    (``margin = max(CERT_MARGIN·cutoff, CERT_FLOOR)``) and α = max(trace/M, 4τ);
    ``means[i]`` G's row means; ``ok[i]`` False where the trace is not positive."""
    b, M = idx.shape
    r = np.empty(M)
    lead = np.empty(M, dtype=np.intp)
    rank = np.empty(M, dtype=np.intp)
    size = np.empty(M, dtype=np.intp)
    for i in range(b):
        rbar = 0.0
        diagonal = 0.0
        for j in range(M):
            row = idx[i, j]
            s = 0.0
            for t in range(M):
                v = K[row, idx[i, t]]
                F[i, j, t] = v
                s += v
            r[j] = s / M
            means[i, j] = r[j]
            rbar += r[j]
            diagonal += F[i, j, j]
        rbar /= M
        trace = diagonal - M * rbar  # tr(J G J) = tr G - 1ᵀG1/M
        if not trace > 0.0:
            ok[i] = False
            continue
        ok[i] = True
        tau = margin * trace
        alpha = max(trace / M, 4.0 * tau)
        scalars[i, 0], scalars[i, 1], scalars[i, 2] = trace, tau, alpha
        c = rbar + alpha / M  # W's constant column: α/M everywhere
        for j in range(M):
            rj = r[j]
            for t in range(M):
                F[i, j, t] = F[i, j, t] - r[t] - rj + c
        _group_structure(groups[i], lead, rank, size)
        for j in range(M):
            s_j = size[lead[j]]
            if s_j < 2:
                continue
            for t in range(M):
                if lead[t] == lead[j]:
                    F[i, j, t] += alpha * ((1.0 if t == j else 0.0) - 1.0 / s_j)


@_jit()
def isometric_finish(
    K: np.ndarray,
    idx: np.ndarray,
    lq: np.ndarray,
    on: np.ndarray,
    groups: np.ndarray,
    L: np.ndarray,
    means: np.ndarray,
    scalars: np.ndarray,
    ok: np.ndarray,
    Y: np.ndarray,
    yq: np.ndarray,
) -> None:
    """Coordinates from the Cholesky factors: for each query with ``ok[i]``, ``L[i]``
    holds the lower factor of :func:`isometric_prepare`'s F[i] in its transposed storage
    (``L(a, c) = L[i, c, a]`` for a ≥ c, LAPACK's layout of ``L[i].T``); then
    ``Y[i] = L - α W (L⁻¹ W)ᵀ`` (M neighbours × M coordinates; identical neighbours get
    their group's first row, bit for bit) and ``yq[i] = L⁻¹ k̃_q``, k̃_q the query's
    centred kernel values (``lq[i]`` (b, M) minus G's row ``means[i]``); a query
    identical to a neighbour (``on[i] ≥ 0``, its position) gets that neighbour's
    coordinates."""
    b, M = idx.shape
    lead = np.empty(M, dtype=np.intp)
    rank = np.empty(M, dtype=np.intp)
    size = np.empty(M, dtype=np.intp)
    W = np.empty((M, M))
    T = np.empty(M)
    r = np.empty(M)
    for i in range(b):
        if not ok[i]:
            continue
        alpha = scalars[i, 2]
        for a in range(M):
            for c in range(a + 1):
                Y[i, a, c] = L[i, c, a]
            for c in range(a + 1, M):
                Y[i, a, c] = 0.0
        g = _group_structure(groups[i], lead, rank, size)
        # W's columns: the constant, then one Helmert contrast per repeated position
        k = 0
        for a in range(M):
            W[a, 0] = 1.0 / math.sqrt(M)
        for p in range(M):
            if rank[p] == 0:
                continue
            k += 1
            j = rank[p]
            h = 1.0 / math.sqrt(j * (j + 1.0))
            for a in range(M):
                W[a, k] = 0.0
                if lead[a] == lead[p] and rank[a] < j:
                    W[a, k] = h
            W[p, k] = -j * h
        for k in range(g):
            for a in range(M):
                T[a] = W[a, k]
            _forward_solve_transposed(L, i, T)  # T = L⁻¹ W[:, k]
            for a in range(M):
                wa = alpha * W[a, k]
                if wa != 0.0:
                    for c in range(M):
                        Y[i, a, c] -= wa * T[c]
        for a in range(M):
            if rank[a] > 0:
                Y[i, a, :] = Y[i, lead[a], :]
        # the query is a neighbour: that neighbour's coordinates (exact ties stay exact)
        if on[i] >= 0:
            yq[i, :] = Y[i, on[i], :]
            continue
        mean = 0.0
        for a in range(M):
            r[a] = lq[i, a] - means[i, a]
            mean += r[a]
        mean /= M
        for a in range(M):
            r[a] -= mean
        _forward_solve_transposed(L, i, r)
        for a in range(M):
            yq[i, a] = r[a]


@_jit()
def _forward_solve_transposed(L: np.ndarray, i: int, v: np.ndarray) -> None:
    """v ← L⁻¹ v in place, L the lower Cholesky factor of query i stored transposed
    (``L(a, c) = L[i, c, a]``, LAPACK's layout): by columns of L, contiguous there."""
    M = v.size
    for c in range(M):
        v[c] /= L[i, c, c]
        vc = v[c]
        for a in range(c + 1, M):
            v[a] -= L[i, c, a] * vc


@_jit()
def _find(parent: np.ndarray, a: int) -> int:
    root = a
    while parent[root] != root:
        root = parent[root]
    while parent[a] != root:
        parent[a], a = root, parent[a]
    return root


@_jit()
def independent_differences(
    groups: np.ndarray, starts: np.ndarray, ks: np.ndarray, lead: np.ndarray, parent: np.ndarray, keep: np.ndarray
) -> int:
    """Which pooled within-class differences (class c's neighbours minus its first, in
    class order: Σ (k_c - 1) of them) to keep, into ``keep``, so that none is a
    combination of the kept ones through repeated points; returns how many are kept.
    The differences are edges between the points (``groups`` (M,): equal labels for
    identical rows), and features of distinct points of a strictly positive definite
    kernel are linearly independent, so a set of differences is dependent exactly when
    its edges close a cycle. Kept: the edges of a spanning forest, in order (union-find).
    ``lead`` and ``parent`` (M,) are work space."""
    M = groups.size
    for j in range(M):
        lead[j] = j
        for t in range(j):
            if groups[t] == groups[j]:
                lead[j] = lead[t]
                break
        parent[j] = j
    e = 0
    kept = 0
    for c in range(ks.size):
        anchor = _find(parent, lead[starts[c]])
        for j in range(1, ks[c]):
            other = _find(parent, lead[starts[c] + j])
            keep[e] = other != anchor
            if keep[e]:
                parent[other] = anchor
                kept += 1
            e += 1
    return kept


@_jit()
def _solve_cholesky(L: np.ndarray, B: np.ndarray) -> None:
    """B ← (L Lᵀ)⁻¹ B in place, L lower triangular (m, m), B (m, r): the right-hand sides
    along B's contiguous rows."""
    m, r = B.shape
    for j in range(m):
        for t in range(j):
            ljt = L[j, t]
            for c in range(r):
                B[j, c] -= ljt * B[t, c]
        inv = 1.0 / L[j, j]
        for c in range(r):
            B[j, c] *= inv
    for j in range(m - 1, -1, -1):
        for t in range(j + 1, m):
            ltj = L[t, j]
            for c in range(r):
                B[j, c] -= ltj * B[t, c]
        inv = 1.0 / L[j, j]
        for c in range(r):
            B[j, c] *= inv


@_jit()
def common_vector_distances(
    Y: np.ndarray,
    yq: np.ndarray,
    groups: np.ndarray,
    starts: np.ndarray,
    ks: np.ndarray,
    ratio: float,
    tol: float,
    max_passes: int,
    snap: float,
    out: np.ndarray,
    scale: np.ndarray,
    ok: np.ndarray,
) -> None:
    """NLDCV's class distances (Cevikalp et al., Sec. III, eq. (23) in kernel-PCA
    coordinates) for a block of queries: the residual of ``y_q - y_c1`` (class c's
    nearest neighbour's coordinates) off the span of the pooled within-class differences,
    ``out`` (b, C), from the neighbours' coordinates Y (b, M, M) and the queries' yq
    (b, M); ``groups`` (b, M) label identical neighbours, class c's ``ks[c]``
    neighbours start at ``starts[c]``.

    Exactly dependent differences are dropped (:func:`independent_differences`); the
    kept ones' Gram matrix G is used only when ``G - ratio·tr(G)·I`` has a Cholesky
    factor (every eigenvalue above ``ratio·tr G``), else ``ok[i]`` is False and the
    caller takes the SVD. The residual is formed explicitly and refined (each pass
    projects out what the previous one left) until a pass changes it by at most ``tol``
    relative (at most ``max_passes``); residuals at or below ``snap·||r||`` are 0.
    Classes whose nearest neighbour is the same point share one distance, so the tie is
    exact. ``scale[i]``: the largest ``||y_q - y_c1||``."""
    b, M, p = Y.shape
    C = ks.size
    n_edges = 0
    for c in range(C):
        n_edges += ks[c] - 1
    lead = np.empty(M, dtype=np.intp)
    parent = np.empty(M, dtype=np.intp)
    keep = np.empty(max(n_edges, 1), dtype=np.bool_)
    owner = np.empty(C, dtype=np.intp)
    Z = np.empty((max(n_edges, 1), p))
    R = np.empty((C, p))
    norms = np.empty(C)
    for i in range(b):
        m = independent_differences(groups[i], starts, ks, lead, parent, keep)
        e = 0
        row = 0
        for c in range(C):
            s0 = starts[c]
            for j in range(1, ks[c]):
                if keep[e]:
                    for t in range(p):
                        Z[row, t] = Y[i, s0 + j, t] - Y[i, s0, t]
                    row += 1
                e += 1
        u = 0  # classes with their own nearest point, first in class order
        top = 0.0
        for c in range(C):
            owner[c] = -1
            for c2 in range(c):
                if lead[starts[c2]] == lead[starts[c]]:
                    owner[c] = owner[c2]
                    break
            if owner[c] < 0:
                owner[c] = u
                for t in range(p):
                    R[u, t] = yq[i, t] - Y[i, starts[c], t]
                norms[u] = math.sqrt(_dot(R, u, R, u))
                top = max(top, norms[u])
                u += 1
        scale[i] = top
        ok[i] = True
        if m > 0:
            Zm = Z[:m]
            G = Zm @ Zm.T
            trace = 0.0
            for j in range(m):
                trace += G[j, j]
            if not trace > 0.0:
                ok[i] = False
                continue
            shifted = G.copy()
            for j in range(m):
                shifted[j, j] -= ratio * trace
            try:
                np.linalg.cholesky(shifted)
                L = np.linalg.cholesky(G)
            except Exception:  # not positive definite: the caller's SVD
                ok[i] = False
                continue
            resid = R[:u].copy()
            for npass in range(max_passes):
                coef = Zm @ resid.T  # (m, u), then (Z Zᵀ)⁻¹ Z r
                _solve_cholesky(L, coef)
                step = coef.T @ Zm
                done = npass >= 1
                for a in range(u):
                    s = 0.0
                    for t in range(p):
                        resid[a, t] -= step[a, t]
                        s += step[a, t] * step[a, t]
                    if math.sqrt(s) > tol * norms[a]:
                        done = False
                if done:
                    break
            for a in range(u):
                R[a] = resid[a]
        for a in range(u):
            value = math.sqrt(_dot(R, a, R, a))
            norms[a] = 0.0 if value <= snap * norms[a] else value
        for c in range(C):
            out[i, c] = norms[owner[c]]
