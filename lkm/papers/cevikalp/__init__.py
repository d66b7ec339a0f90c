"""Cevikalp, Larlus, Douze, Jurie — local subspace classifiers (HKNN, LDCV, NHKNN, NLDCV,
SVM-KNN, the tangent distance): the reproduction (``lkm reproduce cevikalp``).

- :data:`SPECS` — the paper's experiments (``specs/`` beside this file), in the order they run;
- :mod:`.claims` — the paper's claims checked from our stored numbers (McNemar on the fixed
  USPS split, paired tests over folds on image segmentation), the claims table;
- :mod:`.outputs` — Tables I-II beside ours, the K-sweep figure and the digit panel,
  registered as ``@table`` / ``@figure`` builders when this package is imported.
"""

from __future__ import annotations

from lkm.papers.cevikalp import outputs  # noqa: F401  (registers the paper's outputs)
from lkm.papers.cevikalp.claims import CLAIMS, PERTURBED, evaluate_claims, write_summary
from lkm.papers.cevikalp.docs import DOC_BLOCKS
from lkm.reproduction.readings import reading_experiments
from lkm.reproduction.runs import experiments

#: The paper's experiments, then the variant runs of its readings (readings.yaml), in the order `lkm reproduce cevikalp` runs them.
SPECS = experiments(__name__, "cevikalp_segmentation", "cevikalp_usps") + reading_experiments(__name__)

#: Where the paper stands in the report and in `lkm reproduce all`.
ORDER = 4

__all__ = ['DOC_BLOCKS', 'ORDER', 'CLAIMS', 'PERTURBED', 'SPECS', 'evaluate_claims', 'write_summary']
