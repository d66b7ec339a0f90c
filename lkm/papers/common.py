"""What every paper module shares: its experiment list entries, loading finished run
folders, and the verdict words of a claims table."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.report.core import aggregate, select_best
from lkm.report.registry import ReportContext
from lkm.spec import Spec, load_spec
from lkm.store import RunStore


@dataclass(frozen=True)
class Experiment:
    """One spec of a reproduction; ``jobs`` caps its parallel workers.

    Timing experiments run with the same 2 workers as the others: each joblib worker
    gets one BLAS thread, which keeps timings stable on a shared machine (in one process
    with two BLAS threads, small solves slow down many-fold when the other core is busy).
    """

    spec: str
    jobs: int | None = None


@dataclass
class Run:
    """A finished run folder: its spec, records and aggregates."""

    name: str
    spec: Spec
    records: pd.DataFrame
    agg: pd.DataFrame
    best: pd.DataFrame
    store: RunStore

    def best_rate(self, dataset: str, method: str, others: dict[str, Any] | None = None) -> float:
        rows = self.best[(self.best["dataset"] == dataset) & (self.best["method"] == method)]
        if others:
            rows = rows[rows["params"].map(lambda p: all(str(p.get(k)) == str(v) for k, v in others.items()))]
        return float(rows["accuracy"].iloc[0]) if not rows.empty else math.nan

    def context(self) -> ReportContext:
        """The report context of this run, for reusing an output builder's computations."""
        return ReportContext(self.store, self.spec, self.records, self.agg, self.best, {})


def load_run(root: Path, name: str, smoke: bool = False) -> Run | None:
    """The run folder ``root/name`` (``name-smoke`` with ``smoke``), or None if absent."""
    path = root / (f"{name}-smoke" if smoke else name)
    if not (path / "spec.yaml").is_file():
        return None
    spec = load_spec(path / "spec.yaml")
    store = RunStore(path)
    records = store.records_frame()
    if records.empty:
        return None
    agg = aggregate(records, spec)
    best = select_best(agg, spec) if not agg.empty else agg
    return Run(path.name, spec, records, agg, best, store)


def verdict(ok: bool | str | None) -> str:
    """None: not evaluated; True / False; or "partly" for a claim with two parts of which one holds."""
    if isinstance(ok, str):
        return ok
    return "n/a" if ok is None else ("holds" if ok else "does not hold")

