"""Tsuji, Kudo, Tanaka — "Localized Projection Learning": experiments and claims.

:data:`SPECS` lists the paper's experiments (run together by ``lkm reproduce lpl``);
:func:`evaluate_claims` checks the paper's qualitative claims from our stored numbers
and :func:`timing_ratios` sets our spambase timings beside the paper's. Every number
comes from the run folders' records; nothing here fits a model.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from lkm.papers.common import Experiment, Run, load_run, verdict
from lkm.report.core import RATE, write_table
from lkm.report.robustness import sensitivity

KEY = "lpl"
TITLE = "Tsuji, Kudo, Tanaka — Localized Projection Learning"


#: The paper's experiments, in the order `lkm reproduce lpl` runs them.
SPECS = [
    Experiment("configs/lpl_vs_svm.yaml"),
    Experiment("configs/lpl_vs_svm_scaled.yaml"),
    Experiment("configs/lpl_sigma_sonar.yaml"),
    Experiment("configs/lpl_k_diabetes.yaml"),
    Experiment("configs/lpl_k_diabetes_raw.yaml"),
    Experiment("configs/lpl_synthetic.yaml"),
    Experiment("configs/lpl_annoy.yaml"),
    Experiment("configs/lpl_scaling.yaml"),
    Experiment("configs/lpl_timing_spambase.yaml"),
]

#: Sec. 9.2: spambase seconds at sigma = 1 (training, testing).
PAPER_SPAMBASE_SECONDS = {"LPL": (0.019, 0.027), "SVM": (6.461, 0.632)}

#: "Close" in claims (1) and (5): within this many accuracy points.
CLOSE_POINTS = 2.0


def _pts(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{RATE * x:.2f}"


def _claim_lpl_close_to_pl(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    diffs = {d: run.best_rate(d, "LPL") - run.best_rate(d, "PL") for d in dict.fromkeys(run.best["dataset"])}
    within = sum(abs(v) <= CLOSE_POINTS / RATE for v in diffs.values())
    text = "; ".join(f"{d} {RATE * v:+.2f}" for d, v in diffs.items())
    return (f"LPL − PL at each sigma* (points): {text}; within {CLOSE_POINTS:g} points on {within} of {len(diffs)}",
            within > len(diffs) / 2)


def _claim_synthetic_pl_equals_lpl(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    rows = []
    for method in ("PL", "LPL"):
        g = run.agg[run.agg["method"] == method]
        rows.append(pd.Series(g["accuracy"].to_numpy(), index=g["params"].map(lambda p: float(p["sigma"]))))
    both = pd.concat(rows, axis=1, keys=["PL", "LPL"]).dropna()
    both = both[(both.index >= 0.01 - 1e-12) & (both.index <= 10 + 1e-9)]
    if both.empty:
        return "no sigma in [0.01, 10]", None
    gap = (both["LPL"] - both["PL"]).abs()
    return (f"max |LPL − PL| over {len(both)} sigmas in [0.01, 10]: {RATE * gap.max():.2f} points "
            f"(at sigma = {gap.idxmax():.3g}); mean {RATE * gap.mean():.2f}", bool(gap.max() <= CLOSE_POINTS / RATE))


def _claim_lpl_fastest_on_scaling(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    ok = run.records[run.records["status"] == "ok"]
    n_max = ok["n_train"].max()
    at = ok[ok["n_train"] == n_max].groupby("method")[["fit_seconds", "predict_seconds"]].mean()
    if not {"PL", "LPL", "SVM"} <= set(at.index):
        return "PL, LPL and SVM are not all in the run", None
    text = "; ".join(f"{m} {at.loc[m, 'fit_seconds']:.3g} s / {at.loc[m, 'predict_seconds']:.3g} s"
                     for m in ("PL", "LPL", "SVM"))
    faster = all(at.loc["LPL", c] < at.loc[m, c] for m in ("PL", "SVM") for c in ("fit_seconds", "predict_seconds"))
    return f"training / testing seconds at l = {int(n_max)}: {text}", faster


def _claim_lpl_faster_on_spambase(run: Run | None) -> tuple[str, bool | None]:
    t = timing_ratios(run)
    if t is None:
        return "not run", None
    ours = t.set_index("phase")
    text = "; ".join(f"{ph}: SVM/LPL = {ours.loc[ph, 'ratio SVM/LPL, ours']:.3g} (paper {ours.loc[ph, 'ratio SVM/LPL, paper']:.3g})"
                     for ph in ours.index)
    # "remarkably faster": an order of magnitude, as in both of the paper's phases (340x, 23x)
    remarkable = ours["ratio SVM/LPL, ours"] >= 10
    if remarkable.all():
        return text, True
    return text, "partly" if remarkable.any() else False


def _claim_svm_beats_lpl(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    datasets = list(dict.fromkeys(run.best["dataset"]))
    diffs = {d: run.best_rate(d, "SVM") - run.best_rate(d, "LPL") for d in datasets}
    wins = sum(v > 0 for v in diffs.values())
    text = "; ".join(f"{d} {RATE * v:+.2f}" for d, v in diffs.items())
    return f"SVM − LPL at each sigma* (points): {text}; SVM better on {wins} of {len(datasets)}", wins > len(datasets) / 2


def _claim_lpl_drop_smaller(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    s = sensitivity(run.agg, run.spec, "sigma", 1.0).set_index(["dataset", "method"])["drop"]
    lpl, svm = s.xs("LPL", level="method"), s.xs("SVM", level="method")
    smaller = int((lpl < svm).sum())
    return (f"mean drop from sigma* to sigma = 1: LPL {RATE * lpl.mean():.2f}, SVM {RATE * svm.mean():.2f}, "
            f"PL {RATE * s.xs('PL', level='method').mean():.2f} points; LPL's drop smaller on {smaller} of {len(lpl)} sets",
            bool(lpl.mean() < svm.mean()))


def _claim_sonar_width(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    s = sensitivity(run.agg, run.spec, "sigma", 1.0, 0.02).set_index("method")
    text = "; ".join(f"{m} {s.loc[m, 'range_lo']:.3g}–{s.loc[m, 'range_hi']:.3g} ({s.loc[m, 'width_decades']:.2f} decades)"
                     for m in s.index)
    return (f"sigma range within 2 points of each method's best on sonar: {text}",
            bool(s.loc["LPL", "width_decades"] > s.loc["SVM", "width_decades"]))


def _claim_larger_k_helps(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    best = run.best[run.best["method"] == "LPL"]
    by_k = {str(p.get("k")): a for p, a in zip(best["params"], best["accuracy"], strict=True)}
    text = ", ".join(f"k={k}: {RATE * a:.2f}" for k, a in by_k.items())
    if "5" not in by_k or "17" not in by_k:
        return f"best accuracy over sigma: {text}", None
    svm = run.best_rate(run.best["dataset"].iloc[0], "SVM")
    return (f"best LPL accuracy over sigma in [1, 100]: {text}; SVM {RATE * svm:.2f}",
            bool(by_k["17"] > by_k["5"]))


def _claim_k17_comparable_to_svm(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    best = run.best[run.best["method"] == "LPL"]
    k17 = [a for p, a in zip(best["params"], best["accuracy"], strict=True) if str(p.get("k")) == "17"]
    if not k17:
        return "k = 17 not in the run", None
    svm = run.best_rate(run.best["dataset"].iloc[0], "SVM")
    gap = svm - k17[0]
    return f"SVM − LPL(k = 17) at their sigma*: {RATE * gap:+.2f} points", bool(abs(gap) <= CLOSE_POINTS / RATE)


def _claim_annoy_costs_little(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    exact = run.agg[run.agg["method"] == "LPL-exact"].set_index("dataset")["accuracy"]
    approx = run.agg[run.agg["method"] == "LPL-annoy"]
    if exact.empty or approx.empty:
        return "LPL-exact / LPL-annoy not in the run", None
    drop = approx["dataset"].map(exact) - approx["accuracy"]
    default = approx["params"].map(lambda p: p.get("n_trees") == 10 and p.get("search_k") == -1)
    parts = []
    for ds in dict.fromkeys(approx["dataset"]):
        d = drop[approx["dataset"] == ds]
        at_default = drop[(approx["dataset"] == ds) & default]
        parts.append(f"{ds}: drop {RATE * d.min():+.2f} to {RATE * d.max():+.2f} points over {len(d)} settings"
                     + (f", {RATE * at_default.iloc[0]:+.2f} at n_trees = 10" if not at_default.empty else ""))
    ref = drop[default] if default.any() else drop
    return "; ".join(parts), bool(ref.max() <= 1.0 / RATE)


#: (number, the paper's claim, where, our measure, evaluator, run it reads)
CLAIMS = [
    ("1a", "LPL's recognition rates are comparable with PL's", "Sec. 9.1, Fig. 5",
     _claim_lpl_close_to_pl, "lpl_vs_svm"),
    ("1b", "on the synthetic set PL and LPL perform almost the same for sigma in [0.01, 10]", "Sec. 9.1, Fig. 3",
     _claim_synthetic_pl_equals_lpl, "lpl_synthetic"),
    ("2a", "LPL is the fastest of the three in training and testing (synthetic data)", "Sec. 9.2, Fig. 4",
     _claim_lpl_fastest_on_scaling, "lpl_scaling"),
    ("2b", "on spambase LPL is remarkably faster than SVM (sigma = 1)", "Sec. 9.2",
     _claim_lpl_faster_on_spambase, "lpl_timing_spambase"),
    ("3", "with their optimal sigma*, SVM is superior to LPL in most cases", "Sec. 9.2, Fig. 5",
     _claim_svm_beats_lpl, "lpl_vs_svm"),
    ("4a", "LPL loses less than SVM when sigma = 1 replaces sigma* (LPL more robust)", "Sec. 9.3, Fig. 7",
     _claim_lpl_drop_smaller, "lpl_vs_svm"),
    ("4b", "on sonar SVM is good only in a narrow range of sigma, LPL in a wider one", "Sec. 9.3, Fig. 6",
     _claim_sonar_width, "lpl_sigma_sonar"),
    ("5a", "larger k gives LPL better performance on diabetes", "Sec. 9.3, Fig. 8",
     _claim_larger_k_helps, "lpl_k_diabetes"),
    ("5b", "with k = 17 LPL is comparable with SVM on diabetes", "Sec. 9.3, Fig. 8",
     _claim_k17_comparable_to_svm, "lpl_k_diabetes"),
    ("6", "approximate nearest neighbours cost little accuracy", "Sec. 7",
     _claim_annoy_costs_little, "lpl_annoy"),
]

#: Runs whose claims are also checked on a variant run with other preprocessing (the
#: paper does not say how it scaled features): run -> (variant run, what differs).
VARIANTS = {
    "lpl_vs_svm": ("lpl_vs_svm_scaled", "features scaled to [-1, 1]"),
    "lpl_k_diabetes": ("lpl_k_diabetes_raw", "raw features"),
}


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table: each claim, our measure, and whether it holds, from the run
    folders under ``root`` (those written by ``lkm reproduce lpl``)."""
    runs: dict[str, Run | None] = {}

    def run(name: str) -> Run | None:
        if name not in runs:
            runs[name] = load_run(root, name, smoke)
        return runs[name]

    rows = []
    for number, claim, where, evaluate, name in CLAIMS:
        measure, ok = evaluate(run(name))
        row = {"#": number, "the paper's claim": claim, "where": where, "our measure": measure,
               "verdict": verdict(ok), "run": name}
        if name in VARIANTS:
            variant, differs = VARIANTS[name]
            variant_measure, ok_variant = evaluate(run(variant))
            row["verdict on the variant"] = f"{verdict(ok_variant)} ({differs})"
            row["measure on the variant"] = variant_measure
        else:
            row["verdict on the variant"] = row["measure on the variant"] = "–"
        rows.append(row)
    return pd.DataFrame(rows)


def timing_ratios(run: Run | None) -> pd.DataFrame | None:
    """Spambase seconds at sigma = 1 for LPL and SVM beside the paper's, and SVM/LPL ratios."""
    if run is None:
        return None
    ok = run.records[run.records["status"] == "ok"]
    mean = ok.groupby("method")[["fit_seconds", "predict_seconds"]].mean()
    if not {"LPL", "SVM"} <= set(mean.index):
        return None
    rows = []
    for i, (phase, col) in enumerate((("training", "fit_seconds"), ("testing", "predict_seconds"))):
        lpl_paper, svm_paper = PAPER_SPAMBASE_SECONDS["LPL"][i], PAPER_SPAMBASE_SECONDS["SVM"][i]
        rows.append({
            "phase": phase,
            "LPL s, ours": round(float(mean.loc["LPL", col]), 4), "LPL s, paper": lpl_paper,
            "SVM s, ours": round(float(mean.loc["SVM", col]), 4), "SVM s, paper": svm_paper,
            "ratio SVM/LPL, ours": round(float(mean.loc["SVM", col] / mean.loc["LPL", col]), 1),
            "ratio SVM/LPL, paper": round(svm_paper / lpl_paper, 1),
        })
    return pd.DataFrame(rows)


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/lpl_claims[-smoke]/`` (claims and timing tables) after the runs."""
    out = root / ("lpl_claims-smoke" if smoke else "lpl_claims")
    written = write_table(evaluate_claims(root, smoke), out / "claims",
                          f"{TITLE}: the paper's claims checked from our numbers")
    timing = timing_ratios(load_run(root, "lpl_timing_spambase", smoke))
    if timing is not None:
        written += write_table(timing, out / "spambase_timing",
                               "spambase, sigma = 1: mean seconds per fold (4141 training / 460 test rows) beside "
                               "the paper's, and the SVM/LPL ratio, which carries across machines")
    return written


def claim_flags(table: pd.DataFrame) -> dict[str, bool | str | None]:
    """``{claim number: True | False | "partly" | None (not evaluated)}`` from an
    :func:`evaluate_claims` table."""
    return {r["#"]: {"holds": True, "does not hold": False, "partly": "partly"}.get(r["verdict"])
            for _, r in table.iterrows()}


__all__ = ["CLAIMS", "SPECS", "evaluate_claims", "load_run", "timing_ratios", "write_summary"]
