"""Shin and Cho, "Invariance of neighborhood relation under input space to feature space
mapping" (Pattern Recognition Letters 2004): NPPS pattern selection before an SVM.

- ``tables/npps_table2``: Table 2, per row the training patterns, support vectors,
  execution time and test error of the SVM on ALL patterns and on the patterns SELECTED
  by NPPS (time = SVM + NPPS, both parts shown), each cell "ours (paper)", and the
  speed-up ALL / SELECTED beside the paper's; the seconds are the final fit's (a tuned
  method's CV search is left out: ``info.refit_seconds``), and ``setting ALL`` /
  ``setting SELECTED`` give C, sigma and k (tuned ones: the most frequent choice over
  the splits and how many chose it). A row with a ``modern`` method is followed by a row
  of its own, not the paper's: the same SVM on ALL patterns trained by a modern solver
  (e.g. scikit-learn-intelex), its SELECTED columns repeated from the row above and its
  speed-up its time / SELECTED's (below 1: faster than NPPS + SVM).
- ``tables/npps_k_sweep``: for every NPPS method whose ``k`` is swept, per dataset and k:
  selected patterns, support vectors, test error, selection and SVM seconds.
- ``figures/npps_boundaries``: Figs. 5-7, per 2-D dataset an ALL and a SELECTED panel
  with the decision boundary f = 0, the margins f = ±1 and the support vectors circled
  (the SELECTED panel greys the patterns NPPS dropped). This builder FITS MODELS: the
  row's two methods once on the training part of the run's first split (cheap in 2-D),
  with the parameters CV chose on that split for tuned methods.
- ``figures/npps_selection_time`` and ``tables/npps_selection_time``: Fig. 3, selection
  seconds of naive and fast NPPS against the size v of the overlap region at fixed M,
  log-log with fitted slopes.

Options (``outputs.options``):

``npps_table2``
    ``rows``: list of ``{dataset, all, selected, modern, paper, note}`` — a dataset id of
    the spec, the method names of its ALL (``svm``) and SELECTED (``npps_svm``) runs,
    optionally the name of its ALL run on a modern solver (``svm`` with another
    ``backend``: a row of its own after the dataset's, only when that method has
    records), the key of its row in ``paper`` (default: none) and a note shown in the
    table (e.g. that the row is a stand-in). Rows whose dataset is unavailable say "data
    unavailable"; rows whose dataset is not in the spec (a ``--smoke`` run) are left out.
    ``paper``: the paper's Table 2 by row name: ``train: [ALL, SELECTED]``,
    ``sv: [ALL, SELECTED]``, ``seconds: [ALL, SVM, NPPS]`` (SELECTED = SVM + NPPS),
    ``error: [ALL %, SELECTED %]``.
``npps_k_sweep``
    ``methods``: NPPS method names (default: every ``npps_svm`` method with a ``k`` sweep).
``npps_boundaries``
    ``datasets``: dataset ids (default: every 2-D dataset of the ``npps_table2`` rows);
    ``resolution``: grid points per axis (default 200).
``npps_selection_time``
    ``naive``, ``fast``: the method names (default: the ``npps_svm`` methods whose
    ``method`` parameter is "naive" / "fast"); ``v``: which count measures the overlap
    region, ``n_selected`` (default) or ``n_evaluated``, taken from the naive method's
    records (naive NPPS evaluates every pattern, so its counts do not depend on where
    the search starts).
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.errors import SpecError
from lkm.report.aggregation import loglog_fit, not_run_cells
from lkm.report.figures import SMALL_PT, load_pyplot
from lkm.report.formatting import RATE, ci_column, records_interval
from lkm.report.registry import ReportContext, figure, table

UNAVAILABLE = "data unavailable"


# -- record access -----------------------------------------------------------------------
def _info(row: pd.Series, key: str) -> float:
    info = row.get("info")
    if isinstance(info, str):
        info = json.loads(info)
    value = (info or {}).get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _info_raw(row: pd.Series, key: str) -> Any:
    info = row.get("info")
    if isinstance(info, str):
        info = json.loads(info)
    return (info or {}).get(key)


def setting_stats(recs: pd.DataFrame) -> dict[str, float]:
    """Means over the records (splits) of one dataset and method setting."""
    if recs.empty:
        return {}
    out = {
        "splits": len(recs),
        "n_train": float(recs["n_train"].mean()),
        "error": float(1.0 - recs["accuracy"].mean()),
        "error_std": float(np.std(1.0 - recs["accuracy"], ddof=1)) if len(recs) > 1 else 0.0,
        "fit_seconds": float(recs["fit_seconds"].mean()),
        # The final fit alone: a tuned record's fit_seconds also counts the CV search.
        "train_seconds": float(np.mean([
            _info(r, "refit_seconds") if not math.isnan(_info(r, "refit_seconds")) else r["fit_seconds"]
            for _, r in recs.iterrows()
        ])),
    }
    for key in ("n_support", "n_selected", "n_evaluated", "selection_seconds", "svm_seconds"):
        values = np.array([_info(r, key) for _, r in recs.iterrows()], dtype=float)
        out[key] = float(values[~np.isnan(values)].mean()) if (~np.isnan(values)).any() else math.nan
    out["fallbacks"] = int(sum(bool(_info_raw(r, "fallback")) for _, r in recs.iterrows()))
    return out


_SYMBOLS = {"sigma": "σ"}


def format_value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def setting(recs: pd.DataFrame, keys: tuple[str, ...] = ("C", "sigma", "k")) -> str:
    """The parameters a method used on these records (splits): fixed ones as ``C=1``;
    ones tuned by CV (``info.tuned_params``) as the most frequent choice and how many
    splits chose it, ``C=10 (4/5)``."""
    if recs.empty:
        return "–"
    n = len(recs)
    tuned = [_info_raw(r, "tuned_params") or {} for _, r in recs.iterrows()]
    params = [r["params"] if isinstance(r["params"], dict) else json.loads(r["params"]) for _, r in recs.iterrows()]
    parts = []
    for key in keys:
        values = [t.get(key, p.get(key)) for t, p in zip(tuned, params, strict=True)]
        if all(v is None for v in values):
            continue
        name = _SYMBOLS.get(key, key)
        if any(key in t for t in tuned):  # ties by the value's text, never by the order of the records
            counts = Counter(format_value(v) for v in values)
            top, chosen = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append(f"{name}={top} ({chosen}/{n})")
        else:
            parts.append(f"{name}={format_value(values[0])}")
    return ", ".join(parts) or "–"


def _method(ctx: ReportContext, name: str, where: str):
    for m in ctx.spec.methods:
        if m.name == name:
            return m
    raise SpecError(f"{ctx.spec.name}: {where}: no method named {name!r}")


# -- Table 2 ------------------------------------------------------------------------------
def _n(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0f}"


def _s(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def _pct(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


def _cell(ours: str, paper: str | None) -> str:
    return ours if paper is None else f"{ours} ({paper})"


def _table2_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    opts = ctx.options("npps_table2")
    rows = opts.get("rows") or []
    if not rows:
        raise SpecError(f"{ctx.spec.name}: outputs.options.npps_table2.rows: give one row per dataset "
                        "({dataset, all, selected, paper, note})")
    ids = {d.id for d in ctx.spec.datasets}
    out = []
    for i, r in enumerate(rows):
        for key in ("dataset", "all", "selected"):
            if key not in r:
                raise SpecError(f"{ctx.spec.name}: outputs.options.npps_table2.rows[{i}]: missing {key!r}")
        if r["dataset"] in ids:
            out.append(r)
    return out


def table2(ctx: ReportContext) -> pd.DataFrame:
    opts = ctx.options("npps_table2")
    paper_all = opts.get("paper") or {}
    has_paper = bool(paper_all)
    out = []
    for r in _table2_rows(ctx):
        ds = r["dataset"]
        p = paper_all.get(r.get("paper")) if r.get("paper") else None
        if r.get("paper") and p is None and has_paper:
            raise SpecError(f"{ctx.spec.name}: outputs.options.npps_table2: row {ds!r} names paper row "
                            f"{r['paper']!r}, which is not in 'paper'")
        pp = _paper_cells(p)
        row: dict[str, Any] = {"dataset": ds, "paper row": r.get("paper") or "–", "note": r.get("note", "")}
        if ds in ctx.unavailable:
            for col in _COLUMNS:
                row[col] = _cell(UNAVAILABLE, pp.get(col)) if has_paper else UNAVAILABLE
            row["splits"] = 0
            out.append(row)
            continue
        _method(ctx, r["all"], "outputs.options.npps_table2.rows.all")
        _method(ctx, r["selected"], "outputs.options.npps_table2.rows.selected")
        a = setting_stats(ctx.ok_records(ds, r["all"]))
        s = setting_stats(ctx.ok_records(ds, r["selected"]))
        if not a or not s:
            for col in _COLUMNS:
                row[col] = "not run"
            row["splits"] = 0
            out.append(row)
            continue
        sel_seconds = s["svm_seconds"] + s["selection_seconds"]
        row["setting ALL"] = setting(ctx.ok_records(ds, r["all"]))
        row["setting SELECTED"] = setting(ctx.ok_records(ds, r["selected"]))
        ours = {
            "patterns ALL": _n(a["n_train"]),
            "patterns SELECTED": _n(s["n_selected"]),
            "SVs ALL": _n(a["n_support"]),
            "SVs SELECTED": _n(s["n_support"]),
            "time ALL (s)": _s(a["train_seconds"]),
            "time SELECTED = SVM + NPPS (s)": f"{_s(sel_seconds)} = {_s(s['svm_seconds'])} + {_s(s['selection_seconds'])}",
            "speed-up ALL/SELECTED": f"{a['train_seconds'] / sel_seconds:.1f}×" if sel_seconds > 0 else "–",
            "error ALL %": _pct(RATE * a["error"]),
            "error SELECTED %": _pct(RATE * s["error"]),
        }
        for col in _COLUMNS:
            row[col] = _cell(ours[col], pp.get(col)) if has_paper else ours[col]
        for col, method in (("error ALL %", r["all"]), ("error SELECTED %", r["selected"])):
            row[ci_column(col)] = records_interval(ctx.ok_records(ds, method), error=True)
        row["splits"] = int(max(a["splits"], s["splits"]))
        if s["fallbacks"]:
            row["note"] = f"{row['note']}; NPPS fell back to all patterns in {s['fallbacks']} split(s)".lstrip("; ")
        out.append(row)
        if r.get("modern"):
            modern = _modern_row(ctx, r, row, ours, s, has_paper)
            if modern is not None:
                out.append(modern)
    return pd.DataFrame(out)


def _other_session(recs: pd.DataFrame, reference: pd.DataFrame, hours: float = 1.0) -> str:
    """``"<day> against <day>"`` when ``recs`` finished more than ``hours`` from every
    ``reference`` record (fitted in another session, e.g. added to a recorded run, so their
    seconds may have met another load), else ""."""
    if "finished_at" not in recs.columns or "finished_at" not in reference.columns:
        return ""
    ours = pd.to_datetime(recs["finished_at"], errors="coerce").dropna()
    theirs = pd.to_datetime(reference["finished_at"], errors="coerce").dropna()
    if ours.empty or theirs.empty:
        return ""
    gap = min(abs(a - b) for a in ours for b in theirs)
    if gap <= pd.Timedelta(hours=hours):
        return ""
    return f"{ours.min():%Y-%m-%d} against {theirs.min():%Y-%m-%d}"


#: The solver a ``backend`` of ``svm`` names, for the modern row's label.
_SOLVERS = {"intelex": "scikit-learn-intelex", "libsvm": "LIBSVM"}

#: Table 2's columns of the SELECTED side, which a modern row repeats from its dataset's row.
_SELECTED_COLUMNS = ("patterns SELECTED", "SVs SELECTED", "time SELECTED = SVM + NPPS (s)", "error SELECTED %")


def _modern_row(ctx: ReportContext, r: dict[str, Any], selected_row: dict[str, Any], selected_ours: dict[str, str],
                s: dict[str, float], has_paper: bool) -> dict[str, Any] | None:
    """The row of ``r['modern']``, the SVM on ALL patterns trained by a modern solver (not
    in the paper): its own patterns, SVs, time and error in the ALL columns, our SELECTED
    cells of the dataset's row (``selected_ours``; the paper's numbers are "–": they stay
    with that row, which the report compares) and speed-up = its time / SELECTED's; None
    when the method has no records (an older run, or its fits failed). A method not run
    for want of its optional extra (scikit-learn-intelex: :mod:`lkm.methods.extras`) is a
    row whose ALL cells say so (``not run: needs lkm[fast]``)."""
    ds = r["dataset"]
    method = _method(ctx, r["modern"], "outputs.options.npps_table2.rows.modern")
    recs = ctx.ok_records(ds, method.name)
    m = setting_stats(recs)
    solver = _SOLVERS.get(str(method.params.get("backend", "")), method.name)
    skipped = not_run_cells(ctx.records).get((ds, method.name)) if not m else None
    if skipped:
        row: dict[str, Any] = {"dataset": f"{ds}, ALL on a modern solver ({solver})", "paper row": "–",
                               "note": f"not in the paper; SELECTED as in the {ds} row"}
        for col in _COLUMNS:  # the paper's numbers stay with the dataset's row; "not run" has none
            in_selected = col in _SELECTED_COLUMNS
            row[col] = _cell(selected_ours[col], "–") if in_selected and has_paper else (
                selected_ours[col] if in_selected else skipped)
        row["setting ALL"] = "–"
        row["setting SELECTED"] = selected_row["setting SELECTED"]
        row[ci_column("error ALL %")] = "–"
        row[ci_column("error SELECTED %")] = selected_row[ci_column("error SELECTED %")]
        row["splits"] = 0
        return row
    if not m:
        return None
    sel_seconds = s["svm_seconds"] + s["selection_seconds"]
    ours = {
        "patterns ALL": _n(m["n_train"]),
        "SVs ALL": _n(m["n_support"]),
        "time ALL (s)": _s(m["train_seconds"]),
        "speed-up ALL/SELECTED": f"{m['train_seconds'] / sel_seconds:.1f}×" if sel_seconds > 0 else "–",
        "error ALL %": _pct(RATE * m["error"]),
    }
    row = {"dataset": f"{ds}, ALL on a modern solver ({solver})", "paper row": "–",
           "note": f"not in the paper; SELECTED as in the {ds} row"}
    other = _other_session(recs, ctx.ok_records(ds, r["selected"]))
    if other:
        row["note"] += f"; timed in another session ({other}) than SELECTED: its seconds compare with care"
    for col in _COLUMNS:
        cell = selected_ours[col] if col in _SELECTED_COLUMNS else ours[col]
        row[col] = _cell(cell, "–") if has_paper else cell
    row["setting ALL"] = setting(recs)
    row["setting SELECTED"] = selected_row["setting SELECTED"]
    row[ci_column("error ALL %")] = records_interval(recs, error=True)
    row[ci_column("error SELECTED %")] = selected_row[ci_column("error SELECTED %")]
    row["splits"] = int(m["splits"])
    return row


_COLUMNS = ("patterns ALL", "patterns SELECTED", "SVs ALL", "SVs SELECTED", "time ALL (s)",
            "time SELECTED = SVM + NPPS (s)", "speed-up ALL/SELECTED", "error ALL %", "error SELECTED %")


def _paper_cells(p: dict[str, Any] | None) -> dict[str, str]:
    """The paper's numbers as the strings shown in brackets (None: the row has none)."""
    if not p:
        return {col: "–" for col in _COLUMNS}
    train, sv, sec, err = p.get("train", [None] * 2), p.get("sv", [None] * 2), p.get("seconds", [None] * 3), p.get("error", [None] * 2)
    fmt = {
        "patterns ALL": _n(train[0]), "patterns SELECTED": _n(train[1]),
        "SVs ALL": _n(sv[0]), "SVs SELECTED": _n(sv[1]),
        "time ALL (s)": f"{sec[0]:g}",
        "time SELECTED = SVM + NPPS (s)": f"{sec[1] + sec[2]:.2f} = {sec[1]:g} + {sec[2]:g}",
        "speed-up ALL/SELECTED": f"{sec[0] / (sec[1] + sec[2]):.1f}×",
        "error ALL %": f"{err[0]:.2f}", "error SELECTED %": f"{err[1]:.2f}",
    }
    return fmt


@table("npps_table2")
def _npps_table2(ctx: ReportContext) -> list[Path]:
    df = table2(ctx)
    modern = (" Rows '…, ALL on a modern solver' (not in the paper): the SVM on ALL patterns trained by that "
              "solver, the SELECTED columns repeated from the row above; their speed-up is their time / SELECTED's "
              "(below 1: the modern solver on all patterns is faster than NPPS + SVM)."
              if any(r.get("modern") for r in _table2_rows(ctx)) else "")
    return ctx.write_table(
        df, "npps_table2",
        f"{ctx.spec.name}: Shin and Cho, Table 2 — SVM on ALL training patterns vs on the patterns SELECTED "
        f"by NPPS; each cell: ours (paper), ours = mean over the splits. Time in seconds of the final fit (ours: LIBSVM "
        f"here, without the CV search of tuned parameters; the paper's: MATLAB QP or OSU SVM on 2004 hardware, so "
        f"compare ratios, not seconds). Settings: fixed values, or for parameters tuned by CV on each split's "
        f"training part the most frequent choice (splits that chose it). "
        f"{ctx.spec.describe_protocol()}; preprocessing {ctx.spec.preprocessing}.{modern}",
    )


# -- k sweep ------------------------------------------------------------------------------
def _k_methods(ctx: ReportContext, dataset: str) -> list[str]:
    """NPPS methods whose records make the k sweep of ``dataset``: the row's ``k_sweep``
    method and its SELECTED method (``npps_table2.rows``), else every ``npps_svm`` method
    with a ``k`` sweep."""
    for r in ctx.options("npps_table2").get("rows") or []:
        if r.get("dataset") == dataset and r.get("k_sweep"):
            known = {m.name for m in ctx.spec.methods}
            return [n for n in (r["k_sweep"], r["selected"]) if n in known]  # a --smoke run may lack one
    return [m.name for m in ctx.spec.methods if m.estimator == "npps_svm" and "k" in ctx.spec.swept_params(m)]


def k_sweep_table(ctx: ReportContext) -> pd.DataFrame:
    refs = {r["dataset"]: r["all"] for r in (ctx.options("npps_table2").get("rows") or [])}
    out: list[dict[str, Any]] = []
    ok = ctx.ok
    for d in ctx.spec.datasets:
        ds = d.id
        if ds in ctx.unavailable:
            out.append({"dataset": ds, "method": "–", "k": "–", "patterns": UNAVAILABLE})
            continue
        if ds in refs and not ctx.ok_records(ds, refs[ds]).empty:
            a = setting_stats(ctx.ok_records(ds, refs[ds]))
            out.append({"dataset": ds, "method": refs[ds], "k": "ALL", "patterns": _n(a["n_train"]),
                        "selected %": "100", "SVs": _n(a["n_support"]), "error %": _pct(RATE * a["error"]),
                        "NPPS s": "–", "SVM s": _s(a["train_seconds"]), "total s": _s(a["train_seconds"]),
                        "setting": setting(ctx.ok_records(ds, refs[ds]))})
        methods = _k_methods(ctx, ds)
        recs = ok[(ok["dataset"] == ds) & ok["method"].isin(methods)] if not ok.empty else ok
        if recs.empty:
            continue
        # k as used: fixed or swept (params), or chosen by CV (info.tuned_params).
        k_used = [(_info_raw(r, "tuned_params") or {}).get("k", r["params"].get("k")) for _, r in recs.iterrows()]
        for k, g in sorted(recs.groupby(pd.Series(k_used, index=recs.index)), key=lambda kv: kv[0]):
            s = setting_stats(g)
            out.append({
                "dataset": ds, "method": ", ".join(dict.fromkeys(g["method"])), "k": int(k),
                "patterns": _n(s["n_selected"]), "selected %": f"{RATE * s['n_selected'] / s['n_train']:.1f}",
                "SVs": _n(s["n_support"]), "error %": _pct(RATE * s["error"]),
                "NPPS s": _s(s["selection_seconds"]), "SVM s": _s(s["svm_seconds"]),
                "total s": _s(s["selection_seconds"] + s["svm_seconds"]),
                "setting": setting(g),
            })
    return pd.DataFrame(out)


@table("npps_k_sweep")
def _npps_k_sweep(ctx: ReportContext) -> list[Path]:
    return ctx.write_table(
        k_sweep_table(ctx), "npps_k_sweep",
        f"{ctx.spec.name}: NPPS's number of neighbours k — selected patterns, support vectors, test error and "
        f"seconds (selection and SVM on the selected set), with the SVM on ALL patterns as reference "
        f"({ctx.spec.describe_protocol()})",
    )


# -- Figs. 5-7: boundaries of ALL and SELECTED ------------------------------------------------
def _tuned_on(ctx: ReportContext, dataset: str, method: str, split_id: Any) -> dict[str, Any]:
    """The parameters CV chose for ``method`` on that split (its record's
    ``info.tuned_params``; {} for an untuned method)."""
    recs = ctx.ok_records(dataset, method)
    if recs.empty:
        return {}
    same = recs[recs["split"].astype(str) == str(split_id)]
    return dict(_info_raw((same if not same.empty else recs).iloc[0], "tuned_params") or {})


def _fit_pair(ctx: ReportContext, row: dict[str, Any], resolution: int) -> dict[str, Any] | None:
    from lkm.methods import METHODS
    from lkm.numerics.preprocessing import make_preprocessor
    from lkm.spec.seeds import with_seed

    dspec = next(d for d in ctx.spec.datasets if d.id == row["dataset"])
    ds = dspec.load(os.environ.get("LKM_DATA_DIR"))
    if ds.X.shape[1] != 2:
        return None
    split = ctx.spec.protocol.splits(ds)[0]
    X, y = ds.X[split.train], ds.y[split.train]
    Xt, yt = ds.X[split.test], ds.y[split.test]
    pre = make_preprocessor(ctx.spec.preprocessing).fit(X)

    def tr(A: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(pre.transform(A), dtype=np.float64)

    Xp = tr(X)
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.04 * (hi - lo)
    xx, yy = np.meshgrid(np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution),
                         np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution))
    grid = tr(np.column_stack([xx.ravel(), yy.ravel()]))
    m_all = _method(ctx, row["all"], "npps_boundaries")
    m_sel = _method(ctx, row["selected"], "npps_boundaries")
    p_all = {**with_seed(m_all, dict(m_all.params), ctx.spec), **_tuned_on(ctx, row["dataset"], m_all.name, split.id)}
    p_sel = {**with_seed(m_sel, dict(m_sel.params), ctx.spec), **_tuned_on(ctx, row["dataset"], m_sel.name, split.id)}
    svm_all = METHODS[m_all.estimator](**p_all).fit(Xp, y)
    npps_svm = METHODS[m_sel.estimator](**p_sel).fit(Xp, y)
    # The SVM of SELECTED is trained on the selected patterns (on all of them after a fallback).
    idx = np.arange(len(y)) if npps_svm.info_.get("fallback") else np.asarray(npps_svm.sample_indices_)
    panels = []
    def shown(p: dict[str, Any], keys: tuple[str, ...]) -> str:
        return ", ".join(f"{_SYMBOLS.get(k, k)}={format_value(p[k])}" for k in keys if k in p)

    for name, est, used, svm in ((f"ALL ({row['all']}: {shown(p_all, ('C', 'sigma'))})", svm_all,
                                  np.arange(len(y)), svm_all),
                                 (f"SELECTED ({row['selected']}: {shown(p_sel, ('C', 'sigma', 'k'))})", npps_svm,
                                  idx, npps_svm.svm_)):
        err = float(np.mean(est.predict(tr(Xt)) != yt)) if len(yt) else math.nan
        panels.append({"title": name, "decision": est.decision_function(grid).reshape(xx.shape),
                       "used": used, "sv": used[svm.support_], "error": err})
    params = {k: v for k, v in p_sel.items() if k != "random_state"}
    return {"dataset": row["dataset"], "X": X, "y": y, "classes": list(np.unique(y)), "xx": xx, "yy": yy,
            "panels": panels, "params": params, "paper": row.get("paper")}


def boundaries_figure(fits: list[dict[str, Any]], title: str) -> Any:
    plt = load_pyplot()
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(len(fits), 2, figsize=(10.5, 4.6 * len(fits)), squeeze=False)
    colors = ("tab:blue", "tab:red")
    for i, f in enumerate(fits):
        for j, panel in enumerate(f["panels"]):
            ax = axes[i, j]
            dec = panel["decision"]
            ax.contourf(f["xx"], f["yy"], dec > 0, levels=[-0.5, 0.5, 1.5], colors=colors, alpha=0.08)
            used = np.zeros(len(f["y"]), bool)
            used[panel["used"]] = True
            if not used.all():
                ax.scatter(f["X"][~used, 0], f["X"][~used, 1], s=5, color="0.75", lw=0, zorder=1)
            for c, color in zip(f["classes"], colors, strict=False):
                sel = used & (f["y"] == c)
                ax.scatter(f["X"][sel, 0], f["X"][sel, 1], s=9, color=color, lw=0, alpha=0.85, zorder=2)
            sv = panel["sv"]
            ax.scatter(f["X"][sv, 0], f["X"][sv, 1], s=34, facecolors="none", edgecolors="black", lw=0.6, zorder=3)
            ax.contour(f["xx"], f["yy"], dec, levels=[0.0], colors="black", linewidths=1.8, zorder=4)
            ax.contour(f["xx"], f["yy"], dec, levels=[-1.0, 1.0], colors="black", linestyles="--", linewidths=0.9,
                       zorder=4)
            ax.set_title(f"{f['paper'] or f['dataset']}: {panel['title']}\n{int(used.sum())} training patterns, "
                         f"{len(sv)} SVs, test error {RATE * panel['error']:.2f} %")
            ax.set_xlim(f["xx"].min(), f["xx"].max())
            ax.set_ylim(f["yy"].min(), f["yy"].max())
            ax.set_xlabel("x1")
            ax.set_ylabel("x2")
    handles = [Line2D([], [], color="black", lw=1.8, label="decision boundary f(x) = 0"),
               Line2D([], [], color="black", lw=0.9, ls="--", label="margins f(x) = ±1"),
               Line2D([], [], ls="", marker="o", mfc="none", mec="black", ms=6, label="support vector"),
               Line2D([], [], ls="", marker="o", color=colors[0], ms=4, label=f"class {fits[0]['classes'][0]}"),
               Line2D([], [], ls="", marker="o", color=colors[1], ms=4, label=f"class {fits[0]['classes'][1]}"),
               Line2D([], [], ls="", marker="o", color="0.75", ms=4, label="not selected by NPPS")]
    fig.legend(handles=handles, loc="lower center", ncol=6, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    return fig


@figure("npps_boundaries")
def _npps_boundaries(ctx: ReportContext) -> list[Path]:
    """Fits models (see the module docstring): Figs. 5-7, ALL and SELECTED per 2-D dataset."""
    opts = ctx.options("npps_boundaries")
    resolution = int(opts.get("resolution", 200))
    rows = [r for r in _table2_rows(ctx) if r["dataset"] not in ctx.unavailable]
    if opts.get("datasets"):
        wanted = list(opts["datasets"])
        rows = [r for r in rows if r["dataset"] in wanted]
    fits = [f for f in (_fit_pair(ctx, r, resolution) for r in rows) if f is not None]
    if not fits:
        return []
    p = fits[0]["params"]
    setting = ", ".join(f"{k}={p[k]}" for k in ("beta", "method") if k in p)
    title = (f"{ctx.spec.name}: Shin and Cho, Figs. 5–7 — SVM on ALL training patterns (left) and on the patterns "
             f"SELECTED by NPPS (right; {setting})\nfitted on the training part of the run's first split, "
             f"preprocessing {ctx.spec.preprocessing}; test error on its test part")
    return ctx.save_figure(boundaries_figure(fits, title), "npps_boundaries")


# -- Fig. 3: naive vs fast selection time ------------------------------------------------------
def _timing_methods(ctx: ReportContext) -> tuple[str, str]:
    opts = ctx.options("npps_selection_time")
    found = {}
    for kind in ("naive", "fast"):
        if opts.get(kind):
            found[kind] = _method(ctx, opts[kind], f"outputs.options.npps_selection_time.{kind}").name
            continue
        cands = [m.name for m in ctx.spec.methods if m.estimator == "npps_svm" and m.params.get("method") == kind]
        if not cands:
            raise SpecError(f"{ctx.spec.name}: npps_selection_time needs an npps_svm method with method: {kind}")
        found[kind] = cands[0]
    return found["naive"], found["fast"]


def selection_time_table(ctx: ReportContext) -> pd.DataFrame:
    naive, fast = _timing_methods(ctx)
    v_key = ctx.options("npps_selection_time").get("v", "n_selected")
    rows = []
    for d in ctx.spec.datasets:
        if d.id in ctx.unavailable:
            continue
        a, b = setting_stats(ctx.ok_records(d.id, naive)), setting_stats(ctx.ok_records(d.id, fast))
        if not a or not b:
            continue
        rows.append({
            "dataset": d.id, "M": _n(a["n_train"]), "v": a[v_key],
            "naive s": a["selection_seconds"], "fast s": b["selection_seconds"],
            "naive evaluated": a["n_evaluated"], "fast evaluated": b["n_evaluated"],
            "naive selected": a["n_selected"], "fast selected": b["n_selected"],
            "error naive %": RATE * a["error"], "error fast %": RATE * b["error"], "splits": a["splits"],
        })
    return pd.DataFrame(rows)


@table("npps_selection_time")
def _npps_selection_time_table(ctx: ReportContext) -> list[Path]:
    df = selection_time_table(ctx)
    if df.empty:
        return []
    shown = df.copy()
    for col in ("naive s", "fast s"):
        shown[col] = shown[col].map(lambda v: f"{v:.4g}")
    for col in ("v", "naive evaluated", "fast evaluated", "naive selected", "fast selected"):
        shown[col] = shown[col].map(_n)
    for col in ("error naive %", "error fast %"):
        shown[col] = shown[col].map(_pct)
    shown["naive / fast"] = [f"{a / b:.2f}" if b > 0 else "–" for a, b in zip(df["naive s"], df["fast s"], strict=True)]
    v_key = ctx.options("npps_selection_time").get("v", "n_selected")
    slopes = (f"log-log slopes against v: naive {loglog_fit(df['v'], df['naive s'])[0]:.2f}, "
              f"fast {loglog_fit(df['v'], df['fast s'])[0]:.2f}; fast against the patterns it "
              f"evaluated: {loglog_fit(df['fast evaluated'], df['fast s'])[0]:.2f}")
    return ctx.write_table(
        shown, "npps_selection_time",
        f"{ctx.spec.name}: NPPS selection seconds (mean over splits) at fixed M; v = naive NPPS's {v_key}; "
        f"{slopes} (paper, Fig. 3: naive O(M²), flat in v; fast O(vM), slope 1)",
    )


@figure("npps_selection_time")
def _npps_selection_time(ctx: ReportContext) -> list[Path]:
    df = selection_time_table(ctx)
    if df.empty:
        return []
    plt = load_pyplot()
    v_key = ctx.options("npps_selection_time").get("v", "n_selected")
    v = df["v"].to_numpy(float)
    order = np.argsort(v)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.3))
    styles = {"naive": ("tab:red", "s"), "fast": ("tab:blue", "o")}
    for kind in ("naive", "fast"):
        t = df[f"{kind} s"].to_numpy(float)
        color, marker = styles[kind]
        slope, intercept = loglog_fit(v, t)
        ax.plot(v[order], t[order], marker=marker, color=color, lw=1.4, label=f"{kind} NPPS (fitted slope {slope:.2f})")
        if not math.isnan(slope):
            keep = (v > 0) & (t > 0)
            xs = np.array([v[keep].min(), v[keep].max()])
            ax.plot(xs, 10 ** (slope * np.log10(xs) + intercept), color=color, ls=":", lw=1)
        ev = df[f"{kind} evaluated"].to_numpy(float)
        ax2.plot(v[order], ev[order], marker=marker, color=color, lw=1.4, label=f"{kind} NPPS")
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel(f"v = patterns in the overlap region (naive NPPS's {v_key.replace('n_', '')} count)")
    M = df["M"].iloc[0]
    ax.set_ylabel("selection time (s)")
    ax.set_title(f"selection time at fixed M = {M} (dotted: log-log fit)")
    ax2.set_ylabel("patterns evaluated (k-NN queries)")
    ax2.set_title("patterns whose neighbours were evaluated")
    for a in (ax, ax2):
        a.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)  # below: never on the data
        for x, label in zip(v, df["dataset"], strict=True):
            a.annotate(str(label), (x, a.get_ylim()[0]), fontsize=SMALL_PT, rotation=90, va="bottom", ha="center", color="0.4")
    fig.suptitle(f"{ctx.spec.name}: naive vs fast NPPS as the class overlap grows (Shin and Cho, Fig. 3). "
                 f"Paper's claim: naive O(M²), flat in v; fast O(vM), slope 1 in v at fixed M")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return ctx.save_figure(fig, "npps_selection_time")
