"""Yang, King, Lyu — partially penalized RLS: the claims of Sec. 5 checked from our
stored records.

Semi-supervised comparisons pair two methods over the same (binary task, realization):
the paired t-test of their accuracies (:func:`lkm.numerics.stats.paired_test`, uncorrected: the
realizations share the test set but their labeled sets are disjoint draws), on the
unlabeled part of the pool and on the test set. The toy claim pairs the two methods'
spread of test error over γ across the draws of the toy set (log ratio, paired t).
Every claim reads the runs at the paper's parameters (not the tuned rows).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lkm.numerics.stats import Paired, paired_test
from lkm.reproduction.claims import (
    MARGIN,
    claims_table,
    equivalent,
    inconclusive,
    note_effect,
    write_claims,
)
from lkm.reproduction.readings import reading_runs
from lkm.reproduction.runs import Run

KEY = "prls"
TITLE = "Yang, King, Lyu — partially penalized RLS"
TOY, ISOLET, LETTER, USPS = "prls_toy", "prls_isolet", "prls_letter", "prls_usps"
#: No fragility reruns for this paper yet (see docs/reproductions/prls.md).
PERTURBED: dict[str, object] = {}

PARTS = {"unlabeled": "unlabeled_accuracy", "test": "accuracy"}


def paired(run: Run, a: str, b: str, part: str) -> Paired | None:
    """Accuracy of a − b on ``part`` (unlabeled | test), paired over (task, realization)."""
    col = PARTS[part]
    ok = run.ok
    if col not in ok.columns:
        return None
    key = ["dataset", "split"]
    xa = ok[ok["method"] == a].set_index(key)[col].astype(float)
    xb = ok[ok["method"] == b].set_index(key)[col].astype(float)
    shared = xa.index.intersection(xb.index)
    if len(shared) == 0:
        return None
    return paired_test(xa.loc[shared].to_numpy(), xb.loc[shared].to_numpy())


def _better(run: Run | None, a: str, b: str, where: str) -> tuple[str, bool | str | None]:
    """"a beats b on both parts": holds when significantly better on both; contradicted
    when b is significantly better on either; "partly" when on one; otherwise equivalent
    when both parts' 95 % CIs lie inside ±:data:`MARGIN`, else inconclusive."""
    if run is None:
        return "not run", None
    found = {part: paired(run, a, b, part) for part in PARTS}
    res = {p: r for p, r in found.items() if r is not None}
    if not res:
        return f"{a} / {b} not in the run", None
    shown = "test" if "test" in res else next(iter(res))
    note_effect({shown: res[shown]}, test=f"paired t over task × realization ({shown} rows)")
    cells = "; ".join(f"{p}: {r.describe()} ({r.wins} wins / {r.losses} losses of {r.n})" for p, r in res.items())
    measure = f"{where}: accuracy {a} − {b} in points [95% CI], p, paired over task × realization — {cells}"
    signs = [r.better() for r in res.values()]
    if any(s < 0 for s in signs):
        return measure, False
    if all(s > 0 for s in signs) and len(signs) == len(PARTS):
        return measure, True
    if any(s > 0 for s in signs):
        return measure, "partly"
    return measure, equivalent() if all(r.equivalent(MARGIN) for r in res.values()) else inconclusive(res)


def _slightly_worse(run: Run | None, a: str, b: str, margin: float) -> tuple[str, bool | str | None]:
    """"a slightly worse than b on the test set": b significantly better, by less than
    ``margin`` points (the CI's far end); contradicted when a is significantly better;
    otherwise inconclusive."""
    if run is None:
        return "not run", None
    r = paired(run, a, b, "test")
    if r is None:
        return f"{a} / {b} not in the run", None
    note_effect({"test": r}, test="paired t over task × realization (test rows)")
    measure = f"test accuracy {a} − {b}: {r.describe()} ({r.wins} wins / {r.losses} losses of {r.n})"
    if r.better() > 0:
        return measure, False
    if r.better() < 0:
        return measure, True if -r.ci_low * 100 < margin else "partly"
    return measure, inconclusive([r])


def _toy_stable(run: Run | None) -> tuple[str, bool | str | None]:
    """PRLS's test MSE varies less over its γ > 0 than RLS's over its own (paired over draws)."""
    from lkm.papers.prls.toy import spread_per_draw, toy_rows

    if run is None:
        return "not run", None
    rows = toy_rows(run.context())
    err = rows[rows["row"] == "error"] if not rows.empty else rows
    if err.empty:
        return "no toy records", None
    s_rls, s_prls = spread_per_draw(err, "RLS"), spread_per_draw(err, "PRLS")
    shared = s_rls.index.intersection(s_prls.index)
    r = paired_test(np.log(s_rls.loc[shared].to_numpy()), np.log(s_prls.loc[shared].to_numpy()))
    note_effect({"toy": r}, test=f"paired t over {r.n} draws", scale=1.0, unit=" (log RLS − log PRLS spread)")
    measure = (f"spread of test MSE over γ > 0 (largest / smallest), median over {len(shared)} draws: RLS "
               f"{np.median(s_rls.loc[shared]):.3g}, PRLS {np.median(s_prls.loc[shared]):.3g}; log RLS − log PRLS "
               f"{r.describe(scale=1.0)}")
    return measure, True if r.better() > 0 else False if r.better() < 0 else inconclusive([r], 1.0, " in log spread ratio")


#: (number, the paper's claim, where, evaluator, runs)
CLAIMS = [
    ("1", "PRLS is stable in γ where RLS is not (the toy set)", "Sec. 1, Fig. 1", _toy_stable, TOY),
    ("2", "PRLS beats RLS on Isolet, on the unlabeled and the test set", "Sec. 5.1, Fig. 2",
     lambda run: _better(run, "PRLS", "RLS", "Isolet"), ISOLET),
    ("3", "PLapRLS beats LapRLS on Isolet, on the unlabeled and the test set", "Sec. 5.1, Fig. 2",
     lambda run: _better(run, "PLapRLS", "LapRLS", "Isolet"), ISOLET),
    ("4", "PRLS improves RLS on Letter, on the unlabeled and the test set", "Sec. 5.2",
     lambda run: _better(run, "PRLS", "RLS", "Letter"), LETTER),
    ("5", "PLapRLS is slightly worse than LapRLS on Letter's test set (within 0.5 points)", "Sec. 5.2",
     lambda run: _slightly_worse(run, "PLapRLS", "LapRLS", 0.5), LETTER),
    ("6", "leaving the constant unpenalized hurts RLS with a polynomial kernel on USPS", "Sec. 5.3",
     lambda run: _better(run, "RLS", "RLS+constant", "USPS"), USPS),
]


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table from the run folders under ``root`` (written by ``lkm reproduce prls``)."""
    return claims_table(CLAIMS, PERTURBED, root, smoke, reading_runs(__package__))


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/prls_claims[-smoke]/claims`` after the runs."""
    return write_claims(KEY, TITLE, evaluate_claims(root, smoke), root, smoke)


__all__ = ["CLAIMS", "PERTURBED", "evaluate_claims", "paired", "write_summary"]
