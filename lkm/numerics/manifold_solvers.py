"""The linear algebra of partially penalized RLS and manifold regularization.

The stationarity conditions of the objective of Yang, King and Lyu, eqs. (10) and (12)
(and Belkin, Niyogi and Sindhwani's LapRLS), over a kernel expansion on the training points
plus an unpenalized part ``Ψβ``:

    (1/l) Σ_{labeled} (y_i - f(x_i))² + γ_A αᵀPα + (γ_I/n²) fᵀLf,   f = Kα + Ψβ,

written out in :func:`stationary_system` (the reference, kept for the printed eq. (14) and
the singular cases) and solved without forming it: for P = K by Belkin et al.'s one LU
(:func:`solve_belkin`; with every row in the loss, by refinement on the graph-free
symmetric system, one Cholesky); for the bracket first by the semiparametric system
(:func:`solve_semiparametric`), kept where its certificate
(:func:`semiparametric_certificate`) is at most :func:`certificate_tolerance`; otherwise
with β eliminated by one Cholesky of an n × n matrix (:func:`solve_reduced`), whose
singular cases take the minimum-norm route (:func:`solve_semidefinite`). The estimators
are :mod:`lkm.methods.manifold`'s; the bracket's algebra is
:mod:`lkm.numerics.heat_semigroup`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.linalg import LinAlgError, cho_factor, cho_solve, lstsq, lu_factor, lu_solve, solve
from scipy.linalg.blas import dsyrk

from lkm.numerics.heat_semigroup import bracket_correction_product, semigroup_weights
from lkm.numerics.kernels import mirror_lower_triangle
from lkm.numerics.psd_pinv import eigh_pinv_solve, psd_pinv_solve

#: Default relative tolerance of the rank-revealing routes (pivots or eigenvalues ≤ rcond·λ_max dropped).
RCOND = 1e-12


def loss_weights(labeled: NDArray[np.bool_], weights: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """Return the diagonal of J in the weighted squared loss ``(Y - f)ᵀJ(Y - f)``.

    The sample weights on the labeled rows, 0 on the unlabeled ones (1 on the labeled
    rows when ``weights`` is None: Yang et al.'s eq. (12), J = diag(labeled)).

    Parameters
    ----------
    labeled : ndarray of bool, shape (n,)
        Which rows are labeled.
    weights : ndarray of shape (n,) or None
        Sample weights, or None for weight 1.

    Returns
    -------
    ndarray of shape (n,)
        The diagonal of J.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.manifold_solvers import loss_weights
    >>> loss_weights(np.array([True, False, True]), np.array([2.0, 5.0, 0.5]))
    array([2. , 0. , 0.5])
    """
    mask = labeled.astype(np.float64)
    return mask if weights is None else mask * np.asarray(weights, dtype=np.float64)


def stationary_system(
    K: NDArray[np.float64],
    P: NDArray[np.float64],
    Psi: NDArray[np.float64],
    Y: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    ridge: float,
    L: sp.csr_matrix | None = None,
    graph: float = 0.0,
    printed: bool = False,
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return the linear system ``M [α; β] = r`` of the stationary point (eq. (14)).

    The objective of Yang, King and Lyu [1]_, eqs. (10) and (12).

    With A = [K, Ψ], J = diag(labeled), G = J + λ₂L (λ₂ = ``graph``), λ₁ = ``ridge``:

        M = Aᵀ G A + blockdiag(λ₁P, 0),   r = Aᵀ J Y,

    i.e. rows ``(KJK + λ₁P + λ₂KLK)α + (KJΨ + λ₂KLΨ)β = KJY`` and
    ``(ΨᵀJK + λ₂ΨᵀLK)α + (ΨᵀJΨ + λ₂ΨᵀLΨ)β = ΨᵀJY`` (symmetric). ``printed=True``
    gives the second row as printed in eq. (14) instead:
    ``(ΨᵀJK - λ₂ΨᵀLK)α + (ΨᵀΨ - λ₂ΨᵀLΨ)β = ΨᵀY`` (not symmetric in general).
    Y (n, tasks) holds one column per one-vs-all task (unlabeled rows are ignored: J).
    ``weights`` (n,): sample weights, J = diag(weights on the labeled rows, 0 elsewhere)
    (:func:`loss_weights`). The reference form: the estimators solve it without forming
    it (:func:`solve_reduced`, :func:`solve_belkin`) except for the printed system.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel matrix of the expansion points.
    P : ndarray of shape (n, n)
        The penalty matrix (K, or the bracket ``K - 2K' + K''``).
    Psi : ndarray of shape (n, o)
        The unpenalized functions Ψ at the points (o = 0: none).
    Y : ndarray of shape (n, n_tasks)
        Targets, one column per one-vs-all task (ignored on unlabeled rows).
    labeled : ndarray of bool, shape (n,)
        Which rows are labeled (J = diag(labeled)).
    ridge : float
        λ₁, the penalty's weight.
    L : scipy sparse matrix of shape (n, n) or None, default=None
        The graph Laplacian, or None without a graph.
    graph : float, default=0.0
        λ₂, the graph term's weight.
    printed : bool, default=False
        Whether the second block row is eq. (14) as printed.
    weights : ndarray of shape (n,) or None, default=None
        Sample weights of the loss, or None.

    Returns
    -------
    M : ndarray of shape (n + o, n + o)
        The system matrix.
    r : ndarray of shape (n + o, n_tasks)
        The right-hand side.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.
    """
    n = K.shape[0]
    o = Psi.shape[1]
    A = np.hstack([K, Psi]) if o else K
    Jm = (labeled.astype(np.float64) if weights is None else loss_weights(labeled, weights))[:, None]
    if weights is not None:
        JA = Jm * A
        M = A.T @ (JA + graph * (L @ A)) if L is not None and graph > 0.0 else A.T @ JA
        M = 0.5 * (M + M.T)
    elif L is not None and graph > 0.0:
        M = A.T @ (Jm * A + graph * (L @ A))
        M = 0.5 * (M + M.T)
    else:  # AᵀJA by syrk (lower triangle), mirrored
        M = dsyrk(1.0, (A if labeled.all() else A[labeled]).T, lower=1)
        M += np.tril(M, -1).T
    M[:n, :n] += ridge * P
    r = A.T @ (Jm * Y)
    if printed and o:
        JA = Jm * A
        LA = (L @ A) if L is not None and graph > 0.0 else np.zeros_like(A)
        M[n:, :n] = Psi.T @ (JA[:, :n] - graph * LA[:, :n])
        M[n:, n:] = Psi.T @ Psi - graph * (Psi.T @ LA[:, n:])
        r[n:] = Psi.T @ (Jm * Y)
    return M, r


def solve_stationary(
    M: NDArray[np.float64], r: NDArray[np.float64], rcond: float = RCOND, symmetric: bool = True,
    overwrite_m: bool = False,
    rank_revealing: str = "pivoted-cholesky",
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Solve ``M x = r`` for all columns of r with one factorization.

    Symmetric M (the objective's own system, PSD; only its lower triangle is read):
    Cholesky when every pivot² exceeds ``rcond`` times the largest; otherwise (a singular
    penalty, γ = 0 with a singular K, duplicated rows, a numerically singular Gaussian K)
    the minimum-norm route :func:`solve_semidefinite` (``rank_revealing``: its
    "pivoted-cholesky" or "eigh"). Non-symmetric M (the printed eq. (14)): LAPACK
    ``gelsd`` least squares with the same rcond.

    Parameters
    ----------
    M : ndarray of shape (m, m)
        The system matrix.
    r : ndarray of shape (m, k)
        Right-hand sides.
    rcond : float, default=1e-12
        Relative pivot (or singular value) cutoff.
    symmetric : bool, default=True
        Whether M is the symmetric PSD system (only its lower triangle is read).
    overwrite_m : bool, default=False
        Whether M may be overwritten.
    rank_revealing : {"pivoted-cholesky", "eigh"}, default="pivoted-cholesky"
        The minimum-norm route for a singular symmetric M.

    Returns
    -------
    x : ndarray of shape (m, k)
        The solution.
    info : dict
        ``{"solver": ..., "rank": ...}``: "cholesky", "pivoted-cholesky", "eigh",
        "lstsq" or "empty", and the rank used.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.manifold_solvers import solve_stationary
    >>> x, info = solve_stationary(np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([[2.0], [1.0]]))
    >>> x.round(6).ravel().tolist(), info
    ([0.5, 0.0], {'solver': 'cholesky', 'rank': 2})
    """
    size = M.shape[0]
    if size == 0:
        return np.zeros_like(r), {"solver": "empty", "rank": 0}
    if not symmetric:
        x, _, rank, _ = lstsq(M, r, cond=rcond, check_finite=False)
        return x, {"solver": "lstsq", "rank": int(rank)}
    try:
        factor = cho_factor(M, lower=True, check_finite=False)
        pivots = np.abs(np.diag(factor[0])) ** 2
        if pivots.min() > rcond * pivots.max():
            return cho_solve(factor, r, check_finite=False), {"solver": "cholesky", "rank": size}
    except LinAlgError:
        pass
    return solve_semidefinite(M, r, rcond, rank_revealing, overwrite_m)


def solve_semidefinite(
    M: NDArray[np.float64], r: NDArray[np.float64], rcond: float = RCOND, route: str = "pivoted-cholesky",
    overwrite_m: bool = False,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Return the minimum-norm solution of ``M x = r`` for a singular PSD M.

    Only M's lower triangle is read; the rank cutoff is ``rcond·λ_max(M)``, by PL's
    routes (one implementation each):

    * ``"pivoted-cholesky"``: :func:`lkm.numerics.psd_pinv.psd_pinv_solve`, LAPACK dpstrf
      stopped at a pivot ``≤ rcond·λ_max`` (λ_max by power iteration), then the
      minimum-norm solution of the factored part;
    * ``"eigh"``: :func:`lkm.numerics.psd_pinv.eigh_pinv_solve`, eigenvalues
      ``≤ rcond·λ_max`` dropped (the only route until the pivoted one was added; about 50
      times its time at n = 4,140, measured on the bench fold).

    Which minimizer. A convex quadratic bounded below has a consistent stationarity
    system, and its minimizers differ by null vectors v of M; for M = RᵀR + λ₁P
    (:func:`solve_reduced`, P ⪰ 0), Mv = 0 gives Rv = 0 and vᵀPv = 0: every minimizer has
    the same fitted values and penalty. Both routes return the minimum-norm solution of a
    PSD matrix within round-off of M: eigh's drops eigenvalues ≤ rcond·λ_max; dpstrf's
    leaves ``PᵀMP - UᵀU = [0, 0; 0, S]``, S ⪰ 0, ``‖S‖ ≤ trace S ≤ (n - r)·rcond·λ_max``,
    and returns ``(UᵀU)⁺r`` exactly. Exact null vectors (duplicated rows: e_i - e_j is a
    null vector of K, P and R, and of UᵀU) get no component from either: on an exactly
    singular system with the rest well conditioned the two agree to round-off,
    coefficients included. Where M is only numerically singular (distinct rows, a wide
    Gaussian) they truncate different near-null directions, along which the objective
    is flat to round-off (``‖Rv‖² ≤ vᵀMv`` and ``λ₁vᵀPv ≤ vᵀMv``), so the coefficients
    differ by such directions while f moves little when λ₁ > 0. Measured: on the bench
    fold (spambase 4,140 × 57, σ = 5, γ = 1e-3, rank 3,644 against eigh's 3,630) f moved
    by at most 1.2e-6 on the test rows and 7e-8 on the training rows (``|f|`` up to 1.7, no
    label changed); on 2-3 features with a wide σ by up to 7e-3 (no label changed), each
    route being as stable as the other under row permutation and 1e-15 perturbations
    (≤ 2e-6). With λ₁ = 0 the truncation is the only regularization and the two differed by
    O(10) in f on such data: :func:`solve_reduced` takes eigh there.

    Parameters
    ----------
    M : ndarray of shape (m, m)
        The PSD system matrix (lower triangle read).
    r : ndarray of shape (m, k)
        Right-hand sides.
    rcond : float, default=1e-12
        Relative rank cutoff.
    route : {"pivoted-cholesky", "eigh"}, default="pivoted-cholesky"
        The rank-revealing factorization.
    overwrite_m : bool, default=False
        Whether M (if Fortran-ordered) may be overwritten.

    Returns
    -------
    x : ndarray of shape (m, k)
        The minimum-norm solution.
    info : dict
        ``{"solver": route, "rank": ...}``.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.manifold_solvers import solve_semidefinite
    >>> x, info = solve_semidefinite(np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([[2.0], [2.0]]))
    >>> x.round(6).ravel().tolist(), info
    ([1.0, 1.0], {'solver': 'pivoted-cholesky', 'rank': 1})
    """
    full = _mirror_lower(M if overwrite_m and M.flags.f_contiguous else np.array(M, order="F"))
    solve = eigh_pinv_solve if route == "eigh" else psd_pinv_solve
    x, rank, _ = solve(full, r, rcond=rcond, overwrite_g=True)
    return x, {"solver": route, "rank": rank}


def _mirror_lower(M: NDArray[np.float64], block: int = 512) -> NDArray[np.float64]:
    """M (square) with its strict upper triangle copied from the lower one, in place."""
    n = M.shape[0]
    for start in range(0, n, block):
        stop = min(start + block, n)
        mirror_lower_triangle(M[start:stop, start:stop])
        M[start:stop, stop:] = M[stop:, start:stop].T
    return M


def _unpenalized_fit(S: NDArray[np.float64], rhs: NDArray[np.float64]) -> NDArray[np.float64]:
    """``S⁻¹ rhs`` for the small SPD block S = ΨᵀGΨ (o × o; o = 0 gives an empty result)."""
    if S.shape[0] == 0:
        return np.zeros((0, rhs.shape[1]))
    return solve(S, rhs, assume_a="pos", check_finite=False)


#: Columns per block of :func:`lower_product`.
LOWER_PRODUCT_BLOCK = 256


def lower_product(A: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return ``A @ B`` on and below the diagonal, for a product known to be symmetric.

    For K G K: column block j0:j1 is ``A[j0:] @ B[:, j0:j1]`` (so the diagonal blocks are
    whole; above them, zeros), n³ flops where the full product takes 2n³. LAPACK's
    Cholesky and :func:`solve_stationary` read only the lower triangle.

    Parameters
    ----------
    A : ndarray of shape (n, k)
        Left factor.
    B : ndarray of shape (k, n)
        Right factor, such that ``A @ B`` is symmetric.

    Returns
    -------
    ndarray of shape (n, n), Fortran order
        The lower triangle of the product (and the upper parts of the diagonal blocks);
        zeros above the diagonal blocks.
    """
    n = A.shape[0]
    M = np.zeros((n, B.shape[1]), order="F")
    for j0 in range(0, B.shape[1], LOWER_PRODUCT_BLOCK):
        j1 = min(j0 + LOWER_PRODUCT_BLOCK, B.shape[1])
        M[j0:, j0:j1] = A[j0:] @ B[:, j0:j1]
    return M


def solve_reduced(
    K: NDArray[np.float64],
    P: NDArray[np.float64],
    Psi: NDArray[np.float64],
    Y: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    ridge: float,
    L: sp.csr_matrix | None = None,
    graph: float = 0.0,
    rcond: float = RCOND,
    weights: NDArray[np.float64] | None = None,
    rank_revealing: str | None = None,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """Solve the system of :func:`stationary_system` with β eliminated first.

    The stationary point of Yang, King and Lyu's objective [1]_: one n × n symmetric
    system for α, by :func:`solve_stationary` (Cholesky, or its minimum-norm route when
    singular: ``rank_revealing``, by default "pivoted-cholesky" for λ₁ > 0 and "eigh"
    for λ₁ = 0, see :func:`solve_semidefinite`), then β. Y is 0 on unlabeled rows.

    With G = J + λ₂L, h = GΨ and S = Ψᵀh (o × o, S ⪰ ΨᵀJΨ: nonsingular when a labeled
    point exists), the β rows give ``β = S⁻¹Ψᵀ(JY - GKα)``; substituted in the α rows,

        (K G_β K + λ₁P) α = K(JY - h S⁻¹ΨᵀJY),   G_β = G - h S⁻¹hᵀ,

    the Schur complement of the β block, so (α, β) solve the full system. Without a graph
    G_β is the projection J - JΨ(ΨᵀJΨ)⁻¹ΨᵀJ and K G_β K = RᵀR, R = the labeled rows of K
    minus their least-squares fit on Ψ (column-centred for constant Ψ): one BLAS syrk
    (half the flops of a general product; no cancellation between KJK and the β terms).
    With a graph, K(G_β K) is one product. When the α system is singular (γ = 0 with a
    singular K, duplicated rows) α is its minimum-norm solution and β follows exactly,
    so a target in the span of Ψ (e.g. a constant) is fitted exactly for every γ.

    Sample weights (``weights``, (n,)): J becomes W = diag(w) on the labeled rows
    (:func:`loss_weights`), every formula above with J → W; JY → WY, and without a graph
    R = W^½(K - Ψ S⁻¹ΨᵀWK) on the rows of positive weight, so RᵀR = K W_β K.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel matrix of the expansion points.
    P : ndarray of shape (n, n)
        The penalty matrix (K, or the bracket ``K - 2K' + K''``).
    Psi : ndarray of shape (n, o)
        The unpenalized functions Ψ at the points (o = 0: none).
    Y : ndarray of shape (n, n_tasks)
        Targets, one column per one-vs-all task (ignored on unlabeled rows).
    labeled : ndarray of bool, shape (n,)
        Which rows are labeled (J = diag(labeled)).
    ridge : float
        λ₁, the penalty's weight.
    L : scipy sparse matrix of shape (n, n) or None, default=None
        The graph Laplacian, or None without a graph.
    graph : float, default=0.0
        λ₂, the graph term's weight.
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes.
    weights : ndarray of shape (n,) or None, default=None
        Sample weights of the loss, or None.
    rank_revealing : {"pivoted-cholesky", "eigh"} or None, default=None
        The minimum-norm route when the α system is singular (None: by λ₁, above).

    Returns
    -------
    x : ndarray of shape (n + o, n_tasks)
        ``[α; β]``.
    info : dict
        ``{"solver": ..., "rank": ...}`` (the rank includes Ψ's o columns).

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.
    """
    if weights is not None:
        w = loss_weights(labeled, weights)
        return _solve_reduced_weighted(K, P, Psi, w[:, None] * Y, w, ridge, L, graph, rcond, rank_revealing)
    route = rank_revealing or ("pivoted-cholesky" if ridge > 0.0 else "eigh")
    graph_L = L if graph > 0.0 else None  # the graph term, when there is one
    if graph_L is not None:
        h = graph * (graph_L @ Psi)
        h[labeled] += Psi[labeled]
    else:
        h = np.where(labeled[:, None], Psi, 0.0)
    S = Psi.T @ h
    coef_K = _unpenalized_fit(S, h.T @ K)  # β = coef_Y - coef_K α
    coef_Y = _unpenalized_fit(S, Psi.T @ Y)
    if graph_L is not None:
        GK = graph * (graph_L @ K)
        GK[labeled] += K[labeled]
        GK -= h @ coef_K
        M = lower_product(K, GK)  # K(G_β K), its lower triangle (all solve_stationary reads)
    else:
        R = K if labeled.all() else K[labeled]
        if Psi.shape[1]:
            R = R - Psi[labeled] @ coef_K
        M = dsyrk(1.0, R.T, lower=1)  # RᵀR, lower triangle (all solve_stationary reads)
    M += ridge * P.T  # P is symmetric; .T matches M's Fortran order
    alpha, how = solve_stationary(M, K @ (Y - h @ coef_Y), rcond, overwrite_m=True, rank_revealing=route)
    return np.vstack([alpha, coef_Y - coef_K @ alpha]), {**how, "rank": how["rank"] + Psi.shape[1]}


def _solve_reduced_weighted(
    K: NDArray[np.float64], P: NDArray[np.float64], Psi: NDArray[np.float64], WY: NDArray[np.float64],
    w: NDArray[np.float64], ridge: float, L: sp.csr_matrix | None, graph: float, rcond: float,
    rank_revealing: str | None,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """:func:`solve_reduced` with J = diag(w) (w ≥ 0; WY = w·Y)."""
    route = rank_revealing or ("pivoted-cholesky" if ridge > 0.0 else "eigh")
    graph_L = L if graph > 0.0 else None  # the graph term, when there is one
    h = graph * (graph_L @ Psi) + w[:, None] * Psi if graph_L is not None else w[:, None] * Psi
    S = Psi.T @ h
    coef_K = _unpenalized_fit(S, h.T @ K)
    coef_Y = _unpenalized_fit(S, Psi.T @ WY)
    if graph_L is not None:
        GK = graph * (graph_L @ K) + w[:, None] * K - h @ coef_K
        M = lower_product(K, GK)  # K(G_β K), its lower triangle
    else:
        rows = w > 0.0
        R = K[rows] - Psi[rows] @ coef_K if Psi.shape[1] else K[rows]
        R = np.sqrt(w[rows])[:, None] * R
        M = dsyrk(1.0, R.T, lower=1)
    M += ridge * P.T
    alpha, how = solve_stationary(M, K @ (WY - h @ coef_Y), rcond, overwrite_m=True, rank_revealing=route)
    return np.vstack([alpha, coef_Y - coef_K @ alpha]), {**how, "rank": how["rank"] + Psi.shape[1]}


def solve_belkin(
    K: NDArray[np.float64],
    Psi: NDArray[np.float64],
    Y: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    ridge: float,
    L: sp.csr_matrix | None = None,
    graph: float = 0.0,
    rcond: float = RCOND,
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], dict[str, Any]] | None:
    """Solve LapRLS's system (P = K) in Belkin et al.'s form by one LU.

    ``(GK + λ₁I)α + GΨβ = JY`` with ``Ψᵀα = 0`` [1]_ (G = J + λ₂L; Y: 0 on unlabeled rows),
    one LU for all columns (L sparse: LK is cheap). With a graph and every row in the loss,
    first by refinement on the graph-free symmetric system (:func:`_solve_refined`: one
    Cholesky, about half the LU's flops), the LU where that does not converge.

    The symmetric system's α rows are K times the first equation; given it,
    ``G(Kα + Ψβ) - JY = -λ₁α``, so its β rows read ``λ₁Ψᵀα = 0``: every solution here
    solves the symmetric system. For λ₁ > 0 the matrix is nonsingular (GK is similar to
    K^½GK^½ ⪰ 0; a null vector would give λ₁αᵀKα = -fᵀGf ≤ 0), and its α may differ from
    another solution of the symmetric system by a null vector v of K, whose function
    Σ v_i K(x_i, ·) is 0: the same f. Returns None for λ₁ = 0 or a pivot of U below
    ``rcond`` times the largest (then take the symmetric route).

    Sample weights (``weights``): J → W = diag(w) (:func:`loss_weights`), G = W + λ₂L,
    right-hand side WY; the argument above holds for any diagonal W ⪰ 0.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel matrix of the expansion points.
    Psi : ndarray of shape (n, o)
        The unpenalized functions Ψ at the points (o = 0: none).
    Y : ndarray of shape (n, n_tasks)
        Targets (0 on unlabeled rows).
    labeled : ndarray of bool, shape (n,)
        Which rows are labeled.
    ridge : float
        λ₁ = γ_A·l.
    L : scipy sparse matrix of shape (n, n) or None, default=None
        The graph Laplacian, or None.
    graph : float, default=0.0
        λ₂ = γ_I·l/n².
    rcond : float, default=1e-12
        Relative pivot cutoff below which None is returned.
    weights : ndarray of shape (n,) or None, default=None
        Sample weights of the loss, or None.

    Returns
    -------
    tuple of (ndarray, dict) or None
        ``[α; β]`` of shape (n + o, n_tasks) and ``{"solver": "lu", "rank": n + o}``
        (``{"solver": "refined", "corrections": c, ...}`` by the refined route), or None
        (then take :func:`solve_reduced`).

    References
    ----------
    .. [1] M. Belkin, P. Niyogi and V. Sindhwani, "Manifold regularization: a geometric
       framework for learning from labeled and unlabeled examples", Journal of Machine
       Learning Research 7, pp. 2399-2434, 2006.
    """
    if ridge <= 0.0:
        return None
    n, o = K.shape[0], Psi.shape[1]
    if L is not None and graph > 0.0:
        w = loss_weights(labeled, weights)
        if (w > 0.0).all():
            refined = _solve_refined(K, Psi, Y, w, ridge, L, graph, rcond)  # W⁻¹·WY = Y
            if refined is not None:
                return refined
    Z = np.zeros((n + o, n + o))
    top = Z[:n, :n]
    if weights is None:
        top[labeled] = K[labeled]
        h = np.where(labeled[:, None], Psi, 0.0)
    else:
        w = loss_weights(labeled, weights)
        top += w[:, None] * K
        h = w[:, None] * Psi
        Y = w[:, None] * Y
    if L is not None and graph > 0.0:
        top += graph * (L @ K)
        h += graph * (L @ Psi)
    top[np.diag_indices(n)] += ridge
    Z[:n, n:] = h
    Z[n:, :n] = Psi.T
    lu, piv = lu_factor(Z.T, overwrite_a=True, check_finite=False)  # Z.T is Fortran-ordered: no copy
    pivots = np.abs(np.diag(lu))
    if not pivots.min() > rcond * pivots.max():
        return None
    rhs = np.vstack([Y, np.zeros((o, Y.shape[1]))])
    return lu_solve((lu, piv), rhs, trans=1, check_finite=False), {"solver": "lu", "rank": n + o}


def solve_semiparametric(
    K: NDArray[np.float64],
    Psi: NDArray[np.float64],
    Y: NDArray[np.float64],
    labeled: NDArray[np.bool_],
    ridge: float,
    L: sp.csr_matrix | None = None,
    graph: float = 0.0,
    rcond: float = RCOND,
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], dict[str, Any]] | None:
    """Solve the semiparametric system: PRLS / PLapRLS with the bracket's correction dropped.

    Yang, King and Lyu [1]_, eqs. (10) and (12), with B = K - E, E = k_t - B_t =
    ``2·2^(-d/2) k_{2t} - 3^(-d/2) k_{3t}`` (module description). In the solver's scaling
    (eq. (10)/(12) times Σw, w the sample weights, 1 by default, 0 on unlabeled rows;
    W = diag(w), G = W + λ₂L, λ₁ = γ_A·Σw, λ₂ = γ_I·Σw/n²) the objective is

        F(a, β) = (Y - f)ᵀW(Y - f) + λ₁aᵀBa + λ₂fᵀLf,   f = Ka + Ψβ,

    with ``½∂F/∂a = K[G f - WY + λ₁a] - λ₁Ea`` and ``½∂F/∂β = Ψᵀ(G f - WY)``. The system

        (GK + λ₁I)a + GΨβ = WY,   Ψᵀa = 0

    zeroes the bracket, so ``½∂F/∂β = -λ₁Ψᵀa = 0`` and ``½∂F/∂a = -λ₁Ea``: its solution
    is stationary for eq. (10)/(12) up to one product with E (eq. (10)'s own gradient is
    ``-2γ_A Ea``), which :func:`semiparametric_certificate` measures. With E = 0 (d → ∞)
    it is the exact minimizer: PRLS becomes RLS with an unpenalized Ψ.

    Two factorizations:

    * no graph and w > 0 on every row (PRLS, whose expansion holds only the rows of the
      loss): W⁻¹ times the first block row gives the symmetric
      ``[K + λ₁W⁻¹, Ψ; Ψᵀ, 0][a; β] = [Y; 0]`` (``[K + γlI, 1; 1ᵀ, 0]`` unweighted):
      one Cholesky of C = K + λ₁W⁻¹ (scikit-learn's KernelRidge's n³/3), then the o × o
      Schur complement ``β = (ΨᵀC⁻¹Ψ)⁻¹ΨᵀC⁻¹Y``, ``a = C⁻¹(Y - Ψβ)``; None when a pivot²
      is at or below ``rcond`` times the largest;
    * otherwise (PLapRLS: a graph, w = 0 on the unlabeled rows) the same system is
      :func:`solve_belkin`'s, LapRLS's with ``null_space="constant"`` (one LU).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The unit-diagonal kernel k_t of the expansion points.
    Psi : ndarray of shape (n, o)
        The unpenalized functions Ψ at the points (o = 0: none).
    Y : ndarray of shape (n, n_tasks)
        Targets (ignored on unlabeled rows).
    labeled : ndarray of bool, shape (n,)
        Which rows are labeled.
    ridge : float
        λ₁ = γ·Σw (None is returned for λ₁ = 0).
    L : scipy sparse matrix of shape (n, n) or None, default=None
        The graph Laplacian, or None.
    graph : float, default=0.0
        λ₂ = γ_I·Σw/n².
    rcond : float, default=1e-12
        Relative pivot cutoff below which None is returned.
    weights : ndarray of shape (n,) or None, default=None
        Sample weights of the loss, or None.

    Returns
    -------
    tuple of (ndarray, dict) or None
        ``[a; β]`` of shape (n + o, n_tasks) and ``{"solver": "semiparametric",
        "factorization": "cholesky" or "lu", "rank": n + o}``, or None.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.manifold_solvers import solve_semiparametric
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> x, how = solve_semiparametric(K, np.ones((2, 1)), np.array([[1.0], [-1.0]]), np.ones(2, bool), 1.0)
    >>> x.ravel().round(6).tolist(), how["factorization"]
    ([0.666667, -0.666667, 0.0], 'cholesky')
    """
    if ridge <= 0.0:
        return None
    n, o = K.shape[0], Psi.shape[1]
    w = loss_weights(labeled, weights)
    if (L is not None and graph > 0.0) or not (w > 0.0).all():
        solved = solve_belkin(K, Psi, Y, labeled, ridge, L, graph, rcond, weights)
        if solved is None:
            return None
        x, how = solved
        if how["solver"] == "refined":
            return x, {"solver": "semiparametric", "factorization": "cholesky, refined",
                       "corrections": how["corrections"], "rank": n + o}
        return x, {"solver": "semiparametric", "factorization": "lu", "rank": n + o}
    ridge_solve = _ridge_system(K, Psi, ridge / w, rcond)
    if ridge_solve is None:
        return None
    a, beta = ridge_solve(Y)
    return np.vstack([a, beta]), {"solver": "semiparametric", "factorization": "cholesky", "rank": n + o}


def _ridge_system(
    K: NDArray[np.float64], Psi: NDArray[np.float64], diagonal: NDArray[np.float64], rcond: float
) -> Any:
    """The solver of ``[K + diag(d), Ψ; Ψᵀ, 0][a; β] = [R; 0]`` (d > 0): one Cholesky of
    C = K + diag(d) (scikit-learn's KernelRidge's n³/3), then for each right-hand side R
    the o × o Schur complement ``β = (ΨᵀC⁻¹Ψ)⁻¹ΨᵀC⁻¹R``, ``a = C⁻¹(R - Ψβ)``. Returns
    ``R -> (a, β)``, or None when a pivot² is at or below ``rcond`` times the largest."""
    n = K.shape[0]
    C = K.copy()  # K's order; C is symmetric, so C.T (no copy) is the same matrix in the other order
    C[np.diag_indices(n)] += diagonal
    try:
        factor = cho_factor(C.T if C.flags.c_contiguous else C, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError:
        return None
    pivots = np.abs(np.diag(factor[0])) ** 2
    if not pivots.min() > rcond * pivots.max():
        return None
    Z_Psi = cho_solve(factor, Psi, check_finite=False)
    S = Psi.T @ Z_Psi

    def ridge_solve(R: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        Z_R = cho_solve(factor, R, check_finite=False)
        beta = _unpenalized_fit(S, Psi.T @ Z_R)
        return Z_R - Z_Psi @ beta, beta

    return ridge_solve


#: :func:`solve_belkin`'s refined route: at most :data:`REFINE_MAX` corrections, each
#: smaller than :data:`REFINE_RATE` times the one before, until one no longer is (the
#: graph term's error is gone; what is left is the Cholesky solve's round-off, about
#: cond·eps: 1e-13 relative on the bench fold), which is accepted when it is below
#: :data:`REFINE_FLOOR` relative to the solution; a larger stalled correction takes the LU.
REFINE_MAX, REFINE_RATE, REFINE_FLOOR = 30, 0.25, 1e-10


def _solve_refined(
    K: NDArray[np.float64], Psi: NDArray[np.float64], Y: NDArray[np.float64], w: NDArray[np.float64],
    ridge: float, L: sp.csr_matrix, graph: float, rcond: float,
) -> tuple[NDArray[np.float64], dict[str, Any]] | None:
    """LapRLS's system with every row in the loss (w > 0) by iterative refinement on the
    graph-free system: ``W⁻¹`` times its first block row is

        (K + λ₁W⁻¹)a + Ψβ + λ₂W⁻¹L f = Y,   Ψᵀa = 0,   f = Ka + Ψβ,

    so each correction solves the symmetric ``[K + λ₁W⁻¹, Ψ; Ψᵀ, 0]`` (one Cholesky,
    :func:`_ridge_system`) for the residual, and the error shrinks by the spectral radius
    of λ₂W⁻¹L times a map of norm at most 1 (f from the right-hand side): with
    λ₂ = γ_I·Σw/n², a few corrections reach round-off. Returns None (take the LU) when a
    correction does not shrink fast enough or the Cholesky fails."""
    n, o = K.shape[0], Psi.shape[1]
    ridge_solve = _ridge_system(K, Psi, ridge / w, rcond)
    if ridge_solve is None:
        return None
    a, beta = ridge_solve(Y)
    previous = math.inf
    for corrections in range(1, REFINE_MAX + 1):
        f = K @ a + Psi @ beta
        residual = Y - f - (ridge / w)[:, None] * a - (graph / w)[:, None] * (L @ f)
        da, dbeta = ridge_solve(residual)
        a += da
        beta += dbeta
        size = math.sqrt(float(np.sum(da * da) + np.sum(dbeta * dbeta)))
        if size > REFINE_RATE * previous:  # no longer shrinking: round-off, or no convergence
            if size <= REFINE_FLOOR * math.sqrt(float(np.sum(a * a) + np.sum(beta * beta))):
                return np.vstack([a, beta]), {"solver": "refined", "corrections": corrections, "rank": n + o}
            return None
        previous = size
    return None


def semiparametric_certificate(
    K: NDArray[np.float64], K_a: NDArray[np.float64], a: NDArray[np.float64], ridge: float,
    D: NDArray[np.float64], t: float, d: int,
    K_Lf: NDArray[np.float64] | None = None, graph: float = 0.0, tol: float = 0.0,
) -> float:
    """Return the relative gradient of eq. (10)/(12) at the semiparametric solution.

    At the solution of :func:`solve_semiparametric` the objective's half-gradient in a is
    ``-λ₁Ea`` (β's is 0), the sum of three terms: the data term ``KW(f - Y)`` (equal to
    ``-(λ₁Ka + λ₂KLf)`` there), the penalty ``λ₁Ba = λ₁(Ka - Ea)`` and the graph term
    ``λ₂KLf`` (Yang, King and Lyu [1]_, eqs. (10), (12)). Per column of a,

        ρ = λ₁‖Ea‖ / (‖λ₁Ka + λ₂KLf‖ + λ₁‖Ka‖ + λ₂‖KLf‖),

    the gradient's norm over the sum of its terms' norms (0 at a stationary point, 1 when
    nothing cancels), and the largest over the columns is returned (0 where every column
    has a = 0). ‖Ea‖ is bounded before E is formed, and the first value at or below
    ``tol`` is returned (an upper bound of ρ; the last one is ρ itself):

    1. ``‖Ea‖ ≤ 2·2^(-d/2)·n·‖a‖`` (E's entries lie in ``[-3^(-d/2), 2·2^(-d/2)]``);
    2. ``‖Ea‖ ≤ 2·2^(-d/2)‖k_{2t}a‖ + 3^(-d/2)·n·‖a‖`` with ``k_{2t} = √k_t`` entrywise
       (one square root per entry, no exponential; where k_t underflows to 0, k_{2t} <
       1e-161 is taken as 0);
    3. ``Ea`` itself (:func:`~lkm.numerics.heat_semigroup.bracket_correction_product`: one exponential per entry).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The unit-diagonal kernel k_t.
    K_a : ndarray of shape (n, k)
        ``K a`` (k_t, unit-diagonal).
    a : ndarray of shape (n, k)
        The kernel coefficients of the solution.
    ridge : float
        λ₁.
    D : ndarray of shape (n, n)
        Squared distances between the expansion points.
    t : float
        The heat kernel's time.
    d : int
        The number of features.
    K_Lf : ndarray of shape (n, k) or None, default=None
        ``K L f`` with a graph, or None.
    graph : float, default=0.0
        λ₂.
    tol : float, default=0.0
        The acceptance tolerance (only decides whether the bound suffices).

    Returns
    -------
    float
        ρ, or its upper bound when that is at most ``tol``.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.numerics.manifold_solvers import semiparametric_certificate
    >>> D = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> a = np.array([[1.0], [-1.0]])
    >>> K = np.exp(-D / 4.0)
    >>> round(semiparametric_certificate(K, K @ a, a, 1.0, D, t=1.0, d=2), 4)
    0.2054
    >>> semiparametric_certificate(K, K @ a, a, 1.0, D, t=1.0, d=4000)
    0.0
    """
    pen = ridge * np.linalg.norm(K_a, axis=0)
    if K_Lf is not None and graph > 0.0:
        scale = np.linalg.norm(ridge * K_a + graph * K_Lf, axis=0) + pen + graph * np.linalg.norm(K_Lf, axis=0)
    else:
        scale = 2.0 * pen
    norm_a = np.linalg.norm(a, axis=0)
    live = norm_a > 0.0
    if not live.any():
        return 0.0
    w2, w3 = semigroup_weights(d)
    n = a.shape[0]

    def rho(norm_E_a: NDArray[np.float64]) -> float:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.max(ridge * norm_E_a[live] / scale[live]))

    bound = rho(2.0 * w2 * n * norm_a)
    if bound <= tol:
        return bound
    k2_a = np.empty_like(a)
    rows = min(256, n)
    k2 = np.empty((rows, K.shape[1]))
    for start in range(0, n, rows):
        m = min(rows, n - start)
        np.sqrt(K[start:start + m], out=k2[:m])
        k2_a[start:start + m] = k2[:m] @ a
    bound = rho(2.0 * w2 * np.linalg.norm(k2_a, axis=0) + w3 * n * norm_a)
    if bound <= tol:
        return bound
    return rho(np.linalg.norm(bracket_correction_product(D, t, d, a), axis=0))


def certificate_tolerance(rcond: float) -> float:
    """Return the semiparametric route's tolerance ``√rcond`` on the relative gradient ρ.

    The resolution of the rank-revealing routes (:func:`solve_reduced`): they solve
    ``M = K W_β K + λ₁B`` and treat as null every unit direction v with
    ``vᵀMv ≤ rcond·λ_max(M)``, so ``‖W_β^½ K v‖ ≤ √(rcond·λ_max(M))``: the data term's
    gradient ``K W_β(f - Y)`` is resolved only to about √rcond of its scale
    ``√λ_max(M)·‖W_β^½(f - Y)‖`` (measured on the bench fold, spambase 4,140 × 57: that
    route's own relative gradient is 2e-9, the semiparametric solution's 3.8e-9 with a
    lower objective). A semiparametric solution whose relative gradient of Yang, King and
    Lyu's eq. (10)/(12) (:func:`semiparametric_certificate`) is at most √rcond is as
    stationary as the rank-revealing route resolves. Letter's d = 16 gives ρ ≈ 6e-3.

    Parameters
    ----------
    rcond : float
        The estimator's relative rank cutoff.

    Returns
    -------
    float
        ``√rcond`` (1e-6 for the default 1e-12).

    Examples
    --------
    >>> from lkm.numerics.manifold_solvers import certificate_tolerance
    >>> certificate_tolerance(1e-12)
    1e-06
    """
    return math.sqrt(rcond)
