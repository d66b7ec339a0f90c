"""The standard tables and figures of every run, from stored records, without refitting.

- ``tables/summary``: per dataset and method, the selected parameters (the paper's
  sigma*), mean accuracy ± standard deviation over splits, and the paper's value beside it.
- ``tables/sweep``: every parameter setting, mean ± std over splits.
- ``tables/timing``: mean fit and predict seconds per setting.
- ``tables/paper``: every number the spec quotes from the paper beside ours.
- ``figures/sweep_<param>``: accuracy against each swept parameter, one panel per dataset.
- ``figures/best``: accuracy at the selected parameters per dataset and method.

Every table is written as Markdown, CSV and LaTeX by one writer, :func:`write_table`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.registry import ReportContext, figure, table
from lkm.spec import Spec

RATE = 100.0  # accuracies are shown in percent, as the papers do


def aggregate(df: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Mean and spread over splits for every (dataset, method, parameter setting).

    Study records (``kind == "study"``, :mod:`lkm.studies`) carry no accuracy and are left out.
    """
    ok = df[df["status"] == "ok"]
    if "kind" in ok.columns:
        ok = ok[ok["kind"] != "study"]
    ok = ok.copy()
    if ok.empty or "accuracy" not in ok.columns:
        return pd.DataFrame()
    ok["setting"] = ok["params"].map(lambda p: json.dumps(p, sort_keys=True, default=str))
    grouped = ok.groupby(["dataset", "method", "setting"], sort=False)
    agg = grouped.agg(
        accuracy=("accuracy", "mean"), accuracy_std=("accuracy", lambda a: float(np.std(a, ddof=1)) if len(a) > 1 else 0.0),
        splits=("accuracy", "size"), fit_seconds=("fit_seconds", "mean"), predict_seconds=("predict_seconds", "mean"),
        n_train=("n_train", "mean"),
    ).reset_index()
    agg["params"] = agg["setting"].map(json.loads)
    order = _grid_order(spec)
    agg["_order"] = [order.get((r.method, r.setting), 0) for r in agg.itertuples()]
    ds_order = {d.id: i for i, d in enumerate(spec.datasets)}
    m_order = {m.name: i for i, m in enumerate(spec.methods)}
    agg["_ds"] = agg["dataset"].map(ds_order)
    agg["_m"] = agg["method"].map(m_order)
    return agg.sort_values(["_ds", "_m", "_order"]).reset_index(drop=True)


def _grid_order(spec: Spec) -> dict[tuple[str, str], int]:
    from lkm.runner import _with_seed

    out = {}
    for m in spec.methods:
        for i, p in enumerate(spec.method_grid(m)):
            out[(m.name, json.dumps(_with_seed(m, p, spec), sort_keys=True, default=str))] = i
    return out


def select_best(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """The selected setting per dataset and method: highest mean accuracy; ties go to the
    lower standard deviation, then to the earlier setting in grid order.

    With ``selection.over`` naming a subset of the swept parameters, selection is done
    separately for each value of the other swept parameters.
    """
    if agg.empty:
        return agg
    rows = []
    for (_ds, method), g in agg.groupby(["dataset", "method"], sort=False):
        mspec = next(m for m in spec.methods if m.name == method)
        swept = spec.swept_params(mspec)
        over = [p for p in (spec.selection.over or swept) if p in swept]
        fixed = [p for p in swept if p not in over]
        keys = g["params"].map(lambda p, fixed=fixed: json.dumps({k: p.get(k) for k in fixed}, default=str))
        for _, sub in g.groupby(keys, sort=False):
            best = sub.sort_values(["accuracy", "accuracy_std", "_order"], ascending=[False, True, True]).iloc[0]
            rows.append(best)
    return pd.DataFrame(rows).reset_index(drop=True)


def loglog_fit(x: Any, y: Any, min_y: float = 0.0) -> tuple[float, float]:
    """Least-squares ``(slope, intercept)`` of log10(y) against log10(x) over the finite
    points with x > 0 and y > max(min_y, 0); NaNs when fewer than two distinct x remain.
    For y = c·x^a the slope is a (an observed complexity exponent)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0) & (y >= min_y)
    if np.unique(x[keep]).size < 2:
        return math.nan, math.nan
    slope, intercept = np.polyfit(np.log10(x[keep]), np.log10(y[keep]), 1)
    return float(slope), float(intercept)


def _fmt_rate(mean: float, std: float | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    s = f"{RATE * mean:.2f}"
    return s if std is None else f"{s} ± {RATE * std:.2f}"


def _fmt_params(p: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={_fmt_value(p.get(k))}" for k in keys) if keys else "–"


def _fmt_value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _paper_lookup(spec: Spec) -> dict[tuple[str, str], float]:
    """Paper values reported at the selected setting (no explicit ``params``)."""
    return {
        (p.dataset, p.method): p.value
        for p in spec.paper.results
        if p.metric == "accuracy" and not p.params
    }


def summary_table(best: pd.DataFrame, spec: Spec, unavailable: dict[str, str]) -> pd.DataFrame:
    paper = _paper_lookup(spec)
    has_paper = bool(paper)
    rows = []
    for r in best.itertuples():
        mspec = next(m for m in spec.methods if m.name == r.method)
        row = {
            "dataset": r.dataset, "method": r.method,
            "selected": _fmt_params(r.params, spec.swept_params(mspec)),
            "accuracy % (ours)": _fmt_rate(r.accuracy, r.accuracy_std),
            "splits": int(r.splits),
        }
        if has_paper:
            pv = paper.get((r.dataset, r.method))
            row["accuracy % (paper)"] = _fmt_rate(pv) if pv is not None else "–"
            row["ours − paper"] = f"{RATE * (r.accuracy - pv):+.2f}" if pv is not None else "–"
        rows.append(row)
    for ds in unavailable:
        for m in (m for m in spec.methods if m.runs_on(ds)):
            rows.append({"dataset": ds, "method": m.name, "selected": "–",
                         "accuracy % (ours)": "data unavailable", "splits": 0})
    return pd.DataFrame(rows)


def sweep_table(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    rows = []
    for r in agg.itertuples():
        mspec = next(m for m in spec.methods if m.name == r.method)
        row = {"dataset": r.dataset, "method": r.method}
        for k in spec.swept_params(mspec):
            row[k] = r.params.get(k)
        row.update({"accuracy %": round(RATE * r.accuracy, 2), "std %": round(RATE * r.accuracy_std, 2), "splits": int(r.splits)})
        rows.append(row)
    return pd.DataFrame(rows)


def timing_table(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    t = sweep_table(agg, spec).drop(columns=["accuracy %", "std %"])
    t["n_train"] = agg["n_train"].round(0).astype(int).to_numpy()
    t["fit s"] = agg["fit_seconds"].map(lambda v: f"{v:.4g}").to_numpy()
    t["predict s"] = agg["predict_seconds"].map(lambda v: f"{v:.4g}").to_numpy()
    return t


def paper_table(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Every value the spec quotes from the paper, beside ours at the same setting."""
    rows = []
    for p in spec.paper.results:
        ours = None
        pool = agg if p.params else best
        cand = pool[(pool["dataset"] == p.dataset) & (pool["method"] == p.method)] if not pool.empty else pool
        if p.params and not cand.empty:
            cand = cand[cand["params"].map(lambda q, want=p.params: all(_same(q.get(k), v) for k, v in want.items()))]
        if not cand.empty:
            ours = cand.iloc[0]
        is_rate = p.metric == "accuracy"
        if ours is None:
            value = "not run"
        elif is_rate:
            value = _fmt_rate(ours.accuracy, ours.accuracy_std)
        elif p.metric in ("fit_seconds", "predict_seconds"):
            value = f"{ours[p.metric]:.4g}"
        else:
            value = "–"
        rows.append({
            "dataset": p.dataset, "method": p.method, "metric": p.metric,
            "setting": _fmt_params(p.params, list(p.params)) if p.params else "selected",
            "paper": _fmt_rate(p.value) if is_rate else f"{p.value:.4g}",
            "ours": value,
            "source": p.source,
        })
    return pd.DataFrame(rows)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6)
    return str(a) == str(b)


def markdown_table(df: pd.DataFrame) -> str:
    """``df`` as a GitHub Markdown table: the one Markdown writer of tables/*.md and of the
    generated blocks in README.md and docs/. Strings are kept as written (so "70.00" stays
    "70.00"; tabulate would otherwise parse and reformat it), floats are shown with ``g``,
    numeric columns right-aligned, and ``|`` inside cells escaped."""
    cells = pd.DataFrame(index=df.index)
    align = []
    for col in df.columns:
        values = df[col]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        cells[str(col).replace("|", "\\|")] = values.map(lambda v: "" if v is None else str(v).replace("|", "\\|"))
        align.append("right" if numeric else "left")
    return cells.to_markdown(index=False, disable_numparse=True, colalign=align)


def write_table(df: pd.DataFrame, base: Path, caption: str) -> list[Path]:
    """Write ``df`` as ``base.md``, ``base.csv`` and ``base.tex``."""
    from lkm.store import atomic_save, atomic_write

    md, csv, tex = base.with_suffix(".md"), base.with_suffix(".csv"), base.with_suffix(".tex")
    atomic_write(md, f"**{caption}**\n\n" + markdown_table(df) + "\n")
    atomic_save(csv, lambda tmp: df.to_csv(tmp, index=False))
    atomic_write(tex, df.to_latex(index=False, caption=caption, escape=True))
    return [md, csv, tex]


# -- figures ----------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "axes.grid": True, "grid.alpha": 0.3, "font.size": 9})
    return plt


def sweep_figure(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec, param: str, base: Path, formats: list[str]) -> list[Path]:
    """Accuracy against ``param`` (mean ± std band over splits), one panel per dataset."""
    plt = _plt()
    # Only datasets on which some method actually varies the parameter get a panel.
    varied = agg[agg["params"].map(lambda p: isinstance(p.get(param), (int, float)))]
    counts = varied.groupby(["dataset", "method"])["params"].agg(lambda ps: len({p[param] for p in ps}))
    datasets = [d for d in dict.fromkeys(agg["dataset"]) if (counts.get(d, pd.Series(dtype=int)) > 1).any()]
    if not datasets:
        return []
    ncol = min(3, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.2 * nrow), squeeze=False)
    values = [p.get(param) for p in agg["params"] if isinstance(p.get(param), (int, float))]
    logx = bool(values) and min(values) > 0 and max(values) / min(values) > 20
    for ax, ds in zip(axes.flat, datasets, strict=False):
        sub = agg[(agg["dataset"] == ds) & agg["params"].map(lambda p: isinstance(p.get(param), (int, float)))]
        for method, g in sub.groupby("method", sort=False):
            mspec = next(m for m in spec.methods if m.name == method)
            others = [k for k in spec.swept_params(mspec) if k != param]
            for key, line in g.groupby(g["params"].map(lambda p, others=others: _fmt_params(p, others)), sort=False):
                x = line["params"].map(lambda p: p[param]).to_numpy(float)
                o = np.argsort(x)
                y, s = RATE * line["accuracy"].to_numpy()[o], RATE * line["accuracy_std"].to_numpy()[o]
                label = method if not others else f"{method} ({key})"
                (ln,) = ax.plot(x[o], y, marker="o", ms=3, lw=1.4, label=label)
                ax.fill_between(x[o], y - s, y + s, color=ln.get_color(), alpha=0.12, lw=0)
        if logx:
            ax.set_xscale("log")
        ax.set_title(ds)
        ax.set_xlabel(param)
        ax.set_ylabel("accuracy (%)")
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), frameon=False)
    fig.suptitle(f"{spec.name}: accuracy against {param} ({spec.describe_protocol(short=True)}; band = ±1 std over splits)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    return _save(fig, base, formats)


def best_figure(best: pd.DataFrame, spec: Spec, base: Path, formats: list[str]) -> list[Path]:
    """Grouped bars: accuracy at the selected setting per dataset and method; paper values as markers."""
    plt = _plt()
    datasets = list(dict.fromkeys(best["dataset"]))
    methods = [m.name for m in spec.methods if m.name in set(best["method"])]
    paper = _paper_lookup(spec)
    width = 0.8 / max(1, len(methods))
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(datasets) * max(1, len(methods)) / 2 + 2), 3.6))
    x = np.arange(len(datasets))
    for j, m in enumerate(methods):
        sel = best[best["method"] == m].drop_duplicates(["dataset"]).set_index("dataset")
        y = [RATE * sel["accuracy"].get(d, np.nan) for d in datasets]
        e = [RATE * sel["accuracy_std"].get(d, np.nan) for d in datasets]
        ax.bar(x + (j - (len(methods) - 1) / 2) * width, y, width, yerr=e, capsize=2, label=m, alpha=0.85)
        py = [RATE * paper[(d, m)] if (d, m) in paper else np.nan for d in datasets]
        if not np.all(np.isnan(py)):
            ax.scatter(x + (j - (len(methods) - 1) / 2) * width, py, marker="D", s=18, color="black",
                       zorder=3, label="paper" if j == 0 else None)
    lo = np.nanmin(RATE * (best["accuracy"] - best["accuracy_std"]).to_numpy()) if not best.empty else 0
    ax.set_ylim(max(0, lo - 5), 100)
    ax.set_xticks(x, datasets, rotation=20, ha="right")
    ax.set_ylabel("accuracy (%) at selected setting")
    ax.set_title(f"{spec.name}: best setting per dataset and method (error bar = ±1 std over splits)", fontsize=10)
    ax.legend(ncol=1, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    return _save(fig, base, formats)


def _save(fig, base: Path, formats: list[str]) -> list[Path]:
    import matplotlib.pyplot as plt

    from lkm.store import atomic_save

    out = []
    try:
        for fmt in formats:
            meta = {"CreationDate": None} if fmt == "pdf" else None
            out.append(atomic_save(base.with_suffix(f".{fmt}"), lambda tmp, fmt=fmt, meta=meta: fig.savefig(
                tmp, format=fmt, bbox_inches="tight", metadata=meta)))
    finally:
        plt.close(fig)
    return out


# -- registered outputs -----------------------------------------------------------------
@table("summary")
def _summary(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(summary_table(ctx.best, ctx.spec, ctx.unavailable), "summary",
                           f"{ctx.spec.name}: accuracy (%) at the selected setting, {ctx.spec.describe_protocol()}")


@table("sweep")
def _sweep(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(sweep_table(ctx.agg, ctx.spec), "sweep", f"{ctx.spec.name}: accuracy (%) for every setting")


@table("timing")
def _timing(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(timing_table(ctx.agg, ctx.spec), "timing",
                           f"{ctx.spec.name}: mean seconds per fit and prediction")


@figure("sweep")
def _sweep_figures(ctx: ReportContext) -> list[Path]:
    written: list[Path] = []
    swept = dict.fromkeys(p for m in ctx.spec.methods for p in ctx.spec.swept_params(m))
    for param in swept:
        if ctx.agg["params"].map(lambda p, k=param: isinstance(p.get(k), (int, float))).any():
            written += sweep_figure(ctx.agg, ctx.best, ctx.spec, param, ctx.figures_dir / f"sweep_{param}",
                                    ctx.spec.outputs.formats)
    return written


@figure("best")
def _best_figure(ctx: ReportContext) -> list[Path]:
    return best_figure(ctx.best, ctx.spec, ctx.figures_dir / "best", ctx.spec.outputs.formats)


@table("dataset_stats")
def _dataset_stats(ctx: ReportContext) -> list[Path]:
    """Rows, class sizes and features of every dataset as loaded (from provenance.json),
    beside the paper's table of them when ``outputs.options.dataset_stats.paper`` gives
    one (``{dataset: {samples, classes: [sizes], dim}}``)."""
    prov_file = ctx.store.root / "provenance.json"
    datasets = json.loads(prov_file.read_text()).get("datasets", {}) if prov_file.is_file() else {}
    paper = ctx.options("dataset_stats").get("paper", {})
    rows = []
    for ds_id, d in datasets.items():
        if "unavailable" in d:
            rows.append({"dataset": ds_id, "samples (classes), ours": "unavailable"})
            continue
        counts = sorted(d.get("class_counts", {}).values(), reverse=True)
        row = {"dataset": ds_id, "samples (classes), ours": f"{d['rows']} ({', '.join(map(str, counts))})",
               "dim, ours": d["features"]}
        if paper:
            p = paper.get(ds_id) or paper.get(d["name"])
            if p:
                row["samples (classes), paper"] = f"{p['samples']} ({', '.join(map(str, p['classes']))})"
                row["dim, paper"] = p["dim"]
                row["same"] = "yes" if (p["samples"] == d["rows"] and sorted(p["classes"], reverse=True) == counts
                                        and p["dim"] == d["features"]) else "NO"
            else:
                row["samples (classes), paper"], row["dim, paper"], row["same"] = "–", "–", "–"
        rows.append(row)
    return ctx.write_table(pd.DataFrame(rows), "dataset_stats",
                           f"{ctx.spec.name}: datasets as loaded" + (" beside the paper's table" if paper else ""))


@table("train_test")
def _train_test(ctx: ReportContext) -> list[Path]:
    """Testing, training and "average" accuracy (the two weighted by their sizes, as in Li,
    Chen, Tang, Table 5) at each method's selected setting, beside the paper's from
    ``outputs.options.train_test.paper: {dataset: {method: [test, train, average]}}``.
    Needs ``score_train: true`` in the spec (records with ``train_accuracy``)."""
    ok = ctx.ok
    if "train_accuracy" not in ok:
        return []
    paper = ctx.options("train_test").get("paper", {})
    rows = []
    for r in ctx.best.itertuples():
        recs = ok[(ok["dataset"] == r.dataset) & (ok["method"] == r.method)]
        recs = recs[recs["params"].map(lambda p: json.dumps(p, sort_keys=True, default=str)) == r.setting]
        if recs.empty or recs["train_accuracy"].isna().all():
            continue
        average = (recs["train_accuracy"] * recs["n_train"] + recs["accuracy"] * recs["n_test"]) / (
            recs["n_train"] + recs["n_test"])
        ours = [recs["accuracy"].mean(), recs["train_accuracy"].mean(), average.mean()]
        theirs = paper.get(r.dataset, {}).get(r.method)
        row = {"dataset": r.dataset, "method": r.method, "splits": len(recs)}
        for i, name in enumerate(("testing", "training", "average")):
            row[f"{name} % (ours)"] = _fmt_rate(float(ours[i]))
            if paper:
                row[f"{name} % (paper)"] = _fmt_rate(float(theirs[i])) if theirs else "–"
        rows.append(row)
    if not rows:
        return []
    return ctx.write_table(pd.DataFrame(rows), "train_test",
                           f"{ctx.spec.name}: testing, training and average accuracy (%) at the selected setting, "
                           f"mean over splits; average = sizes-weighted mean of the two ({ctx.spec.describe_protocol()})")
