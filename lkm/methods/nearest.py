"""Nearest-neighbour classifier (the NN rows of Cevikalp et al., Tables I–II), with the
Euclidean or the two-sided tangent distance (:mod:`lkm.numerics.tangent`)."""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils._param_validation import StrOptions

from lkm.methods.base import LocalKernelClassifier
from lkm.numerics.kernels import DistanceCache, sq_dists
from lkm.numerics.threads import map_row_blocks

METRICS = ("euclidean", "tangent")
#: Queries per task of the per-class minima with ``n_jobs`` (the same blocks at every n_jobs).
QUERY_BLOCK = 1024


class NearestNeighbor(LocalKernelClassifier):
    """1-nearest-neighbour classifier with the Euclidean or tangent distance (``nn``).

    The NN rows of Cevikalp et al. [1]_ (Tables I-II). ``predict`` gives the label of the nearest training sample; among training samples
    at exactly the same distance the lower training index wins (deterministic; otherwise
    predictions do not depend on the order of the training rows or of the labels).
    ``decision_function`` is the negative squared distance (squared Euclidean, or TD,
    which is a squared distance itself) to each class's nearest training sample. Squared,
    not square-rooted: a root would blow round-off of 1e-15 in d² up to 3e-8. Distances
    come from ``cache`` if given.

    Parameters
    ----------
    metric : {"euclidean", "tangent"}, default="euclidean"
        The distance. ``"tangent"`` is the two-sided tangent distance
        (:mod:`lkm.numerics.tangent`) and needs square images (16×16 for USPS).
    n_jobs : int or None, default=None
        Threads (joblib; scikit-learn's meaning: None is 1, -1 every core) that reduce
        the query × training distances to per-class minima, in blocks of queries that do
        not depend on ``n_jobs``, so the outputs are identical at every value. The
        distances themselves are one matrix product, threaded by BLAS.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    X_fit_ : ndarray of shape (n_train, n_features)
        The training samples.
    y_index_ : ndarray of shape (n_train,)
        Each training sample's index into ``classes_``.
    info_ : dict
        ``metric``, ``n_train``, and after ``predict`` ``tie_share`` (queries whose
        nearest samples of two classes are exactly equally far).

    See Also
    --------
    lkm.methods.HKNN : Local hyperplane classifier, Cevikalp et al.'s other baselines.

    References
    ----------
    .. [1] H. Cevikalp, D. Larlus, M. Douze, F. Jurie, "Local Subspace Classifiers:
       Linear and Nonlinear Approaches", IEEE Workshop on Machine Learning for Signal
       Processing (MLSP), 2007, Sec. IV, Tables I-II (the NN rows).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lkm.methods import NearestNeighbor
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = NearestNeighbor().fit(X[::2], y[::2])
    >>> print(round(clf.score(X[1::2], y[1::2]), 3))
    0.96
    >>> clf.decision_function(X[1::2]).shape
    (75, 3)
    """

    sample_weight_refusal = (
        "1-NN predicts the nearest training row's label, which has no per-row weights"
    )

    _parameter_constraints: dict[str, list[Any]] = {"metric": [StrOptions(set(METRICS))], "n_jobs": [Integral, None]}
    _numerical_params = ("metric",)
    X_fit_: NDArray[np.float64]
    y_index_: NDArray[np.intp]

    def __init__(self, metric: str = "euclidean", n_jobs: int | None = None) -> None:
        self.metric = metric
        self.n_jobs = n_jobs

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> NearestNeighbor:
        """Store the training samples.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training samples.
        y : array-like of shape (n_samples,)
            Class labels.
        cache : DistanceCache or None, default=None
            Accepted for the signature all lkm estimators share; unused here.

        Returns
        -------
        NearestNeighbor
            The fitted estimator.
        """
        X, y_index = self._validate_training(X, y)
        if self.metric == "tangent":
            from lkm.numerics.tangent import image_shape_for

            image_shape_for(X.shape[1])  # one-line DataError for non-square images
        self.X_fit_ = X
        self.y_index_ = y_index
        self.info_ = {"metric": self.metric, "n_train": int(X.shape[0])}
        return self

    def _sq_dists(self, X: np.ndarray, cache: DistanceCache | None) -> np.ndarray:
        X = self._validate_query(X)
        return sq_dists(X, self.X_fit_, cache, metric=self.metric)

    def _class_distances(self, D: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
        """Per query, the squared distance to each class's nearest sample (n, n_classes),
        and the index of its nearest training sample (lower index on ties), over blocks of
        :data:`QUERY_BLOCK` queries on ``n_jobs`` threads (minima are exact, so the blocks
        change no value)."""
        masks = [self.y_index_ == c for c in range(self.classes_.size)]

        def block(rows: slice) -> tuple[np.ndarray, np.ndarray]:
            part = D[rows]
            out = np.empty((part.shape[0], len(masks)))
            for c, mask in enumerate(masks):  # a loop over classes, not over queries
                out[:, c] = part[:, mask].min(axis=1)
            return out, np.argmin(part, axis=1)

        parts = map_row_blocks(block, D.shape[0], QUERY_BLOCK, self.n_jobs)
        if not parts:
            return np.empty((0, len(masks))), np.zeros(0, dtype=np.intp)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Negative squared distances to each class's nearest training sample.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, n_classes)
            More classes: minus each class's smallest squared distance. Two classes:
            d²(class 0) − d²(class 1), positive for ``classes_[1]``.
        """
        return self._decision(self._class_distances(self._sq_dists(X, cache))[0])

    def _decision(self, per_class: np.ndarray) -> np.ndarray:
        return per_class[:, 0] - per_class[:, 1] if self.classes_.size == 2 else -per_class

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Label of the nearest training sample (lower training index on exact ties).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_queries, n_features)
            Query samples.
        cache : DistanceCache or None, default=None
            Memoizes the query × training distances.

        Returns
        -------
        ndarray of shape (n_queries,)
            Predicted class labels.
        """
        return self._labels(*self._class_distances(self._sq_dists(X, cache)))

    def _labels(self, per_class: np.ndarray, nearest: np.ndarray) -> np.ndarray:
        top2 = np.partition(per_class, 1, axis=1)[:, :2] if nearest.size else np.zeros((0, 2))
        self.info_["tie_share"] = float(np.mean(top2[:, 0] == top2[:, 1])) if nearest.size else 0.0
        labels: np.ndarray = self.classes_[self.y_index_[nearest]]
        return labels

    def _predict_and_decision(
        self, X: np.ndarray, cache: DistanceCache | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``predict(X)`` and ``decision_function(X)`` (None where it would raise), bit for
        bit, from one pass over the distances (the runner records both)."""
        per_class, nearest = self._class_distances(self._sq_dists(X, cache))
        return self._labels(per_class, nearest), self._finite_or_none(self._decision(per_class))
