"""Yang, King, Lyu, Sec. 5: the semi-supervised outputs of lkm/papers/prls/specs/prls_isolet.yaml,
lkm/papers/prls/specs/prls_letter.yaml and lkm/papers/prls/specs/prls_usps.yaml (the toy set: :mod:`.toy`).

- ``tables/prls_semi``: per dataset (a ``tasks:`` family counts as one: Letter's 26
  one-vs-all tasks, USPS's 45 pairs) and method, the error % on the pool's unlabeled
  rows (transductive) and on the test set (inductive), averaged over every binary task
  and realization — the paper's "average binary error", not a multi-class error — with
  the paper's numbers beside (``outputs.options.prls_semi.table``: letter | usps |
  isolet, the block of ``paper_values.yaml``).
- ``figures/prls_isolet``: Fig. 2, error against the labeled speaker (1-30) for each pair
  of methods (``options.prls_isolet.pairs``, default RLS/PRLS and LapRLS/PLapRLS), on the
  unlabeled set (left) and on the test set (right).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lkm.numerics.stats import rate_interval
from lkm.report.figures import load_pyplot, method_colors
from lkm.report.formatting import RATE, ci_column, format_interval
from lkm.report.registry import ReportContext, figure, table
from lkm.reproduction.paper import paper_values
from lkm.reproduction.runs import most_chosen_setting


def families(ctx: ReportContext) -> dict[str, list[str]]:
    """Dataset ids by family: a ``tasks:`` expansion's binary tasks under the id they came
    from, any other dataset under its own id (spec order)."""
    out: dict[str, list[str]] = {}
    for d in ctx.spec.datasets:
        out.setdefault(d.task_of or d.id, []).append(d.id)
    return out


def family_errors(ctx: ReportContext, ids: list[str], method: str) -> pd.DataFrame:
    """Per (binary task, realization) of ``method``: test and unlabeled error (fractions)."""
    ok = ctx.ok
    if ok.empty:
        return pd.DataFrame(columns=["dataset", "split", "test", "unlabeled"])
    rows = ok[ok["dataset"].isin(ids) & (ok["method"] == method)]
    unl = rows["unlabeled_accuracy"] if "unlabeled_accuracy" in rows.columns else pd.Series(np.nan, index=rows.index)
    return pd.DataFrame({"dataset": rows["dataset"], "split": rows["split"], "test": 1.0 - rows["accuracy"].astype(float),
                         "unlabeled": 1.0 - unl.astype(float)}).reset_index(drop=True)


def _cell(values: pd.Series) -> str:
    v = values.dropna()
    if v.empty:
        return "–"
    return f"{RATE * v.mean():.2f}" + (f" ± {RATE * v.std(ddof=1):.2f}" if len(v) > 1 else "")


def _interval(errors: pd.Series) -> str:
    """The 95 % interval of the mean error over tasks × realizations: a plain t interval
    (no Nadeau–Bengio term: a realization draws a few labeled rows, its test set is fixed)."""
    v = errors.dropna()
    if len(v) < 2:
        return "–"
    return format_interval(*rate_interval(v, 1, 1, resampled=False))


def semi_table(ctx: ReportContext) -> pd.DataFrame:
    which = ctx.options("prls_semi").get("table")
    paper = paper_values(__package__).get(which, {}).get("rows", {}) if which else {}
    out = []
    for family, ids in families(ctx).items():
        for m in ctx.spec.methods:
            err = family_errors(ctx, ids, m.name)
            if err.empty:
                continue
            p = paper.get(m.name)
            out.append({
                "dataset": family, "method": m.name, "binary tasks": len(ids),
                "realizations": int(len(err)),
                "unlabeled error % (ours)": _cell(err["unlabeled"]),
                ci_column("unlabeled error % (ours)"): _interval(err["unlabeled"]),
                "unlabeled error % (paper)": "–" if p is None or p[0] is None else f"{p[0]:.2f}",
                "test error % (ours)": _cell(err["test"]),
                ci_column("test error % (ours)"): _interval(err["test"]),
                "test error % (paper)": "–" if p is None or p[1] is None else f"{p[1]:.2f}",
                "tuned setting (most chosen)": most_chosen_setting(
                    ctx.ok[ctx.ok["dataset"].isin(ids) & (ctx.ok["method"] == m.name)]),
            })
    return pd.DataFrame(out)


@table("prls_semi")
def _prls_semi(ctx: ReportContext) -> list[Path]:
    df = semi_table(ctx)
    if df.empty:
        return []
    which = ctx.options("prls_semi").get("table")
    where = paper_values(__package__).get(which, {}).get("where", "") if which else ""
    return ctx.write_table(
        df, "prls_semi",
        f"{ctx.spec.name}: error % on the pool's unlabeled rows and on the test set, mean ± std over every binary task "
        f"and realization (the paper's average binary error){'; paper: ' + where if where else ''} "
        f"({ctx.spec.describe_protocol()})",
    )


def speaker_curve(ctx: ReportContext, ids: list[str], method: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    """(speaker number, error %) of ``method`` per realization named ``speaker<k>``."""
    err = family_errors(ctx, ids, method)
    if err.empty:
        return np.array([]), np.array([])
    k = err["split"].str.extract(r"(\d+)$")[0].astype(float)
    order = np.argsort(k.to_numpy(), kind="stable")
    return k.to_numpy()[order], RATE * err[part].to_numpy()[order]


@figure("prls_isolet")
def _prls_isolet(ctx: ReportContext) -> list[Path]:
    pairs = ctx.options("prls_isolet").get("pairs", [["RLS", "PRLS"], ["LapRLS", "PLapRLS"]])
    fams = families(ctx)
    if not fams:
        return []
    family, ids = next(iter(fams.items()))
    if all(len(speaker_curve(ctx, ids, m, "test")[0]) == 0 for pair in pairs for m in pair):
        return []
    plt = load_pyplot()
    fig, axes = plt.subplots(len(pairs), 2, figsize=(11, 3.6 * len(pairs)), squeeze=False)
    colors = method_colors(ctx.spec)
    styles = [dict(marker="o", ls="--"), dict(marker="s", ls="-")]
    for i, pair in enumerate(pairs):
        for j, (part, title) in enumerate((("unlabeled", "unlabeled set (transductive)"), ("test", "test set (isolet5)"))):
            ax = axes[i][j]
            for m, style in zip(pair, styles, strict=False):
                x, e = speaker_curve(ctx, ids, m, part)
                if len(x):
                    ax.plot(x, e, ms=4, lw=1.2, label=f"{m} (mean {np.nanmean(e):.1f} %)", color=colors.get(m, "grey"),
                            **style)
            ax.set_title(f"{' vs '.join(pair)}: {title}")
            ax.set_xlabel("labeled speaker #")
            ax.set_ylabel("error %")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(loc="best", framealpha=0.9)
    fig.suptitle(f"Yang et al. Fig. 2 (ours): {family}, one labeled speaker per realization")
    fig.tight_layout()
    return ctx.save_figure(fig, "prls_isolet")


__all__ = ["families", "family_errors", "semi_table", "speaker_curve"]
