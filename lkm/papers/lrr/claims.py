"""Li, Chen, Tang — local risk regularization (LRR) against RLS: experiments and claims.

:func:`evaluate_claims` checks the paper's claims from the stored records with the
paired test of :mod:`lkm.numerics.stats`: per data set over its realizations / repeats
(benchmark and UCI), and across the four artificial sets (one realization each,
independent draws of one distribution: a plain paired t over the sets). Nothing here
fits a model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from lkm.numerics.stats import paired_test
from lkm.papers.lrr.artificial import (
    class_counts_in_test,
    class_pair,
    combined_accuracy,
    first_record,
)
from lkm.report.formatting import RATE
from lkm.reproduction.claims import (
    MARGIN,
    better_claim,
    claims_table,
    equivalent,
    inconclusive,
    note_effect,
    write_claims,
)
from lkm.reproduction.perturbed import Perturbed
from lkm.reproduction.readings import reading_runs
from lkm.reproduction.runs import Run

KEY = "lrr"
TITLE = "Li, Chen, Tang — local risk regularization"


#: Runs the claims read, rerun under the fragility perturbation (lkm.reproduction.perturbed).
PERTURBED = {
    "lrr_artificial": Perturbed(methods=("RLS", "LRR1", "LRR2", "LRR1-hard", "LRR-pair")),
    "lrr_benchmark": Perturbed(methods=("RLS", "LRR", "RLS-cv", "LRR-cv")),
    "lrr_uci": Perturbed(methods=("RLS", "LRR", "RLS-cv", "LRR-cv")),
}


def _accuracy(run: Run, dataset: str, method: str) -> float | None:
    rows = run.agg[(run.agg["dataset"] == dataset) & (run.agg["method"] == method)]
    return None if rows.empty else float(rows["accuracy"].iloc[0])


def _across_sets(diffs: dict[str, float], a: str, b: str, what: str) -> tuple[str, bool | str | None]:
    """a − b per artificial set (one realization each), tested across the sets: they
    are independent draws of one distribution, so the sets are the paired samples. Not
    significant: equivalent when the 95 % CI lies inside ±:data:`MARGIN`, else inconclusive."""
    if not diffs:
        return f"{a} / {b} not in the run", None
    res = paired_test(np.array(list(diffs.values())), np.zeros(len(diffs)))
    note_effect({"sets": res}, test=f"paired t over the {res.n} sets (one realization each)")
    text = "; ".join(f"{d} {RATE * v:+.2f}" for d, v in diffs.items())
    if not res.tested:
        return f"{what} (points): {text}; one set: untested", None
    word = (f"{a} significantly better" if res.better() > 0 else f"{b} significantly better" if res.better() < 0
            else "not significant")
    undecided = equivalent() if res.equivalent(MARGIN) else inconclusive([res])
    return (f"{what} (points): {text}; paired t over the {res.n} sets: {res.describe()} — {word}",
            {1: True, -1: False}.get(res.better(), undecided))


def _pairs_claim(run: Run | None, a: str, b: str, what: str) -> tuple[str, bool | str | None]:
    """a vs b per dataset on the artificial sets, tested across the sets."""
    if run is None:
        return "not run", None
    diffs = {}
    for d in dict.fromkeys(run.agg["dataset"]):
        x, y = _accuracy(run, d, a), _accuracy(run, d, b)
        if x is not None and y is not None:
            diffs[d] = x - y
    return _across_sets(diffs, a, b, what)


def _paired_claim(run: Run | None, a: str, b: str) -> tuple[str, bool | str | None]:
    """a vs b per dataset, paired over its realizations / repeats at each method's setting."""
    if run is None:
        return "not run", None
    results = {d: run.compare(d, a, b) for d in run.datasets()}
    results = {d: r for d, r in results.items() if r.n}
    n = max((r.n for r in results.values()), default=0)
    return better_claim(results, a, b, f"{a} − {b} over {n} realizations per set")


def _combined_claim(run: Run | None) -> tuple[str, bool | str | None]:
    return _pairs_claim(run, "LRR-pair", "RLS", "LRR-pair (confidence; no test labels) − RLS")


def _test_label_claim(run: Run | None) -> tuple[str, bool | str | None]:
    """The paper's "LRR": LRR¹ on class-1 test points, LRR² on class-2 ones (test labels)."""
    if run is None:
        return "not run", None
    ctx = run.context()
    classes = class_pair(ctx, ctx.options("lrr_artificial"))
    diffs = {}
    for ds in dict.fromkeys(run.agg["dataset"]):
        first, second, rls = (first_record(ctx, ds, m) for m in ("LRR1", "LRR2", "RLS"))
        if first is None or second is None or rls is None:
            continue
        combined = combined_accuracy(first["per_class_accuracy"], second["per_class_accuracy"],
                                     class_counts_in_test(ctx, ds), classes)
        diffs[ds] = combined - float(rls["accuracy"])
    return _across_sets(diffs, "LRR", "RLS", "paper's combination (uses test labels) − RLS")


#: (number, the paper's claim, where, evaluator, run)
CLAIMS = [
    ("1a", "LRR beats RLS on the artificial data (the paper's combination uses the test labels)",
     "Sec. 5.1, Table 2", _test_label_claim, "lrr_artificial"),
    ("1b", "... and so does a combination that does not use test labels (ours)", "—",
     _combined_claim, "lrr_artificial"),
    ("2", "the soft vicinity beats the hard one", "Sec. 5.1, Table 3",
     lambda r: _pairs_claim(r, "LRR1", "LRR1-hard", "LRR¹ soft − hard"), "lrr_artificial"),
    ("3a", "LRR beats RLS on the benchmark repository (paper's settings)", "Sec. 5.2, Table 5",
     lambda r: _paired_claim(r, "LRR", "RLS"), "lrr_benchmark"),
    ("3b", "... with both tuned by CV over the same grid", "—",
     lambda r: _paired_claim(r, "LRR-cv", "RLS-cv"), "lrr_benchmark"),
    ("4a", "LRR beats RLS on UCI data (paper's settings)", "Sec. 5.3, Tables 6-8",
     lambda r: _paired_claim(r, "LRR", "RLS"), "lrr_uci"),
    ("4b", "... with both tuned by CV over the same grid", "—",
     lambda r: _paired_claim(r, "LRR-cv", "RLS-cv"), "lrr_uci"),
]


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table from the run folders under ``root`` (written by ``lkm reproduce lrr``)."""
    return claims_table(CLAIMS, PERTURBED, root, smoke, reading_runs(__package__))


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/lrr_claims[-smoke]/claims`` after the runs."""
    return write_claims(KEY, TITLE, evaluate_claims(root, smoke), root, smoke)
