"""Tsuji, Kudo, Tanaka — "Localized Projection Learning": the reproduction (``lkm reproduce lpl``).

- :data:`SPECS` — the paper's experiments (specs under configs/), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.boundary`, :mod:`.neighbors`, :mod:`.robustness`, :mod:`.scaling` — the outputs of Figs. 3, 4, 6-8 and Table 1 (boundary, neighbors, robustness, scaling), registered as ``@table`` /
  ``@figure`` builders when this package is imported (entry point ``lpl`` of the
  group ``lkm.outputs``).
"""

from __future__ import annotations

from lkm.papers.common import Experiment
from lkm.papers.lpl import boundary, neighbors, robustness, scaling  # noqa: F401  (registers the paper's outputs)
from lkm.papers.lpl.claims import (
    CLAIMS,
    PERTURBED,
    claim_flags,
    evaluate_claims,
    timing_ratios,
    write_summary,
)

#: The paper's experiments, in the order `lkm reproduce lpl` runs them.
SPECS = [
    Experiment("configs/lpl_vs_svm.yaml"),
    Experiment("configs/lpl_vs_svm_scaled.yaml"),
    Experiment("configs/lpl_sigma_sonar.yaml"),
    Experiment("configs/lpl_k_diabetes.yaml"),
    Experiment("configs/lpl_k_diabetes_raw.yaml"),
    Experiment("configs/lpl_synthetic.yaml"),
    Experiment("configs/lpl_annoy.yaml"),
    Experiment("configs/lpl_scaling.yaml"),
    Experiment("configs/lpl_timing_spambase.yaml"),
]

__all__ = ['CLAIMS', 'PERTURBED', 'SPECS', 'claim_flags', 'evaluate_claims', 'timing_ratios', 'write_summary']
