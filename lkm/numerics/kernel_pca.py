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
explicitly and refined until it no longer changes (no ``|r|² - |Pr|²`` cancellation):
:func:`lkm.numerics.local_hulls.common_vector_distances`, compiled, with the constants
below.

Exact ties stay exact (the module's tie rule decides them): identical neighbours get
bit-equal coordinates, a query identical to one of its neighbours gets that neighbour's
coordinates (distance exactly 0 to every hull through it), and NLDCV classes whose
nearest neighbour is the same point share one distance. The eigendecomposition route
leaves round-off (~1e-16) in those places, which picks a class by chance.

The cost per query is two Cholesky factorizations of an M×M matrix (M = C·K) instead of
an ``eigh`` (about ten times the flops), and for NLDCV a Gram matrix and its Cholesky
instead of an SVD of the (M - C)×M pooled differences. Everything around the
factorizations (gathering G, centring, the null basis, the triangular solves, the
residuals) runs compiled per block of queries (:mod:`lkm.numerics.local_hulls`); only
LAPACK's ``dpotrf`` is called per query from Python.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dpotrf

from lkm.numerics.local_hulls import isometric_finish, isometric_prepare

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


def isometric_block(
    K: NDArray[np.float64],
    idx: NDArray[np.intp],
    lq: NDArray[np.float64],
    on: NDArray[np.intp],
    groups: NDArray[np.intp],
    cutoff: float,
    Y: NDArray[np.float64],
    yq: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """Coordinates of each query's M neighbours ``Y[i]`` (M, M) and of its projection
    ``yq[i]`` (M,) in R(S_T^Φ), isometric to kernel PCA's (eqs. (15)-(22)), for a block
    of queries; returns which queries are certified (the others' rows are left as they
    were, for the eigendecomposition).

    K: the training rows' kernel matrix (symmetric); idx (b, M): each query's neighbours
    (its local kernel matrix is ``G = K[nb][:, nb]``, eq. (14)); lq (b, M): its kernel
    values with them; on (b,): the position of a neighbour the query is identical to
    (it gets that neighbour's coordinates), -1 where none; groups (b, M): equal labels for identical neighbours; cutoff: the
    kernel-PCA eigenvalue cutoff relative to λ_max. Distances between the returned points
    equal those between kernel PCA's coordinates (to round-off) when every eigenvalue of
    ``G̃ = J G J`` on its range is above ``max(CERT_MARGIN·cutoff, CERT_FLOOR)·tr G̃``
    (certified here by the Cholesky factor of ``F - τI``). Compiled per block
    (:func:`lkm.numerics.local_hulls.isometric_prepare` and ``isometric_finish``), with
    LAPACK's ``dpotrf`` in between: two calls per query."""
    b, M = idx.shape
    F = np.empty((b, M, M))
    means = np.empty((b, M))
    scalars = np.empty((b, 3))
    ok = np.zeros(b, dtype=np.bool_)
    isometric_prepare(K, idx, groups, max(CERT_MARGIN * cutoff, CERT_FLOOR), F, means, scalars, ok)
    shifted = np.empty((M, M), order="F")
    diagonal = np.diag_indices(M)
    for i in np.flatnonzero(ok):
        Fi = F[i].T  # F[i] is symmetric; its transpose is the Fortran layout LAPACK factors in place
        np.copyto(shifted, Fi)
        shifted[diagonal] -= scalars[i, 1]
        _, info = dpotrf(shifted, lower=1, clean=0, overwrite_a=1)
        if info == 0:
            _, info = dpotrf(Fi, lower=1, clean=0, overwrite_a=1)
        ok[i] = info == 0
    isometric_finish(K, idx, lq, on, groups, F, means, scalars, ok, Y, yq)
    return ok


def isometric_coordinates(
    K: NDArray[np.float64],
    nb: NDArray[np.intp],
    lq: NDArray[np.float64],
    groups: NDArray[np.intp],
    cutoff: float,
    on: int = -1,
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """:func:`isometric_block` for one query: the neighbours' coordinates (M, M) and the
    query's (M,), or None when not certified."""
    M = nb.size
    Y, yq = np.empty((1, M, M)), np.empty((1, M))
    where = np.array([on], dtype=np.intp)
    ok = isometric_block(K, nb[None].astype(np.intp), lq[None], where, groups[None].astype(np.intp), cutoff, Y, yq)
    return (Y[0], yq[0]) if ok[0] else None
