"""The tables of docs/reproductions/npps.md built from the committed snapshot
(:mod:`lkm.reproduction.docs`): block ids ``npps/<name>``."""

from __future__ import annotations

import pandas as pd

from lkm.papers.npps.selection import table2
from lkm.reproduction.docs import Block, Snapshot

#: Shin & Cho Table 2's runs; the large even/odd row (`make reproduce-npps-mnist-large`,
#: hours) joins when the snapshot has it.
TABLE2_RUNS = ("npps_table2", "npps_table2_mnist")
LARGE_RUN = "npps_mnist_even_odd"


def table2_block(snap: Snapshot) -> pd.DataFrame:
    """Shin & Cho Table 2 from the Table 2 runs: each cell ours (paper)."""
    cols = ["dataset", "patterns ALL", "patterns SELECTED", "SVs ALL", "SVs SELECTED", "speed-up ALL/SELECTED",
            "error ALL %", "error SELECTED %", "splits"]
    names = [*TABLE2_RUNS, *([LARGE_RUN] if (snap.root / LARGE_RUN / "spec.yaml").is_file() else [])]
    parts = [table2(snap.context(name)) for name in names]
    df = pd.concat(parts, ignore_index=True)
    return df[[c for c in cols if c in df.columns]]


#: The paper's own blocks (its claims blocks come from the framework).
DOC_BLOCKS: dict[str, Block] = {
    "table2": Block(TABLE2_RUNS, table2_block, "Shin & Cho Table 2, ours (paper)", (LARGE_RUN,)),
}
