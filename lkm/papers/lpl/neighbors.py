"""Exact against approximate neighbours (annoy, hnswlib) in LPL (Tsuji et al., Sec. 7).

Sec. 7: "in LPL, we do not necessary need the exact k nearest neighbors and suboptimal
k nearest neighbors are acceptable". These outputs compare every LPL setting of a run
with the exact-neighbour LPL of the same dataset, sigma and k, from stored records only:

- ``tables/neighbors``: per dataset and setting (neighbors, n_trees, search_k, ef), the mean
  over splits of accuracy, its difference to exact neighbours (paired by split), the
  measured neighbour recall (``info.neighbor_recall``, needs ``measure_recall: true``
  for annoy and hnswlib), the neighbour query seconds (``info.neighbor_seconds``, only from calls
  that actually ran the query), the ratio of that to the exact query, and the predict
  and fit seconds (an annoy fit builds the forest, an hnswlib fit the graph).
- ``figures/neighbors``: accuracy difference, recall and query-time ratio against
  annoy's n_trees, one column of panels per dataset, one line per search_k; hnswlib's
  settings (no n_trees) as one horizontal line per ef.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE
from lkm.report.registry import ReportContext, figure, table

#: Parameters that identify the neighbour search; the others (sigma, k, ...) identify
#: the model, and an approximate setting is compared with the exact one sharing them.
SEARCH_PARAMS = ("neighbors", "n_trees", "search_k", "ef", "random_state", "measure_recall")


def _info(rec: Any, key: str) -> Any:
    return rec.get(key) if isinstance(rec, dict) else None


def neighbor_frame(records: pd.DataFrame) -> pd.DataFrame:
    """Successful LPL records (those whose ``info`` has a neighbour query time) with the
    columns the neighbour outputs need: backend, model key, query time, recall."""
    ok = records[records["status"] == "ok"] if "status" in records else records
    if ok.empty or "info" not in ok:
        return pd.DataFrame()
    ok = ok[ok["info"].map(lambda i: isinstance(i, dict) and "neighbor_seconds" in i)].copy()
    if ok.empty:
        return ok
    ok["backend"] = ok["params"].map(lambda p: p.get("neighbors", "exact"))
    ok["model_key"] = ok["params"].map(
        lambda p: json.dumps({k: v for k, v in p.items() if k not in SEARCH_PARAMS}, sort_keys=True, default=str))
    ok["setting"] = ok["params"].map(lambda p: json.dumps(p, sort_keys=True, default=str))
    cached = ok["info"].map(lambda i: bool(_info(i, "neighbor_cached")))
    ok["query_seconds"] = ok["info"].map(lambda i: _info(i, "neighbor_seconds")).astype(float).where(~cached)
    ok["recall"] = ok["info"].map(lambda i: _info(i, "neighbor_recall")).astype(float)
    recall_s = ok["info"].map(lambda i: _info(i, "recall_seconds") or 0.0).astype(float)
    ok["predict_net_seconds"] = ok["predict_seconds"] - recall_s  # without the diagnostic exact query
    return ok


def neighbor_summary(records: pd.DataFrame, method_order: list[str] | None = None,
                     dataset_order: list[str] | None = None) -> pd.DataFrame:
    """One numeric row per (dataset, method, setting); see the module docstring.

    Columns: dataset, method, neighbors, n_trees, search_k, ef, sigma, k, splits,
    accuracy, diff (approximate − exact, percentage points, mean of per-split
    differences), diff_std (their std over splits), recall, query_seconds, query_ratio,
    predict_seconds, fit_seconds. n_trees and search_k are None except for annoy, ef
    except for hnswlib.
    """
    df = neighbor_frame(records)
    if df.empty:
        return pd.DataFrame()
    exact = df[df["backend"] == "exact"]
    # exact accuracy and query time per (dataset, model key, split); first exact method wins
    ref_acc = exact.drop_duplicates(["dataset", "model_key", "split"]).set_index(["dataset", "model_key", "split"])["accuracy"]
    ref_query = exact.groupby(["dataset", "model_key"], sort=False)["query_seconds"].mean()
    rows = []
    for (ds, method, setting), g in df.groupby(["dataset", "method", "setting"], sort=False):
        p = json.loads(str(setting))  # a JSON text (the groupby key types it Hashable)
        mk = g["model_key"].iloc[0]
        keys = list(zip([ds] * len(g), [mk] * len(g), g["split"], strict=True))
        ref = ref_acc.reindex(pd.MultiIndex.from_tuples(keys)).to_numpy(float)
        diff = RATE * (g["accuracy"].to_numpy(float) - ref)
        diff = diff[~np.isnan(diff)]
        backend = p.get("neighbors", "exact")
        q = g["query_seconds"].mean()
        q_ref = ref_query.get((ds, mk), np.nan)
        rows.append({
            "dataset": ds, "method": method, "neighbors": p.get("neighbors", "exact"),
            "n_trees": p.get("n_trees", 10) if backend == "annoy" else None,
            "search_k": p.get("search_k", -1) if backend == "annoy" else None,
            "ef": p.get("ef", 50) if backend == "hnswlib" else None,
            "sigma": p.get("sigma", 1.0), "k": p.get("k", "auto"), "splits": len(g),
            "accuracy": RATE * g["accuracy"].mean(),
            "diff": float(diff.mean()) if diff.size else np.nan,
            "diff_std": float(np.std(diff, ddof=1)) if diff.size > 1 else np.nan,
            "recall": g["recall"].mean(),
            "query_seconds": q,
            "query_ratio": q / q_ref if q_ref and not math.isnan(q_ref) else np.nan,
            "predict_seconds": g["predict_net_seconds"].mean(),
            "fit_seconds": g["fit_seconds"].mean(),
        })
    out = pd.DataFrame(rows)
    order = {m: i for i, m in enumerate(method_order or [])}
    ds_order = {d: i for i, d in enumerate(dict.fromkeys([*(dataset_order or []), *df["dataset"]]))}
    out["_ds"] = out["dataset"].map(ds_order)
    out["_m"] = out["method"].map(lambda m: order.get(m, len(order)))
    out["_exact"] = out["neighbors"] != "exact"
    out = out.sort_values(["_ds", "_exact", "_m", "n_trees", "search_k", "ef"], na_position="first", kind="stable")
    return out.drop(columns=["_ds", "_m", "_exact"]).reset_index(drop=True)


def neighbors_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The printed form of :func:`neighbor_summary`."""

    def num(v: Any, fmt: str) -> str:
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    def opt(v: Any) -> str:
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else str(int(v))

    return pd.DataFrame({
        "dataset": summary["dataset"], "method": summary["method"], "neighbors": summary["neighbors"],
        "n_trees": summary["n_trees"].map(opt), "search_k": summary["search_k"].map(opt),
        "ef": summary["ef"].map(opt),
        "sigma": summary["sigma"].map(lambda v: num(v, ".4g")),
        "accuracy %": summary["accuracy"].map(lambda v: num(v, ".2f")),
        "Δ vs exact (pts)": [num(d, "+.2f") + ("" if math.isnan(s) else f" ± {s:.2f}")
                             for d, s in zip(summary["diff"], summary["diff_std"], strict=True)],
        "recall": summary["recall"].map(lambda v: num(v, ".3f")),
        "query s": summary["query_seconds"].map(lambda v: num(v, ".4f")),
        "query / exact": summary["query_ratio"].map(lambda v: num(v, ".3f")),
        "predict s": summary["predict_seconds"].map(lambda v: num(v, ".4f")),
        "fit s": summary["fit_seconds"].map(lambda v: num(v, ".4f")),
        "splits": summary["splits"],
    })


def neighbors_figure(summary: pd.DataFrame, title: str, base: Path, formats: Sequence[str]) -> list[Path]:
    """Accuracy difference, recall and query-time ratio against n_trees (log axis), one
    column per dataset, one line per search_k (and per model setting when several);
    each hnswlib setting a horizontal line, labelled with its ef."""
    plt = load_pyplot()
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    approx = summary[summary["neighbors"] == "annoy"]
    graphs = summary[summary["neighbors"] == "hnswlib"]
    datasets = list(dict.fromkeys(summary["dataset"]))
    rows = [("diff", "accuracy − exact (pts)"), ("recall", "neighbour recall"), ("query_ratio", "query time / exact")]
    fig, axes = plt.subplots(len(rows), len(datasets), figsize=(4.4 * len(datasets), 2.6 * len(rows)),
                             sharex=True, squeeze=False)
    search_ks = sorted({int(v) for v in approx["search_k"].dropna()}, key=lambda v: (v != -1, v))
    colors = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, max(1, len(search_ks))))
    color_of = dict(zip(search_ks, colors, strict=False))
    models = list(dict.fromkeys(zip(approx["method"], approx["sigma"], approx["k"], strict=True)))
    styles = ["-", "--", ":", "-."]
    for j, ds in enumerate(datasets):
        sub = approx[approx["dataset"] == ds]
        for (method, sigma, k), style in zip(models, styles * len(models), strict=False):
            for sk in search_ks:
                line = sub[(sub["method"] == method) & (sub["sigma"] == sigma) & (sub["k"] == k)
                           & (sub["search_k"] == sk)].sort_values("n_trees")
                if line.empty:
                    continue
                label = "search_k = -1 (n_trees·k)" if sk == -1 else f"search_k = {sk}"
                if len(models) > 1:
                    label = f"{method}, σ={sigma:g}, k={k}: {label}"
                x = line["n_trees"].to_numpy(float)
                for i, (col, _) in enumerate(rows):
                    ax = axes[i, j]
                    y = line[col].to_numpy(float)
                    if col == "diff":
                        se = line["diff_std"].to_numpy(float) / np.sqrt(line["splits"].to_numpy(float))
                        ax.errorbar(x, y, yerr=np.nan_to_num(se), color=color_of[sk], ls=style, marker="o", ms=3.5,
                                    lw=1.5, capsize=2, label=label)
                    else:
                        ax.plot(x, y, color=color_of[sk], ls=style, marker="o", ms=3.5, lw=1.5, label=label)
        efs = sorted({int(v) for v in graphs["ef"].dropna()})
        for ef, color in zip(efs, plt.get_cmap("autumn")(np.linspace(0.0, 0.8, max(1, len(efs)))), strict=False):
            g = graphs[(graphs["dataset"] == ds) & (graphs["ef"] == ef)]
            for i, (col, _) in enumerate(rows):
                if not g.empty and not np.isnan(g[col].iloc[0]):
                    axes[i, j].axhline(float(g[col].iloc[0]), color=color, lw=1.2, ls="-.", label=f"hnswlib, ef = {ef}")
        axes[0, j].axhline(0.0, color="black", lw=1, ls="--", label="exact neighbours")
        axes[1, j].axhline(1.0, color="black", lw=1, ls="--")
        axes[2, j].axhline(1.0, color="black", lw=1, ls="--")
        exact = summary[(summary["dataset"] == ds) & (summary["neighbors"] == "exact")]
        head = ds
        if not exact.empty:
            e = exact.iloc[0]
            head += f"\nexact: {e['accuracy']:.2f} %, query {1000 * e['query_seconds']:.1f} ms"
        axes[0, j].set_title(head)
        recalls = summary[summary["dataset"] == ds]["recall"].to_numpy(float)
        axes[1, j].set_ylim(min(0.0, np.nanmin(recalls, initial=1.0) - 0.05), 1.03)
        axes[2, j].set_yscale("log")
        axes[2, j].yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0)))
        axes[2, j].yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        axes[2, j].yaxis.set_minor_formatter(NullFormatter())
        axes[-1, j].set_xscale("log")
        ticks = sorted({int(v) for v in sub["n_trees"].dropna()})
        if ticks:
            axes[-1, j].set_xticks(ticks, [str(t) for t in ticks])
            axes[-1, j].minorticks_off()
        axes[-1, j].set_xlabel("annoy n_trees")
        for i, (_, ylabel) in enumerate(rows):
            if j == 0:
                axes[i, j].set_ylabel(ylabel)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    from lkm.report.figures import save_figure

    return save_figure(fig, base, formats)


# -- registered outputs -----------------------------------------------------------------
def _summary_of(ctx: ReportContext) -> pd.DataFrame:
    return neighbor_summary(ctx.records, [m.name for m in ctx.spec.methods], [d.id for d in ctx.spec.datasets])


@table("neighbors")
def _neighbors_table(ctx: ReportContext) -> list[Path]:
    summary = _summary_of(ctx)
    if summary.empty:
        return []
    return ctx.write_table(
        neighbors_table(summary), "neighbors",
        f"{ctx.spec.name}: LPL with exact vs approximate (annoy, hnswlib) neighbours (Sec. 7), mean over "
        f"{ctx.spec.describe_protocol()}; Δ = accuracy minus exact-neighbour LPL at the same sigma and k, "
        "mean ± std of per-split differences; recall = share of the exact k nearest neighbours found; "
        "query s = neighbour query only; predict s excludes the exact reference query behind the recall",
    )


@figure("neighbors")
def _neighbors_figure(ctx: ReportContext) -> list[Path]:
    summary = _summary_of(ctx)
    if summary.empty or not (summary["neighbors"] != "exact").any():
        return []
    title = (f"{ctx.spec.name}: approximate (annoy, hnswlib) vs exact neighbours in LPL "
             f"({ctx.spec.describe_protocol(short=True)}; error bars = ±1 s.e. of per-split differences)")
    return neighbors_figure(summary, title, ctx.figures_dir / "neighbors", ctx.spec.outputs.formats)
