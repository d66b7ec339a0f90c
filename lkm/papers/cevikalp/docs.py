"""The tables of docs/reproductions/cevikalp.md built from the committed snapshot
(:mod:`lkm.reproduction.docs`): block ids ``cevikalp/<name>``."""

from __future__ import annotations

import pandas as pd

from lkm.papers.cevikalp.outputs import paper_table
from lkm.reproduction.docs import Block, Snapshot


def table(snap: Snapshot, name: str) -> pd.DataFrame:
    """Table I or II of Cevikalp et al. beside ours (:func:`lkm.papers.cevikalp.outputs.paper_table`)."""
    return paper_table(snap.context(name)).drop(columns=["dataset"])


#: The paper's own blocks (its claims blocks come from the framework).
DOC_BLOCKS: dict[str, Block] = {
    "table1": Block(("cevikalp_usps",), lambda s: table(s, "cevikalp_usps"),
                    "Cevikalp et al. Table I (USPS error %) beside ours, stated and tuned settings"),
    "table2": Block(("cevikalp_segmentation",), lambda s: table(s, "cevikalp_segmentation"),
                    "Cevikalp et al. Table II (image segmentation rate %) beside ours"),
}
