"""Local kernel PCA of NHKNN and NLDCV (Cevikalp, Larlus, Douze, Jurie, MLSP 2007,
Sec. II-C and III) by Cholesky factors instead of an eigendecomposition per query.

The local subspace classifiers measure distances in the coordinates of R(S_T^Φ), the
span of the C·K neighbours' centred features (eqs. (12)-(22): an ``eigh`` of the centred
local kernel matrix ``G̃ = J G J``, eigenvalues above a relative cutoff kept). Every
distance they take is invariant under an orthogonal change of those coordinates, so any
isometric coordinates of the neighbours (``Y Yᵀ = G̃``) with the query's projection
(``Y y_q = J (l_q - G 1/M)``, its centred kernel values) give the same distances. Where
the kept subspace is the whole R(S_T^Φ) — every eigenvalue of G̃ on it far above the
cutoff, and only the exact null directions (the constant vector and exactly repeated
neighbours) below it — such coordinates come from one Cholesky factor:

``F = G̃ + α W Wᵀ = L Lᵀ`` with W an orthonormal basis of the null space of G̃ (the
constant vector and, for each group of identical neighbours, contrasts within the
group), then ``Y = G̃ L⁻ᵀ = L - α W (L⁻¹ W)ᵀ`` and ``y_q = L⁻¹ k̃_q``
(``Y Yᵀ = G̃ F⁻¹ G̃ = G̃``). That the kept subspace is the whole range is certified,
not assumed: a second Cholesky of ``F - τ I`` (τ a margin times the cutoff times
``tr G̃ ≥ λ_max``) exists only if every eigenvalue of G̃ on its range exceeds τ
(Sylvester's inertia; Cholesky is backward stable). Queries that fail take the
eigendecomposition.

NLDCV's distance to a class's common vector (the residual of ``y_q - y_c1`` off the
span of the pooled within-class differences) uses the Gram matrix of those differences,
after dropping exactly dependent ones (repeated neighbours: differences that close a
cycle over identical rows), Cholesky-certified well conditioned, the residual formed
explicitly and refined until it no longer changes (no ``|r|² - |Pr|²`` cancellation).

Exact ties stay exact (the module's tie rule decides them): identical neighbours get
bit-equal coordinates, a query that is one of its neighbours gets that neighbour's
coordinates (distance exactly 0 to every hull through it), and NLDCV classes whose
nearest neighbour is the same point share one distance. The eigendecomposition route
leaves round-off (~1e-16) in those places, which picks a class by chance.

The cost per query is two Cholesky factorizations of an M×M matrix (M = C·K) instead of
an ``eigh`` (about ten times the flops), and for NLDCV a Gram matrix and its Cholesky
instead of an SVD of the (M - C)×M pooled differences.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dpotrf, dpotrs, dtrtrs

from lkm.numerics.local_hulls import centre_gram, gather_gram

#: The certificate's margin over the kernel-PCA cutoff: the route is taken when every
#: eigenvalue of the centred local kernel matrix on its range exceeds
#: ``CERT_MARGIN·cutoff·tr G̃`` (``tr G̃ ≥ λ_max``), so the eigendecomposition would keep
#: them all with room for its round-off (about ``M·eps·λ_max``, a tenth of the floor).
CERT_MARGIN = 100.0
#: And above ``CERT_FLOOR·tr G̃`` whatever the cutoff: closer to it, round-off in
#: either route (about ``eps/ratio`` relative) exceeds the tolerance they are tested to.
CERT_FLOOR = 1e-10
#: NLDCV: the pooled within-class differences' Gram matrix is used when its eigenvalues
#: are certified above ``POOLED_RATIO·tr`` (singular values above 1e-6·s_max, far above
#: any rank cutoff ``rcond ≤ 1e-6``); the residual is refined until a pass changes it by
#: at most ``REFINE_TOL`` relative, at most :data:`MAX_PASSES` passes.
POOLED_RATIO = 1e-12
REFINE_TOL = 1e-15
MAX_PASSES = 8


def _groups(groups: NDArray[np.intp]) -> list[NDArray[np.intp]]:
    """The positions of each label that occurs more than once (ascending positions)."""
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    bounds = np.flatnonzero(sorted_groups[1:] != sorted_groups[:-1]) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [groups.size]])
    repeated = ends - starts > 1
    return [order[a:b] for a, b in zip(starts[repeated], ends[repeated], strict=True)]


def null_basis(groups: NDArray[np.intp]) -> NDArray[np.float64]:
    """Orthonormal basis (M, g) of the null space of a centred kernel matrix whose rows
    ``groups`` (M,) label identical points: the constant vector, then for each group of
    s ≥ 2 positions its s - 1 Helmert contrasts (orthogonal to the constant and to
    every other group)."""
    M = groups.size
    cols = [np.full(M, 1.0 / math.sqrt(M))]
    for members in _groups(groups):
        for j in range(1, members.size):
            v = np.zeros(M)
            v[members[:j]] = 1.0 / math.sqrt(j * (j + 1))
            v[members[j]] = -j / math.sqrt(j * (j + 1))
            cols.append(v)
    return np.stack(cols, axis=1)


def _cholesky(F: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """Lower Cholesky factor of F, or None when F is not (numerically) positive definite."""
    L, info = dpotrf(F, lower=1, clean=1, overwrite_a=0)
    return L if info == 0 else None


def _solve_lower(L: NDArray[np.float64], B: NDArray[np.float64], trans: int = 0) -> NDArray[np.float64]:
    x, info = dtrtrs(L, B, lower=1, trans=trans)
    if info != 0:  # pragma: no cover - L comes from a successful potrf
        raise np.linalg.LinAlgError("singular triangular factor")
    out: NDArray[np.float64] = x
    return out


def isometric_coordinates(
    K: NDArray[np.float64], nb: NDArray[np.intp], lq: NDArray[np.float64], groups: NDArray[np.intp], cutoff: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Coordinates of the M neighbours (M, M) and of the query's projection (M,) in
    R(S_T^Φ), isometric to kernel PCA's (eqs. (15)-(22)), or None when not certified.

    K: the training rows' kernel matrix (symmetric); nb (M,): the query's neighbours (its
    local kernel matrix is ``G = K[nb][:, nb]``, eq. (14)); lq (M,): the query's kernel
    values with them; groups (M,): equal labels for identical neighbours; cutoff: the
    kernel-PCA eigenvalue cutoff relative to λ_max. Distances between the returned points
    equal those between kernel PCA's coordinates (to round-off) when every eigenvalue of
    ``G̃ = J G J`` on its range is above ``max(CERT_MARGIN·cutoff, CERT_FLOOR)·tr G̃``
    (certified here)."""
    M = nb.size
    F = np.empty((M, M), order="F")  # the layout LAPACK factors without a copy
    r = np.empty(M)
    gather_gram(K, nb, F, r)  # G and its row means
    diagonal_G = F.diagonal().copy()
    rbar = float(r.mean())
    trace = float(diagonal_G.sum()) - M * rbar  # tr(J G J) = tr G - 1ᵀG1/M
    if not trace > 0.0:
        return None
    tau = max(CERT_MARGIN * cutoff, CERT_FLOOR) * trace
    alpha = max(trace / M, 4.0 * tau)
    W = null_basis(groups)
    # F = J G J + α W Wᵀ (W's constant column: α/M everywhere); LAPACK reads the lower
    # triangle only
    centre_gram(F, r, rbar + alpha / M)
    if W.shape[1] > 1:
        rows = np.flatnonzero(np.abs(W[:, 1:]).sum(axis=1))
        F[np.ix_(rows, rows)] += alpha * (W[rows, 1:] @ W[rows, 1:].T)
    diagonal = F.diagonal().copy()
    F[np.diag_indices(M)] = diagonal - tau
    if _cholesky(F) is None:
        return None
    F[np.diag_indices(M)] = diagonal
    L = _cholesky(F)
    if L is None:  # pragma: no cover - F - τI is positive definite, so F is
        return None
    T = _solve_lower(L, W)
    Y = L - alpha * (W @ T.T)
    # exact ties stay exact, as in the eigendecomposition route (where equal kernel
    # columns give bit-equal coordinates): identical neighbours get their group's first
    # row, and a query whose kernel values are a neighbour's column (the query is that
    # point) gets that neighbour's coordinates
    for members in _groups(groups):
        Y[members[1:]] = Y[members[0]]
    for m in np.flatnonzero(lq == diagonal_G):
        if np.array_equal(K[nb[m], nb], lq):
            return Y, Y[m].copy()
    kq = lq - r
    kq -= kq.mean()
    yq = _solve_lower(L, kq)
    return Y, yq


def independent_within(groups: NDArray[np.intp], starts: NDArray[np.intp], ks: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Which pooled within-class differences (class c's neighbours minus its first, in
    class order: Σ (k_c - 1) of them) to keep so that none is a combination of the kept
    ones through repeated points: the differences are edges between the points'
    ``groups``, and features of distinct points of a strictly positive definite kernel
    are linearly independent, so a set of differences is dependent exactly when its
    edges close a cycle. Kept: the edges of a spanning forest, in order (union-find)."""
    n_edges = int((ks - 1).sum())
    keep = np.ones(n_edges, dtype=np.bool_)
    labels = groups[np.concatenate([np.arange(s, s + k) for s, k in zip(starts, ks, strict=True)])]
    if np.unique(labels).size == labels.size:
        return keep  # distinct points: the edges form stars on disjoint vertex sets
    parent: dict[int, int] = {}

    def find(a: int) -> int:
        root = a
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(a, a) != root:
            parent[a], a = root, parent[a]
        return root

    e = 0
    for s, k in zip(starts, ks, strict=True):
        anchor = find(int(groups[s]))
        for j in range(1, int(k)):
            other = find(int(groups[s + j]))
            if other == anchor:
                keep[e] = False
            else:
                parent[other] = anchor
            e += 1
    return keep


def pooled_residuals(Z: NDArray[np.float64], R: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """``||r - P r||`` for the rows r of R (C, p), P the projection onto the row space of
    Z (m, p), or None when Z's Gram matrix is not certified well conditioned
    (:data:`POOLED_RATIO`). The residual is formed explicitly and refined (each pass
    projects out what the previous one left) until a pass changes it by at most
    :data:`REFINE_TOL` relative."""
    if Z.shape[0] == 0:
        out0: NDArray[np.float64] = np.linalg.norm(R, axis=1)
        return out0
    Gz = Z @ Z.T
    trace = float(np.trace(Gz))
    if not trace > 0.0:
        return None
    shifted = Gz.copy()
    shifted[np.diag_indices(Gz.shape[0])] -= POOLED_RATIO * trace
    if _cholesky(shifted) is None:
        return None
    L = _cholesky(Gz)
    if L is None:  # pragma: no cover
        return None
    resid = R.copy()
    scale = np.linalg.norm(R, axis=1)
    for npass in range(MAX_PASSES):
        coef, info = dpotrs(L, Z @ resid.T, lower=1)  # (m, C): (Z Zᵀ)⁻¹ Z r
        if info != 0:  # pragma: no cover - L is a Cholesky factor
            return None
        step = coef.T @ Z
        resid -= step
        if npass >= 1 and (np.linalg.norm(step, axis=1) <= REFINE_TOL * scale).all():
            break
    out: NDArray[np.float64] = np.linalg.norm(resid, axis=1)
    return out
