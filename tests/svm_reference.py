"""The row order of SVMClassifier's references: LIBSVM (libsvm-official's ``svm_train``) and
scikit-learn's ``SVC`` reach their solution along a path, and break one-vs-one vote ties by
a label order, that follow the order of the training rows. SVMClassifier trains on its rows
in :func:`lkm.methods.base.canonical_row_order` (class, then features; issue 42, point 6),
so a reference fit on the same rows in the same order takes the same path (libsvm-official:
the same run; scikit-learn's fork of LIBSVM: the same algorithm): the comparisons keep
their tolerances instead of differing within the solver's stopping tolerance."""

from __future__ import annotations

import numpy as np
import scipy.sparse
from libsvm.svmutil import svm_predict, svm_train

from lkm.methods.base import canonical_row_order


def canonical(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the training rows ``X``, ``y`` in the order SVMClassifier gives them to
    LIBSVM (its class indices are those of ``np.unique(y)``, as ``classes_``)."""
    _, y_index = np.unique(np.asarray(y), return_inverse=True)
    return canonical_row_order(np.asarray(X, dtype=np.float64), y_index.ravel())


def libsvm_binary_decisions(X: np.ndarray, positive: np.ndarray, X_query: np.ndarray, options: str) -> np.ndarray:
    """Decision values of libsvm-official's own ``svm_train``/``svm_predict`` (``options``
    without ``-q``) trained on the rows ``X`` in the order given, labels +1 where
    ``positive`` and -1 elsewhere; positive for +1 (LIBSVM's value favours its first label)."""
    model = svm_train(np.where(positive, 1.0, -1.0), scipy.sparse.csr_matrix(X), options + " -q")
    _, _, values = svm_predict(np.zeros(X_query.shape[0]), scipy.sparse.csr_matrix(X_query), model, "-q")
    return (1.0 if model.get_labels()[0] == 1 else -1.0) * np.asarray(values)[:, 0]
