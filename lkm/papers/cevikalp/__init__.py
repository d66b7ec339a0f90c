"""Cevikalp, Larlus, Douze, Jurie — local subspace classifiers (HKNN, LDCV, NHKNN, NLDCV,
SVM-KNN, the tangent distance): the reproduction (``lkm reproduce cevikalp``).

- :data:`SPECS` — the paper's experiments (specs under configs/), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers (McNemar on the fixed
  USPS split, paired tests over folds on image segmentation), the claims table;
- :mod:`.outputs` — Tables I-II beside ours, the K-sweep figure and the digit panel,
  registered as ``@table`` / ``@figure`` builders when this package is imported (entry
  point ``cevikalp`` of the group ``lkm.outputs``).
"""

from __future__ import annotations

from lkm.papers.cevikalp import outputs  # noqa: F401  (registers the paper's outputs)
from lkm.papers.cevikalp.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary
from lkm.papers.common import Experiment

#: The paper's experiments, in the order `lkm reproduce cevikalp` runs them.
SPECS = [
    Experiment("configs/cevikalp_segmentation.yaml"),
    Experiment("configs/cevikalp_usps.yaml"),
]

__all__ = ['CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
