"""Yang, King, Lyu — partially penalized RLS (PRLS, PLapRLS) against RLS and LapRLS,
supervised and semi-supervised: the reproduction (``lkm reproduce prls``).

- :data:`SPECS` — the paper's experiments (specs under configs/), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers (paired tests over
  task × realization), the claims table;
- :mod:`.outputs` — the semi-supervised table beside the paper's numbers and Fig. 2;
  :mod:`.toy` — the toy study (Fig. 1) with its table and figure; registered when this
  package is imported (entry point ``prls`` of the group ``lkm.outputs``).

The estimators are :mod:`lkm.methods.manifold` (PRLS, LapRLS, PLapRLS and the
regressors); the semi-supervised protocol is :class:`lkm.protocols.SemiSupervisedProtocol`.
"""

from __future__ import annotations

from lkm.papers.common import Experiment
from lkm.papers.prls import outputs, toy  # noqa: F401  (registers the paper's outputs and the toy study)
from lkm.papers.prls.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary

#: The paper's experiments, in the order `lkm reproduce prls` runs them.
SPECS = [
    Experiment("configs/prls_toy.yaml"),
    Experiment("configs/prls_isolet.yaml"),
    Experiment("configs/prls_letter.yaml"),
    Experiment("configs/prls_usps.yaml"),
]

__all__ = ['CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
