"""Shared base of lkm classifiers: input validation and the dummy-output label coding.

Tsuji et al. (Sec. 1) classify through regression on dummy outputs: y = +1 for one class
and -1 for the other. With more than two classes every method here uses one-vs-rest
±1 columns and predicts the class of the largest output.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from collections.abc import Callable
from numbers import Real
from typing import Any, TypeVar, cast

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import Tags
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from lkm.errors import NumericalError
from lkm.numerics.kernels import DistanceCache

T = TypeVar("T")

#: Features with a largest |x| in (0, MIN_FEATURE_SCALE) have squared differences below
#: about 1e-300, where float64 loses their digits (or flushes them to 0).
MIN_FEATURE_SCALE = 1e-150
#: ``d·max|x|²`` above this makes the squared distances |a|² + |b|² - 2a·b overflow.
MAX_SQUARED_SCALE = 1e307


def check_feature_scale(X: np.ndarray, owner: str, role: str = "training") -> None:
    """Raise :class:`NumericalError` when squared distances between rows of X cannot be
    represented in float64: they overflow (largest |x| above about ``sqrt(1e307 / d)``),
    or, for training data, they underflow (largest |x| nonzero but below 1e-150)."""
    if X.size == 0:
        return
    top = float(max(X.max(), -X.min()))  # max |x| without an |X| copy (376 MB for MNIST)
    too_large = top * top * X.shape[1] > MAX_SQUARED_SCALE
    too_small = role == "training" and 0.0 < top < MIN_FEATURE_SCALE
    if too_large or too_small:
        way = "overflow" if too_large else "underflow"
        limit = (
            f"|x| <= {math.sqrt(MAX_SQUARED_SCALE / X.shape[1]):.3g} for {X.shape[1]} features"
            if too_large else f"|x| >= {MIN_FEATURE_SCALE:g}"
        )
        raise NumericalError(
            f"{owner}: {role} features up to |x|={top:.3g} make squared distances {way} "
            f"float64 (need largest {limit}); rescale the features (e.g. standardize them)"
        )


#: ``sigma="scale"``: the kernel width scikit-learn's ``gamma="scale"`` gives (see :func:`scaled_sigma`).
SCALE = "scale"
#: The parameter constraint of a Gaussian width: a positive number or ``"scale"``.
SIGMA_CONSTRAINT: list[Any] = [Interval(Real, 0, None, closed="neither"), StrOptions({SCALE})]


def scaled_sigma(X: np.ndarray) -> float:
    """The Gaussian width matching scikit-learn's ``gamma="scale"``: gamma = 1/(p·Var(X))
    over all entries of X (1 when that variance is 0), and with gamma = 1/(2σ²),
    σ = sqrt(p·Var(X)/2)."""
    variance = float(X.var()) if X.size else 0.0
    gamma = 1.0 / (X.shape[1] * variance) if variance > 0.0 else 1.0
    return math.sqrt(1.0 / (2.0 * gamma))


def resolve_sigma(sigma: float | str, X: np.ndarray) -> float:
    """``sigma`` as a float: ``"scale"`` becomes :func:`scaled_sigma` of the training data X."""
    return scaled_sigma(X) if isinstance(sigma, str) and sigma == SCALE else float(sigma)


def _checked_decision(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``fn`` (a ``decision_function``) followed by :meth:`LocalKernelClassifier._check_finite`."""

    @functools.wraps(fn)
    def decision_function(self: LocalKernelClassifier, X: np.ndarray, *args: Any, **kwargs: Any) -> np.ndarray:
        return self._check_finite(fn(self, X, *args, **kwargs))

    decision_function.__lkm_checked__ = True  # type: ignore[attr-defined]
    return decision_function


def _refusing_sample_weight(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn`` (a ``fit`` without a ``sample_weight`` parameter) raising a one-line
    TypeError that names the public class and its reason
    (:attr:`LocalKernelClassifier.sample_weight_refusal`) when given ``sample_weight``
    (``None`` means unweighted and is dropped). The signature stays ``fn``'s
    (``inspect.signature`` follows ``__wrapped__``), so scikit-learn's
    ``has_fit_parameter(est, "sample_weight")`` stays False."""

    @functools.wraps(fn)
    def fit(self: LocalKernelClassifier, *args: Any, **kwargs: Any) -> T:
        if "sample_weight" in kwargs and kwargs.pop("sample_weight") is not None:
            raise TypeError(f"{type(self).__name__} does not take sample_weight: {self.sample_weight_refusal}")
        return fn(self, *args, **kwargs)

    fit.__lkm_refuses_sample_weight__ = True  # type: ignore[attr-defined]
    return fit


@functools.cache
def accepts_keyword(cls: type, method: str, keyword: str) -> bool:
    """Whether ``cls.<method>`` takes the keyword argument ``keyword`` (inspected once per class)."""
    try:
        parameters = inspect.signature(getattr(cls, method)).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return keyword in parameters and parameters[keyword].kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    )


def _takes_sample_weight(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a ``sample_weight`` parameter or takes any keyword (``**kwargs``)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # unknown: leave it alone
    return any(p.name == "sample_weight" or p.kind == p.VAR_KEYWORD for p in parameters)


def _accepts_cache(cls: type, method: str) -> bool:
    return accepts_keyword(cls, method, "cache")


def cache_kwargs(estimator: Any, method: str, cache: DistanceCache | None) -> dict[str, Any]:
    """``{"cache": cache}`` when ``estimator.<method>`` (``"fit"``, ``"predict"``, ...)
    accepts a ``cache`` keyword, as lkm's estimators do; ``{}`` for any other estimator
    (e.g. scikit-learn's own), so the runner can call both the same way."""
    return {"cache": cache} if cache is not None and _accepts_cache(type(estimator), method) else {}


def memoized(cache: DistanceCache | None, key: Any, compute: Callable[[], T], *arrays: np.ndarray) -> T:
    """``compute()``, memoized in ``cache`` under ``key`` and the arrays' identities if given."""
    return compute() if cache is None else cache.memo(key, compute, *arrays)


def canonical_row_order(X: Any, y_index: np.ndarray) -> np.ndarray:
    """Row indices that sort the training rows by class index, then lexicographically by
    their features: the same rows in any input order give the same sequence (rows equal
    in every feature and class are interchangeable). A solver whose result follows the
    order of its rows (LIBSVM's working-set choice, its label order for vote ties) trained
    in this order gives predictions that do not depend on the order the rows came in."""
    dense = np.asarray(densify(X))
    if dense.shape[0] < 2 or dense.shape[1] == 0:
        return np.lexsort((y_index,)).astype(np.intp)
    # np.lexsort over every column (one stable sort per column) costs more than LIBSVM's
    # fit on a few hundred rows; sorting by class and the first column, then each run of
    # still-equal rows by the next column (stably) gives the same order.
    order = np.lexsort((dense[:, 0], y_index))
    y_sorted = np.asarray(y_index)[order]
    starts = np.empty(order.size, dtype=bool)  # where a run of rows equal so far begins
    starts[0] = True
    starts[1:] = y_sorted[1:] != y_sorted[:-1]
    for j in range(1, dense.shape[1]):
        prev = dense[order, j - 1]  # runs only ever split, so their boundaries stay put
        starts[1:] |= prev[1:] != prev[:-1]
        group = np.cumsum(starts)
        tied = ~starts
        tied[:-1] |= ~starts[1:]  # rows in a run of two or more
        if not tied.any():
            break
        rows = np.flatnonzero(tied)
        sub = np.lexsort((dense[order[rows], j], group[rows]))  # stable: equal rows keep their order
        order[rows] = order[rows][sub]
    return order.astype(np.intp)


def densify(X: Any) -> Any:
    """scipy sparse input (CSR, CSC, COO, ...) as a dense array, anything else unchanged.

    The kernel methods start from squared distances and dense n × n Gram matrices, so a
    sparse X is converted once, at validation (memory n_samples × n_features float64);
    the results equal those of the dense input."""
    return X.toarray() if sp.issparse(X) else X  # type: ignore[attr-defined]  # scipy-stubs: issparse narrows to SparseABC, which declares no toarray


class available_unless:  # noqa: N801 (a decorator, named like sklearn's available_if)
    """Like scikit-learn's ``available_if``: the decorated method exists on an instance
    only when ``reason(instance)`` returns None; otherwise reading it raises
    AttributeError with that reason as its message (so ``hasattr`` is False and the
    user reads why)."""

    def __init__(self, reason: Callable[[Any], str | None]) -> None:
        self.reason = reason

    def __call__(self, fn: Callable[..., Any]) -> available_unless:
        self.fn = fn
        functools.update_wrapper(self, fn)
        return self

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self.fn
        why = self.reason(obj)
        if why is not None:
            raise AttributeError(why)
        return types.MethodType(self.fn, obj)


class LocalKernelClassifier(ClassifierMixin, BaseEstimator):  # type: ignore[misc]  # scikit-learn has no type stubs: its classes are Any
    """Base class of lkm's classifiers: validation, ``classes_``, dummy outputs, ``predict``.

    Tsuji et al. [1]_ (Sec. 1) classify through regression on dummy outputs: +1 for one
    class and -1 for the other; with more than two classes every method here uses one-vs-rest
    ±1 columns and predicts the class of the largest output. Subclasses implement
    ``fit(X, y, cache=None)`` and ``decision_function(X, cache=None)``, which returns
    shape (n,) for two classes (positive means ``classes_[1]``) and (n, n_classes)
    otherwise; ``predict`` takes the sign or the largest output, exact ties broken by
    one rule (the class with the larger training prior, then the class of the nearest
    training pattern when the method knows it, then the lower class index). A ``fit``
    without a ``sample_weight`` parameter raises a one-line TypeError naming the class
    and :attr:`sample_weight_refusal` when given one.

    Numerical failure is caught here, once for every method: training and query
    features whose squared distances over- or underflow float64 raise
    :class:`~lkm.errors.NumericalError` (:func:`check_feature_scale`), and so do
    non-finite decision values of every subclass's ``decision_function`` and of
    :meth:`predict`, naming the parameters involved. No method returns NaN outputs or
    predictions from them.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted (set by a subclass's ``fit``).
    class_count_ : ndarray of shape (n_classes,)
        Training samples per class (the tie rule's prior).
    n_features_in_ : int
        Number of features seen in ``fit``.
    sigma_ : float
        Estimators with a ``sigma`` parameter: the Gaussian width in use (``"scale"``
        resolved from the training data by :func:`scaled_sigma`).
    info_ : dict
        Method facts recorded by ``fit`` and updated by ``predict`` (for instance
        ``tie_share``, the share of exactly tied queries).

    See Also
    --------
    lkm.methods.resolve_estimator : The class of a registry key or a dotted path.

    References
    ----------
    .. [1] K. Tsuji, M. Kudo, A. Tanaka, "Localized Projection Learning", Structural,
       Syntactic, and Statistical Pattern Recognition (S+SSPR), LNCS, Springer, 2010,
       Sec. 1 (classification by regression on dummy outputs).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lkm.methods import LocalKernelClassifier, ProjectionLearning
    >>> issubclass(ProjectionLearning, LocalKernelClassifier)
    True
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = ProjectionLearning(sigma=1.0).fit(X[::2], y[::2])
    >>> clf.classes_
    array([0, 1, 2])
    >>> clf.predict(X[1:6])
    array([0, 0, 0, 0, 0])
    """

    #: Parameters named when decision values are not finite (see :meth:`_check_finite`).
    _numerical_params: tuple[str, ...] = ("sigma",)
    #: Parameters used only when another parameter has one of some values:
    #: {parameter: (other parameter, values)}, e.g. ``{"sigma": ("kernel", ("gaussian",))}``.
    #: `lkm sweep` refuses to sweep a parameter that no setting uses
    #: (:func:`lkm.spec.unused_parameter`); any estimator may declare it.
    conditional_params: dict[str, tuple[str, tuple[Any, ...]]] = {}
    #: Why ``fit`` takes no ``sample_weight`` (the TypeError's text after "<Class> does not
    #: take sample_weight: "); read only for a ``fit`` without that parameter.
    sample_weight_refusal: str = "its fit has no per-sample weights"
    # Fitted attributes (declared for the type checker; set by fit, never at class level).
    classes_: NDArray[Any]
    class_count_: NDArray[np.intp]
    info_: dict[str, Any]
    sigma_: float

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("decision_function")
        if fn is not None and not getattr(fn, "__lkm_checked__", False):
            cls.decision_function = _checked_decision(fn)  # type: ignore[method-assign]
        fit = cls.__dict__.get("fit")
        if fit is not None and not getattr(fit, "__lkm_refuses_sample_weight__", False) and not _takes_sample_weight(fit):
            cls.fit = _refusing_sample_weight(fit)

    @staticmethod
    def _finite_or_none(decision: np.ndarray) -> np.ndarray | None:
        """``decision``, or None where ``decision_function`` would raise (a non-finite value)."""
        return decision if np.isfinite(decision).all() else None

    def _numerical_context(self) -> str:
        """``"sigma=1e-160, lam=0.5"``: the values of ``_numerical_params``."""
        params = self.get_params(deep=False)
        if params.get("sigma") == SCALE and hasattr(self, "sigma_"):
            params["sigma"] = f"'scale' ({self.sigma_:.6g})"
            return ", ".join(f"{p}={params[p]}" if p == "sigma" else f"{p}={params[p]!r}"
                             for p in self._numerical_params if p in params)
        return ", ".join(f"{p}={params[p]!r}" for p in self._numerical_params if p in params)

    def _check_finite(self, decision: np.ndarray) -> np.ndarray:
        """``decision``, or :class:`NumericalError` (one line naming the parameters) when
        some value is NaN or infinite."""
        finite = np.isfinite(decision)
        if finite.all():
            return decision
        bad = int((~finite.reshape(finite.shape[0], -1)).any(axis=1).sum())
        raise NumericalError(
            f"{type(self).__name__}: {self._numerical_context()} gives non-finite decision "
            f"values for {bad} of {finite.shape[0]} rows; change these parameters "
            "or rescale the features"
        )

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # densified once at validation (:func:`densify`)
        return tags

    def _validate_training(self, X: Any, y: np.ndarray, check_input: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Validate parameters and data; set ``classes_`` and ``n_features_in_``.

        Returns X as float64 (the caller's array object when it already is one, so a
        :class:`DistanceCache` recognizes it) and y as indices into ``classes_``. An
        estimator with a ``sigma`` parameter gets ``sigma_``, the width in use
        (``"scale"`` resolved from X by :func:`scaled_sigma`).

        ``check_input=False`` (scikit-learn's convention, as in ``DecisionTreeClassifier.fit``)
        skips the parameter and data checks for a caller that fits many small models on
        arrays it built itself (SVM-KNN's local SVMs): X must be a finite 2-D float64
        array and y a 1-D label array of at least two classes.
        """
        if check_input:
            self._validate_params()
            self._reject_boolean_numbers()
            X, y = validate_data(self, densify(X), y, dtype=np.float64)
            check_feature_scale(X, type(self).__name__)
            check_classification_targets(y)
        else:
            self.n_features_in_ = X.shape[1]
        self.classes_, y_index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least two classes; got 1 class"
            )
        self.class_count_ = np.bincount(y_index, minlength=self.classes_.size)
        if "sigma" in self._get_param_names():
            self.sigma_ = resolve_sigma(self.sigma, X)  # what fit and predict use
        return X, y_index

    def _reject_boolean_numbers(self) -> None:
        """sklearn's ``Interval`` constraints accept ``True`` as 1; a numeric parameter
        (one constrained to an interval and not also allowed to be a boolean) given a
        bool is a mistake, e.g. ``sigma: true`` in a spec."""
        for name, constraints in getattr(self, "_parameter_constraints", {}).items():
            value = getattr(self, name, None)
            numeric = any(isinstance(c, Interval) for c in constraints)
            if numeric and "boolean" not in constraints and isinstance(value, (bool, np.bool_)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must be a number, "
                    f"not a boolean; got {value!r}"
                )

    def _validate_query(self, X: Any, check_input: bool = True) -> np.ndarray:
        """Query rows as float64, checked against the fit (``check_input=False``: X as
        given, see :meth:`_validate_training`)."""
        if not check_input:
            return cast("NDArray[np.float64]", X)  # the caller's validated rows
        check_is_fitted(self)
        rows: NDArray[np.float64] = validate_data(self, densify(X), dtype=np.float64, reset=False)
        check_feature_scale(rows, type(self).__name__, role="query")
        return rows

    def _dummy_outputs(self, y_index: np.ndarray) -> np.ndarray:
        """±1 dummy outputs: shape (n,) with +1 for ``classes_[1]`` when there are two
        classes, else one-vs-rest columns of shape (n, n_classes)."""
        if self.classes_.size == 2:
            return np.where(y_index == 1, 1.0, -1.0)
        Y = np.full((y_index.size, self.classes_.size), -1.0)
        Y[np.arange(y_index.size), y_index] = 1.0
        return Y

    def _break_ties(
        self, decision: NDArray[np.float64], nearest_class: NDArray[np.intp] | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.intp], NDArray[np.bool_]]:
        """Decision values with exact ties broken by one explicit rule, the winning class
        indices, and which rows were tied.

        Two classes: the sign of f; more: the largest output. Where f is exactly 0 (or the
        largest output is shared), the tied class with the larger training prior wins;
        between equally frequent classes, the class of the nearest training pattern
        (``nearest_class``, class indices, when the method knows it); only then the lower
        class index. No rule depends on the order of the labels unless all of these tie.
        The returned values raise each tied winner by one ulp (``np.nextafter``; f = ±5e-324
        for two classes), so their sign / argmax is the label: a ``decision_function``
        that returns them agrees with :meth:`predict` everywhere.
        """
        binary = decision.ndim == 1
        scores = np.column_stack([-decision, decision]) if binary else decision
        top = scores.max(axis=1, keepdims=True)
        tied = scores == top
        ties = tied.sum(axis=1) > 1
        choice = np.argmax(scores, axis=1)
        if ties.any():
            # lexicographic preference among the tied classes: prior, then nearest pattern's class
            preference = np.broadcast_to(self.class_count_ * 2.0, tied.shape).copy()
            if nearest_class is not None:
                preference[np.arange(tied.shape[0]), nearest_class] += 1.0
            preference[~tied] = -np.inf
            choice[ties] = np.argmax(preference[ties], axis=1)
            rows = np.flatnonzero(ties)
            if binary:
                decision = decision.copy()
                decision[rows] = np.where(choice[rows] == 1, 1.0, -1.0) * np.nextafter(0.0, 1.0)
            else:
                decision = decision.copy()
                decision[rows, choice[rows]] = np.nextafter(top[rows, 0], np.inf)
        return decision, choice, ties

    def _labels_from_decision(
        self, decision: NDArray[np.float64], nearest_class: NDArray[np.intp] | None = None
    ) -> NDArray[Any]:
        """Labels from decision values, exact ties by the rule of :meth:`_break_ties`.
        ``info_['tie_share']`` receives the share of tied points."""
        return self._labels_and_decision(decision, nearest_class)[0]

    def _labels_and_decision(
        self, decision: NDArray[np.float64], nearest_class: NDArray[np.intp] | None = None
    ) -> tuple[NDArray[Any], NDArray[np.float64]]:
        """:meth:`_labels_from_decision`'s labels and the tie-broken values beside them
        (what a ``decision_function`` built on :meth:`_break_ties` returns)."""
        broken, choice, ties = self._break_ties(decision, nearest_class)
        if isinstance(getattr(self, "info_", None), dict):
            self.info_["tie_share"] = float(ties.mean()) if ties.size else 0.0
        return self.classes_[choice], broken

    def _scaled_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Decision values up to a positive factor per row, for :meth:`predict`, and the
        class index of each row's nearest training pattern (or None).

        Methods whose outputs are kernel expansions override this to evaluate them
        without underflow (:func:`lkm.numerics.kernels.exp_rows_scaled`); the default is
        :meth:`decision_function`.
        """
        return self.decision_function(X, cache=cache), None

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """The method's outputs; every subclass implements it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes distances between the query and training samples.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            Two classes: one value per query, positive for ``classes_[1]``. More
            classes: one column per class of ``classes_``, the largest wins.
        """
        raise NotImplementedError

    def _no_calibrated_probabilities(self) -> str:
        return (
            f"{type(self).__name__} has no predict_proba: its outputs are not calibrated "
            "probabilities and lkm has no calibrated route for it; use decision_function, "
            "SVMClassifier(probability=True), or wrap it in sklearn.calibration.CalibratedClassifierCV"
        )

    @available_unless(_no_calibrated_probabilities)
    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities: not available unless a subclass has a calibrated route.

        Reading the attribute raises AttributeError naming the reason (so ``hasattr`` is
        False); estimators with a calibrated route, such as
        ``SVMClassifier(probability=True)``, override it.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query samples.

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Never returned here.
        """
        raise AttributeError(self._no_calibrated_probabilities())  # not reached: __get__ raises

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Class labels: the sign of the output for two classes, else the largest output.

        Kernel-expansion methods evaluate their outputs up to a positive factor per query
        here, so that the sign and the argmax stay exact where every kernel value
        underflows; exact ties go by the rule of the class description.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes distances between the query and training samples.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted class labels (values of ``classes_``).
        """
        decision, nearest = self._scaled_decision(X, cache=cache)
        return self._labels_from_decision(self._check_finite(decision), nearest)
