"""The output registry: every table and figure a spec can ask for, by name.

A builder is a function ``(ctx: ReportContext) -> list[Path]`` registered with
``@table("name")`` or ``@figure("name")``; ``outputs.tables`` / ``outputs.figures`` of a
spec list the names, and ``outputs.options[name]`` passes builder-specific settings.
Builders read stored records only (``ctx.records``, ``ctx.agg``, ``ctx.best``); the few
that draw a fitted model (decision boundaries) say so in their docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.spec import Spec
from lkm.store import RunStore

OutputBuilder = Callable[["ReportContext"], list[Path]]

#: Table builders by the name a spec's ``outputs.tables`` uses.
TABLES: dict[str, OutputBuilder] = {}
#: Figure builders by the name a spec's ``outputs.figures`` uses.
FIGURES: dict[str, OutputBuilder] = {}
#: What a figure is drawn from, for figures that declare it (``@figure(name, inputs=...)``):
#: ``inputs(ctx)`` returns the data frames (or a list of frames and strings) the figure
#: reads; a report redraws the figure only when they change. Without it: all the records.
FIGURE_INPUTS: dict[str, Callable[[ReportContext], Any]] = {}


def table(name: str) -> Callable[[OutputBuilder], OutputBuilder]:
    """Register a table builder under ``name``."""

    def register(fn: OutputBuilder) -> OutputBuilder:
        TABLES[name] = fn
        return fn

    return register


def figure(name: str, inputs: Callable[[ReportContext], Any] | None = None) -> Callable[[OutputBuilder], OutputBuilder]:
    """Register a figure builder under ``name``; ``inputs`` (see :data:`FIGURE_INPUTS`)
    narrows what makes it stale."""

    def register(fn: OutputBuilder) -> OutputBuilder:
        FIGURES[name] = fn
        if inputs is not None:
            FIGURE_INPUTS[name] = inputs
        return fn

    return register


@dataclass
class ReportContext:
    """What a builder may read: the run's records, their aggregates, and where to write."""

    store: RunStore
    spec: Spec
    records: pd.DataFrame  # one row per task (ok and error), see RunStore.records_frame
    agg: pd.DataFrame  # mean/std over splits per (dataset, method, setting), see core.aggregate
    best: pd.DataFrame  # the selected setting per dataset and method, see core.select_best
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> pd.DataFrame:
        """Successful records only."""
        return self.records[self.records["status"] == "ok"]

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
        from lkm.report.core import write_table

        return write_table(df, self.tables_dir / name, caption, notes)

    def save_figure(self, fig: Any, name: str) -> list[Path]:
        from lkm.report.core import _save

        return _save(fig, self.figures_dir / name, self.spec.outputs.formats)
