"""One module per reproduced paper: its experiment list, paper-specific outputs and the
evaluation of its claims from our numbers.

- :mod:`lkm.papers.tsuji` — Tsuji, Kudo, Tanaka, "Localized Projection Learning".
- :mod:`lkm.papers.shin` — Shin, Cho, NPPS and kNN invariance.
- :mod:`lkm.papers.li` — Li, Chen, Tang, local risk regularization.

Each module has ``SPECS`` (its experiments), ``evaluate_claims(root, smoke)`` and
``write_summary(root, smoke)``; :mod:`lkm.papers.common` holds what they share.
"""

from lkm.papers import li, shin, tsuji

#: Papers by the key `lkm reproduce` takes.
PAPERS = {"lpl": tsuji, "npps": shin, "lrr": li}
