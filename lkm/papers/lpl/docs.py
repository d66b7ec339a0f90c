"""The tables of docs/reproductions/lpl.md and the README built from the committed
snapshot (:mod:`lkm.reproduction.docs`): block ids ``lpl/<name>``."""

from __future__ import annotations

import pandas as pd

from lkm.papers.lpl.claims import timing_ratios
from lkm.reproduction.docs import Block, DocsError, Snapshot, accuracy_wide


def spambase_timing(snap: Snapshot) -> pd.DataFrame:
    t = timing_ratios(snap.run("lpl_timing_spambase"))
    if t is None:
        raise DocsError("lpl_timing_spambase has no LPL and SVM timings")
    return t


#: The paper's own blocks (its claims blocks come from the framework).
DOC_BLOCKS: dict[str, Block] = {
    "accuracy": Block(("lpl_vs_svm",), lambda s: accuracy_wide(s, "lpl_vs_svm"),
                      "lpl_vs_svm: accuracy at sigma* per dataset and method"),
    "accuracy-selected": Block(("lpl_vs_svm",), lambda s: accuracy_wide(s, "lpl_vs_svm", selected=True),
                               "the same with each method's sigma*"),
    "spambase-timing": Block(("lpl_timing_spambase",), spambase_timing,
                             "spambase seconds at sigma = 1 beside the paper's, SVM/LPL ratios"),
}
