"""One module per reproduced paper: its experiment list, paper-specific outputs and the
evaluation of its claims from our numbers.

- :mod:`lkm.papers.tsuji` — Tsuji, Kudo, Tanaka, "Localized Projection Learning".
"""

from lkm.papers import tsuji  # noqa: F401  (registers outputs)

#: Papers by the key `lkm reproduce` takes.
PAPERS = {"lpl": tsuji}
