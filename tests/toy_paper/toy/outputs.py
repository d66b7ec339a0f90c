"""The toy paper's own table: LPL's accuracy beside the number the paper prints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lkm.report.formatting import RATE
from lkm.report.registry import ReportContext, table
from lkm.reproduction.paper import paper_values


@table("toy_beside_paper")
def toy_beside_paper(ctx: ReportContext) -> list[Path]:
    printed = paper_values(__package__)["lpl_moons"]
    best = ctx.best[ctx.best["method"] == "LPL"]
    rows = [{"dataset": r["dataset"], "ours": f"{RATE * r['accuracy']:.2f}", "paper": f"{RATE * printed['value']:.2f}"}
            for _, r in best.iterrows()]
    return ctx.write_table(pd.DataFrame(rows), "toy_beside_paper", f"LPL accuracy %, ours (paper, {printed['where']})")
