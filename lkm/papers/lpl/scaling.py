"""Time against training-set size (Tsuji et al., Fig. 4 and Table 1), from stored records.

For runs under the ``learning_curve`` protocol (nested training subsets, one fixed test
set per repeat):

- ``tables/scaling``: per method and phase (training, testing), the least-squares slope
  of log10(mean seconds) against log10(training size) beside the complexity of Table 1
  and the slope that complexity implies, with a note on what our implementation does.
- ``tables/scaling_sizes``: per method and training size, mean accuracy ± std over
  repeats, mean fit and predict seconds, and the size of the fitted model (rank of G for
  PL, the number t of support vectors for SVM, k for LPL).
- ``figures/time_vs_size``: log-log plot of mean fit and predict seconds against the
  training size, one panel per phase, with the fitted line of every method.

Slopes are fitted only on sizes whose mean time is at least :data:`MIN_SECONDS`: below
that the timer and Python overheads, not the algorithm, set the number. Nothing is
refitted here; every number comes from the records.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.errors import SpecError
from lkm.report.aggregation import loglog_fit
from lkm.report.figures import SMALL_PT, load_pyplot, method_colors
from lkm.report.formatting import RATE
from lkm.report.registry import ReportContext, figure, table

#: Mean times below this (seconds) are left out of the slope fits (timer noise, overheads).
MIN_SECONDS = 1e-4

PHASES = {"training": "fit_seconds", "testing": "predict_seconds"}

#: Tsuji et al., Table 1, per estimator key and phase: (complexity, implied slope, note).
#: l training samples, p dimensions, t support vectors (t roughly proportional to l).
TABLE1: dict[tuple[str, str], tuple[str, str, str]] = {
    ("pl", "training"): (
        "O(l² p)", "2",
        "Table 1 counts forming the l×l Gram matrix G. Our fit also factorizes G: pivoted "
        "Cholesky (LAPACK dpstrf) stopped at the numerical rank r costs O(l² r), O(l³) when "
        "G has full rank; Table 1 leaves this O(l³) inversion out. {rank}",
    ),
    ("pl", "testing"): (
        "O(l p)", "1",
        "per test point K(x, X) G⁺y over all l training points; times are for the whole "
        "fixed test set.",
    ),
    ("lpl", "training"): (
        "O(l p log l)", "≈1",
        "Table 1 is the cost of building ANN's search tree. Our default exact neighbour "
        "backend only stores the data (no index), so the measured fit is mostly constant "
        "overhead.",
    ),
    ("lpl", "testing"): (
        "O(p log l)", "≈0",
        "Table 1 assumes ANN's tree search. Our exact backend is brute force, O(l p) per "
        "test point (slope 1 for large l), plus k×k solves independent of l; at these "
        "sizes fixed costs dominate.",
    ),
    ("svm", "training"): (
        "O(l t p)", "≈2 (t ∝ l)",
        "LIBSVM SMO; with l up to the precomputed limit we build the full l×l kernel "
        "(O(l² p)) before training. t per size: see scaling_sizes.",
    ),
    ("svm", "testing"): (
        "O(t p)", "≈1 (t ∝ l)",
        "kernel against the t support vectors per test point; whole fixed test set.",
    ),
}


def fitted_slope(n: Any, seconds: Any, min_seconds: float = MIN_SECONDS) -> float:
    """Least-squares slope of log10(seconds) against log10(n), using only the points with
    ``seconds >= min_seconds``; NaN when fewer than two distinct sizes remain.

    For times t = c·n^a the slope is a, the exponent of the observed complexity.
    """
    return loglog_fit(n, seconds, min_y=min_seconds)[0]


def _model_size(info: Any) -> float:
    """The size of a fitted model from a record's ``info``: rank of G, support vectors, k."""
    if not isinstance(info, dict):
        return float("nan")
    for key in ("rank_G", "n_support", "k"):
        if isinstance(info.get(key), (int, float)):
            return float(info[key])
    return float("nan")


def size_means(records: pd.DataFrame) -> pd.DataFrame:
    """Mean over repeats per (dataset, method, n_train) of the successful records.

    Columns: dataset, method, n_train, repeats, accuracy, accuracy_std, fit_seconds,
    fit_std, predict_seconds, predict_std, n_test, model_size.
    """
    ok = records[records["status"] == "ok"].copy()
    if ok.empty:
        return pd.DataFrame()
    ok["model_size"] = ok["info"].map(_model_size) if "info" in ok else np.nan

    def std(a: pd.Series) -> float:
        return float(np.std(a, ddof=1)) if len(a) > 1 else 0.0

    out = ok.groupby(["dataset", "method", "n_train"], sort=False).agg(
        repeats=("accuracy", "size"), accuracy=("accuracy", "mean"), accuracy_std=("accuracy", std),
        fit_seconds=("fit_seconds", "mean"), fit_std=("fit_seconds", std),
        predict_seconds=("predict_seconds", "mean"), predict_std=("predict_seconds", std),
        n_test=("n_test", "mean"), model_size=("model_size", "mean"),
    ).reset_index()
    return out.sort_values(["dataset", "method", "n_train"], kind="stable").reset_index(drop=True)


def _ordered(ctx: ReportContext, means: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(dataset, method, estimator) in spec order, for those present in ``means``."""
    present = set(zip(means["dataset"], means["method"], strict=True))
    return [
        (d.id, m.name, m.estimator)
        for d in ctx.spec.datasets
        for m in ctx.spec.methods
        if (d.id, m.name) in present
    ]


def _fmt_slope(v: float) -> str:
    return "–" if math.isnan(v) else f"{v:.2f}"


def scaling_table(ctx: ReportContext) -> pd.DataFrame:
    means = size_means(ctx.records)
    rows = []
    multi = len({d for d, _, _ in _ordered(ctx, means)}) > 1
    for ds, method, est in _ordered(ctx, means):
        g = means[(means["dataset"] == ds) & (means["method"] == method)]
        for phase, col in PHASES.items():
            n, s = g["n_train"].to_numpy(float), g[col].to_numpy(float)
            used = n[s >= MIN_SECONDS]
            top = np.argsort(n)[-3:]
            complexity, implied, note = TABLE1.get((est, phase), ("–", "–", ""))
            if "{rank}" in note:
                ends = g.loc[[g["n_train"].idxmin(), g["n_train"].idxmax()]]
                rank = ends["model_size"].to_numpy(float)
                note = note.format(rank="" if np.isnan(rank).any() else (
                    f"Measured r: {rank[0]:.0f} at l = {ends['n_train'].iloc[0]:.0f}, {rank[1]:.0f} at "
                    f"l = {ends['n_train'].iloc[1]:.0f}; while r grows slower than l the fit costs about "
                    "O(l² r), below O(l³)."))
            row = {"dataset": ds} if multi else {}
            row.update({
                "method": method, "phase": phase,
                "fitted slope": _fmt_slope(fitted_slope(n, s)),
                "slope, 3 largest sizes": _fmt_slope(fitted_slope(n[top], s[top])),
                "sizes used": f"{int(used.min())}–{int(used.max())} ({used.size})" if used.size >= 2 else "too fast to fit",
                "Table 1": complexity, "implied slope": implied, "note": note.strip(),
            })
            rows.append(row)
    return pd.DataFrame(rows)


def sizes_table(ctx: ReportContext) -> pd.DataFrame:
    means = size_means(ctx.records)
    order = {(d, m): i for i, (d, m, _) in enumerate(_ordered(ctx, means))}
    means = means.assign(_o=[order.get((d, m), 0) for d, m in zip(means["dataset"], means["method"], strict=True)])
    means = means.sort_values(["_o", "n_train"], kind="stable")
    multi = means["dataset"].nunique() > 1
    rows = []
    r: Any  # a row of size_means' columns (pandas-stubs types its fields as any scalar)
    for r in means.itertuples():
        row = {"dataset": r.dataset} if multi else {}
        row.update({
            "method": r.method, "n_train": int(r.n_train), "repeats": int(r.repeats),
            "accuracy %": f"{RATE * r.accuracy:.2f} ± {RATE * r.accuracy_std:.2f}",
            "fit s": f"{r.fit_seconds:.4g}", "predict s": f"{r.predict_seconds:.4g}",
            "model size": "–" if math.isnan(r.model_size) else f"{r.model_size:.0f}",
        })
        rows.append(row)
    return pd.DataFrame(rows)


def time_vs_size_figure(ctx: ReportContext) -> Any:
    plt = load_pyplot()
    from matplotlib.ticker import NullFormatter

    means = size_means(ctx.records)
    combos = _ordered(ctx, means)
    datasets = list(dict.fromkeys(d for d, _, _ in combos))
    fig, axes = plt.subplots(len(datasets), 2, figsize=(10.0, 3.9 * len(datasets)), squeeze=False)
    method_color = method_colors(ctx.spec)
    markers = "osD^vP*X"
    n_test = int(round(means["n_test"].mean())) if not means.empty else 0
    for row, ds in enumerate(datasets):
        for col, (phase, key) in enumerate(PHASES.items()):
            ax = axes[row, col]
            for j, (_, method, _) in enumerate(c for c in combos if c[0] == ds):
                g = means[(means["dataset"] == ds) & (means["method"] == method)]
                n, s = g["n_train"].to_numpy(float), g[key].to_numpy(float)
                err = g[key.replace("seconds", "std")].to_numpy(float)
                slope, intercept = loglog_fit(n, s, min_y=MIN_SECONDS)
                color = method_color[method]
                label = f"{method} (slope {slope:.2f})" if not math.isnan(slope) else f"{method} (too fast to fit)"
                ax.errorbar(n, s, yerr=np.minimum(err, 0.95 * s), color=color, marker=markers[j % len(markers)],
                            ms=5, lw=0, elinewidth=1, capsize=2, label=label, zorder=3)
                keep = s >= MIN_SECONDS
                if not math.isnan(slope):
                    xs = np.array([n[keep].min(), n[keep].max()])
                    ax.plot(xs, 10 ** (slope * np.log10(xs) + intercept), color=color, lw=1.3, ls="--", zorder=2)
            ax.axhline(MIN_SECONDS, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            sizes = sorted({int(v) for v in means.loc[means["dataset"] == ds, "n_train"]})
            ax.set_xticks(sizes, [str(v) for v in sizes])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("training-set size l")
            what = "fit" if phase == "training" else f"prediction of {n_test} test points"
            ax.set_ylabel(f"seconds per {what}")
            ax.set_title(f"{phase}{f' — {ds}' if len(datasets) > 1 else ''}")
            lo, _hi = ax.get_ylim()
            if lo < MIN_SECONDS * 1.5:
                ax.text(ax.get_xlim()[0] * 1.05, MIN_SECONDS * 1.15, f"{MIN_SECONDS:g} s: below, left out of the fit",
                        color="grey", fontsize=SMALL_PT, va="bottom")
            ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # below the axes
    reps = int(means["repeats"].max()) if not means.empty else 0
    sigmas = {p.get("sigma") for p in ctx.ok["params"]}
    at = f" at sigma = {next(iter(sigmas)):g}" if len(sigmas) == 1 and None not in sigmas else ""
    fig.suptitle(
        f"{ctx.spec.name}: time against training-set size on {', '.join(datasets)}{at}\n"
        f"(mean ± std over {reps} repeat(s); dashed: least-squares fit on log-log axes)",
    )
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def _require_curve(ctx: ReportContext, name: str) -> None:
    if ctx.spec.protocol.kind != "learning_curve":
        raise SpecError(f"{ctx.spec.name}: output {name!r} needs protocol kind 'learning_curve', "
                        f"not {ctx.spec.protocol.kind!r}")


# -- registered outputs -----------------------------------------------------------------
@table("scaling")
def _scaling(ctx: ReportContext) -> list[Path]:
    _require_curve(ctx, "scaling")
    return ctx.write_table(
        scaling_table(ctx), "scaling",
        f"{ctx.spec.name}: fitted log-log slope of time against training size l (sizes with mean "
        f"time >= {MIN_SECONDS:g} s) beside Tsuji et al., Table 1",
    )


@table("scaling_sizes")
def _scaling_sizes(ctx: ReportContext) -> list[Path]:
    _require_curve(ctx, "scaling_sizes")
    return ctx.write_table(
        sizes_table(ctx), "scaling_sizes",
        f"{ctx.spec.name}: accuracy (%, mean ± std over repeats) and mean seconds per training size; "
        "model size = rank of G (PL), support vectors t (SVM), k (LPL)",
    )


@figure("time_vs_size")
def _time_vs_size(ctx: ReportContext) -> list[Path]:
    _require_curve(ctx, "time_vs_size")
    return ctx.save_figure(time_vs_size_figure(ctx), "time_vs_size")
