"""`lkm compare`: rank one new classifier against the benchmark's recorded results
without refitting the others (issue 27).

The new method runs on the benchmark's exact splits: :func:`compare_spec` copies the
data sets (with their subsample), protocol, preprocessing and inner-CV folds from the
reference run's own ``spec.yaml`` and replaces the methods by the new one, so the task
ids, outer folds and inner folds are those the reference used. The reference is, by
default, the published results that ship with lkm: ``docs/runs/cross_paper`` of the
results pack, every file checked against the pack's manifest, whose sha256 is pinned in
``lkm/report/published.json`` (:func:`published_run`, :mod:`lkm.report.pack`; ``lkm docs
snapshot`` rewrites manifest and pin). A local run folder is checked by
:func:`verify_reference` instead: its spec.yaml against its plan.json (as ``lkm report``
does), its records against the plan, and its spec against what a ranking needs.

:func:`write_comparison` joins the two runs' tables and writes the ranking, the new
method's pairwise tests against each other method, its speed, and the two figures with
it drawn in colour (:func:`lkm.report.ranking.write_ranking`). A data set on which the new
method fails is recorded as failed and left out of the ranking, which says so.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.errors import LkmError
from lkm.report.tuning import tuned_choices

#: The benchmark's run folder inside a results pack.
BENCHMARK_RUN = "cross_paper"


def published_run(root: Path | None = None) -> Path:
    """The published benchmark run folder: ``cross_paper`` of the results pack that ships
    with lkm, verified against the pack's manifest and its pin (:mod:`lkm.report.pack`)."""
    from lkm.report.pack import published_pack

    pack = published_pack(root)
    if BENCHMARK_RUN not in pack.runs:
        raise LkmError(f"{pack.root}: the published results pack (version {pack.version}) has no {BENCHMARK_RUN}; "
                       "give a local run with --against results/cross_paper")
    return pack.root / BENCHMARK_RUN


def verify_reference(run_dir: Path) -> set[str] | None:
    """The task ids of the records a benchmark run folder given with ``--against`` ranks
    with, once the folder is found to be one; else an :class:`LkmError` line naming the
    file. A local run's spec.yaml must be the one its plan.json was written from
    (:meth:`RunStore.read_plan`, which ``lkm report`` uses too), the plan's fits those of
    its spec, every one recorded and each record consistent (:func:`_check_records`). A
    run of a results pack (None: all its records) has every file checked against the
    pack's manifest instead (:func:`_verify_pack_of`), as its plan.json, a snapshot's, has
    no hash. Either must be a benchmark (:func:`ranking_gaps`)."""
    from lkm.engine.store import RunStore
    from lkm.report.pack import is_pack
    from lkm.report.ranking import ranking_gaps
    from lkm.spec import load_spec, planned_fits

    run_dir = Path(run_dir)
    if not (run_dir / "spec.yaml").is_file():
        raise LkmError(f"{run_dir}: not a run folder of the benchmark (no spec.yaml); give --against results/cross_paper")
    if is_pack(run_dir.parent):
        _verify_pack_of(run_dir)
        plan: dict[str, Any] = {}
    else:
        plan = RunStore(run_dir).read_plan()  # refuses a missing or unreadable plan.json, and a spec.yaml edited since
        if plan.get("spec_sha256") is None or not plan.get("task_ids"):
            raise LkmError(f"{run_dir / 'plan.json'}: names no spec hash or no fits, so spec.yaml and the records "
                           f"cannot be checked against it; {_rerun(run_dir)}")
    spec = load_spec(run_dir / "spec.yaml", max_fits=sys.maxsize)  # the run it describes was already allowed
    gaps = ranking_gaps(spec)
    if gaps:
        raise LkmError(f"{run_dir}: not a benchmark run to rank against (spec {spec.name}): {'; '.join(gaps)}")
    if not plan:
        return None
    task_ids = set(plan["task_ids"])
    found = plan.get("splits")
    splits: dict[str, Any] = found if isinstance(found, dict) else {}
    expected = planned_fits(spec, {d.id: _count(splits.get(d.id)) for d in spec.datasets})
    if len(task_ids) != expected:
        raise LkmError(f"{run_dir / 'plan.json'}: lists {len(task_ids)} fits where its spec.yaml and splits plan "
                       f"{expected}: the plan was edited; {_rerun(run_dir)}")
    _check_records(RunStore(run_dir), spec, task_ids)
    return task_ids


def _count(value: Any) -> int:
    """A plan's split count, 0 for anything that is not a count (an edited plan)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rerun(run_dir: Path) -> str:
    return f"rerun `lkm run {run_dir / 'spec.yaml'} --out {run_dir}` to rewrite it (recorded fits are not refitted)"


def _verify_pack_of(run_dir: Path) -> None:
    """Check every file of the results pack holding ``run_dir`` against its manifest, and
    for the pack that ships with lkm (the clone's or the wheel's) the manifest against its
    pin (:mod:`lkm.report.pack`)."""
    from lkm.report.pack import published_folder, published_pack, verify_pack

    if run_dir.parent.resolve() == published_folder().resolve():
        published_pack()
    else:
        verify_pack(run_dir.parent)


def _check_records(store: Any, spec: Any, task_ids: set[str]) -> None:
    """Refuse records that do not match the plan: a planned fit without a finished
    record (ok with its accuracy, failed, or not applicable), a record of a data set or
    method the spec lacks, two records of the same fit, or an accuracy that disagrees
    with the misclassified rows the record lists."""
    from lkm.engine.store import is_complete

    where = store.records_dir
    fix = f"restore the records, or rerun `lkm run {store.root / 'spec.yaml'} --out {store.root}`"
    datasets, methods = {d.id for d in spec.datasets}, {m.name for m in spec.methods}
    seen: dict[tuple[str, ...], str] = {}
    recorded = set()
    for rec in store.iter_records():
        if rec["task_id"] not in task_ids or not (is_complete(rec) or rec.get("status") == "error"):
            continue
        recorded.add(rec["task_id"])
        fit = (str(rec.get("dataset")), str(rec.get("split")), str(rec.get("method")),
               json.dumps(rec.get("params"), sort_keys=True, default=str))
        name = "/".join(fit[:3])
        if fit[0] not in datasets or fit[2] not in methods:
            raise LkmError(f"{where}: the record {rec['task_id']} is of {name}, not a data set and method of "
                           f"{store.root / 'spec.yaml'}: the records were edited; {fix}")
        if fit in seen:
            raise LkmError(f"{where}: records {seen[fit]} and {rec['task_id']} both claim the fit {name} {fit[3]}: "
                           f"the records were edited; {fix}")
        seen[fit] = rec["task_id"]
        errors, n_test = rec.get("errors"), rec.get("n_test")
        if rec.get("status") == "ok" and isinstance(errors, list) and isinstance(n_test, int) and n_test > 0 \
                and not math.isclose((n_test - len(errors)) / n_test, rec["accuracy"], abs_tol=1e-9):
            raise LkmError(f"{where}: the record of {name} says accuracy {rec['accuracy']:g} but lists "
                           f"{len(errors)} misclassified of {n_test} test rows: the records were edited; {fix}")
    if recorded != task_ids:
        raise LkmError(f"{where}: {len(task_ids - recorded)} of the {len(task_ids)} fits planned in "
                       f"{store.root / 'plan.json'} have no finished record (the run did not finish, or records "
                       f"were removed or edited): finish it with `lkm run {store.root / 'spec.yaml'} --out {store.root}` "
                       "(recorded fits are not refitted)")


def method_entry(estimator: str, name: str | None, grids: dict[str, list[Any]], cv: int, seed: int,
                 budget: TuningBudget | None = None) -> dict[str, Any]:
    """The spec entry of the new method: parameters with one value are fixed, those with
    several are tuned by the reference's inner CV (``cv`` folds, ``seed``). Against a
    reference whose methods draw ``budget.candidates`` settings from ranges
    (:class:`TuningBudget`), the new method gets the same budget: each numeric parameter's
    smallest and largest value bound a log-uniform range (integers stay integers), text
    values are a choice; a parameter list of choices alone with no more combinations than
    the budget is searched whole, as a grid."""
    fixed = {k: v[0] for k, v in grids.items() if len(v) == 1}
    tuned = {k: v for k, v in grids.items() if len(v) > 1}
    entry: dict[str, Any] = {"name": name or estimator.rsplit(".", 1)[-1], "estimator": estimator}
    if fixed:
        entry["params"] = fixed
    if tuned and budget is not None:
        space = {k: _range_of(v) for k, v in tuned.items()}
        if all("choice" in r for r in space.values()) and math.prod(len(v) for v in tuned.values()) <= budget.candidates:
            entry["tune"] = {"grid": tuned, "cv": cv, "seed": seed}
        else:
            entry["tune"] = {"space": space, **budget.tune_fields(), "cv": cv, "seed": seed}
    elif tuned:
        entry["tune"] = {"grid": tuned, "cv": cv, "seed": seed}
    return entry


def _range_of(values: list[Any]) -> dict[str, list[Any]]:
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) < len(values) or min(numbers) <= 0:
        return {"choice": list(values)}
    kind = "logint" if all(isinstance(v, int) for v in numbers) else "log"
    return {kind: [min(numbers), max(numbers)]}


@dataclass(frozen=True)
class TuningBudget:
    """The tuning budget a benchmark's methods share: settings drawn per method, and the
    successive-halving factor (None: none)."""

    candidates: int
    halving: int | None

    def tune_fields(self) -> dict[str, Any]:
        return {"candidates": self.candidates, **({"halving": self.halving} if self.halving else {})}

    def describe(self) -> str:
        return f"{self.candidates} settings" + (f", successive halving by {self.halving}" if self.halving else "")


def tuning_budget(reference: Path) -> TuningBudget | None:
    """The budget of a reference whose tuned methods all draw their settings from ranges
    (the same ``candidates`` and ``halving``); None for a reference tuned by grids."""
    from lkm.spec import load_spec

    spec = load_spec(reference / "spec.yaml", max_fits=sys.maxsize)
    budgets = {(m.tune.candidates, m.tune.halving) for m in spec.methods if m.tune is not None and m.tune.space is not None}
    if len(budgets) != 1 or any(m.tune is not None and m.tune.space is None for m in spec.methods):
        return None
    candidates, halving = budgets.pop()
    return TuningBudget(int(candidates or 0), halving)


def check_budget(entry: dict[str, Any], budget: TuningBudget | None, where: str) -> None:
    """A method entry from a file tuned beyond the reference's budget is refused: a grid of
    more settings than the budget, or a space with other candidates or halving."""
    tune = entry.get("tune")
    if budget is None or not isinstance(tune, dict):
        return
    if "space" in tune:
        for key, want in budget.tune_fields().items():
            if tune.setdefault(key, want) != want:
                raise LkmError(f"{where}: tune.{key} = {tune[key]!r}, but every method of the reference has "
                               f"{key} = {want!r}: the same budget for all ({budget.describe()})")
        if budget.halving is None and tune.get("halving"):
            raise LkmError(f"{where}: tune.halving: the reference searches without halving")
    elif isinstance(tune.get("grid"), dict):
        size = math.prod(len(v) if isinstance(v, list) else 1 for v in tune["grid"].values())
        if size > budget.candidates:
            raise LkmError(f"{where}: tune.grid has {size} settings, more than the reference's budget of "
                           f"{budget.candidates}: give a space (ranges) and lkm draws {budget.candidates} from it")


def compare_spec(reference: Path, entry: dict[str, Any], source: str | None = None, max_fits: int | None = None) -> Any:
    """The spec that runs ``entry`` (a method entry as in a spec's ``methods:``) on the
    reference run's data sets, protocol and preprocessing (its own spec.yaml). ``source``
    names the entry in errors (default: ``compare NAME``); ``max_fits`` is the plan-size
    limit (``--max-fits``)."""
    from lkm.spec import load_spec, spec_from_dict

    ref = load_spec(reference / "spec.yaml", max_fits=sys.maxsize)  # the reference's run was already allowed
    if entry.get("name") in {m.name for m in ref.methods}:
        raise LkmError(f"{entry['name']}: a method of that name is in the benchmark already; give another with --name")
    data = ref.model_dump(mode="json", exclude={"smoke", "paper", "perturb"}, exclude_none=True)
    data.update(name=f"compare-{_slug(entry['name'])}", description=f"{entry['name']} on the splits of {ref.name}",
                methods=[entry], outputs={"tables": ["summary"], "figures": []})
    return spec_from_dict(data, source or f"compare {entry['name']}", max_fits=max_fits)


def inner_cv(reference: Path) -> tuple[int, int]:
    """The inner-CV folds and seed the reference's methods share (3 and 0 for the benchmark)."""
    from lkm.spec import load_spec

    spec = load_spec(reference / "spec.yaml", max_fits=sys.maxsize)
    tunes = {(m.tune.cv, m.tune.seed) for m in spec.methods if m.tune is not None}
    return sorted(tunes)[0] if tunes else (3, 0)


def _slug(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "method"


def fit_count(spec: Any, n_splits: dict[str, int]) -> tuple[int, int]:
    """``(tasks, model fits per task)`` of the compare spec: one task per data set and
    outer fold; a tuned task fits every setting on every inner fold (with halving: every
    setting on the small parts, then the kept ones on whole folds, at most), then refits once."""
    from lkm.spec.size import halving_kept, tuned_fit_count

    tune = spec.methods[0].tune
    if tune is None:
        return sum(n_splits.values()), 1
    kept = halving_kept(tune.size, tune.halving) if tune.halving else 0
    return sum(n_splits.values()), tuned_fit_count(tune.size, tune.cv, kept)


class NoResult(LkmError):
    """The new method has no successful fit on any data set: there is nothing to rank."""


def write_comparison(new_run: Path, reference: Path, out: Path, smoke: bool = False,
                     reference_ids: set[str] | None = None,
                     calibration: Calibration | None = None) -> tuple[list[Path], dict[str, Any]]:
    """Rank the one method of run ``new_run`` (the records of its plan) among the methods of
    ``reference`` (the records of ``reference_ids``, from :func:`verify_reference`; None:
    all, for the published pack) on the data sets both have
    (:func:`lkm.report.ranking.write_ranking` into ``out``), the reference's seconds
    scaled by ``calibration``'s factor (None: shown as recorded, with a note that they
    come from another machine and day). The payload adds ``selected`` (per data set,
    what the new method's inner CV chose, :func:`tuned_choices`) and ``timing`` (the
    note). Raises :class:`NoResult` when the new method has no successful fit."""
    from lkm.engine.store import RunStore
    from lkm.report.ranking import (
        inner_cv_words,
        load_benchmark_run,
        planned_splits,
        scores_table,
        seconds_per_fold,
        write_ranking,
    )

    new_ids = set(RunStore(new_run).read_plan().get("task_ids") or []) or None
    spec_new, rec_new, best_new = load_benchmark_run(new_run, new_ids)
    name = spec_new.methods[0].name
    if best_new.empty:
        raise NoResult(f"{name}: no successful fit on any data set, nothing to rank (see {new_run / 'tables'}/)")
    spec_ref, rec_ref, best_ref = load_benchmark_run(reference, reference_ids)
    new_sets = [d.id for d in spec_new.datasets]
    if [d.id for d in spec_ref.datasets] != new_sets or spec_ref.describe_protocol() != spec_new.describe_protocol():
        raise LkmError(f"{new_run}: its data sets or protocol are not those of {reference} "
                       "(run `lkm compare` again: it copies them from the reference)")
    splits_new, splits_ref = planned_splits(new_run), planned_splits(reference)
    differ = sorted(d for d in set(splits_new) & set(splits_ref) if splits_new[d] != splits_ref[d])
    if differ:
        raise LkmError(f"{reference / 'plan.json'}: {differ[0]} has {splits_ref[differ[0]]} outer splits there but "
                       f"{splits_new[differ[0]]} on the data (the plan of {new_run}): the plan was edited")
    table_ref = scores_table(reference, spec_ref, rec_ref, best_ref)
    table_new = scores_table(new_run, spec_new, rec_new, best_new)
    table = pd.concat([table_ref, table_new], axis=1)
    table.attrs["missing"] = {**table_ref.attrs.get("missing", {}), **table_new.attrs.get("missing", {})}
    factor = calibration.factor if calibration is not None else 1.0
    seconds = pd.concat([factor * seconds_per_fold(spec_ref, rec_ref), seconds_per_fold(spec_new, rec_new)], axis=1)
    timing = (calibration.text(), calibration.short()) if calibration is not None else (
        unscaled_timing(reference), "seconds from two machines and days, not calibrated")
    method = spec_new.methods[0]
    chosen = tuned_choices(rec_new, name, method.tune.params if method.tune is not None else [])
    selected = {d: chosen[d] for d in new_sets if d in chosen}
    return write_ranking(table, seconds, out, what=f"{name} against the benchmark",
                         protocol=spec_ref.describe_protocol(), tuning=inner_cv_words(spec_ref), smoke=smoke,
                         highlight=name, timing=timing,
                         extra={"new_method": name, "new_run": str(new_run), "reference": str(reference),
                                "selected": selected, "timing": timing[0],
                                                "failed_datasets": {d: w for (d, m), w in table_new.attrs.get("missing", {}).items()
                                                                    if m == name}})


# -- seconds from two machines ----------------------------------------------------------------
#: The reference method refitted now to put the recorded seconds on this machine's scale,
#: on the CALIBRATION_SETS smallest data sets of the benchmark (the first tuned method if
#: the benchmark has no such method).
CALIBRATION_METHOD, CALIBRATION_SETS = "SVM", 3


@dataclass(frozen=True)
class Calibration:
    """A reference method refitted now on a few data sets (the benchmark's folds and
    inner CV): ``factor`` = its seconds now / its recorded seconds on the same folds; the
    reference's recorded seconds are multiplied by it where they stand beside the new
    method's. ``recorded`` and ``now`` say on which machine and day each were timed."""

    method: str
    datasets: tuple[str, ...]
    factor: float
    recorded: str
    now: str

    def text(self) -> str:
        return (f"Timing: {self.method} refitted now on {', '.join(self.datasets)} took {self.factor:.2f}× its "
                f"recorded seconds (recorded on {self.recorded}; now on {self.now}), so the benchmark's recorded "
                f"seconds are multiplied by {self.factor:.2f} beside the new method's (speed.md, accuracy_time.png).")

    def short(self) -> str:
        return f"the benchmark's seconds × {self.factor:.2f}, from {self.method} refitted on this machine"


def machine_words(provenance: dict[str, Any]) -> str:
    """``AMD EPYC, 2 CPUs, 2026-11-26``: a run's machine and day from its provenance."""
    found = provenance.get("cpu")
    cpu: dict[str, Any] = found if isinstance(found, dict) else {}
    model = cpu.get("model") or provenance.get("platform") or "an unrecorded machine"
    cpus = cpu.get("usable_cpus") or cpu.get("logical_cpus")
    day = str(provenance.get("started_at") or "")[:10] or "an unrecorded day"
    return f"{model}{f', {cpus} CPUs' if cpus else ''}, {day}"


def unscaled_timing(reference: Path) -> str:
    """The note when the seconds are not calibrated: they are from two machines and days."""
    return (f"Timing: the benchmark's seconds were recorded on {machine_words(provenance_of(reference))}, the new "
            f"method's now on {now_words()}, not calibrated: two machines and days (speed.md, accuracy_time.png).")


def _today() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")


def now_words() -> str:
    """This machine and today, as :func:`machine_words` says a run's."""
    from lkm.engine.environment import cpu_info

    return machine_words({"cpu": cpu_info(), "started_at": _today()})


def provenance_of(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def calibration_spec(reference: Path, reference_ids: set[str] | None) -> tuple[Any, str, tuple[str, ...]] | None:
    """The spec that refits the reference's :data:`CALIBRATION_METHOD` on its
    :data:`CALIBRATION_SETS` smallest data sets (by rows) as the reference ran it, the
    method's name and the data sets; None when the reference has no tuned method."""
    from lkm.engine.store import RunStore
    from lkm.spec import load_spec, spec_from_dict

    ref = load_spec(reference / "spec.yaml", max_fits=sys.maxsize)
    tuned = [m for m in ref.methods if m.tune is not None]
    method = next((m for m in tuned if m.name == CALIBRATION_METHOD), tuned[0] if tuned else None)
    if method is None:
        return None
    records = RunStore(reference).records_frame(reference_ids)
    ok = records[(records["status"] == "ok") & (records["method"] == method.name)]
    rows = (ok["n_train"].astype(float) + ok["n_test"].astype(float)).groupby(ok["dataset"]).mean()
    sets = tuple(str(d) for d in rows.sort_values(kind="stable").index[:CALIBRATION_SETS])
    data = ref.model_dump(mode="json", exclude={"smoke", "paper", "perturb"}, exclude_none=True)
    data.update(name=f"calibrate-{_slug(method.name)}", description=f"{method.name} of {ref.name} refitted to time it",
                datasets=[e for d, e in zip(ref.datasets, data["datasets"], strict=True) if d.id in sets],
                methods=[method.model_dump(mode="json", exclude_none=True)], outputs={"tables": [], "figures": []})
    return spec_from_dict(data, f"calibration of {method.name}", max_fits=sys.maxsize), method.name, sets


def timing_factor(now: pd.DataFrame, recorded: pd.DataFrame, method: str) -> float | None:
    """Seconds now / recorded (fit + predict, summed over the outer folds both have) of
    ``method``; None without a common fold."""
    def per_fold(records: pd.DataFrame) -> pd.Series:
        ok = records[(records["status"] == "ok") & (records["method"] == method)]
        seconds = ok["fit_seconds"].astype(float) + ok["predict_seconds"].astype(float)
        return seconds.groupby([ok["dataset"], ok["split"]]).mean()

    a, b = per_fold(now), per_fold(recorded)
    common = a.index.intersection(b.index)
    if common.empty or float(b[common].sum()) <= 0:
        return None
    return float(a[common].sum()) / float(b[common].sum())
