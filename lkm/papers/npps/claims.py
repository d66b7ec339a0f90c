"""Shin and Cho — NPPS pattern selection before SVM training, and kNN invariance under
kernel maps: experiments and claims.

:func:`evaluate_claims` checks the paper's claims from the stored records. Nothing here
fits a model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lkm.papers.npps.selection import selection_time_table, setting_stats
from lkm.report.aggregation import loglog_fit
from lkm.report.formatting import RATE
from lkm.reproduction.claims import claims_table, noninferior_claim, not_run, write_claims
from lkm.reproduction.paper import paper_values
from lkm.reproduction.perturbed import Perturbed
from lkm.reproduction.readings import reading_runs
from lkm.reproduction.runs import Run, paired_over

KEY = "npps"
TITLE = "Shin, Cho — NPPS and kNN invariance"


#: "Virtually no loss of accuracy": the 95 % CI's lower bound of SELECTED − ALL test
#: accuracy above −this many points (non-inferiority, lkm.numerics.stats).
NO_LOSS_POINTS = 1.0

#: Table 2's MNIST 3-8 row and Fig. 3's cost slopes, from paper_values.yaml.
PAPER = paper_values("lkm.papers.npps")
MNIST_3_8, SLOPES = PAPER["mnist_3_8"], PAPER["selection_cost_slopes"]

#: Runs the accuracy claims read, rerun under the fragility perturbation
#: (lkm.reproduction.perturbed). Not the MNIST rows (their cost; claim 3 has one split anyway).
PERTURBED = {"npps_table2": Perturbed()}


def table2_pairs(run: Run | None) -> list[dict]:
    """Per Table 2 row of a run: ALL and SELECTED statistics (means over splits); with the
    row's ``modern`` method recorded also ``modern_ratio`` (its seconds / SELECTED's) and
    ``error_modern``; ``modern_not_run`` instead (``not run: needs lkm[fast]``) when its
    optional extra is not installed."""
    if run is None:
        return []
    ctx = run.context()
    rows = ctx.options("npps_table2").get("rows", [])
    out = []
    for r in rows:
        a = setting_stats(ctx.ok_records(r["dataset"], r["all"]))
        s = setting_stats(ctx.ok_records(r["dataset"], r["selected"]))
        if a and s:
            selected_seconds = s["svm_seconds"] + s["selection_seconds"]
            out.append({"dataset": r["dataset"], "speedup": a["train_seconds"] / selected_seconds,
                        "error_all": a["error"], "error_selected": s["error"],
                        "selected_fraction": s["n_selected"] / s["n_train"]})
            m = setting_stats(ctx.ok_records(r["dataset"], r["modern"])) if r.get("modern") else {}
            if m:
                out[-1].update(modern_ratio=m["train_seconds"] / selected_seconds, error_modern=m["error"])
            elif r.get("modern") and not_run(run, r["modern"]):  # its optional extra is not installed
                out[-1].update(modern_not_run=not_run(run, r["modern"]))
    return out


def modern_solver_context(pairs: list[dict]) -> str:
    """The rows' SVM on ALL by a modern solver against NPPS + SVM, as context for a claim
    (not part of it: the paper's claims are about its 2004 solvers); "" when no row has one."""
    rows = [p for p in pairs if "modern_ratio" in p or "modern_not_run" in p]
    if not rows:
        return ""
    text = "; ".join(f"{p['dataset']} {p['modern_not_run']}" if "modern_not_run" in p else
                     f"{p['dataset']} {p['modern_ratio']:.2f}×, {RATE * (p['error_modern'] - p['error_selected']):+.2f} points"
                     for p in rows)
    return (f"; context, not the paper's claim: SVM on ALL by a modern solver (scikit-learn-intelex) against "
            f"SVM + NPPS, seconds ratio and error difference: {text}")


def _claim_speedup(runs: list[Run | None]) -> tuple[str, bool | str | None]:
    pairs = [p for run in runs for p in table2_pairs(run)]
    if not pairs:
        return "not run", None
    faster = sum(p["speedup"] > 1 for p in pairs)
    text = "; ".join(f"{p['dataset']} {p['speedup']:.2g}×" for p in pairs)
    return (f"ALL / (SVM + NPPS) seconds: {text}; faster on {faster} of {len(pairs)} rows{modern_solver_context(pairs)}",
            faster > len(pairs) / 2)


def _claim_no_accuracy_loss(runs: list[Run | None]) -> tuple[str, bool | str | None]:
    """Per Table 2 row, test accuracy SELECTED − ALL paired over the row's splits; "virtually
    no loss" read as non-inferiority: the 95 % CI's lower bound above −NO_LOSS_POINTS."""
    pairs = {}
    for run in runs:
        if run is None:
            continue
        for r in run.context().options("npps_table2").get("rows", []):
            a, b = run.scores(r["dataset"], r["selected"]), run.scores(r["dataset"], r["all"])
            if not a.empty and not b.empty:
                pairs[r["dataset"]] = (a, b)
    if not pairs:
        return "not run", None
    return noninferior_claim(paired_over(pairs), "SELECTED", "ALL", "test accuracy SELECTED − ALL",
                             NO_LOSS_POINTS / RATE)


def _claim_mnist_3_8(run: Run | None) -> tuple[str, bool | str | None]:
    pairs = {p["dataset"]: p for p in table2_pairs(run)}
    real = pairs.get("mnist-3-8")
    row, label = (real, "MNIST 3–8") if real else (pairs.get("mnist-3-8-standin"), "the MNIST-test 3–8 stand-in")
    if row is None:
        return "not run (MNIST training images unavailable and no stand-in row)", None
    gap = RATE * (row["error_selected"] - row["error_all"])
    paper_speedup = MNIST_3_8["speedup"]
    return (f"{label}: speed-up {row['speedup']:.2g}× (paper {paper_speedup:g}×), error SELECTED − ALL {gap:+.2f} points "
            f"(target ≤ +0.2; one predefined test split: no paired test over splits){modern_solver_context([row])}",
            bool(row["speedup"] >= paper_speedup and gap <= 0.2))


def _claim_fast_scales_with_v(run: Run | None) -> tuple[str, bool | str | None]:
    t = selection_time_table(run.context()) if run is not None else pd.DataFrame()
    if t.empty or len(t) < 3:
        return "not run", None
    v = t["v"].to_numpy(float)
    naive, fast, evaluated = (loglog_fit(v, t[c])[0] for c in ("naive s", "fast s", "fast evaluated"))
    smallest = t.iloc[int(np.argmin(v))]
    text = (f"log-log slope against v (M = {t['M'].iloc[0]}, v = {v.min():.0f}–{v.max():.0f}): naive time "
            f"{naive:.2f} (paper: {SLOPES['naive']:g}, O(M²)), fast time {fast:.2f} and fast's evaluated patterns "
            f"{evaluated:.2f} (paper: {SLOPES['fast']:g}, O(vM)); fast/naive time at the smallest v: {smallest['fast s'] / smallest['naive s']:.2f}")
    if abs(naive) < 0.3 and fast > 0.5:
        return text, True
    return text, "partly" if fast > naive + 0.2 else False


def _invariance(run: Run | None, study: str) -> pd.DataFrame:
    if run is None or "kind" not in run.records:
        return pd.DataFrame()
    recs = run.records[(run.records["kind"] == "study") & (run.records["status"] == "ok")]
    recs = recs[recs["study"] == study]
    rows = [dict(row, dataset=r["dataset"]) for _, r in recs.iterrows() for row in r["rows"]]
    return pd.DataFrame(rows)


def _claim_invariance(study: str, expect_full: bool):
    def evaluate(run: Run | None) -> tuple[str, bool | str | None]:
        t = _invariance(run, study)
        if t.empty:
            return "not run", None
        low = t.groupby("dataset")["fraction_same"].min()
        text = "; ".join(f"{d} {RATE * v:.1f}" for d, v in low.items())
        measure = f"lowest % of patterns whose k-NN set (k = 1..{int(t['k'].max())}) is the same in both spaces: {text}"
        full = bool((low >= 1.0).all())
        return measure, full if expect_full else not full
    return evaluate


#: (number, the paper's claim, where, evaluator, runs it reads)
CLAIMS = [
    ("1", "NPPS + SVM trains faster than SVM on all patterns", "Sec. 4, Table 2",
     _claim_speedup, ["npps_table2", "npps_table2_mnist"]),
    ("2", "with virtually no loss of accuracy", "Sec. 4, Table 2",
     _claim_no_accuracy_loss, ["npps_table2", "npps_table2_mnist"]),
    ("3", f"MNIST 3–8: {MNIST_3_8['speedup']:g}× faster, error no worse ({MNIST_3_8['error_all_percent']:.2f} → "
          f"{MNIST_3_8['error_selected_percent']:.2f} %)", MNIST_3_8["where"].split(" (")[0],
     _claim_mnist_3_8, ["npps_table2_mnist"]),
    ("4", "naive NPPS costs O(M²), fast NPPS O(vM) in the overlap size v", "Sec. 2, Fig. 3",
     _claim_fast_scales_with_v, ["npps_fast_vs_naive"]),
    ("5", "RBF kernel: k nearest neighbours are the same in input and feature space", "Sec. 3, Theorem 1",
     _claim_invariance("rbf-raw", True), ["npps_invariance"]),
    ("6", "polynomial kernel on unit-norm data: the same holds", "Sec. 3, Theorem 2",
     _claim_invariance("poly-unit-norm", True), ["npps_invariance"]),
    ("7", "polynomial kernel on raw data: not guaranteed", "Sec. 3, counter-example",
     _claim_invariance("poly-raw", False), ["npps_invariance"]),
]


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table from the run folders under ``root`` (written by ``lkm reproduce npps``)."""
    return claims_table(CLAIMS, PERTURBED, root, smoke, reading_runs(__package__))


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/npps_claims[-smoke]/claims`` after the runs."""
    return write_claims(KEY, TITLE, evaluate_claims(root, smoke), root, smoke)
