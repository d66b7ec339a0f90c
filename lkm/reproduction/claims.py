"""A paper's claims table: each claim decided by a test from our stored numbers.

**Claims as tests.** A "beats" / "better" / "comparable" claim is decided per data set
by :func:`lkm.numerics.stats.paired_test` over the splits (folds, repeats, realizations) both
methods share, each at its selected setting; the measure cell prints the mean
difference in points with its 95 % CI and p, and the verdict counts the sets where
the difference is significant. "Comparable" is read as equivalence: the 95 % CI inside
± a margin stated in the claim's measure; "not significant" alone is never read as
"no difference". A claim whose verdict changes under the fragility check's
perturbation (:mod:`lkm.reproduction.perturbed`) is labelled *fragile*.

**Verdict words.** *holds*; *contradicted* (the test shows the opposite); *partly* (a
claim of several parts, some shown); *equivalent (within ±m points)* for a claim of a
difference ("a beats b") whose 95 % CIs lie inside ±m on most sets — evidence *against*
the claimed difference; *inconclusive (could detect ≥ X points at 80 % power)* when the
numbers neither support nor refute it, X being what the test could have seen
(:func:`inconclusive`). Every claim in accuracy points has a margin: its own when the
paper's words imply one, else :data:`lkm.numerics.stats.MARGIN_POINTS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from lkm.numerics.stats import MARGIN_POINTS, POWER, Paired, count_words, format_p, paired_test
from lkm.report.aggregation import not_run_cells
from lkm.report.formatting import RATE
from lkm.report.tables import write_table
from lkm.reproduction.perturbed import PERTURBATION_WORDS
from lkm.reproduction.runs import Run, run_loader

SMOKE_LABEL = "smoke: not evidence"


def smoke_labelled(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (a claims table) with every verdict cell (columns ``verdict...``) reading
    ``smoke: not evidence (<verdict>)``; cells with no verdict ("–") stay as they are."""
    out = table.copy()
    for col in (c for c in out.columns if str(c).startswith("verdict")):
        out[col] = out[col].map(lambda v: v if v in ("–", "", None) else f"{SMOKE_LABEL} ({v})")
    return out


def claims_caption(title: str, smoke: bool) -> str:
    """The caption of a paper's claims table; a smoke run's says its verdicts are not evidence."""
    caption = f"{title}: the paper's claims checked from our numbers"
    return caption + (f" — SMOKE RUN (few datasets and settings): every verdict is {SMOKE_LABEL}" if smoke else "")


def verdict(ok: bool | str | None) -> str:
    """None: not evaluated ("n/a"); True: "holds"; False: "contradicted"; a string as it
    is ("partly", :func:`equivalent`, :func:`inconclusive`, "not run: …")."""
    if isinstance(ok, str):
        return ok
    return "n/a" if ok is None else ("holds" if ok else "contradicted")


def verdict_word(ok: bool | str | None) -> str:
    """The verdict without its parenthesis (``inconclusive (could detect …)`` →
    ``inconclusive``): what the fragility and readings checks compare, so that a
    detectable effect that moves a little is not a changed verdict."""
    return verdict(ok).split(" (", 1)[0]


#: The default margin of a claim in accuracy points, as a fraction (the claims' unit).
MARGIN = MARGIN_POINTS / RATE


def equivalent(margin: float = MARGIN, scale: float = RATE) -> str:
    """The verdict of a claimed difference whose 95 % CIs lie inside ±``margin``
    (two one-sided tests): ``equivalent (within ±1 points)``."""
    return f"equivalent (within ±{scale * margin:g} points)"


def could_detect(x: float, unit: str = " points", over: str = "") -> str:
    """``inconclusive (could detect ≥ 2.31 points at 80 % power)``; ``x`` already scaled."""
    return f"inconclusive (could detect ≥ {x:.2f}{unit} at {100 * POWER:g} % power{over})"


def inconclusive(results: Any, scale: float = RATE, unit: str = " points") -> str:
    """The verdict of a claim its tests neither support nor refute, with the smallest
    difference they would have found significant at 80 % power
    (:meth:`lkm.numerics.stats.Paired.detectable_effect`: paired t over splits,
    Nadeau–Bengio corrected where used, or McNemar's normal approximation). ``results``:
    the claim's comparisons (Paired, or a dict of them); X is taken over those that were
    not significant (all when each was) and differ somewhere, and over several it is their
    **median** — the claims count sets by majority, so the median set's sensitivity is the
    one that decides."""
    tested = [r for r in (results.values() if isinstance(results, dict) else results) if r.tested]
    undecided = [r for r in tested if not r.significant()] or tested
    if not undecided:
        return "inconclusive (untested: one split)"
    if all(r.se == 0 for r in undecided):  # a and b the same on every split: no spread to power a test
        return "inconclusive (the same on every split)"
    undecided = [r for r in undecided if r.se != 0]
    x = float(np.median([r.detectable_effect() for r in undecided]))
    return could_detect(scale * x, unit, f", median of {len(undecided)} tests" if len(undecided) > 1 else "")


Evaluator = Callable[[Any], tuple[str, "bool | str | None"]]


def not_run(run: Run | None, method: str) -> str | None:
    """``"not run: needs lkm[fast]"`` when none of ``method``'s fits in ``run`` ran because
    an optional extra is not installed (:mod:`lkm.methods.extras`), else None. A claim
    reading that method gives it as its verdict (and says so in its measure) instead of
    "n/a"."""
    if run is None:
        return None
    cells = {cell for (_, m), cell in not_run_cells(run.records).items() if m == method}
    return sorted(cells)[0] if cells and run.ok[run.ok["method"] == method].empty else None


#: Columns of a claims table that summarise its comparison (:class:`ClaimEffect`).
EFFECT_COLUMNS = ("effect", "95% CI", "test")


@dataclass(frozen=True)
class ClaimEffect:
    """A claim's effect in one line, for the claims table's ``effect``, ``95% CI`` and
    ``test`` columns: on one data set, the paired comparison itself (a − b in points,
    its 95 % CI and test); on several, the mean over the sets of the per-set mean
    differences, its 95 % CI by a t-interval over the sets (the sets are independent),
    and the per-set test with how many sets were significant — the count the verdict
    is decided by."""

    effect: str
    ci: str
    test: str

    def cells(self) -> dict[str, str]:
        return dict(zip(EFFECT_COLUMNS, (self.effect, self.ci, self.test), strict=True))

    @classmethod
    def of(cls, results: dict[str, Paired], what: str = "", test: str | None = None, scale: float = 100.0,
           unit: str = " pts") -> ClaimEffect | None:
        """From the per-set comparisons ``results`` (differences a − b, shown × ``scale``
        with ``unit``); ``test`` names the test when it is not the per-set paired t (or
        McNemar's, named in ``what``)."""

        tested = {ds: r for ds, r in results.items() if r.n > 0}
        if not tested:
            return None
        any_r = next(iter(tested.values()))
        if test is not None:
            per_set = test
        elif "McNemar" in what:
            per_set = "McNemar exact on the test samples"
        elif any_r.test_train_ratio > 0:
            per_set = "paired t over splits, Nadeau–Bengio corrected"
        else:
            per_set = "paired t over splits"
        if len(tested) == 1:
            (r,) = tested.values()
            ci = f"[{scale * r.ci_low:+.2f}, {scale * r.ci_high:+.2f}]" if r.tested else "–"
            p = f", p {format_p(r.p)}" if r.tested else " (one split: untested)"
            return cls(f"{scale * r.mean:+.2f}{unit}", ci, per_set + p)
        means = [r.mean for r in tested.values()]
        over = paired_test(means, [0.0] * len(means))
        significant = sum(r.significant() for r in tested.values())
        return cls(f"{scale * over.mean:+.2f}{unit} (mean of {len(means)} sets)",
                   f"[{scale * over.ci_low:+.2f}, {scale * over.ci_high:+.2f}]",
                   f"{per_set}; significant on {significant} of {len(means)} sets")


#: The effects noted while a claim is evaluated (:func:`note_effect`); None outside claim_row.
_noted: list[ClaimEffect] | None = None


def note_effect(results: dict[str, Paired], what: str = "", **how: Any) -> None:
    """Record the comparison a claim is decided by (the first noted one fills the
    claims table's effect columns; ``how``: :meth:`ClaimEffect.of`'s ``test``, ``scale``,
    ``unit``). :func:`better_claim`, :func:`comparable_claim` and
    :func:`noninferior_claim` note theirs; an evaluator with its own test calls this."""
    effect = ClaimEffect.of(results, what, **how)
    if _noted is not None and effect is not None:
        _noted.append(effect)


#: The claims-table column of the verdicts under the other readings of a paper's open choices.
READINGS_COLUMN = "verdict under other readings"


def claim_row(number: str, claim: str, where: str, evaluate: Evaluator, names: list[str],
              load: Callable[[str, bool], Run | None], perturbed: set[str],
              readings: dict[str, list[tuple[str, str]]] | None = None) -> dict[str, Any]:
    """One claims-table row: our measure and verdict, and the verdict on the perturbed
    runs when a run the claim reads has a fragility variant (``perturbed``; runs without
    one, e.g. the costly MNIST rows, enter the perturbed evaluation unperturbed), and the
    verdict with each variant run of a reading in place of the run it reads
    (``readings``: base run → ``[(label, variant run)]``,
    :func:`lkm.reproduction.readings.reading_runs`): a claim whose verdict changes
    between readings is *reading-dependent*."""
    global _noted
    runs = [load(n, False) for n in names]
    _noted = []
    try:
        measure, ok = evaluate(runs if len(names) > 1 else runs[0])
        effect = _noted[0].cells() if _noted else dict.fromkeys(EFFECT_COLUMNS, "–")
    finally:
        _noted = None
    checked = any(n in perturbed for n in names)
    ok_p = None
    if checked:
        pruns = [load(n, True) if n in perturbed else r for n, r in zip(names, runs, strict=True)]
        if all(p is not None for p, n in zip(pruns, names, strict=True) if n in perturbed):
            pruns = [p.selected_from(r) if p is not None and r is not None and p is not r else p
                     for p, r in zip(pruns, runs, strict=True)]
            ok_p = evaluate(pruns if len(names) > 1 else pruns[0])[1]
    cell, pcell = fragile_verdict(ok, ok_p, checked)
    # one evaluation per reading, with its variant of every run the claim reads in place
    variants: dict[str, dict[int, str]] = {}
    for i, name in enumerate(names):
        for label, variant in (readings or {}).get(name, []):
            variants.setdefault(label, {})[i] = variant
    under: list[tuple[str, bool | str | None]] = []
    for label, by_index in variants.items():
        vruns = list(runs)
        for i, variant in by_index.items():
            vrun = load(variant, False)
            run = runs[i]
            vruns[i] = run.with_methods_of(vrun) if vrun is not None and run is not None else None
        missing = any(vruns[i] is None for i in by_index)
        under.append((label, None if missing else evaluate(vruns if len(names) > 1 else vruns[0])[1]))
    cell, rcell = reading_verdict(cell, ok, under)
    by_reading = {READINGS_COLUMN: rcell} if readings else {}  # a paper without variant runs has no such column
    return {"#": number, "the paper's claim": claim, "where": where, "our measure": measure,
            "verdict": cell, f"verdict under {PERTURBATION_WORDS}": pcell, **by_reading,
            **effect, "run": ", ".join(names)}


def reading_verdict(cell: str, ok: bool | str | None, under: list[tuple[str, bool | str | None]]) -> tuple[str, str]:
    """``(verdict cell, readings cell)``: the verdict, labelled ``reading-dependent (stated
    reading: … ; <reading>: …)`` when a reading's verdict differs from the stated one's;
    a reading whose run is missing counts as not run."""
    if not under:
        return cell, "–"
    shown = "; ".join(f"{label}: {'not run' if v is None else verdict(v)}" for label, v in under)
    differ = [(label, v) for label, v in under if v is not None and verdict_word(v) != verdict_word(ok)]
    if differ:
        listed = "; ".join(f"{label}: {verdict(v)}" for label, v in differ)
        return f"reading-dependent (stated reading: {cell}; {listed})", shown
    return cell, f"same ({shown})"


def _cells(results: dict[str, Paired]) -> str:
    return "; ".join(f"{ds} {r.describe()}" for ds, r in results.items())


def better_claim(results: dict[str, Paired], a: str, b: str, what: str,
                 margin: float = MARGIN) -> tuple[str, bool | str | None]:
    """"a beats b": holds when a is significantly better on more than half of the sets;
    contradicted when b is significantly better on at least as many sets (and some);
    otherwise :func:`equivalent` when the 95 % CI lies inside ±``margin`` on more than
    half of the sets (a's advantage, if any, is below the margin: evidence against
    "beats"), else :func:`inconclusive`."""
    if not results:
        return f"{a} / {b} not in the run", None
    note_effect(results, what)
    a_sig = sum(r.better() > 0 for r in results.values())
    b_sig = sum(r.better() < 0 for r in results.values())
    eq = sum(r.equivalent(margin) for r in results.values())
    measure = (f"{what}, mean difference in points [95% CI], p: {_cells(results)}; "
               f"{count_words(results, a, b, margin=margin)}")
    if a_sig > len(results) / 2:
        return measure, True
    if b_sig and b_sig >= a_sig:
        return measure, False
    return measure, equivalent(margin) if eq > len(results) / 2 else inconclusive(results)


def comparable_claim(results: dict[str, Paired], a: str, b: str, what: str, margin: float,
                     need_all: bool = False) -> tuple[str, bool | str | None]:
    """"a comparable with b", read as equivalence: the 95 % CI of a − b inside ±margin.
    Holds when equivalent on more than half of the sets (``need_all``: on all);
    contradicted when significantly different and not equivalent on more than half (any);
    otherwise :func:`inconclusive` (not significant is not evidence of equality)."""
    if not results:
        return f"{a} / {b} not in the run", None
    note_effect(results, what)
    n = len(results)
    eq = sum(r.equivalent(margin) for r in results.values())
    diff = sum(r.significant() and not r.equivalent(margin) for r in results.values())
    measure = (f"{what}, mean difference in points [95% CI], p: {_cells(results)}; "
               f"{count_words(results, a, b, margin=margin)}")
    if (eq == n) if need_all else (eq > n / 2):
        return measure, True
    if (diff > 0) if need_all else (diff > n / 2):
        return measure, False
    return measure, inconclusive(results)


def noninferior_claim(results: dict[str, Paired], a: str, b: str, what: str,
                      margin: float) -> tuple[str, bool | str | None]:
    """"a loses little against b": holds when the lower 95 % CI bound of a − b is above
    −margin on every set; contradicted when a is worse by more than the margin with
    significance on some set (upper bound below −margin); otherwise :func:`inconclusive`."""
    if not results:
        return f"{a} / {b} not in the run", None
    note_effect(results, what)
    ok = sum(r.tested and r.ci_low > -margin for r in results.values())
    bad = sum(r.tested and r.ci_high < -margin for r in results.values())
    measure = (f"{what}, mean difference in points [95% CI], p: {_cells(results)}; lower bound above "
               f"−{100 * margin:g} points on {ok} of {len(results)}")
    if ok == len(results):
        return measure, True
    return measure, False if bad else inconclusive(results)


def claims_table(claims: list[tuple[Any, ...]], perturbed: dict[str, Any], root: Path, smoke: bool,
                 readings: dict[str, list[tuple[str, str]]] | None = None) -> pd.DataFrame:
    """A paper's claims table from ``claims`` — ``(number, claim, where, evaluator, runs)``
    with ``runs`` one run name or a list of them — read from the run folders under
    ``root``, verdicts labelled as a smoke run's with ``smoke``; ``readings``: the variant
    runs of the paper's readings (:func:`claim_row`)."""
    load = run_loader(root, smoke)
    table = pd.DataFrame([
        claim_row(number, claim, where, evaluate, [names] if isinstance(names, str) else list(names), load,
                  set(perturbed), readings)
        for number, claim, where, evaluate, names in claims
    ])
    return smoke_labelled(table) if smoke else table


def write_claims(key: str, title: str, table: pd.DataFrame, root: Path, smoke: bool) -> list[Path]:
    """Write ``root/<key>_claims[-smoke]/claims`` (Markdown, CSV, LaTeX)."""

    out = root / (f"{key}_claims-smoke" if smoke else f"{key}_claims")
    return write_table(table, out / "claims", claims_caption(title, smoke))


def fragile_verdict(ok: bool | str | None, ok_perturbed: bool | str | None, checked: bool) -> tuple[str, str]:
    """``(verdict cell, perturbed cell)``: the verdict, labelled ``fragile (plain /
    perturbed under ...)`` when the perturbed run's verdict differs."""
    if not checked:
        return verdict(ok), "–"
    if ok_perturbed is None:
        return verdict(ok), "not run"
    if ok is not None and verdict_word(ok) != verdict_word(ok_perturbed):
        return (f"fragile ({verdict(ok)} / {verdict(ok_perturbed)} under {PERTURBATION_WORDS})",
                verdict(ok_perturbed))
    return verdict(ok), f"same ({verdict(ok_perturbed)})"
