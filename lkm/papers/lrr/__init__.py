"""Li, Chen, Tang — local risk regularization (LRR) against RLS: the reproduction (``lkm reproduce lrr``).

- :data:`SPECS` — the paper's experiments (specs under configs/), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.artificial`, :mod:`.benchmarks` — the artificial-data tables (artificial) and the benchmark/UCI paired and tuned tables (benchmarks), registered as ``@table`` /
  ``@figure`` builders when this package is imported (entry point ``lrr`` of the
  group ``lkm.outputs``).
"""

from __future__ import annotations

from lkm.papers.common import Experiment
from lkm.papers.lrr import artificial, benchmarks  # noqa: F401  (registers the paper's outputs)
from lkm.papers.lrr.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary

#: The paper's experiments, in the order `lkm reproduce lrr` runs them.
SPECS = [
    Experiment("configs/lrr_artificial.yaml"),
    Experiment("configs/lrr_benchmark.yaml"),
    Experiment("configs/lrr_uci.yaml"),
]

__all__ = ['CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
