"""Tsuji, Kudo, Tanaka — "Localized Projection Learning": the reproduction (``lkm reproduce lpl``).

- :data:`SPECS` — the paper's experiments (``specs/`` beside this file), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.boundary`, :mod:`.neighbors`, :mod:`.robustness`, :mod:`.scaling` — the outputs of Figs. 3, 4, 6-8 and Table 1 (boundary, neighbors, robustness, scaling), registered as ``@table`` / ``@figure`` builders when this package is imported.
"""

from __future__ import annotations

from lkm.papers.lpl import boundary, neighbors, robustness, scaling  # noqa: F401  (registers the paper's outputs)
from lkm.papers.lpl.claims import (
    CLAIMS,
    PERTURBED,
    claim_flags,
    evaluate_claims,
    timing_ratios,
    write_summary,
)
from lkm.papers.lpl.docs import DOC_BLOCKS
from lkm.reproduction.runs import experiments

#: The paper's experiments, in the order `lkm reproduce lpl` runs them.
SPECS = experiments(__name__, "lpl_vs_svm", "lpl_vs_svm_scaled", "lpl_sigma_sonar", "lpl_k_diabetes", "lpl_k_diabetes_raw", "lpl_synthetic", "lpl_annoy", "lpl_scaling", "lpl_timing_spambase")

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 1

__all__ = ['DOC_BLOCKS', 'ORDER', 'CLAIMS', 'PERTURBED', 'SPECS', 'claim_flags', 'evaluate_claims', 'timing_ratios', 'write_summary']
