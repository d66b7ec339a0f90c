"""Cevikalp, Larlus, Douze, Jurie — local subspace classifiers: the claims of Sec. IV
checked from our stored records.

USPS has one fixed split, so two methods are compared on its 2007 test digits by
McNemar's exact test (:func:`lkm.numerics.stats.mcnemar`, from the records' ``errors``); image
segmentation by the corrected paired t-test over the 10 folds (:mod:`lkm.numerics.stats`). Every
claim reads the runs at the paper's K and q (not the tuned rows). Nothing here fits a model.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from lkm.numerics.stats import Paired, detectable_effect, mcnemar
from lkm.report.formatting import RATE
from lkm.reproduction.claims import (
    better_claim,
    claims_table,
    could_detect,
    equivalent,
    inconclusive,
    write_claims,
)
from lkm.reproduction.paper import paper_values
from lkm.reproduction.perturbed import Perturbed
from lkm.reproduction.readings import reading_runs
from lkm.reproduction.runs import Run

KEY = "cevikalp"
TITLE = "Cevikalp, Larlus, Douze, Jurie — local subspace classifiers"
USPS, SEGMENTATION = "cevikalp_usps", "cevikalp_segmentation"
#: The runs a two-run claim reads, in the order its evaluator receives them.
RUNS = [USPS, SEGMENTATION]

#: Runs the claims read, rerun under the fragility perturbation (lkm.reproduction.perturbed).
#: The tangent-distance rows of USPS are left out (tens of minutes); they enter the
#: perturbed evaluation unperturbed.
PERTURBED = {
    SEGMENTATION: Perturbed(methods=("NN", "HKNN", "LDCV", "Linear-SVM", "Nonlinear-SVM", "NHKNN", "NLDCV", "SVM-KNN")),
}

#: Table I / II rows at the paper's settings (method names of the specs).
USPS_ROWS = ("NN", "NN-TD", "HKNN", "LDCV", "Linear-SVM", "Nonlinear-SVM", "NHKNN-TD", "NLDCV-TD", "SVM-KNN-TD")
SEGMENTATION_ROWS = ("NN", "HKNN", "LDCV", "Linear-SVM", "Nonlinear-SVM", "NHKNN", "NLDCV", "SVM-KNN")


def split_errors(run: Run, dataset: str, method: str) -> tuple[int, list[int]] | None:
    """``(n_test, misclassified rows)`` of ``method``'s one record on a one-split run."""
    rows = run.ok[(run.ok["dataset"] == dataset) & (run.ok["method"] == method)]
    if len(rows) != 1 or "errors" not in rows.columns or not isinstance(rows["errors"].iloc[0], list):
        return None
    return int(rows["n_test"].iloc[0]), [int(r) for r, _ in rows["errors"].iloc[0]]


def compare(run: Run, dataset: str, a: str, b: str) -> Paired | None:
    """a − b on ``dataset``: McNemar's test on a one-split run, else the paired t-test over splits."""
    if run.ok[run.ok["dataset"] == dataset]["split"].nunique() == 1:
        ea, eb = split_errors(run, dataset, a), split_errors(run, dataset, b)
        if ea is None or eb is None:
            return None
        return mcnemar(ea[0], ea[1], eb[1])
    res = run.compare(dataset, a, b)
    return res if res.n else None


def _results(run: Run | None, a: str, b: str) -> dict[str, Paired]:
    if run is None:
        return {}
    out = {ds: compare(run, ds, a, b) for ds in run.datasets()}
    return {ds: r for ds, r in out.items() if r is not None}


def _test_words(run: Run | None) -> str:
    if run is None:
        return "not run"
    return "McNemar, exact" if run.ok["split"].nunique() == 1 else "corrected paired t over folds"


def _pairs_claim(runs: list[Run | None], pairs: list[tuple[str, str, str]], what: str) -> tuple[str, bool | str | None]:
    """Each (run key, a, b) pair must hold: a significantly better than b on every
    dataset (:func:`better_claim`). Holds when every pair holds, contradicted when one is,
    partly when some hold; else equivalent when every pair is, else inconclusive over
    all the pairs' tests."""
    cells: list[str] = []
    verdicts: list[bool | str | None] = []
    tests: list[Paired] = []
    for key, a, b in pairs:
        run = runs[RUNS.index(key)]
        res = _results(run, a, b)
        measure, ok = better_claim(res, a, b, f"{a} − {b} ({_test_words(run)})")
        cells.append(measure)
        verdicts.append(ok)
        tests += res.values()
    if not cells or all(v is None for v in verdicts):
        return f"{what}: not in the runs", None
    ok_all = all(v is True for v in verdicts)
    if ok_all:
        verdict: bool | str = True
    elif any(v is False for v in verdicts):
        verdict = False
    elif any(v is True for v in verdicts):
        verdict = "partly"
    elif all(v == equivalent() for v in verdicts):
        verdict = equivalent()
    else:
        verdict = inconclusive(tests)
    return " | ".join(cells), verdict


def _best_claim(runs: list[Run | None], method_by_run: dict[str, tuple[str, tuple[str, ...]]]) -> tuple[str, bool | str | None]:
    """NHKNN is the best: highest rate, and no other row significantly better (holds when
    it is also significantly better than every other row; "partly" when the highest but
    not significantly better than some; inconclusive when another row's rate is higher
    but not significantly, with what the comparisons could detect)."""
    cells: list[str] = []
    verdicts: list[bool | str | None] = []
    tests: list[Paired] = []
    for key, (best, rows) in method_by_run.items():
        run = runs[RUNS.index(key)]
        if run is None:
            continue
        for ds in run.datasets():
            found = {m: compare(run, ds, best, m) for m in rows if m != best}
            res = {m: r for m, r in found.items() if r is not None}
            if not res:
                continue
            beaten = [m for m, r in res.items() if r.better() > 0]
            above = [m for m, r in res.items() if r.mean < 0]
            lost = [m for m, r in res.items() if r.better() < 0]
            tests += res.values()
            acc = run.best_rate(ds, best)
            cells.append(f"{ds}: {best} {RATE * acc:.2f} %, significantly better than {len(beaten)} of {len(res)} rows"
                         + (f"; not significantly different from {', '.join(m for m in res if m not in beaten and m not in lost)}"
                            if len(beaten) + len(lost) < len(res) else "")
                         + (f"; higher point estimate: {', '.join(above)}" if above else "")
                         + (f"; significantly worse than {', '.join(lost)}" if lost else "")
                         + f" ({_test_words(run)})")
            verdicts.append(False if lost else True if len(beaten) == len(res) else "partly" if not above else "inconclusive")
    if not verdicts:
        return "not in the runs", None
    if all(v is True for v in verdicts):
        return "; ".join(cells), True
    if any(v is False for v in verdicts):
        return "; ".join(cells), False
    return "; ".join(cells), "partly" if all(v in (True, "partly") for v in verdicts) else inconclusive(tests)


def _human_claim(run: Run | None) -> tuple[str, bool | str | None]:
    """NHKNN-TD's USPS error below the 2.5 % human error: exact one-sided binomial tests;
    inconclusive with the normal approximation's detectable effect at the human rate,
    ``(z_{0.975} + z_{0.80}) · sqrt(h(1 − h)/n)``."""
    from scipy.stats import binomtest

    human = float(paper_values(__package__)["human_error_usps"]["value"]) / 100
    if run is None:
        return "not run", None
    for ds in run.datasets():
        e = split_errors(run, ds, "NHKNN-TD")
        if e is None:
            continue
        n, wrong = e[0], len(e[1])
        below = binomtest(wrong, n, human, alternative="less").pvalue
        above = binomtest(wrong, n, human, alternative="greater").pvalue
        measure = (f"{ds}: NHKNN-TD {RATE * wrong / n:.2f} % ({wrong}/{n}) against {RATE * human:g} %; exact binomial "
                   f"p(below) {below:.3g}, p(above) {above:.3g}")
        if below < 0.05 or above < 0.05:
            return measure, bool(below < 0.05)
        return measure, could_detect(RATE * detectable_effect(math.sqrt(human * (1 - human) / n), math.inf))
    return "NHKNN-TD not in the run", None


#: (number, the paper's claim, where, evaluator, runs)
CLAIMS = [
    ("1", "NHKNN has the best recognition rate on both sets", "Sec. IV-A, IV-B; Tables I-II",
     lambda runs: _best_claim(runs, {USPS: ("NHKNN-TD", USPS_ROWS), SEGMENTATION: ("NHKNN", SEGMENTATION_ROWS)}),
     RUNS),
    ("2", "every tangent-distance method beats its Euclidean counterpart on USPS", "Sec. IV-A",
     lambda runs: _pairs_claim(runs, [(USPS, "NN-TD", "NN"), (USPS, "NHKNN-TD", "HKNN"), (USPS, "NLDCV-TD", "LDCV")],
                               "TD vs Euclidean"), RUNS),
    ("3", "NHKNN beats the 2.5 % human error on USPS", "Sec. IV-A", _human_claim, [USPS]),
    ("4", "the nonlinear subspace classifiers beat their linear versions", "Sec. IV-B (and Table I)",
     lambda runs: _pairs_claim(runs, [(USPS, "NHKNN-TD", "HKNN"), (USPS, "NLDCV-TD", "LDCV"),
                                      (SEGMENTATION, "NHKNN", "HKNN"), (SEGMENTATION, "NLDCV", "LDCV")],
                               "nonlinear vs linear"), RUNS),
    ("5", "LDCV loses to NN on image segmentation (C·K must stay below d = 19)", "Sec. IV-B",
     lambda runs: _pairs_claim(runs, [(SEGMENTATION, "NN", "LDCV")], "NN vs LDCV"), RUNS),
]


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table from the run folders under ``root`` (written by ``lkm reproduce cevikalp``)."""
    return claims_table(CLAIMS, PERTURBED, root, smoke, reading_runs(__package__))


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/cevikalp_claims[-smoke]/claims`` after the runs."""
    return write_claims(KEY, TITLE, evaluate_claims(root, smoke), root, smoke)
