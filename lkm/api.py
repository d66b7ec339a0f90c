"""lkm from Python: run a spec and rank a new method against the benchmark, as the
``lkm run`` and ``lkm compare`` commands do, returning data frames instead of printing.

The commands and these functions share one core: :func:`plan_spec` and
:func:`execute_plan` (plan, fit what the run folder lacks, write provenance and the
report) and :func:`prepare_comparison` / :func:`rank_against` (the new method's spec on
the reference's splits, then its ranking). What a run says while it runs goes to a
:class:`RunObserver`, silent here; the CLI's printer (:mod:`lkm.cli.running`) prints it.

Public entry points: :func:`run`, :func:`compare`, :func:`read_records` and
:func:`published_folder`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lkm.engine.workers import DEFAULT_JOBS
from lkm.errors import LkmError, SpecError

if TYPE_CHECKING:
    import pandas as pd

    from lkm.engine.runner import Plan, RunSummary
    from lkm.engine.store import RunStore
    from lkm.report.compare import Calibration
    from lkm.spec import Spec

__all__ = ["Comparison", "RunResult", "compare", "published_folder", "read_records", "run"]

#: The package whose paper subpackages ship the specs `lkm run NAME` finds by name (found
#: by name, as the ``lkm.outputs`` entry point finds it: it sits beside this module).
PAPERS_PACKAGE = "lkm.papers"


# -- what a run says while it runs ----------------------------------------------------
class RunObserver:
    """What a run reports as it goes; this one says nothing (:func:`run`, :func:`compare`).
    The command line's printer overrides each hook (:class:`lkm.cli.running.RunPrinter`)."""

    def status(self, text: str) -> contextlib.AbstractContextManager[Any]:
        """A block of work described by ``text`` (loading data, writing the report)."""
        return contextlib.nullcontext()

    def planned(self, spec: Spec, plan: Plan, done: set[str], todo: int, run_dir: Path) -> None:
        """The plan is written; ``done``: the task ids recorded before this run, ``todo``:
        how many fits this run makes (those neither recorded nor left out, :attr:`Plan.not_run`)."""

    def fitting(self, todo: int) -> contextlib.AbstractContextManager[Callable[[int], None]]:
        """The fits are running: the block gets ``advance(n)``, called after n more fits."""
        return contextlib.nullcontext(lambda n: None)

    def estimate(self, seconds_left: float) -> None:
        """While fitting: the wall seconds the remaining fits should take, each at its
        (method, data set)'s mean recorded seconds so far (:func:`lkm.engine.store.seconds_left`)."""

    def interrupted(self, exc: KeyboardInterrupt, run_dir: Path) -> None:
        """Ctrl-C or SIGTERM while fitting: every finished fit is recorded. Re-raises."""
        raise exc


QUIET = RunObserver()


@dataclass
class RunOutcome:
    """One run of a spec into its folder (:func:`execute_plan`)."""

    spec: Spec
    plan: Plan
    store: RunStore
    summary: RunSummary
    #: The tables and figures written (a :class:`lkm.report.ReportResult`); None: they were current.
    written: list[Path] | None

    @property
    def run_dir(self) -> Path:
        return self.store.root


# -- the shared core of `lkm run` and run() ------------------------------------------
def spec_path(spec: Path) -> Path:
    """SPEC as given when it is a file or looks like a path; a bare name (`lpl_vs_svm`)
    is a spec lkm ships (`lkm specs list`), so `lkm run NAME` works from any folder."""
    from lkm.reproduction.runs import packaged_specs

    # a shipped name may hold a dot (a reading's variant: cevikalp_usps.q_half); .yaml marks a path
    if spec.exists() or spec.suffix in (".yaml", ".yml") or len(spec.parts) > 1:
        return spec
    shipped = packaged_specs(PAPERS_PACKAGE)
    found = shipped.get(spec.name)
    if found is None:
        from lkm.errors import did_you_mean

        raise LkmError(f"{spec}: no such spec file, nor a spec lkm ships{did_you_mean(spec.name, shipped)} "
                       "(`lkm specs list` lists them)")
    return found


def default_run_dir(spec: Spec) -> Path:
    """Where a run writes unless told: ``results/<spec name>``."""
    return Path("results") / spec.name


def plan_spec(spec: Spec, source: str, run_dir: Path, *, claim: bool = True,
              observer: RunObserver = QUIET) -> tuple[RunStore, Plan]:
    """The run folder's store and the plan (data loaded, splits drawn, grids expanded:
    :func:`lkm.engine.runner.build_plan`). With ``claim`` the folder is checked first
    (:meth:`RunStore.claim`): a file, or a folder lkm did not create, is refused before
    any data is read."""
    from lkm.engine.runner import build_plan
    from lkm.engine.store import RunStore

    store = RunStore(run_dir)
    if claim:
        store.claim(create=False)
    with observer.status("loading data and planning..."):
        plan = build_plan(spec, data_dir=os.environ.get("LKM_DATA_DIR"), source=source)
    return store, plan


def check_same_run(spec: Spec, plan: Plan, store: RunStore, fresh: bool) -> None:
    """Refuse to resume a folder holding another spec's run (:meth:`RunStore.check_same_run`).
    A perturbed rerun (`lkm reproduce`'s fragility check) follows the plain run's selected
    settings, which may change between runs: its folder keeps every perturbed record."""
    from lkm.spec import spec_to_yaml

    if not fresh and spec.perturb is None:
        store.check_same_run(spec_to_yaml(spec), plan.task_ids)


def execute_plan(spec: Spec, plan: Plan, store: RunStore, source: str, *, jobs: int = DEFAULT_JOBS, fresh: bool = False,
                 cluster: Any = None, command: str, observer: RunObserver = QUIET) -> RunOutcome:
    """Fit what the run folder does not hold yet, write provenance and rebuild the report
    unless it is current, holding the folder's lock throughout (a second run on it stops
    at once, naming this process). ``command`` is recorded in provenance.json."""
    with store.lock():
        check_same_run(spec, plan, store, fresh)
        summary, written = _fit_and_report(spec, plan, store, source, jobs=jobs, fresh=fresh, cluster=cluster,
                                           command=command, observer=observer)
    return RunOutcome(spec, plan, store, summary, written)


def _warm_up_report() -> None:
    """While the workers fit: import pyplot and load the figures' fonts
    (:func:`lkm.report.figures.warm_up_figures`), and read what provenance records regardless
    of the run (:func:`lkm.engine.environment.prefetch_provenance`)."""
    from lkm.engine.environment import prefetch_provenance
    from lkm.report.figures import warm_up_figures

    warm_up_figures()
    prefetch_provenance()


def _fit_and_report(spec: Spec, plan: Plan, store: RunStore, source: str, *, jobs: int, fresh: bool, cluster: Any,
                    command: str, observer: RunObserver) -> tuple[RunSummary, list[Path] | None]:
    """The fits, provenance and report of :func:`execute_plan`. Returns the execution
    summary and the files written (None: the report was current)."""
    from lkm.engine.runner import dataset_provenance, execute, write_plan
    from lkm.report import build_report
    from lkm.spec import spec_to_yaml

    done = store.completed_ids() if not fresh else set()
    store.prepare(fresh=fresh)
    store.write_spec(spec_to_yaml(spec))
    write_plan(plan, store)
    todo = len(plan.task_ids - done - set(plan.not_run))
    observer.planned(spec, plan, done, todo, store.root)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    warm_up = None
    if todo:  # this process only waits while workers fit: import the figures' library meanwhile
        warm_up = threading.Thread(target=_warm_up_report, daemon=True)
        warm_up.start()
    try:
        # SIGTERM is handled like Ctrl-C (the command runs under interrupt_on): execute()
        # kills its workers, then the observer says so.
        with observer.fitting(todo) as advance:
            summary = execute(plan, store, jobs=jobs, on_progress=advance, cluster=cluster,
                              on_estimate=observer.estimate)
    except KeyboardInterrupt as exc:
        observer.interrupted(exc, store.root)
        raise
    if warm_up is not None:
        warm_up.join()  # the report draws figures: never on a half-imported pyplot
    store.write_provenance({
        "command": command, "spec_source": source, "started_at": started, "seconds": round(summary.seconds, 3),
        **({"jobs": jobs} if cluster is None else {"jobs": None, "cluster": cluster.provenance()}),
        "seeds": {"protocol": getattr(spec.protocol, "seed", None)},
        "datasets": dataset_provenance(plan),
        "tasks": {"planned": summary.planned, "recorded_before": summary.skipped, "ran": summary.ran, "failed": summary.failed,
                  **({"not_run": summary.not_run} if summary.not_run else {})},
    })
    stamp = store.report_stamp(spec_to_yaml(spec), plan.task_ids)
    if summary.ran == 0 and summary.failed == 0 and store.report_is_current(stamp):
        return summary, None
    with observer.status("writing tables and figures..."):
        written = build_report(store, spec, plan.task_ids, plan.unavailable)
    store.mark_report(stamp, written)
    return summary, written


# -- run() ----------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run` made: the run folder and its records.

    Parameters
    ----------
    run_dir : pathlib.Path
        The run folder (spec.yaml, plan.json, records/, tables/, figures/, provenance.json).
    spec : lkm.spec.Spec
        The validated spec that ran.
    records : pandas.DataFrame
        One row per fit of the plan: ``dataset``, ``method``, ``params`` (and one
        ``param_<name>`` column each), ``split``/``fold``, ``accuracy``, ``fit_seconds``,
        ``status``... (:meth:`lkm.engine.store.RunStore.records_frame`).
    ran : int
        Fits run by this call (0: every fit was recorded before).
    failed : int
        Fits of this call that failed (recorded with status ``error``).
    files : list of pathlib.Path
        Tables and figures written by this call (empty: the report was current).

    Examples
    --------
    >>> import tempfile
    >>> from lkm.api import run
    >>> spec = {"name": "iris-knn", "datasets": ["sklearn-iris"],
    ...         "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
    ...         "methods": [{"name": "kNN", "estimator": "sklearn.neighbors.KNeighborsClassifier"}]}
    >>> result = run(spec, tempfile.mkdtemp())
    >>> result.ran, result.failed, result.records["status"].tolist()
    (3, 0, ['ok', 'ok', 'ok'])
    >>> result.summary[["dataset", "method"]].values.tolist()
    [['sklearn-iris', 'kNN']]
    """

    run_dir: Path
    spec: Spec
    records: pd.DataFrame
    ran: int
    failed: int
    files: list[Path] = field(default_factory=list)

    @property
    def summary(self) -> pd.DataFrame:
        """The run's summary table at the selected settings (``tables/summary.csv``)."""
        import pandas as pd

        path = self.run_dir / "tables" / "summary.csv"
        if not path.is_file():
            raise LkmError(f"{path}: this run wrote no summary table")
        return pd.read_csv(path)


def load_spec_like(spec: Any, *, smoke: bool = False, max_fits: int | None = None) -> tuple[Spec, str]:
    """A validated :class:`~lkm.spec.Spec` and what names it in errors, from a spec lkm
    ships (its name), a YAML file, a mapping as in a YAML spec, or a Spec (as is)."""
    from lkm.spec import Spec, load_spec, spec_from_dict

    if isinstance(spec, Spec):
        return spec, f"<spec {spec.name}>"
    if isinstance(spec, Mapping):
        source = f"<spec {spec.get('name', 'dict')}>"
        return spec_from_dict(dict(spec), source, smoke=smoke, max_fits=max_fits), source
    if isinstance(spec, str | os.PathLike):
        path = spec_path(Path(spec))
        return load_spec(path, smoke=smoke, max_fits=max_fits), str(path)
    raise SpecError(f"spec: expected a spec name, a YAML path, a mapping or an lkm.spec.Spec, got {type(spec).__name__}")


@contextlib.contextmanager
def _data_dir(data_dir: str | os.PathLike[str] | None) -> Iterator[None]:
    """``LKM_DATA_DIR`` set to ``data_dir`` for the block (worker processes read it too)."""
    if data_dir is None:
        yield
        return
    if not Path(data_dir).is_dir():
        raise LkmError(f"data_dir: {data_dir} is not a directory")
    before = os.environ.get("LKM_DATA_DIR")
    os.environ["LKM_DATA_DIR"] = str(data_dir)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LKM_DATA_DIR", None)
        else:
            os.environ["LKM_DATA_DIR"] = before


def _records(outcome: RunOutcome) -> pd.DataFrame:
    return outcome.store.records_frame(outcome.plan.task_ids)


def run(spec: Any, out: str | os.PathLike[str] | None = None, *, jobs: int = DEFAULT_JOBS, smoke: bool = False,
        data_dir: str | os.PathLike[str] | None = None, max_fits: int | None = None) -> RunResult:
    """Run a spec as ``lkm run`` does, silently, and return its records.

    The same plan, run folder and report as the command: records are appended as each
    fit ends, so calling it again resumes (fitting only what is missing) and a folder
    holding another spec's run is refused; the tables and figures are written to the run
    folder.

    Parameters
    ----------
    spec : str, path, mapping or lkm.spec.Spec
        A spec lkm ships by name (``"quickstart"``; ``lkm specs list``), a YAML file, a
        mapping with the keys of a YAML spec (docs/specs.md), or a validated Spec.
    out : path, optional
        The run folder (default ``results/<spec name>`` under the working folder).
    jobs : int, default 1
        Worker processes (-1: one per core).
    smoke : bool, default False
        The spec's smoke variant (its ``smoke:`` keys: few data sets and folds).
    data_dir : path, optional
        Where the data sets are (default: ``$LKM_DATA_DIR``).
    max_fits : int, optional
        The plan-size limit (default :data:`lkm.spec.MAX_FITS`).

    Returns
    -------
    RunResult
        The run folder, the spec, a DataFrame of the plan's records (one row per fit),
        and how many fits ran and failed in this call.

    Raises
    ------
    lkm.errors.LkmError
        An unknown spec name, an invalid spec (:class:`~lkm.errors.SpecError`), missing
        data, or a run folder lkm may not write into; one line each.

    See Also
    --------
    compare : rank a new classifier against the benchmark.
    read_records : the records of a run folder written earlier.

    Examples
    --------
    >>> import tempfile
    >>> from lkm.api import run
    >>> spec = {"name": "iris-knn", "datasets": ["sklearn-iris"],
    ...         "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
    ...         "methods": [{"name": "kNN", "estimator": "sklearn.neighbors.KNeighborsClassifier",
    ...                      "sweep": {"n_neighbors": [1, 5]}}]}
    >>> result = run(spec, tempfile.mkdtemp())
    >>> len(result.records), sorted(result.records["param_n_neighbors"].unique().tolist())
    (6, [1, 5])
    """
    if jobs == 0 or jobs < -1:
        raise LkmError(f"jobs={jobs}: give a number of worker processes >= 1, or -1 for one per core")
    with _data_dir(data_dir):
        s, source = load_spec_like(spec, smoke=smoke, max_fits=max_fits)
        run_dir = Path(out) if out is not None else default_run_dir(s)
        store, plan = plan_spec(s, source, run_dir)
        outcome = execute_plan(s, plan, store, source, jobs=jobs, command=f"lkm.api.run({source!r})")
    return RunResult(run_dir, s, _records(outcome), outcome.summary.ran, outcome.summary.failed,
                     list(outcome.written or []))


# -- compare() ------------------------------------------------------------------------
@dataclass
class ComparisonPlan:
    """The new method's run against a benchmark (:func:`prepare_comparison`)."""

    spec: Spec
    source: str  # what names the new method in errors and provenance
    reference: Path
    reference_ids: set[str] | None  # the reference records to rank with (None: all, a results pack's run)
    run_dir: Path


def reference_run(against: str | os.PathLike[str] | None, smoke: bool) -> tuple[Path, set[str] | None]:
    """The reference run folder and the task ids of the records to rank with (None: every
    record of a results pack's run, its files checked against the pack's manifest): by
    default the published run, with ``smoke`` results/cross_paper-smoke, else the folder
    given, checked by :func:`lkm.report.compare.verify_reference`."""
    from lkm.report.compare import published_run, verify_reference

    if against is None and not smoke:
        return published_run(), None
    ref = Path(against) if against is not None else Path("results") / "cross_paper-smoke"
    if against is None and not (ref / "spec.yaml").is_file():
        raise LkmError(f"{ref}: no smoke run of the benchmark here; run `lkm run cross_paper --smoke` first "
                       "(or give --against)")
    return ref, verify_reference(ref)


def estimator_name(estimator: Any) -> str:
    """A method key, dotted path or YAML file as given; a class as its dotted path."""
    if isinstance(estimator, str | os.PathLike):
        return os.fspath(estimator)
    if isinstance(estimator, type):
        return f"{estimator.__module__}.{estimator.__qualname__}"
    raise SpecError(f"estimator: expected a method key, a dotted path or a classifier class, got "
                    f"{type(estimator).__name__} (pass the class, not an instance, and its parameters as params)")


def method_entry_of(estimator: Any, params: Mapping[str, Any] | None, name: str | None, reference: Path,
                    ) -> tuple[dict[str, Any], str | None]:
    """The new method's spec entry, and what names it in errors (its YAML file, if one).
    ``estimator``: a method key, a dotted path, a class, or a YAML file holding one method
    entry ({name, estimator, params, tune}). ``params``: NAME -> one value (fixed) or a
    list of values (tuned by the reference's inner CV, with the reference's tuning budget
    when it draws its settings from ranges: :func:`lkm.report.compare.method_entry`)."""
    from lkm.report.compare import check_budget, inner_cv, method_entry, tuning_budget

    cv, seed = inner_cv(reference)
    budget = tuning_budget(reference)
    key = estimator_name(estimator)
    path = Path(key)
    if path.suffix in (".yaml", ".yml"):
        from lkm.spec.yaml_text import load_yaml, read_spec_text

        entry = load_yaml(read_spec_text(path), str(path))  # a YAML error: one line naming the file and line
        if not isinstance(entry, dict) or "estimator" not in entry:
            raise SpecError(f"{path}: expected one method entry, e.g. {{name: Mine, estimator: pkg.Mine, tune: {{grid: {{C: [1, 10]}}}}}}")
        entry.setdefault("name", name or str(entry["estimator"]).rsplit(".", 1)[-1])
        if not isinstance(entry["name"], str) or not entry["name"].strip():
            raise SpecError(f"{path}: name: expected the method's name as text, got {entry['name']!r}")
        if "tune" in entry and isinstance(entry["tune"], dict):
            entry["tune"] = {"cv": cv, "seed": seed, **entry["tune"]}
        check_budget(entry, budget, str(path))
        return entry, str(path)
    grids = {k: list(v) if isinstance(v, list | tuple) else [v] for k, v in (params or {}).items()}
    return method_entry(key, name, grids, cv, seed, budget), None


def prepare_comparison(estimator: Any, params: Mapping[str, Any] | None = None, *, name: str | None = None,
                       against: str | os.PathLike[str] | None = None, out: str | os.PathLike[str] | None = None,
                       smoke: bool = False, max_fits: int | None = None) -> ComparisonPlan:
    """The reference (checked) and the spec that runs the new method on its splits
    (:func:`lkm.report.compare.compare_spec`), and the new method's run folder (default
    ``results/compare/NAME``, ``NAME-smoke`` with ``smoke``)."""
    from lkm.report.compare import compare_spec

    reference, reference_ids = reference_run(against, smoke)
    entry, source = method_entry_of(estimator, params, name, reference)
    spec = compare_spec(reference, entry, source, max_fits)
    run_dir = Path(out) if out is not None else (
        Path("results") / "compare" / f"{spec.name.removeprefix('compare-')}{'-smoke' if smoke else ''}")
    return ComparisonPlan(spec, f"lkm compare {estimator_name(estimator)}", reference, reference_ids, run_dir)


def calibrate_timing(plan: ComparisonPlan, jobs: int = 1) -> Calibration | None:
    """Refit the reference's :data:`lkm.report.compare.CALIBRATION_METHOD` now on its
    smallest data sets (into the run's ``calibration/`` folder, every fit timed afresh)
    and compare its seconds with those recorded (:class:`lkm.report.compare.Calibration`);
    None when the reference has no tuned method, no common fold, or the refit fails (the
    seconds are then shown as recorded, said to be from another machine)."""
    from lkm.engine.store import RunStore
    from lkm.report.compare import (
        Calibration,
        calibration_spec,
        machine_words,
        now_words,
        provenance_of,
        timing_factor,
    )

    found = calibration_spec(plan.reference, plan.reference_ids)
    if found is None:
        return None
    spec, method, sets = found
    source = f"calibration of {method}"
    try:
        store, run_plan = plan_spec(spec, source, plan.run_dir / "calibration")
        execute_plan(spec, run_plan, store, source, jobs=jobs, fresh=True, command=f"{plan.source}: {source}")
    except LkmError:
        return None
    factor = timing_factor(store.records_frame(set(run_plan.task_ids)),
                           RunStore(plan.reference).records_frame(plan.reference_ids), method)
    if factor is None:
        return None
    return Calibration(method, sets, factor, machine_words(provenance_of(plan.reference)), now_words())


def rank_against(plan: ComparisonPlan, smoke: bool, calibration: Calibration | None = None) -> Comparison:
    """Rank the new method's run among the reference's methods and write the comparison
    into the run's ``comparison/`` folder (:func:`lkm.report.compare.write_comparison`),
    the reference's seconds scaled by ``calibration`` (:func:`calibrate_timing`; None:
    as recorded, said to be from another machine).
    Raises :class:`lkm.report.compare.NoResult` when the new method has no successful fit."""
    import pandas as pd

    from lkm.report.compare import write_comparison

    out = plan.run_dir / "comparison"
    files, payload = write_comparison(plan.run_dir, plan.reference, out, smoke=smoke,
                                      reference_ids=plan.reference_ids, calibration=calibration)
    shown = _read_json(out / "pairwise.json")
    pairwise = pd.DataFrame(shown["rows"], columns=shown["columns"], dtype=str)
    name = payload["new_method"]
    order = payload["methods_by_rank"]
    return Comparison(name=name, rank=order.index(name) + 1, n_methods=len(order),
                      average_ranks={m: float(payload["average_ranks"][m]) for m in order},
                      cd=float(payload["cd"]), n_datasets=int(payload["n_datasets"]), pairwise=pairwise,
                      folder=out, run_dir=plan.run_dir, reference=plan.reference, payload=payload, files=files,
                      selected=dict(payload.get("selected") or {}), timing=str(payload.get("timing") or ""))


def _read_json(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class Comparison:
    """A new method ranked against the benchmark (:func:`compare`).

    Parameters
    ----------
    name : str
        The new method's name in the tables.
    rank : int
        Its place by average rank (1 = best).
    n_methods : int
        The methods ranked, the new one included.
    average_ranks : dict of str to float
        Every ranked method's average rank over the data sets, best first (Demšar 2006).
    cd : float
        The Nemenyi critical difference at α = 0.05.
    n_datasets : int
        The data sets ranked over.
    pairwise : pandas.DataFrame
        The new method against each other one (pairwise.md's cells as text): wins / ties /
        losses, mean difference, Wilcoxon–Holm p, Bayesian signed-rank probabilities.
    folder : pathlib.Path
        The comparison's files (ranking.md, pairwise.md, speed.md, friedman.json,
        critical_difference.png, accuracy_time.png).
    run_dir : pathlib.Path
        The new method's run folder.
    reference : pathlib.Path
        The benchmark run it is ranked against.
    payload : dict
        Everything friedman.json holds (Friedman and Iman–Davenport statistics, Nemenyi
        groups, the data sets left out and why).
    files : list of pathlib.Path
        The files written into ``folder``.
    selected : dict of str to str
        Per data set, what the new method's inner CV chose on the outer folds
        (``alpha=1 (4/5)``: the most frequent value and on how many folds); empty
        without a tuned parameter.
    timing : str
        On which machines and days the seconds were measured, and the calibration
        factor applied to the benchmark's recorded seconds (if any).

    Examples
    --------
    Ranking scikit-learn's ridge classifier against the published benchmark fits it on
    130 outer folds (about half a minute):

    >>> from lkm.api import compare
    >>> result = compare("sklearn.linear_model.RidgeClassifier", {"alpha": 1.0},
    ...                  name="Ridge")  # doctest: +SKIP
    >>> result.rank, result.n_methods, round(result.cd, 2)  # doctest: +SKIP
    (18, 20, 5.81)
    """

    name: str
    rank: int
    n_methods: int
    average_ranks: dict[str, float]
    cd: float
    n_datasets: int
    pairwise: pd.DataFrame
    folder: Path
    run_dir: Path
    reference: Path
    payload: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    selected: dict[str, str] = field(default_factory=dict)
    timing: str = ""


def compare(estimator: Any, params: Mapping[str, Any] | None = None, *, name: str | None = None,
            against: str | os.PathLike[str] | None = None, out: str | os.PathLike[str] | None = None,
            jobs: int = 1, smoke: bool = False, max_fits: int | None = None,
            data_dir: str | os.PathLike[str] | None = None, calibrate: bool = True) -> Comparison:
    """Rank a classifier against every method of the benchmark, as ``lkm compare`` does.

    Only the new classifier is fitted, on the benchmark's exact splits (data sets,
    subsample, outer folds and inner CV copied from the reference run's spec.yaml); the
    other methods' results are read from the reference. The ranking follows Demšar (2006):
    average ranks, the Friedman test and the Nemenyi critical difference, with
    Wilcoxon–Holm and Bayesian signed-rank tests (Benavoli et al. 2017) against each method.

    Parameters
    ----------
    estimator : str, type or path
        A method key (``lkm methods``), a dotted path to a scikit-learn-style classifier
        (``"sklearn.linear_model.RidgeClassifier"``), its class, or a YAML file holding one
        spec method entry ({name, estimator, params, tune}).
    params : mapping, optional
        Parameter -> value (fixed) or list of values (tuned by the benchmark's inner CV on
        each training part).
    name : str, optional
        The name in the tables (default: the class name).
    against : path, optional
        A benchmark run folder (default: the published results shipped with lkm; with
        ``smoke``: ``results/cross_paper-smoke``).
    out : path, optional
        The new method's run folder (default ``results/compare/NAME``); calling again resumes.
    jobs : int, default 1
        Worker processes.
    smoke : bool, default False
        Rank against the benchmark's smoke run (checks a method end to end; not evidence).
    max_fits : int, optional
        The plan-size limit.
    data_dir : path, optional
        Where the data sets are (default: ``$LKM_DATA_DIR``).
    calibrate : bool, default True
        Refit one reference method now on the benchmark's smallest data sets and scale
        the recorded seconds by its now / recorded ratio (:func:`calibrate_timing`), so
        that the seconds compared come from one machine; False: they are shown as
        recorded, labelled with the machine and day of each.

    Returns
    -------
    Comparison
        The rank, average ranks, critical difference, pairwise table and output folder.

    Raises
    ------
    lkm.errors.LkmError
        A bad estimator path or parameter, a reference that is not a benchmark run, or no
        successful fit of the new method (:class:`lkm.report.compare.NoResult`).

    References
    ----------
    J. Demšar, "Statistical comparisons of classifiers over multiple data sets", JMLR 7 (2006).

    See Also
    --------
    run : run a whole spec.

    Examples
    --------
    >>> from lkm.api import compare
    >>> result = compare("sklearn.linear_model.RidgeClassifier", {"alpha": 1.0},
    ...                  name="Ridge")  # doctest: +SKIP
    >>> result.rank, result.n_methods  # doctest: +SKIP
    (18, 20)
    """
    if jobs == 0 or jobs < -1:
        raise LkmError(f"jobs={jobs}: give a number of worker processes >= 1, or -1 for one per core")
    with _data_dir(data_dir):
        plan = prepare_comparison(estimator, params, name=name, against=against, out=out, smoke=smoke,
                                  max_fits=max_fits)
        store, run_plan = plan_spec(plan.spec, plan.source, plan.run_dir)
        execute_plan(plan.spec, run_plan, store, plan.source, jobs=jobs,
                     command=f"lkm.api.compare({estimator_name(estimator)!r})")
        return rank_against(plan, smoke, calibrate_timing(plan, jobs) if calibrate else None)


# -- reading results ------------------------------------------------------------------
def read_records(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The records of a run folder, one row per fit, as a DataFrame.

    Works on a folder written by ``lkm run`` or :func:`run` and on a run folder of a
    results pack (:func:`published_folder`).

    Parameters
    ----------
    run_dir : path
        A run folder (it holds spec.yaml and records/).

    Returns
    -------
    pandas.DataFrame
        One row per fit: ``dataset``, ``method``, ``params`` and a ``param_<name>``
        column per parameter, ``split``, ``accuracy``, ``fit_seconds``, ``status``...
        (:meth:`lkm.engine.store.RunStore.records_frame`).

    Examples
    --------
    >>> from lkm.api import published_folder, read_records
    >>> records = read_records(published_folder() / "cross_paper")
    >>> {"dataset", "method", "accuracy"} <= set(records.columns)
    True
    """
    from lkm.engine.store import RunStore

    folder = Path(run_dir)
    if not (folder / "spec.yaml").is_file() or not (folder / "records").is_dir():
        raise LkmError(f"{folder}: not a run folder (it needs spec.yaml and records/)")
    return RunStore(folder).records_frame()


def published_folder() -> Path:
    """The results pack that ships with lkm: one run folder per published run.

    In a clone it is ``docs/runs``; in an installed wheel, its copy inside the package
    (:func:`lkm.report.pack.published_folder`). Reading it checks nothing: ``lkm compare``
    and ``lkm report --all --results published`` check every file against the pack's
    manifest and the manifest against the sha256 lkm pins (:func:`lkm.report.pack.published_pack`).

    Returns
    -------
    pathlib.Path
        The pack's folder; ``published_folder() / "cross_paper"`` is the benchmark's run.

    See Also
    --------
    read_records : the records of one of its run folders.

    Examples
    --------
    >>> from lkm.api import published_folder
    >>> (published_folder() / "cross_paper" / "spec.yaml").is_file()
    True
    """
    from lkm.report import pack

    return pack.published_folder()
