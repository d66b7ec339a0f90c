"""Nearest-neighbour classifier (the NN rows of Cevikalp et al., Tables I–II), with the
Euclidean or the two-sided tangent distance (:mod:`lkm.numerics.tangent`)."""

from __future__ import annotations

import numpy as np
from sklearn.utils._param_validation import StrOptions

from lkm.methods.base import LocalKernelClassifier
from lkm.numerics.kernels import DistanceCache, sq_dists

METRICS = ("euclidean", "tangent")


class NearestNeighbor(LocalKernelClassifier):
    """1-nearest-neighbour classifier with the Euclidean or tangent distance (``nn``).

    ``predict`` gives the label of the nearest training sample; among training samples at
    exactly the same distance the lower training index wins (deterministic; otherwise
    predictions do not depend on the order of the training rows or of the labels).
    ``decision_function`` is the negative squared distance (squared Euclidean, or TD, which
    is a squared distance itself) to each class's nearest training sample,
    (n, n_classes); for two classes (n,): d²(class 0) − d²(class 1), positive for
    ``classes_[1]``. Squared, not square-rooted: a root would blow round-off of 1e-15 in
    d² up to 3e-8. ``metric="tangent"``
    needs square images (16×16 for USPS). Distances come from ``cache`` if given.

    ``info_``: metric, n_train, and after ``predict`` tie_share (queries whose nearest
    samples of two classes are exactly equally far).
    """

    sample_weight_refusal = (
        "1-NN predicts the nearest training row's label, which has no per-row weights"
    )

    _parameter_constraints: dict = {"metric": [StrOptions(set(METRICS))]}
    _numerical_params = ("metric",)

    def __init__(self, metric: str = "euclidean") -> None:
        self.metric = metric

    def fit(self, X: np.ndarray, y: np.ndarray, cache: DistanceCache | None = None) -> NearestNeighbor:
        """Store the training samples (``cache`` is accepted for the common signature)."""
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

    def _class_distances(self, D: np.ndarray) -> np.ndarray:
        """Per query, the squared distance to each class's nearest sample (n, n_classes)."""
        out = np.empty((D.shape[0], self.classes_.size))
        for c in range(self.classes_.size):  # a loop over classes, not over queries
            out[:, c] = D[:, self.y_index_ == c].min(axis=1)
        return out

    def decision_function(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Negative squared distances to each class's nearest training sample (see the class doc)."""
        dist = self._class_distances(self._sq_dists(X, cache))
        return dist[:, 0] - dist[:, 1] if self.classes_.size == 2 else -dist

    def predict(self, X: np.ndarray, cache: DistanceCache | None = None) -> np.ndarray:
        """Label of the nearest training sample (lower training index on exact ties)."""
        D = self._sq_dists(X, cache)
        nearest = np.argmin(D, axis=1) if D.shape[0] else np.zeros(0, dtype=np.intp)
        per_class = self._class_distances(D)
        top2 = np.partition(per_class, 1, axis=1)[:, :2] if D.shape[0] else np.zeros((0, 2))
        self.info_["tie_share"] = float(np.mean(top2[:, 0] == top2[:, 1])) if D.shape[0] else 0.0
        return self.classes_[self.y_index_[nearest]]
