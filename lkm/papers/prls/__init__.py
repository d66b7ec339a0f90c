"""Yang, King, Lyu — partially penalized RLS (PRLS, PLapRLS) against RLS and LapRLS,
supervised and semi-supervised: the reproduction (``lkm reproduce prls``).

- :data:`SPECS` — the paper's experiments (``specs/`` beside this file), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers (paired tests over
  task × realization), the claims table;
- :mod:`.outputs` — the semi-supervised table beside the paper's numbers and Fig. 2;
  :mod:`.toy` — the toy study (Fig. 1) with its table and figure; registered when this
  package is imported.

The estimators are :mod:`lkm.methods.manifold` (PRLS, LapRLS, PLapRLS and the
regressors); the semi-supervised protocol is :class:`lkm.spec.protocols.SemiSupervisedProtocol`.
"""

from __future__ import annotations

from lkm.papers.prls import outputs, toy  # noqa: F401  (registers the paper's outputs and the toy study)
from lkm.papers.prls.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary
from lkm.papers.prls.docs import DOC_BLOCKS
from lkm.reproduction.readings import reading_experiments
from lkm.reproduction.runs import experiments

#: The paper's experiments, then the variant runs of its readings (readings.yaml), in the order `lkm reproduce prls` runs them.
SPECS = experiments(__name__, "prls_toy", "prls_isolet", "prls_letter", "prls_usps") + reading_experiments(__name__)

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 5

__all__ = ['DOC_BLOCKS', 'ORDER', 'CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
