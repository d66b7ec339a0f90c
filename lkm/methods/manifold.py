"""Partially penalized RLS and manifold regularization (Yang, King, Lyu; Belkin, Niyogi,
Sindhwani, "Manifold regularization", JMLR 2006).

Three estimators share one quadratic objective over a kernel expansion on the training
points plus an unpenalized part ``Ψβ`` (Yang et al., eqs. (10) and (12)):

    (1/l) Σ_{labeled} (y_i - f(x_i))² + γ_A αᵀPα + (γ_I/n²) fᵀLf,
    f = Kα + Ψβ,  n = l + u,

* :class:`PRLS` (eq. (10)): labeled points only, P = K - 2K' + K'' (eq. (9)), no graph;
* :class:`LapRLS` (Belkin et al.): P = K (the RKHS norm), no Ψ, a k-NN graph Laplacian L;
* :class:`PLapRLS` (eq. (12)): P = K - 2K' + K'' and the graph.

The stationarity conditions of the objective form one symmetric block system (the
normal equations written out in :func:`solve_stationary`), factored once for all
one-vs-all right-hand sides.

Kernel conventions (Sec. 4.1, eq. (16)). With the *normalized* heat kernel
``K_t = c_t k_t``, ``c_s = (4πs)^(-d/2)``, ``k_s(x, y) = exp(-||x - y||²/4s)``, the
semigroup property gives ``K' = K_{2t}``, ``K'' = K_{3t}``, so

    K - 2K' + K'' = c_t [k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}]     (c_{2t}/c_t = 2^(-d/2)).

Writing f in unit-diagonal coefficients a = c_t α (``f = Σ a_i k_t(x_i, ·) + Ψβ``), the
data and graph terms are unchanged and the penalty is ``(γ/c_t) aᵀ B_t a`` with the
bracket ``B_t = k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}``. The estimators solve in
this scaling (the weights 2^(-d/2), 3^(-d/2) computed from logs; they flush to 0 below
float64's range, e.g. d = 617, exactly where they are negligible against 1). So:

* ``unit_diagonal=True`` (default): ``gamma`` multiplies ``aᵀ B_t a`` — the normalized
  penalty with γ measured in units of c_t (γ_normalized = γ·c_t);
* ``unit_diagonal=False``: ``gamma`` multiplies the normalized penalty
  ``αᵀ(K - 2K' + K'')α`` as printed; solved as γ/c_t on B_t, with γ/c_t formed in logs.
  A NumericalError names d and t when γ/c_t overflows float64 (high dimension).
* In high dimension B_t → k_t: the penalty becomes the plain RKHS norm of the kernel
  part (PRLS → RLS with an unpenalized constant), and in normalized units γ is divided
  by c_t = (4πt)^(-d/2), astronomically large for d = 617 (c_t ≈ 1e-617 at t = 8).
* ``kernel="gaussian"`` with width σ, ``exp(-||x - y||²/2σ²)``, is k_t with t = σ²/2
  (so k_{2t}, k_{3t} have widths σ√2, σ√3); it is always unit-diagonal.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh, lstsq
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from lkm.errors import NumericalError
from lkm.kernels import DistanceCache, heat_from_sq, sq_dists
from lkm.methods.base import (
    SCALE,
    SIGMA_CONSTRAINT,
    LocalKernelClassifier,
    check_feature_scale,
    memoized,
    resolve_sigma,
)
from lkm.neighbors import k_smallest

#: Default relative tolerance of the rank-revealing route (eigenvalues below rcond·max are dropped).
RCOND = 1e-12


def semigroup_weights(d: int) -> tuple[float, float]:
    """``(2^(-d/2), 3^(-d/2))``, the weights of k_{2t} and k_{3t} in the bracket
    ``k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}`` (computed in logs; 0.0 where they
    underflow, e.g. 3^(-d/2) for d > 1290)."""
    return math.exp(-0.5 * d * math.log(2.0)), math.exp(-0.5 * d * math.log(3.0))


def normalized_gamma(gamma: float, d: int, t: float) -> float:
    """``gamma / c_t`` with ``c_t = (4πt)^(-d/2)``, from logs: the unit-diagonal weight
    equal to ``gamma`` on the normalized heat kernel's penalty. Raises NumericalError
    (naming d and t) when it overflows float64."""
    if gamma == 0.0:
        return 0.0
    log_value = math.log(gamma) + 0.5 * d * math.log(4.0 * math.pi * t)
    if log_value > math.log(np.finfo(np.float64).max):
        raise NumericalError(
            f"normalized heat kernel: gamma/(4*pi*t)^(-d/2) overflows float64 for d={d}, t={t} "
            f"(the prefactor is 10^{-0.5 * d * math.log10(4.0 * math.pi * t):.0f}); use unit_diagonal=True, "
            "where gamma multiplies the same penalty in units of the prefactor"
        )
    return math.exp(log_value)


def penalty_bracket(D: np.ndarray, t: float, d: int) -> np.ndarray:
    """``B_t = k_t - 2·2^(-d/2) k_{2t} + 3^(-d/2) k_{3t}`` from squared distances D: the
    penalty ``K - 2K' + K''`` (eq. (9), (16)) of the normalized heat kernel divided by
    its prefactor c_t (module docstring)."""
    w2, w3 = semigroup_weights(d)
    B = heat_from_sq(D, t)
    if w2 > 0.0:
        B -= (2.0 * w2) * heat_from_sq(D, 2.0 * t)
    if w3 > 0.0:
        B += w3 * heat_from_sq(D, 3.0 * t)
    return B


def knn_laplacian(
    D: np.ndarray, k: int, weights: str, t: float, normalized: bool
) -> sp.csr_matrix:
    """Graph Laplacian of the symmetrized k-nearest-neighbour graph (Belkin et al. 2006).

    Each point is joined to its k nearest other points (squared distances D, ties by
    index); ``W = max(W, Wᵀ)`` (an edge when either end is among the other's k nearest);
    weights ``exp(-||x_i - x_j||²/4t)`` (``"heat"``) or 1 (``"binary"``). Returns
    ``L = D - W`` or, with ``normalized``, ``I - D^(-1/2) W D^(-1/2)`` (isolated points
    get a zero row), as CSR.
    """
    n = D.shape[0]
    k = min(k, n - 1)
    if k <= 0:
        return sp.csr_matrix((n, n))
    far = np.array(D, dtype=np.float64)
    np.fill_diagonal(far, np.inf)
    nearest = k_smallest(far, k)  # the package's one tie rule: equal distances by lower index
    rows = np.repeat(np.arange(n), k)
    cols = nearest.ravel()
    values = heat_from_sq(far[rows, cols], t) if weights == "heat" else np.ones(rows.size)
    W = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    W = W.maximum(W.T).tocsr()
    degree = np.asarray(W.sum(axis=1)).ravel()
    if not normalized:
        return (sp.diags(degree) - W).tocsr()
    inv_root = np.zeros(n)
    np.divide(1.0, np.sqrt(degree), out=inv_root, where=degree > 0.0)
    S = sp.diags(inv_root)
    return (sp.diags((degree > 0.0).astype(np.float64)) - S @ W @ S).tocsr()


def stationary_system(
    K: np.ndarray,
    P: np.ndarray,
    Psi: np.ndarray,
    Y: np.ndarray,
    labeled: np.ndarray,
    ridge: float,
    L: sp.spmatrix | None = None,
    graph: float = 0.0,
    printed: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The linear system ``M [α; β] = r`` of the stationary point, in eq. (14)'s notation.

    With A = [K, Ψ], J = diag(labeled), G = J + λ₂L (λ₂ = ``graph``), λ₁ = ``ridge``:

        M = Aᵀ G A + blockdiag(λ₁P, 0),   r = Aᵀ J Y,

    i.e. rows ``(KJK + λ₁P + λ₂KLK)α + (KJΨ + λ₂KLΨ)β = KJY`` and
    ``(ΨᵀJK + λ₂ΨᵀLK)α + (ΨᵀJΨ + λ₂ΨᵀLΨ)β = ΨᵀJY`` (symmetric). ``printed=True``
    gives the second row as printed in eq. (14) instead:
    ``(ΨᵀJK - λ₂ΨᵀLK)α + (ΨᵀΨ - λ₂ΨᵀLΨ)β = ΨᵀY`` (not symmetric in general).
    Y (n, tasks) holds one column per one-vs-all task (unlabeled rows are ignored: J).
    """
    n = K.shape[0]
    o = Psi.shape[1]
    A = np.hstack([K, Psi]) if o else K
    Jm = labeled.astype(np.float64)[:, None]
    GA = Jm * A
    if L is not None and graph > 0.0:
        GA += graph * (L @ A)
    M = A.T @ GA
    M[:n, :n] += ridge * P
    M = 0.5 * (M + M.T)
    r = A.T @ (Jm * Y)
    if printed and o:
        JA = Jm * A
        LA = (L @ A) if L is not None and graph > 0.0 else np.zeros_like(A)
        M[n:, :n] = Psi.T @ (JA[:, :n] - graph * LA[:, :n])
        M[n:, n:] = Psi.T @ Psi - graph * (Psi.T @ LA[:, n:])
        r[n:] = Psi.T @ np.where(labeled[:, None], Y, 0.0)
    return M, r


def solve_stationary(M: np.ndarray, r: np.ndarray, rcond: float = RCOND, symmetric: bool = True) -> tuple[np.ndarray, dict[str, Any]]:
    """Solve ``M x = r`` for all columns of r with one factorization.

    Symmetric M (the objective's own system, PSD): Cholesky when every pivot² exceeds
    ``rcond`` times the largest; otherwise (a singular penalty, γ = 0 with a singular K)
    the rank-revealing route: ``eigh``, eigenvalues below ``rcond·max`` dropped, giving
    the minimum-norm least-squares solution — a minimizer of the objective, since a
    convex quadratic bounded below has a consistent stationarity system. Non-symmetric
    M (the printed eq. (14)): LAPACK ``gelsd`` least squares with the same rcond.
    Returns the solution and ``{"solver": ..., "rank": ...}``.
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
    values, vectors = eigh(M, check_finite=False)
    keep = values > rcond * max(values.max(), 0.0)
    x = vectors[:, keep] @ ((vectors[:, keep].T @ r) / values[keep][:, None])
    return x, {"solver": "eigh", "rank": int(keep.sum())}


_SHARED_CONSTRAINTS: dict = {
    "kernel": [StrOptions({"heat", "gaussian"})],
    "t": [Interval(Real, 0, None, closed="neither")],
    "sigma": SIGMA_CONSTRAINT,
    "unit_diagonal": ["boolean"],
    "unlabeled_label": [None, Integral, str],
    "rcond": [Interval(Real, 0, 1, closed="left")],
}
_GRAPH_CONSTRAINTS: dict = {
    "gamma_A": [Interval(Real, 0, None, closed="left")],
    "gamma_I": [Interval(Real, 0, None, closed="left")],
    "graph_k": [Interval(Integral, 1, None, closed="left")],
    "graph_weights": [StrOptions({"heat", "binary"})],
    "graph_t": [None, Interval(Real, 0, None, closed="neither")],
    "normalized_laplacian": ["boolean"],
}


class _ManifoldBase(LocalKernelClassifier):
    """Shared fitting: label mask, kernel scaling, the block system, ``f = k a + β``."""

    conditional_params = {"sigma": ("kernel", ("gaussian",)), "t": ("kernel", ("heat",)),
                          "unit_diagonal": ("kernel", ("heat",))}
    _numerical_params = ("kernel", "sigma", "t")
    #: Whether unlabeled rows join the kernel expansion and the graph (not for PRLS).
    _uses_unlabeled = True

    # ------------------------------------------------------------------ inputs
    def _unlabeled_mask(self, y: np.ndarray, unlabeled: Any) -> tuple[np.ndarray, str]:
        if unlabeled is not None:
            mask = np.asarray(unlabeled)
            if mask.dtype != bool or mask.shape != y.shape:
                raise ValueError(f"unlabeled must be a boolean mask of shape {y.shape}; got dtype "
                                 f"{mask.dtype} and shape {mask.shape}")
            return mask, "mask"
        label = self.unlabeled_label
        if label is None:
            return np.zeros(y.shape, dtype=bool), "none"
        if y.dtype.kind in "iuf" and not isinstance(label, str):
            return y == label, f"y == {label!r}"
        if y.dtype.kind == "O":
            return np.fromiter((v == label for v in y), dtype=bool, count=y.size), f"y == {label!r}"
        if y.dtype.kind == "U" and isinstance(label, str):
            return y == label, f"y == {label!r}"
        return np.zeros(y.shape, dtype=bool), f"y == {label!r}"

    def _validate_semi(self, X: Any, y: Any, unlabeled: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate; set classes_ (from labeled rows), class_count_, sigma_. Returns
        (X, mask of labeled rows, class index per labeled row)."""
        self._validate_params()
        self._reject_boolean_numbers()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_feature_scale(X, type(self).__name__)
        mask, rule = self._unlabeled_mask(y, unlabeled)
        if mask.all():
            raise ValueError(f"{type(self).__name__}: all {y.size} points are unlabeled ({rule}); "
                             "give at least one labeled point of each of two classes")
        y_labeled = y[~mask]
        check_classification_targets(y_labeled)
        self.classes_, y_index = np.unique(y_labeled, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least two classes; got 1 class "
                             f"among the {y_labeled.size} labeled points")
        self.class_count_ = np.bincount(y_index, minlength=self.classes_.size)
        self._rule = rule
        return X, ~mask, y_index

    def _t_and_units(self, X: np.ndarray) -> float:
        """The heat time t of the unit-diagonal kernel k_t (σ²/2 for the Gaussian)."""
        if self.kernel == "gaussian":
            self.sigma_ = resolve_sigma(self.sigma, X)
            return 0.5 * self.sigma_ * self.sigma_
        return float(self.t)

    def _penalty_weight(self, gamma: float, d: int, t: float) -> float:
        if self.kernel == "heat" and not self.unit_diagonal:
            return normalized_gamma(gamma, d, t)
        return gamma

    # ------------------------------------------------------------------ the solve
    def _fit_system(
        self, X: np.ndarray, labeled: np.ndarray, y_index: np.ndarray, cache: DistanceCache | None,
        *, gamma: float, bracket: bool, null_space: str, gamma_I: float = 0.0, printed: bool = False,
    ) -> None:
        """Fit ``f = k_t(·, X_fit) a + Ψβ`` at the stationary point (or the printed system)."""
        if not self._uses_unlabeled and not labeled.all():
            X = X[labeled]
            labeled = np.ones(X.shape[0], dtype=bool)
        n, d = X.shape
        n_lab = int(labeled.sum())
        t = self._t_and_units(X)
        D = sq_dists(X, X, cache)
        K = heat_from_sq(D, t)
        P = penalty_bracket(D, t, d) if bracket else K
        Psi = np.ones((n, 1)) if null_space == "constant" else np.zeros((n, 0))
        labels = self._dummy_outputs(y_index)
        Y = np.zeros((n, labels.shape[1] if labels.ndim == 2 else 1))
        Y[labeled] = labels.reshape(n_lab, -1)
        L = None
        lam2 = 0.0
        if gamma_I > 0.0:
            graph_t = t if self.graph_t is None else float(self.graph_t)
            L = memoized(cache, ("lkm.manifold.laplacian", self.graph_k, self.graph_weights, graph_t,
                                 bool(self.normalized_laplacian)),
                         lambda: knn_laplacian(D, self.graph_k, self.graph_weights, graph_t,
                                               self.normalized_laplacian), X)
            lam2 = gamma_I * n_lab / float(n * n)
        lam1 = self._penalty_weight(gamma, d, t) * n_lab
        M, r = stationary_system(K, P, Psi, Y, labeled, lam1, L, lam2, printed)
        symmetric = not (printed and Psi.shape[1])  # printed == derived without Ψ
        x, how = solve_stationary(M, r, self.rcond, symmetric=symmetric)
        self.X_fit_ = X
        if labels.ndim == 1:  # two classes: one column, stored 1-D
            x = x[:, 0]
        self.dual_coef_ = x[:n]
        self.intercept_ = x[n] if Psi.shape[1] else np.zeros(x.shape[1:])
        self.info_ = {
            "n_labeled": n_lab, "n_unlabeled": n - n_lab if self._uses_unlabeled else None, "unlabeled_rule": self._rule,
            "kernel": self.kernel, "t": t, "unit_diagonal": bool(self.unit_diagonal or self.kernel == "gaussian"),
            "penalty": "K-2K'+K''" if bracket else "K", "null_space_dim": int(Psi.shape[1]),
            "lambda_1": lam1, "lambda_2": lam2, "system": "derived" if symmetric else "printed eq. (14)",
            **how,
        }
        if bracket:
            w2, w3 = semigroup_weights(d)
            self.info_.update(weight_2t=w2, weight_3t=w3)
        if self.kernel == "gaussian":
            self.info_["sigma"] = self.sigma_
        if L is not None:
            self.info_.update(graph_k=int(self.graph_k), graph_weights=self.graph_weights, graph_t=graph_t,
                              normalized_laplacian=bool(self.normalized_laplacian),
                              n_edges=int(L.count_nonzero() - np.count_nonzero(L.diagonal())) // 2)
            self.laplacian_ = L
        else:
            self.__dict__.pop("laplacian_", None)  # no graph in this fit (gamma_I = 0)

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """One-vs-all scores ``f(x) = Σ a_i k_t(x, x_i) + β``: (n,) for two classes
        (positive means ``classes_[1]``), else (n, n_classes)."""
        X = self._validate_query(X)
        return heat_from_sq(sq_dists(X, self.X_fit_, cache), self.info_["t"]) @ self.dual_coef_ + self.intercept_


class PRLS(_ManifoldBase):
    """Partially penalized regularized least squares (Yang, King, Lyu, eqs. (7)–(11)).

    Minimizes ``(1/l)||Y - Kα - Ψβ||² + gamma·αᵀ(K - 2K' + K'')α`` (eq. (10)) with
    ``K' = K_{2t}``, ``K'' = K_{3t}`` (eq. (16)) and Ψ = constants (``null_space=
    "constant"``, unpenalized: they lie in the null space of I - L_K for the heat kernel)
    or no Ψ (``"none"``). The stationarity system (11),
    ``(γl(K-2K'+K'') + K²)α + KΨβ = KY``, ``Ψᵀ(Y - Kα - Ψβ) = 0``, is solved as one
    symmetric block system (:func:`stationary_system` with J = I and no graph) by
    Cholesky, or, when it is singular (γ = 0 with a singular K), by the documented
    minimum-norm least-squares route (:func:`solve_stationary`, ``rcond``).

    Kernel scaling: see the module docstring (``unit_diagonal=True``, the default, is the
    numerically safe form; False means gamma multiplies the normalized heat kernel's
    penalty). Unlabeled rows (``fit(X, y, unlabeled=mask)``, else ``y == unlabeled_label``,
    -1 by default, None to disable) are ignored. Several classes: one-vs-all ±1 columns
    solved with one factorization; predict takes the sign (two classes) or the argmax;
    an exact tie goes to the class with more labeled points, then the lower class index
    (:meth:`LocalKernelClassifier._labels_from_decision`).

    ``info_``: n_labeled, n_unlabeled, unlabeled_rule, kernel, t (of k_t; σ²/2 for the
    Gaussian), sigma, unit_diagonal, penalty, null_space_dim, lambda_1 (γl in the
    unit-diagonal scaling), weight_2t, weight_3t, system, solver, rank.
    """

    _uses_unlabeled = False
    _parameter_constraints: dict = {
        **_SHARED_CONSTRAINTS,
        "gamma": [Interval(Real, 0, None, closed="left")],
        "null_space": [StrOptions({"constant", "none"})],
    }

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        gamma: float = 0.01,
        null_space: str = "constant",
        unit_diagonal: bool = True,
        unlabeled_label: Any = -1,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.gamma = gamma
        self.null_space = null_space
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond

    def fit(self, X: Any, y: Any, unlabeled: Any = None, cache: DistanceCache | None = None) -> PRLS:
        """Fit on the labeled rows (``unlabeled``: optional boolean mask, which wins over
        ``unlabeled_label``)."""
        X, labeled, y_index = self._validate_semi(X, y, unlabeled)
        self._fit_system(X, labeled, y_index, cache, gamma=float(self.gamma), bracket=True,
                         null_space=self.null_space)
        self.info_["n_unlabeled"] = int((~labeled).sum())
        return self


class LapRLS(_ManifoldBase):
    """Laplacian regularized least squares (Belkin, Niyogi, Sindhwani 2006).

    Minimizes ``(1/l)Σ_{labeled}(y_i - f(x_i))² + gamma_A||f||²_K + (gamma_I/n²) fᵀLf``
    over ``f = Σ_{i≤n} α_i K(x_i, ·)``, n = l + u. Belkin et al.'s solution
    ``α = (JK + γ_A l I + γ_I l/n² LK)⁻¹ Y`` is solved in the symmetric form
    ``(KJK + γ_A l K + γ_I l/n² KLK)α = KJY``: it is K times theirs, so their α solves
    it, and any two solutions differ by v with Kv = 0, whose function Σ v_i K(x_i, ·) has
    RKHS norm vᵀKv = 0 — the same f everywhere. (The paper's eq. (12) writes the graph
    term as Σ_{i,j}(f_i - f_j)²W_ij = 2fᵀLf; gamma_I here is Belkin's, fᵀLf.)

    Graph: each point joined to its ``graph_k`` nearest others over labeled + unlabeled
    points, symmetrized by max(W, Wᵀ), weights ``exp(-||x_i - x_j||²/4·graph_t)``
    (``"heat"``, graph_t defaults to the kernel's t, σ²/2 for the Gaussian, so the
    weights are the kernel's own values) or 1 (``"binary"``); L = D - W, or
    I - D^(-1/2)WD^(-1/2) with ``normalized_laplacian`` (:func:`knn_laplacian`). The
    graph does not depend on the labels and is memoized in ``cache``. ``sigma="scale"``
    is resolved from all rows (labeled and unlabeled). The paper's quoted
    "γ_A l" and "γ_I l/(u+l)²" are ``info_['lambda_1']`` and ``info_['lambda_2']``.
    Unlabeled rows: ``fit(X, y, unlabeled=mask)``, else ``y == unlabeled_label`` (-1).
    """

    _parameter_constraints: dict = {**_SHARED_CONSTRAINTS, **_GRAPH_CONSTRAINTS}

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        gamma_A: float = 0.01,
        gamma_I: float = 0.01,
        graph_k: int = 6,
        graph_weights: str = "heat",
        graph_t: float | None = None,
        normalized_laplacian: bool = False,
        unit_diagonal: bool = True,
        unlabeled_label: Any = -1,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.graph_k = graph_k
        self.graph_weights = graph_weights
        self.graph_t = graph_t
        self.normalized_laplacian = normalized_laplacian
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond

    def fit(self, X: Any, y: Any, unlabeled: Any = None, cache: DistanceCache | None = None) -> LapRLS:
        """Fit on all rows (``unlabeled``: optional boolean mask, which wins over ``unlabeled_label``)."""
        X, labeled, y_index = self._validate_semi(X, y, unlabeled)
        self._fit_system(X, labeled, y_index, cache, gamma=float(self.gamma_A), bracket=False,
                         null_space="none", gamma_I=float(self.gamma_I))
        return self


class PLapRLS(LapRLS):
    """Partially penalized LapRLS (Yang, King, Lyu, eqs. (12)–(14)).

    Minimizes eq. (12) with the squared loss,
    ``E(α, β) = (1/l)(Y - Kα - Ψβ)ᵀJ(Y - Kα - Ψβ) + γ_A αᵀ(K - 2K' + K'')α
    + (γ_I/n²)(Kα + Ψβ)ᵀL(Kα + Ψβ)`` (graph term in Belkin's fᵀLf form, see LapRLS).

    Derivation. With λ₁ = γ_A l, λ₂ = γ_I l/n², (l/2)∂E/∂α = 0 and (l/2)∂E/∂β = 0 read

        (KJK + λ₁(K - 2K' + K'') + λ₂KLK)α + (KJΨ + λ₂KLΨ)β = KJY,
        (ΨᵀJK + λ₂ΨᵀLK)α + (ΨᵀJΨ + λ₂ΨᵀLΨ)β = ΨᵀJY.

    Term by term against the printed eq. (14): the first row is identical; in the second
    the printed ``-λ₂ΨᵀLK`` and ``-λ₂ΨᵀLΨ`` have the wrong sign, the printed ``ΨᵀΨ``
    lacks J (it counts all n points instead of the l labeled ones), and ``ΨᵀY`` = ``ΨᵀJY``
    (Y is 0 on unlabeled rows). For constant Ψ and L = D - W, LΨ = 0, so the sign slip
    is invisible and the one difference is ΨᵀΨ = n against ΨᵀJΨ = l: the printed system
    is the stationary point of E + (1/l)Σ_{unlabeled}β² (the constant pulled towards 0
    on the unlabeled points). With the normalized Laplacian (L1 ≠ 0) the printed system
    is not symmetric and is the stationary point of no objective.

    ``system="derived"`` (default) solves the derived, symmetric system (a minimizer of
    E); ``"printed"`` solves eq. (14) as printed (least squares, for comparison; where
    it differs its solution is not stationary for E). Other parameters as LapRLS, plus
    ``null_space`` as PRLS.
    """

    _parameter_constraints: dict = {
        **LapRLS._parameter_constraints,
        "null_space": [StrOptions({"constant", "none"})],
        "system": [StrOptions({"derived", "printed"})],
    }

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        gamma_A: float = 0.01,
        gamma_I: float = 0.01,
        graph_k: int = 6,
        graph_weights: str = "heat",
        graph_t: float | None = None,
        normalized_laplacian: bool = False,
        null_space: str = "constant",
        system: str = "derived",
        unit_diagonal: bool = True,
        unlabeled_label: Any = -1,
        rcond: float = RCOND,
    ) -> None:
        super().__init__(kernel=kernel, t=t, sigma=sigma, gamma_A=gamma_A, gamma_I=gamma_I, graph_k=graph_k,
                         graph_weights=graph_weights, graph_t=graph_t, normalized_laplacian=normalized_laplacian,
                         unit_diagonal=unit_diagonal, unlabeled_label=unlabeled_label, rcond=rcond)
        self.null_space = null_space
        self.system = system

    def fit(self, X: Any, y: Any, unlabeled: Any = None, cache: DistanceCache | None = None) -> PLapRLS:
        """Fit on all rows (``unlabeled``: optional boolean mask, which wins over ``unlabeled_label``)."""
        X, labeled, y_index = self._validate_semi(X, y, unlabeled)
        self._fit_system(X, labeled, y_index, cache, gamma=float(self.gamma_A), bracket=True,
                         null_space=self.null_space, gamma_I=float(self.gamma_I),
                         printed=self.system == "printed")
        return self
