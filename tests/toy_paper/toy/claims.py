"""The toy paper's claims, each decided by a paired test over the folds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lkm.reproduction.claims import claims_table, comparable_claim, write_claims

TITLE = "Toy, Example"


def lpl_matches_svm(run):
    """Claim 1: LPL is comparable with SVM (equivalence within ±5 points)."""
    if run is None:
        return "run not found", None
    results = {ds: run.compare(ds, "LPL", "SVM") for ds in run.datasets()}
    return comparable_claim(results, "LPL", "SVM", "accuracy", margin=0.05)


#: (number, the claim, where in the paper, evaluator, the runs it reads)
CLAIMS = [("1", "LPL is as accurate as SVM on two moons", "Sec. 4, Table 1", lpl_matches_svm, "toy_moons")]
#: Runs the fragility check reruns: none for the toy paper.
PERTURBED: dict = {}


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    return claims_table(CLAIMS, PERTURBED, root, smoke)


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    return write_claims("toy", TITLE, evaluate_claims(root, smoke), root, smoke)
