"""Minimum-norm solutions of symmetric positive semi-definite systems, ``G⁺ Y``.

Projection learning's pseudo-inverse (Tsuji, Kudo, Tanaka: G is singular whenever training
patterns repeat) and the manifold estimators' singular systems
(:func:`lkm.numerics.manifold_solvers.solve_semidefinite`) share these routes: a pivoted
Cholesky factorization stopped at ``rcond·λ_max`` (:func:`psd_pinv_solve`), a truncated
eigendecomposition (:func:`eigh_pinv_solve`), and the plain Cholesky solve when G is
clearly nonsingular (:func:`clear_inverse_solve`); the BLAS thread count of a
factorization of a given order (:func:`factor_threads`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import scipy.linalg
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve, lapack, solve_triangular

from lkm.numerics.kernels import check_memory, inner_products
from lkm.numerics.threads import SMALL_BLAS_FLOPS, blas_threads

#: Default relative rank cutoff of PL's pseudo-inverse: eigenvalues at or below
#: ``rcond·λ_max(G)`` count as zero. The computed Gram matrix carries round-off of order
#: ``n·eps·λ_max`` (≈ 1e-12·λ_max for the 4141 training rows of spambase), so directions
#: within a hundred times that are round-off, not data; numpy.linalg.pinv's default
#: (``n·eps``) sits at that floor: with it, PL's outputs on liver-disorders (10 folds, 20
#: sigmas in [0.01, 100]) moved by up to 23 under a 1e-15 relative perturbation of the
#: training data, against at most 4e-4 (and no changed prediction) at 1e-10.
DEFAULT_RCOND = 1e-10


#: Cholesky factorizations (dpotrf) of at least this order run on one BLAS thread: the
#: installed OpenBLAS (scipy-openblas 0.3.30, pthreads) crashes (SIGSEGV) in its
#: two-thread dpotrf, which calls its threaded syrk, at order 16,000; that syrk crashes
#: from order ~15,400 (measured), so this leaves a margin.
SINGLE_THREAD_FACTOR_ORDER = 8192


def factor_threads(n: int) -> int | None:
    """BLAS threads for a factorization of order ``n`` (dpotrf, dpstrf): ``None`` keeps the
    caller's count, i.e. every core when the process owns them and the worker's cap under
    ``--jobs`` (each job runs under ``max(1, cores // jobs)`` threads,
    :func:`lkm.engine.workers.call_capped`; LPL's thread pool caps at one,
    :func:`lkm.numerics.threads.map_row_blocks`). One thread below
    :data:`~lkm.numerics.threads.SMALL_BLAS_FLOPS` (a hand-off costs more than the second
    core saves, and the many small blocks of a small sigma stay cheap when the other core
    is busy) and from :data:`SINGLE_THREAD_FACTOR_ORDER` on (OpenBLAS's threaded syrk,
    which both factorizations call, crashes there)."""
    return 1 if n >= SINGLE_THREAD_FACTOR_ORDER or n**3 / 3.0 < SMALL_BLAS_FLOPS else None


#: :func:`clear_inverse_solve` takes G as nonsingular when its estimated smallest
#: eigenvalue is at least this many times the pseudo-inverse cutoff.
CLEAR_INVERSE_MARGIN = 10.0


def largest_eigenvalue(G: np.ndarray, iterations: int = 12) -> float:
    """λ_max of a symmetric PSD matrix, estimated by power iteration from the all-ones
    vector (a Gaussian Gram matrix is entrywise non-negative, so its Perron vector is
    positive and the start is never orthogonal to it). Never below the largest diagonal
    entry, a lower bound of λ_max; deterministic for a given G."""
    n = G.shape[0]
    if n == 0:
        return 0.0
    lam = float(G.diagonal().max())
    v = np.full(n, 1.0 / math.sqrt(n))
    for _ in range(iterations):
        w = G @ v
        norm = float(np.linalg.norm(w))
        if norm == 0.0:
            break
        lam = max(lam, float(v @ w))
        v = w / norm
    return lam


def psd_pinv_solve(
    G: np.ndarray,
    Y: np.ndarray,
    *,
    rcond: float = DEFAULT_RCOND,
    lam_max: float | None = None,
    overwrite_g: bool = False,
) -> tuple[np.ndarray, int, str]:
    """Moore–Penrose solution ``G⁺ Y`` for a symmetric positive semi-definite ``G`` by a
    pivoted Cholesky factorization stopped at a pivot ``≤ rcond·λ_max(G)``.

    Returns ``(solution, rank, route)``. ``lam_max`` is estimated by
    :func:`largest_eigenvalue` unless given. LAPACK dpstrf gives ``Pᵀ G P ≈ Uᵀ U`` with
    numerical rank r. If r = n, route "inverse": ``G⁻¹ Y = P L⁻ᵀ L⁻¹ Pᵀ Y``. Otherwise
    route "pseudo-inverse": with L = [L11; L21] = Uᵀ and W = L21 L11⁻¹,
    G ≈ B Bᵀ for B = P [I; W] L11, and exactly

        (B Bᵀ)⁺ Y = P [u; W u],  u = M⁻¹ L11⁻ᵀ L11⁻¹ M⁻¹ (Y1 + Wᵀ Y2),  M = I + WᵀW,

    with [Y1; Y2] = Pᵀ Y. M⁻¹ is applied through Woodbury, ``z - Wᵀ (I + W Wᵀ)⁻¹ W z``,
    when W has fewer rows than columns; both forms are SPD with eigenvalues >= 1.

    With a cutoff relative to λ_max the rank r is close to the number of eigenvalues
    above it (measured: 133 against 133 on liver-disorders at sigma = 11.3, 3740 against
    3738 on spambase at sigma = 2), at a tenth of the cost of an eigendecomposition; but
    which r columns the pivoting keeps is a discrete choice, so where G's spectrum decays
    smoothly through the cutoff (large sigma, few features) the outputs can still move
    with round-off. :func:`eigh_pinv_solve` is the round-off-robust route.

    Threads (:func:`factor_threads`): dpstrf runs on the caller's BLAS threads, one
    under a worker's cap. On the bench fold (spambase, 3,803 distinct rows) two threads
    give decision values bit-identical to one thread's at all 39 sigma of ``lkm bench``'s
    sweep; idle, the sweep fell from 1.025 to 0.78 of 39 KernelRidge fits (issue 41);
    under load (load average 10-12 on 2 cores) one thread is the faster one (sweep 78 s
    against 123 s), which is why workers keep their cap. The installed OpenBLAS's ILAENV
    gives dpstrf a block size of 1, so it runs LAPACK's unblocked dpstf2 (a gemv per
    column); LAPACK's blocked algorithm (64-column panels, the trailing update by dsyrk)
    picked the same pivots and rank at all 39 sigma (labels equal, decision values within
    3e-7 of max |f|) at the same CPU time on one thread, and is not used: the two-thread
    gain was not measured on an idle machine (docs/speed.md, issue 41, point 4).

    A plain Cholesky attempt first does not pay: once repeated rows are merged (see
    :class:`~lkm.methods.ProjectionLearning`), singular Gaussian Gram matrices make dpotrf fail within
    the first columns (the bench fold's whole G: at column 3-8 at 37 of the 39 sigma; at
    the two smallest, which PL solves block by block, it succeeds on a G of rank n - 1),
    and it never spares the pivoted factorization: every sigma of the sweep is
    rank-deficient.
    """
    n = G.shape[0]
    rhs = np.asarray(Y, dtype=np.float64).reshape(n, -1)
    # G is symmetric, so a C-contiguous G's transpose is a Fortran-ordered view of G.
    A = G.T if G.flags.c_contiguous else G
    if not (overwrite_g and A.flags.f_contiguous and A.dtype == np.float64):
        A = np.array(A, dtype=np.float64, order="F")
    cutoff = rcond * (largest_eigenvalue(A) if lam_max is None else lam_max)
    with blas_threads(factor_threads(n)):
        U, piv, rank, info = lapack.dpstrf(A, tol=cutoff, lower=0, overwrite_a=1)
    if info < 0:
        raise np.linalg.LinAlgError(f"dpstrf: illegal argument {-info}")
    r = int(rank)
    check_memory(8 * (r * (n - r) + min(r, n - r) ** 2),
                 f"PL pseudo-inverse of rank {r:,} on {n:,} rows (null-space terms)")
    perm = piv[:n] - 1  # LAPACK pivots are 1-based
    route = "inverse" if r == n else "pseudo-inverse"
    solution = np.zeros_like(rhs)
    if r == 0:
        return solution.reshape(np.shape(Y)), 0, route
    # Pᵀ G P ≈ Uᵀ U, so L11 = U11ᵀ, L21 = U12ᵀ and Wᵀ = U11⁻¹ U12.
    U12 = U[:r, r:]  # beyond the compacted leading block, which _leading_block leaves alone
    U11 = _leading_block(U, r)
    Wt = solve_triangular(U11, U12, lower=False, check_finite=False) if r < n else U12
    apply_m_inv = _inverse_of_identity_plus_gram(Wt)
    Yp = rhs[perm]
    d = apply_m_inv(Yp[:r] + Wt @ Yp[r:])
    c = solve_triangular(U11, d, lower=False, trans="T", check_finite=False)  # L11⁻¹ d
    v = solve_triangular(U11, c, lower=False, check_finite=False)  # L11⁻ᵀ c
    u = apply_m_inv(v)
    solution[perm[:r]] = u
    solution[perm[r:]] = Wt.T @ u
    return solution.reshape(np.shape(Y)), r, route


def eigh_pinv_solve(
    G: np.ndarray,
    Y: np.ndarray,
    *,
    rcond: float = DEFAULT_RCOND,
    lam_max: float | None = None,
    overwrite_g: bool = False,
) -> tuple[np.ndarray, int, str]:
    """Truncated Moore–Penrose solution ``G⁺ Y`` from the eigendecomposition of G, with
    eigenvalues at or below ``rcond·λ_max`` dropped — ``numpy.linalg.pinv(G, rtol=rcond,
    hermitian=True) @ Y`` without forming the inverse. ``lam_max`` (for a block of a
    larger matrix: the whole matrix's) defaults to G's largest eigenvalue. Returns
    ``(solution, rank, "eigen")``, or ``(solution, n, "inverse")`` when G is clearly
    nonsingular (:func:`clear_inverse_solve`: then no eigenvalue is near the cutoff and
    ``G⁺ Y = G⁻¹ Y``, which a Cholesky solve gives at a tenth of the cost).

    Unlike a pivoted factorization this does not depend on a choice of columns: a
    direction whose eigenvalue crosses the cutoff under round-off changes f(x) by about
    ``v(x)·(v·y)``, small for a smooth kernel, so the outputs are robust to round-off
    (and so to the BLAS thread count), at about ten times the cost of dpstrf.
    """
    n = G.shape[0]
    rhs = np.asarray(Y, dtype=np.float64).reshape(n, -1)
    inverse = clear_inverse_solve(G, rhs, rcond=rcond, lam_max=lam_max)
    if inverse is not None:
        return inverse.reshape(np.shape(Y)), n, "inverse"
    w, V = scipy.linalg.eigh(G, overwrite_a=overwrite_g, check_finite=False, driver="evd")
    top = float(w[-1]) if lam_max is None else lam_max
    keep = w > rcond * top
    Vk = V[:, keep]
    solution = Vk @ ((Vk.T @ rhs) / w[keep, None])
    return solution.reshape(np.shape(Y)), int(keep.sum()), "eigen"


def clear_inverse_solve(
    G: np.ndarray, Y: np.ndarray, *, rcond: float = DEFAULT_RCOND, lam_max: float | None = None
) -> np.ndarray | None:
    """``G⁻¹ Y`` by a plain Cholesky factorization (G left intact) when every eigenvalue
    of the symmetric PSD G is surely above the pseudo-inverse cutoff ``rcond·λ_max``
    (``λ_max`` defaults to ``‖G‖₁ ≥ λ_max``); None otherwise, also when dpotrf fails.

    "Surely": LAPACK's dpocon estimate ``ρ`` of ``1 / (‖G‖₁ ‖G⁻¹‖₁)`` gives
    ``λ_min ≥ 1 / ‖G⁻¹‖₁ ≈ ρ‖G‖₁``, and ρ‖G‖₁ must exceed the cutoff
    :data:`CLEAR_INVERSE_MARGIN` times, which covers the estimator's usual
    underestimate of ``‖G⁻¹‖₁`` (rarely above 3) with room to spare. Then the
    truncated pseudo-inverse keeps every direction and equals G⁻¹; its condition
    number is below ``1 / (margin·rcond)``, so round-off moves the solution as little
    as it moves the eigendecomposition's.
    """
    n = G.shape[0]
    anorm = float(np.abs(G).sum(axis=0).max()) if n else 0.0
    if n == 0 or anorm == 0.0:
        return None
    cutoff = rcond * (anorm if lam_max is None else lam_max)
    # One BLAS thread for small orders (a second one costs more than it saves when the
    # other core is busy: measured 10-40x slower at n = 1000 on a loaded machine) and
    # from SINGLE_THREAD_FACTOR_ORDER on (the crash); the result is G⁻¹Y either way.
    with blas_threads(factor_threads(n)):
        factor, info = lapack.dpotrf(G, lower=0, clean=0, overwrite_a=0)
    if info != 0:
        return None
    estimate, info = lapack.dpocon(factor, anorm)
    if info != 0 or estimate * anorm <= CLEAR_INVERSE_MARGIN * cutoff:
        return None
    solution, info = lapack.dpotrs(factor, Y, lower=0)
    return solution if info == 0 else None


def _leading_block(F: np.ndarray, r: int) -> np.ndarray:
    """``F[:r, :r]`` as a Fortran-contiguous array, compacted in place inside F's buffer
    (F is Fortran-contiguous and is consumed). LAPACK needs a contiguous triangle, and a
    fresh copy of a matrix this size costs more than moving its columns."""
    n = F.shape[0]
    if r == n:
        return F
    flat = F.reshape(-1, order="F")
    for j in range(1, r):  # column j moves from offset j*n to j*r (overlap is handled)
        flat[j * r : (j + 1) * r] = flat[j * n : j * n + r]
    return flat[: r * r].reshape((r, r), order="F")


def _inverse_of_identity_plus_gram(Wt: np.ndarray) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """``z -> (I + Wt Wtᵀ)⁻¹ z`` for Wt of shape (r, m), factored once."""
    r, m = Wt.shape
    if m == 0:
        return lambda z: z
    if m < r:  # Woodbury: (I + Wt Wtᵀ)⁻¹ = I - Wt (I + Wtᵀ Wt)⁻¹ Wtᵀ
        factor = _cholesky_of_identity_plus(inner_products(Wt.T))
        return lambda z: z - Wt @ cho_solve(factor, Wt.T @ z, check_finite=False)
    factor = _cholesky_of_identity_plus(inner_products(Wt))
    return lambda z: cho_solve(factor, z, check_finite=False)


def _cholesky_of_identity_plus(S: np.ndarray) -> tuple[np.ndarray, bool]:
    """Cholesky factor of ``I + S`` (S consumed), on one BLAS thread from
    :data:`SINGLE_THREAD_FACTOR_ORDER` on (OpenBLAS's threaded dpotrf crashes there)."""
    S[np.diag_indices(S.shape[0])] += 1.0
    threads = 1 if S.shape[0] >= SINGLE_THREAD_FACTOR_ORDER else None
    with blas_threads(threads):
        return cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
