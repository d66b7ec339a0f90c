"""Yang, King, Lyu, Fig. 1: RLS against PRLS on the regression toy set (``yang-toy``).

- study ``prls_toy``: on one draw of the set (the first ``n_train`` rows train, the rest
  test), RLS (kernel RLS regression, :class:`lkm.methods.manifold.LapRLSRegressor` with
  no graph and no unpenalized part) at each of ``rls_gammas`` and PRLS
  (:class:`~lkm.methods.manifold.PRLSRegressor`, constants unpenalized) at each of
  ``prls_gammas``; rows: the test and training mean squared error per (method, γ), and
  the fitted curve on a grid of ``grid`` points of [0, 1].
- ``tables/prls_toy``: test MSE per method and γ, mean over the spec's draws (datasets),
  with the spread over γ (largest / smallest test MSE among γ > 0) — the paper's
  "stable in γ" made a number.
- ``figures/prls_toy``: Fig. 1 left and right: the curves of RLS and of PRLS for each γ
  over the training and test points of the first draw.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.figures import load_pyplot
from lkm.report.registry import ReportContext, figure, table
from lkm.studies import study

STUDY = "prls_toy"


def _check(params: dict[str, Any]) -> None:
    if not (isinstance(params.get("n_train"), int) and params["n_train"] >= 2):
        raise ValueError("n_train: give an integer >= 2")
    if not (isinstance(params.get("sigma"), (int, float)) and params["sigma"] > 0):
        raise ValueError("sigma: give a number > 0")
    for key in ("rls_gammas", "prls_gammas"):
        values = params.get(key)
        if not isinstance(values, list) or not values or any(
                isinstance(g, bool) or not isinstance(g, (int, float)) or g < 0 for g in values):
            raise ValueError(f"{key}: give a list of numbers >= 0")


@study(STUDY, check=_check, tables=("prls_toy",), figures=("prls_toy",))
def prls_toy(X: np.ndarray, y: np.ndarray, *, n_train: int = 20, sigma: float = 0.1,
             rls_gammas: list | None = None, prls_gammas: list | None = None, grid: int = 201) -> list[dict[str, Any]]:
    """Test/training MSE and fitted curves of RLS and PRLS per γ (Yang et al. Fig. 1)."""
    from lkm.methods.manifold import LapRLSRegressor, PRLSRegressor

    rls_gammas = [0.1, 0.01, 0.005, 0.0] if rls_gammas is None else rls_gammas
    prls_gammas = [1000.0, 1.0, 0.001, 0.0] if prls_gammas is None else prls_gammas
    if len(y) <= n_train:
        raise ValueError(f"n_train: {n_train} leaves no test row of {len(y)}")
    Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    xs = np.linspace(0.0, 1.0, grid)[:, None]
    rows: list[dict[str, Any]] = []
    models = [("RLS", g, LapRLSRegressor(kernel="gaussian", sigma=sigma, gamma_A=g, gamma_I=0.0)) for g in rls_gammas]
    models += [("PRLS", g, PRLSRegressor(kernel="gaussian", sigma=sigma, gamma=g)) for g in prls_gammas]
    for method, gamma, model in models:
        model.fit(Xtr, ytr)
        rows.append({"row": "error", "method": method, "gamma": float(gamma),
                     "test_mse": float(np.mean((model.predict(Xte) - yte) ** 2)),
                     "train_mse": float(np.mean((model.predict(Xtr) - ytr) ** 2)),
                     "solver": str(model.info_.get("solver", ""))})
        rows += [{"row": "curve", "method": method, "gamma": float(gamma), "x": float(x), "f": float(f)}
                 for x, f in zip(xs[:, 0], model.predict(xs), strict=True)]
    return rows


def toy_rows(ctx: ReportContext) -> pd.DataFrame:
    """Every result row of the run's ``prls_toy`` records, with its dataset."""
    rec = ctx.records
    if rec.empty or "kind" not in rec.columns:
        return pd.DataFrame()
    rec = rec[(rec["kind"] == "study") & (rec["status"] == "ok")]
    if "study_key" in rec.columns:
        rec = rec[rec["study_key"] == STUDY]
    out: list[dict[str, Any]] = []
    r: Any  # a record (pandas-stubs types its fields as any scalar; rows is a list of dicts)
    for r in rec.itertuples():
        out += [{"dataset": r.dataset, **row} for row in (r.rows or [])]
    return pd.DataFrame(out)


def _gamma_label(g: object) -> str:  # a float (a groupby key, which pandas-stubs types as any scalar)
    return f"{g:g}"


def toy_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per method and γ: mean test and training MSE (×10⁶) over the draws, and the
    method's spread over its γ > 0 (median over the draws)."""
    err = rows[rows["row"] == "error"]
    if err.empty:
        return pd.DataFrame()
    out = []
    for method, g in err.groupby("method", sort=False):
        spreads = spread_per_draw(err, str(method))
        spread = round(float(np.median(spreads)), 2) if len(spreads) else math.nan
        for gamma, h in g.groupby("gamma", sort=False):
            out.append({"method": method, "γ": _gamma_label(gamma),
                        "test MSE ×10⁶": f"{1e6 * h['test_mse'].mean():.1f} ± {1e6 * h['test_mse'].std(ddof=1):.1f}"
                        if len(h) > 1 else f"{1e6 * h['test_mse'].mean():.1f}",
                        "training MSE ×10⁶": f"{1e6 * h['train_mse'].mean():.1f}",
                        "draws": int(h["dataset"].nunique()),
                        "spread over γ > 0 (max/min test MSE), median": spread})
    return pd.DataFrame(out)


def spread_per_draw(err: pd.DataFrame, method: str) -> pd.Series:
    """Per draw (dataset): the largest over the smallest test MSE among γ > 0 of ``method``."""
    g = err[(err["method"] == method) & (err["gamma"] > 0)]
    return g.groupby("dataset", sort=True)["test_mse"].agg(lambda s: float(s.max() / s.min()))


@table("prls_toy")
def _prls_toy_table(ctx: ReportContext) -> list[Path]:
    df = toy_table(toy_rows(ctx))
    if df.empty:
        return []
    return ctx.write_table(
        df, "prls_toy",
        f"{ctx.spec.name}: test mean squared error ×10⁶ of RLS and PRLS per γ on the toy set (y = 1 + 0.005ε; "
        "the paper's Fig. 1 has curves, no numbers), mean over the draws; spread = largest / smallest test MSE "
        "over the γ > 0 of a method, median over the draws",
    )


@figure("prls_toy")
def _prls_toy_figure(ctx: ReportContext) -> list[Path]:
    rows = toy_rows(ctx)
    if rows.empty:
        return []
    first = next((d.id for d in ctx.spec.datasets if d.id in set(rows["dataset"])), rows["dataset"].iloc[0])
    rows = rows[rows["dataset"] == first]
    plt = load_pyplot()
    data = next(d for d in ctx.spec.datasets if d.id == first).load()  # generated: cheap to redraw
    n_train = int(ctx.spec.studies[0].params.get("n_train", 20)) if ctx.spec.studies else 20
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    curves = rows[rows["row"] == "curve"]
    for ax, method in zip(axes, ("RLS", "PRLS"), strict=True):
        for gamma, c in curves[curves["method"] == method].groupby("gamma", sort=False):
            ax.plot(c["x"], c["f"], lw=1.6, label=f"{method}, γ = {_gamma_label(gamma)}")
        ax.scatter(data.X[:n_train, 0], data.y[:n_train], s=18, c="k", marker="o", label="training points", zorder=3)
        ax.scatter(data.X[n_train:, 0], data.y[n_train:], s=22, facecolors="none", edgecolors="tab:red",
                   label="test points", zorder=3)
        ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
        ax.set_xlabel("x")
        ax.set_title(f"{method}: " + ("the constant is penalized, shrinks with γ" if method == "RLS"
                                      else "constants unpenalized: stable in γ"))
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), ncol=3, frameon=False)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("f(x)")
    sigma = ctx.spec.studies[0].params.get("sigma", 0.1) if ctx.spec.studies else 0.1
    fig.suptitle(f"Yang et al. Fig. 1 (ours): RLS vs PRLS on {first} (y = 1 + 0.005ε), Gaussian σ = {sigma:g}")
    fig.tight_layout()
    return ctx.save_figure(fig, "prls_toy")
