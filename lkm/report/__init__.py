"""Tables and figures from stored records, without refitting anything.

:func:`build_report` aggregates a run's records (mean ± std over splits per setting),
selects the best setting per dataset and method (the paper's sigma*), and calls every
builder the spec's ``outputs`` names (see :mod:`lkm.report.registry`). The standard
builders live in :mod:`lkm.report.core`; paper-specific ones in :mod:`lkm.papers`.
"""

from __future__ import annotations

from pathlib import Path

from lkm.report import core
from lkm.report.core import aggregate, select_best, write_table
from lkm.report.registry import FIGURES, TABLES, ReportContext, figure, table
from lkm.spec import Spec
from lkm.store import RunStore


def load_builders() -> None:
    """Import every module that registers builders (idempotent)."""
    import lkm.papers  # noqa: F401  (paper-specific outputs)
    from lkm.report import boundary, invariance, lrr, lrr_uci, neighbors, npps, robustness, scaling  # noqa: F401


def build_report(store: RunStore, spec: Spec, task_ids: set[str] | None = None,
                 unavailable: dict[str, str] | None = None) -> list[Path]:
    """Write results, tables and figures of a run directory from its records.

    Without ``task_ids``/``unavailable`` (``lkm report``) they come from plan.json, which
    must exist and match spec.yaml (:meth:`RunStore.read_plan` raises otherwise): records
    of another spec version are never mixed in."""
    load_builders()
    if task_ids is None or unavailable is None:
        saved = store.read_plan()
        task_ids = set(saved.get("task_ids") or []) or None if task_ids is None else task_ids
        unavailable = saved.get("unavailable") or {} if unavailable is None else unavailable
    df = store.records_frame(task_ids)
    written: list[Path] = []
    if df.empty:
        return written
    written += store.write_results(df.drop(columns=[c for c in df.columns if c == "traceback"]))
    agg = aggregate(df, spec)
    if agg.empty and not spec.studies:
        return written
    from lkm.studies import study_outputs  # without accuracy records, only the study outputs apply

    study_tables, study_figures = study_outputs()
    ctx = ReportContext(store, spec, df, agg, select_best(agg, spec), unavailable)
    for name in spec.outputs.tables:
        if not agg.empty or name in study_tables:
            written += TABLES[name](ctx)
    if spec.paper.results and not agg.empty:
        written += ctx.write_table(core.paper_table(agg, ctx.best, spec), "paper",
                                   f"{spec.name}: the paper's numbers beside ours ({spec.paper.reference})")
    for name in spec.outputs.figures:
        if not agg.empty or name in study_figures:
            written += FIGURES[name](ctx)
    return written


__all__ = ["FIGURES", "TABLES", "ReportContext", "aggregate", "build_report", "figure", "select_best",
           "table", "write_table"]
