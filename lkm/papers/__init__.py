"""One package per reproduced paper, named by the key `lkm reproduce` takes: its
experiment list (``SPECS``), its paper-specific tables and figures, its claims
(``evaluate_claims(root, smoke)``, ``write_summary(root, smoke)``) and the numbers the
paper prints that the code compares with (``paper_values.yaml``).

- :mod:`lkm.papers.lpl` — Tsuji, Kudo, Tanaka, "Localized Projection Learning".
- :mod:`lkm.papers.npps` — Shin, Cho, NPPS and kNN invariance.
- :mod:`lkm.papers.lrr` — Li, Chen, Tang, local risk regularization.
- :mod:`lkm.papers.cevikalp` — Cevikalp, Larlus, Douze, Jurie, local subspace classifiers.
- :mod:`lkm.papers.prls` — Yang, King, Lyu, partially penalized RLS (PRLS, PLapRLS).

:mod:`lkm.papers.common` holds what they share; :mod:`lkm.papers.docs` builds the docs'
tables from their snapshot runs. Each package is also an entry point of the group
``lkm.outputs`` (pyproject.toml), which registers its outputs for spec validation.
"""

from types import ModuleType

from lkm.papers import cevikalp, lpl, lrr, npps, prls

#: Papers by the key `lkm reproduce` takes.
PAPERS: dict[str, ModuleType] = {"lpl": lpl, "npps": npps, "lrr": lrr, "cevikalp": cevikalp, "prls": prls}
