"""Li, Chen, Tang — local risk regularization (LRR) against RLS: the reproduction (``lkm reproduce lrr``).

- :data:`SPECS` — the paper's experiments (``specs/`` beside this file), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers, the claims table;
- :mod:`.artificial`, :mod:`.benchmarks` — the artificial-data tables (artificial) and the benchmark/UCI paired and tuned tables (benchmarks), registered as ``@table`` / ``@figure`` builders when this package is imported.
"""

from __future__ import annotations

from lkm.papers.lrr import artificial, benchmarks  # noqa: F401  (registers the paper's outputs)
from lkm.papers.lrr.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary
from lkm.reproduction.readings import reading_experiments
from lkm.reproduction.runs import experiments

#: The paper's experiments, then the variant runs of its readings (readings.yaml), in the order `lkm reproduce lrr` runs them.
SPECS = experiments(__name__, "lrr_artificial", "lrr_benchmark", "lrr_uci") + reading_experiments(__name__)

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 3

__all__ = ['ORDER', 'CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
