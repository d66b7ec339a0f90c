"""Li, Chen, Tang — local risk regularization (LRR) against RLS: experiments and claims.

:data:`SPECS` lists the experiments (run together by ``lkm reproduce lrr``);
:func:`evaluate_claims` checks the paper's claims from the stored records, with the
paired Wilcoxon test of :func:`lkm.report.lrr_uci.paired_table` where there are several
realizations. Nothing here fits a model.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lkm.papers.common import Experiment, Run, load_run, verdict
from lkm.report.core import RATE, write_table
from lkm.report.lrr import _classes, _record, _test_counts, combined_accuracy
from lkm.report.lrr_uci import paired_table

KEY = "lrr"
TITLE = "Li, Chen, Tang — local risk regularization"

#: The paper's experiments, in the order `lkm reproduce lrr` runs them.
SPECS = [
    Experiment("configs/lrr_artificial.yaml"),
    Experiment("configs/lrr_benchmark.yaml"),
    Experiment("configs/lrr_uci.yaml"),
]


def _accuracy(run: Run, dataset: str, method: str) -> float | None:
    rows = run.agg[(run.agg["dataset"] == dataset) & (run.agg["method"] == method)]
    return None if rows.empty else float(rows["accuracy"].iloc[0])


def _pairs_claim(run: Run | None, a: str, b: str, what: str) -> tuple[str, bool | str | None]:
    """a vs b per dataset on the artificial sets (one realization each: no test)."""
    if run is None:
        return "not run", None
    datasets = list(dict.fromkeys(run.agg["dataset"]))
    diffs = {d: (_accuracy(run, d, a), _accuracy(run, d, b)) for d in datasets}
    diffs = {d: RATE * (x - y) for d, (x, y) in diffs.items() if x is not None and y is not None}
    if not diffs:
        return f"{a} / {b} not in the run", None
    better = sum(v > 0 for v in diffs.values())
    text = "; ".join(f"{d} {v:+.2f}" for d, v in diffs.items())
    return f"{what} (points): {text}; better on {better} of {len(diffs)}", better > len(diffs) / 2


def _paired_claim(run: Run | None, comparison: str) -> tuple[str, bool | str | None]:
    """A paired comparison over realizations, from the run's lrr_paired table."""
    if run is None:
        return "not run", None
    t = paired_table(run.context())
    t = t[t["comparison"] == comparison] if not t.empty else t
    if t.empty:
        return f"{comparison}: not in the run", None
    verdict_col = next(c for c in t.columns if c.startswith("verdict"))
    a_name = comparison.split(" vs ")[0]
    a_sig = int((t[verdict_col] == f"{a_name} better").sum())
    b_sig = int(t[verdict_col].str.endswith("better").sum()) - a_sig
    text = "; ".join(f"{r.dataset} {r['mean diff (pp)']:+.2f} (p {r['Wilcoxon p']})" for _, r in t.iterrows())
    measure = (f"{comparison}, mean difference in points and Wilcoxon p over {int(t['splits'].max())} "
               f"realizations: {text}; significantly better: {a_name} on {a_sig}, the other on {b_sig} of {len(t)} sets")
    return measure, (a_sig > b_sig and a_sig > 0) if a_sig or b_sig else False


def _combined_claim(run: Run | None) -> tuple[str, bool | str | None]:
    return _pairs_claim(run, "LRR-pair", "RLS", "LRR-pair (confidence; no test labels) − RLS")


def _test_label_claim(run: Run | None) -> tuple[str, bool | str | None]:
    """The paper's "LRR": LRR¹ on class-1 test points, LRR² on class-2 ones (test labels)."""
    if run is None:
        return "not run", None
    ctx = run.context()
    classes = _classes(ctx, ctx.options("lrr_artificial"))
    diffs = {}
    for ds in dict.fromkeys(run.agg["dataset"]):
        first, second, rls = (_record(ctx, ds, m) for m in ("LRR1", "LRR2", "RLS"))
        if first is None or second is None or rls is None:
            continue
        combined = combined_accuracy(first["per_class_accuracy"], second["per_class_accuracy"],
                                     _test_counts(ctx, ds), classes)
        diffs[ds] = RATE * (combined - float(rls["accuracy"]))
    if not diffs:
        return "LRR1 / LRR2 / RLS not in the run", None
    better = sum(v > 0 for v in diffs.values())
    text = "; ".join(f"{d} {v:+.2f}" for d, v in diffs.items())
    return (f"paper's combination (uses test labels) − RLS (points): {text}; better on {better} of {len(diffs)}",
            better > len(diffs) / 2)


#: (number, the paper's claim, where, evaluator, run)
CLAIMS = [
    ("1a", "LRR beats RLS on the artificial data (the paper's combination uses the test labels)",
     "Sec. 5.1, Table 2", _test_label_claim, "lrr_artificial"),
    ("1b", "... and so does a combination that does not use test labels (ours)", "—",
     _combined_claim, "lrr_artificial"),
    ("2", "the soft vicinity beats the hard one", "Sec. 5.1, Table 3",
     lambda r: _pairs_claim(r, "LRR1", "LRR1-hard", "LRR¹ soft − hard"), "lrr_artificial"),
    ("3a", "LRR beats RLS on the benchmark repository (paper's settings)", "Sec. 5.2, Table 5",
     lambda r: _paired_claim(r, "LRR vs RLS"), "lrr_benchmark"),
    ("3b", "... with both tuned by the same CV budget", "—",
     lambda r: _paired_claim(r, "LRR-cv vs RLS-cv"), "lrr_benchmark"),
    ("4a", "LRR beats RLS on UCI data (paper's settings)", "Sec. 5.3, Tables 6-8",
     lambda r: _paired_claim(r, "LRR vs RLS"), "lrr_uci"),
    ("4b", "... with both tuned by the same CV budget", "—",
     lambda r: _paired_claim(r, "LRR-cv vs RLS-cv"), "lrr_uci"),
]


def evaluate_claims(root: Path, smoke: bool = False) -> pd.DataFrame:
    """The claims table from the run folders under ``root`` (written by ``lkm reproduce lrr``)."""
    runs: dict[str, Run | None] = {}
    rows = []
    for number, claim, where, evaluate, name in CLAIMS:
        if name not in runs:
            runs[name] = load_run(root, name, smoke)
        measure, ok = evaluate(runs[name])
        rows.append({"#": number, "the paper's claim": claim, "where": where, "our measure": measure,
                     "verdict": verdict(ok), "run": name})
    return pd.DataFrame(rows)


def write_summary(root: Path, smoke: bool = False) -> list[Path]:
    """Write ``root/lrr_claims[-smoke]/claims`` after the runs."""
    out = root / ("lrr_claims-smoke" if smoke else "lrr_claims")
    return write_table(evaluate_claims(root, smoke), out / "claims",
                       f"{TITLE}: the paper's claims checked from our numbers")
