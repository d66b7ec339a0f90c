"""Decision boundaries on a 2-D dataset (Tsuji et al., Fig. 3) and how much they agree.

- ``figures/boundary``: the zero level of each method's decision function over a scatter
  of the data, one axes; the sign regions of the first method are shaded lightly.
- ``tables/boundary_agreement``: for every pair of those methods, the fraction of the
  plotting grid (and of the data points) where both predict the same class: a number
  for the paper's claim that there is "almost no difference between the decision
  boundary of PL and that of LPL" (Sec. 9.1).

Unlike the other builders these FIT MODELS: each named method once, on the whole first
2-D dataset of the spec after the spec's preprocessing (fitted on all rows), at the
parameters of ``outputs.options.boundary``. That is cheap (two dimensions, hundreds of
points) and uses no stored record.

Options (``outputs.options.boundary``; ``boundary_agreement`` uses the same ones):

- ``methods``: method names (default: every method of the spec);
- ``dataset``: a dataset id (default: the first dataset with two features);
- ``resolution``: grid points per axis (default 200);
- any other key is a parameter value given to every chosen method that has that
  parameter, over the method's own fixed ``params`` (default ``sigma: 1.0``).
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.errors import SpecError, did_you_mean
from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE, format_params
from lkm.report.registry import ReportContext, figure, table

DEFAULT_PARAMS: dict[str, Any] = {"sigma": 1.0}
DEFAULT_RESOLUTION = 200
_OWN_KEYS = {"methods", "dataset", "resolution"}

CLASS_COLORS = ("tab:blue", "tab:red", "tab:green", "tab:purple", "tab:brown")
LINE_STYLES = (("black", "-", 2.0), ("darkorange", "--", 1.8), ("tab:green", ":", 2.0), ("tab:purple", "-.", 1.6))


@dataclass
class BoundaryFits:
    """Models fitted on one 2-D dataset and their outputs on a regular grid."""

    dataset: str
    X: np.ndarray  # raw coordinates (before preprocessing), as plotted
    y: np.ndarray
    classes: list
    xx: np.ndarray
    yy: np.ndarray
    params: dict[str, dict[str, Any]]  # method -> parameters it was fitted with
    decision: dict[str, np.ndarray]  # method -> decision values on the grid (grid shape), 2 classes
    grid_labels: dict[str, np.ndarray]  # method -> index into classes on the grid
    data_labels: dict[str, np.ndarray]  # method -> index into classes on the data points


def _choose(ctx: ReportContext, name: str) -> tuple[Any, list[Any], dict[str, Any], int]:
    opts = ctx.options("boundary")
    where = f"outputs.options.boundary (used by {name!r})"
    names = opts.get("methods") or [m.name for m in ctx.spec.methods]
    by_name = {m.name: m for m in ctx.spec.methods}
    for n in names:
        if n not in by_name:
            raise SpecError(f"{ctx.spec.name}: {where}.methods: no method named {n!r}{did_you_mean(str(n), by_name)}")
    methods = [by_name[n] for n in names]
    datasets = ctx.spec.datasets
    if "dataset" in opts:
        dsets = [d for d in datasets if d.id == opts["dataset"]]
        if not dsets:
            raise SpecError(f"{ctx.spec.name}: {where}.dataset: no dataset {opts['dataset']!r}"
                            f"{did_you_mean(str(opts['dataset']), [d.id for d in datasets])}")
        datasets = dsets
    params = {**DEFAULT_PARAMS, **{k: v for k, v in opts.items() if k not in _OWN_KEYS}}
    from lkm.methods import METHODS

    for key in params:
        if key not in DEFAULT_PARAMS and not any(key in METHODS[m.estimator]().get_params() for m in methods):
            raise SpecError(f"{ctx.spec.name}: {where}.{key}: none of {names} has a parameter {key!r}")
    resolution = int(opts.get("resolution", DEFAULT_RESOLUTION))
    return datasets, methods, params, resolution


#: The last fits, keyed by everything they depend on (the figure and the table share them).
_LAST: dict[str, BoundaryFits] = {}


def fit_boundaries(ctx: ReportContext, name: str = "boundary") -> BoundaryFits:
    """Fit the chosen methods on the whole chosen 2-D dataset and evaluate them on a grid.

    The result depends on the spec (datasets, preprocessing, methods, options, seed) and
    the data only, not on the records; the last one is reused by the next builder.
    """
    key = json.dumps([
        [d.model_dump() for d in ctx.spec.datasets], ctx.spec.preprocessing,
        [m.model_dump() for m in ctx.spec.methods], ctx.options("boundary"),
        getattr(ctx.spec.protocol, "seed", 0), sorted(ctx.unavailable), os.environ.get("LKM_DATA_DIR"),
    ], sort_keys=True, default=str)
    if key not in _LAST:
        _LAST.clear()
        _LAST[key] = _fit_boundaries(ctx, name)
    return _LAST[key]


def _fit_boundaries(ctx: ReportContext, name: str) -> BoundaryFits:
    from lkm.methods import METHODS
    from lkm.numerics.preprocessing import make_preprocessor
    from lkm.spec.seeds import with_seed

    datasets, methods, option_params, resolution = _choose(ctx, name)
    data_dir = os.environ.get("LKM_DATA_DIR")
    ds = None
    for d in datasets:
        if d.id in ctx.unavailable:
            continue
        loaded = d.load(data_dir)
        if loaded.X.shape[1] == 2:
            ds, ds_id = loaded, d.id
            break
    if ds is None:
        raise SpecError(f"{ctx.spec.name}: output {name!r} needs a dataset with two features; the spec has none")
    X, y = ds.X, ds.y
    pre = make_preprocessor(ctx.spec.preprocessing).fit(X)
    Xp = np.ascontiguousarray(pre.transform(X), dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.05 * (hi - lo)
    xs = np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution)
    ys = np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution)
    xx, yy = np.meshgrid(xs, ys)
    grid = np.ascontiguousarray(pre.transform(np.column_stack([xx.ravel(), yy.ravel()])), dtype=np.float64)
    classes = list(np.unique(y))
    params, decision, grid_labels, data_labels = {}, {}, {}, {}
    for m in methods:
        accepted = METHODS[m.estimator]().get_params()
        p = {**m.params, **{k: v for k, v in option_params.items() if k in accepted}}
        p = with_seed(m, p, ctx.spec)
        est = METHODS[m.estimator](**p).fit(Xp, y)
        index = {c: i for i, c in enumerate(classes)}
        grid_labels[m.name] = np.array([index[c] for c in est.predict(grid)]).reshape(xx.shape)
        data_labels[m.name] = np.array([index[c] for c in est.predict(Xp)])
        if len(classes) == 2:
            decision[m.name] = np.asarray(est.decision_function(grid)).reshape(xx.shape)
        params[m.name] = {k: v for k, v in p.items() if k != "random_state"}
    return BoundaryFits(ds_id, X, y, classes, xx, yy, params, decision, grid_labels, data_labels)


def agreement_table(fits: BoundaryFits) -> pd.DataFrame:
    """Per pair of methods: % of grid points and % of data points with the same predicted class."""
    rows = []
    for a, b in itertools.combinations(fits.grid_labels, 2):
        rows.append({
            "dataset": fits.dataset, "method A": a, "method B": b,
            "setting A": format_params(fits.params[a], list(fits.params[a])),
            "setting B": format_params(fits.params[b], list(fits.params[b])),
            "grid points": int(fits.xx.size),
            "same class % (grid)": round(RATE * float(np.mean(fits.grid_labels[a] == fits.grid_labels[b])), 2),
            "same class % (data points)": round(RATE * float(np.mean(fits.data_labels[a] == fits.data_labels[b])), 2),
        })
    return pd.DataFrame(rows)


def boundary_figure(fits: BoundaryFits, title: str) -> Any:
    plt = load_pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(7.4, 5.6))
    methods = list(fits.grid_labels)
    n_cls = len(fits.classes)
    colors = [CLASS_COLORS[i % len(CLASS_COLORS)] for i in range(n_cls)]
    first = methods[0]
    ax.contourf(fits.xx, fits.yy, fits.grid_labels[first], levels=np.arange(n_cls + 1) - 0.5,
                cmap=ListedColormap(colors), alpha=0.12, antialiased=True)
    handles = []
    for i, c in enumerate(fits.classes):
        sel = fits.y == c
        ax.scatter(fits.X[sel, 0], fits.X[sel, 1], s=9, color=colors[i], alpha=0.75, lw=0.2,
                   edgecolors="white", zorder=2)
        handles.append(Line2D([], [], ls="", marker="o", ms=4, color=colors[i], label=f"class {c} ({int(sel.sum())})"))
    for j, m in enumerate(methods):
        color, ls, lw = LINE_STYLES[j % len(LINE_STYLES)]
        if fits.decision:
            ax.contour(fits.xx, fits.yy, fits.decision[m], levels=[0.0], colors=[color], linestyles=[ls],
                       linewidths=lw, zorder=3)
        else:  # more than two classes: the borders between predicted classes
            ax.contour(fits.xx, fits.yy, fits.grid_labels[m], levels=np.arange(n_cls - 1) + 0.5, colors=[color],
                       linestyles=[ls], linewidths=lw, zorder=3)
        setting = format_params(fits.params[m], list(fits.params[m]))
        handles.append(Line2D([], [], color=color, ls=ls, lw=lw, label=f"{m} ({setting})"))
    handles.append(plt.Rectangle((0, 0), 1, 1, color="grey", alpha=0.2, label=f"shading: class regions of {first}"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_xlim(fits.xx.min(), fits.xx.max())
    ax.set_ylim(fits.yy.min(), fits.yy.max())
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.set_aspect("equal", adjustable="box")
    ax.set_title(title)
    fig.tight_layout()
    return fig


# -- registered outputs -----------------------------------------------------------------
@figure("boundary")
def _boundary(ctx: ReportContext) -> list[Path]:
    """Fits models (see the module docstring): decision boundaries on the first 2-D dataset."""
    fits = fit_boundaries(ctx, "boundary")
    sigma = {json.dumps(p.get("sigma")) for p in fits.params.values()}
    at = f" at sigma = {fits.params[next(iter(fits.params))]['sigma']:g}" if len(sigma) == 1 and "null" not in sigma else ""
    title = (f"{ctx.spec.name}: decision boundaries f(x) = 0 of {', '.join(fits.params)}{at}\n"
             f"on {fits.dataset}, each fitted once on all {len(fits.y)} points "
             f"(preprocessing: {ctx.spec.preprocessing})")
    return ctx.save_figure(boundary_figure(fits, title), "boundary")


@table("boundary_agreement")
def _boundary_agreement(ctx: ReportContext) -> list[Path]:
    """Fits models (see the module docstring): agreement of the boundary figure's methods."""
    fits = fit_boundaries(ctx, "boundary_agreement")
    return ctx.write_table(
        agreement_table(fits), "boundary_agreement",
        f"{ctx.spec.name}: share of the {fits.xx.shape[0]}×{fits.xx.shape[1]} plotting grid and of the "
        f"{len(fits.y)} data points where two methods predict the same class (models fitted on all of {fits.dataset})",
    )
