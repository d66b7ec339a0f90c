"""Tsuji, Kudo, Tanaka — "Localized Projection Learning": experiments and claims.

:func:`evaluate_claims` checks the paper's qualitative claims from our stored numbers
and :func:`timing_ratios` sets our spambase timings beside the paper's. Every number
comes from the run folders' records; nothing here fits a model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lkm.numerics.stats import Paired, format_p, paired_test
from lkm.papers.lpl.robustness import sensitivity
from lkm.report.formatting import RATE
from lkm.report.tables import write_table
from lkm.reproduction.claims import (
    better_claim,
    claim_row,
    claims_caption,
    comparable_claim,
    inconclusive,
    noninferior_claim,
    not_run,
    note_effect,
    smoke_labelled,
    verdict,
)
from lkm.reproduction.paper import paper_values
from lkm.reproduction.perturbed import Perturbed
from lkm.reproduction.runs import Run, load_run, paired_over, run_loader

KEY = "lpl"
TITLE = "Tsuji, Kudo, Tanaka — Localized Projection Learning"


#: Sec. 9.2: spambase seconds at sigma = 1 (training, testing), from paper_values.yaml.
PAPER_SPAMBASE_SECONDS: dict[str, tuple[float, float]] = {
    method: (float(seconds[0]), float(seconds[1]))
    for method, seconds in paper_values("lkm.papers.lpl")["spambase_seconds"].items() if method != "where"
}

#: "Comparable" / "almost the same" in claims (1) and (5): the 95 % CI of the paired
#: difference inside ± this many accuracy points (lkm.numerics.stats: equivalence).
CLOSE_POINTS = 2.0

#: "Costs little" in claim (6): the 95 % CI's lower bound of approximate − exact above −1 point.
LITTLE_POINTS = 1.0

#: Runs the accuracy claims read, rerun under the fragility perturbation (lkm.reproduction.perturbed).
PERTURBED = {
    "lpl_vs_svm": Perturbed(extra={"sigma": [1.0]}),  # sigma* of each set, and sigma = 1 (claim 4a)
    "lpl_synthetic": Perturbed(methods=("PL", "LPL"), selected_only=False),  # every sigma (claim 1b)
    "lpl_k_diabetes": Perturbed(),
    "lpl_annoy": Perturbed(only={"n_trees": [10], "search_k": [-1], "ef": [50]}),
}


def _claim_lpl_close_to_pl(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    results = {d: run.compare(d, "LPL", "PL") for d in run.datasets()}
    return comparable_claim(results, "LPL", "PL", f"LPL − PL at each sigma*, equivalence within ±{CLOSE_POINTS:g}",
                            CLOSE_POINTS / RATE)


def _claim_synthetic_pl_equals_lpl(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    pairs = {}
    for ds in dict.fromkeys(run.agg["dataset"]):
        g = run.agg[run.agg["dataset"] == ds]
        pl = {float(p["sigma"]): p for p, m in zip(g["params"], g["method"], strict=True) if m == "PL"}
        for p, m in zip(g["params"], g["method"], strict=True):
            sigma = float(p["sigma"])
            if m == "LPL" and sigma in pl and 0.01 - 1e-12 <= sigma <= 10 + 1e-9:
                pairs[f"sigma={sigma:.3g}"] = (run.setting(ds, "LPL", p), run.setting(ds, "PL", pl[sigma]))
    results = paired_over(pairs)
    if not results:
        return "no sigma in [0.01, 10]", None
    measure, ok = comparable_claim(results, "LPL", "PL", f"LPL − PL at each of {len(results)} sigmas in [0.01, 10], "
                                   f"equivalence within ±{CLOSE_POINTS:g} at every sigma", CLOSE_POINTS / RATE,
                                   need_all=True)
    worst = max(results, key=lambda k: abs(results[k].mean))
    return f"largest |mean difference| at {worst}: {results[worst].describe()}; " + measure.split("; ", len(results))[-1], ok


def _cell(frame: pd.DataFrame, row: str, column: str) -> np.float64:
    """The number at (``row`` label, ``column``) of a table of float columns, typed as one:
    pandas-stubs types ``frame.loc[row, column]`` as any scalar pandas can hold."""
    return np.float64(frame[column].loc[row])


#: (phase, the records' seconds column) of the timing claims.
PHASES = (("training", "fit_seconds"), ("testing", "predict_seconds"))


def log_seconds_paired(ok: pd.DataFrame, a: str, b: str, column: str) -> Paired:
    """Paired t of log10 seconds, method ``a`` − method ``b``, over the splits both have
    (``column``: fit_seconds or predict_seconds); 10 ** the mean is the geometric mean
    ratio a / b, which carries across machines where seconds do not."""
    seconds = ok.pivot_table(index="split", columns="method", values=column, aggfunc="mean")
    both = seconds[[a, b]].dropna()
    both = both[(both > 0).all(axis=1)]
    return paired_test(np.log10(both[a]), np.log10(both[b]))


def _claim_lpl_fastest_on_scaling(run: Run | None) -> tuple[str, bool | str | None]:
    """Claim 2a, decided per phase (training, testing) and competitor (PL, SVM) by a
    paired t on log10 seconds over every (training size, repeat) split the methods share
    (the ratio LPL / other is what carries across machines): holds when LPL is
    significantly faster in all four comparisons, contradicted when it is significantly
    slower in any, partly when faster in some; otherwise inconclusive."""
    if run is None:
        return "not run", None
    ok = run.records[run.records["status"] == "ok"]
    if not {"PL", "LPL", "SVM"} <= set(ok["method"]):
        return "PL, LPL and SVM are not all in the run", None
    results = {f"{phase} vs {other}": log_seconds_paired(ok, "LPL", other, column)
               for phase, column in PHASES for other in ("PL", "SVM")}
    faster = [k for k, r in results.items() if r.significant() and r.mean < 0]
    slower = [k for k, r in results.items() if r.significant() and r.mean > 0]
    weakest = max(results, key=lambda k: results[k].mean)
    note_effect({weakest: results[weakest]}, scale=1.0, unit=f" log10 s, {weakest}",
                test=f"paired t on log10 seconds over {results[weakest].n} sizes × repeats")
    n_max = ok["n_train"].max()
    at = ok[ok["n_train"] == n_max].groupby("method")[["fit_seconds", "predict_seconds"]].mean()
    text = "; ".join(f"{m} {at.loc[m, 'fit_seconds']:.3g} s / {at.loc[m, 'predict_seconds']:.3g} s"
                     for m in ("PL", "LPL", "SVM"))
    ratios = "; ".join(f"{k} ×{10 ** r.mean:.3g} [{10 ** r.ci_low:.3g}, {10 ** r.ci_high:.3g}], p {format_p(r.p)}"
                       if r.tested else f"{k} ×{10 ** r.mean:.3g} (untested)" for k, r in results.items())
    measure = (f"LPL / other seconds, geometric mean over {results[weakest].n} sizes × repeats [95% CI]: {ratios}; "
               f"at l = {int(n_max)}, training / testing: {text}")
    if len(faster) == len(results):
        return measure, True
    if slower:
        return measure, False
    return measure, "partly" if faster else inconclusive(results, 1.0, " log10 s")


def _claim_lpl_faster_on_spambase(run: Run | None) -> tuple[str, bool | str | None]:
    """Claim 2b, "remarkably faster" read as an order of magnitude (as in both of the
    paper's phases, 340× and 23×): per phase, a paired t on log10 seconds SVM − LPL over
    the folds; remarkable when the 95 % CI of the ratio lies at or above 10, not when it
    lies below. Holds when remarkable in both phases, partly in one, contradicted when below
    10× in both; otherwise inconclusive."""
    t = timing_ratios(run)
    if t is None or run is None:
        return "not run", None
    ok = run.records[run.records["status"] == "ok"]
    results = {phase: log_seconds_paired(ok, "SVM", "LPL", column) for phase, column in PHASES}
    paper = t.set_index("phase")["ratio SVM/LPL, paper"]
    weakest = min(results, key=lambda ph: results[ph].mean)
    note_effect({weakest: results[weakest]}, scale=1.0, unit=f" log10 s (SVM − LPL), {weakest}",
                test=f"paired t on log10 seconds over {results[weakest].n} folds")
    text = "; ".join(f"{ph}: SVM/LPL ×{10 ** r.mean:.3g} [{10 ** r.ci_low:.3g}, {10 ** r.ci_high:.3g}] "
                     f"(paper {paper[ph]:.3g})" if r.tested else f"{ph}: SVM/LPL ×{10 ** r.mean:.3g}, untested"
                     for ph, r in results.items())
    above = [ph for ph, r in results.items() if r.tested and r.ci_low >= 1.0]
    below = [ph for ph, r in results.items() if r.tested and r.ci_high < 1.0]
    measure = f"geometric mean over the folds [95% CI], remarkable = CI at or above 10×: {text}"
    if len(above) == len(results):
        return measure, True
    if above:
        return measure, "partly"
    return measure, False if len(below) == len(results) else inconclusive(results, 1.0, " log10 s")


def _claim_svm_beats_lpl(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    results = {d: run.compare(d, "SVM", "LPL") for d in run.datasets()}
    return better_claim(results, "SVM", "LPL", "SVM − LPL at each sigma*")


def _drop_at(run: Run, dataset: str, method: str, fixed: float = 1.0) -> pd.DataFrame:
    """Per split: accuracy at the selected sigma minus accuracy at sigma = ``fixed``."""
    best = run.scores(dataset, method)
    sel = run.best[(run.best["dataset"] == dataset) & (run.best["method"] == method)]
    if best.empty or sel.empty:
        return best
    at = run.setting(dataset, method, {**sel.iloc[0]["params"], "sigma": fixed})
    if at.empty:
        return at
    common = best.index.intersection(at.index)
    out = best.loc[common].copy()
    out["accuracy"] = best.loc[common, "accuracy"] - at.loc[common, "accuracy"]
    return out


def _claim_lpl_drop_smaller(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    # paired per split: SVM's drop minus LPL's drop (> 0: LPL loses less)
    results = paired_over({d: (_drop_at(run, d, "SVM"), _drop_at(run, d, "LPL")) for d in run.datasets()})
    if not results:
        return "sigma = 1 not in the run", None
    measure, ok = better_claim(results, "LPL", "SVM", "drop from sigma* to sigma = 1, SVM's − LPL's")
    s = sensitivity(run.agg, run.spec, "sigma", 1.0).set_index(["dataset", "method"])["drop"]
    means = ", ".join(f"{m} {RATE * s.xs(m, level='method').mean():.2f}" for m in ("LPL", "SVM", "PL")
                      if m in s.index.get_level_values("method"))
    return f"mean drop (points): {means}; {measure}", ok


def _claim_sonar_width(run: Run | None) -> tuple[str, bool | None]:
    if run is None:
        return "not run", None
    s = sensitivity(run.agg, run.spec, "sigma", 1.0, 0.02).set_index("method")
    text = "; ".join(f"{m} {s.loc[m, 'range_lo']:.3g}–{s.loc[m, 'range_hi']:.3g} ({s.loc[m, 'width_decades']:.2f} decades)"
                     for m in s.index)
    return (f"sigma range within 2 points of each method's best on sonar: {text}",
            bool(_cell(s, "LPL", "width_decades") > _cell(s, "SVM", "width_decades")))


def _claim_larger_k_helps(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    best = run.best[run.best["method"] == "LPL"]
    by_k = {str(p.get("k")): a for p, a in zip(best["params"], best["accuracy"], strict=True)}
    text = ", ".join(f"k={k}: {RATE * a:.2f}" for k, a in by_k.items())
    small = "5" if "5" in by_k else next((k for k in by_k if k != "17"), None)
    if small is None or "17" not in by_k:
        return f"best accuracy over sigma: {text}", None
    ds = run.datasets()[0]
    res = run.compare(ds, "LPL", "LPL", {"k": 17}, {"k": small})
    measure, ok = better_claim({ds: res}, "k = 17", f"k = {small}", f"LPL(k = 17) − LPL(k = {small}) at their sigma*")
    return f"best LPL accuracy over sigma: {text}; {measure}", ok


def _claim_k17_comparable_to_svm(run: Run | None) -> tuple[str, bool | str | None]:
    if run is None:
        return "not run", None
    best = run.best[run.best["method"] == "LPL"]
    if not any(str(p.get("k")) == "17" for p in best["params"]):
        return "k = 17 not in the run", None
    ds = run.datasets()[0]
    return comparable_claim({ds: run.compare(ds, "LPL", "SVM", {"k": 17})}, "LPL(k = 17)", "SVM",
                            f"LPL(k = 17) − SVM at their sigma*, equivalence within ±{CLOSE_POINTS:g}",
                            CLOSE_POINTS / RATE)


#: Each approximate backend of lpl_annoy: its method, its default setting (the one the
#: paired test reads) and how that setting is named.
APPROXIMATE = {
    "annoy": ("LPL-annoy", {"n_trees": 10, "search_k": -1}, "n_trees = 10"),
    "hnswlib": ("LPL-hnswlib", {"ef": 50}, "ef = 50"),
}


def _claim_approximate_costs_little(backend: str):
    """Claim (6) for one backend: the drop against exact neighbours over every swept
    setting, and a paired non-inferiority test at the backend's default setting."""
    method, default_params, default_name = APPROXIMATE[backend]

    def evaluate(run: Run | None) -> tuple[str, bool | str | None]:
        if run is None:
            return "not run", None
        exact = run.agg[run.agg["method"] == "LPL-exact"]
        approx = run.agg[run.agg["method"] == method]
        skipped = not_run(run, method)  # its optional extra is not installed
        if skipped:
            return f"{method} {skipped}", skipped
        if exact.empty or approx.empty:
            return f"LPL-exact / {method} not in the run", None
        drop = approx["dataset"].map(exact.set_index("dataset")["accuracy"]) - approx["accuracy"]
        default = approx["params"].map(lambda p: all(p.get(k) == v for k, v in default_params.items()))
        parts, pairs = [], {}
        for ds in dict.fromkeys(approx["dataset"]):
            d = drop[approx["dataset"] == ds]
            parts.append(f"{ds}: drop {RATE * d.min():+.2f} to {RATE * d.max():+.2f} points over {len(d)} settings")
            at = approx[(approx["dataset"] == ds) & default]
            ex = exact[exact["dataset"] == ds]
            if not at.empty and not ex.empty:
                pairs[ds] = (run.setting(ds, method, at.iloc[0]["params"]), run.setting(ds, "LPL-exact", ex.iloc[0]["params"]))
        if not pairs:
            return "; ".join(parts) + f"; {default_name} not in the run", None
        measure, ok = noninferior_claim(paired_over(pairs), method, "LPL-exact",
                                        f"{method} ({default_name}) − LPL-exact", LITTLE_POINTS / RATE)
        return "; ".join(parts) + "; " + measure, ok

    return evaluate


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
    ("6a", "approximate nearest neighbours cost little accuracy (annoy)", "Sec. 7",
     _claim_approximate_costs_little("annoy"), "lpl_annoy"),
    ("6b", "approximate nearest neighbours cost little accuracy (hnswlib)", "Sec. 7",
     _claim_approximate_costs_little("hnswlib"), "lpl_annoy"),
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
    load = run_loader(root, smoke)
    rows = []
    for number, claim, where, evaluate, name in CLAIMS:
        row = claim_row(number, claim, where, evaluate, [name], load, set(PERTURBED))
        if name in VARIANTS:
            variant, differs = VARIANTS[name]
            variant_measure, ok_variant = evaluate(load(variant, False))
            row["verdict on the variant"] = f"{verdict(ok_variant)} ({differs})"
            row["measure on the variant"] = variant_measure
        else:
            row["verdict on the variant"] = row["measure on the variant"] = "–"
        rows.append(row)
    table = pd.DataFrame(rows)
    return smoke_labelled(table) if smoke else table


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
            "LPL s, ours": round(float(_cell(mean, "LPL", col)), 4), "LPL s, paper": lpl_paper,
            "SVM s, ours": round(float(_cell(mean, "SVM", col)), 4), "SVM s, paper": svm_paper,
            "ratio SVM/LPL, ours": round(float(_cell(mean, "SVM", col) / _cell(mean, "LPL", col)), 1),
            "ratio SVM/LPL, paper": round(svm_paper / lpl_paper, 1),
        })
    return pd.DataFrame(rows)


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/lpl_claims[-smoke]/`` (claims and timing tables) after the runs."""
    out = root / ("lpl_claims-smoke" if smoke else "lpl_claims")
    written = write_table(evaluate_claims(root, smoke), out / "claims",
                          claims_caption(TITLE, smoke))
    timing = timing_ratios(load_run(root, "lpl_timing_spambase", smoke))
    if timing is not None:
        written += write_table(timing, out / "spambase_timing",
                               "spambase, sigma = 1: mean seconds per fold (4141 training / 460 test rows) beside "
                               "the paper's, and the SVM/LPL ratio, which carries across machines")
    return written


def claim_flags(table: pd.DataFrame) -> dict[str, bool | str | None]:
    """``{claim number: True | False | other verdict words ("partly", "inconclusive (…)",
    "fragile (...)") | None (not evaluated)}`` from an
    :func:`evaluate_claims` table."""
    return {r["#"]: {"holds": True, "contradicted": False}.get(r["verdict"], r["verdict"] if r["verdict"] != "n/a" else None)
            for _, r in table.iterrows()}


