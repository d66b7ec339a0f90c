"""What every paper module shares: its experiment list entries, loading finished run
folders, paired comparisons of two methods from a run's records, the verdict words of
a claims table, and the fragility check.

**Claims as tests.** A "beats" / "better" / "comparable" claim is decided per data set
by :func:`lkm.stats.paired_test` over the splits (folds, repeats, realizations) both
methods share, each at its selected setting; the measure cell prints the mean
difference in points with its 95 % CI and p, and the verdict counts the sets where
the difference is significant. "Comparable" is read as equivalence: the 95 % CI inside
± a margin stated in the claim's measure; "not significant" alone is never read as
"no difference".

**Fragility.** :data:`PERTURBATION` (training rows permuted, another BLAS thread
count) is applied to the runs the accuracy claims read (``PERTURBED`` of each paper
module; ``<run>-perturbed`` folders, restricted to the settings the claims read); a
claim whose verdict differs between the two is labelled *fragile* in its verdict cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from lkm.errors import LkmError, did_you_mean
from lkm.report.core import aggregate, select_best
from lkm.report.paired import compare, compare_scores, setting_scores, split_scores
from lkm.report.registry import ReportContext
from lkm.spec import Spec, load_spec, spec_from_dict
from lkm.stats import Paired, count_words, format_p
from lkm.store import RunStore

#: The fragility check's perturbation (:class:`lkm.spec.PerturbSpec`): a seeded
#: permutation of every split's training rows, and two BLAS threads per fit (joblib's
#: workers otherwise run with one each: loky limits them to cores / jobs).
PERTURBATION = {"permute_train": 1, "blas_threads": 2}
PERTURBATION_WORDS = "permuted training rows, 2 BLAS threads"


@dataclass(frozen=True)
class Experiment:
    """One spec of a reproduction; ``jobs`` caps its parallel workers.

    Timing experiments run with the same 2 workers as the others: each joblib worker
    gets one BLAS thread, which keeps timings stable on a shared machine (in one process
    with two BLAS threads, small solves slow down many-fold when the other core is busy).
    """

    spec: str
    jobs: int | None = None


@dataclass
class Run:
    """A finished run folder: its spec, records and aggregates."""

    name: str
    spec: Spec
    records: pd.DataFrame
    agg: pd.DataFrame
    best: pd.DataFrame
    store: RunStore

    def best_rate(self, dataset: str, method: str, others: dict[str, Any] | None = None) -> float:
        rows = self.best[(self.best["dataset"] == dataset) & (self.best["method"] == method)]
        if others:
            rows = rows[rows["params"].map(lambda p: all(str(p.get(k)) == str(v) for k, v in others.items()))]
        return float(rows["accuracy"].iloc[0]) if not rows.empty else math.nan

    def context(self) -> ReportContext:
        """The report context of this run, for reusing an output builder's computations."""
        return ReportContext(self.store, self.spec, self.records, self.agg, self.best, {})

    @property
    def ok(self) -> pd.DataFrame:
        """Finished fits (study records left out)."""
        ok = self.records[self.records["status"] == "ok"]
        return ok[ok["kind"] != "study"] if "kind" in ok.columns else ok

    def scores(self, dataset: str, method: str, others: dict[str, Any] | None = None) -> pd.DataFrame:
        """Accuracy, n_train, n_test per split of ``method`` at its selected setting."""
        return split_scores(self.ok, self.best, dataset, method, others)

    def setting(self, dataset: str, method: str, params: dict[str, Any]) -> pd.DataFrame:
        """Accuracy, n_train, n_test per split of one parameter setting."""
        return setting_scores(self.ok, dataset, method, params)

    def compare(self, dataset: str, a: str, b: str, a_others: dict[str, Any] | None = None,
                b_others: dict[str, Any] | None = None) -> Paired:
        """Accuracy of ``a`` − ``b`` on ``dataset`` at their selected settings, paired over splits."""
        return compare(self.ok, self.best, dataset, a, b, a_others, b_others)

    def datasets(self) -> list[str]:
        return list(dict.fromkeys(self.best["dataset"])) if not self.best.empty else []

    def selected_from(self, plain: Run) -> Run:
        """This (perturbed) run with ``plain``'s selected settings instead of its own: a
        fragility check compares the same settings, not a new selection."""
        key = ["dataset", "method", "setting"]
        chosen = plain.best[key].drop_duplicates()
        best = self.agg.merge(chosen, on=key, how="inner") if not self.agg.empty else self.agg
        return Run(self.name, self.spec, self.records, self.agg, best, self.store)


def paired_over(scores: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, Paired]:
    """``{dataset: paired test of a − b}`` from per-split score frames."""
    return {ds: compare_scores(a, b) for ds, (a, b) in scores.items() if len(a.index.intersection(b.index))}


def load_run(root: Path, name: str, smoke: bool = False, perturbed: bool = False) -> Run | None:
    """The run folder ``root/name`` (``name-smoke`` with ``smoke``, then ``-perturbed``
    for the fragility variant), or None if absent."""
    path = root / (f"{name}-smoke" if smoke else name)
    if perturbed:
        path = path.with_name(path.name + "-perturbed")
    if not (path / "spec.yaml").is_file():
        return None
    spec = load_spec(path / "spec.yaml")
    store = RunStore(path)
    records = store.records_frame()
    if records.empty:
        return None
    agg = aggregate(records, spec)
    best = select_best(agg, spec) if not agg.empty else agg
    return Run(path.name, spec, records, agg, best, store)


#: What every verdict of a smoke run (``--smoke``: few datasets and settings) is labelled:
#: its numbers exercise the code, they are not evidence for or against a claim.
def paper_values(package: str) -> dict[str, Any]:
    """The numbers a paper prints, from ``paper_values.yaml`` of its package (e.g.
    ``lkm.papers.lpl``), each entry with ``where`` (section, table or figure)."""
    return yaml.safe_load((files(package) / "paper_values.yaml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Difference:
    """A named cause for table rows where our number differs from the paper's by more
    than the report's threshold (:data:`lkm.report.site.DIFF_POINTS`), from the
    ``differences.yaml`` of a paper's package. It applies to a row when every condition
    matches (shell-style patterns, :func:`fnmatch.fnmatchcase`): ``runs`` the run
    folder's spec name, ``quantities`` the compared quantity (``accuracy %``, ``testing
    %``, or the ``metric`` cell of a ``paper``/``ours`` table), ``rows`` a column → value
    mapping (``dataset``, ``method``, ...). An empty condition matches everything."""

    cause: str
    runs: tuple[str, ...] = ()
    quantities: tuple[str, ...] = ()
    rows: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def matches(self, run: str, quantity: str, row: dict[str, str]) -> bool:
        def any_of(value: str, patterns: tuple[str, ...]) -> bool:
            return any(fnmatchcase(value.strip(), p) for p in patterns)

        if self.runs and not any_of(run, self.runs):
            return False
        if self.quantities and not any_of(quantity, self.quantities):
            return False
        return all(column in row and any_of(row[column], values) for column, values in self.rows)


#: The keys of one ``differences.yaml`` entry.
DIFFERENCE_KEYS = ("cause", "runs", "quantities", "rows")


def paper_differences(package: str) -> list[Difference]:
    """The named causes of ``differences.yaml`` of a paper's package (none if absent), in
    file order: the report names the first that matches a flagged row."""
    resource = files(package) / "differences.yaml"
    if not resource.is_file():
        return []
    where = f"{package.replace('.', '/')}/differences.yaml"
    entries = yaml.safe_load(resource.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise LkmError(f"{where}: expected a list of causes, got {type(entries).__name__}")

    def strings(value: Any, key: str) -> tuple[str, ...]:
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str | int | float) and str(v).strip() for v in values):
            raise LkmError(f"{where}: {key}: expected a name or a list of names, got {value!r}")
        return tuple(str(v) for v in values)

    out = []
    for i, entry in enumerate(entries):
        key = f"[{i}]"
        if not isinstance(entry, dict):
            raise LkmError(f"{where}: {key}: expected a mapping with {', '.join(DIFFERENCE_KEYS)}")
        unknown = sorted(set(entry) - set(DIFFERENCE_KEYS))
        if unknown:
            raise LkmError(f"{where}: {key}.{unknown[0]}: unknown key{did_you_mean(str(unknown[0]), DIFFERENCE_KEYS)}")
        cause = entry.get("cause")
        if not isinstance(cause, str) or not cause.strip():
            raise LkmError(f"{where}: {key}.cause: a one-sentence cause is required")
        rows = entry.get("rows") or {}
        if not isinstance(rows, dict):
            raise LkmError(f"{where}: {key}.rows: expected a mapping column -> value(s)")
        out.append(Difference(
            " ".join(cause.split()),
            strings(entry["runs"], f"{key}.runs") if "runs" in entry else (),
            strings(entry["quantities"], f"{key}.quantities") if "quantities" in entry else (),
            tuple((str(c), strings(v, f"{key}.rows.{c}")) for c, v in rows.items()),
        ))
    return out


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
    """None: not evaluated; True / False; or "partly" for a claim with two parts of which one holds."""
    if isinstance(ok, str):
        return ok
    return "n/a" if ok is None else ("holds" if ok else "does not hold")


def fragile_verdict(ok: bool | str | None, ok_perturbed: bool | str | None, checked: bool) -> tuple[str, str]:
    """``(verdict cell, perturbed cell)``: the verdict, labelled ``fragile (plain /
    perturbed under ...)`` when the perturbed run's verdict differs."""
    if not checked:
        return verdict(ok), "–"
    if ok_perturbed is None:
        return verdict(ok), "not run"
    if ok is not None and verdict(ok) != verdict(ok_perturbed):
        return (f"fragile ({verdict(ok)} / {verdict(ok_perturbed)} under {PERTURBATION_WORDS})",
                verdict(ok_perturbed))
    return verdict(ok), f"same ({verdict(ok_perturbed)})"


@dataclass(frozen=True)
class Perturbed:
    """Which part of a run the fragility check reruns: ``methods`` (None: all); with
    ``selected_only`` each swept parameter keeps only the values selected on some data
    set in the plain run, plus ``extra`` values (e.g. sigma = 1 for a sensitivity claim);
    ``only`` fixes a swept parameter to the given values instead."""

    methods: tuple[str, ...] | None = None
    selected_only: bool = True
    extra: dict[str, list[Any]] = field(default_factory=dict)
    only: dict[str, list[Any]] = field(default_factory=dict)


def perturbed_spec(spec: Spec, plain: Run | None, what: Perturbed) -> Spec:
    """``spec`` with :data:`PERTURBATION`, named ``<name>-perturbed``, restricted to what
    the claims read (``what``; the selected values come from the finished ``plain``
    run), writing only its summary table."""
    data = spec.model_dump(mode="json")
    data.pop("smoke", None)
    data["name"] = f"{spec.name}-perturbed"
    data["perturb"] = dict(PERTURBATION)
    data["outputs"] = {"tables": ["summary"], "figures": [], "formats": ["png"]}
    data["paper"] = {}
    methods = [m for m in spec.methods if what.methods is None or m.name in what.methods]
    new_methods = []
    for m in methods:
        md = m.model_dump(mode="json")
        if what.selected_only:
            sweep = {}
            for p in spec.swept_params(m):
                grid = m.sweep.get(p, spec.sweep.get(p, []))
                chosen = set()
                if plain is not None and not plain.best.empty:
                    rows = plain.best[plain.best["method"] == m.name]
                    chosen = {json.dumps(r.get(p)) for r in rows["params"]}
                chosen |= {json.dumps(v) for v in what.extra.get(p, [])}
                if p in what.only:
                    chosen = {json.dumps(v) for v in what.only[p]}
                keep = [v for v in grid if json.dumps(v) in chosen] or grid
                sweep[p] = keep
            md["sweep"] = sweep
        new_methods.append(md)
    data["methods"] = new_methods
    if what.selected_only:
        data["sweep"] = {}
    if data.get("selection", {}).get("over"):
        swept = {p for m in new_methods for p in m.get("sweep", {})}
        data["selection"]["over"] = [p for p in data["selection"]["over"] if p in swept] or None
    return spec_from_dict(data, f"{spec.name} (perturbed)")


def perturbed_experiments(module: Any, root: Path, smoke: bool = False) -> list[tuple[Spec, str]]:
    """``(perturbed spec, source)`` for every run of a paper module's ``PERTURBED``,
    from its spec file and its finished plain run under ``root``."""
    out = []
    for experiment in module.SPECS:
        base = load_spec(experiment.spec)
        what = getattr(module, "PERTURBED", {}).get(base.name)
        if what is None:
            continue
        spec = load_spec(experiment.spec, smoke=smoke)
        out.append((perturbed_spec(spec, load_run(root, base.name, smoke), what), experiment.spec))
    return out


Evaluator = Callable[[Any], tuple[str, "bool | str | None"]]

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
        from lkm.stats import paired_test

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


def claim_row(number: str, claim: str, where: str, evaluate: Evaluator, names: list[str],
              load: Callable[[str, bool], Run | None], perturbed: set[str]) -> dict[str, Any]:
    """One claims-table row: our measure and verdict, and the verdict on the perturbed
    runs when a run the claim reads has a fragility variant (``perturbed``; runs without
    one, e.g. the costly MNIST rows, enter the perturbed evaluation unperturbed)."""
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
    return {"#": number, "the paper's claim": claim, "where": where, "our measure": measure,
            "verdict": cell, f"verdict under {PERTURBATION_WORDS}": pcell, **effect, "run": ", ".join(names)}


def _cells(results: dict[str, Paired]) -> str:
    return "; ".join(f"{ds} {r.describe()}" for ds, r in results.items())


def better_claim(results: dict[str, Paired], a: str, b: str, what: str) -> tuple[str, bool | str | None]:
    """"a beats b": holds when a is significantly better on more than half of the sets;
    does not hold when b is significantly better on at least as many sets (and some);
    otherwise "not shown" (a's advantage is not significant on most sets)."""
    if not results:
        return f"{a} / {b} not in the run", None
    note_effect(results, what)
    a_sig = sum(r.better() > 0 for r in results.values())
    b_sig = sum(r.better() < 0 for r in results.values())
    measure = f"{what}, mean difference in points [95% CI], p: {_cells(results)}; {count_words(results, a, b)}"
    if a_sig > len(results) / 2:
        return measure, True
    return measure, False if b_sig and b_sig >= a_sig else "not shown"


def comparable_claim(results: dict[str, Paired], a: str, b: str, what: str, margin: float,
                     need_all: bool = False) -> tuple[str, bool | str | None]:
    """"a comparable with b", read as equivalence: the 95 % CI of a − b inside ±margin.
    Holds when equivalent on more than half of the sets (``need_all``: on all); does not
    hold when significantly different and not equivalent on more than half (any);
    otherwise "not shown" (not significant is not evidence of equality)."""
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
    return measure, "not shown"


def noninferior_claim(results: dict[str, Paired], a: str, b: str, what: str,
                      margin: float) -> tuple[str, bool | str | None]:
    """"a loses little against b": holds when the lower 95 % CI bound of a − b is above
    −margin on every set; does not hold when a is worse by more than the margin with
    significance on some set (upper bound below −margin); otherwise "not shown"."""
    if not results:
        return f"{a} / {b} not in the run", None
    note_effect(results, what)
    ok = sum(r.tested and r.ci_low > -margin for r in results.values())
    bad = sum(r.tested and r.ci_high < -margin for r in results.values())
    measure = (f"{what}, mean difference in points [95% CI], p: {_cells(results)}; lower bound above "
               f"−{100 * margin:g} points on {ok} of {len(results)}")
    if ok == len(results):
        return measure, True
    return measure, False if bad else "not shown"


def run_loader(root: Path, smoke: bool) -> Callable[[str, bool], Run | None]:
    """A cached ``load(name, perturbed)`` over the run folders under ``root``."""
    cache: dict[tuple[str, bool], Run | None] = {}

    def load(name: str, perturbed: bool = False) -> Run | None:
        if (name, perturbed) not in cache:
            cache[(name, perturbed)] = load_run(root, name, smoke, perturbed)
        return cache[(name, perturbed)]

    return load



def claims_table(claims: list[tuple[Any, ...]], perturbed: dict[str, Any], root: Path, smoke: bool) -> pd.DataFrame:
    """A paper's claims table from ``claims`` — ``(number, claim, where, evaluator, runs)``
    with ``runs`` one run name or a list of them — read from the run folders under
    ``root``, verdicts labelled as a smoke run's with ``smoke``."""
    load = run_loader(root, smoke)
    table = pd.DataFrame([
        claim_row(number, claim, where, evaluate, [names] if isinstance(names, str) else list(names), load,
                  set(perturbed))
        for number, claim, where, evaluate, names in claims
    ])
    return smoke_labelled(table) if smoke else table


def write_claims(key: str, title: str, table: pd.DataFrame, root: Path, smoke: bool) -> list[Path]:
    """Write ``root/<key>_claims[-smoke]/claims`` (Markdown, CSV, LaTeX)."""
    from lkm.report.core import write_table

    out = root / (f"{key}_claims-smoke" if smoke else f"{key}_claims")
    return write_table(table, out / "claims", claims_caption(title, smoke))


def most_chosen_setting(records: pd.DataFrame, rename: dict[str, str] | None = None) -> str:
    """The most chosen tuned setting over ``records`` (their ``info.tuned_params``), e.g.
    ``K=10, q=6.15 (10/10 splits)``; ties by the setting's text, not by the order fits
    finished; ``rename`` shortens parameter names (``{"n_neighbors": "K"}``)."""
    import json
    from collections import Counter

    from lkm.report.core import format_value

    infos = [i if isinstance(i, dict) else {} for i in records["info"]] if "info" in records.columns else []
    counts = Counter(json.dumps(i["tuned_params"], sort_keys=True) for i in infos if "tuned_params" in i)
    if not counts:
        return "–"
    top, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{(rename or {}).get(k, k)}={format_value(v)}" for k, v in json.loads(top).items())
    return text if len(records) == 1 else f"{text} ({n}/{len(records)} splits)"
