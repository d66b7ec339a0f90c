"""The generic figures (accuracy against a swept parameter, at the selected setting) and
the style every figure of lkm shares: :func:`load_pyplot`, :func:`method_colors`,
:func:`save_figure`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.numerics.metrics import SCORE_LABELS
from lkm.report.aggregation import edges_by_row
from lkm.report.formatting import (
    EDGE_MARK,
    RATE,
    format_params,
    format_selected,
    format_value,
    same_value,
)
from lkm.spec import Spec

#: The type sizes (points) and resolution of every figure lkm draws, set once by
#: :func:`load_pyplot`: shown at natural size, text is the same size in all of them.
FONT_PT, SMALL_PT, TITLE_PT, FIGURE_DPI = 9.0, 8.0, 10.0, 110


def load_pyplot() -> Any:
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
    from matplotlib.colors import ListedColormap, to_hex

    names = list(dict.fromkeys(m.name for m in spec.methods))
    n = len(names)
    def listed(name: str) -> Sequence[Any]:  # the colours of a qualitative colormap
        cmap = matplotlib.colormaps[name]
        assert isinstance(cmap, ListedColormap) and isinstance(cmap.colors, (list, tuple))
        return cmap.colors

    if n <= 10:
        palette = [to_hex(c) for c in listed("tab10")]
    elif n <= 20:
        palette = [to_hex(c) for c in listed("tab20")]
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


def sweep_figure(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec, param: str, base: Path, formats: Sequence[str]) -> list[Path]:
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
    datasets = [d for d in dict.fromkeys(agg["dataset"]) if np.any(counts.get(d, pd.Series(dtype=int)) > 1)]
    if not datasets:
        return []
    ncol = min(3, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(max(5.5, 4.2 * ncol), 3.2 * nrow + 0.6), squeeze=False)
    values = [p.get(param) for p in agg["params"] if isinstance(p.get(param), (int, float))]
    logx = bool(values) and min(values) > 0 and max(values) / min(values) > 20
    paper_handles: dict[str, Any] = {}
    colors = method_colors(spec)
    two_d = False
    for ax, ds in zip(axes.flat, datasets, strict=False):
        sub = agg[(agg["dataset"] == ds) & has_param]
        for method, g in sub.groupby("method", sort=False):
            mspec = next(m for m in spec.methods if m.name == method)
            swept = spec.swept_params(mspec)
            others = [k for k in swept if k != param]
            selected_over = param in (spec.selection.over or swept)
            color = colors[method]
            lines = list(g.groupby(g["params"].map(lambda p, others=others: format_params(p, others)), sort=False))
            if others:  # one curve, at the selected value of the others; every value: sweep_<x>_<y>
                top = _top_setting(best, ds, method, metric)
                lines = [(key, line) for key, line in lines if top in set(line["setting"])] or lines[:1]
                two_d = True
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
                r: Any  # a row of best (pandas-stubs types itertuples' fields as any scalar)
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
    others_note = "; a method with two swept parameters at its selected other value" if two_d else ""
    title_lines = _suptitle(fig, f"{spec.name}: {SCORE_LABELS[metric]} against {param} "
                            f"({spec.describe_protocol(short=True)}; band = ±1 std over splits{others_note})")
    _grid_layout(fig, bottom=0.55 + 0.22 * rows_of_legend, top=0.45 + 0.2 * title_lines)
    return save_figure(fig, base, formats, tight=False)


def _top_setting(best: pd.DataFrame, dataset: str, method: str, metric: str) -> str:
    """The setting of the highest-scoring selected row of ``method`` on ``dataset`` (several
    when ``selection.over`` leaves a parameter out); "" if none."""
    rows = best[(best["dataset"] == dataset) & (best["method"] == method)] if not best.empty else best
    if rows.empty:
        return ""
    return str(rows.sort_values([metric, "_order"], ascending=[False, True]).iloc[0]["setting"])


#: Up to this many values of a sweep's second parameter are lines of distinct colours
#: (:data:`_VALUE_COLORS`); more are a heatmap.
MAX_LINES = 4
#: One colour per value of the second parameter of a two-parameter sweep (ColorBrewer
#: Dark2: qualitative, told apart in print and by most colour-blind readers).
_VALUE_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a")
_VALUE_MARKERS = ("o", "s", "^", "D")
#: A heatmap annotates its cells with their values up to this many cells.
MAX_ANNOTATED_CELLS = 60


def sweep_pairs(spec: Spec, agg: pd.DataFrame) -> list[tuple[str, str]]:
    """``(x, y)`` for every two parameters a method sweeps together: ``x`` (the axis of
    lines or the heatmap's columns) the one of numbers only (no ``auto``) with more
    values, ``y`` the other."""
    pairs: list[tuple[str, str]] = []
    for m in spec.methods:
        swept = spec.swept_params(m)
        if len(swept) != 2:
            continue
        params = agg.loc[agg["method"] == m.name, "params"]
        counts = [len({str(p.get(k)) for p in params}) for k in swept]
        rank = [(all(_is_number(p.get(k)) for p in params), n) for k, n in zip(swept, counts, strict=True)]
        x, y = swept if rank[0] >= rank[1] else swept[::-1]
        if min(counts) > 1 and (x, y) not in pairs:
            pairs.append((x, y))
    return pairs


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _grid_values(params: pd.Series, key: str) -> list[Any]:
    """The values of ``key`` in ``params``: special values (``auto``) first, then numbers ascending."""
    values = list(dict.fromkeys(p.get(key) for p in params))
    special = [v for v in values if not _is_number(v)]
    return special + sorted(v for v in values if v not in special)


def _value_label(key: str, v: Any) -> str:
    return f"{key} = {format_value(v)}"


def sweep_grid_figure(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec, x: str, y: str, base: Path,
                      formats: Sequence[str]) -> list[Path]:
    """A two-parameter sweep as read: one panel per dataset and method sweeping ``x`` and
    ``y``; with at most :data:`MAX_LINES` values of ``y``, the score against ``x``, one line
    of its own colour per value of ``y`` (special values such as ``k = auto`` included),
    the other methods on the dataset as grey reference lines at their selected setting;
    with more, a heatmap of the score over the grid (``y`` rows, ``x`` columns, a colour
    bar, the values written in the cells of a small grid). Selected settings are circled
    (lines) or framed (heatmap)."""
    plt = load_pyplot()
    metric, label = _score_axis(spec)
    methods = {m.name for m in spec.methods if set(spec.swept_params(m)) == {x, y}}
    sub = agg[agg["method"].isin(methods)]
    panels = [(ds, m) for ds in dict.fromkeys(sub["dataset"]) for m in dict.fromkeys(sub["method"])
              if not sub[(sub["dataset"] == ds) & (sub["method"] == m)].empty]
    if not panels:
        return []
    xs, ys = _grid_values(sub["params"], x), _grid_values(sub["params"], y)
    heatmap = len(ys) > MAX_LINES
    numeric_x = [float(v) for v in xs if _is_number(v)]
    logx = bool(numeric_x) and min(numeric_x) > 0 and max(numeric_x) / min(numeric_x) > 20
    ncol = min(3 if not heatmap else 2, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    panel_w = max(4.2, 0.3 * len(xs) + 1.6) if heatmap else 4.2
    fig, axes = plt.subplots(nrow, ncol, figsize=(panel_w * ncol + 0.4, 3.3 * nrow + 1.2), squeeze=False,
                             layout="constrained")
    for ax, (ds, method) in zip(axes.flat, panels, strict=False):
        g = sub[(sub["dataset"] == ds) & (sub["method"] == method)]
        chosen = set(best.loc[(best["dataset"] == ds) & (best["method"] == method), "setting"]) if not best.empty \
            else set()
        title = f"{ds}: {method}"
        if heatmap:
            _heatmap(fig, ax, g, chosen, metric, label, x, y, xs, ys)
            scores = _reference_scores(best, ds, methods, metric)
            title += "".join(f"\n{m} at its selected setting: {v:.2f}" for m, v in scores.items())
        else:
            _value_lines(ax, g, chosen, metric, x, y, ys, logx)
            for i, (m, v) in enumerate(_reference_scores(best, ds, methods, metric).items()):
                ax.axhline(v, color="0.35", ls=("--", ":", "-.")[i % 3], lw=1.2, label=f"{m} (selected)")
            ax.set_ylabel(label)
        ax.set_title(title)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if not heatmap:
        from matplotlib.lines import Line2D

        handles, labels = axes.flat[0].get_legend_handles_labels()
        handles.append(Line2D([], [], marker="o", ms=8, mfc="none", mec="black", ls="none"))
        labels.append("selected")
        fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), frameon=False)
    how = "" if not heatmap else "; red frame: selected"
    fig.suptitle("\n".join(_wrapped_title(f"{spec.name}: {SCORE_LABELS[metric]} over {x} × {y} "
                                          f"({spec.describe_protocol(short=True)}; mean over splits{how})",
                                          fig.get_size_inches()[0])))
    return save_figure(fig, base, formats, tight=False)


def _value_lines(ax: Any, g: pd.DataFrame, chosen: set[str], metric: str, x: str, y: str, ys: list[Any],
                 logx: bool) -> None:
    """The score against ``x``, one line per value of ``y`` in its own colour, selected points circled."""
    for i, (color, v) in enumerate(zip(_VALUE_COLORS, ys, strict=False)):
        line = g[g["params"].map(lambda p, v=v: same_value(p.get(y), v))]
        line = line[line["params"].map(lambda p: isinstance(p.get(x), (int, float)))]
        if line.empty:
            continue
        xv = line["params"].map(lambda p: float(p[x])).to_numpy(float)
        o = np.argsort(xv)
        score = RATE * line[metric].to_numpy(float)[o]
        width = 1.4 + 1.6 * (len(ys) - 1 - i)  # the first widest: lines that coincide (auto = 3) stay in sight
        ax.plot(xv[o], score, marker=_VALUE_MARKERS[i], ms=3 + width, lw=width, color=color, alpha=0.9,
                label=_value_label(y, v), zorder=2 + i)
        for xi, si, setting in zip(xv[o], score, line["setting"].to_numpy()[o], strict=True):
            if setting in chosen:
                ax.plot([xi], [si], marker="o", ms=9, mfc="none", mec=color, mew=1.6, ls="none")
    if logx:
        _log_axis(ax)
    ax.set_xlabel(x)


def _reference_scores(best: pd.DataFrame, dataset: str, drawn: set[str], metric: str) -> dict[str, float]:
    """The other methods on ``dataset`` and their best selected score (%)."""
    out: dict[str, float] = {}
    for method in dict.fromkeys(best["method"]) if not best.empty else []:
        rows = best[(best["dataset"] == dataset) & (best["method"] == method)]
        if method not in drawn and not rows.empty and np.isfinite(rows[metric].max()):
            out[method] = RATE * float(rows[metric].max())
    return out


def _heatmap(fig: Any, ax: Any, g: pd.DataFrame, chosen: set[str], metric: str, label: str, x: str, y: str,
             xs: list[Any], ys: list[Any]) -> None:
    """The score over the ``ys`` × ``xs`` grid as coloured cells, the selected ones framed."""
    from matplotlib.patches import Rectangle

    grid = np.full((len(ys), len(xs)), np.nan)
    framed = []
    for params, value, setting in zip(g["params"], g[metric], g["setting"], strict=True):
        i = next((i for i, v in enumerate(ys) if same_value(params.get(y), v)), None)
        j = next((j for j, v in enumerate(xs) if same_value(params.get(x), v)), None)
        if i is None or j is None:
            continue
        grid[i, j] = RATE * float(value)
        if setting in chosen:
            framed.append((i, j))
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label=label, pad=0.02)
    ax.set_xticks(range(len(xs)), [format_value(v) for v in xs], rotation=90 if len(xs) > 6 else 0)
    ax.set_yticks(range(len(ys)), [format_value(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(False)
    if grid.size <= MAX_ANNOTATED_CELLS:
        low, high = np.nanmin(grid), np.nanmax(grid)
        for (i, j), value in np.ndenumerate(grid):
            if np.isfinite(value):
                dark = high == low or (value - low) / (high - low) < 0.6  # viridis is dark below
                ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=SMALL_PT,
                        color="white" if dark else "black")
    for i, j in framed:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="red", lw=2.0))


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
        r: Any  # a row (pandas-stubs types itertuples' fields as any scalar)
        for r in g.itertuples():
            value = getattr(r, metric)
            if value is None or not np.isfinite(value):
                continue
            setting = f", {format_params(r.params, swept)}" if len(g) > 1 and swept else ""
            ax.axhline(RATE * value, color=colors.get(str(method), "grey"), ls="--", lw=1.4,
                       label=f"{method} (no {param}{setting})")


#: Average width of a character and height of a line of tick-label text, in inches per point of type size.
_CHAR_IN_PER_PT, _LINE_IN_PER_PT = 0.6 / 72, 1.25 / 72


def best_figure(best: pd.DataFrame, spec: Spec, base: Path, formats: Sequence[str]) -> list[Path]:
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
        edges = edges_by_row(rows, spec)
        any_edge = any_edge or bool(edges)
        labels = []
        for i, r in enumerate(rows.itertuples()):
            mspec = next(m for m in spec.methods if m.name == r.method)
            setting = format_selected(r.params, spec.swept_params(mspec), edges.get(i, set()))
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


def _tight_bbox(fig: Any) -> Any:
    """What ``bbox_inches="tight"`` crops to, measured once with the Agg renderer and kept
    for every format: savefig's "tight" draws the whole figure once more per format to
    measure it (a PDF's crop can differ from its own measure by a fraction of a point)."""
    import matplotlib

    fig.draw_without_rendering()
    pad = matplotlib.rcParams["savefig.pad_inches"]
    return fig.get_tightbbox().padded(pad, pad)


def save_figure(fig: Any, base: Path, formats: Sequence[str], tight: bool = True) -> list[Path]:
    """Save ``fig`` as ``base.<fmt>`` for every format, atomically, and close it;
    ``tight``: crop to what is drawn (needed for legends outside the axes; costs a draw)."""
    import matplotlib.pyplot as plt

    from lkm.files import atomic_save

    out = []
    try:
        bbox = _tight_bbox(fig) if tight else None
        for fmt in formats:
            meta = {"CreationDate": None} if fmt == "pdf" else None

            def write(tmp: Path, fmt: str = fmt, meta: dict[str, Any] | None = meta) -> None:
                fig.savefig(tmp, format=fmt, bbox_inches=bbox, metadata=meta)

            out.append(atomic_save(base.with_suffix(f".{fmt}"), write))
    finally:
        plt.close(fig)
    return out
