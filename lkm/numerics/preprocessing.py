"""Feature preprocessing, always fitted on the training part of a split only."""

from __future__ import annotations

from typing import Literal

import numpy as np
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler

Preprocessing = Literal["standardize", "scale", "none"]

DESCRIPTIONS: dict[str, str] = {
    "standardize": "zero mean, unit variance per feature (training part's statistics)",
    "scale": "each feature scaled to [-1, 1] by the training part's min and max",
    "none": "raw features",
}


def make_preprocessor(kind: Preprocessing):
    """The scikit-learn transformer for a spec's ``preprocessing`` value."""
    if kind == "standardize":
        return StandardScaler()
    if kind == "scale":
        return MinMaxScaler(feature_range=(-1.0, 1.0))
    return FunctionTransformer(None)


def preprocess(kind: Preprocessing, X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fit on ``X_train``, transform both; returns C-contiguous float64 arrays."""
    t = make_preprocessor(kind).fit(X_train)
    return (
        np.ascontiguousarray(t.transform(X_train), dtype=np.float64),
        np.ascontiguousarray(t.transform(X_test), dtype=np.float64),
    )
