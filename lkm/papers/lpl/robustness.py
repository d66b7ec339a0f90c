"""Sensitivity to a swept parameter (Tsuji et al., Sec. 9.3, Figs. 6 and 7).

- table ``robustness``: per dataset and method, the selected value (sigma*) and its
  accuracy, the accuracy at a fixed value (sigma = 1), the drop between them, and the
  width of the contiguous range of grid values around sigma* whose accuracy stays within
  ``within`` (default 0.02 = 2 points) of the best, in decades of the parameter.
- figure ``fixed_vs_selected`` (Fig. 7): accuracy at the selected and at the fixed
  value, one panel per method.

Options (``outputs.options.robustness`` / ``.fixed_vs_selected``): ``param`` (default
sigma), ``fixed`` (default 1.0), ``within`` (default 0.02).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE, format_params, same_value
from lkm.report.registry import ReportContext, figure, table


def sensitivity(agg: pd.DataFrame, spec: Any, param: str = "sigma", fixed: float = 1.0,
                within: float = 0.02) -> pd.DataFrame:
    """One row per (dataset, method, setting of the other swept parameters).

    Columns: dataset, method, others (the other swept parameters), selected (the best
    ``param`` value), best (its mean accuracy), at_fixed (mean accuracy at ``fixed``,
    NaN if not in the grid), drop (best - at_fixed), width_decades and n_within (the
    contiguous run of grid values around the best whose accuracy is >= best - within).
    """
    rows = []
    for (ds, method), g in agg.groupby(["dataset", "method"], sort=False):
        mspec = next(m for m in spec.methods if m.name == method)
        others = [k for k in spec.swept_params(mspec) if k != param]
        g = g[g["params"].map(lambda p: isinstance(p.get(param), (int, float)))]
        if g.empty:
            continue
        keys = g["params"].map(lambda p, o=others: json.dumps({k: p.get(k) for k in o}, default=str))
        for _, sub in g.groupby(keys, sort=False):
            values = sub["params"].map(lambda p: float(p[param])).to_numpy()
            order = np.argsort(values)
            values, acc = values[order], sub["accuracy"].to_numpy()[order]
            std = sub["accuracy_std"].to_numpy()[order]
            i_best = int(np.lexsort((np.arange(acc.size), std, -acc))[0])
            ok = acc >= acc[i_best] - within - 1e-12
            lo = hi = i_best
            while lo > 0 and ok[lo - 1]:
                lo -= 1
            while hi < acc.size - 1 and ok[hi + 1]:
                hi += 1
            at_fixed = next((a for v, a in zip(values, acc, strict=True) if same_value(v, fixed)), math.nan)
            rows.append({
                "dataset": ds, "method": method,
                "others": format_params(sub["params"].iloc[0], others) if others else "",
                "selected": float(values[i_best]), "best": float(acc[i_best]),
                "at_fixed": float(at_fixed), "drop": float(acc[i_best] - at_fixed),
                "width_decades": float(math.log10(values[hi] / values[lo])) if values[lo] > 0 else math.nan,
                "n_within": int(hi - lo + 1), "range_lo": float(values[lo]), "range_hi": float(values[hi]),
            })
    return pd.DataFrame(rows)


def _settings(ctx: ReportContext, name: str) -> tuple[str, float, float]:
    opts = ctx.options(name)
    return str(opts.get("param", "sigma")), float(opts.get("fixed", 1.0)), float(opts.get("within", 0.02))


@table("robustness")
def _robustness_table(ctx: ReportContext) -> list[Path]:
    param, fixed, within = _settings(ctx, "robustness")
    s = sensitivity(ctx.agg, ctx.spec, param, fixed, within)
    if s.empty:
        return []
    out = pd.DataFrame({
        "dataset": s["dataset"], "method": s["method"] + s["others"].map(lambda o: f" ({o})" if o else ""),
        f"{param}*": s["selected"].map(lambda v: f"{v:.4g}"),
        f"accuracy % at {param}*": (RATE * s["best"]).round(2),
        f"accuracy % at {param} = {fixed:g}": (RATE * s["at_fixed"]).round(2),
        "drop (points)": (RATE * s["drop"]).round(2),
        f"{param} range within {RATE * within:g} points of best": [
            f"{lo:.3g} – {hi:.3g}" for lo, hi in zip(s["range_lo"], s["range_hi"], strict=True)],
        "width (decades)": s["width_decades"].round(2),
    })
    return ctx.write_table(out, "robustness", (
        f"{ctx.spec.name}: sensitivity to {param} — accuracy at the selected {param}* and at {param} = {fixed:g}, "
        f"and the contiguous {param} range around {param}* within {RATE * within:g} points of the best"))


@figure("fixed_vs_selected")
def _fixed_vs_selected(ctx: ReportContext) -> list[Path]:
    param, fixed, within = _settings(ctx, "fixed_vs_selected")
    s = sensitivity(ctx.agg, ctx.spec, param, fixed, within)
    if s.empty:
        return []
    s = s[s["others"] == ""] if (s["others"] == "").any() else s
    plt = load_pyplot()
    methods = list(dict.fromkeys(s["method"]))
    datasets = list(dict.fromkeys(s["dataset"]))
    fig, axes = plt.subplots(1, len(methods), figsize=(3.2 * len(methods) + 0.6, 3.6), sharey=True, squeeze=False)
    x = np.arange(len(datasets))
    for ax, method in zip(axes[0], methods, strict=True):
        sub = s[s["method"] == method].set_index("dataset")
        best = [RATE * sub["best"].get(d, np.nan) for d in datasets]
        at_fixed = [RATE * sub["at_fixed"].get(d, np.nan) for d in datasets]
        ax.bar(x - 0.2, best, 0.4, label=f"{param} = {param}*", color="tab:blue")
        ax.bar(x + 0.2, at_fixed, 0.4, label=f"{param} = {fixed:g}", color="tab:orange", alpha=0.8)
        ax.set_title(method)
        ax.set_xticks(x, datasets, rotation=35, ha="right")
        ax.set_ylim(0, 105)  # bars start at zero
    axes[0][0].set_ylabel("accuracy (%)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.suptitle(f"{ctx.spec.name}: accuracy at the selected {param}* and at {param} = {fixed:g} "
                 f"({ctx.spec.describe_protocol(short=True)})")
    fig.tight_layout()
    return ctx.save_figure(fig, "fixed_vs_selected")
