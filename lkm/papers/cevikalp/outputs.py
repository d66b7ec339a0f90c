"""Cevikalp, Larlus, Douze, Jurie (local subspace classifiers), Sec. IV: the outputs of
lkm/papers/cevikalp/specs/cevikalp_usps.yaml (Table I) and lkm/papers/cevikalp/specs/cevikalp_segmentation.yaml (Table II).

- ``tables/cevikalp_table``: the paper's table row by row — the paper's number, ours at
  the paper's K and q (method ``<name>``), ours with K, q and C chosen by CV on the
  training part (method ``<name>-cv``, with the most chosen setting). USPS (one fixed
  split): error rates and error counts; image segmentation: recognition rate ± standard
  deviation over the folds. ``outputs.options.cevikalp_table: {table: usps|segmentation}``
  picks the rows of ``paper_values.yaml``.
- ``figures/cevikalp_k_sweep``: test error against K for the subspace classifiers with
  a swept ``n_neighbors`` (``options.cevikalp_k_sweep.methods``), mean ± std over the
  splits; settings a method refuses (LDCV needs C(K − 1) < d) are marked "n/a" on the
  axis, and the nearest-neighbour error is drawn as a reference line.
- ``figures/cevikalp_digits``: test digits that method ``wrong`` (NN, Euclidean)
  misclassifies and method ``right`` (NN with the tangent distance) gets right, with
  both predictions (``options.cevikalp_digits: {wrong, right, count}``), read from the
  records' ``errors`` lists and the dataset's pixels.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.engine.store import NOT_APPLICABLE
from lkm.report.figures import SMALL_PT, load_pyplot, method_colors
from lkm.report.formatting import RATE, ci_column, records_interval
from lkm.report.registry import ReportContext, figure, table
from lkm.reproduction.paper import paper_values
from lkm.reproduction.runs import most_chosen_setting

#: Suffix of the tuned variant of a row's method.
TUNED = "-cv"


def _rate(records: pd.DataFrame) -> tuple[float, float]:
    acc = records["accuracy"].astype(float)
    return float(acc.mean()), float(acc.std(ddof=1)) if len(acc) > 1 else math.nan


def _error_cell(records: pd.DataFrame) -> str:
    if records.empty:
        return "–"
    wrong = int(round(float(((1 - records["accuracy"]) * records["n_test"]).sum())))
    return f"{RATE * (1 - _rate(records)[0]):.2f} ({wrong}/{int(records['n_test'].sum())})"


def _rate_cell(records: pd.DataFrame) -> str:
    if records.empty:
        return "–"
    mean, std = _rate(records)
    return f"{RATE * mean:.2f}" + ("" if math.isnan(std) else f" ± {RATE * std:.2f}")


def paper_table(ctx: ReportContext) -> pd.DataFrame:
    """The rows of Table I or II (``options.cevikalp_table.table``) for every dataset of the run."""
    which = ctx.options("cevikalp_table").get("table", "usps")
    values = paper_values(__package__)[which]
    rows = []
    names = {m.name for m in ctx.spec.methods}
    for ds in [d.id for d in ctx.spec.datasets]:
        for entry in values["rows"]:
            if not {entry["method"], entry["method"] + TUNED} & names:
                continue  # a reading's variant run holds some methods only
            stated = ctx.ok_records(ds, entry["method"])
            tuned = ctx.ok_records(ds, entry["method"] + TUNED)
            error = which == "usps"
            if error:
                paper = "NA" if entry["error"] is None else f"{entry['error']:.2f}"
                stated_col, tuned_col = "ours, paper's K, q: error % (errors)", "ours, tuned: error % (errors)"
                row = {"paper's error %": paper, stated_col: _error_cell(stated)}
            else:
                stated_col, tuned_col = "ours, paper's K, q: rate %", "ours, tuned: rate %"
                row = {"paper's rate %": f"{entry['rate']:.2f} ± {entry['std']:.2f}", stated_col: _rate_cell(stated)}
            row[ci_column(stated_col)] = records_interval(stated, error=error)
            row[tuned_col] = _error_cell(tuned) if error else _rate_cell(tuned)
            row[ci_column(tuned_col)] = records_interval(tuned, error=error)
            rows.append({"dataset": ds, "the paper's row": entry["row"], "method": entry["method"], **row,
                         "tuned setting": most_chosen_setting(tuned, {"n_neighbors": "K"}) if not tuned.empty else "–"})
    return pd.DataFrame(rows)


@table("cevikalp_table")
def _cevikalp_table(ctx: ReportContext) -> list[Path]:
    df = paper_table(ctx)
    if df.empty:
        return []
    which = ctx.options("cevikalp_table").get("table", "usps")
    what = ("error rate % on the fixed split (misclassified / test digits)" if which == "usps"
            else "recognition rate % ± std over the folds")
    return ctx.write_table(
        df, "cevikalp_table",
        f"{ctx.spec.name}: {paper_values(__package__)[which]['where']} of Cevikalp et al. beside ours, {what}; "
        f"'tuned' chose K, q and C by CV on the training part only ({ctx.spec.describe_protocol()})",
    )


def _sweep_curve(ok: pd.DataFrame, ds: str, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = ok[(ok["dataset"] == ds) & (ok["method"] == method)]
    if rows.empty:
        return np.array([]), np.array([]), np.array([])
    k = rows["params"].map(lambda p: int(p["n_neighbors"]))
    by = rows.assign(K=k).groupby("K")["accuracy"]
    ks = np.sort(np.array(list(by.groups)))
    err = RATE * (1 - by.mean().sort_index().to_numpy())
    std = RATE * by.std(ddof=1).fillna(0).sort_index().to_numpy()
    return ks, err, std


def _refused(ctx: ReportContext, ds: str, method: str) -> list[int]:
    rec = ctx.records
    rows = rec[(rec["dataset"] == ds) & (rec["method"] == method) & (rec["status"] == NOT_APPLICABLE)]
    return sorted({int(p["n_neighbors"]) for p in rows["params"] if "n_neighbors" in p})


@figure("cevikalp_k_sweep")
def _cevikalp_k_sweep(ctx: ReportContext) -> list[Path]:
    methods = [m for m in ctx.options("cevikalp_k_sweep").get("methods", [])
               if m in {s.name for s in ctx.spec.methods}]
    reference = ctx.options("cevikalp_k_sweep").get("reference", "NN")
    datasets = [d.id for d in ctx.spec.datasets]
    if not methods or ctx.ok.empty:
        return []
    plt = load_pyplot()
    fig, axes = plt.subplots(1, len(datasets), figsize=(6.2 * len(datasets), 4.0), squeeze=False)
    colors = method_colors(ctx.spec)
    for ax, ds in zip(axes.flat, datasets, strict=True):
        for i, m in enumerate(methods):
            ks, err, std = _sweep_curve(ctx.ok, ds, m)
            style = {"color": colors[m], "marker": "os^D"[i % 4], "ms": 4, "lw": 1.5,
                     "ls": "-" if m.startswith("N") and not m.startswith("NN") else "--"}
            if ks.size:
                ax.plot(ks, err, label=m, **style)
                if np.any(std > 0):
                    ax.fill_between(ks, err - std, err + std, color=style["color"], alpha=0.12, lw=0)
            refused = _refused(ctx, ds, m)
            if refused:
                ax.plot(refused, [0.0] * len(refused), ls="none", marker="x", color=style["color"], ms=7,
                        clip_on=False, transform=ax.get_xaxis_transform(),
                        label=f"{m}: n/a at K = {', '.join(map(str, refused))}")
        ref = ctx.ok_records(ds, reference)
        if not ref.empty:
            ax.axhline(RATE * (1 - ref["accuracy"].mean()), color="0.35", lw=1, ls=":", label=f"{reference}")
        ax.set_xscale("log")
        swept = ctx.records[ctx.records["method"].isin(methods)]["params"]
        ticks = sorted({int(p["n_neighbors"]) for p in swept if isinstance(p, dict) and "n_neighbors" in p})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("K (nearest neighbours per class)")
        ax.set_ylabel("test error (%)")
        ax.set_title(ds)
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.suptitle(f"{ctx.spec.name}: error against K — the linear methods are bounded by d, the kernel ones are not")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return ctx.save_figure(fig, "cevikalp_k_sweep")


def corrected_digits(ctx: ReportContext, wrong: str, right: str) -> tuple[str, list[tuple[int, Any]]]:
    """``(dataset, [(row, prediction of wrong), ...])``: the test rows
    ``wrong`` misclassifies and ``right`` does not, on the first dataset and split both ran."""
    for ds in [d.id for d in ctx.spec.datasets]:
        a, b = ctx.ok_records(ds, wrong), ctx.ok_records(ds, right)
        if a.empty or b.empty or "errors" not in a.columns:
            continue
        split = sorted(set(a["split"]) & set(b["split"]))
        if not split:
            continue
        ea = a[a["split"] == split[0]]["errors"].iloc[0]
        eb = b[b["split"] == split[0]]["errors"].iloc[0]
        if not isinstance(ea, list) or not isinstance(eb, list):
            continue
        right_wrong = {int(r): p for r, p in eb}
        return ds, [(int(r), p) for r, p in sorted(ea, key=lambda e: int(e[0])) if int(r) not in right_wrong]
    return "", []


@figure("cevikalp_digits")
def _cevikalp_digits(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("cevikalp_digits")
    wrong, right, count = opts.get("wrong", "NN"), opts.get("right", "NN-TD"), int(opts.get("count", 12))
    ds, rows = corrected_digits(ctx, wrong, right)
    if not rows:
        return []
    entry = next(d for d in ctx.spec.datasets if d.id == ds)
    data = entry.load()
    side = math.isqrt(data.X.shape[1])
    if side * side != data.X.shape[1]:
        return []
    shown = rows[:count]
    plt = load_pyplot()
    cols = min(6, len(shown))
    n_rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(1.5 * cols, 2.05 * n_rows + 0.6), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, (row, pred_wrong) in zip(axes.flat, shown, strict=False):
        ax.imshow(np.asarray(data.X[row], dtype=float).reshape(side, side), cmap="gray_r", interpolation="nearest")
        ax.set_title(f"true {data.y[row]}\n{wrong}: {pred_wrong}", fontsize=SMALL_PT)  # under a thumbnail
    fig.suptitle(f"{ds}: test digits {wrong} gets wrong and {right} right ({len(shown)} of {len(rows)})")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return ctx.save_figure(fig, "cevikalp_digits")
