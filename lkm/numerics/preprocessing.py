"""Feature preprocessing, always fitted on the training part of a split only."""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler

Preprocessing = Literal["standardize", "scale", "scale_global", "none"]

DESCRIPTIONS: dict[str, str] = {
    "standardize": "zero mean, unit variance per feature (training part's statistics)",
    "scale": "each feature scaled to [-1, 1] by the training part's min and max",
    "scale_global": "every feature by one affine map, the training part's overall min and max to -1 and 1 "
                    "(images: the pixel range, keeping the images as they are)",
    "none": "raw features",
}


def make_preprocessor(kind: Preprocessing):
    """The scikit-learn transformer for a spec's ``preprocessing`` value."""
    if kind == "standardize":
        return StandardScaler()
    if kind == "scale":
        return MinMaxScaler(feature_range=(-1.0, 1.0))
    if kind == "scale_global":
        return GlobalRangeScaler()
    return FunctionTransformer(None)


class GlobalRangeScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """One affine map for all features: the training part's smallest value to -1 and its
    largest to 1 (``MinMaxScaler`` does this per feature, which changes an image's pixels
    differently and is not a reading of "pixels in [-1, 1]")."""

    def fit(self, X, y=None):  # noqa: ANN001, ANN201  (scikit-learn's signature)
        X = np.asarray(X, dtype=np.float64)
        self.min_, self.max_ = float(X.min()), float(X.max())
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):  # noqa: ANN001, ANN201
        span = self.max_ - self.min_
        X = np.asarray(X, dtype=np.float64)
        return X - self.min_ if span == 0 else 2.0 * (X - self.min_) / span - 1.0


def preprocess(kind: Preprocessing, X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fit on ``X_train``, transform both; returns C-contiguous float64 arrays."""
    t = make_preprocessor(kind).fit(X_train)
    return (
        np.ascontiguousarray(t.transform(X_train), dtype=np.float64),
        np.ascontiguousarray(t.transform(X_test), dtype=np.float64),
    )
