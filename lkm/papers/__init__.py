"""The reproduced papers: one package per paper, named by the key `lkm reproduce` takes,
plugged into the reproduction framework (:mod:`lkm.reproduction`), which never imports
them. Each holds its specs (``specs/*.yaml``), the numbers the paper prints
(``paper_values.yaml``), the named causes of where we differ (``differences.yaml``),
its claims and its tables and figures.

- :mod:`lkm.papers.lpl` — Tsuji, Kudo, Tanaka, "Localized Projection Learning".
- :mod:`lkm.papers.npps` — Shin, Cho, NPPS and kNN invariance.
- :mod:`lkm.papers.lrr` — Li, Chen, Tang, local risk regularization.
- :mod:`lkm.papers.cevikalp` — Cevikalp, Larlus, Douze, Jurie, local subspace classifiers.
- :mod:`lkm.papers.prls` — Yang, King, Lyu, partially penalized RLS (PRLS, PLapRLS).

``specs/cross_paper.yaml`` compares the methods of all five under one protocol
(:data:`CROSS_SPEC`). A new paper is a new subpackage: it is found here
(:func:`lkm.reproduction.paper.discover_papers`) and its outputs are registered when
this package is imported (entry point ``papers`` of the group ``lkm.outputs``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from lkm.reproduction.paper import discover_papers
from lkm.reproduction.runs import packaged_specs as shipped_specs
from lkm.reproduction.runs import spec_folder

#: Papers by the key `lkm reproduce` takes, in report order.
PAPERS: dict[str, ModuleType] = discover_papers(__name__)

#: The cross-paper comparison: every method of the five papers on shared data sets.
CROSS_SPEC = str(spec_folder(__name__) / "cross_paper.yaml")


def packaged_specs() -> dict[str, Path]:
    """Every spec lkm ships, by name (its file stem): each paper's ``specs/`` and the
    cross-paper spec (:func:`lkm.reproduction.runs.packaged_specs`). `lkm run NAME` and
    `lkm specs` read these."""
    return shipped_specs(__name__)
