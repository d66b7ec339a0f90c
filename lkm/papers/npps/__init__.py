"""Shin, Cho — NPPS pattern selection and kNN invariance: the reproduction (``lkm reproduce npps``).

- :data:`SPECS` — the paper's experiments (specs under configs/), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.invariance`, :mod:`.selection` — Table 2, the selection-time and k-sweep outputs (selection) and the kNN-invariance study's outputs (invariance; the study itself is lkm.studies.invariance), registered as ``@table`` /
  ``@figure`` builders when this package is imported (entry point ``npps`` of the
  group ``lkm.outputs``).
"""

from __future__ import annotations

from lkm.papers.common import Experiment
from lkm.papers.npps import invariance, selection  # noqa: F401  (registers the paper's outputs)
from lkm.papers.npps.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary

#: The paper's experiments, in the order `lkm reproduce npps` runs them. The MNIST rows
#: (3-8, 6-8, 9-8 on the official split) take about 20 minutes; the large-set row (MNIST
#: even vs odd on all 60000 training images, for DMEF4) takes hours and has its own
#: target instead: `make reproduce-npps-mnist-large` (configs/npps_mnist_even_odd.yaml).
SPECS = [
    Experiment("configs/npps_table2.yaml"),
    Experiment("configs/npps_table2_mnist.yaml"),
    Experiment("configs/npps_fast_vs_naive.yaml"),
    Experiment("configs/npps_invariance.yaml"),
]

__all__ = ['CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
