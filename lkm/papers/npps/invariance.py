"""Outputs of the ``knn_invariance`` study (Shin & Cho, NPPS, Sec. 3), from study records.

- ``tables/knn_invariance``: per dataset and kernel setting, the % of patterns whose k
  nearest neighbours are the same in input and feature space, for k = 1..k_max
  (tie-tolerant rule, see :mod:`lkm.studies.invariance`), the lowest % under the strict
  lower-index tie rule, and the largest % of patterns whose k-th neighbour is tied in
  input space. ``tables/knn_invariance_rows`` has every number of every row (long form).
- ``figures/knn_invariance``: % invariant against k, one line per kernel setting, one
  panel per dataset; dotted lines (only where they differ) are the strict rule.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE, format_params
from lkm.report.registry import ReportContext, figure, table

STUDY = "knn_invariance"


def study_rows(ctx: ReportContext, study_key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows, failures) of every study record of ``study_key``: one row per result row, with
    ``dataset``, ``study`` (the spec's name), ``line`` (name and swept parameters) and
    ``_order`` (spec order) added; failures hold dataset, study, params and the error."""
    rec = ctx.records
    if rec.empty or "kind" not in rec.columns:
        return pd.DataFrame(), pd.DataFrame()
    rec = rec[(rec["kind"] == "study") & (rec["study_key"] == study_key)]
    specs = {s.name: (i, s) for i, s in enumerate(ctx.spec.studies) if s.study == study_key}
    ds_order = {d.id: i for i, d in enumerate(ctx.spec.datasets)}
    grids = {name: [json.dumps(p, sort_keys=True, default=str) for p in ctx.spec.study_grid(s)]
             for name, (_, s) in specs.items()}
    out, failed = [], []
    r: Any  # a record (pandas-stubs types its fields as any scalar)
    for r in rec.itertuples():
        if r.study not in specs:  # a study no longer in the spec
            continue
        i, sspec = specs[r.study]
        key = json.dumps(r.params, sort_keys=True, default=str)
        order = (ds_order.get(r.dataset, 0), i, grids[r.study].index(key) if key in grids[r.study] else 0)
        line = r.study if not sspec.sweep else f"{r.study} ({format_params(r.params, list(sspec.sweep))})"
        if r.status != "ok":
            failed.append({"dataset": r.dataset, "study": r.study, "line": line, "error": getattr(r, "error", ""),
                           "_order": order})
            continue
        for row in r.rows or []:
            out.append({"dataset": r.dataset, "study": r.study, "line": line, "_order": order, **row})
    rows = pd.DataFrame(out)
    if not rows.empty:
        rows = rows.sort_values(["_order", "k"], kind="stable").reset_index(drop=True)
    return rows, pd.DataFrame(failed)


def _pct(v: float) -> float:
    return round(RATE * v, 2) if v is not None and not (isinstance(v, float) and math.isnan(v)) else float("nan")


def invariance_table(rows: pd.DataFrame, failed: pd.DataFrame, unavailable: dict[str, str]) -> pd.DataFrame:
    """Wide table: one line per dataset and setting, one column per k."""
    out: list[dict[str, Any]] = []
    if not rows.empty:
        for (_, _line), g in rows.groupby(["_order", "line"], sort=False):
            first = g.iloc[0]
            row: dict[str, Any] = {"dataset": first["dataset"], "study": first["line"], "setting": first["setting"],
                                   "patterns": int(first["n_patterns"])}
            for k, fraction in zip(g["k"], g["fraction_same"], strict=True):
                row[f"k={k}"] = _pct(fraction)
            row["strict min %"] = _pct(g["fraction_same_strict"].min())
            row["tied in input, max %"] = _pct(g["fraction_tied_input"].max())
            row["tied in feature, max %"] = _pct(g["fraction_tied_feature"].max())
            out.append(row)
    for r in failed.itertuples() if not failed.empty else []:
        out.append({"dataset": r.dataset, "study": r.line, "setting": f"failed: {r.error}"})
    for ds in unavailable:
        out.append({"dataset": ds, "study": "–", "setting": "data unavailable"})
    return pd.DataFrame(out)


@table(STUDY)
def _invariance_table(ctx: ReportContext) -> list[Path]:
    rows, failed = study_rows(ctx, STUDY)
    if rows.empty and failed.empty:
        return []
    caption = (f"{ctx.spec.name}: % of patterns whose k nearest neighbours are the same in input and feature "
               "space (ties within round-off tolerated; 'strict min %': ties broken by lower index, lowest over k)")
    written = ctx.write_table(invariance_table(rows, failed, ctx.unavailable), STUDY, caption)
    if not rows.empty:
        long = rows.drop(columns=["_order"])
        written += ctx.write_table(long, f"{STUDY}_rows", f"{ctx.spec.name}: kNN invariance, every row")
    return written


@figure(STUDY)
def _invariance_figure(ctx: ReportContext) -> list[Path]:
    rows, _ = study_rows(ctx, STUDY)
    if rows.empty:
        return []
    plt = load_pyplot()
    datasets = list(dict.fromkeys(rows["dataset"]))
    ncol = min(3, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.3 * nrow), squeeze=False)
    lo = 100.0
    for ax, ds in zip(axes.flat, datasets, strict=False):
        sub = rows[rows["dataset"] == ds]
        for line, g in sub.groupby("line", sort=False):
            k = g["k"].to_numpy()
            y = RATE * g["fraction_same"].to_numpy(float)
            ys = RATE * g["fraction_same_strict"].to_numpy(float)
            lo = min(lo, float(np.nanmin(y)), float(np.nanmin(ys)))
            (ln,) = ax.plot(k, y, marker="o", ms=3, lw=1.4, label=line)
            if not np.allclose(y, ys):
                ax.plot(k, ys, ls=":", lw=1.2, color=ln.get_color())
        ax.set_title(f"{ds} (n = {int(sub['n_patterns'].iloc[0])})")
        ax.set_xlabel("k")
        ax.set_ylabel("patterns with the same kNN (%)")
        ax.set_xticks(sorted(set(sub["k"])))
    for ax in axes.flat[: len(datasets)]:
        ax.set_ylim(max(0.0, lo - 5), 101.5)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), frameon=False)
    fig.suptitle(f"{ctx.spec.name}: kNN invariance, input vs feature space (ties within round-off tolerated; "
                 "dotted: ties broken by index; lines at 100 % overlap)")
    fig.tight_layout(rect=(0, 0.04 + 0.025 * math.ceil(len(labels) / 4), 1, 0.95))
    return ctx.save_figure(fig, STUDY)
