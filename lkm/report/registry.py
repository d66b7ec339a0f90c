"""The output registry: every table and figure a spec can ask for, by name.

A builder is a function ``(ctx: ReportContext) -> list[Path]`` registered with
``@table("name")`` or ``@figure("name")``; ``outputs.tables`` / ``outputs.figures`` of a
spec list the names, and ``outputs.options[name]`` passes builder-specific settings.
Builders read stored records only (``ctx.records``, ``ctx.agg``, ``ctx.best``); the few
that draw a fitted model (decision boundaries) say so in their docstring.

The registry itself (names to builders, and the entry-point group whose packages
register the non-generic builders) is :mod:`lkm.spec.outputs`, which depends on nothing else
in lkm, so that spec validation can read it; this module re-exports it and adds what a
builder reads, :class:`ReportContext`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.engine.store import RunStore
from lkm.report.figures import save_figure
from lkm.report.tables import TABLE_FORMATS, write_table
from lkm.spec import Spec
from lkm.spec.outputs import (
    FIGURE_INPUTS,
    FIGURES,
    PLUGIN_GROUP,
    PLUGINS,
    TABLES,
    OutputBuilder,
    figure,
    load_plugins,
    table,
)


@dataclass
class ReportContext:
    """What a builder may read: the run's records, their aggregates, and where to write."""

    store: RunStore
    spec: Spec
    records: pd.DataFrame  # one row per task (ok and error), see RunStore.records_frame
    agg: pd.DataFrame  # mean/std over splits per (dataset, method, setting), see aggregation.aggregate
    best: pd.DataFrame  # the selected setting per dataset and method, see aggregation.select_best
    unavailable: dict[str, str] = field(default_factory=dict)
    table_formats: tuple[str, ...] = TABLE_FORMATS  # the files each table is written as

    @property
    def ok(self) -> pd.DataFrame:
        """Successful records only."""
        return self.records[self.records["status"] == "ok"]

    def ok_records(self, dataset: str, method: str) -> pd.DataFrame:
        """Successful records of one dataset (id) and method (name); empty if there are none."""
        ok = self.ok
        if ok.empty:
            return ok
        return ok[(ok["dataset"] == dataset) & (ok["method"] == method)]

    @property
    def tables_dir(self) -> Path:
        return self.store.root / "tables"

    @property
    def figures_dir(self) -> Path:
        return self.store.root / "figures"

    def options(self, name: str) -> dict[str, Any]:
        """``outputs.options[name]`` of the spec (empty if not given)."""
        return dict(self.spec.outputs.options.get(name, {}))

    def write_table(self, df: pd.DataFrame, name: str, caption: str, notes: list[str] | tuple[str, ...] = ()) -> list[Path]:
        return write_table(df, self.tables_dir / name, caption, notes, self.table_formats)

    def save_figure(self, fig: Any, name: str) -> list[Path]:
        return save_figure(fig, self.figures_dir / name, self.spec.outputs.formats)


__all__ = ["FIGURE_INPUTS", "FIGURES", "PLUGIN_GROUP", "PLUGINS", "TABLES", "OutputBuilder", "ReportContext", "figure",
           "load_plugins", "table"]
