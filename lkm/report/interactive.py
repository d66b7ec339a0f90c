"""Interactive twins of the report's figures (issue 43): hover values, zoom, legend
toggles and, for the benchmark, a data-set selector, built with plotly from the same
frames the PNGs are drawn from (the sweep aggregates and selection of
:mod:`lkm.report.aggregation`, the ranks, critical difference and seconds of
:mod:`lkm.report.ranking`). The PNGs stay: the Markdown report, LaTeX and readers without
scripts use them, and the HTML page shows each one until its twin replaces it.

Why plotly: plotly.js ships inside the Python wheel (:func:`plotly.offline.get_plotlyjs`),
so the report writes it once beside the page and works from a file with no network and no
CDN; Altair/Vega-Lite would need the vega JavaScript bundles from elsewhere.

Each builder returns a :class:`plotly.graph_objects.Figure`; nothing here reads files."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from lkm.numerics.metrics import SCORE_LABELS
from lkm.report.figures import method_colors
from lkm.report.formatting import RATE, format_params
from lkm.spec import Spec

#: The look every interactive figure shares (plotly's white template, the page's font).
LAYOUT: dict[str, Any] = {"template": "plotly_white", "font": {"family": "system-ui, sans-serif", "size": 12},
                          "hoverlabel": {"align": "left"}, "margin": {"l": 60, "r": 20, "t": 60, "b": 50}}
#: Height (pixels) of one row of sweep panels.
PANEL_PX = 320
#: A sweep figure's legend with more entries than this stands to the right of the panels.
LEGEND_BELOW = 8


def swept_datasets(agg: pd.DataFrame, param: str) -> list[str]:
    """The datasets on which some method takes more than one value of ``param`` (the
    sweep figure's panels)."""
    has = agg["params"].map(lambda p: isinstance(p.get(param), (int, float)))
    counts = agg[has].groupby(["dataset", "method"])["params"].agg(lambda ps: len({p[param] for p in ps}))
    return [d for d in dict.fromkeys(agg["dataset"]) if np.any(counts.get(d, pd.Series(dtype=int)) > 1)]


def _line(x: list[float], y: float, **kw: Any) -> go.Scatter:
    """A horizontal line at ``y`` across ``x``'s range, as a trace (it hovers and toggles)."""
    return go.Scatter(x=[min(x), max(x)], y=[y, y], mode="lines", **kw)


def sweep_plot(agg: pd.DataFrame, best: pd.DataFrame, spec: Spec, param: str) -> go.Figure | None:
    """The selection metric against ``param`` (``figures/sweep_<param>.png``'s twin): one
    panel per dataset, one curve per method (a method with two swept parameters: per value of
    the other, the one through its selected setting shown, the rest hidden in the legend),
    mean over splits with a ±1 std band, the selected value circled, methods without
    ``param`` as dashed lines at their selected setting, the paper's values as black
    diamonds; a legend entry toggles a curve in every panel. None without a swept dataset."""
    from plotly.subplots import make_subplots

    datasets = swept_datasets(agg, param)
    if not datasets:
        return None
    metric, label = spec.selection.metric, f"{SCORE_LABELS[spec.selection.metric]} (%)"
    ncol = min(3, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    fig = make_subplots(rows=nrow, cols=ncol, subplot_titles=datasets, horizontal_spacing=0.07,
                        vertical_spacing=min(0.12, 0.5 / nrow))
    values = [p[param] for p in agg["params"] if isinstance(p.get(param), (int, float))]
    logx = bool(values) and min(values) > 0 and max(values) / min(values) > 20
    colors, shown, two_d = method_colors(spec), set(), False

    def legend_once(name: str) -> bool:
        first = name not in shown
        shown.add(name)
        return first

    has_param = agg["params"].map(lambda p: isinstance(p.get(param), (int, float)))
    for i, ds in enumerate(datasets):
        at = {"row": i // ncol + 1, "col": i % ncol + 1}
        sub = agg[(agg["dataset"] == ds) & has_param]
        xs = [float(p[param]) for p in sub["params"]]
        for by_method, g in sub.groupby("method", sort=False):
            method = str(by_method)
            mspec = next(m for m in spec.methods if m.name == method)
            swept = spec.swept_params(mspec)
            others = [k for k in swept if k != param]
            selected_over = param in (spec.selection.over or swept)
            color = colors[method]
            lines = list(g.groupby(g["params"].map(lambda p, o=others: format_params(p, o)), sort=False))
            # as in the PNG, a method with two swept parameters shows the curve at its selected other
            # value; its other curves are in the legend, hidden until clicked
            selected = set(best["setting"][(best["dataset"] == ds) & (best["method"] == method)]) if not best.empty else set()
            shown_keys = {k for k, line in lines if selected & set(line["setting"])} or {lines[0][0]}
            two_d = two_d or bool(others)
            for by_key, line in lines:
                key = str(by_key)
                visible: bool | str = True if not others or by_key in shown_keys else "legendonly"
                x = line["params"].map(lambda p: float(p[param])).to_numpy(float)
                o = np.argsort(x)
                x, y = x[o], RATE * line[metric].to_numpy(float)[o]
                s = RATE * line[f"{metric}_std"].to_numpy(float)[o]
                name = method if not others else f"{method} ({key})"
                first = legend_once(name)
                fig.add_trace(go.Scatter(
                    x=x, y=y, mode="lines+markers", name=name, legendgroup=name, showlegend=first, visible=visible,
                    line={"color": color}, marker={"size": 5}, customdata=np.c_[s, line["splits"].to_numpy()[o]],
                    hovertemplate=(f"<b>{name}</b> on {ds}<br>{param} = %{{x:.4~g}}<br>{label}: %{{y:.2f}}"
                                   " ± %{customdata[0]:.2f} (std over %{customdata[1]} splits)<extra></extra>")), **at)
                fig.add_trace(go.Scatter(
                    x=np.r_[x, x[::-1]], y=np.r_[y + s, (y - s)[::-1]], fill="toself", fillcolor=color, opacity=0.12, mode="lines",
                    line={"width": 0}, hoverinfo="skip", legendgroup=name, showlegend=False, visible=visible), **at)
                chosen = best[(best["dataset"] == ds) & (best["method"] == method)] if selected_over else best.iloc[:0]
                for r in chosen[chosen["setting"].isin(line["setting"])].to_dict("records"):
                    fig.add_trace(go.Scatter(
                        x=[float(r["params"][param])], y=[RATE * r[metric]], mode="markers", legendgroup=name, visible=visible,
                        showlegend=False, marker={"size": 12, "color": "rgba(0,0,0,0)", "line": {"color": color, "width": 2}},
                        hovertemplate=f"<b>{name}</b>: selected {param} = %{{x:.4~g}}, %{{y:.2f}}<extra></extra>"), **at)
            for p in spec.paper.results if metric == "accuracy" else []:
                if p.metric != "accuracy" or p.dataset != ds or p.method != method:
                    continue
                if not p.params:
                    name = f"paper: {method} (its selected setting)"
                    fig.add_trace(_line(xs, RATE * p.value, name=name, legendgroup=name, showlegend=legend_once(name),
                                        line={"color": color, "dash": "dashdot", "width": 1},
                                        hovertemplate=f"the paper: {method} %{{y:.2f}}<extra></extra>"), **at)
                elif isinstance(p.params.get(param), (int, float)):
                    fig.add_trace(go.Scatter(
                        x=[p.params[param]], y=[RATE * p.value], mode="markers", name="paper", legendgroup="paper",
                        showlegend=legend_once("paper"), marker={"symbol": "diamond", "size": 8, "color": "black"},
                        hovertemplate=f"the paper: {method}, {param} = %{{x:.4~g}}: %{{y:.2f}}<extra></extra>"), **at)
        others_best = best[(best["dataset"] == ds) & ~best["method"].isin(set(sub["method"]))] if not best.empty else best
        for ref in others_best.to_dict("records"):
            value = ref[metric]
            if value is None or not np.isfinite(value):
                continue
            name = f"{ref['method']} (no {param})"
            fig.add_trace(_line(xs, RATE * value, name=name, legendgroup=name, showlegend=legend_once(name),
                                line={"color": colors.get(str(ref["method"]), "grey"), "dash": "dash"},
                                hovertemplate=f"<b>{ref['method']}</b> at its selected setting: %{{y:.2f}}<extra></extra>"), **at)
        fig.update_xaxes(title_text=param, type="log" if logx else "linear", **at)
        fig.update_yaxes(title_text=label if at["col"] == 1 else None, **at)
    title = [f"{spec.name}: {SCORE_LABELS[metric]} against {param}",
             f"{spec.describe_protocol(short=True)}; band = ±1 std over splits; circled: the selected value"]
    if two_d:
        title.append("a method with two swept parameters: its curve at the selected other value; "
                     "its other values in the legend (click one to show it)")
    many = len(shown) > LEGEND_BELOW  # a long legend goes to the right, scrolling, not over the panels
    legend = {"orientation": "v", "x": 1.02, "y": 1.0, "yanchor": "top"} if many else \
        {"orientation": "h", "y": -0.12 / nrow - 0.05}
    fig.update_layout(**{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 60 + 20 * len(title)}},
                      height=PANEL_PX * nrow + 140 + 20 * len(title), legend=legend,
                      title={"text": title[0] + "".join(f"<br><span style='font-size:12px'>{t}</span>" for t in title[1:]),
                             "font": {"size": 14}, "x": 0.02, "xanchor": "left"})
    return fig


def critical_difference_plot(ranks: dict[str, float], cd: float, groups: list[list[str]], n_datasets: int,
                             alpha: float) -> go.Figure:
    """``critical_difference.png``'s twin: each method (labelled with its average rank) at its
    average rank (1, the best, on the left) with a bar of ±CD/2 (two methods differ by the Nemenyi test when their bars
    do not overlap); the groups of methods the diagram joins (:func:`lkm.report.ranking.nemenyi_groups`)
    as thick bars above; hovering a method names the methods it is not separated from."""
    order = sorted(ranks, key=lambda m: ranks[m])
    k = len(order)
    near = {m: [o for o in order if o != m and abs(ranks[o] - ranks[m]) < cd] for m in order}
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[ranks[m] for m in order], y=[f"{m} ({ranks[m]:.2f})" for m in order], mode="markers", name=f"average rank ± CD/2 (CD = {cd:.2f})",
        marker={"size": 9, "color": "#2c3e50"}, error_x={"type": "constant", "value": cd / 2, "thickness": 1.2, "width": 4},
        customdata=[", ".join(near[m]) or "none" for m in order],
        hovertemplate="<b>%{y}</b>: average rank %{x:.4~g}<br>not separated (within CD): %{customdata}<extra></extra>"))
    for i, members in enumerate(groups):
        lo, hi = ranks[members[0]], ranks[members[-1]]
        fig.add_trace(go.Scatter(
            x=[lo, hi], y=[i, i], mode="lines", line={"width": 6, "color": "#7f8c8d"}, yaxis="y2",
            name="Nemenyi groups (not separated)", legendgroup="groups", showlegend=i == 0,
            hovertemplate=f"group {i + 1}: {', '.join(members)} (ranks {lo:.2f}–{hi:.2f})<extra></extra>"))
    rows_px, groups_px = 24 * k, 18 * max(len(groups), 1)
    height = rows_px + groups_px + 190
    split = (groups_px + 20) / (rows_px + groups_px + 40)  # the groups' share of the plotting area, at the bottom
    fig.update_layout(**{**LAYOUT, "margin": {"l": 120, "r": 20, "t": 110, "b": 60}}, height=height,
                      title={"text": f"Critical difference (Nemenyi, α = {alpha:g}): k = {k} methods, "
                                     f"N = {n_datasets} data sets", "font": {"size": 13}},
                      xaxis={"title": "average rank (1 = best)", "side": "top", "range": [0.5, k + 0.5], "dtick": 1},
                      yaxis={"autorange": "reversed", "domain": [split, 1.0], "type": "category"},
                      yaxis2={"domain": [0.0, split * 0.85], "range": [len(groups) - 0.5, -0.5], "showticklabels": False,
                              "title": {"text": "groups", "standoff": 4}, "showgrid": False, "zeroline": False},
                      legend={"orientation": "h", "y": -0.02, "yanchor": "top"})
    return fig


def accuracy_time_plot(ranks: dict[str, float], seconds: pd.DataFrame) -> go.Figure:
    """``accuracy_time.png``'s twin: each method's average rank (1 at the top) against the
    median over the data sets of its fit + predict seconds per outer fold (log scale);
    hovering names its slowest data set."""
    methods = [m for m in sorted(ranks, key=lambda m: ranks[m]) if m in seconds.columns and seconds[m].notna().any()]
    median = [float(seconds[m].dropna().median()) for m in methods]
    slowest = [f"{seconds[m].idxmax()} ({seconds[m].max():.3g} s)" for m in methods]
    fig = go.Figure(go.Scatter(
        x=median, y=[ranks[m] for m in methods], mode="markers+text", text=methods, textposition="top right",
        marker={"size": 9, "color": "#2c3e50"}, textfont={"size": 11}, customdata=slowest, name="methods", cliponaxis=False,
        hovertemplate="<b>%{text}</b><br>average rank %{y:.2f}<br>median %{x:.3g} s per fold<br>"
                      "slowest: %{customdata}<extra></extra>"))
    fig.update_layout(**{**LAYOUT, "margin": {"l": 60, "r": 90, "t": 60, "b": 50}}, height=520, showlegend=False,
                      title={"text": "Average rank against fit (tuning search + refit) + predict seconds per outer fold",
                             "font": {"size": 13}},
                      xaxis={"type": "log", "dtick": "D2", "title": "median seconds per outer fold over the data sets"},
                      yaxis={"autorange": "reversed", "title": "average rank (1 = best)"})
    return fig


def benchmark_plot(scores: pd.DataFrame, ranks: pd.DataFrame, average: dict[str, float]) -> go.Figure:
    """The benchmark as one figure with a data-set selector: the accuracy (%) of every
    method (ordered by average rank; a dot each) on the data set chosen, hovering gives its rank
    there; the first choice is the mean over the data sets beside the average ranks.
    ``scores`` and ``ranks`` are data sets × methods (the ranking table's numbers)."""
    order = sorted(scores.columns, key=lambda m: (average[m], list(scores.columns).index(m)))
    choices = [(f"mean over the {len(scores)} data sets", scores[order].mean(), pd.Series(average)[order], "average rank")]
    choices += [(str(d), scores.loc[d, order], ranks.loc[d, order], "rank") for d in scores.index]
    titles = [f"Mean accuracy (%) over the {len(scores)} data sets, methods by average rank"]
    titles += [f"Accuracy (%) on {d}, methods by average rank" for d in scores.index]
    fig = go.Figure()
    buttons, ranges = [], []
    for i, (name, acc, rank, word) in enumerate(choices):
        fig.add_trace(go.Scatter(  # dots, not bars: the axis does not start at zero
            x=order, y=acc.to_numpy(float), name=name, visible=i == 0, mode="markers+text",
            marker={"color": "#2c3e50", "size": 10}, customdata=rank.to_numpy(float), text=[f"{v:.1f}" for v in acc],
            textposition="top center", textfont={"size": 10}, cliponaxis=False,
            hovertemplate=f"<b>%{{x}}</b> on {name}<br>accuracy %{{y:.2f}} %<br>{word} %{{customdata:.2f}}<extra></extra>"))
        lo, hi = float(np.nanmin(acc)), float(np.nanmax(acc))
        ranges.append([max(0.0, lo - 0.15 * (hi - lo) - 1), min(100.0, hi + 0.1 * (hi - lo) + 1)])
        buttons.append({"label": name, "method": "update",
                        "args": [{"visible": [j == i for j in range(len(choices))]},
                                 {"yaxis.range": ranges[i], "title.text": titles[i]}]})
    fig.update_layout(**{**LAYOUT, "margin": {"l": 60, "r": 20, "t": 90, "b": 110}}, height=480, showlegend=False,
                      title={"text": titles[0], "font": {"size": 13}, "x": 0.02, "xanchor": "left"},
                      updatemenus=[{"buttons": buttons, "direction": "down", "x": 1.0, "xanchor": "right", "y": 1.2,
                                    "yanchor": "top", "showactive": True}],
                      annotations=[{"text": "data set:", "xref": "paper", "yref": "paper", "x": 0.78, "xanchor": "right",
                                    "y": 1.17, "yanchor": "top", "showarrow": False}],
                      xaxis={"tickangle": -40}, yaxis={"title": "accuracy (%)", "range": ranges[0]})
    return fig
