"""Li, Chen and Tang, "Local learning estimates by integral operators", Sec. 5.1: RLS and
LRR on the artificial two-class Gaussian data sets (lkm/papers/lrr/specs/lrr_artificial.yaml).

- ``tables/lrr_artificial``: Tables 2 and 3. Per data set and vicinity (soft, hard), the
  overall test accuracy of LRR¹, LRR², RLS, the paper's combination "LRR" — LRR¹ on the
  class-1 test points and LRR² on the class-2 ones, which USES THE TEST LABELS; computed
  from the per-class accuracies and test class counts by :func:`combined_accuracy` — and
  the label-free :class:`lkm.methods.risk.LocalRiskPair` (``lrr_pair``), each cell "ours
  (paper)" with the paper's value(s) from ``paper.results`` (and, for the combination,
  ``outputs.options.lrr_artificial.paper_oracle``).
- ``tables/lrr_per_class``: Table 1, per data set and TEST class the accuracy of LRR¹,
  LRR² and RLS (soft vicinity), ours (paper) with the paper's values from
  ``outputs.options.lrr_per_class.paper`` (``{dataset: {class: [LRR1, LRR2, RLS]}}``).
- ``tables/lrr_convention``: overall accuracy with the heat kernel as the paper writes it,
  ``(4πt)^(-d/2) exp(-||x-y||²/4t)``, beside the same methods with ``unit_diagonal: true``
  (the constant dropped, i.e. lam effectively multiplied by (4πt)^(d/2)).
- ``figures/lrr_x0``: Figs. 1-2, the first data set's training and test points with the
  x0 of LRR¹ (left) and LRR² (right) and the hard vicinity ``||x - x0|| < β/2`` dashed.
  It reloads the (synthetic) data and its split to draw the points and reads x0 from the
  records' ``info.x0_point``; it fits no model.

Options (``outputs.options``), all optional: ``lrr_artificial.methods``:
``{soft|hard: {lrr1, lrr2, pair}}`` method names (defaults LRR1, LRR2, LRR-pair and
LRR1-hard, LRR2-hard, LRR-pair-hard), ``rls`` (default RLS), ``classes``: the first and
second class labels (default: sorted labels of the records), ``paper_oracle``;
``lrr_convention.pairs``: ``[[as written, unit_diagonal], ...]`` (default: every method M
with a method M-unit); ``lrr_x0.dataset``, ``lrr_x0.methods`` ([LRR1, LRR2]).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE, format_rate
from lkm.report.registry import ReportContext, figure, table

DEFAULT_METHODS = {
    "soft": {"lrr1": "LRR1", "lrr2": "LRR2", "pair": "LRR-pair"},
    "hard": {"lrr1": "LRR1-hard", "lrr2": "LRR2-hard", "pair": "LRR-pair-hard"},
}


def combined_accuracy(first: Mapping[str, float], second: Mapping[str, float],
                      counts: Mapping[str, int], classes: tuple[str, str]) -> float:
    """The paper's "LRR" of Table 2: LRR¹ classifies the test points of ``classes[0]``,
    LRR² those of ``classes[1]``. ``first`` / ``second`` are the per-class accuracies of
    LRR¹ / LRR², ``counts`` the number of test points per class; the result is
    ``(a¹[c1]·n[c1] + a²[c2]·n[c2]) / (n[c1] + n[c2])``. It needs the test labels."""
    c1, c2 = classes
    n1, n2 = counts[c1], counts[c2]
    return (first[c1] * n1 + second[c2] * n2) / (n1 + n2)


def _cell(ours: float | None, paper: list[tuple[float, str]]) -> str:
    if not paper:
        return format_rate(ours)
    shown = ", ".join(f"{format_rate(v)} {src}".strip() for v, src in paper)
    return f"{format_rate(ours)} ({shown})"


def first_record(ctx: ReportContext, dataset: str, method: str) -> pd.Series | None:
    """The first successful record of ``method`` on ``dataset`` (one realization: the only one)."""
    rows = ctx.ok_records(dataset, method)
    return None if rows.empty else rows.iloc[0]


def _paper(ctx: ReportContext, dataset: str, method: str) -> list[tuple[float, str]]:
    return [(p.value, p.source.replace("Table ", "T")) for p in ctx.spec.paper.results
            if p.dataset == dataset and p.method == method and p.metric == "accuracy"]


def _dataset_ids(ctx: ReportContext) -> list[str]:
    present = set(ctx.ok["dataset"]) if not ctx.ok.empty else set()
    return [d.id for d in ctx.spec.datasets if d.id in present]


def class_pair(ctx: ReportContext, opts: dict[str, Any]) -> tuple[str, str]:
    """The first and second class labels: ``opts["classes"]``, else the sorted labels of the records."""
    if "classes" in opts:
        c1, c2 = (str(c) for c in opts["classes"])
        return c1, c2
    labels: set[str] = set()
    for pc in ctx.ok.get("per_class_accuracy", pd.Series(dtype=object)):
        if isinstance(pc, dict):
            labels |= set(pc)
    ordered = sorted(labels, key=lambda s: (float(s) if _is_number(s) else math.inf, s))
    if len(ordered) != 2:
        raise ValueError(f"lrr tables need a two-class problem; the records have classes {ordered}")
    return ordered[0], ordered[1]


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _load_split(ctx: ReportContext, dataset_id: str):
    """(X, y, first split) of a spec dataset, loaded as the runner loads it (no preprocessing)."""

    dspec = next(d for d in ctx.spec.datasets if d.id == dataset_id)
    ds = dspec.load(os.environ.get("LKM_DATA_DIR"))
    return ds.X, ds.y, ctx.spec.protocol.splits(ds)[0]


def class_counts_in_test(ctx: ReportContext, dataset_id: str) -> dict[str, int]:
    """Test points per class label in the (one) realization of ``dataset_id``."""
    _, y, split = _load_split(ctx, dataset_id)
    labels, counts = np.unique(y[split.test], return_counts=True)
    return {str(c): int(n) for c, n in zip(labels, counts, strict=True)}


@table("lrr_artificial")
def _lrr_artificial(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("lrr_artificial")
    methods = {**DEFAULT_METHODS, **opts.get("methods", {})}
    rls = opts.get("rls", "RLS")
    oracle_paper = {str(k): float(v) for k, v in opts.get("paper_oracle", {}).items()}
    classes = class_pair(ctx, opts)
    rows = []
    for ds in _dataset_ids(ctx):
        counts = class_counts_in_test(ctx, ds)
        r_rls = first_record(ctx, ds, rls)
        for vicinity, names in methods.items():
            r1, r2, rp = (first_record(ctx, ds, names[k]) for k in ("lrr1", "lrr2", "pair"))
            if r1 is None and r2 is None and rp is None:
                continue
            oracle = None
            if r1 is not None and r2 is not None:
                oracle = combined_accuracy(r1["per_class_accuracy"], r2["per_class_accuracy"], counts, classes)
            paper_oracle = [(oracle_paper[ds], "T2")] if vicinity == "soft" and ds in oracle_paper else []
            rows.append({
                "dataset": ds, "vicinity": vicinity,
                "LRR¹": _cell(None if r1 is None else r1["accuracy"], _paper(ctx, ds, names["lrr1"])),
                "LRR²": _cell(None if r2 is None else r2["accuracy"], _paper(ctx, ds, names["lrr2"])),
                "RLS": _cell(None if r_rls is None else r_rls["accuracy"], _paper(ctx, ds, rls)),
                "LRR-oracle (uses test labels)": _cell(oracle, paper_oracle),
                "LRR-pair (honest)": _cell(None if rp is None else rp["accuracy"], []),
                "n_test per class": " / ".join(str(counts.get(c, 0)) for c in classes),
            })
    caption = (
        f"{ctx.spec.name}: test accuracy (%), ours (paper, T2 = Table 2, T3 = Table 3). "
        f"LRR¹ / LRR²: x0 a random training point of class {classes[0]} / {classes[1]}. "
        "LRR-oracle is the paper's combination 'LRR' of Table 2: LRR¹ on the test points of "
        f"class {classes[0]} and LRR² on those of class {classes[1]} — it USES THE TEST "
        "LABELS to choose, so it is not a classifier; computed from per-class accuracies and "
        "test class counts. LRR-pair chooses per test point the LRR with larger |f(x)| (no "
        "labels). RLS is the same model in both rows."
    )
    if opts.get("note"):
        caption += " " + str(opts["note"]).strip()
    return ctx.write_table(pd.DataFrame(rows), "lrr_artificial", caption)


@table("lrr_per_class")
def _lrr_per_class(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("lrr_per_class")
    methods = opts.get("methods", ["LRR1", "LRR2", "RLS"])
    paper = {str(ds): {str(c): v for c, v in by_class.items()} for ds, by_class in opts.get("paper", {}).items()}
    classes = class_pair(ctx, ctx.options("lrr_artificial"))
    rows = []
    for ds in _dataset_ids(ctx):
        for c in classes:
            row: dict[str, Any] = {"dataset": ds, "test class": c}
            for j, m in enumerate(methods):
                rec = first_record(ctx, ds, m)
                ours = None if rec is None else rec["per_class_accuracy"].get(c)
                ref = paper.get(ds, {}).get(c)
                row[m] = _cell(ours, [(ref[j], "")] if ref is not None and j < len(ref) else [])
            rows.append(row)
    caption = (
        f"{ctx.spec.name}: Table 1 — test accuracy (%) on the test points of each class, ours "
        f"(paper), soft vicinity. {methods[0]} / {methods[1]}: x0 in class {classes[0]} / {classes[1]}."
    )
    return ctx.write_table(pd.DataFrame(rows), "lrr_per_class", caption)


@table("lrr_convention")
def _lrr_convention(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("lrr_convention")
    names = {m.name for m in ctx.spec.methods}
    pairs = opts.get("pairs") or [[m.name, f"{m.name}-unit"] for m in ctx.spec.methods if f"{m.name}-unit" in names]
    rows = []
    for ds in _dataset_ids(ctx):
        for written, unit in pairs:
            a, b = first_record(ctx, ds, written), first_record(ctx, ds, unit)
            if a is None and b is None:
                continue
            ra = None if a is None else float(a["accuracy"])
            rb = None if b is None else float(b["accuracy"])
            rows.append({
                "dataset": ds, "method": written,
                "(4πt)^(-d/2)·exp(-d²/4t) (paper)": format_rate(ra),
                "exp(-d²/4t) (unit_diagonal)": format_rate(rb),
                "difference (points)": "–" if ra is None or rb is None else f"{RATE * (rb - ra):+.2f}",
            })
    caption = (
        f"{ctx.spec.name}: test accuracy (%) with the heat kernel as the paper writes it and "
        "without its constant (4πt)^(-d/2); dropping the constant equals multiplying lam by "
        "(4πt)^(d/2) with the constant kept."
    )
    return ctx.write_table(pd.DataFrame(rows), "lrr_convention", caption)


@figure("lrr_x0")
def _lrr_x0(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("lrr_x0")
    ids = _dataset_ids(ctx)
    if not ids:
        return []
    ds = opts.get("dataset", ids[0])
    methods = opts.get("methods", ["LRR1", "LRR2"])
    X, y, split = _load_split(ctx, ds)
    plt = load_pyplot()
    fig, axes = plt.subplots(1, len(methods), figsize=(4.2 * len(methods), 4.6), squeeze=False)
    lo, hi = X[:, :2].min(axis=0) - 0.5, X[:, :2].max(axis=0) + 0.5
    labels = np.unique(y)
    colors = ["tab:blue", "tab:red", "tab:green", "tab:orange"]
    for ax, m in zip(axes[0], methods, strict=True):
        for k, c in enumerate(labels):
            tr = split.train[y[split.train] == c]
            te = split.test[y[split.test] == c]
            ax.scatter(X[te, 0], X[te, 1], s=10, facecolors="none", edgecolors=colors[k % 4],
                       linewidths=0.6, alpha=0.6, label=f"test, class {c}")
            ax.scatter(X[tr, 0], X[tr, 1], s=22, color=colors[k % 4], marker="o" if k == 0 else "s",
                       label=f"train, class {c}")
        rec = first_record(ctx, ds, m)
        title = m
        if rec is not None and isinstance(rec["info"], dict) and rec["info"].get("x0_point") is not None:
            x0 = np.asarray(rec["info"]["x0_point"], dtype=float)
            ax.scatter([x0[0]], [x0[1]], marker="*", s=260, color="gold", edgecolors="black", zorder=5, label="x0")
            beta = float(rec["info"].get("beta", 0.0))
            if beta > 0:
                ax.add_patch(plt.Circle(tuple(x0), beta / 2, fill=False, ls="--", color="gray"))
            title = f"{m}: x0 = ({x0[0]:.2f}, {x0[1]:.2f}), acc {RATE * rec['accuracy']:.2f}%"
        ax.set_title(title)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), frameon=False)
    fig.suptitle(f"{ds}: training (filled) and test (open) points, x0 (star), hard vicinity ||x - x0|| < β/2 (dashed)")
    return ctx.save_figure(fig, "lrr_x0")
