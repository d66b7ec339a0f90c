"""Tsuji, Kudo, Tanaka — "Localized Projection Learning": experiments, outputs, claims.

The experiments are the specs in :data:`SPECS` (run together by ``lkm reproduce lpl``).
"""

from __future__ import annotations

#: The paper's experiments, in the order `lkm reproduce lpl` runs them.
SPECS = [
    "configs/lpl_vs_svm.yaml",
    "configs/lpl_sigma_sonar.yaml",
    "configs/lpl_k_diabetes.yaml",
    "configs/lpl_synthetic.yaml",
    "configs/lpl_scaling.yaml",
    "configs/lpl_timing_spambase.yaml",
    "configs/lpl_annoy.yaml",
]
