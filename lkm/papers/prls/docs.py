"""The tables of docs/reproductions/prls.md built from the committed snapshot
(:mod:`lkm.reproduction.docs`): block ids ``prls/<name>``."""

from __future__ import annotations

import pandas as pd

from lkm.papers.prls.outputs import semi_table
from lkm.papers.prls.toy import toy_rows, toy_table
from lkm.reproduction.docs import Block, Snapshot


def semi(snap: Snapshot, name: str) -> pd.DataFrame:
    """A semi-supervised table of Yang et al. beside ours (:func:`lkm.papers.prls.outputs.semi_table`)."""
    return semi_table(snap.context(name))


def toy(snap: Snapshot) -> pd.DataFrame:
    """The toy set's test MSE per method and γ (:func:`lkm.papers.prls.toy.toy_table`)."""
    return toy_table(toy_rows(snap.context("prls_toy")))


#: The paper's own blocks (its claims blocks come from the framework).
DOC_BLOCKS: dict[str, Block] = {
    "toy": Block(("prls_toy",), toy, "Yang et al. Fig. 1 toy: test MSE per method and gamma"),
    "isolet": Block(("prls_isolet",), lambda s: semi(s, "prls_isolet"),
                    "Yang et al. Sec. 5.1 Isolet: unlabeled and test error, 30 labeled speakers"),
    "letter": Block(("prls_letter",), lambda s: semi(s, "prls_letter"),
                    "Yang et al. Sec. 5.2 Letter: average one-vs-all error beside the paper's"),
    "usps": Block(("prls_usps",), lambda s: semi(s, "prls_usps"),
                  "Yang et al. Sec. 5.3 USPS: average pairwise error beside the paper's"),
}
