"""The standard tables and figures of every run, from stored records, without refitting.

- ``tables/summary``: per dataset and method, the selected parameters (the paper's
  sigma*), mean accuracy ± standard deviation over splits, and the paper's value beside it.
- ``tables/sweep``: every parameter setting, mean ± std over splits.
- ``tables/timing``: mean fit and predict seconds per setting.
- ``tables/paper``: every number the spec quotes from the paper beside ours.
- ``figures/sweep_<param>``: accuracy against each swept parameter, one panel per dataset
  (a method sweeping two parameters: one curve, at its selected value of the other).
- ``figures/sweep_<x>_<y>``: a method sweeping two parameters, every setting: one line per
  value of ``y`` (up to four) or a heatmap over the grid, one panel per dataset and method.
- ``figures/best``: accuracy at the selected parameters per dataset and method.

Every table is written as Markdown, CSV, LaTeX and JSON by one writer,
:func:`lkm.report.tables.write_table`; the numbers come from :mod:`lkm.report.aggregation`,
the figures from :mod:`lkm.report.figures`. Importing this module registers the builders
(the entry point ``lkm.outputs``/``core`` of pyproject.toml).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.numerics.metrics import SCORE_LABELS, SCORES
from lkm.report.aggregation import edges_by_row, failed_fits, fit_warnings, not_run_fits
from lkm.report.figures import best_figure, sweep_figure, sweep_grid_figure, sweep_pairs
from lkm.report.formatting import (
    EDGE_MARK,
    RATE,
    WARNING_MARK,
    ci_column,
    format_interval,
    format_params,
    format_rate,
    format_selected,
    same_value,
)
from lkm.report.registry import ReportContext, figure, table
from lkm.report.tuning import tuned_choices
from lkm.spec import Spec


def _paper_lookup(spec: Spec) -> dict[tuple[str, str], float]:
    """Paper values reported at the selected setting (no explicit ``params``)."""
    return {
        (p.dataset, p.method): p.value
        for p in spec.paper.results
        if p.metric == "accuracy" and not p.params
    }


def summary_table(best: pd.DataFrame, spec: Spec, unavailable: dict[str, str],
                  records: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The summary table and its notes: per dataset and method the selected setting
    (marked :data:`EDGE_MARK` at the edge of its grid; for a method tuned by inner CV,
    what it chose on the outer folds, :func:`~lkm.report.tuning.tuned_choices`), accuracy at it (and the
    selection metric when it is not accuracy), the paper's value; a method whose every
    fit on a dataset failed is a row saying so with its first error. An accuracy some of
    whose fits carry a warning (:func:`fit_warnings`) is marked :data:`WARNING_MARK`,
    with a note naming the warning."""
    paper = _paper_lookup(spec)
    has_paper = bool(paper)
    metric = spec.selection.metric
    edges = edges_by_row(best, spec)
    warned = fit_warnings(records)
    tuned = {m.name: tuned_choices(records, m.name, m.tune.params)
             for m in spec.methods if m.tune is not None and records is not None and not records.empty}
    warned_notes = []
    rows = []
    r: Any  # a row of the table (pandas-stubs types itertuples' fields as any scalar)
    for pos, r in enumerate(best.itertuples()):
        mspec = next(m for m in spec.methods if m.name == r.method)
        selected = format_selected(r.params, spec.swept_params(mspec), edges.get(pos, set()))
        chosen = tuned.get(r.method, {}).get(r.dataset)
        if chosen:
            selected = chosen if selected == "–" else f"{selected}; {chosen}"
        n_warned, warning = warned.get((r.dataset, r.method, r.setting), (0, ""))
        if n_warned:
            warned_notes.append(f"{WARNING_MARK} {r.method} on {r.dataset}: {n_warned} of {int(r.splits)} fits "
                                f"at the selected setting warn; first: {warning}")
        row = {
            "dataset": r.dataset, "method": r.method,
            "selected": selected,
            "accuracy % (ours)": format_rate(r.accuracy, r.accuracy_std) + (f" {WARNING_MARK}" if n_warned else ""),
            ci_column("accuracy % (ours)"): format_interval(r.accuracy_ci_low, r.accuracy_ci_high),
        }
        if metric != "accuracy":
            value = getattr(r, metric)
            by = getattr(r, "selected_by", metric)
            row[f"{SCORE_LABELS[metric]} % (ours)"] = (
                format_rate(value, getattr(r, f"{metric}_std")) if by == metric else "– (selected by accuracy)")
        row["splits"] = int(r.splits)
        if has_paper:
            pv = paper.get((r.dataset, r.method))
            row["accuracy % (paper)"] = format_rate(pv) if pv is not None else "–"
            row["ours − paper"] = f"{RATE * (r.accuracy - pv):+.2f}" if pv is not None else "–"
        rows.append(row)
    shown = {(r["dataset"], r["method"]) for r in rows}
    failed = failed_fits(records) if records is not None else failed_fits(pd.DataFrame())
    for f in failed.itertuples():
        if (f.dataset, f.method) not in shown:
            rows.append({"dataset": f.dataset, "method": f.method, "selected": "–",
                         "accuracy % (ours)": f"failed ({f.failed} of {f.total} fits): {f.error}", "splits": 0})
    not_run = not_run_fits(records) if records is not None else not_run_fits(pd.DataFrame())
    listed = shown | {(f.dataset, f.method) for f in failed.itertuples()}
    for n in not_run.itertuples():
        if (n.dataset, n.method) not in listed:
            rows.append({"dataset": n.dataset, "method": n.method, "selected": "–", "accuracy % (ours)": n.cell,
                         ci_column("accuracy % (ours)"): "–", "splits": 0})
    for ds in unavailable:
        for m in (m for m in spec.methods if m.runs_on(ds)):
            rows.append({"dataset": ds, "method": m.name, "selected": "–",
                         "accuracy % (ours)": "data unavailable", "splits": 0})
    notes = []
    if edges:
        notes.append(f"{EDGE_MARK} at the edge of its grid: the best value may lie outside it.")
    partly = failed[failed.apply(lambda f: (f["dataset"], f["method"]) in shown, axis=1)] if not failed.empty else failed
    notes += [f"{f.method} on {f.dataset}: {f.failed} of {f.total} fits failed, first: {f.error}"
              for f in partly.itertuples()]
    notes += [f"{n.method} on {n.dataset}: {n.not_run} of {n.total} fits {n.cell} ({n.reason})"
              for n in not_run.itertuples() if (n.dataset, n.method) in listed]
    return pd.DataFrame(rows), notes + warned_notes


def sweep_table(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """Every setting: its swept parameters, accuracy (and the selection metric when it is
    another score), mean and std over splits in %."""
    swept = {m.name: spec.swept_params(m) for m in spec.methods}
    metric = spec.selection.metric
    rows = []
    r: Any  # a row of the table (pandas-stubs types itertuples' fields as any scalar)
    for r in agg.itertuples():
        row = {"dataset": r.dataset, "method": r.method}
        for k in swept[r.method]:
            row[k] = r.params.get(k)
        row.update({"accuracy %": round(RATE * r.accuracy, 2), "std %": round(RATE * r.accuracy_std, 2)})
        if metric != "accuracy":
            row[f"{SCORE_LABELS[metric]} %"] = round(RATE * getattr(r, metric), 2)
            row[f"{SCORE_LABELS[metric]} std %"] = round(RATE * getattr(r, f"{metric}_std"), 2)
        row["splits"] = int(r.splits)
        rows.append(row)
    return pd.DataFrame(rows)


def timing_table(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    t = sweep_table(agg, spec)
    t = t.drop(columns=[c for c in t.columns if c.endswith("%")])
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
            cand = cand[cand["params"].map(lambda q, want=p.params: all(same_value(q.get(k), v) for k, v in want.items()))]
        if not cand.empty:
            ours = cand.iloc[0]
        is_rate = p.metric == "accuracy"
        if ours is None:
            value = "not run"
        elif is_rate:
            value = format_rate(ours.accuracy, ours.accuracy_std)
        elif p.metric in ("fit_seconds", "predict_seconds"):
            value = f"{ours[p.metric]:.4g}"
        else:
            value = "–"
        rows.append({
            "dataset": p.dataset, "method": p.method, "metric": p.metric,
            "setting": format_params(p.params, list(p.params)) if p.params else "selected",
            "paper": format_rate(p.value) if is_rate else f"{p.value:.4g}",
            "ours": value,
            ci_column("ours"): (format_interval(ours.accuracy_ci_low, ours.accuracy_ci_high)
                                if ours is not None and is_rate else "–"),
            "source": p.source,
        })
    return pd.DataFrame(rows)


# -- registered outputs -----------------------------------------------------------------
@table("summary")
def _summary(ctx: ReportContext) -> list[Path]:
    df, notes = summary_table(ctx.best, ctx.spec, ctx.unavailable, ctx.records)
    metric = ctx.spec.selection.metric
    by = "" if metric == "accuracy" else f" (selected by {SCORE_LABELS[metric]})"
    return ctx.write_table(df, "summary", f"{ctx.spec.name}: accuracy (%) at the selected setting{by}, "
                           f"{ctx.spec.describe_protocol()}", notes)


@table("metrics")
def _metrics(ctx: ReportContext) -> list[Path]:
    """Every score of :data:`lkm.numerics.metrics.SCORES` at the selected setting, mean ± std over splits."""
    rows = []
    r: Any  # a row of the table (pandas-stubs types itertuples' fields as any scalar)
    for r in ctx.best.itertuples():
        mspec = next(m for m in ctx.spec.methods if m.name == r.method)
        row = {"dataset": r.dataset, "method": r.method, "selected": format_params(r.params, ctx.spec.swept_params(mspec))}
        for score in SCORES:
            row[f"{SCORE_LABELS[score]} %"] = format_rate(getattr(r, score), getattr(r, f"{score}_std"))
        row["splits"] = int(r.splits)
        rows.append(row)
    metric = SCORE_LABELS[ctx.spec.selection.metric]
    return ctx.write_table(pd.DataFrame(rows), "metrics", (
        f"{ctx.spec.name}: scores (%) at the setting selected by {metric}, mean ± std over splits; "
        f"ROC AUC from decision values, – where the method has none"))


@table("sweep")
def _sweep(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(sweep_table(ctx.agg, ctx.spec), "sweep", f"{ctx.spec.name}: accuracy (%) for every setting")


@table("timing")
def _timing(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(timing_table(ctx.agg, ctx.spec), "timing",
                           f"{ctx.spec.name}: mean seconds per fit and prediction")


def _aggregates_drawn(ctx: ReportContext) -> list[pd.DataFrame]:
    """What the sweep and best figures read: the aggregated scores and the selection."""
    cols = ["dataset", "method", "setting", "splits", *SCORES, *(f"{s}_std" for s in SCORES)]
    return [ctx.agg[cols], ctx.best[[*cols, "selected_by"]] if not ctx.best.empty else ctx.best]


@figure("sweep", inputs=_aggregates_drawn)
def _sweep_figures(ctx: ReportContext) -> list[Path]:
    written: list[Path] = []
    swept = dict.fromkeys(p for m in ctx.spec.methods for p in ctx.spec.swept_params(m))
    for param in swept:
        if ctx.agg["params"].map(lambda p, k=param: isinstance(p.get(k), (int, float))).any():
            written += sweep_figure(ctx.agg, ctx.best, ctx.spec, param, ctx.figures_dir / f"sweep_{param}",
                                    ctx.spec.outputs.formats)
    for x, y in sweep_pairs(ctx.spec, ctx.agg):  # two parameters swept together: every value of both
        written += sweep_grid_figure(ctx.agg, ctx.best, ctx.spec, x, y, ctx.figures_dir / f"sweep_{x}_{y}",
                                     ctx.spec.outputs.formats)
    return written


@figure("best", inputs=_aggregates_drawn)
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
    r: Any  # a row of the table (pandas-stubs types itertuples' fields as any scalar)
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
            row[f"{name} % (ours)"] = format_rate(float(ours[i]))
            if name == "testing":
                row[ci_column("testing % (ours)")] = format_interval(r.accuracy_ci_low, r.accuracy_ci_high)
            if paper:
                row[f"{name} % (paper)"] = format_rate(float(theirs[i])) if theirs else "–"
        rows.append(row)
    if not rows:
        return []
    return ctx.write_table(pd.DataFrame(rows), "train_test",
                           f"{ctx.spec.name}: testing, training and average accuracy (%) at the selected setting, "
                           f"mean over splits; average = sizes-weighted mean of the two ({ctx.spec.describe_protocol()})")
