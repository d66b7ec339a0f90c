"""Partially penalized RLS and manifold regularization (Yang, King, Lyu; Belkin, Niyogi,
Sindhwani, "Manifold regularization", JMLR 2006).

Three estimators share one quadratic objective over a kernel expansion on the training
points plus an unpenalized part ``Ψβ`` (Yang et al., eqs. (10) and (12)):

    (1/l) Σ_{labeled} (y_i - f(x_i))² + γ_A αᵀPα + (γ_I/n²) fᵀLf,
    f = Kα + Ψβ,  n = l + u,

* :class:`PRLS` (eq. (10)): labeled points only, P = K - 2K' + K'' (eq. (9)), no graph;
* :class:`LapRLS` (Belkin et al.): P = K (the RKHS norm), a k-NN graph Laplacian L, no Ψ
  (or constants, ``null_space="constant"``);
* :class:`PLapRLS` (eq. (12)): P = K - 2K' + K'' and the graph.

:class:`PRLSRegressor` and :class:`LapRLSRegressor` minimize the same objectives for one
real-valued target (Yang et al.'s Fig. 1 toy) and predict f(x).

Solving. The stationarity conditions are the symmetric block system written out in
:func:`~lkm.numerics.manifold_solvers.stationary_system` (the reference, kept for the printed eq. (14) and the singular
cases). It is solved without forming it: for P = K (LapRLS) by Belkin et al.'s one LU
(:func:`~lkm.numerics.manifold_solvers.solve_belkin`; with a graph and every row in the
loss, first by refinement on the graph-free symmetric system, one Cholesky of
``K + λ₁W⁻¹``: γ_I·Σw/n² makes the graph a small correction, gone after a few
solves, ``info_['solver'] == "refined"``); for the bracket (PRLS, PLapRLS) first by the semiparametric
system, the bracket written ``B_t = k_t - E`` and E dropped (:func:`~lkm.numerics.manifold_solvers.solve_semiparametric`:
one Cholesky of ``k_t + λ₁W⁻¹``, or Belkin's LU with a graph), kept where its certificate
— the true objective's relative gradient at that solution, ``-λ₁Ea`` over the gradient's
terms (:func:`~lkm.numerics.manifold_solvers.semiparametric_certificate`) — is at most ``√rcond``
(:func:`~lkm.numerics.manifold_solvers.certificate_tolerance`; E's entries are at most 2·2^(-d/2), so in practice from
d ≈ 40 on: spambase's 57, USPS's 256, isolet's 617); otherwise, or when an LU is
singular, with β eliminated by one Cholesky of an n × n matrix (:func:`~lkm.numerics.manifold_solvers.solve_reduced`),
whose pivots below ``rcond``·max (γ = 0 with a singular K, duplicated rows, a
numerically singular Gaussian K) switch to a minimum-norm route
(:func:`~lkm.numerics.manifold_solvers.solve_semidefinite`): PL's pivoted Cholesky, or ``eigh`` when γ = 0.
All one-vs-all columns share the factorization.

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
* ``kernel="poly"`` (LapRLS only; Belkin et al.'s USPS kernel, Yang et al. Sec. 5.3):
  ``(x·y/d + coef0)^degree`` (:func:`poly_gram`). It has no semigroup, so the bracket
  penalty is undefined for it and PRLS / PLapRLS refuse it.

No estimator here takes ``n_jobs``: each fit solves one global system (the graph couples
every point) and prediction is one kernel product, both threaded inside BLAS/LAPACK.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, Self

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import Tags
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from lkm.methods.base import (
    SCALE,
    SIGMA_CONSTRAINT,
    LocalKernelClassifier,
    check_feature_scale,
    densify,
    memoized,
    resolve_sigma,
)
from lkm.methods.risk import check_sample_weight
from lkm.numerics.graph_laplacian import knn_laplacian
from lkm.numerics.heat_semigroup import normalized_gamma, penalty_bracket, semigroup_weights
from lkm.numerics.kernels import DistanceCache, heat_from_sq, heat_gram, polynomial_kernel, sq_dists
from lkm.numerics.manifold_solvers import (
    RCOND,
    certificate_tolerance,
    loss_weights,
    semiparametric_certificate,
    solve_belkin,
    solve_reduced,
    solve_semiparametric,
    solve_stationary,
    stationary_system,
)


def poly_gram(A: np.ndarray, B: np.ndarray, degree: int, coef0: float) -> np.ndarray:
    """Return the polynomial kernel ``(a·b/d + coef0)^degree`` between the rows of A and B.

    d = n_features (:func:`lkm.numerics.kernels.polynomial_kernel` on the inner product
    divided by d, scikit-learn's default ``gamma = 1/n_features``). The 1/d is a
    documented choice: a positive rescaling of the inner product (the same kernel as
    ``(a·b + d·coef0)^degree`` up to the factor d^degree, absorbed by the regularization
    weights) that keeps the values O(1) — for USPS's 256 pixels in [0, 1], a·b/d lies in
    [0, 1] and the kernel in [coef0^degree, (1 + coef0)^degree]. Belkin et al. used
    degree 3 on USPS (Yang et al., Sec. 5.3).

    Parameters
    ----------
    A : ndarray of shape (n, d)
        First rows.
    B : ndarray of shape (m, d)
        Second rows.
    degree : int
        The polynomial's degree.
    coef0 : float
        The constant term.

    Returns
    -------
    ndarray of shape (n, m)
        The kernel values.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.manifold import poly_gram
    >>> poly_gram(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]), degree=2, coef0=1.0)
    array([[2.25, 4.  ]])
    """
    return polynomial_kernel(A, np.asarray(B) / A.shape[1], degree=int(degree), coef0=float(coef0))


_SHARED_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel": [StrOptions({"heat", "gaussian", "poly"})],
    "t": [Interval(Real, 0, None, closed="neither")],
    "sigma": SIGMA_CONSTRAINT,
    "degree": [Interval(Integral, 1, None, closed="left")],
    "coef0": [Interval(Real, 0, None, closed="left")],
    "unit_diagonal": ["boolean"],
    "unlabeled_label": [None, Integral, str],
    "rcond": [Interval(Real, 0, 1, closed="left")],
}
_GRAPH_CONSTRAINTS: dict[str, list[Any]] = {
    "gamma_A": [Interval(Real, 0, None, closed="left")],
    "gamma_I": [Interval(Real, 0, None, closed="left")],
    "graph_k": [Interval(Integral, 1, None, closed="left")],
    "graph_weights": [StrOptions({"heat", "binary"})],
    "graph_t": [None, Interval(Real, 0, None, closed="neither")],
    "normalized_laplacian": ["boolean"],
    "null_space": [StrOptions({"constant", "none"})],
}
_PRLS_CONSTRAINTS: dict[str, list[Any]] = {
    **_SHARED_CONSTRAINTS,
    "gamma": [Interval(Real, 0, None, closed="left")],
    "null_space": [StrOptions({"constant", "none"})],
}


def manifold_gram(kernel: dict[str, Any], A: np.ndarray, B: np.ndarray, cache: DistanceCache | None = None,
                  D: np.ndarray | None = None) -> np.ndarray:
    """Return the kernel matrix between the rows of A and B for a fitted kernel.

    The kernel is described as in a fitted estimator's ``info_`` (kernel, t or degree
    and coef0): the unit-diagonal heat kernel k_t from squared distances (D, if given),
    or :func:`poly_gram`.

    Parameters
    ----------
    kernel : dict
        ``{"kernel": "heat" or "gaussian", "t": ...}`` or
        ``{"kernel": "poly", "degree": ..., "coef0": ...}``.
    A : ndarray of shape (n, d)
        First rows.
    B : ndarray of shape (m, d)
        Second rows.
    cache : DistanceCache or None, default=None
        Memo of squared distances shared between calls on the same arrays.
    D : ndarray of shape (n, m) or None, default=None
        The squared distances, if already computed.

    Returns
    -------
    ndarray of shape (n, m)
        The kernel values.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.manifold import manifold_gram
    >>> X = np.array([[0.0, 0.0], [2.0, 0.0]])
    >>> manifold_gram({"kernel": "heat", "t": 1.0}, X, X).round(4)
    array([[1.    , 0.3679],
           [0.3679, 1.    ]])
    """
    if kernel["kernel"] == "poly":
        return poly_gram(A, B, kernel["degree"], kernel["coef0"])
    if D is not None:
        return heat_from_sq(D, kernel["t"])
    return heat_gram(A, B, kernel["t"], cache, normalized=False)  # built in one buffer without a cache


class _ManifoldFit:
    """Shared by the classifiers and the regressors: label mask, kernel, the solve, f."""

    conditional_params: dict[str, tuple[str, tuple[Any, ...]]] = {
        "sigma": ("kernel", ("gaussian",)), "t": ("kernel", ("heat",)), "unit_diagonal": ("kernel", ("heat",)),
        "degree": ("kernel", ("poly",)), "coef0": ("kernel", ("poly",))}
    _numerical_params: tuple[str, ...] = ("kernel", "sigma", "t", "degree", "coef0")
    #: Whether unlabeled rows join the kernel expansion and the graph (not for PRLS).
    _uses_unlabeled = True
    # The parameters read here, set by each estimator's __init__ (the graph's only by
    # LapRLS's and PLapRLS's), and the fitted attributes: declared for the type checker.
    kernel: str
    t: float
    sigma: float | str
    degree: int
    coef0: float
    unit_diagonal: bool
    unlabeled_label: Any
    rcond: float
    graph_k: int
    graph_weights: str
    graph_t: float | None
    normalized_laplacian: bool
    sigma_: float
    X_fit_: NDArray[np.float64]
    dual_coef_: NDArray[np.float64]
    intercept_: NDArray[np.float64]
    info_: dict[str, Any]
    laplacian_: sp.csr_matrix
    _rule: str

    # ------------------------------------------------------------------ inputs
    def _unlabeled_mask(self, y: np.ndarray, unlabeled: Any, need: str) -> np.ndarray:
        """The unlabeled rows (``unlabeled``, else ``y == unlabeled_label``); sets ``_rule``.
        Raises when every row is unlabeled (``need`` says what is needed)."""
        if unlabeled is not None:
            mask = np.asarray(unlabeled)
            if mask.dtype != bool or mask.shape != y.shape:
                raise ValueError(f"unlabeled must be a boolean mask of shape {y.shape}; got dtype "
                                 f"{mask.dtype} and shape {mask.shape}")
            rule = "mask"
        elif self.unlabeled_label is None:
            mask, rule = np.zeros(y.shape, dtype=bool), "none"
        else:
            label = self.unlabeled_label
            rule = f"y == {label!r}"
            if y.dtype.kind in "iuf" and not isinstance(label, str):
                mask = y == label
            elif y.dtype.kind == "O":
                mask = np.fromiter((v == label for v in y), dtype=bool, count=y.size)
            elif y.dtype.kind == "U" and isinstance(label, str):
                mask = y == label
            else:
                mask = np.zeros(y.shape, dtype=bool)
        if mask.all():
            raise ValueError(f"{type(self).__name__}: all {y.size} points are unlabeled ({rule}); give {need}"
                             + (self._label_hint() if rule.startswith("y ==") else ""))
        self._rule = rule
        return mask

    def _label_hint(self) -> str:
        """The way out when ``unlabeled_label`` took labeled rows for unlabeled ones."""
        return (f"; unlabeled_label={self.unlabeled_label!r} reads y == {self.unlabeled_label!r} as unlabeled "
                f"(the semi-supervised convention): for labels that include {self.unlabeled_label!r} (e.g. ±1) "
                "pass unlabeled_label=None, or fit(X, y, unlabeled=mask) with a boolean mask of the "
                "unlabeled rows")

    def _kernel_spec(self, X: np.ndarray) -> dict[str, Any]:
        """The kernel in use (recorded in ``info_``): k_t's t (σ²/2 for the Gaussian, whose
        ``sigma_`` is set here) or the polynomial's degree and coef0."""
        if self.kernel == "poly":
            return {"kernel": "poly", "degree": int(self.degree), "coef0": float(self.coef0)}
        if self.kernel == "gaussian":
            self.sigma_ = resolve_sigma(self.sigma, X)
            return {"kernel": "gaussian", "t": 0.5 * self.sigma_ * self.sigma_, "unit_diagonal": True,
                    "sigma": self.sigma_}
        return {"kernel": "heat", "t": float(self.t), "unit_diagonal": bool(self.unit_diagonal)}

    def _penalty_weight(self, gamma: float, d: int, t: float | None) -> float:
        if self.kernel == "heat" and not self.unit_diagonal and t is not None:  # the heat kernel has its t
            return normalized_gamma(gamma, d, t)
        return gamma

    # ------------------------------------------------------------------ the solve
    def _fit_system(
        self, X: np.ndarray, labeled: np.ndarray, labels: np.ndarray, cache: DistanceCache | None,
        *, gamma: float, bracket: bool, null_space: str, gamma_I: float = 0.0, printed: bool = False,
        sample_weight: np.ndarray | None = None,
    ) -> np.ndarray:
        """Fit ``f = k(·, X_fit) a + Ψβ`` at the stationary point (or the printed system);
        ``labels``: the targets of the labeled rows, (l,) or (l, tasks).

        ``sample_weight`` (n,): the weighted loss ``(1/Σw) Σ_{labeled} w_i (y_i - f(x_i))²``
        (Σw over the labeled rows; w ≡ 1 gives eq. (10)/(12)'s 1/l). Multiplying the
        objective by Σw/2 gives the stationarity system of :func:`~lkm.numerics.manifold_solvers.stationary_system` with
        J = diag(w) and λ₁ = γ_A·Σw, λ₂ = γ_I·Σw/n²; an integer weight m equals the row
        repeated m times when there is no graph (γ_I = 0). A zero weight removes the row
        from PRLS (whose expansion is over the points of the loss, like an unlabeled row;
        the bracket penalty has no representer theorem, so expansion points matter) and
        makes it an unlabeled row of LapRLS/PLapRLS (kept in the expansion and the graph).
        Returns f at the rows of X_fit_."""
        if bracket and self.kernel == "poly":
            raise ValueError(f"{type(self).__name__}: the penalty K - 2K' + K'' (eqs. (9), (16)) is defined only "
                             "for the heat/Gaussian kernel (K' = K_2t by the semigroup property), not kernel='poly'; "
                             "use LapRLS(kernel='poly', gamma_I=0, null_space='constant') for RLS with an "
                             "unpenalized constant")
        n_unlabeled = int((~labeled).sum())
        if not self._uses_unlabeled:  # PRLS: the expansion is over the points of the loss only
            keep = labeled if sample_weight is None else labeled & (sample_weight > 0.0)
            if not keep.all():
                X = X[keep]
                labels = labels[keep[labeled]]
                sample_weight = None if sample_weight is None else sample_weight[keep]
                labeled = np.ones(X.shape[0], dtype=bool)
        n, d = X.shape
        n_lab = int(labeled.sum())
        loss_total = float(n_lab) if sample_weight is None else float(loss_weights(labeled, sample_weight).sum())
        if not loss_total > 0.0:
            raise ValueError(f"{type(self).__name__}: sample_weight is 0 on every labeled point; the loss is undefined")
        kernel = self._kernel_spec(X)
        t = kernel.get("t")
        D = sq_dists(X, X, cache) if t is not None or gamma_I > 0.0 else None
        L = None
        lam2 = 0.0
        if gamma_I > 0.0:
            graph_t = self.graph_t if self.graph_t is not None else t
            if graph_t is None and self.graph_weights == "heat":
                raise ValueError(f"{type(self).__name__}: graph_t=None means the kernel's heat time, which "
                                 "kernel='poly' does not have; give graph_t or graph_weights='binary'")
            assert D is not None  # computed above for the graph
            L = memoized(cache, ("lkm.manifold.laplacian", self.graph_k, self.graph_weights, graph_t,
                                 bool(self.normalized_laplacian)),
                         lambda: knn_laplacian(D, self.graph_k, self.graph_weights, graph_t,
                                               self.normalized_laplacian), X)
            lam2 = gamma_I * loss_total / float(n * n)
        K = manifold_gram(kernel, X, X, D=D)
        Psi = np.ones((n, 1)) if null_space == "constant" else np.zeros((n, 0))
        Y = np.zeros((n, labels.shape[1] if labels.ndim == 2 else 1))
        Y[labeled] = labels.reshape(n_lab, -1)
        lam1 = self._penalty_weight(gamma, d, t) * loss_total
        symmetric = not (printed and Psi.shape[1])  # printed == derived without Ψ
        f_train = None
        if bracket and symmetric:
            assert D is not None and t is not None  # the bracket's kernel is the heat kernel (not poly)
            x, how, f_train = self._solve_bracket(K, D, t, d, Psi, Y, labeled, lam1, L, lam2, sample_weight)
        elif symmetric:
            solved = solve_belkin(K, Psi, Y, labeled, lam1, L, lam2, self.rcond, sample_weight)
            x, how = solved or solve_reduced(K, K, Psi, Y, labeled, lam1, L, lam2, self.rcond, sample_weight)
        else:
            if bracket:
                assert D is not None and t is not None  # the bracket's kernel is the heat kernel (not poly)
                P = penalty_bracket(D, t, d, K)
            else:
                P = K
            M, r = stationary_system(K, P, Psi, Y, labeled, lam1, L, lam2, printed, sample_weight)
            x, how = solve_stationary(M, r, self.rcond, symmetric=False)
        self.X_fit_ = X
        if labels.ndim == 1:  # two classes or one regression target: one column, stored 1-D
            x = x[:, 0]
        self.dual_coef_ = x[:n]
        self.intercept_ = x[n] if Psi.shape[1] else np.zeros(x.shape[1:])
        self.info_ = {
            "n_labeled": n_lab, "n_unlabeled": n_unlabeled, "unlabeled_rule": self._rule, **kernel,
            "penalty": "K-2K'+K''" if bracket else "K", "null_space_dim": int(Psi.shape[1]),
            "lambda_1": lam1, "lambda_2": lam2, "system": "derived" if symmetric else "printed eq. (14)",
            **how, **({"sample_weight": True} if sample_weight is not None else {}),
        }
        if bracket:
            w2, w3 = semigroup_weights(d)
            self.info_.update(weight_2t=w2, weight_3t=w3)
        if L is not None:
            self.info_.update(graph_k=int(self.graph_k), graph_weights=self.graph_weights, graph_t=graph_t,
                              normalized_laplacian=bool(self.normalized_laplacian),
                              n_edges=int(L.count_nonzero() - np.count_nonzero(L.diagonal())) // 2)
            self.laplacian_ = L
        else:
            self.__dict__.pop("laplacian_", None)  # no graph in this fit (gamma_I = 0)
        if f_train is not None:
            return f_train[:, 0] if labels.ndim == 1 else f_train
        return K @ self.dual_coef_ + self.intercept_

    def _solve_bracket(
        self, K: np.ndarray, D: np.ndarray, t: float, d: int, Psi: np.ndarray, Y: np.ndarray,
        labeled: np.ndarray, lam1: float, L: sp.csr_matrix | None, lam2: float, sample_weight: np.ndarray | None,
    ) -> tuple[np.ndarray, dict[str, Any], np.ndarray | None]:
        """The bracket penalty's derived system: the semiparametric route where its
        certificate ρ ≤ √rcond (:func:`~lkm.numerics.manifold_solvers.solve_semiparametric`,
        :func:`~lkm.numerics.manifold_solvers.semiparametric_certificate`, :func:`~lkm.numerics.manifold_solvers.certificate_tolerance`), otherwise
        :func:`~lkm.numerics.manifold_solvers.solve_reduced` with the rejected ρ recorded; also f at the rows (or None)."""
        tol = certificate_tolerance(self.rcond)
        solved = solve_semiparametric(K, Psi, Y, labeled, lam1, L, lam2, self.rcond, sample_weight)
        rho = None
        if solved is not None:
            x, how = solved
            n = K.shape[0]
            K_a = K @ x[:n]
            f = K_a + Psi @ x[n:]
            K_Lf = K @ (L @ f) if L is not None and lam2 > 0.0 else None
            rho = semiparametric_certificate(K, K_a, x[:n], lam1, D, t, d, K_Lf, lam2, tol)
            if rho <= tol:
                return x, {**how, "certificate": rho, "certificate_tol": tol}, f
        P = penalty_bracket(D, t, d, K)
        x, how = solve_reduced(K, P, Psi, Y, labeled, lam1, L, lam2, self.rcond, sample_weight)
        return x, {**how, **({"certificate": rho, "certificate_tol": tol} if rho is not None else {})}, None

    def _expansion(self, X: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        """``f(x) = Σ a_i k(x, x_i) + β`` at validated query rows."""
        return manifold_gram(self.info_, X, self.X_fit_, cache) @ self.dual_coef_ + self.intercept_


class _ManifoldBase(_ManifoldFit, LocalKernelClassifier):
    """Classifiers: labels from the labeled rows, ±1 one-vs-all columns, ``f = k a + β``."""

    def _options(self) -> dict[str, Any]:
        raise NotImplementedError

    def fit(self, X: Any, y: Any, unlabeled: Any = None, cache: DistanceCache | None = None,
            sample_weight: Any = None) -> Self:
        """Fit the one-vs-all ±1 outputs of the labeled rows at the stationary point.

        Unlabeled rows (``unlabeled``, else ``y == unlabeled_label``) are ignored by PRLS
        and join the expansion and the graph in LapRLS and PLapRLS; ``classes_`` come
        from the labeled rows. A zero sample weight removes the row from PRLS and makes
        it an unlabeled row of LapRLS/PLapRLS. LapRLS and PLapRLS set
        ``transduction_``: the labels f assigns to every training row, labeled and
        unlabeled (as scikit-learn's LabelSpreading).

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training samples, labeled and unlabeled (sparse input is densified once).
        y : array-like of shape (n_samples,)
            Class labels; unlabeled rows carry ``unlabeled_label`` (or any value,
            with the ``unlabeled`` mask).
        unlabeled : array-like of bool, shape (n_samples,), or None, default=None
            Which rows are unlabeled; wins over ``unlabeled_label``.
        cache : DistanceCache or None, default=None
            Memo of the training distances and the graph Laplacian shared between fits
            on the same arrays (the runner passes one); None computes them here.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Non-negative weights of the squared loss (ignored on unlabeled rows); None
            weighs every labeled row 1.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            When fewer than two classes remain among the labeled rows (naming
            ``unlabeled_label`` when it took labeled rows for unlabeled ones), when every
            row is unlabeled, or for ``kernel="poly"`` with the bracket penalty.
        """
        self._validate_params()
        self._reject_boolean_numbers()
        X, y = validate_data(self, densify(X), y, dtype=np.float64)
        check_feature_scale(X, type(self).__name__)
        weights = check_sample_weight(sample_weight, y.shape[0], type(self).__name__)
        mask = self._unlabeled_mask(y, unlabeled, "at least one labeled point of each of two classes")
        y_labeled = y[~mask]
        check_classification_targets(y_labeled)
        self.classes_, y_index = np.unique(y_labeled, return_inverse=True)
        if self.classes_.size < 2:
            emptied = (self._rule.startswith("y ==") and mask.any()
                       and not np.isin(y[mask], self.classes_).all())
            raise ValueError(f"{type(self).__name__} needs samples of at least two classes; got "
                             f"{self.classes_.size} class among the {y_labeled.size} labeled points"
                             + (self._label_hint() if emptied else ""))
        self.class_count_ = np.bincount(y_index, minlength=self.classes_.size)
        f_train = self._fit_system(X, ~mask, self._dummy_outputs(y_index), cache, **self._options(),
                                   sample_weight=weights)
        if self._uses_unlabeled:
            self.transduction_ = self._labels_from_decision(f_train)
            self.info_.pop("tie_share", None)  # a prediction's fact, set by predict
        return self

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Evaluate the one-vs-all scores ``f(x) = Σ a_i k(x, x_i) + β``.

        ``predict`` takes their sign (two classes) or their argmax.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of squared distances shared between fits and predictions on the same
            arrays (the runner passes one); None computes them here.

        Returns
        -------
        decision : ndarray of shape (n_queries,) or (n_queries, n_classes)
            The scores; with two classes positive means ``classes_[1]``.
        """
        return self._expansion(self._validate_query(X), cache)


class _ManifoldRegressor(_ManifoldFit, RegressorMixin, BaseEstimator):  # type: ignore[misc]  # scikit-learn has no type stubs: its classes are Any
    """Regressors: one real-valued target, ``predict`` = f(x). Input and finiteness checks
    are :class:`LocalKernelClassifier`'s (query rows: scipy sparse input densified first,
    :func:`densify`)."""

    _reject_boolean_numbers = LocalKernelClassifier._reject_boolean_numbers
    _numerical_context = LocalKernelClassifier._numerical_context
    _check_finite = LocalKernelClassifier._check_finite
    _validate_query = LocalKernelClassifier._validate_query

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified once (:func:`densify`)
        return tags

    def _options(self) -> dict[str, Any]:
        raise NotImplementedError

    def fit(self, X: Any, y: Any, unlabeled: Any = None, cache: DistanceCache | None = None,
            sample_weight: Any = None) -> Self:
        """Fit f to a real-valued target at the stationary point of the objective.

        Rows whose y is unknown are given by ``unlabeled``, else by ``y ==
        unlabeled_label`` (None by default: -1.0 is a target).

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training samples, labeled and unlabeled (sparse input is densified once).
        y : array-like of shape (n_samples,)
            Real-valued targets.
        unlabeled : array-like of bool, shape (n_samples,), or None, default=None
            Which rows are unlabeled; wins over ``unlabeled_label``.
        cache : DistanceCache or None, default=None
            Memo of the training distances and the graph Laplacian shared between fits
            on the same arrays (the runner passes one); None computes them here.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Non-negative weights of the squared loss (ignored on unlabeled rows); None
            weighs every labeled row 1.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            When every row is unlabeled, or for ``kernel="poly"`` with the bracket penalty.
        """
        self._validate_params()
        self._reject_boolean_numbers()
        X, y = validate_data(self, densify(X), y, dtype=np.float64, y_numeric=True)
        check_feature_scale(X, type(self).__name__)
        weights = check_sample_weight(sample_weight, y.shape[0], type(self).__name__)
        mask = self._unlabeled_mask(y, unlabeled, "at least one labeled point")
        self._fit_system(X, ~mask, y[~mask].astype(np.float64), cache, **self._options(), sample_weight=weights)
        return self

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Predict the fitted function ``f(x) = Σ a_i k(x, x_i) + β``.

        The kernel expansion over the training points plus the unpenalized constant.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of squared distances shared between fits and predictions on the same
            arrays (the runner passes one); None computes them here.

        Returns
        -------
        f : ndarray of shape (n_queries,)
            The predicted values.
        """
        return self._check_finite(self._expansion(self._validate_query(X), cache))


class PRLS(_ManifoldBase):
    """Partially penalized regularized least squares: constants are not penalized.

    Yang, King and Lyu [1]_, eqs. (7)–(11). Minimizes ``(1/l)||Y - Kα - Ψβ||² + gamma·αᵀ(K - 2K' + K'')α`` (eq. (10)) with
    ``K' = K_{2t}``, ``K'' = K_{3t}`` (eq. (16)) and Ψ = constants (``null_space=
    "constant"``, unpenalized: they lie in the null space of I - L_K for the heat kernel)
    or no Ψ (``"none"``). The stationarity system (11),
    ``(γl(K-2K'+K'') + K²)α + KΨβ = KY``, ``Ψᵀ(Y - Kα - Ψβ) = 0``, is K times
    ``(K + γlI)α + Ψβ - Y = γlK⁻¹Eα`` with ``K - 2K' + K'' = K - E``: where E is
    negligible (high d) the semiparametric system ``[K + γlI, Ψ; Ψᵀ, 0][α; β] = [Y; 0]``
    (:func:`~lkm.numerics.manifold_solvers.solve_semiparametric`: one Cholesky, scikit-learn's KernelRidge's) gives a
    solution whose gradient of eq. (10) is ``-2γEα``; it is kept when that gradient is at
    most √rcond of its terms (``info_["certificate"]``, :func:`~lkm.numerics.manifold_solvers.semiparametric_certificate`).
    Otherwise eq. (11) is solved with β eliminated,
    ``((QK)ᵀQK + γl(K-2K'+K''))α = (QK)ᵀY`` with QK the column-centred K
    (:func:`~lkm.numerics.manifold_solvers.solve_reduced`: one syrk and one Cholesky), or, when singular (duplicated
    rows, a numerically singular Gaussian K, γ = 0 with a singular K), by the documented
    minimum-norm routes (:func:`~lkm.numerics.manifold_solvers.solve_semidefinite`, ``rcond``: the pivoted Cholesky, or
    eigh for γ = 0). No exact route avoids the K² product where E matters: eq. (11)
    needs K⁻¹E (a Gaussian K is far too ill-conditioned for that) or a 2n × 2n system.

    Kernel scaling: see the module docstring (``unit_diagonal=True``, the default, is the
    numerically safe form; False means gamma multiplies the normalized heat kernel's
    penalty). ``kernel="poly"`` raises ValueError (the bracket needs the heat semigroup).
    PRLS is supervised (eq. (10) has labeled points only): any labels, ±1 included, are
    classes by default (``unlabeled_label=None``); rows marked unlabeled
    (``fit(X, y, unlabeled=mask)``, or ``y == unlabeled_label`` when it is set) are
    ignored. ``fit(..., sample_weight=w)`` weighs the squared loss,
    ``(1/Σw)Σ w_i(y_i - f(x_i))²`` (a zero weight removes the row). Several classes:
    one-vs-all ±1 columns solved with one factorization; predict takes the sign (two
    classes) or the argmax; an exact tie goes to the class with more labeled points,
    then the lower class index.

    Parameters
    ----------
    kernel : {"heat", "gaussian", "poly"}, default="heat"
        ``"heat"``: the heat kernel k_t, ``exp(-||x - y||²/4t)`` (normalized or not, see
        ``unit_diagonal``); ``"gaussian"``: ``exp(-||x - y||²/2σ²)``, k_t with t = σ²/2;
        ``"poly"`` raises ValueError (the bracket penalty needs the heat semigroup).
    t : float, default=1.0
        The heat kernel's time t.
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training rows
        (labeled and unlabeled), scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        The polynomial kernel's degree (``kernel="poly"`` is refused).
    coef0 : float, default=1.0
        The polynomial kernel's constant term (``kernel="poly"`` is refused).
    gamma : float, default=0.01
        γ, the weight of the penalty ``αᵀ(K - 2K' + K'')α``.
    null_space : {"constant", "none"}, default="constant"
        The unpenalized functions Ψ: constants, or none.
    unit_diagonal : bool, default=True
        With the heat kernel, whether ``gamma`` multiplies the unit-diagonal penalty
        (the numerically safe form) or the normalized heat kernel's penalty (False).
    unlabeled_label : int, str or None, default=None
        The label value of unlabeled rows in ``y`` (None: every row is labeled unless
        ``fit``'s ``unlabeled`` mask says otherwise).
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes (pivots or eigenvalues at or below
        ``rcond·λ_max`` dropped).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels of the labeled rows.
    class_count_ : ndarray of shape (n_classes,)
        Labeled rows per class (the prior of the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_points, n_features)
        The expansion points (the labeled rows of positive weight).
    dual_coef_ : ndarray of shape (n_points,) or (n_points, n_classes)
        The expansion coefficients a (unit-diagonal scaling).
    intercept_ : float or ndarray
        β, the unpenalized constant (0 with ``null_space="none"``).
    sigma_ : float
        The Gaussian width in use (``kernel="gaussian"`` only).
    info_ : dict
        n_labeled, n_unlabeled, unlabeled_rule, kernel, t (of k_t; σ²/2 for the
        Gaussian), sigma, unit_diagonal, penalty, null_space_dim, lambda_1 (γl in the
        unit-diagonal scaling), lambda_2, weight_2t, weight_3t, system, solver
        ("semiparametric", or the rank-revealing route's), rank, certificate (ρ, also
        when rejected), certificate_tol (√rcond), factorization (of the semiparametric
        route).

    See Also
    --------
    PLapRLS : The same penalty with a graph over labeled and unlabeled points.
    PRLSRegressor : PRLS for a real-valued target.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.manifold import PRLS
    >>> clf = PRLS(kernel="gaussian", gamma=1e-3).fit(X[::2], y[::2])
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.965
    >>> clf.info_["solver"], clf.info_["null_space_dim"]
    ('cholesky', 1)
    """

    _uses_unlabeled = False
    _parameter_constraints: dict[str, list[Any]] = _PRLS_CONSTRAINTS

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        degree: int = 3,
        coef0: float = 1.0,
        gamma: float = 0.01,
        null_space: str = "constant",
        unit_diagonal: bool = True,
        unlabeled_label: Any = None,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma = gamma
        self.null_space = null_space
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond

    def _options(self) -> dict[str, Any]:
        return {"gamma": float(self.gamma), "bracket": True, "null_space": self.null_space}


class LapRLS(_ManifoldBase):
    """Laplacian regularized least squares: RKHS norm plus a graph smoothness term.

    Belkin, Niyogi and Sindhwani [2]_, as compared by Yang, King and Lyu [1]_ (Sec. 5.3).

    Minimizes ``(1/l)Σ_{labeled}(y_i - f(x_i))² + gamma_A||f_K||²_K + (gamma_I/n²) fᵀLf``
    over ``f = f_K + Ψβ``, ``f_K = Σ_{i≤n} α_i K(x_i, ·)``, n = l + u, with no Ψ
    (``null_space="none"``, Belkin's) or an unpenalized constant (``"constant"``:
    ``f = Σ α_i K(x_i, ·) + a``; with gamma_I = 0 that is RLS with an unpenalized
    constant, Yang et al.'s Sec. 5.3 comparison). Solved in Belkin et al.'s form
    ``(JK + γ_A l I + γ_I l/n² LK)α + GΨβ = JY``, ``Ψᵀα = 0`` (:func:`~lkm.numerics.manifold_solvers.solve_belkin`, one
    LU). The objective's own stationarity system is K times that: its solutions may differ
    from this α by a null vector v of K (Kv = 0), whose function has RKHS norm vᵀKv = 0 —
    the same f everywhere. gamma_A = 0 (or a singular LU) takes the symmetric route
    (:func:`~lkm.numerics.manifold_solvers.solve_reduced`, else its minimum-norm route). (The paper's eq. (12)
    writes the graph term as Σ_{i,j}(f_i - f_j)²W_ij = 2fᵀLf; gamma_I here is Belkin's.)

    Kernels: ``"heat"``/``"gaussian"`` as PRLS; ``"poly"``: ``(x·y/d + coef0)^degree``,
    d = n_features (:func:`poly_gram`; Belkin et al. used degree 3 on USPS).

    Graph: each point joined to its ``graph_k`` nearest others over labeled + unlabeled
    points, symmetrized by max(W, Wᵀ), weights ``exp(-||x_i - x_j||²/4·graph_t)``
    (``"heat"``, graph_t defaults to the kernel's t, σ²/2 for the Gaussian, so the
    weights are the kernel's own values; the polynomial kernel needs graph_t or
    ``"binary"``) or 1 (``"binary"``); L = D - W, or I - D^(-1/2)WD^(-1/2) with
    ``normalized_laplacian`` (:func:`~lkm.numerics.graph_laplacian.knn_laplacian`). The graph does not depend on the
    labels and is memoized in ``cache``. ``sigma="scale"`` is resolved from all rows
    (labeled and unlabeled). The paper's quoted "γ_A l" and "γ_I l/(u+l)²" are
    ``info_['lambda_1']`` and ``info_['lambda_2']``. Unlabeled rows:
    ``fit(X, y, unlabeled=mask)``, else ``y == unlabeled_label`` (-1, scikit-learn's
    semi-supervised convention; for ±1 labels pass ``unlabeled_label=None`` or a mask —
    the error says so when -1 empties a class). ``transduction_``: the labels f assigns
    to the training rows, labeled and unlabeled. ``sample_weight``: weights of the
    squared loss on the labeled rows, λ₁ = γ_A·Σw, λ₂ = γ_I·Σw/n² (a zero weight makes
    the row unlabeled).

    Parameters
    ----------
    kernel : {"heat", "gaussian", "poly"}, default="heat"
        ``"heat"``: the heat kernel k_t, ``exp(-||x - y||²/4t)`` (normalized or not, see
        ``unit_diagonal``); ``"gaussian"``: ``exp(-||x - y||²/2σ²)``, k_t with t = σ²/2;
        ``"poly"``: ``(x·y/d + coef0)^degree``, d = n_features (:func:`poly_gram`).
    t : float, default=1.0
        The heat kernel's time t.
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training rows
        (labeled and unlabeled), scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        The polynomial kernel's degree.
    coef0 : float, default=1.0
        The polynomial kernel's constant term.
    gamma_A : float, default=0.01
        γ_A, the weight of the RKHS-norm penalty.
    gamma_I : float, default=0.01
        γ_I, the weight of the graph term ``(γ_I/n²) fᵀLf`` (0: no graph).
    graph_k : int, default=6
        Neighbours per point in the k-NN graph.
    graph_weights : {"heat", "binary"}, default="heat"
        Edge weights: ``exp(-||x_i - x_j||²/4·graph_t)`` or 1.
    graph_t : float or None, default=None
        The heat weights' time; None takes the kernel's t (σ²/2 for the Gaussian; the
        polynomial kernel needs graph_t or ``"binary"``).
    normalized_laplacian : bool, default=False
        Use ``I - D^(-1/2)WD^(-1/2)`` instead of ``L = D - W``.
    null_space : {"constant", "none"}, default="none"
        The unpenalized functions Ψ: constants, or none.
    unit_diagonal : bool, default=True
        With the heat kernel, whether ``gamma_A`` multiplies the unit-diagonal penalty
        (the numerically safe form) or the normalized heat kernel's penalty (False).
    unlabeled_label : int, str or None, default=-1
        The label value of unlabeled rows in ``y`` (None: every row is labeled unless
        ``fit``'s ``unlabeled`` mask says otherwise).
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes (pivots or eigenvalues at or below
        ``rcond·λ_max`` dropped).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels of the labeled rows.
    class_count_ : ndarray of shape (n_classes,)
        Labeled rows per class (the prior of the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_points, n_features)
        The expansion points (every training row, labeled and unlabeled).
    dual_coef_ : ndarray of shape (n_points,) or (n_points, n_classes)
        The expansion coefficients a (unit-diagonal scaling).
    intercept_ : float or ndarray
        β, the unpenalized constant (0 with ``null_space="none"``).
    sigma_ : float
        The Gaussian width in use (``kernel="gaussian"`` only).
    transduction_ : ndarray of shape (n_samples,)
        The labels f assigns to every training row, labeled and unlabeled.
    laplacian_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The graph Laplacian L (only when ``gamma_I > 0``).
    info_ : dict
        n_labeled, n_unlabeled, unlabeled_rule, the kernel facts, penalty,
        null_space_dim, lambda_1 (γ_A·l), lambda_2 (γ_I·l/n²), system, solver, rank, and
        with a graph graph_k, graph_weights, graph_t, normalized_laplacian, n_edges.

    See Also
    --------
    PLapRLS : The partially penalized form (Yang et al., eq. (12)).
    LapRLSRegressor : LapRLS for a real-valued target.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.
    .. [2] M. Belkin, P. Niyogi and V. Sindhwani, "Manifold regularization: a geometric
       framework for learning from labeled and unlabeled examples", Journal of Machine
       Learning Research 7, pp. 2399-2434, 2006.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.manifold import LapRLS
    >>> y_semi = y.copy()
    >>> y_semi[60:] = -1  # unlabeled (30 labels among the even rows)
    >>> clf = LapRLS(kernel="gaussian", gamma_A=1e-3, gamma_I=1.0).fit(X[::2], y_semi[::2])
    >>> clf.info_["n_labeled"], clf.info_["n_unlabeled"]
    (30, 255)
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.877
    """

    _parameter_constraints: dict[str, list[Any]] = {**_SHARED_CONSTRAINTS, **_GRAPH_CONSTRAINTS}

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        degree: int = 3,
        coef0: float = 1.0,
        gamma_A: float = 0.01,
        gamma_I: float = 0.01,
        graph_k: int = 6,
        graph_weights: str = "heat",
        graph_t: float | None = None,
        normalized_laplacian: bool = False,
        null_space: str = "none",
        unit_diagonal: bool = True,
        unlabeled_label: Any = -1,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.graph_k = graph_k
        self.graph_weights = graph_weights
        self.graph_t = graph_t
        self.normalized_laplacian = normalized_laplacian
        self.null_space = null_space
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond

    def _options(self) -> dict[str, Any]:
        return {"gamma": float(self.gamma_A), "bracket": False, "null_space": self.null_space,
                "gamma_I": float(self.gamma_I)}


class PLapRLS(LapRLS):
    """Partially penalized LapRLS: PRLS's penalty plus LapRLS's graph term.

    Yang, King and Lyu [1]_, eqs. (12)–(14). Minimizes eq. (12) with the squared loss,
    ``E(α, β) = (1/l)(Y - Kα - Ψβ)ᵀJ(Y - Kα - Ψβ) + γ_A αᵀ(K - 2K' + K'')α
    + (γ_I/n²)(Kα + Ψβ)ᵀL(Kα + Ψβ)`` (graph term in Belkin et al.'s fᵀLf form [2]_, see
    LapRLS).

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
    E): where certified, by the semiparametric system with the bracket's correction
    dropped (:func:`~lkm.numerics.manifold_solvers.solve_semiparametric`, LapRLS's ``null_space="constant"`` LU; kept
    when the gradient of E there, ``-2γ_A·(K - B)α``, is at most √rcond of its terms,
    ``info_["certificate"]``), otherwise by :func:`~lkm.numerics.manifold_solvers.solve_reduced` (β eliminated, one
    Cholesky); ``"printed"`` solves eq. (14) as printed (least squares, for comparison;
    where it differs its solution is not stationary for E).

    Parameters
    ----------
    kernel : {"heat", "gaussian", "poly"}, default="heat"
        ``"heat"``: the heat kernel k_t, ``exp(-||x - y||²/4t)`` (normalized or not, see
        ``unit_diagonal``); ``"gaussian"``: ``exp(-||x - y||²/2σ²)``, k_t with t = σ²/2;
        ``"poly"`` raises ValueError (the bracket penalty needs the heat semigroup).
    t : float, default=1.0
        The heat kernel's time t.
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training rows
        (labeled and unlabeled), scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        The polynomial kernel's degree (``kernel="poly"`` is refused).
    coef0 : float, default=1.0
        The polynomial kernel's constant term (``kernel="poly"`` is refused).
    gamma_A : float, default=0.01
        γ_A, the weight of the bracket ``αᵀ(K - 2K' + K'')α`` penalty.
    gamma_I : float, default=0.01
        γ_I, the weight of the graph term ``(γ_I/n²) fᵀLf`` (0: no graph).
    graph_k : int, default=6
        Neighbours per point in the k-NN graph.
    graph_weights : {"heat", "binary"}, default="heat"
        Edge weights: ``exp(-||x_i - x_j||²/4·graph_t)`` or 1.
    graph_t : float or None, default=None
        The heat weights' time; None takes the kernel's t (σ²/2 for the Gaussian; the
        polynomial kernel needs graph_t or ``"binary"``).
    normalized_laplacian : bool, default=False
        Use ``I - D^(-1/2)WD^(-1/2)`` instead of ``L = D - W``.
    null_space : {"constant", "none"}, default="constant"
        The unpenalized functions Ψ: constants, or none.
    system : {"derived", "printed"}, default="derived"
        The derived symmetric system, or eq. (14) as printed.
    unit_diagonal : bool, default=True
        With the heat kernel, whether ``gamma_A`` multiplies the unit-diagonal penalty
        (the numerically safe form) or the normalized heat kernel's penalty (False).
    unlabeled_label : int, str or None, default=-1
        The label value of unlabeled rows in ``y`` (None: every row is labeled unless
        ``fit``'s ``unlabeled`` mask says otherwise).
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes (pivots or eigenvalues at or below
        ``rcond·λ_max`` dropped).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels of the labeled rows.
    class_count_ : ndarray of shape (n_classes,)
        Labeled rows per class (the prior of the tie rule).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_points, n_features)
        The expansion points (every training row, labeled and unlabeled).
    dual_coef_ : ndarray of shape (n_points,) or (n_points, n_classes)
        The expansion coefficients a (unit-diagonal scaling).
    intercept_ : float or ndarray
        β, the unpenalized constant (0 with ``null_space="none"``).
    sigma_ : float
        The Gaussian width in use (``kernel="gaussian"`` only).
    transduction_ : ndarray of shape (n_samples,)
        The labels f assigns to every training row, labeled and unlabeled.
    laplacian_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The graph Laplacian L (only when ``gamma_I > 0``).
    info_ : dict
        n_labeled, n_unlabeled, unlabeled_rule, the kernel facts, penalty,
        null_space_dim, lambda_1 (γ_A·l), lambda_2 (γ_I·l/n²), system, solver
        ("semiparametric", or the rank-revealing route's), rank, certificate,
        certificate_tol and factorization (as PRLS), weight_2t, weight_3t, and with a
        graph graph_k, graph_weights, graph_t, normalized_laplacian, n_edges.

    See Also
    --------
    PRLS : The same penalty without the graph.
    LapRLS : The graph term with the plain RKHS norm.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.
    .. [2] M. Belkin, P. Niyogi and V. Sindhwani, "Manifold regularization: a geometric
       framework for learning from labeled and unlabeled examples", Journal of Machine
       Learning Research 7, pp. 2399-2434, 2006.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.manifold import PLapRLS
    >>> y_semi = y.copy()
    >>> y_semi[60:] = -1  # unlabeled (30 labels among the even rows)
    >>> clf = PLapRLS(kernel="gaussian", gamma_A=1e-3, gamma_I=1.0).fit(X[::2], y_semi[::2])
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.845
    >>> clf.transduction_.shape
    (285,)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **LapRLS._parameter_constraints,
        "system": [StrOptions({"derived", "printed"})],
    }

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        degree: int = 3,
        coef0: float = 1.0,
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
        super().__init__(kernel=kernel, t=t, sigma=sigma, degree=degree, coef0=coef0, gamma_A=gamma_A,
                         gamma_I=gamma_I, graph_k=graph_k, graph_weights=graph_weights, graph_t=graph_t,
                         normalized_laplacian=normalized_laplacian, null_space=null_space,
                         unit_diagonal=unit_diagonal, unlabeled_label=unlabeled_label, rcond=rcond)
        self.system = system

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "bracket": True, "printed": self.system == "printed"}


class PRLSRegressor(_ManifoldRegressor):
    """PRLS for one real-valued target: ``predict`` is ``f(x) = Σ a_i k_t(x, x_i) + β``.

    Yang, King and Lyu [1]_, eq. (10), the objective of :class:`PRLS` on a real target
    (the paper's Fig. 1 toy).

    Parameters and solve as :class:`PRLS`, except ``unlabeled_label`` (None by default: a
    real target may be -1). With the constant unpenalized, constant targets y = c are
    fitted exactly (α = 0, β = c) for every gamma — the point of Yang et al.'s Fig. 1.

    Parameters
    ----------
    kernel : {"heat", "gaussian", "poly"}, default="heat"
        ``"heat"``: the heat kernel k_t, ``exp(-||x - y||²/4t)`` (normalized or not, see
        ``unit_diagonal``); ``"gaussian"``: ``exp(-||x - y||²/2σ²)``, k_t with t = σ²/2;
        ``"poly"`` raises ValueError (the bracket penalty needs the heat semigroup).
    t : float, default=1.0
        The heat kernel's time t.
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training rows
        (labeled and unlabeled), scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        The polynomial kernel's degree (``kernel="poly"`` is refused).
    coef0 : float, default=1.0
        The polynomial kernel's constant term (``kernel="poly"`` is refused).
    gamma : float, default=0.01
        γ, the weight of the penalty ``αᵀ(K - 2K' + K'')α``.
    null_space : {"constant", "none"}, default="constant"
        The unpenalized functions Ψ: constants, or none.
    unit_diagonal : bool, default=True
        With the heat kernel, whether ``gamma`` multiplies the unit-diagonal penalty
        (the numerically safe form) or the normalized heat kernel's penalty (False).
    unlabeled_label : int, str or None, default=None
        The label value of unlabeled rows in ``y`` (None: every row is labeled unless
        ``fit``'s ``unlabeled`` mask says otherwise).
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes (pivots or eigenvalues at or below
        ``rcond·λ_max`` dropped).

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_points, n_features)
        The expansion points (the labeled rows of positive weight).
    dual_coef_ : ndarray of shape (n_points,)
        The expansion coefficients a (unit-diagonal scaling).
    intercept_ : float or ndarray
        β, the unpenalized constant (0 with ``null_space="none"``).
    sigma_ : float
        The Gaussian width in use (``kernel="gaussian"`` only).
    info_ : dict
        n_labeled, n_unlabeled, unlabeled_rule, kernel, t (of k_t; σ²/2 for the
        Gaussian), sigma, unit_diagonal, penalty, null_space_dim, lambda_1 (γl in the
        unit-diagonal scaling), lambda_2, weight_2t, weight_3t, system, solver
        ("semiparametric", or the rank-revealing route's), rank, certificate (ρ, also
        when rejected), certificate_tol (√rcond), factorization (of the semiparametric
        route).

    See Also
    --------
    PRLS : The classifier.
    LapRLSRegressor : LapRLS for a real-valued target.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.manifold import PRLSRegressor
    >>> reg = PRLSRegressor(kernel="gaussian", gamma=1e-2).fit(X[::2], y[::2])
    >>> round(reg.score(X[1::2], y[1::2]), 3)
    0.429
    >>> reg.predict(X[1:7:2]).round(1)
    array([ 82. , 180.3, 115.6])
    >>> flat = PRLSRegressor(kernel="gaussian", gamma=10.0).fit(X[:50], [3.0] * 50)
    >>> flat.predict(X[50:53]), float(abs(flat.dual_coef_).max())
    (array([3., 3., 3.]), 0.0)
    """

    _uses_unlabeled = False
    _parameter_constraints: dict[str, list[Any]] = _PRLS_CONSTRAINTS
    _options = PRLS._options

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        degree: int = 3,
        coef0: float = 1.0,
        gamma: float = 0.01,
        null_space: str = "constant",
        unit_diagonal: bool = True,
        unlabeled_label: Any = None,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma = gamma
        self.null_space = null_space
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond


class LapRLSRegressor(_ManifoldRegressor):
    """LapRLS for one real-valued target: ``predict`` is f(x).

    The objective of :class:`LapRLS` (Belkin, Niyogi and Sindhwani [2]_; Yang, King and
    Lyu [1]_, Sec. 5.3) on a real target.

    Parameters and solve as :class:`LapRLS`, except ``unlabeled_label`` (None by default).
    With ``gamma_I=0`` and ``null_space="none"`` it is kernel RLS regression,
    ``(K + gamma_A·l·I)α = y``.

    Parameters
    ----------
    kernel : {"heat", "gaussian", "poly"}, default="heat"
        ``"heat"``: the heat kernel k_t, ``exp(-||x - y||²/4t)`` (normalized or not, see
        ``unit_diagonal``); ``"gaussian"``: ``exp(-||x - y||²/2σ²)``, k_t with t = σ²/2;
        ``"poly"``: ``(x·y/d + coef0)^degree``, d = n_features (:func:`poly_gram`).
    t : float, default=1.0
        The heat kernel's time t.
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training rows
        (labeled and unlabeled), scikit-learn's ``gamma="scale"``.
    degree : int, default=3
        The polynomial kernel's degree.
    coef0 : float, default=1.0
        The polynomial kernel's constant term.
    gamma_A : float, default=0.01
        γ_A, the weight of the RKHS-norm penalty.
    gamma_I : float, default=0.01
        γ_I, the weight of the graph term ``(γ_I/n²) fᵀLf`` (0: no graph).
    graph_k : int, default=6
        Neighbours per point in the k-NN graph.
    graph_weights : {"heat", "binary"}, default="heat"
        Edge weights: ``exp(-||x_i - x_j||²/4·graph_t)`` or 1.
    graph_t : float or None, default=None
        The heat weights' time; None takes the kernel's t (σ²/2 for the Gaussian; the
        polynomial kernel needs graph_t or ``"binary"``).
    normalized_laplacian : bool, default=False
        Use ``I - D^(-1/2)WD^(-1/2)`` instead of ``L = D - W``.
    null_space : {"constant", "none"}, default="none"
        The unpenalized functions Ψ: constants, or none.
    unit_diagonal : bool, default=True
        With the heat kernel, whether ``gamma_A`` multiplies the unit-diagonal penalty
        (the numerically safe form) or the normalized heat kernel's penalty (False).
    unlabeled_label : int, str or None, default=None
        The label value of unlabeled rows in ``y`` (None: every row is labeled unless
        ``fit``'s ``unlabeled`` mask says otherwise).
    rcond : float, default=1e-12
        Relative cutoff of the rank-revealing routes (pivots or eigenvalues at or below
        ``rcond·λ_max`` dropped).

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_points, n_features)
        The expansion points (every training row, labeled and unlabeled).
    dual_coef_ : ndarray of shape (n_points,)
        The expansion coefficients a (unit-diagonal scaling).
    intercept_ : float or ndarray
        β, the unpenalized constant (0 with ``null_space="none"``).
    sigma_ : float
        The Gaussian width in use (``kernel="gaussian"`` only).
    laplacian_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The graph Laplacian L (only when ``gamma_I > 0``).
    info_ : dict
        n_labeled, n_unlabeled, unlabeled_rule, the kernel facts, penalty,
        null_space_dim, lambda_1 (γ_A·l), lambda_2 (γ_I·l/n²), system, solver, rank, and
        with a graph graph_k, graph_weights, graph_t, normalized_laplacian, n_edges.

    See Also
    --------
    LapRLS : The classifier.
    PRLSRegressor : PRLS for a real-valued target.

    References
    ----------
    .. [1] H. Yang, I. King and M. R. Lyu, "Learning with consistency between inductive
       functions and kernels", Advances in Neural Information Processing Systems 21,
       pp. 1849-1856, 2008.
    .. [2] M. Belkin, P. Niyogi and V. Sindhwani, "Manifold regularization: a geometric
       framework for learning from labeled and unlabeled examples", Journal of Machine
       Learning Research 7, pp. 2399-2434, 2006.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_diabetes(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.manifold import LapRLSRegressor
    >>> reg = LapRLSRegressor(kernel="gaussian", gamma_A=1e-2, gamma_I=0.0).fit(X[::2], y[::2])
    >>> round(reg.score(X[1::2], y[1::2]), 3)
    0.28
    >>> reg.predict(X[1:7:2]).round(1)
    array([ 81.2, 154.1,  92.8])
    """

    _parameter_constraints: dict[str, list[Any]] = LapRLS._parameter_constraints
    _options = LapRLS._options

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        degree: int = 3,
        coef0: float = 1.0,
        gamma_A: float = 0.01,
        gamma_I: float = 0.01,
        graph_k: int = 6,
        graph_weights: str = "heat",
        graph_t: float | None = None,
        normalized_laplacian: bool = False,
        null_space: str = "none",
        unit_diagonal: bool = True,
        unlabeled_label: Any = None,
        rcond: float = RCOND,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.gamma_A = gamma_A
        self.gamma_I = gamma_I
        self.graph_k = graph_k
        self.graph_weights = graph_weights
        self.graph_t = graph_t
        self.normalized_laplacian = normalized_laplacian
        self.null_space = null_space
        self.unit_diagonal = unit_diagonal
        self.unlabeled_label = unlabeled_label
        self.rcond = rcond
