"""Tables and figures from stored records, without refitting anything.

:func:`build_report` aggregates a run's records (mean ± std over splits per setting),
selects the best setting per dataset and method (the paper's sigma*), and calls every
builder the spec's ``outputs`` names (see :mod:`lkm.report.registry`). The standard
builders live in :mod:`lkm.report.core` (numbers from :mod:`lkm.report.aggregation`, tables
written by :mod:`lkm.report.tables`, figures drawn with :mod:`lkm.report.figures`); the others
in the packages of the registry's entry-point group (:func:`lkm.report.registry.load_plugins`),
e.g. :mod:`lkm.papers.lpl`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.engine.store import RunStore
from lkm.errors import DatasetUnavailable
from lkm.report import core, figures
from lkm.report.aggregation import aggregate, edge_warnings, failure_warnings, select_best
from lkm.report.registry import (
    FIGURE_INPUTS,
    FIGURES,
    TABLES,
    ReportContext,
    figure,
    load_plugins,
    table,
)
from lkm.report.tables import PAGE_TABLE_FORMATS, TABLE_FORMATS, write_table
from lkm.spec import Spec


class ReportResult(list[Path]):
    """The files of a report (written now, or figures found current and kept) and what a
    reader should be told: ``warnings`` (one line each: a selected value at the edge of
    its grid), ``failures`` (one line per dataset and method with failed fits) and
    ``reused`` (figures not redrawn because their inputs did not change)."""

    def __init__(self, files: Iterable[Path] = (), warnings: Iterable[str] = (), reused: Iterable[Path] = (),
                 failures: Iterable[str] = ()) -> None:
        super().__init__(files)
        self.warnings: list[str] = list(warnings)
        self.failures: list[str] = list(failures)
        self.reused: list[Path] = list(reused)


def build_report(store: RunStore, spec: Spec, task_ids: set[str] | None = None,
                 unavailable: dict[str, str] | None = None, figures: bool = True) -> ReportResult:
    """Write results, tables and figures of a run directory from its records.

    Without ``task_ids``/``unavailable`` (``lkm report``) they come from plan.json, which
    must exist and match spec.yaml (:meth:`RunStore.read_plan` raises otherwise): records
    of another spec version are never mixed in. A figure whose inputs (data, spec, code)
    are those it was last drawn from is kept, not redrawn (:class:`FigureInputs`);
    ``figures=False`` writes only what the report page counts verdicts from: the tables
    as Markdown and JSON (:data:`lkm.report.tables.PAGE_TABLE_FORMATS`), no figures and
    no results.csv/parquet."""
    load_plugins()
    if task_ids is None or unavailable is None:
        saved = store.read_plan()
        task_ids = set(saved.get("task_ids") or []) or None if task_ids is None else task_ids
        unavailable = saved.get("unavailable") or {} if unavailable is None else unavailable
    df = store.records_frame(task_ids)
    written = ReportResult()
    if df.empty:
        return written
    if figures:
        written += store.write_results(df.drop(columns=[c for c in df.columns if c in ("traceback", "errors")]))
    formats = TABLE_FORMATS if figures else PAGE_TABLE_FORMATS
    agg = aggregate(df, spec)
    written.failures += failure_warnings(df)
    if agg.empty and not spec.studies:
        if written.failures and "summary" in spec.outputs.tables:  # every fit failed: say so in the table
            written += TABLES["summary"](ReportContext(store, spec, df, agg, agg, unavailable, formats))
        return written
    from lkm.studies import study_outputs  # without accuracy records, only the study outputs apply

    study_tables, study_figures = study_outputs()
    ctx = ReportContext(store, spec, df, agg, select_best(agg, spec), unavailable, formats)
    written.warnings += edge_warnings(ctx.best, spec)
    for name in spec.outputs.tables:
        if not agg.empty or name in study_tables:
            written += TABLES[name](ctx)
    if spec.paper.results and not agg.empty:
        written += ctx.write_table(core.paper_table(agg, ctx.best, spec), "paper",
                                   f"{spec.name}: the paper's numbers beside ours ({spec.paper.reference})")
    if not figures:  # tables only (what the docs count flagged rows from)
        return written
    figure_names = [name for name in spec.outputs.figures if not agg.empty or name in study_figures]
    inputs = FigureInputs(ctx)
    for name in figure_names:
        try:
            files, reused = inputs.build(name)
        except DatasetUnavailable as exc:  # a figure of the data itself (digits): the records alone cannot draw it
            written.warnings.append(f"figure {name!r} not drawn: it shows the data, and {exc}")
            continue
        written += files
        written.reused += files if reused else []
    inputs.save()
    return written


class FigureInputs:
    """What each figure of a run folder was drawn from, as a digest kept in
    ``figures/.inputs.json`` (``{figure name: {digest, files}}``): a figure whose digest
    is unchanged and whose files all exist is not drawn again."""

    FILE = ".inputs.json"

    def __init__(self, ctx: ReportContext) -> None:
        self.ctx = ctx
        self.path = ctx.figures_dir / self.FILE
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            saved = {}
        self.saved: dict[str, Any] = saved if isinstance(saved, dict) else {}
        self.state: dict[str, Any] = {}
        self._records_digest: str | None = None

    def digest(self, name: str) -> str:
        """sha256 of what figure ``name`` is drawn from: its registered inputs (default: the
        run's records, aggregates and selection), the spec, the formats, and the source of
        the module that draws it and of the generic figure code (:mod:`lkm.report.figures`), and the
        matplotlib version."""
        from importlib.metadata import version

        ctx, builder = self.ctx, FIGURES[name]
        h = hashlib.sha256()
        for part in (name, version("matplotlib"), json.dumps(ctx.spec.model_dump(mode="json"), sort_keys=True, default=str),
                     json.dumps(sorted(ctx.unavailable.items()))):
            h.update(part.encode() + b"\0")
        for module in sorted({inspect.getsourcefile(builder) or "", inspect.getsourcefile(figures) or ""}):
            h.update(Path(module).read_bytes() if module else b"")  # sorted: a set's order changes per process
        data = FIGURE_INPUTS[name](ctx) if name in FIGURE_INPUTS else None
        if data is None:
            data = [self.records_digest(), ctx.agg, ctx.best]
        for part in data if isinstance(data, list) else [data]:
            h.update(_frame_bytes(part) if isinstance(part, pd.DataFrame) else str(part).encode())
            h.update(b"\0")
        return h.hexdigest()

    def records_digest(self) -> str:
        if self._records_digest is None:
            records = self.ctx.records.drop(columns=[c for c in ("finished_at", "traceback") if c in self.ctx.records])
            self._records_digest = hashlib.sha256(_frame_bytes(records)).hexdigest()
        return self._records_digest

    def build(self, name: str) -> tuple[list[Path], bool]:
        """Figure ``name``'s files and whether they were kept (inputs unchanged) rather than drawn."""
        digest = self.digest(name)
        saved = self.saved.get(name)
        root = self.ctx.store.root
        if (isinstance(saved, dict) and saved.get("digest") == digest and isinstance(saved.get("files"), list)
                and all(isinstance(f, str) and (root / f).is_file() for f in saved["files"])):
            self.state[name] = saved
            return [root / f for f in saved["files"]], True
        files = FIGURES[name](self.ctx)
        self.state[name] = {"digest": digest, "files": [Path(f).relative_to(root).as_posix() for f in files]}
        return files, False

    def save(self) -> None:
        """Write the digests of the figures this report built or kept."""
        from lkm.files import atomic_write

        if self.state or self.path.exists():
            self.ctx.figures_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps(self.state, indent=1, sort_keys=True) + "\n")


def _frame_bytes(df: pd.DataFrame) -> bytes:
    return df.to_json(orient="split", default_handler=str, double_precision=15).encode()


__all__ = ["FIGURES", "TABLES", "ReportContext", "ReportResult", "aggregate", "build_report", "figure", "load_plugins",
           "select_best", "table", "write_table"]
