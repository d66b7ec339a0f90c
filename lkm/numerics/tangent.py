"""Two-sided tangent distance (Simard, LeCun, Denker, Victorri: "Transformation invariance
in pattern recognition — tangent distance and tangent propagation"), used by Cevikalp et
al. (Sec. IV) for USPS.

Each image x gets tangent vectors T_x (7 × d) spanning the first-order effect of seven
transformations, and

    TD(x, y) = min over a, b in R^7 of ||(x + T_xᵀa) − (y + T_yᵀb)||²,

a linear least-squares problem per pair, solved exactly here for whole blocks of pairs at
once (:func:`tangent_sq_distances`).
"""

from __future__ import annotations

import math

import numpy as np

from lkm.errors import DataError

#: Default width (pixels) of the Gaussian that smooths the image before differentiation.
DEFAULT_SMOOTHING_SIGMA = 1.0
#: Singular values of an image's tangent matrix at or below ``BASIS_RCOND·s_max`` span no
#: direction (constant images have T = 0 and no tangent direction at all).
BASIS_RCOND = 1e-8
#: Eigenvalues of a pair's reduced 7×7 system S (all in [0, 1], see
#: :func:`tangent_sq_distances`) at or below this are treated as zero: S carries round-off
#: of about 1e-15, so directions that small are shared by both tangent spaces.
PAIR_RCOND = 1e-10
#: Pairs per batched block (about 30 MB of 7×7 float64 work arrays).
BLOCK_PAIRS = 40_000

TANGENT_NAMES = (
    "x-translation", "y-translation", "rotation", "scaling",
    "parallel hyperbolic", "diagonal hyperbolic", "thickening",
)


def image_shape_for(d: int, image_shape: tuple[int, int] | None = None) -> tuple[int, int]:
    """The (height, width) of images with d pixels: ``image_shape`` checked against d,
    or a square s × s with s² = d. One-line :class:`DataError` otherwise."""
    if image_shape is not None:
        h, w = (int(v) for v in image_shape)
        if h * w != d:
            raise DataError(f"tangent distance: image_shape {(h, w)} has {h * w} pixels; got d={d} features")
        return h, w
    s = math.isqrt(d)
    if s * s != d or d == 0:
        raise DataError(f"tangent distance needs square images; got d={d} features")
    return s, s


def tangent_vectors(
    X: np.ndarray,
    image_shape: tuple[int, int] | None = None,
    smoothing_sigma: float = DEFAULT_SMOOTHING_SIGMA,
) -> np.ndarray:
    """Tangent vectors of the rows of X (images flattened row-major), shape (n, 7, d).

    With I the image smoothed by a Gaussian of width ``smoothing_sigma``,
    I_x = ∂I/∂x (along columns) and I_y = ∂I/∂y (along rows), both from
    ``scipy.ndimage.gaussian_filter`` with ``order=(0, 1)`` / ``(1, 0)``, and pixel
    coordinates (x, y) centred on the image centre, Simard et al.'s tangents are

    ====================  ===================
    x-translation         I_x
    y-translation         I_y
    rotation              y·I_x − x·I_y
    scaling               x·I_x + y·I_y
    parallel hyperbolic   x·I_x − y·I_y
    diagonal hyperbolic   y·I_x + x·I_y
    thickening            I_x² + I_y²
    ====================  ===================

    Pixels outside the image count as background 0 (``mode="constant"``), so a stroke
    touching the frame has an edge there. Only the span of the seven vectors enters the
    distance, so their signs and scales are immaterial.
    """
    from scipy.ndimage import gaussian_filter

    X = np.asarray(X, dtype=np.float64)
    h, w = image_shape_for(X.shape[1], image_shape)
    images = X.reshape(-1, h, w)
    sig = (0.0, smoothing_sigma, smoothing_sigma)  # no smoothing across images
    Ix = gaussian_filter(images, sig, order=(0, 0, 1), mode="constant")
    Iy = gaussian_filter(images, sig, order=(0, 1, 0), mode="constant")
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    x -= (w - 1) / 2.0
    y -= (h - 1) / 2.0
    T = np.stack([
        Ix, Iy, y * Ix - x * Iy, x * Ix + y * Iy, x * Ix - y * Iy, y * Ix + x * Iy, Ix * Ix + Iy * Iy,
    ], axis=1)
    return T.reshape(X.shape[0], 7, h * w)


def orthonormal_tangents(T: np.ndarray, rcond: float = BASIS_RCOND) -> np.ndarray:
    """Per image, an orthonormal basis of the span of its tangent vectors (n, 7, d): the
    right singular vectors with singular value above ``rcond·s_max``, the other rows zero."""
    _, s, Vt = np.linalg.svd(T, full_matrices=False)
    keep = s > rcond * s[:, :1]
    Q = np.zeros_like(T)
    Q[:, : s.shape[1]] = Vt * keep[:, :, None]  # images of fewer than 7 pixels: zero rows
    return Q


def tangent_sq_distances(
    A: np.ndarray,
    B: np.ndarray | None = None,
    image_shape: tuple[int, int] | None = None,
    smoothing_sigma: float = DEFAULT_SMOOTHING_SIGMA,
) -> np.ndarray:
    """Two-sided tangent distances TD(a_i, b_j) between the rows of A and B (nA × nB).

    With e = x − y, the 14×14 normal equations of min ||e + T_xᵀa − T_yᵀb||² are solved
    exactly through an equivalent 7×7 system: the tangents of every image are replaced by
    an orthonormal basis Q of their span (:func:`orthonormal_tangents`, rank-revealing),
    which leaves the minimum unchanged. Eliminating a (projection onto span(Q_x)) gives,
    with C = Q_x Q_yᵀ, p = Q_x e and q = Q_y e,

        S = I − CᵀC,   h = q − Cᵀp,   TD = ||e||² − ||p||² − hᵀ S⁺ h,

    the Schur complement of the 14×14 system [[I, −C], [−Cᵀ, I]]. S = WᵀW with
    W = (I − Q_xᵀQ_x) Q_yᵀ, so its eigenvalues lie in [0, 1] and vanish for directions
    the two tangent spaces share (identical images); S⁺ is the eigendecomposition
    pseudo-inverse dropping eigenvalues ≤ :data:`PAIR_RCOND`. Where S is certified well
    above that cutoff (nearly every pair of distinct images) S⁺ = S⁻¹ and hᵀS⁻¹h comes
    from a Cholesky run across the whole block at once (:func:`_inverse_quadratic_forms`,
    2.3× faster on USPS than a LAPACK eigh per pair); the rest take eigh. All C, p, q
    come from matrix products over whole blocks of pairs (no Python loop over pairs).

    TD ≥ 0 (round-off is clipped), TD(x, x) = 0, and B None (or B is A) gives an exactly
    symmetric matrix with a zero diagonal. ``image_shape`` None: square images.
    """
    A = np.asarray(A, dtype=np.float64)
    same = B is None or B is A
    B = A if B is None else np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise DataError(f"tangent distance: need two 2-D arrays with equal widths; got {A.shape} and {B.shape}")
    shape = image_shape_for(A.shape[1], image_shape)
    QA = orthonormal_tangents(tangent_vectors(A, shape, smoothing_sigma))
    QB = QA if same else orthonormal_tangents(tangent_vectors(B, shape, smoothing_sigma))
    nA, nB = A.shape[0], B.shape[0]
    out = np.empty((nA, nB))
    if nA == 0 or nB == 0:
        return out
    QAx = np.einsum("nkd,nd->nk", QA, A)  # Q_x x
    QBy = np.einsum("nkd,nd->nk", QB, B)  # Q_y y
    a2 = np.einsum("ij,ij->i", A, A)
    b2 = np.einsum("ij,ij->i", B, B)
    rows = max(1, BLOCK_PAIRS // nB)
    for start in range(0, nA, rows):
        sl = slice(start, min(nA, start + rows))
        if same:  # the upper triangle is enough: columns from the block's first row on
            _upper_block(out, sl, QA, QAx, a2, A)
            continue
        out[sl] = _pair_block(QA[sl], QAx[sl], a2[sl], A[sl], QB, QBy, b2, B)
    np.maximum(out, 0.0, out=out)
    if same:
        upper = np.triu(out, 1)
        out = upper + upper.T
    return out


def _pair_block(
    QA: np.ndarray, QAx: np.ndarray, a2: np.ndarray, A: np.ndarray,
    QB: np.ndarray, QBy: np.ndarray, b2: np.ndarray, B: np.ndarray,
) -> np.ndarray:
    """TD of every row of A (with orthonormal tangents QA, QA·x, ||x||²) to every row of B."""
    b, nB, d = A.shape[0], B.shape[0], A.shape[1]
    QAb, QBflat = QA.reshape(b * 7, d), QB.reshape(nB * 7, d)
    C = (QAb @ QBflat.T).reshape(b, 7, nB, 7).transpose(0, 2, 1, 3)  # (b, nB, 7, 7)
    p = QAx[:, None, :] - (QAb @ B.T).reshape(b, 7, nB).transpose(0, 2, 1)  # Q_x e
    q = (A @ QBflat.T).reshape(b, nB, 7) - QBy[None, :, :]  # Q_y e
    e2 = a2[:, None] + b2[None, :] - 2.0 * (A @ B.T)
    h = q - np.einsum("abij,abi->abj", C, p)
    S = np.eye(7) - np.matmul(C.transpose(0, 1, 3, 2), C)
    gain, certified = _inverse_quadratic_forms(S.reshape(-1, 7, 7), h.reshape(-1, 7))
    if not certified.all():  # shared tangent directions (e.g. identical images): S⁺ by eigh
        rest = ~certified
        w, V = np.linalg.eigh(S.reshape(-1, 7, 7)[rest])
        t = np.einsum("nij,ni->nj", V, h.reshape(-1, 7)[rest])
        keep = w > PAIR_RCOND
        gain[rest] = np.divide(t * t, w, out=np.zeros_like(w), where=keep).sum(axis=-1)
    return e2 - np.einsum("abk,abk->ab", p, p) - gain.reshape(e2.shape)


#: :func:`_inverse_quadratic_forms` certifies ``λ_min(S) > CERTIFY_FACTOR·PAIR_RCOND``:
#: far enough above the cutoff that the eigh route would drop no eigenvalue either.
CERTIFY_FACTOR = 1e4


def _inverse_quadratic_forms(S: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``hᵀ S⁻¹ h`` for a stack of small symmetric matrices S (N, m, m) and vectors h
    (N, m), and which of them are certified: S positive definite with
    ``λ_min > CERTIFY_FACTOR·PAIR_RCOND`` (then S⁻¹ = S⁺, the eigh route's
    pseudo-inverse). A Cholesky ``S = LLᵀ`` unrolled over the m² entries, each step one
    vector operation across the whole stack (a LAPACK call per 7 × 7 matrix costs
    microseconds of overhead, 40 times this); ``hᵀS⁻¹h = ||L⁻¹h||²`` and
    ``1/λ_min = ||S⁻¹||₂ ≤ ||L⁻¹||_F²`` bounds the smallest eigenvalue from below.
    Uncertified entries (a pivot ≤ 0, or the bound too small) hold garbage."""
    m = S.shape[-1]
    A = np.ascontiguousarray(S.transpose(1, 2, 0))  # (m, m, N): entries as contiguous vectors
    L = np.empty_like(A)  # only its lower triangle is written and read
    ok = np.ones(S.shape[0], dtype=bool)
    with np.errstate(all="ignore"):
        for j in range(m):
            d = A[j, j] - np.einsum("kn,kn->n", L[j, :j], L[j, :j]) if j else A[j, j].copy()
            ok &= d > 0.0
            L[j, j] = np.sqrt(np.where(d > 0.0, d, 1.0))
            for i in range(j + 1, m):
                L[i, j] = (A[i, j] - np.einsum("kn,kn->n", L[i, :j], L[j, :j])) / L[j, j]
        # Linv = L⁻¹, column by column of the identity (forward substitution)
        Linv = np.zeros_like(L)
        for i in range(m):
            Linv[i, i] = 1.0 / L[i, i]
            for j in range(i):
                Linv[i, j] = -np.einsum("kn,kn->n", L[i, j:i], Linv[j:i, j]) / L[i, i]
        z = np.einsum("ijn,nj->in", Linv, h)
        gain = np.einsum("in,in->n", z, z)
        bound = np.einsum("ijn,ijn->n", Linv, Linv)
        ok &= bound * (CERTIFY_FACTOR * PAIR_RCOND) < 1.0
    return gain, ok


def _upper_block(out: np.ndarray, sl: slice, Q: np.ndarray, Qx: np.ndarray, x2: np.ndarray, X: np.ndarray) -> None:
    """Rows ``sl`` of the symmetric TD matrix of X, from column ``sl.start`` on."""
    cols = slice(sl.start, X.shape[0])
    out[sl, cols] = _pair_block(Q[sl], Qx[sl], x2[sl], X[sl], Q[cols], Qx[cols], x2[cols], X[cols])
