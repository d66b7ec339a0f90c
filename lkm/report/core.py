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
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.methods.extras import NOT_RUN, not_run_cell
from lkm.numerics.metrics import SCORE_LABELS, SCORES
from lkm.numerics.stats import rate_interval
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
    for score in SCORES:  # records from before lkm.numerics.metrics carry accuracy only: the others are NaN
        ok[score] = pd.to_numeric(ok[score], errors="coerce") if score in ok.columns else np.nan
    grouped = ok.groupby(["dataset", "method", "setting"], sort=False)
    spreads = {f"{score}_std": (score, _std) for score in SCORES}
    agg = grouped.agg(
        **{score: (score, "mean") for score in SCORES}, **spreads,
        splits=("accuracy", "size"), fit_seconds=("fit_seconds", "mean"), predict_seconds=("predict_seconds", "mean"),
        n_train=("n_train", "mean"),
    ).reset_index()
    agg["params"] = agg["setting"].map(json.loads)
    if {"n_test", "n_train"} <= set(ok.columns):
        resampled = {d.id: resampled_splits(spec, d.id) for d in spec.datasets}
        bounds = grouped.apply(lambda g: rate_interval(g["accuracy"], g["n_test"], g["n_train"],
                                                       resampled=resampled.get(g.name[0], True)),
                               include_groups=False)
        agg["accuracy_ci_low"] = [b[0] for b in bounds]
        agg["accuracy_ci_high"] = [b[1] for b in bounds]
    else:  # records written without split sizes: no interval
        agg["accuracy_ci_low"] = agg["accuracy_ci_high"] = np.nan
    order = _grid_order(spec)
    agg["_order"] = [order.get((r.method, r.setting), 0) for r in agg.itertuples()]
    ds_order = {d.id: i for i, d in enumerate(spec.datasets)}
    m_order = {m.name: i for i, m in enumerate(spec.methods)}
    agg["_ds"] = agg["dataset"].map(ds_order)
    agg["_m"] = agg["method"].map(m_order)
    return agg.sort_values(["_ds", "_m", "_order"]).reset_index(drop=True)


def resampled_splits(spec: Spec, dataset_id: str) -> bool:
    """Whether a dataset's splits resample one pool of rows (k-fold, hold-out repeats,
    realizations: the Nadeau–Bengio correction applies, :func:`lkm.numerics.stats.rate_interval`),
    rather than semi-supervised realizations of a few labeled rows each."""
    return getattr(spec.protocol_for(dataset_id), "kind", "") != "semisupervised"


#: The level of every interval a table shows beside our number.
CI_LEVEL = 0.95


def ci_column(column: str) -> str:
    """The name of the column holding the 95 % interval of ``column``'s numbers; the
    report compares the paper's number with it (:mod:`lkm.reproduction.site.tables`)."""
    return f"{column} [95% CI]"


def format_interval(low: float, high: float, scale: float = RATE, error: bool = False) -> str:
    """``[93.12, 95.60]`` in percent (of the error rate, 1 − accuracy, when ``error``); "–" if unknown."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "–"
    if error:
        low, high = 1.0 - high, 1.0 - low
    return f"[{scale * low:.2f}, {scale * high:.2f}]"


def records_interval(records: pd.DataFrame, column: str = "accuracy", resampled: bool = True,
                     error: bool = False) -> str:
    """:func:`format_interval` of ``column`` over the splits of ``records`` (one row per split)."""
    if records.empty or column not in records.columns:
        return "–"
    return format_interval(*rate_interval(records[column].astype(float), records["n_test"].astype(float),
                                          records["n_train"].astype(float), resampled=resampled), error=error)


def _std(values: pd.Series) -> float:
    """Sample standard deviation over splits (0 for a single split; NaN values left out)."""
    n = values.count()
    return float(values.std(ddof=1)) if n > 1 else (0.0 if n else math.nan)


def _grid_order(spec: Spec) -> dict[tuple[str, str], int]:
    from lkm.spec.seeds import with_seed

    out = {}
    for m in spec.methods:
        for i, p in enumerate(spec.method_grid(m)):
            out[(m.name, json.dumps(with_seed(m, p, spec), sort_keys=True, default=str))] = i
    return out


def select_best(agg: pd.DataFrame, spec: Spec) -> pd.DataFrame:
    """The selected setting per dataset and method: highest mean of ``selection.metric``
    (default accuracy); ties go to the lower standard deviation, then to the earlier
    setting in grid order. Where the metric is missing for every setting of a method
    (ROC AUC without decision values, records from before lkm.numerics.metrics), accuracy decides;
    the ``selected_by`` column says which metric did.

    With ``selection.over`` naming a subset of the swept parameters, selection is done
    separately for each value of the other swept parameters.
    """
    if agg.empty:
        return agg
    metric = spec.selection.metric
    rows = []
    for (_ds, method), g in agg.groupby(["dataset", "method"], sort=False):
        mspec = next(m for m in spec.methods if m.name == method)
        swept = spec.swept_params(mspec)
        over = [p for p in (spec.selection.over or swept) if p in swept]
        fixed = [p for p in swept if p not in over]
        keys = g["params"].map(lambda p, fixed=fixed: json.dumps({k: p.get(k) for k in fixed}, default=str))
        for _, sub in g.groupby(keys, sort=False):
            by = metric if metric in sub.columns and sub[metric].notna().any() else "accuracy"
            best = sub.sort_values([by, f"{by}_std", "_order"], ascending=[False, True, True]).iloc[0].copy()
            best["selected_by"] = by
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


def format_rate(mean: float, std: float | None = None) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    s = f"{RATE * mean:.2f}"
    return s if std is None else f"{s} ± {RATE * std:.2f}"


def format_params(p: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={format_value(p.get(k))}" for k in keys) if keys else "–"


def format_value(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _paper_lookup(spec: Spec) -> dict[tuple[str, str], float]:
    """Paper values reported at the selected setting (no explicit ``params``)."""
    return {
        (p.dataset, p.method): p.value
        for p in spec.paper.results
        if p.metric == "accuracy" and not p.params
    }


#: Swept parameters whose values are not on a scale (``x0``: the index of a training
#: point), so a selected value at the end of the grid says nothing of values beyond it.
UNORDERED_PARAMS = frozenset({"x0"})

#: The mark a summary cell gets when its selected value is at the edge of its grid.
EDGE_MARK = "†"


def grid_edges(best: pd.DataFrame, spec: Spec) -> list[tuple[int, str, Any, str, tuple[Any, Any]]]:
    """``(row position in best, parameter, selected value, "smallest" | "largest", (low,
    high))`` for every selected value that is the end of its grid: a parameter selected
    over (``selection.over``), with at least three numeric values; then the best value
    may lie outside the grid (e.g. sigma* = 100 on a grid ending at 100)."""
    out = []
    grids: dict[str, dict[str, list[float]]] = {}
    for m in spec.methods:
        values: dict[str, set[float]] = {}
        for setting in spec.method_grid(m):
            for k, v in setting.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values.setdefault(k, set()).add(float(v))
        grids[m.name] = {k: sorted(v) for k, v in values.items()}
    for pos, r in enumerate(best.itertuples()):
        mspec = next((m for m in spec.methods if m.name == r.method), None)
        if mspec is None:
            continue
        swept = spec.swept_params(mspec)
        for k in [p for p in (spec.selection.over or swept) if p in swept and p not in UNORDERED_PARAMS]:
            grid, v = grids[r.method].get(k, []), r.params.get(k)
            if len(grid) < 3 or not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            if float(v) in (grid[0], grid[-1]):
                out.append((pos, k, v, "smallest" if float(v) == grid[0] else "largest", (grid[0], grid[-1])))
    return out


def _fmt_selected(p: dict[str, Any], keys: list[str], at_edge: set[str]) -> str:
    """The selected setting, each value at the edge of its grid followed by :data:`EDGE_MARK`."""
    if not keys:
        return "–"
    return ", ".join(f"{k}={format_value(p.get(k))}" + (f" {EDGE_MARK}" if k in at_edge else "") for k in keys)


def _edges_by_row(best: pd.DataFrame, spec: Spec) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for pos, k, *_ in grid_edges(best, spec):
        out.setdefault(pos, set()).add(k)
    return out


def edge_warnings(best: pd.DataFrame, spec: Spec) -> list[str]:
    """One line per swept parameter whose selected value is at the edge of its grid on
    some dataset and method (see :func:`grid_edges`)."""
    by_param: dict[str, list[str]] = {}
    bounds: dict[str, tuple[Any, Any]] = {}
    for pos, k, v, _end, (lo, hi) in grid_edges(best, spec):
        r = best.iloc[pos]
        mspec = next(m for m in spec.methods if m.name == r["method"])
        others = [o for o in spec.swept_params(mspec) if o != k]
        method = f"{r['method']} ({format_params(r['params'], others)})" if others else r["method"]
        by_param.setdefault(k, []).append(f"{method} on {r['dataset']} ({format_value(v)})")
        bounds[k] = (lo, hi)
    return [f"{spec.name}: selected {k} at the edge of its grid [{format_value(bounds[k][0])}, "
            f"{format_value(bounds[k][1])}] for {', '.join(where)}: the best value may lie outside the grid "
            f"(marked {EDGE_MARK} in tables/summary)" for k, where in by_param.items()]


def failed_fits(records: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method) with failed fits: ``failed`` and ``total`` fit counts and the
    first error, in record order (study records left out)."""
    columns = ["dataset", "method", "failed", "total", "error"]
    fits = records[records["kind"] != "study"] if "kind" in records.columns else records
    if fits.empty or not {"status", "dataset", "method"} <= set(fits.columns):
        return pd.DataFrame(columns=columns)  # no fits (a studies-only run)
    rows = []
    for (ds, method), g in fits.groupby(["dataset", "method"], sort=False):
        errors = g[g["status"] == "error"]
        if not errors.empty:
            first = " ".join(str(errors["error"].iloc[0]).split()) if "error" in errors.columns else "error"
            rows.append({"dataset": ds, "method": method, "failed": len(errors), "total": len(g), "error": first})
    return pd.DataFrame(rows, columns=columns)


def not_run_fits(records: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, method) with fits not run for want of an optional extra (status
    ``not run``, :mod:`lkm.methods.extras`): ``not_run`` and ``total`` fit counts, the
    ``cell`` tables show (``not run: needs lkm[fast]``) and the first record's reason."""
    columns = ["dataset", "method", "not_run", "total", "cell", "reason"]
    fits = records[records["kind"] != "study"] if "kind" in records.columns else records
    if fits.empty or not {"status", "dataset", "method"} <= set(fits.columns) or not (fits["status"] == NOT_RUN).any():
        return pd.DataFrame(columns=columns)
    rows = []
    for (ds, method), g in fits.groupby(["dataset", "method"], sort=False):
        skipped = g[g["status"] == NOT_RUN]
        if not skipped.empty:
            first = skipped.iloc[0]
            rows.append({"dataset": ds, "method": method, "not_run": len(skipped), "total": len(g),
                         "cell": not_run_cell(first.get("needs")), "reason": str(first.get("error", ""))})
    return pd.DataFrame(rows, columns=columns)


def not_run_cells(records: pd.DataFrame | None) -> dict[tuple[str, str], str]:
    """``{(dataset, method): "not run: needs lkm[fast]"}`` for every method none of whose
    fits on the dataset ran (:func:`not_run_fits`): the cell a table shows in its place."""
    if records is None:
        return {}
    nr = not_run_fits(records)
    return {(r.dataset, r.method): r.cell for r in nr.itertuples() if r.not_run == r.total}


def failure_warnings(records: pd.DataFrame) -> list[str]:
    """One line per dataset and method with failed fits, with its first error."""
    return [f"{r.method} on {r.dataset}: {r.failed} of {r.total} fits failed; first: {r.error}"
            for r in failed_fits(records).itertuples()]


#: Marks a score at the selected setting some of whose fits carry a warning (a record's
#: ``warnings``: e.g. one class predicted for a test part holding several).
WARNING_MARK = "‡"


def fit_warnings(records: pd.DataFrame | None) -> dict[tuple[str, str, str], tuple[int, str]]:
    """Per (dataset, method, setting) of successful fits with ``warnings`` in their
    records: how many, and the first warning (records without the field have none)."""
    if records is None or "warnings" not in records.columns:
        return {}
    out: dict[tuple[str, str, str], tuple[int, str]] = {}
    for r in records[records["status"] == "ok"].itertuples():
        if isinstance(r.warnings, list) and r.warnings:
            key = (r.dataset, r.method, json.dumps(r.params, sort_keys=True, default=str))
            n, first = out.get(key, (0, str(r.warnings[0])))
            out[key] = (n + 1, first)
    return out


def summary_table(best: pd.DataFrame, spec: Spec, unavailable: dict[str, str],
                  records: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The summary table and its notes: per dataset and method the selected setting
    (marked :data:`EDGE_MARK` at the edge of its grid), accuracy at it (and the
    selection metric when it is not accuracy), the paper's value; a method whose every
    fit on a dataset failed is a row saying so with its first error. An accuracy some of
    whose fits carry a warning (:func:`fit_warnings`) is marked :data:`WARNING_MARK`,
    with a note naming the warning."""
    paper = _paper_lookup(spec)
    has_paper = bool(paper)
    metric = spec.selection.metric
    edges = _edges_by_row(best, spec)
    warned = fit_warnings(records)
    warned_notes = []
    rows = []
    for pos, r in enumerate(best.itertuples()):
        mspec = next(m for m in spec.methods if m.name == r.method)
        n_warned, warning = warned.get((r.dataset, r.method, r.setting), (0, ""))
        if n_warned:
            warned_notes.append(f"{WARNING_MARK} {r.method} on {r.dataset}: {n_warned} of {int(r.splits)} fits "
                                f"at the selected setting warn; first: {warning}")
        row = {
            "dataset": r.dataset, "method": r.method,
            "selected": _fmt_selected(r.params, spec.swept_params(mspec), edges.get(pos, set())),
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


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6)
    return str(a) == str(b)


#: What would open raw HTML in Markdown (CommonMark: "<" then a tag name, "/", "!" or "?").
_RAW_HTML = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_text(text: Any) -> str:
    """``text`` safe to put in Markdown: a ``<`` that would open raw HTML (``<script>``,
    ``</b>``, ``<!--``) is written ``&lt;``, which every viewer shows as "<" and none runs;
    "< 0.001" is left as it is."""
    return _RAW_HTML.sub("&lt;", str(text))


def markdown_table(df: pd.DataFrame, raw_html: bool = False) -> str:
    """``df`` as a GitHub Markdown table: the one Markdown writer of tables/*.md and of the
    generated blocks in README.md and docs/. Strings are kept as written (so "70.00" stays
    "70.00"; tabulate would otherwise parse and reformat it), floats are shown with ``g``,
    numeric columns right-aligned, ``|`` inside cells escaped and, unless ``raw_html``
    (cells lkm itself wrote HTML into), text that would open raw HTML escaped
    (:func:`markdown_text`)."""
    text = (lambda v: str(v)) if raw_html else markdown_text
    cells = pd.DataFrame(index=df.index)
    align = []
    for col in df.columns:
        values = df[col]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        cells[text(col).replace("|", "\\|")] = values.map(lambda v: "" if v is None else text(v).replace("|", "\\|"))
        align.append("right" if numeric else "left")
    return cells.to_markdown(index=False, disable_numparse=True, colalign=align)


#: LaTeX's special characters and what stands for each in text mode.
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "%": r"\%", "_": r"\_", "&": r"\&", "#": r"\#", "$": r"\$",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
#: The common non-ASCII characters lkm writes, as plain-LaTeX commands (no package beyond
#: the LaTeX kernel); any other is found by :func:`_latex_char`.
_LATEX_UNICODE = {
    "±": r"$\pm$", "−": r"$-$", "×": r"$\times$", "→": r"$\rightarrow$", "←": r"$\leftarrow$",
    "≤": r"$\leq$", "≥": r"$\geq$", "≈": r"$\approx$", "≠": r"$\neq$", "≡": r"$\equiv$", "∞": r"$\infty$",
    "·": r"$\cdot$", "√": r"$\surd$", "⌊": r"$\lfloor$", "⌋": r"$\rfloor$", "ℓ": r"$\ell$", "∂": r"$\partial$",
    "∅": r"$\emptyset$", "∈": r"$\in$", "∝": r"$\propto$", "∪": r"$\cup$", "∫": r"$\int$", "‖": r"$\|$",
    "⪰": r"$\succeq$", "≳": r"$\stackrel{>}{\sim}$", "𝒦": r"$\mathcal{K}$", "½": r"$\frac{1}{2}$",
    "†": r"\dag{}", "‡": r"\ddag{}", "…": r"\dots{}", "§": r"\S{}", "¶": r"\P{}", "©": r"\copyright{}",
    "–": "--", "—": "---", "‘": "`", "’": "'", "“": "``", "”": "''", "«": "<<", "»": ">>",
    "°": r"$^{\circ}$", "µ": r"$\mu$", "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "ø": r"\o{}", "Ø": r"\O{}",
    "⁄": "/", "œ": r"\oe{}", "Œ": r"\OE{}", "å": r"\aa{}", "Å": r"\AA{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}",
    "\u00a0": "~", "\u2009": r"\,", "\u202f": r"\,",
}
_LATEX_ESCAPES = {**_LATEX_SPECIAL, **_LATEX_UNICODE}
#: Combining accents (after NFD/NFKD decomposition) as LaTeX accent commands.
_LATEX_ACCENTS = {
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0308": '"', "\u030c": "v", "\u0304": "=",
    "\u0327": "c", "\u030a": "r", "\u0306": "u", "\u0307": ".", "\u030b": "H", "\u0328": "k", "\u0323": "d",
}
#: Greek letters with a LaTeX command (the others look like Latin letters: Alpha is A).
_GREEK_COMMANDS = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi psi "
    "omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega".split())
_GREEK_AS_LATIN = {"Alpha": "A", "Beta": "B", "Epsilon": "E", "Zeta": "Z", "Eta": "H", "Iota": "I", "Kappa": "K",
                   "Mu": "M", "Nu": "N", "Omicron": "O", "Rho": "P", "Tau": "T", "Chi": "X", "omicron": "o",
                   "final sigma": r"$\varsigma$"}
#: What stands for a character nothing else maps: never a raw non-ASCII byte.
LATEX_PLACEHOLDER = "?"


def _latex_script(chars: str, sub: bool) -> str:
    """Superscript (or subscript) characters, already as ASCII, as one math-mode script."""
    body = "".join(c if c in "0123456789+-=()" else (rf"\mathrm{{{c}}}" if c.isascii() and c.isalpha() else "?")
                   for c in chars)
    return f"${'_' if sub else '^'}{{{body}}}$"


def _latex_char(ch: str) -> str:
    """One non-ASCII character nothing in :data:`_LATEX_ESCAPES` maps, as ASCII LaTeX:
    a Greek letter as its command (``$\\gamma$``), a letter with accents as accent
    commands (``\\'{e}``), a compatibility form (full-width, ligature) as its ASCII
    decomposition, else :data:`LATEX_PLACEHOLDER`."""
    import unicodedata

    base = unicodedata.normalize("NFKD", ch)
    name = unicodedata.name(base[0], "") if base else ""
    if name.startswith("GREEK ") and " LETTER " in name:
        letter = name.split(" LETTER ", 1)[1].replace("LAMDA", "LAMBDA")
        word = letter.lower() if "SMALL" in name else letter.capitalize()
        if word in _GREEK_COMMANDS:
            return rf"$\{word}$"
        return _GREEK_AS_LATIN.get(word, _GREEK_AS_LATIN.get(letter.lower(), LATEX_PLACEHOLDER))
    if base and base[0] in _LATEX_ESCAPES and base[0] != ch:
        return _LATEX_ESCAPES[base[0]] + _latex_accents(base[1:])
    if base and base[0].isascii() and base[0] != ch:
        return _latex_accents(base[1:], _LATEX_SPECIAL.get(base[0], base[0]))
    return LATEX_PLACEHOLDER


def _latex_accents(marks: str, letter: str = "") -> str:
    """``letter`` under the combining ``marks`` as accent commands; marks LaTeX has no
    command for are left out; other characters are escaped with :func:`latex_escape`."""
    import unicodedata

    out = letter
    for m in marks:
        if m in _LATEX_ACCENTS:
            out = rf"\{_LATEX_ACCENTS[m]}{{{out}}}"
        elif not unicodedata.combining(m):
            out += latex_escape(m)
    return out


def latex_escape(text: Any) -> str:
    """``text`` as pure-ASCII LaTeX text-mode source that compiles with pdflatex and no
    package beyond the kernel: the special characters (``% _ & # $ { } ~ ^ \\ < > |``)
    escaped, the common symbols by :data:`_LATEX_UNICODE`, superscript and subscript
    characters as math scripts (``⁻¹`` is ``$^{-1}$``), Greek letters as commands,
    accented letters with accent commands, anything else as
    :data:`LATEX_PLACEHOLDER`. The one escaping function of every ``.tex`` file lkm writes."""
    import unicodedata

    text = unicodedata.normalize("NFC", " ".join(str(text).split("\n")))  # a blank line would end the row
    out: list[str] = []
    script, script_sub = "", False
    for ch in text:
        form = unicodedata.decomposition(ch).split(" ", 1)[0] if not ch.isascii() else ""
        if form in ("<super>", "<sub>"):
            plain = unicodedata.normalize("NFKD", ch).replace("−", "-")
            if script and (form == "<sub>") != script_sub:
                out.append(_latex_script(script, script_sub))
                script = ""
            script, script_sub = script + plain, form == "<sub>"
            continue
        if script:
            out.append(_latex_script(script, script_sub))
            script = ""
        if ch in _LATEX_ESCAPES:
            out.append(_LATEX_ESCAPES[ch])
        elif ch.isascii():
            out.append(ch if ch.isprintable() else " ")
        elif unicodedata.combining(ch):  # an accent NFC could not compose with the letter before it
            prev = out.pop() if out and len(out[-1]) == 1 and out[-1].isalpha() else ""
            out.append(_latex_accents(ch, prev) if ch in _LATEX_ACCENTS and prev else prev)
        else:
            out.append(_latex_char(ch))
    if script:
        out.append(_latex_script(script, script_sub))
    return "".join(out)


#: pdflatex's text width in an ``article`` at 10 pt (345 pt), the width of an average
#: character of a table cell and the space between two columns, in points: what
#: :func:`latex_table` estimates a tabular's width with (on the smoke reproductions' 88
#: tables the estimate was 1.0 to 1.12 times the width pdflatex set them at).
LATEX_LINEWIDTH_PT, LATEX_CHAR_PT, LATEX_COLSEP_PT = 345.0, 5.0, 12.0
#: A text column whose longest cell has more characters than this is a paragraph column
#: (``p{}``, its text wrapped) in a table wider than the line; the narrowest paragraph
#: column (2.5 cm, in points); the width of a capital (wider than the average character).
LATEX_LONG_CELL, LATEX_MIN_PARAGRAPH_PT, LATEX_WORD_CHAR_PT = 28, 71.0, 7.5
#: The type sizes :func:`latex_table` tries, in turn, for a table that does not fit the
#: line even with its text wrapped: the declaration, its width relative to the normal
#: size, and the space between two columns (points) set with it.
LATEX_SIZES = (("", 1.0, LATEX_COLSEP_PT), ("\\small", 0.9, 10.0), ("\\footnotesize", 0.8, 8.0))


def latex_width_pt(columns: list[str], body: list[list[str]]) -> float:
    """Estimated rendered width of a tabular: per column its longest cell or header
    (as displayed), :data:`LATEX_CHAR_PT` per character, plus the column separation."""
    return sum(LATEX_COLSEP_PT + LATEX_CHAR_PT * max([len(c), *(len(v) for v in cells)])
               for c, cells in zip(columns, body, strict=True))


def _latex_text_pt(text: str) -> float:
    """Width of ``text`` (as displayed) at 10 pt, erring high: :data:`LATEX_WORD_CHAR_PT`
    per capital, :data:`LATEX_CHAR_PT` per other character."""
    return sum(LATEX_WORD_CHAR_PT if ch.isupper() or ch in "mwMW%" else LATEX_CHAR_PT for ch in text)


def _latex_column_widths(header: str, cells: list[str], numeric: bool, size: float) -> tuple[float, float]:
    """A column's natural width (longest cell or header on one line) and the narrowest
    paragraph width it may be given (points, at relative type ``size``): text wraps down
    to :data:`LATEX_MIN_PARAGRAPH_PT` (at that size), numbers and cells without letters
    (``89.09 +- 5.14``, ``[31.14, 100.00]``) never wrap (only the header does), and no
    word is cut (a line may break after a space or a hyphen)."""
    natural = size * max(_latex_text_pt(v) for v in [header, *cells])
    words = [w for v in [header, *cells] for w in re.split(r"\s+|(?<=-)", v)]
    whole = [v for v in cells if numeric or not re.search(r"[^\W\d_]", v)]
    least = 1.1 * size * max(_latex_text_pt(w) for w in [*words, *whole, ""])
    if numeric:
        return natural, least
    return natural, max(least, min(size * LATEX_MIN_PARAGRAPH_PT, natural))


def _latex_layout(columns: list[str], shown: list[list[str]], numeric: list[bool], size: float,
                  colsep: float) -> tuple[dict[int, float], bool]:
    """Paragraph widths (points, by column index) for a table wider than the line, and
    whether the table then fits: every long text column wraps; then, widest saving first,
    columns whose header (or text) may wrap, until the rest fits. The paragraph columns
    share what the others leave of the line in proportion to their natural widths, none
    narrower than its minimum nor wider than its natural width."""
    widths = [_latex_column_widths(c, cells, num, size) for c, cells, num in zip(columns, shown, numeric, strict=True)]
    wrap = {j for j, (cells, num) in enumerate(zip(shown, numeric, strict=True))
            if not num and max([0, *(len(v) for v in cells)]) > LATEX_LONG_CELL}
    room = LATEX_LINEWIDTH_PT - colsep * len(columns)

    def needed() -> float:
        return sum(widths[j][1] if j in wrap else widths[j][0] for j in range(len(columns)))

    savings = sorted((j for j in range(len(columns)) if j not in wrap and widths[j][1] < widths[j][0]),
                     key=lambda j: widths[j][1] - widths[j][0])
    for j in savings:
        if needed() <= room:
            break
        wrap.add(j)
    fits = needed() <= room
    share = room - sum(widths[j][0] for j in range(len(columns)) if j not in wrap)

    def given(scale: float) -> dict[int, float]:
        return {j: min(max(scale * widths[j][0], widths[j][1]), widths[j][0]) for j in wrap}

    low, high = 0.0, 1.0  # the largest scale of the natural widths whose clamped sum fits
    if sum(given(high).values()) <= share:
        return given(high), fits
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if sum(given(mid).values()) <= share else (low, mid)
    return given(low), fits


def latex_table(df: pd.DataFrame, caption: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    """``df`` as a LaTeX ``table`` (booktabs rules, numbers right-aligned) with its
    caption and notes below it; every cell, header, caption and note escaped with
    :func:`latex_escape` (so the file is pure ASCII). A table whose estimated width
    (:func:`latex_width_pt`) fits the text width is written as it is. A wider one wraps
    its long text columns (and, when that is not enough, the headers of other columns) in
    ragged-right paragraph columns ``p{<fraction>\\linewidth}`` sized to share the line
    (see :func:`_latex_layout`); only when even that does not fit is it set ``\\small``,
    then ``\\footnotesize`` with narrower column gaps, and, as the last resort, put in a
    ``\\resizebox`` that shrinks it to the line (only if it really is wider: the
    estimate errs high). ``\\input`` it in a document with ``\\usepackage{booktabs}``,
    ``\\usepackage{graphicx}`` and ``\\usepackage{array}``."""
    align, shown, numeric = [], [], []
    for col in df.columns:
        values = df[col]
        numeric.append(pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values))
        align.append("r" if numeric[-1] else "l")
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        shown.append(["" if v is None else " ".join(str(v).split()) for v in values])
    body = [[latex_escape(v) for v in cells] for cells in shown]
    columns = [str(c) for c in df.columns]
    wide = latex_width_pt(columns, shown) > LATEX_LINEWIDTH_PT
    size, colsep, resize = "", LATEX_COLSEP_PT, False
    if wide:
        for choice in LATEX_SIZES:  # the largest type at which the table fits, else the smallest
            paragraphs, fits = _latex_layout(columns, shown, numeric, choice[1], choice[2])
            if fits:
                break
        size, _, colsep = choice
        resize = not fits
        for j, width in paragraphs.items():
            ragged = "\\raggedleft" if numeric[j] else "\\raggedright"
            fraction = math.floor(1000 * width / LATEX_LINEWIDTH_PT) / 1000
            align[j] = f">{{{ragged}\\arraybackslash}}p{{{fraction:.3f}\\linewidth}}"
    lines = [
        "% written by lkm; \\input{} it with \\usepackage{booktabs}, \\usepackage{graphicx} and \\usepackage{array}",
        "\\begin{table}", "\\centering", f"\\caption{{{latex_escape(caption)}}}",
        *([size] if size else []),
        *([f"\\setlength{{\\tabcolsep}}{{{colsep / 2:g}pt}}"] if colsep != LATEX_COLSEP_PT else []),
        *(["\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%"] if resize else []),
        f"\\begin{{tabular}}{{{''.join(align)}}}", "\\toprule",
        " & ".join(latex_escape(c) for c in df.columns) + " \\\\", "\\midrule",
        *(" & ".join(cells) + " \\\\" for cells in zip(*body, strict=True)),
        "\\bottomrule", "\\end{tabular}" + ("}" if resize else ""),
        *(f"\\par\\footnotesize {latex_escape(n)}" for n in notes),
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


def display_cells(df: pd.DataFrame) -> list[list[str]]:
    """The cells of ``df`` as shown in every rendering: strings as written, floats with
    ``g``, None as empty."""
    columns = []
    for col in df.columns:
        values = df[col]
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        columns.append(["" if v is None else str(v) for v in values])
    return [list(row) for row in zip(*columns, strict=True)] if columns else [[] for _ in range(len(df))]


def table_json(df: pd.DataFrame, caption: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    """``df`` as the JSON the HTML report is built from (``{"caption", "notes", "columns",
    "rows"}``, cells as shown): what the report reads instead of parsing Markdown back."""
    return json.dumps({"caption": caption, "notes": list(notes), "columns": [str(c) for c in df.columns],
                       "rows": display_cells(df)}, ensure_ascii=False, indent=0) + "\n"


#: A number as tables show it: optional sign (ASCII or the minus sign −), digits, decimals.
_NUMBER = r"[+\-\u2212]?\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?"
#: An optional short mark after a number (EDGE_MARK, a footnote mark).
_MARK = r"\s*(?P<mark>[^\d\s][^\d]{0,4})?\s*"
#: Display cells holding two numbers, and the suffixes of the CSV columns they go to:
#: "<mean> ± <std>" (a number alone is a mean without std), "[<low>, <high>]" (an interval).
_COMPOSITE_CELLS = (
    (re.compile(rf"\s*(?P<a>{_NUMBER})\s*±\s*(?P<b>{_NUMBER}){_MARK}"), re.compile(rf"\s*(?P<a>{_NUMBER}){_MARK}"),
     ("", " std")),
    (re.compile(rf"\s*\[\s*(?P<a>{_NUMBER})\s*,\s*(?P<b>{_NUMBER})\s*\]{_MARK}"), None, (" low", " high")),
)
#: What a table shows for "no value".
_NO_VALUE = frozenset({"", "–", "—", "-"})


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def _cell_text(v: Any) -> str | None:
    """A cell as text, None when it is not text (missing, or a number)."""
    return v if isinstance(v, str) else None


def _split_cells(texts: list[str | None], col: str, whole: re.Pattern, alone: re.Pattern | None,
                 suffixes: tuple[str, str]) -> dict[str, list[Any]]:
    """The columns one composite column becomes (see :func:`csv_frame`)."""
    first, second, marks, notes = [], [], [], []
    for t in texts:
        m = (whole.fullmatch(t) or (alone.fullmatch(t) if alone else None)) if t is not None else None
        first.append(_number(m["a"]) if m else math.nan)
        second.append(_number(m["b"]) if m and "b" in m.groupdict() else math.nan)
        marks.append((m["mark"] or "").strip() if m else "")
        notes.append("" if m or t is None or t.strip() in _NO_VALUE else t)
    out = {f"{col}{suffixes[0]}": first, f"{col}{suffixes[1]}": second}
    if any(marks):
        out[f"{col} mark"] = marks
    if any(notes):
        out[f"{col} note"] = notes
    return out


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as data, for the CSV twin of a table. A column holding cells ``<mean> ±
    <std>`` (possibly followed by a mark such as :data:`EDGE_MARK`) becomes the numeric
    columns ``<col>`` (the mean) and ``<col> std``; one holding intervals ``[<low>,
    <high>]`` becomes ``<col> low`` and ``<col> high``; plus ``<col> mark`` when some cell
    has a mark and ``<col> note`` for the cells that are text (``failed (...)``, ``data
    unavailable``); "–" is an empty cell. In a column of numbers written as text with "–"
    for none, the dashes become empty and the minus sign −, "-", so ``pd.read_csv`` reads
    floats. Other columns are kept as they are."""
    out: dict[str, Any] = {}
    for col in df.columns:
        values = df[col]
        textual = pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)
        texts = [_cell_text(v) if textual else None for v in values]
        composite = next(((whole, alone, suffixes) for whole, alone, suffixes in _COMPOSITE_CELLS
                          if any(t is not None and whole.fullmatch(t) for t in texts)), None)
        if composite:
            out.update(_split_cells(texts, str(col), *composite))
        elif (textual and any(t is not None and t.strip() not in _NO_VALUE for t in texts)
              and all(t is not None and (t.strip() in _NO_VALUE or re.fullmatch(_NUMBER, t.strip()))
                      for t in texts)):
            out[str(col)] = ["" if t.strip() in _NO_VALUE else t.strip().replace("\u2212", "-") for t in texts]
        else:
            out[str(col)] = values.to_numpy()
    return pd.DataFrame(out, index=df.index)


def write_table(df: pd.DataFrame, base: Path, caption: str, notes: list[str] | tuple[str, ...] = ()) -> list[Path]:
    """Write ``df`` as ``base.md``, ``base.csv``, ``base.tex`` and ``base.json`` (the
    displayed cells with caption and notes, read by the HTML report); ``notes`` (footnotes
    such as what a mark means) go below the Markdown and LaTeX tables. The CSV holds the
    data (:func:`csv_frame`: mean and std in columns of their own), not the display cells,
    written by :func:`lkm.files.write_csv` (text a spreadsheet would evaluate is quoted)."""
    from lkm.files import atomic_write, write_csv

    md, csv, tex, js = (base.with_suffix(s) for s in (".md", ".csv", ".tex", ".json"))
    below = "".join(f"\n{n}\n" for n in notes)
    atomic_write(md, f"**{markdown_text(caption)}**\n\n" + markdown_table(df) + "\n" + markdown_text(below))
    write_csv(csv, csv_frame(df))
    atomic_write(tex, latex_table(df, caption, notes))
    atomic_write(js, table_json(df, caption, notes))
    return [md, csv, tex, js]


# -- figures ----------------------------------------------------------------------
#: The type sizes (points) and resolution of every figure lkm draws, set once by
#: :func:`load_pyplot`: shown at natural size, text is the same size in all of them.
FONT_PT, SMALL_PT, TITLE_PT, FIGURE_DPI = 9.0, 8.0, 10.0, 110


def load_pyplot():
    """matplotlib's pyplot on the Agg backend with lkm's style: :data:`FONT_PT` text,
    :data:`SMALL_PT` tick labels and legends, :data:`TITLE_PT` figure titles, drawn and
    saved at :data:`FIGURE_DPI`. Figure code sizes text through these rcParams (or the
    constants), never with sizes of its own.

    pyplot is imported before the backend is set: `lkm run` imports it in a thread while
    the fits run, and ``matplotlib.use`` on a half-imported pyplot fails (it calls
    ``pyplot.switch_backend``); the import waits for the other thread's to finish."""
    import matplotlib
    import matplotlib.pyplot as plt  # waits for an import in progress in another thread

    matplotlib.use("Agg")

    plt.rcParams.update({
        "figure.dpi": FIGURE_DPI, "savefig.dpi": FIGURE_DPI, "axes.grid": True, "grid.alpha": 0.3,
        "font.size": FONT_PT, "axes.titlesize": FONT_PT, "axes.labelsize": FONT_PT, "xtick.labelsize": SMALL_PT,
        "ytick.labelsize": SMALL_PT, "legend.fontsize": SMALL_PT, "figure.titlesize": TITLE_PT,
    })
    return plt


def warm_up_figures() -> None:
    """Draw a throwaway figure with what lkm's figures hold (log axis, markers, legend,
    titles) and drop it: the fonts, their text metrics and the mathtext parser of log-axis
    tick labels are loaded then, not in the first real figure. `lkm run` and `lkm sweep`
    call this in a thread while the fits run; only caches are filled."""
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(3.0, 2.0))
    try:
        ax.plot([0.1, 1.0, 10.0], [0.5, 0.7, 0.9], marker="o", label="method")
        ax.set_xscale("log")
        ax.set_xlabel("sigma")
        ax.set_ylabel("accuracy %")
        ax.set_title("dataset")
        ax.legend(loc="best")
        fig.suptitle("run")
        fig.canvas.draw()
    finally:
        plt.close(fig)


def method_colors(spec: Spec) -> dict[str, str]:
    """One colour per method of ``spec``, by its place in the spec's method order: the
    same method has the same colour in every figure of a run (tab10, tab20 beyond ten
    methods, evenly spaced hues beyond twenty). Every per-method figure takes its colours here."""
    import matplotlib
    from matplotlib.colors import to_hex

    names = list(dict.fromkeys(m.name for m in spec.methods))
    n = len(names)
    if n <= 10:
        palette = [to_hex(c) for c in matplotlib.colormaps["tab10"].colors]
    elif n <= 20:
        palette = [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]
    else:
        palette = [to_hex(matplotlib.colormaps["hsv"](i / n)) for i in range(n)]
    return {name: palette[i % len(palette)] for i, name in enumerate(names)}


def _score_axis(spec: Spec) -> tuple[str, str]:
    """The score a run's figures plot (its selection metric) and the axis label for it."""
    metric = spec.selection.metric
    return metric, f"{SCORE_LABELS[metric]} (%)"


def _paper_points(spec: Spec, dataset: str, method: str) -> tuple[float | None, list[tuple[dict[str, Any], float]]]:
    """The paper's accuracy for ``method`` on ``dataset``: at its selected setting (or
    None) and at given parameter values ``[(params, value)]``."""
    at_best, at_params = None, []
    for p in spec.paper.results:
        if p.metric == "accuracy" and p.dataset == dataset and p.method == method:
            if p.params:
                at_params.append((p.params, p.value))
            else:
                at_best = p.value
    return at_best, at_params


#: Line styles and markers telling apart the curves of one method (one per value of its
#: other swept parameters): the colour stays the method's.
_CURVE_STYLES = (("-", "o"), ("--", "s"), ("-.", "^"), (":", "D"), ((0, (5, 1)), "v"), ((0, (3, 1, 1, 1, 1, 1)), "P"))


def sweep_figure(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec, param: str, base: Path, formats: list[str]) -> list[Path]:
    """The selection metric (accuracy by default) against ``param``, mean ± std band over
    splits, one panel per dataset, each method in its colour (:func:`method_colors`; its
    curves for other values of its other parameters in other line styles); each curve's
    selected value (sigma*) is circled with a dotted vertical line. A method without
    ``param`` (an SVM in a k sweep) is a dashed horizontal line at its selected setting.
    The paper's values are black diamonds (at a given value) or dash-dotted horizontal
    lines (at the paper's own selected setting)."""
    plt = load_pyplot()
    metric, ylabel = _score_axis(spec)
    # Only datasets on which some method actually varies the parameter get a panel.
    has_param = agg["params"].map(lambda p: isinstance(p.get(param), (int, float)))
    varied = agg[has_param]
    counts = varied.groupby(["dataset", "method"])["params"].agg(lambda ps: len({p[param] for p in ps}))
    datasets = [d for d in dict.fromkeys(agg["dataset"]) if (counts.get(d, pd.Series(dtype=int)) > 1).any()]
    if not datasets:
        return []
    ncol = min(3, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(max(5.5, 4.2 * ncol), 3.2 * nrow + 0.6), squeeze=False)
    values = [p.get(param) for p in agg["params"] if isinstance(p.get(param), (int, float))]
    logx = bool(values) and min(values) > 0 and max(values) / min(values) > 20
    paper_handles: dict[str, Any] = {}
    colors = method_colors(spec)
    for ax, ds in zip(axes.flat, datasets, strict=False):
        sub = agg[(agg["dataset"] == ds) & has_param]
        for method, g in sub.groupby("method", sort=False):
            mspec = next(m for m in spec.methods if m.name == method)
            swept = spec.swept_params(mspec)
            others = [k for k in swept if k != param]
            selected_over = param in (spec.selection.over or swept)
            color = colors[method]
            lines = g.groupby(g["params"].map(lambda p, others=others: format_params(p, others)), sort=False)
            for i, (key, line) in enumerate(lines):
                x = line["params"].map(lambda p: p[param]).to_numpy(float)
                o = np.argsort(x)
                y, s = RATE * line[metric].to_numpy(float)[o], RATE * line[f"{metric}_std"].to_numpy(float)[o]
                label = method if not others else f"{method} ({key})"
                ls, marker = _CURVE_STYLES[i % len(_CURVE_STYLES)]
                ax.plot(x[o], y, marker=marker, ms=3, lw=1.4, ls=ls, label=label, color=color)
                ax.fill_between(x[o], y - s, y + s, color=color, alpha=0.12, lw=0)
                chosen = best[(best["dataset"] == ds) & (best["method"] == method)] if selected_over else best.iloc[:0]
                chosen = chosen[chosen["setting"].isin(line["setting"])]
                for r in chosen.itertuples():
                    star = float(r.params[param])
                    ax.axvline(star, color=color, ls=":", lw=1.1, alpha=0.9)
                    ax.plot([star], [RATE * getattr(r, metric)], marker="o", ms=8, mfc="none", mec=color, mew=1.6)
            at_best, at_params = _paper_points(spec, ds, method) if metric == "accuracy" else (None, [])
            if at_best is not None:
                paper_handles["paper (its selected setting)"] = ax.axhline(RATE * at_best, color=color, ls="-.", lw=1.0)
            for params, value in at_params:
                if isinstance(params.get(param), (int, float)):
                    (h,) = ax.plot([params[param]], [RATE * value], marker="D", ms=5, color="black", ls="none", zorder=4)
                    paper_handles["paper"] = h
        _reference_lines(ax, best, spec, ds, param, set(sub["method"]), colors)
        if logx:
            _log_axis(ax)
        ax.set_title(ds)
        ax.set_xlabel(param)
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    legend: dict[str, Any] = {}
    for ax in list(axes.flat)[:len(datasets)]:  # every panel's curves and reference lines, once each
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, h)
    handles, labels = list(legend.values()), list(legend)
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], marker="o", ms=8, mfc="none", mec="grey", ls=":", color="grey"))
    labels.append(f"selected {param}")
    handles += list(paper_handles.values())
    labels += list(paper_handles)
    # as many legend columns as fit the figure's width (the figure is not cropped to its contents)
    width = max(len(label) for label in labels) * 0.06 + 0.45
    legend_cols = max(1, min(len(labels), int(fig.get_size_inches()[0] / width)))
    rows_of_legend = math.ceil(len(labels) / legend_cols)
    fig.legend(handles, labels, loc="lower center", ncol=legend_cols, frameon=False)
    title_lines = _suptitle(fig, f"{spec.name}: {SCORE_LABELS[metric]} against {param} "
                            f"({spec.describe_protocol(short=True)}; band = ±1 std over splits)")
    _grid_layout(fig, bottom=0.55 + 0.22 * rows_of_legend, top=0.45 + 0.2 * title_lines)
    return save_figure(fig, base, formats, tight=False)


def _reference_lines(ax: Any, best: pd.DataFrame, spec: Spec, dataset: str, param: str, drawn: set[str],
                     colors: dict[str, str]) -> None:
    """Every method on ``dataset`` without a curve against ``param`` (it has no such
    parameter, or is fitted once per split) as a dashed horizontal line in its colour at
    the score of its selected setting(s), labelled for the legend."""
    metric = spec.selection.metric
    rows = best[(best["dataset"] == dataset) & ~best["method"].isin(drawn)] if not best.empty else best
    for method, g in rows.groupby("method", sort=False):
        mspec = next(m for m in spec.methods if m.name == method)
        swept = spec.swept_params(mspec)
        for r in g.itertuples():
            value = getattr(r, metric)
            if value is None or not np.isfinite(value):
                continue
            setting = f", {format_params(r.params, swept)}" if len(g) > 1 and swept else ""
            ax.axhline(RATE * value, color=colors.get(method, "grey"), ls="--", lw=1.4,
                       label=f"{method} (no {param}{setting})")


#: Average width of a character and height of a line of tick-label text, in inches per point of type size.
_CHAR_IN_PER_PT, _LINE_IN_PER_PT = 0.6 / 72, 1.25 / 72


def best_figure(best: pd.DataFrame, spec: Spec, base: Path, formats: list[str]) -> list[Path]:
    """Bars from zero: the selection metric (accuracy by default) at each method's
    selected setting, ±1 std over splits, one panel per dataset in a grid of at most four
    columns; each method in its colour (:func:`method_colors`), the selected setting under
    each bar, the paper's values as black diamonds. The bars are as wide as their labels
    need; labels longer than a bar can hold are turned upright, with room made below."""
    plt = load_pyplot()
    metric, ylabel = _score_axis(spec)
    datasets = list(dict.fromkeys(best["dataset"]))
    method_order = {m.name: i for i, m in enumerate(spec.methods)}
    colors = method_colors(spec)
    panels, any_edge = [], False
    for ds in datasets:
        rows = best[best["dataset"] == ds].copy()
        rows["_m"] = rows["method"].map(method_order)
        rows = rows.sort_values(["_m", "_order"], kind="stable")
        edges = _edges_by_row(rows, spec)
        any_edge = any_edge or bool(edges)
        labels = []
        for i, r in enumerate(rows.itertuples()):
            mspec = next(m for m in spec.methods if m.name == r.method)
            setting = _fmt_selected(r.params, spec.swept_params(mspec), edges.get(i, set()))
            labels.append(r.method if setting == "–" else f"{r.method}\n{setting.replace(', ', chr(10))}")
        panels.append((ds, rows, labels))
    all_labels = [label for _, _, labels in panels for label in labels]
    longest = max((len(line) for label in all_labels for line in label.split("\n")), default=1)
    most_lines = max((label.count("\n") + 1 for label in all_labels), default=1)
    label_w = longest * SMALL_PT * _CHAR_IN_PER_PT + 0.12  # inches
    label_h = most_lines * SMALL_PT * _LINE_IN_PER_PT + 0.08
    upright = label_w > 1.3  # wider than a bar should be: turned by 90 degrees
    bar_w = max(0.75, label_h + 0.12) if upright else max(0.75, label_w + 0.08)
    below = (label_w if upright else label_h) + 0.15  # tick labels under each row of panels
    ncol = min(4, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    most = max(len(rows) for _, rows, _ in panels)
    panel_w, panel_h, title_h = bar_w * most + 0.3, 2.6, 0.35
    paper_shown = any(_paper_points(spec, ds, m)[0] is not None for ds, rows, _ in panels for m in rows["method"]) \
        and metric == "accuracy"
    legend_h = 0.3 if paper_shown else 0.0
    width = max(3.0, panel_w + 0.4) * ncol
    height = 0.75 + nrow * (panel_h + title_h) + (nrow - 1) * below + below + legend_h + 0.1
    fig, axes = plt.subplots(nrow, ncol, figsize=(width, height), squeeze=False, sharey=True)
    for ax, (ds, rows, labels) in zip(axes.flat, panels, strict=False):
        x = np.arange(len(rows))
        y = RATE * rows[metric].to_numpy(float)
        e = RATE * rows[f"{metric}_std"].to_numpy(float)
        ax.bar(x, y, 0.7, yerr=e, capsize=2, color=[colors.get(m, "grey") for m in rows["method"]], alpha=0.85,
               error_kw={"lw": 0.9})
        for xi, yi in zip(x, y, strict=True):
            if np.isfinite(yi):
                ax.text(xi, yi / 2, f"{yi:.1f}", ha="center", va="center", fontsize=SMALL_PT, color="white", rotation=90)
        for i, method in enumerate(rows["method"]):
            at_best, _ = _paper_points(spec, ds, method)
            if at_best is not None and metric == "accuracy":
                ax.plot([i], [RATE * at_best], marker="D", ms=5, color="black", ls="none", zorder=4)
        ax.set_xticks(x, labels, rotation=90 if upright else 0, va="top", ha="center")
        ax.set_xlim(-0.5, max(most, 1) - 0.5)  # every panel's bars as wide: labels sized for one fit all
        ax.set_ylim(0, 105)
        ax.set_title(ds)
        ax.grid(axis="x", visible=False)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    if paper_shown:
        from matplotlib.lines import Line2D

        fig.legend([Line2D([], [], marker="D", ms=5, color="black", ls="none")], ["paper"], loc="lower center",
                   frameon=False)
    edge_note = f"; {EDGE_MARK} = at the edge of its grid" if any_edge else ""
    title = (f"{spec.name}: {SCORE_LABELS[metric]} at the selected setting "
             f"(error bar = ±1 std over splits{edge_note})")
    top = 0.45 + 0.2 * len(_wrapped_title(title, width))
    fig.set_size_inches(width, height + top - 0.75)
    _suptitle(fig, title)
    _grid_layout(fig, bottom=below + legend_h, top=top, hspace=(below + title_h) / panel_h,
                 max_bottom=0.9)
    return save_figure(fig, base, formats, tight=False)


def _wrapped_title(text: str, width_in: float) -> list[str]:
    """The lines of a figure title as wide as ``width_in`` inches (at :data:`TITLE_PT`)."""
    import textwrap

    return textwrap.wrap(text, width=max(30, int(width_in * 13)))


def _suptitle(fig: Any, text: str) -> int:
    """Set ``text`` as the figure's title, wrapped to the figure's width (a figure saved
    without cropping to its contents would cut a longer line); returns its line count."""
    lines = _wrapped_title(text, fig.get_size_inches()[0])
    fig.suptitle("\n".join(lines), y=1 - 0.12 / fig.get_size_inches()[1], va="top")
    return len(lines)


def _log_axis(ax: Any) -> None:
    """A log x axis with minor ticks at 2 and 5 only (the default 8 per decade cost a
    tenth of a second per panel to lay out and add nothing a reader needs)."""
    from matplotlib.ticker import LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _grid_layout(fig: Any, bottom: float, top: float = 0.75, left: float = 0.6, right: float = 0.2,
                 hspace: float = 0.45, wspace: float = 0.28, max_bottom: float = 0.45) -> None:
    """Margins in inches for a grid of panels with a suptitle (``top``) and a figure
    legend or tick labels below (``bottom``, at most ``max_bottom`` of the height): much
    cheaper than ``tight_layout``, which measures every tick label of every log axis
    (seconds for a 6-panel sweep)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - top / h, bottom=min(max_bottom, bottom / h),
                        hspace=hspace, wspace=wspace)


def save_figure(fig, base: Path, formats: list[str], tight: bool = True) -> list[Path]:
    """Save ``fig`` as ``base.<fmt>`` for every format, atomically, and close it;
    ``tight``: crop to what is drawn (needed for legends outside the axes; costs a draw)."""
    import matplotlib.pyplot as plt

    from lkm.files import atomic_save

    out = []
    try:
        for fmt in formats:
            meta = {"CreationDate": None} if fmt == "pdf" else None
            out.append(atomic_save(base.with_suffix(f".{fmt}"), lambda tmp, fmt=fmt, meta=meta: fig.savefig(
                tmp, format=fmt, bbox_inches="tight" if tight else None, metadata=meta)))
    finally:
        plt.close(fig)
    return out


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
