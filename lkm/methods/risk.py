"""Regularized least squares (RLS) and local risk regularization (LRR), Li, Chen, Tang.

RLS (eq. (3.1)–(3.2)) minimizes ``(1/ℓ) Σ (y_i - f(x_i))² + λ ||f||²_K`` over the RKHS
of K; LRR (eq. (2.2)–(2.4)) replaces the empirical risk by the *local* empirical risk
around a point of interest x0, weighting each training point by a vicinity function
``k(x_i, x0; β)`` normalized by ``𝒦(x0, β)``. Both solve one ℓ×ℓ symmetric positive
definite system (Cholesky, :func:`solve_local_risk`); the kernel is the paper's heat
kernel ``K_t(x, y) = (4πt)^(-d/2) exp(-||x - y||² / 4t)`` or a Gaussian.

No estimator here takes ``n_jobs``: each fit is one global ℓ×ℓ factorization (LRR's
vicinity is around one point x0, not around each query) and prediction is one kernel
product, both already multithreaded inside BLAS/LAPACK.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve
from sklearn.utils import Tags, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from lkm.methods.base import SCALE, SIGMA_CONSTRAINT, LocalKernelClassifier
from lkm.numerics.kernels import (
    DistanceCache,
    exp_rows_scaled,
    exponent_scale,
    gaussian_gram,
    heat_gram,
    sq_dists,
    times_scale,
    underflow_share,
)
from lkm.numerics.threads import small_blas

_TINY = float(np.finfo(np.float64).tiny)

#: Vicinity weights above this count as "in the vicinity" (``info_['n_in_vicinity']``).
IN_VICINITY = 1e-12


def hard_vicinity(sq_dist: np.ndarray, beta: float) -> np.ndarray:
    """Return the hard-threshold vicinity weights ``1{||x - x0|| < β/2}``.

    Li, Chen and Tang's ``k_1(x, x0; β)`` (Sec. 2 of [1]_) from the squared distances
    ``||x - x0||²``, compared as ``||x - x0||² < β²/4``, or as ``||x - x0|| < β/2`` where
    β²/4 is not a normal float64, so that x0 stays in its own vicinity however small β.

    Parameters
    ----------
    sq_dist : array-like of float
        Squared distances ``||x - x0||²`` of the points to the point of interest.
    beta : float
        The vicinity's diameter β (> 0).

    Returns
    -------
    ndarray of float64
        1.0 inside the vicinity, 0.0 outside, in the shape of ``sq_dist``.

    See Also
    --------
    soft_vicinity : The paper's soft-threshold vicinity.

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.risk import hard_vicinity
    >>> hard_vicinity(np.array([0.0, 1.0, 4.0, 9.0]), beta=4.0)
    array([1., 1., 0., 0.])
    """
    sq = np.asarray(sq_dist, dtype=np.float64)
    bound = 0.25 * beta * beta
    if not _TINY <= bound < np.inf:
        return (np.sqrt(sq) < 0.5 * beta).astype(np.float64)
    return (sq < bound).astype(np.float64)


def soft_vicinity(sq_dist: np.ndarray, beta: float) -> np.ndarray:
    """Return the soft-threshold vicinity weights ``exp(-||x - x0||² / β²)``.

    Li, Chen and Tang's ``k_2(x, x0; β)`` (Sec. 2 of [1]_), evaluated from the squared distances
    with the exponent's scale formed without overflow for extreme β.

    Parameters
    ----------
    sq_dist : array-like of float
        Squared distances ``||x - x0||²`` of the points to the point of interest.
    beta : float
        The vicinity's width β (> 0).

    Returns
    -------
    ndarray of float64
        Weights in (0, 1] (0 where they underflow), in the shape of ``sq_dist``.

    See Also
    --------
    hard_vicinity : The paper's hard-threshold vicinity.

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.risk import soft_vicinity
    >>> soft_vicinity(np.array([0.0, 1.0, 4.0]), beta=2.0).round(4)
    array([1.    , 0.7788, 0.3679])
    """
    weights: NDArray[np.float64] = np.exp(
        times_scale(np.asarray(sq_dist, dtype=np.float64), exponent_scale(beta, beta), negate=True))
    return weights


VICINITIES = {"hard": hard_vicinity, "soft": soft_vicinity}


def check_sample_weight(sample_weight: Any, n: int, owner: str) -> np.ndarray | None:
    """Validate sample weights: n finite non-negative numbers with a positive sum.

    A scalar is broadcast to every sample; None (unweighted) stays None. Used by every
    lkm estimator whose ``fit`` takes ``sample_weight``.

    Parameters
    ----------
    sample_weight : array-like of shape (n,), float or None
        The weights as given to ``fit``.
    n : int
        The number of training samples.
    owner : str
        The estimator's name, for the error message.

    Returns
    -------
    ndarray of shape (n,) or None
        The weights as float64, or None when ``sample_weight`` is None.

    Raises
    ------
    ValueError
        Naming ``owner``: a wrong shape, a negative or non-finite weight, or all weights 0.

    Examples
    --------
    >>> from lkm.methods.risk import check_sample_weight
    >>> check_sample_weight(2.0, 3, "Demo")
    array([2., 2., 2.])
    >>> check_sample_weight([1.0, 0.0], 3, "Demo")
    Traceback (most recent call last):
    ...
    ValueError: Demo: sample_weight must be 3 finite non-negative numbers; got shape (2,)
    """
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    w = np.full(n, float(w)) if w.ndim == 0 else w
    if w.shape != (n,) or not np.all(np.isfinite(w)) or (w < 0.0).any():
        raise ValueError(f"{owner}: sample_weight must be {n} finite non-negative numbers; got shape {w.shape}"
                         + (", negative or non-finite values" if w.shape == (n,) else ""))
    if not w.sum() > 0.0:
        raise ValueError(f"{owner}: all sample weights are zero; the weighted loss is undefined")
    return w


def solve_local_risk(
    K: np.ndarray, Y: np.ndarray, lam: float, weights: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Return the kernel-expansion coefficients α of (local) risk regularization.

    Minimizes ``(1/(ℓ𝒦)) Σ w_i (y_i - f(x_i))² + λ ||f||²_K`` with ``𝒦 = mean(w)``
    (``weights=None`` means w ≡ 1, i.e. RLS eq. (3.1)). With ``f = Σ_j α_j K(·, x_j)``
    (representer theorem) the stationarity condition is

        K [ W (K α - y) / (ℓ𝒦) + λ α ] = 0,

    satisfied by the unique solution of ``(W K + λ ℓ 𝒦 I) α = W y`` (W = diag(w)).
    That matrix is not symmetric, so with ``Ŵ = W / 𝒦`` (weights of mean 1) and
    ``S = Ŵ^½`` it is solved in the symmetric form

        (S K S + λ ℓ I) γ = S y,   α = S γ,

    which is symmetric positive definite with eigenvalues >= λℓ (K is PSD) whatever the
    weights — including zero weights, whose α_i are then exactly 0 — so a Cholesky
    factorization is stable; multiplying it by S recovers ``Ŵ K α + λℓ α = Ŵ y``, the
    system above divided by 𝒦. With vicinity weights this is LRR's eq. (2.4) of [1]_,
    without them RLS's eq. (3.2) in kernel-expansion form.

    Parameters
    ----------
    K : ndarray of shape (ℓ, ℓ)
        The kernel matrix of the training points (symmetric PSD).
    Y : ndarray of shape (ℓ,) or (ℓ, n_tasks)
        Targets, one column per task (e.g. one-vs-rest ±1 columns).
    lam : float
        The regularization weight λ (> 0).
    weights : ndarray of shape (ℓ,) or None, default=None
        Loss weights w_i ≥ 0 (vicinity weights, possibly times sample weights) with a
        positive sum; None means w ≡ 1.

    Returns
    -------
    alpha : ndarray of shape (ℓ,) or (ℓ, n_tasks)
        The coefficients α (exactly 0 where the weight is 0).
    normalizer : float
        𝒦 = mean(w) (1.0 without weights).

    Raises
    ------
    ValueError
        When every weight is 0 (the local risk is undefined).

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from lkm.methods.risk import solve_local_risk
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> alpha, normalizer = solve_local_risk(K, np.array([1.0, -1.0]), lam=0.25)
    >>> alpha, normalizer
    (array([ 1., -1.]), 1.0)
    >>> alpha, normalizer = solve_local_risk(K, np.array([1.0, -1.0]), lam=0.25, weights=np.array([1.0, 0.0]))
    >>> round(float(alpha[0]), 12), bool(alpha[1] == 0.0), normalizer
    (0.8, True, 0.5)
    """
    n = K.shape[0]
    if weights is None:
        A = np.array(K, dtype=np.float64, order="F")
        rhs = np.asarray(Y, dtype=np.float64)
        root = None
        normalizer = 1.0
    else:
        w = np.asarray(weights, dtype=np.float64)
        normalizer = float(w.mean())
        if not normalizer > 0.0:
            raise ValueError("all vicinity weights are zero: the local risk is undefined")
        root = np.sqrt(w / normalizer)
        column = (-1,) + (1,) * (np.ndim(Y) - 1)
        A = np.empty((n, n), order="F")  # S K S, written straight into LAPACK's layout
        np.multiply(root[:, None], K, out=A)
        A *= root[None, :]
        rhs = root.reshape(column) * np.asarray(Y, dtype=np.float64)
    A[np.diag_indices(n)] += lam * n
    factor = cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    solution = cho_solve(factor, rhs, check_finite=False)
    if root is not None:
        solution *= root.reshape(column)
    return solution, normalizer


_KERNEL_CONSTRAINTS: dict[str, list[Any]] = {
    "kernel": [StrOptions({"heat", "gaussian"})],
    "t": [Interval(Real, 0, None, closed="neither")],
    "sigma": SIGMA_CONSTRAINT,
    "lam": [Interval(Real, 0, None, closed="neither")],
    "unit_diagonal": ["boolean"],
}


class _KernelRidgeBase(LocalKernelClassifier):
    """Kernel choice shared by RLS and LRR; ``f(x) = K(x, X_train) α``."""

    #: sigma is the Gaussian kernel's width; t and unit_diagonal belong to the heat kernel.
    conditional_params = {"sigma": ("kernel", ("gaussian",)), "t": ("kernel", ("heat",)),
                          "unit_diagonal": ("kernel", ("heat",))}
    X_fit_: NDArray[np.float64]
    dual_coef_: NDArray[np.float64]

    def _gram(self, A: np.ndarray, B: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        # CV tuning makes hundreds of small Grams per fit: a second BLAS thread (the
        # fragility rerun's) only adds hand-offs there, and gemm's bits do not change with
        # it (the Cholesky's do: it keeps the caller's thread count)
        with small_blas(2.0 * A.shape[0] * B.shape[0] * A.shape[1]):
            if self.kernel == "gaussian":
                return gaussian_gram(A, B, self.sigma_, cache)
            return heat_gram(A, B, self.t, cache, normalized=not self.unit_diagonal)

    def _kernel_info(self, n: int) -> dict[str, Any]:
        info: dict[str, Any] = {"n_train": n, "kernel": self.kernel, "lam": float(self.lam)}
        if self.kernel == "heat":
            info.update(t=float(self.t), unit_diagonal=bool(self.unit_diagonal))
        else:
            info.update(sigma=self.sigma_)
        return info

    def _numerical_context(self) -> str:
        """The kernel width in use (sigma or t), lam and, for LRR, beta."""
        names = ("kernel", "sigma" if self.kernel == "gaussian" else "t", "lam", "beta")
        params = self.get_params(deep=False)
        return ", ".join(f"{p}={params[p]!r}" for p in names if p in params)

    def _vicinity_weights(self, X: np.ndarray, point: np.ndarray, shown: Any) -> np.ndarray:
        """Vicinity weights of the training rows around ``point`` (LRR, LRR pair); raises
        ValueError naming beta and x0 (``shown``) when they are all 0."""
        diff = X - point
        weights = VICINITIES[self.vicinity](np.einsum("ij,ij->i", diff, diff), self.beta)
        if not weights.sum() > 0.0:
            raise ValueError(
                f"the {self.vicinity} vicinity of x0={shown} with beta={self.beta} contains "
                "no training point (all vicinity weights are 0); increase beta or move x0"
            )
        return weights

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Evaluate the fitted kernel expansion ``f(x) = Σ_j α_j K(x, x_j)``.

        One ±1 dummy output per class (one-vs-rest), or one output for two classes;
        ``predict`` takes the sign or the largest output.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays (the runner passes one); None computes them here.

        Returns
        -------
        decision : ndarray of shape (n_queries,) or (n_queries, n_classes)
            The output f(x); with two classes positive means ``classes_[1]``.
        """
        X = self._validate_query(X)
        return self._gram(X, self.X_fit_, cache) @ self.dual_coef_

    def _scaled_rows(self, X: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        """Kernel rows ``K(x, X_train)`` each divided by its largest entry (exact signs
        where the rows underflow; the heat kernel's constant is a positive factor too)."""
        if self.kernel == "gaussian":
            scale = exponent_scale(2.0 * self.sigma_, self.sigma_)
        else:
            scale = exponent_scale(4.0 * self.t)
        with small_blas(2.0 * X.shape[0] * self.X_fit_.shape[0] * X.shape[1]):
            distances = sq_dists(X, self.X_fit_, cache)
        rows, row_min = exp_rows_scaled(distances, scale)
        self.info_["underflow_share"] = underflow_share(row_min, scale)
        return rows

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, None]:
        X = self._validate_query(X)
        return self._scaled_rows(X, cache) @ self.dual_coef_, None


class RegularizedLeastSquares(_KernelRidgeBase):
    """Regularized least squares on ±1 dummy outputs, the global baseline of LRR.

    Li, Chen and Tang [1]_, eq. (3.1)–(3.2). Minimizes ``(1/ℓ) Σ_i (y_i - f(x_i))² + lam ||f||²_K``; eq. (3.2),
    ``f = ((1/ℓ) S_xᵀ S_x + lam I)⁻¹ (1/ℓ) S_xᵀ y``, in kernel-expansion form is
    ``f = Σ α_i K(·, x_i)`` with ``(K + lam·ℓ·I) α = y`` — lam multiplies ℓ, exactly the
    paper's scaling (the 1/ℓ sits on the data term). Solved by Cholesky.

    ``kernel="heat"`` (the paper's): ``K_t(x, y) = (4πt)^(-d/2) exp(-||x - y||²/4t)``;
    ``unit_diagonal=True`` drops the constant: ``exp(-||x - y||²/4t)`` with lam gives
    the same decision function as the normalized kernel with lam·(4πt)^(-d/2), so the
    convention amounts to a d-dependent rescaling of lam. The constant raises
    ``FloatingPointError`` when it underflows (high dimension). ``kernel="gaussian"``:
    ``exp(-||x - y||²/2σ²)`` (``t`` and ``unit_diagonal`` are then unused; ``sigma`` is
    unused for the heat kernel). The paper has no Gaussian kernel, so sigma defaults to
    ``"scale"``: sqrt(p·Var(X)/2) of the training data, scikit-learn's ``gamma="scale"``
    (:func:`lkm.methods.base.scaled_sigma`), kept in ``sigma_``. Several classes:
    one-vs-rest ±1 columns.

    ``fit(X, y, sample_weight=w)`` minimizes the weighted risk
    ``(1/Σw) Σ_i w_i (y_i - f(x_i))² + lam ||f||²_K`` (Σw = ℓ for w ≡ 1: eq. (3.1)); its
    stationarity condition ``K[W(Kα - y)/Σw + lam α] = 0`` holds at the solution of
    ``(WK + lam·Σw·I) α = Wy`` (W = diag(w)), solved in SPD form by
    :func:`solve_local_risk` (the weights normalized to mean 1: Σw = ℓ𝒦). An integer
    weight m equals the row repeated m times.

    Parameters
    ----------
    kernel : {"heat", "gaussian"}, default="heat"
        ``"heat"`` (the paper's): ``K_t(x, y) = (4πt)^(-d/2) exp(-||x - y||²/4t)``;
        ``"gaussian"``: ``exp(-||x - y||²/2σ²)``.
    t : float, default=1.0
        The heat kernel's time t (unused by the Gaussian kernel).
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training data,
        scikit-learn's ``gamma="scale"``, kept in ``sigma_`` (unused by the heat kernel).
    lam : float, default=0.5
        The regularization weight (> 0), multiplied by ℓ as in eq. (3.2).
    unit_diagonal : bool, default=False
        Heat kernel without its constant ``(4πt)^(-d/2)`` (a d-dependent rescaling of
        lam; unused by the Gaussian kernel).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training samples (the expansion points).
    sigma_ : float
        The Gaussian width of ``sigma`` (``"scale"`` resolved; set for either kernel).
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_classes)
        The expansion coefficients α (one column per class beyond two classes).
    info_ : dict
        ``n_train``, ``kernel``, ``lam``, ``ridge`` (= lam·ℓ, or lam·Σw with weights),
        ``t`` and ``unit_diagonal`` or ``sigma``, ``sample_weight_sum`` with weights;
        after ``predict`` ``underflow_share`` and ``tie_share``.

    See Also
    --------
    LocalRiskRegularization : The local risk around a point of interest x0.

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.risk import RegularizedLeastSquares
    >>> clf = RegularizedLeastSquares(kernel="gaussian", lam=1e-3).fit(X[::2], y[::2])
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.961
    >>> clf.decision_function(X[1:7:2]).round(3)
    array([-0.915, -0.268, -0.317])
    """

    _parameter_constraints: dict[str, list[Any]] = dict(_KERNEL_CONSTRAINTS)

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        lam: float = 0.5,
        unit_diagonal: bool = False,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.lam = lam
        self.unit_diagonal = unit_diagonal

    def fit(
        self, X: Any, y: Any, cache: DistanceCache | None = None, sample_weight: Any = None
    ) -> RegularizedLeastSquares:
        """Fit eq. (3.1): one Cholesky solve of ``(K + lam·ℓ·I) α = y``.

        With ``sample_weight`` the weighted risk ``(1/Σw) Σ_i w_i (y_i - f(x_i))²`` is
        minimized instead (see the class description).

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training samples (sparse input is densified once).
        y : array-like of shape (n_samples,)
            Class labels; at least two classes.
        cache : DistanceCache or None, default=None
            Memo of the training Gram matrix's distances shared between fits on the same
            arrays (the runner passes one); None computes them here.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Non-negative weights of the squared loss; None weighs every sample 1.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        weights = check_sample_weight(sample_weight, X.shape[0], type(self).__name__)
        Y = self._dummy_outputs(y_index)
        K = self._gram(X, X, cache)
        self.dual_coef_, normalizer = solve_local_risk(K, Y, self.lam, weights)
        self.X_fit_ = X
        self.info_ = self._kernel_info(X.shape[0])
        self.info_["ridge"] = float(self.lam) * X.shape[0] * normalizer
        if weights is not None:
            self.info_["sample_weight_sum"] = float(weights.sum())
        return self


class LocalRiskRegularization(_KernelRidgeBase):
    """Local risk regularization around a point of interest x0, on ±1 dummy outputs.

    Li, Chen and Tang [1]_, eq. (2.2)–(2.4).

    Minimizes the local empirical risk (2.2) plus lam times the RKHS norm,

        (1/(ℓ 𝒦)) Σ_i w_i (y_i - f(x_i))² + lam ||f||²_K,   w_i = k(x_i, x0; β),

    lam = 1 being eq. (2.3) exactly (the paper's experiments quote a lambda). Vicinity:
    ``"hard"`` ``1{||x - x0|| < β/2}`` or ``"soft"`` ``exp(-||x - x0||²/β²)``. The
    normalizer 𝒦(x0, β) = ∫ k dρ_X is estimated by the mean weight over the training
    points, ``𝒦 = (1/ℓ) Σ w_i``.

    Derivation. By the representer theorem ``f = Σ_j α_j K(·, x_j)``, so
    ``f(x_i) = (Kα)ᵢ`` and ``||f||²_K = αᵀKα``; the objective is
    ``(1/(ℓ𝒦)) (y - Kα)ᵀ W (y - Kα) + lam αᵀKα`` (W = diag(w)), whose gradient
    ``-(2/(ℓ𝒦)) K W (y - Kα) + 2 lam K α`` vanishes when

        (W K + lam·ℓ·𝒦·I) α = W y,

    which is eq. (2.4) — ``((1/ℓ) Ŝ_xᵀ S_x + 𝒦 lam) f = (1/ℓ) Ŝ_xᵀ y`` — with its
    coefficients of K(·, x_i) matched. The matrix is not symmetric; it is solved in the
    equivalent SPD form ``(S K S + lam·ℓ·I) γ = S y``, ``α = S γ``, S = (W/𝒦)^½
    (:func:`solve_local_risk`; eigenvalues >= lam·ℓ, so Cholesky is stable and zero
    weights give α_i = 0). With w ≡ 1 (or any constant: 𝒦 cancels it) the system is
    ``(K + lam·ℓ·I) α = y``: LRR equals :class:`RegularizedLeastSquares` with the same
    lam. Equivalently LRR is weighted RLS with unnormalized weights w and ridge
    ``lam·𝒦``; the paper's "λ hidden in 𝒦" is this factor.

    ``x0``: an int is a training-row index (of X as passed to ``fit``); an array-like of
    length n_features is a point; ``"class:<label>"`` is a training point of that class
    drawn with ``random_state`` (the paper's LRR¹ / LRR²; the label is matched against
    ``str()`` of the classes). A hard vicinity without any training point raises
    ValueError (naming beta and x0), as does a soft one whose weights all underflow.

    ``fit(X, y, sample_weight=s)``: each sample's loss weighed by s_i as well, i.e. the
    local risk of the sample in which row i appears s_i times: ``ℓ𝒦`` becomes
    ``Σ s_i k(x_i, x0)`` and the loss weights ``w_i = s_i k(x_i, x0; β)``, so the
    stationarity system is ``(WK + lam·Σ_i w_i·I) α = W y`` with W = diag(s·k)
    (:func:`solve_local_risk`); ``normalizer`` is then 𝒦 = Σ s_i k_i / Σ s_i.

    Kernels and ``unit_diagonal`` as in :class:`RegularizedLeastSquares`.

    Parameters
    ----------
    kernel : {"heat", "gaussian"}, default="heat"
        ``"heat"`` (the paper's): ``K_t(x, y) = (4πt)^(-d/2) exp(-||x - y||²/4t)``;
        ``"gaussian"``: ``exp(-||x - y||²/2σ²)``.
    t : float, default=1.0
        The heat kernel's time t (unused by the Gaussian kernel).
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training data,
        scikit-learn's ``gamma="scale"``, kept in ``sigma_`` (unused by the heat kernel).
    beta : float, default=6.0
        The vicinity's width β (> 0).
    vicinity : {"soft", "hard"}, default="soft"
        ``"soft"``: ``exp(-||x - x0||²/β²)``; ``"hard"``: ``1{||x - x0|| < β/2}``.
    lam : float, default=1.0
        The regularization weight (> 0); lam = 1 is eq. (2.3) exactly.
    x0 : int, array-like of shape (n_features,) or str, default=0
        The point of interest: a training-row index, a point, or ``"class:<label>"``
        (a training point of that class drawn with ``random_state``).
    unit_diagonal : bool, default=False
        Heat kernel without its constant ``(4πt)^(-d/2)`` (a d-dependent rescaling of
        lam; unused by the Gaussian kernel).
    random_state : int, RandomState instance or None, default=None
        Seeds the draw of ``x0="class:<label>"``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training samples (the expansion points).
    sigma_ : float
        The Gaussian width of ``sigma`` (``"scale"`` resolved; set for either kernel).
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_classes)
        The expansion coefficients α.
    vicinity_weights_ : ndarray of shape (n_samples,)
        The vicinity weights w_i = k(x_i, x0; β).
    info_ : dict
        ``n_train``, ``kernel``, ``lam``, ``t``/``unit_diagonal`` or ``sigma``, ``x0``
        (index or point as a list), ``x0_index`` (None for a point), ``x0_point``,
        ``vicinity``, ``beta``, ``n_in_vicinity`` (weights > 1e-12), ``normalizer``
        (𝒦); after ``predict`` ``underflow_share`` and ``tie_share``.

    See Also
    --------
    RegularizedLeastSquares : The global risk (LRR with constant weights).
    LocalRiskPair : LRR¹ and LRR² combined without test labels.

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.risk import LocalRiskRegularization
    >>> clf = LocalRiskRegularization(kernel="gaussian", lam=1e-3, beta=8.0, x0=0)
    >>> clf = clf.fit(X[::2], y[::2])
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.965
    >>> clf.info_["n_in_vicinity"], round(clf.info_["normalizer"], 4)
    (285, 0.152)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        **_KERNEL_CONSTRAINTS,
        "beta": [Interval(Real, 0, None, closed="neither")],
        "vicinity": [StrOptions(set(VICINITIES))],
        "x0": [Integral, "array-like", str],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        beta: float = 6.0,
        vicinity: str = "soft",
        lam: float = 1.0,
        x0: Any = 0,
        unit_diagonal: bool = False,
        random_state: Any = None,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.beta = beta
        self.vicinity = vicinity
        self.lam = lam
        self.x0 = x0
        self.unit_diagonal = unit_diagonal
        self.random_state = random_state

    def _resolve_x0(self, X: np.ndarray, y_index: np.ndarray) -> tuple[int | None, np.ndarray]:
        """``(training-row index or None, point)`` of the point of interest."""
        x0 = self.x0
        n, d = X.shape
        if isinstance(x0, str):
            if not x0.startswith("class:"):
                raise ValueError(f"x0={x0!r}: a string x0 must be 'class:<label>'")
            label = x0[len("class:") :]
            matches = [k for k, c in enumerate(self.classes_) if str(c) == label]
            if not matches:
                raise ValueError(
                    f"x0={x0!r}: no class {label!r} among {[str(c) for c in self.classes_]}"
                )
            rows = np.flatnonzero(y_index == matches[0])
            index = int(check_random_state(self.random_state).choice(rows))
            return index, X[index]
        if isinstance(x0, Integral) and not isinstance(x0, bool):
            if not 0 <= int(x0) < n:
                raise ValueError(f"x0={x0} is not a training-row index (0 <= x0 < {n})")
            return int(x0), X[int(x0)]
        point = np.asarray(x0, dtype=np.float64).ravel()
        if point.size != d or not np.all(np.isfinite(point)):
            raise ValueError(f"x0 must be a finite point of length n_features={d}; got {x0!r}")
        return None, point

    def fit(
        self, X: Any, y: Any, cache: DistanceCache | None = None, sample_weight: Any = None
    ) -> LocalRiskRegularization:
        """Fit eq. (2.2)–(2.4) around the point of interest x0.

        Resolves x0, weighs each training point by its vicinity weight
        ``k(x_i, x0; β)`` (times ``sample_weight`` if given) and solves the SPD form of
        eq. (2.4) by one Cholesky factorization.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_samples, n_features)
            Training samples (sparse input is densified once).
        y : array-like of shape (n_samples,)
            Class labels; at least two classes.
        cache : DistanceCache or None, default=None
            Memo of the training Gram matrix's distances shared between fits on the same
            arrays (the runner passes one); None computes them here.
        sample_weight : array-like of shape (n_samples,), float or None, default=None
            Non-negative weights of each sample's loss, on top of the vicinity
            weights; None weighs every sample 1.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            When x0 is not a training-row index, a point of length n_features or
            ``"class:<label>"`` of an existing class, or when the vicinity holds no
            training point (weights all 0, or all 0 after ``sample_weight``).
        """
        X, y_index = self._validate_training(X, y)
        sample = check_sample_weight(sample_weight, X.shape[0], type(self).__name__)
        Y = self._dummy_outputs(y_index)
        index, point = self._resolve_x0(X, y_index)
        weights = self._vicinity_weights(X, point, index if index is not None else point.tolist())
        K = self._gram(X, X, cache)
        if sample is None:
            self.dual_coef_, normalizer = solve_local_risk(K, Y, self.lam, weights)
        else:
            loss = sample * weights
            if not loss.sum() > 0.0:
                raise ValueError(f"LocalRiskRegularization: sample_weight is 0 on every point of the {self.vicinity} "
                                 f"vicinity of x0 (beta={self.beta}); the local risk is undefined")
            self.dual_coef_, _ = solve_local_risk(K, Y, self.lam, loss)
            normalizer = float(loss.sum() / sample.sum())
        self.X_fit_ = X
        self.vicinity_weights_ = weights
        self.info_ = self._kernel_info(X.shape[0])
        self.info_.update(
            x0=index if index is not None else point.tolist(),
            x0_index=index,
            x0_point=point.tolist(),
            vicinity=self.vicinity,
            beta=float(self.beta),
            n_in_vicinity=int(np.count_nonzero(weights > IN_VICINITY)),
            normalizer=normalizer,
        )
        return self


class LocalRiskPair(_KernelRidgeBase):
    """An honest combination of the paper's LRR¹ and LRR² (binary problems only).

    Li, Chen and Tang [1]_ (Sec. 5.1, Table 2, column "LRR") classify the test points of the
    first class with LRR¹ (x0 in class 1) and those of the second class with LRR² —
    which needs the test labels. This estimator makes the choice without them: it fits
    two :class:`LocalRiskRegularization` models on the same training data, with x0 a
    training point of ``classes_[0]`` and of ``classes_[1]`` drawn exactly as LRR's
    ``x0="class:<label>"`` with the same ``random_state`` draws them (so with an int seed
    the two models are the spec's LRR¹ and LRR²), and predicts each query point with

    - ``combine="confidence"``: the model of larger ``|f(x)|`` (ties: the first);
    - ``combine="nearest_x0"``: the model whose x0 is nearer x (ties: the first).

    Both models share one Gram matrix. ``decision_function`` returns the chosen model's
    output; :meth:`component_decisions` returns both (columns: x0 in ``classes_[0]``,
    x0 in ``classes_[1]``) and :meth:`chosen_component` which one is used per point.

    Parameters
    ----------
    kernel : {"heat", "gaussian"}, default="heat"
        ``"heat"`` (the paper's): ``K_t(x, y) = (4πt)^(-d/2) exp(-||x - y||²/4t)``;
        ``"gaussian"``: ``exp(-||x - y||²/2σ²)``.
    t : float, default=1.0
        The heat kernel's time t (unused by the Gaussian kernel).
    sigma : float or "scale", default="scale"
        The Gaussian width σ; ``"scale"`` is sqrt(p·Var(X)/2) of the training data,
        scikit-learn's ``gamma="scale"``, kept in ``sigma_`` (unused by the heat kernel).
    beta : float, default=6.0
        The vicinity's width β (> 0).
    vicinity : {"soft", "hard"}, default="soft"
        ``"soft"``: ``exp(-||x - x0||²/β²)``; ``"hard"``: ``1{||x - x0|| < β/2}``.
    lam : float, default=1.0
        The regularization weight (> 0); lam = 1 is eq. (2.3) exactly.
    combine : {"confidence", "nearest_x0"}, default="confidence"
        How a query's model is chosen (see above).
    unit_diagonal : bool, default=False
        Heat kernel without its constant ``(4πt)^(-d/2)`` (a d-dependent rescaling of
        lam; unused by the Gaussian kernel).
    random_state : int, RandomState instance or None, default=None
        Seeds the draws of the two x0 (as LRR's ``x0="class:<label>"``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` had string column names.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training samples (the expansion points).
    sigma_ : float
        The Gaussian width of ``sigma`` (``"scale"`` resolved; set for either kernel).
    dual_coef_ : ndarray of shape (n_samples, 2)
        The two models' coefficients (x0 in ``classes_[0]``, in ``classes_[1]``).
    x0_points_ : ndarray of shape (2, n_features)
        The two points of interest.
    info_ : dict
        The kernel facts, ``combine``, ``vicinity``, ``beta``, and per model (lists in
        class order) ``x0_index``, ``x0_point``, ``n_in_vicinity``, ``normalizer``;
        ``x0_classes``; after ``predict`` ``underflow_share`` and ``tie_share``.

    See Also
    --------
    LocalRiskRegularization : One model around one x0.

    References
    ----------
    .. [1] H. Li, N. Chen and Y. Y. Tang, "Local learning estimates by integral
       operators", International Journal of Wavelets, Multiresolution and Information
       Processing 8(5), pp. 695-712, 2010.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> from lkm.methods.risk import LocalRiskPair
    >>> clf = LocalRiskPair(kernel="gaussian", lam=1e-3, beta=8.0, random_state=0)
    >>> clf = clf.fit(X[::2], y[::2])
    >>> round(clf.score(X[1::2], y[1::2]), 3)
    0.965
    >>> clf.component_decisions(X[1:3]).shape, clf.info_["x0_index"]
    ((2, 2), [84, 271])
    """

    sample_weight_refusal = (
        "not implemented for the pair (LocalRiskRegularization takes sample_weight)"
    )

    _parameter_constraints: dict[str, list[Any]] = {
        **_KERNEL_CONSTRAINTS,
        "beta": [Interval(Real, 0, None, closed="neither")],
        "vicinity": [StrOptions(set(VICINITIES))],
        "combine": [StrOptions({"confidence", "nearest_x0"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        kernel: str = "heat",
        t: float = 1.0,
        sigma: float | str = SCALE,
        beta: float = 6.0,
        vicinity: str = "soft",
        lam: float = 1.0,
        combine: str = "confidence",
        unit_diagonal: bool = False,
        random_state: Any = None,
    ) -> None:
        self.kernel = kernel
        self.t = t
        self.sigma = sigma
        self.beta = beta
        self.vicinity = vicinity
        self.lam = lam
        self.combine = combine
        self.unit_diagonal = unit_diagonal
        self.random_state = random_state

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> LocalRiskPair:
        """Fit the two LRR models, x0 drawn in each class, on one shared Gram matrix.

        Each model solves eq. (2.4) around its x0 (a training point of ``classes_[0]``,
        then of ``classes_[1]``, drawn as LRR's ``x0="class:<label>"`` draws it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Class labels of exactly two classes.
        cache : DistanceCache or None, default=None
            Memo of the training Gram matrix's distances shared between fits on the same
            arrays; None computes them here.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            For more than two classes, or a vicinity without training points.
        TypeError
            When given ``sample_weight`` (not implemented for the pair).
        """
        X, y_index = self._validate_training(X, y)
        if self.classes_.size != 2:
            raise ValueError(
                "Only binary classification is supported. LocalRiskPair combines one LRR "
                f"per class of a two-class problem; got {self.classes_.size} classes."
            )
        Y = self._dummy_outputs(y_index)
        K = self._gram(X, X, cache)
        indices, coefs, counts, normalizers = [], [], [], []
        for k in range(2):
            # the draw of LocalRiskRegularization._resolve_x0 for x0="class:<classes_[k]>"
            rows = np.flatnonzero(y_index == k)
            index = int(check_random_state(self.random_state).choice(rows))
            weights = self._vicinity_weights(X, X[index], index)
            alpha, normalizer = solve_local_risk(K, Y, self.lam, weights)  # weight 1 at x0
            indices.append(index)
            coefs.append(alpha)
            counts.append(int(np.count_nonzero(weights > IN_VICINITY)))
            normalizers.append(normalizer)
        self.dual_coef_ = np.column_stack(coefs)
        self.x0_points_ = X[indices].copy()
        self.X_fit_ = X
        self.info_ = self._kernel_info(X.shape[0])
        self.info_.update(
            combine=self.combine,
            vicinity=self.vicinity,
            beta=float(self.beta),
            x0_classes=[str(c) for c in self.classes_],
            x0_index=indices,
            x0_point=self.x0_points_.tolist(),
            n_in_vicinity=counts,
            normalizer=normalizers,
        )
        return self

    def component_decisions(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Return the outputs of both models.

        Column 0 is the model whose x0 is in ``classes_[0]``, column 1 the model whose
        x0 is in ``classes_[1]``.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays; None computes them here.

        Returns
        -------
        decisions : ndarray of shape (n_queries, 2)
            The output f(x) of each model; positive means ``classes_[1]``.
        """
        X = self._validate_query(X)
        return self._gram(X, self.X_fit_, cache) @ self.dual_coef_

    def _choose(self, X: NDArray[np.float64], F: NDArray[np.float64]) -> NDArray[np.intp]:
        chosen: NDArray[np.intp]
        if self.combine == "confidence":
            chosen = np.argmax(np.abs(F), axis=1)
            return chosen
        diff = X[:, None, :] - self.x0_points_[None, :, :]
        chosen = np.argmin(np.einsum("ijk,ijk->ij", diff, diff), axis=1)
        return chosen

    def chosen_component(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Return which of the two models predicts each query.

        The choice follows ``combine``: the larger ``|f(x)|``, or the nearer x0; ties go
        to the first model.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays; None computes them here.

        Returns
        -------
        chosen : ndarray of shape (n_queries,)
            0 or 1, a column of :meth:`component_decisions`.
        """
        F = self.component_decisions(X, cache)
        return self._choose(self._validate_query(X), F)

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Return the chosen model's output f(x) for each query.

        The model is chosen per query as :meth:`chosen_component` says.

        Parameters
        ----------
        X : array-like or scipy sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memo of distance matrices shared between fits and predictions on the same
            arrays; None computes them here.

        Returns
        -------
        decision : ndarray of shape (n_queries,)
            The output f(x); positive means ``classes_[1]``.
        """
        X = self._validate_query(X)
        F = self._gram(X, self.X_fit_, cache) @ self.dual_coef_
        return F[np.arange(F.shape[0]), self._choose(X, F)]

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, None]:
        # one positive factor per row for both models: the confidence choice is unchanged
        X = self._validate_query(X)
        F = self._scaled_rows(X, cache) @ self.dual_coef_
        return F[np.arange(F.shape[0]), self._choose(X, F)], None
