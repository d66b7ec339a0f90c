"""Shin, Cho — NPPS pattern selection and kNN invariance: the reproduction (``lkm reproduce npps``).

- :data:`SPECS` — the paper's experiments (``specs/`` beside this file), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.invariance`, :mod:`.selection` — Table 2, the selection-time and k-sweep outputs (selection) and the kNN-invariance study's outputs (invariance; the study itself is lkm.studies.invariance), registered as ``@table`` / ``@figure`` builders when this package is imported.
"""

from __future__ import annotations

from lkm.papers.npps import invariance, selection  # noqa: F401  (registers the paper's outputs)
from lkm.papers.npps.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary
from lkm.papers.npps.docs import DOC_BLOCKS
from lkm.reproduction.runs import experiments

#: The paper's experiments, in the order `lkm reproduce npps` runs them. The MNIST rows
#: (3-8, 6-8, 9-8 on the official split) take about 20 minutes; the large-set row (MNIST
#: even vs odd on all 60000 training images, for DMEF4) takes hours and has its own
#: target instead: `make reproduce-npps-mnist-large` (specs/npps_mnist_even_odd.yaml).
SPECS = experiments(__name__, "npps_table2", "npps_table2_mnist", "npps_fast_vs_naive", "npps_invariance")

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 2

__all__ = ['DOC_BLOCKS', 'ORDER', 'CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
