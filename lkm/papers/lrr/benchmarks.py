"""Li, Chen, Tang (local risk regularization), Secs. 5.2–5.3: outputs of
lkm/papers/lrr/specs/lrr_benchmark.yaml (Table 5, Fig. 3) and lkm/papers/lrr/specs/lrr_uci.yaml (Tables 6–8).

- ``tables/lrr_paired``: per dataset and pair of methods (default LRR vs RLS and
  LRR-cv vs RLS-cv), the mean accuracies, their mean difference over the splits both
  methods share with its 95 % confidence interval, wins/ties/losses, and the two-sided
  p-value of the paired t-test with the Nadeau–Bengio correction for resampled splits
  (:mod:`lkm.numerics.stats`, the test every claims table uses). Verdict "A better" / "B better"
  when p < alpha, else "not significant" (not evidence of no difference). This is
  the claims table for "LRR beats RLS": a paired test over realizations / repeats, not one split.
  ``outputs.options.lrr_paired: {pairs: [[A, B], ...], alpha: 0.05}``.
- ``tables/lrr_tuned``: for every method with a ``tune`` block, the parameters CV chose
  on the training part of each split (most frequent setting, how often, every setting
  chosen with its number of splits, mean CV score).
- ``figures/lrr_x0_sweep`` (Fig. 3): test accuracy against the index of the point of
  interest x0 (1-based, "training point 1 ... 35"), mean ± std over splits and the
  first split alone, with the reference method (RLS) as a horizontal line.
  ``outputs.options.lrr_x0_sweep: {method: NAME, reference: RLS}``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.numerics.stats import ALPHA
from lkm.report.figures import load_pyplot
from lkm.report.formatting import RATE
from lkm.report.registry import ReportContext, figure, table
from lkm.reproduction.paired import compare_scores, split_scores

DEFAULT_PAIRS = [["LRR", "RLS"], ["LRR-cv", "RLS-cv"]]


def paired_table(ctx: ReportContext) -> pd.DataFrame:
    """Per dataset and pair: A − B at each method's setting, paired over shared splits
    (:func:`lkm.reproduction.paired.compare`: corrected paired t-test, 95 % CI)."""
    opts = ctx.options("lrr_paired")
    alpha = float(opts.get("alpha", ALPHA))
    names = {m.name for m in ctx.spec.methods}
    pairs = [p for p in opts.get("pairs", DEFAULT_PAIRS) if p[0] in names and p[1] in names]
    rows = []
    for ds in [d.id for d in ctx.spec.datasets]:
        for a_name, b_name in pairs:
            a, b = split_scores(ctx.ok, ctx.best, ds, a_name), split_scores(ctx.ok, ctx.best, ds, b_name)
            common = a.index.intersection(b.index)
            if len(common) == 0:
                continue
            xa, xb = a.loc[common, "accuracy"].to_numpy(), b.loc[common, "accuracy"].to_numpy()
            res = compare_scores(a, b)
            if not res.tested:
                verdict = "too few splits"
            elif res.significant(alpha):
                verdict = f"{a_name} better" if res.mean > 0 else f"{b_name} better"
            else:
                verdict = "not significant"
            rows.append({
                "dataset": ds, "comparison": f"{a_name} vs {b_name}", "splits": len(common),
                "A (%)": f"{RATE * xa.mean():.2f} ± {RATE * xa.std(ddof=1) if len(xa) > 1 else 0:.2f}",
                "B (%)": f"{RATE * xb.mean():.2f} ± {RATE * xb.std(ddof=1) if len(xb) > 1 else 0:.2f}",
                "mean diff (pp)": round(RATE * res.mean, 2),
                "95% CI (pp)": "n/a" if not res.tested else f"[{RATE * res.ci_low:+.2f}, {RATE * res.ci_high:+.2f}]",
                "wins/ties/losses": f"{res.wins}/{res.ties}/{res.losses}",
                "p": "n/a" if not res.tested else f"{res.p:.3g}",
                f"verdict (alpha {alpha:g})": verdict,
            })
    return pd.DataFrame(rows)


@table("lrr_paired")
def _lrr_paired(ctx: ReportContext) -> list[Path]:
    df = paired_table(ctx)
    if df.empty:
        return []
    return ctx.write_table(
        df, "lrr_paired",
        f"{ctx.spec.name}: A vs B per dataset, test accuracy at each method's setting, paired over "
        f"{ctx.spec.describe_protocol()}; mean difference A − B with its 95% CI and the two-sided paired t-test "
        "of the per-split differences, Nadeau–Bengio corrected for overlapping training sets (lkm.numerics.stats)",
    )


def _fmt_choice(choice: str) -> str:
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in json.loads(choice).items())


def tuned_table(ctx: ReportContext) -> pd.DataFrame:
    tuned = [m.name for m in ctx.spec.methods if m.tune]
    ok = ctx.ok
    rows = []
    for ds in [d.id for d in ctx.spec.datasets]:
        for name in tuned:
            sub = ok[(ok["dataset"] == ds) & (ok["method"] == name)]
            if sub.empty:
                continue
            infos = [i if isinstance(i, dict) else {} for i in sub["info"]]
            chosen = Counter(json.dumps(i.get("tuned_params", {}), sort_keys=True) for i in infos)
            top, n = chosen.most_common(1)[0]
            cv = [i["cv_score"] for i in infos if "cv_score" in i]
            rows.append({
                "dataset": ds, "method": name, "most chosen": _fmt_choice(top),
                "chosen in": f"{n}/{len(sub)} splits", "distinct choices": len(chosen),
                "every choice (splits)": "; ".join(f"{_fmt_choice(c)} ({k})" for c, k in chosen.most_common()),
                "CV accuracy (%)": round(RATE * float(np.mean(cv)), 2) if cv else None,
                "test accuracy (%)": round(RATE * float(sub["accuracy"].mean()), 2),
            })
    return pd.DataFrame(rows)


@table("lrr_tuned")
def _lrr_tuned(ctx: ReportContext) -> list[Path]:
    df = tuned_table(ctx)
    if df.empty:
        return []
    return ctx.write_table(df, "lrr_tuned", f"{ctx.spec.name}: parameters chosen by CV on the training part of each split")


def _x0_method(ctx: ReportContext, opts: dict[str, Any]) -> str | None:
    if opts.get("method"):
        return str(opts["method"])
    return next((m.name for m in ctx.spec.methods if "x0" in m.sweep), None)


@figure("lrr_x0_sweep")
def _lrr_x0_sweep(ctx: ReportContext) -> list[Path]:
    opts = ctx.options("lrr_x0_sweep")
    method = _x0_method(ctx, opts)
    reference = opts.get("reference", "RLS")
    if method is None:
        return []
    ok = ctx.ok
    sub = ok[(ok["method"] == method) & ok["params"].map(lambda p: isinstance(p.get("x0"), (int, np.integer)))]
    datasets = [d.id for d in ctx.spec.datasets if d.id in set(sub["dataset"])]
    if not datasets:
        return []
    plt = load_pyplot()
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 3.4), squeeze=False)
    for ax, ds in zip(axes.flat, datasets, strict=True):
        d = sub[sub["dataset"] == ds].assign(x0=lambda f: f["params"].map(lambda p: int(p["x0"])))
        by = d.groupby("x0")["accuracy"]
        x = np.sort(np.array(list(by.groups))) + 1  # training point 1 .. n, as the paper counts
        mean = RATE * by.mean().sort_index().to_numpy()
        std = RATE * by.std(ddof=1).fillna(0).sort_index().to_numpy()
        n_splits = d["split"].nunique()
        (ln,) = ax.plot(x, mean, marker="o", ms=3, lw=1.4, label=f"{method}, mean over {n_splits} splits")
        ax.fill_between(x, mean - std, mean + std, color=ln.get_color(), alpha=0.15, lw=0, label="±1 std")
        first = sorted(d["split"].unique(), key=lambda s: (d.loc[d["split"] == s, "repeat"].iloc[0], s))[0]
        one = d[d["split"] == first].sort_values("x0")
        ax.plot(one["x0"] + 1, RATE * one["accuracy"], ls="--", lw=1, color="0.3", label=f"{method}, split {first}")
        ref = ok[(ok["method"] == reference) & (ok["dataset"] == ds)]
        if not ref.empty:
            ax.axhline(RATE * ref["accuracy"].mean(), color="C3", lw=1.3, label=f"{reference}, mean")
            r1 = ref[ref["split"] == first]
            if not r1.empty:
                ax.axhline(RATE * r1["accuracy"].mean(), color="C3", lw=1, ls="--", label=f"{reference}, split {first}")
        ax.set_title(ds)
        ax.set_xlabel("x0 = training point number")
        ax.set_ylabel("test accuracy (%)")
        ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)  # below: never on the data
    fig.suptitle(f"{ctx.spec.name}: accuracy against the point of interest x0 (Fig. 3)")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return ctx.save_figure(fig, "lrr_x0_sweep")
