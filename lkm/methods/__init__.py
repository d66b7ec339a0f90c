"""Estimators, registered under the keys an experiment spec uses (``estimator: pl``).

Every estimator is a scikit-learn classifier whose ``fit``/``predict``/
``decision_function`` also accept ``cache=`` (a :class:`lkm.kernels.DistanceCache`), and
which records method facts in ``info_`` after fitting.
"""

from __future__ import annotations

from lkm.methods.base import LocalKernelClassifier
from lkm.methods.npps import NPPS, NPPSSVM
from lkm.methods.projection import LocalizedProjectionLearning, ProjectionLearning
from lkm.methods.risk import LocalRiskPair, LocalRiskRegularization, RegularizedLeastSquares
from lkm.methods.svm import SVMClassifier

#: Spec key -> estimator class. Later families (NPPS, LRR, RLS, HKNN, PRLS) add theirs.
METHODS: dict[str, type[LocalKernelClassifier]] = {
    "pl": ProjectionLearning,
    "lpl": LocalizedProjectionLearning,
    "svm": SVMClassifier,
    "npps_svm": NPPSSVM,
    "rls": RegularizedLeastSquares,
    "lrr": LocalRiskRegularization,
    "lrr_pair": LocalRiskPair,
}

__all__ = [
    "METHODS",
    "LocalKernelClassifier",
    "LocalRiskPair",
    "LocalRiskRegularization",
    "LocalizedProjectionLearning",
    "NPPS",
    "NPPSSVM",
    "ProjectionLearning",
    "RegularizedLeastSquares",
    "SVMClassifier",
]
