"""Records to numbers: mean and spread over splits per setting (:func:`aggregate`), the
selected setting per dataset and method (:func:`select_best`), selected values at the
edge of their grid, and failed, skipped or warning fits."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from lkm.methods.extras import NOT_RUN, not_run_cell
from lkm.numerics.metrics import SCORES
from lkm.numerics.stats import rate_interval
from lkm.report.formatting import EDGE_MARK, format_params, format_value
from lkm.spec import Spec


def _rows(frame: pd.DataFrame) -> Iterator[Any]:
    """``frame.itertuples()``, its rows typed Any: pandas-stubs types their fields as any scalar."""
    return frame.itertuples()


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
    agg = grouped.agg(
        **{score: (score, "mean") for score in SCORES},
        splits=("accuracy", "size"), fit_seconds=("fit_seconds", "mean"), predict_seconds=("predict_seconds", "mean"),
        n_train=("n_train", "mean"),
    ).reset_index()
    rows, groups = _group_rows(grouped.ngroup().to_numpy())
    for i, score in enumerate(SCORES):  # each score's spread, after the means
        values = np.asarray(ok[score], dtype=float)[rows]
        agg.insert(3 + len(SCORES) + i, f"{score}_std", [_std(values[a:b]) for a, b in groups])
    agg["params"] = agg["setting"].map(json.loads)
    if {"n_test", "n_train"} <= set(ok.columns):
        bounds = _group_intervals(ok, rows, groups, spec)
        agg["accuracy_ci_low"] = [b[0] for b in bounds]
        agg["accuracy_ci_high"] = [b[1] for b in bounds]
    else:  # records written without split sizes: no interval
        agg["accuracy_ci_low"] = agg["accuracy_ci_high"] = np.nan
    order = _grid_order(spec)
    agg["_order"] = [order.get((r.method, r.setting), 0) for r in _rows(agg)]
    ds_order = {d.id: i for i, d in enumerate(spec.datasets)}
    m_order = {m.name: i for i, m in enumerate(spec.methods)}
    agg["_ds"] = agg["dataset"].map(ds_order)
    agg["_m"] = agg["method"].map(m_order)
    return agg.sort_values(["_ds", "_m", "_order"]).reset_index(drop=True)


def _group_rows(codes: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The records by group (``codes``: each record's group number, NaN for a record in no
    group): record positions sorted by group, each group's in record order, and each group's
    ``(start, end)`` in them, in group-number order. Per-group numbers computed over these
    slices are what ``groupby(...).apply`` gives, without pandas' cost per group."""
    codes = np.asarray(codes, dtype=float)
    rows = np.flatnonzero(~np.isnan(codes))
    rows = rows[np.argsort(codes[rows], kind="stable")]
    starts = np.flatnonzero(np.r_[True, np.diff(codes[rows]) != 0]) if rows.size else rows
    return rows, list(zip(starts.tolist(), [*starts[1:].tolist(), len(rows)], strict=True))


def _group_intervals(ok: pd.DataFrame, rows: np.ndarray, groups: list[tuple[int, int]],
                     spec: Spec) -> list[tuple[float, float]]:
    """:func:`rate_interval` of the accuracies of each group (:func:`_group_rows`)."""
    resampled = {d.id: resampled_splits(spec, d.id) for d in spec.datasets}
    accuracy, n_test, n_train = (np.asarray(ok[c], dtype=float)[rows] for c in ("accuracy", "n_test", "n_train"))
    datasets = ok["dataset"].to_numpy()[rows]
    return [rate_interval(accuracy[a:b], n_test[a:b], n_train[a:b], resampled=resampled.get(datasets[a], True))
            for a, b in groups]


def resampled_splits(spec: Spec, dataset_id: str) -> bool:
    """Whether a dataset's splits resample one pool of rows (k-fold, hold-out repeats,
    realizations: the Nadeau–Bengio correction applies, :func:`lkm.numerics.stats.rate_interval`),
    rather than semi-supervised realizations of a few labeled rows each."""
    return getattr(spec.protocol_for(dataset_id), "kind", "") != "semisupervised"


def _std(values: np.ndarray) -> float:
    """Sample standard deviation over splits (0 for a single split; NaN values left out),
    computed as pandas' ``Series.std`` computes it, to the last bit: two passes, the NaNs
    counted as 0 in both sums."""
    missing = np.isnan(values)
    n = values.size - int(missing.sum())
    if n <= 1:
        return 0.0 if n else math.nan
    filled = np.where(missing, 0.0, values)
    squares = np.where(missing, 0.0, (filled.sum() / n - filled) ** 2)
    return float(np.sqrt(squares.sum() / (n - 1)))


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
    fixed: dict[str, list[str]] = {}  # per method: the swept parameters not selected over
    groups: dict[tuple[Any, Any], dict[str, list[int]]] = {}  # (dataset, method) -> fixed values -> rows
    for pos, (ds, method, params) in enumerate(zip(agg["dataset"], agg["method"], agg["params"], strict=True)):
        if pd.isna(ds) or pd.isna(method):  # groupby leaves out missing keys
            continue
        if method not in fixed:
            swept = spec.swept_params(next(m for m in spec.methods if m.name == method))
            over = [p for p in (spec.selection.over or swept) if p in swept]
            fixed[method] = [p for p in swept if p not in over]
        key = json.dumps({k: params.get(k) for k in fixed[method]}, default=str)
        groups.setdefault((ds, method), {}).setdefault(key, []).append(pos)
    columns: dict[str, list[float]] = {c: agg[c].to_numpy(dtype=float).tolist()
                                       for c in {"accuracy", "accuracy_std", "_order", metric, f"{metric}_std"}
                                       if c in agg.columns}
    chosen, selected_by = [], []
    for sub in (rows for keyed in groups.values() for rows in keyed.values()):
        by = metric if metric in agg.columns and any(not math.isnan(columns[metric][pos]) for pos in sub) else "accuracy"
        value, std, order = columns[by], columns[f"{by}_std"], columns["_order"]
        keys = [_selection_key(value[pos], std[pos], order[pos]) for pos in sub]
        chosen.append(sub[keys.index(min(keys))])  # the first of equal keys, as a stable sort
        selected_by.append(by)
    best = agg.iloc[chosen].reset_index(drop=True)
    best["selected_by"] = selected_by
    return best


def _selection_key(value: float, std: float, order: float) -> tuple[bool, float, bool, float, bool, float]:
    """Sorts a setting before another as ``sort_values([metric, std, _order], ascending=[False,
    True, True])`` does: higher value, then lower std, then earlier grid order, NaN last in each."""
    return (math.isnan(value), 0.0 if math.isnan(value) else -value, math.isnan(std), 0.0 if math.isnan(std) else std,
            math.isnan(order), 0.0 if math.isnan(order) else order)


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


#: Swept parameters whose values are not on a scale (``x0``: the index of a training
#: point), so a selected value at the end of the grid says nothing of values beyond it.
UNORDERED_PARAMS = frozenset({"x0"})


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
    r: Any  # a row of best (pandas-stubs types itertuples' fields as any scalar)
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


def edges_by_row(best: pd.DataFrame, spec: Spec) -> dict[int, set[str]]:
    """The swept parameters of each row of ``best`` (by position) selected at the edge of their grid."""
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
    errors = fits[fits["status"] == "error"]
    if not errors.empty:  # (most runs have none: no grouping of every fit then)
        failed = errors.groupby(["dataset", "method"], sort=False).size().to_dict()
        firsts = errors.drop_duplicates(["dataset", "method"])
        first = dict(zip(zip(firsts["dataset"], firsts["method"], strict=True),
                         firsts["error"] if "error" in errors.columns else ["error"] * len(firsts), strict=True))
        key: Any  # a (dataset, method) pair (pandas-stubs types group keys as Hashable)
        for key, total in fits.groupby(["dataset", "method"], sort=False).size().items():
            if key in failed:
                rows.append({"dataset": key[0], "method": key[1], "failed": failed[key], "total": total,
                             "error": " ".join(str(first[key]).split())})
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
    return {(r.dataset, r.method): r.cell for r in _rows(nr) if r.not_run == r.total}


def failure_warnings(records: pd.DataFrame) -> list[str]:
    """One line per dataset and method with failed fits, with its first error."""
    return [f"{r.method} on {r.dataset}: {r.failed} of {r.total} fits failed; first: {r.error}"
            for r in failed_fits(records).itertuples()]


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
