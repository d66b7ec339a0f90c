"""Expand a spec into tasks and run them.

A *task* is one fit and one prediction: dataset x split x method x parameter values.
Tasks of one (dataset, split, method) form a *job*: the job preprocesses the split
once and shares one :class:`~lkm.numerics.kernels.DistanceCache` across the whole parameter
sweep, so distances and neighbour lists are computed once per split. Jobs run in
parallel worker processes (:mod:`lkm.engine.workers`) or on a dask.distributed cluster
(:mod:`lkm.engine.cluster`); each task's record is appended to the store the moment it
finishes (by the local worker, or by this process as a cluster worker hands it back),
so an interrupted run loses at most the tasks in flight.

A spec's ``studies`` (:mod:`lkm.studies`) add one :class:`StudyTask` per (dataset,
study, parameter setting). A study runs on the **whole dataset** (the spec's
preprocessing fitted on all rows), not per split: it measures a property of the data
and a kernel, it does not train and test. Study tasks have content-hash ids like the
fits, run through the same path (one job each), are skipped once recorded, and
are stored as records with ``kind: "study"`` and their result rows under ``rows``.

A fit whose setting needs an optional extra that is not installed (``neighbors:
hnswlib``, ``backend: intelex``: :mod:`lkm.methods.extras`) is found when the plan is
built (:attr:`Plan.not_run`), never fitted, and recorded with status
:data:`~lkm.methods.extras.NOT_RUN` and the extra it ``needs`` before the first fit;
a not-run record is not a completed one, so a rerun with the extra installed fits it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lkm import __version__
from lkm.data import Dataset
from lkm.engine.store import NOT_APPLICABLE, RunStore, task_id
from lkm.engine.workers import DEFAULT_JOBS, describe_user_failure, user_code_failures
from lkm.errors import (
    DataError,
    DatasetUnavailable,
    LkmError,
    NotApplicable,
    ParameterClipped,
    SpecError,
)
from lkm.methods import resolve_estimator
from lkm.methods.base import accepts_keyword, cache_kwargs
from lkm.methods.extras import NOT_RUN, Extra, missing_extra
from lkm.numerics.kernels import DISTANCE_CHECKS, DistanceCache
from lkm.numerics.metrics import fit_scores, non_finite_rows, one_class_warning
from lkm.numerics.preprocessing import Preprocessing, preprocess
from lkm.spec import DatasetSpec, MethodSpec, Spec
from lkm.spec.protocols import Split
from lkm.spec.seeds import with_seed
from lkm.spec.size import halving_kept

if TYPE_CHECKING:
    from lkm.engine.cluster import Cluster

#: Every record lists its misclassified test rows, ``errors: [[dataset row, predicted
#: label], ...]``, for paired tests on one fixed split (McNemar, :func:`lkm.numerics.stats.mcnemar`)
#: and error galleries; left out when there are more than this many.
MAX_RECORDED_ERRORS = 5000


@dataclass(frozen=True)
class Task:
    id: str
    dataset: str
    split: Split
    method: str
    estimator: str
    params: dict[str, Any]
    tune: dict[str, Any] | None = None  # MethodSpec.tune as a dict: grid, cv, seed
    perturb: dict[str, Any] | None = None  # Spec.perturb as a dict: permute_train, blas_threads


@dataclass(frozen=True)
class StudyTask:
    """One study on one whole dataset at one parameter setting."""

    id: str
    dataset: str
    name: str  # the spec's studies[].name
    study: str  # key in lkm.studies.STUDIES
    params: dict[str, Any]
    split: None = None  # studies run on all rows

    @property
    def method(self) -> str:
        """The name shown in plan tables (the column fits use for the method)."""
        return self.name


@dataclass
class Plan:
    """Everything a run will compute, derived from a spec and the data."""

    spec: Spec
    datasets: dict[str, Dataset]
    splits: dict[str, list[Split]]
    tasks: list[Task | StudyTask]  # fits first, then study tasks
    unavailable: dict[str, str] = field(default_factory=dict)
    #: Fits not to run, by task id: their setting needs an optional extra that is not installed.
    not_run: dict[str, Extra] = field(default_factory=dict)

    @property
    def task_ids(self) -> set[str]:
        return {t.id for t in self.tasks}

    def not_run_methods(self, done: set[str] | frozenset[str] = frozenset()) -> dict[str, tuple[Extra, int]]:
        """Per method with fits not to run (in plan order; those in ``done``, recorded
        complete, left out): the extra they need and how many."""
        out: dict[str, tuple[Extra, int]] = {}
        for t in self.tasks:
            extra = self.not_run.get(t.id)
            if extra is not None and t.id not in done:
                out[t.method] = (extra, out.get(t.method, (extra, 0))[1] + 1)
        return out

    def counts(self) -> Counter[tuple[str, str]]:
        """Number of tasks per (dataset, method or study name)."""
        return Counter((t.dataset, t.method) for t in self.tasks)


def build_plan(spec: Spec, *, data_dir: str | Path | None = None, source: str = "<spec>") -> Plan:
    """Load the datasets, draw the splits and expand every method's parameter grid."""
    datasets: dict[str, Dataset] = {}
    unavailable: dict[str, str] = {}
    loaded: dict[str, Any] = {}  # whole datasets read once for all their binary tasks
    for i, d in enumerate(spec.datasets):
        try:
            datasets[d.id] = d.load(data_dir, loaded)
        except DatasetUnavailable as exc:
            if spec.missing_data == "skip":
                unavailable[d.id] = str(exc)
                continue
            raise DatasetUnavailable(f"{source}: datasets[{i}]: {exc}") from None
        except DataError as exc:
            raise DataError(f"{source}: datasets[{i}]: {exc}") from None
    splits: dict[str, list[Split]] = {}
    for ds_id, ds in datasets.items():
        if not spec.methods:
            break  # studies run on whole datasets: no splits to draw
        try:
            splits[ds_id] = spec.protocol_for(ds_id).splits(ds)
        except LkmError as exc:
            raise type(exc)(f"{source}: {exc}") from None
    tasks: list[Task | StudyTask] = []
    not_run: dict[str, Extra] = {}
    checked: set[tuple[str, str]] = set()
    for ds_spec in spec.datasets:
        if ds_spec.id not in datasets:
            continue
        protocol = spec.protocol_for(ds_spec.id).model_dump()
        ds_dump = _dataset_payload(ds_spec)
        for split in splits.get(ds_spec.id, []):
            for m in spec.methods:
                if not m.runs_on(ds_spec.id, ds_spec.task_of):
                    continue
                for params in spec.method_grid(m):
                    _check_metric_on(params.get("metric"), datasets[ds_spec.id], m, spec, source, checked)
                    params = with_seed(m, params, spec)
                    # The method's name is part of the id: two methods with the same
                    # estimator and parameters are still two rows of a table.
                    payload = {
                        "dataset": ds_dump, "protocol": protocol, "split": split.id,
                        "preprocessing": spec.preprocessing, "method": m.name, "estimator": m.estimator,
                        "params": params,
                    }
                    tune = m.tune.model_dump(exclude_none=True) if m.tune else None
                    if tune:  # only then: ids of untuned tasks stay what they were
                        payload["tune"] = tune
                    if spec.score_train:  # likewise
                        payload["score_train"] = True
                    perturb = spec.perturb.model_dump() if spec.perturb else None
                    if perturb:  # likewise: a perturbed run has ids of its own
                        payload["perturb"] = perturb
                    tasks.append(Task(task_id(payload), ds_spec.id, split, m.name, m.estimator, params, tune, perturb))
                    missing = missing_extra(m.estimator, params)
                    if missing is not None:
                        not_run[tasks[-1].id] = missing
    for ds_spec in spec.datasets:
        if ds_spec.id not in datasets:
            continue
        for st in spec.studies:
            for params in spec.study_grid(st):
                payload = {
                    "kind": "study", "dataset": _dataset_payload(ds_spec), "preprocessing": spec.preprocessing,
                    "study": st.study, "name": st.name, "params": params,
                }
                tasks.append(StudyTask(task_id(payload), ds_spec.id, st.name, st.study, params))
    return Plan(spec, datasets, splits, tasks, unavailable, not_run)


def _check_metric_on(metric: Any, dataset: Dataset, method: MethodSpec, spec: Spec, source: str,
                     checked: set[tuple[str, str]]) -> None:
    """Refuse, before any fit, a distance the dataset's shape does not allow (e.g. the
    tangent distance on data that are not square images): one line naming the method's
    key and the dataset's shape."""
    if not isinstance(metric, str) or metric not in DISTANCE_CHECKS or (metric, dataset.name) in checked:
        return
    checked.add((metric, dataset.name))
    try:
        DISTANCE_CHECKS[metric](dataset.X.shape[1])
    except DataError as exc:
        j = next(i for i, m in enumerate(spec.methods) if m is method)
        raise SpecError(f"{source}: methods[{j}] ({method.name}): metric {metric!r} on dataset {dataset.name} "
                        f"({dataset.X.shape[0]} x {dataset.X.shape[1]}): {exc}") from None


def _dataset_payload(ds_spec: DatasetSpec) -> dict[str, Any]:
    """A dataset's part of a task id; without a per-dataset ``protocol`` the key is left
    out, so ids of specs that do not use it stay what they were."""
    dump = ds_spec.model_dump()
    if dump.get("protocol") is None:
        dump.pop("protocol", None)
    return dump


@dataclass
class RunSummary:
    planned: int
    skipped: int  # already recorded before this run
    ran: int
    failed: int
    seconds: float
    first_error: str | None = None
    not_run: int = 0  # fits not run: their optional extra is not installed (Plan.not_run)


#: Where a job puts each record the moment its fit ends (a callable taking the record).
RecordSink = Callable[[dict[str, Any]], None]


@dataclass
class JobResult:
    """What a job returns: fits recorded ok, failed, the first failure's message, and its records."""

    ok: int
    failed: int
    first_error: str | None
    records: list[dict[str, Any]]


class StoreAppender:
    """The sink of local worker processes: each record appended to the run folder at once
    (a killed run loses at most the fit in flight). Picklable: it holds the folder's path."""

    def __init__(self, root: str) -> None:
        self.root = root

    def __call__(self, record: dict[str, Any]) -> None:
        RunStore(self.root).append([record])


def largest_jobs_first(plan: Plan, groups: dict[tuple[str, str, str], list[Task]],
                       studies: list[StudyTask]) -> np.ndarray:
    """The order in which :func:`execute` sends its jobs (``groups``' fits by (data set,
    split, method), then ``studies``): largest first, fits × rows (a study costs about
    one fit per row), which keeps every worker busy to the end."""
    sizes = [len(g) * plan.datasets[k[0]].X.shape[0] for k, g in groups.items()]
    sizes += [plan.datasets[t.dataset].X.shape[0] for t in studies]
    return np.argsort([-s for s in sizes], kind="stable")


def dataset_sizes(plan: Plan) -> dict[str, int]:
    """Each data set's training rows × classes (its first split's training part; all its
    rows without a split): the size by which the time-left estimate extrapolates a set's
    cost (:func:`lkm.engine.store.seconds_left`)."""
    sizes = {d: len(ds.y) * len(ds.classes) for d, ds in plan.datasets.items()}
    sizes.update({d: len(splits[0].train) * len(plan.datasets[d].classes)
                  for d, splits in plan.splits.items() if splits and d in plan.datasets})
    return sizes


def execute(
    plan: Plan,
    store: RunStore,
    *,
    jobs: int = DEFAULT_JOBS,
    on_progress: Callable[[int], None] | None = None,
    in_process: bool = False,
    cluster: Cluster | None = None,
    on_estimate: Callable[[float], None] | None = None,
) -> RunSummary:
    """Run every task of ``plan`` not yet recorded in ``store``.

    Jobs run in ``jobs`` worker processes (:func:`lkm.engine.workers.run_calls`; one worker for
    ``jobs=1``), so this process only waits: Ctrl-C (KeyboardInterrupt) kills the workers
    and propagates at once, whatever C code a fit is in, and workers die with this
    process. Each worker gets ``cores // jobs`` OpenMP and BLAS threads; each appends its
    records to the store itself.
    ``in_process=True`` runs the jobs here instead, one after the other (debuggers,
    profilers; an interrupt then waits for the C call in progress).
    With a ``cluster`` (:func:`lkm.engine.cluster.connect`) the jobs run on its workers instead
    and ``jobs`` is not used: workers hand their records back and this process alone
    appends them, each task id once (:meth:`lkm.engine.cluster.Cluster.run`).

    ``on_progress(n)`` is called with the number of tasks finished since its last call,
    as their records reach the store (counted while jobs run, so per fit, not per job);
    ``on_estimate(seconds)`` with the wall seconds the rest should take, each remaining
    fit at its (method, data set)'s mean recorded seconds so far, else its method's mean
    scaled by the data set's relative cost (:func:`lkm.engine.store.seconds_left`; local
    workers only).
    """
    from lkm.engine.store import RecordTally, seconds_left
    from lkm.engine.workers import effective_jobs, run_calls, run_in_process

    done = store.completed_ids()
    groups: dict[tuple[str, str, str], list[Task]] = {}
    studies: list[StudyTask] = []
    not_run: list[Task] = []
    for t in plan.tasks:
        if t.id in done:
            continue
        if isinstance(t, StudyTask):
            studies.append(t)
        elif t.id in plan.not_run:
            not_run.append(t)
        else:
            groups.setdefault((t.dataset, t.split.id, t.method), []).append(t)
    record_not_run(plan, store, not_run)  # before the first fit
    skipped = len(plan.tasks) - sum(len(g) for g in groups.values()) - len(studies) - len(not_run)
    todo = len(plan.tasks) - skipped - len(not_run)
    start = time.perf_counter()
    counts = {"ran": 0, "failed": 0, "reported": 0}
    errors: list[str] = []
    tally = RecordTally(store.records_dir)
    written: set[str] = set()  # the cluster path: task ids this process appended

    planned: Counter[tuple[str, str]] = Counter((study.method, study.dataset) for study in studies)
    for (dataset, _, method), group in groups.items():
        planned[(method, dataset)] += len(group)
    set_sizes = dataset_sizes(plan)
    workers = 1 if in_process else min(effective_jobs(jobs), max(1, len(groups) + len(studies)))

    def report_progress() -> None:
        """Tasks finished: records written so far, at least those of finished jobs; and
        the estimate of the time the rest takes."""
        if on_progress is None and on_estimate is None:
            return
        finished = min(todo, max(counts["ran"] + counts["failed"], tally.update()))
        if on_progress is not None and finished > counts["reported"]:
            on_progress(finished - counts["reported"])
            counts["reported"] = finished
        if on_estimate is not None and cluster is None:
            remaining = {key: n - tally.fits.get(key, 0) for key, n in planned.items()}
            left = seconds_left(remaining, tally.fits, tally.seconds, workers, set_sizes)
            if left is not None:
                on_estimate(left)

    def write(record: dict[str, Any]) -> None:
        """Append a record handed back by a cluster worker, unless its task id already was."""
        if record["task_id"] not in written:
            store.append([record])
            written.add(record["task_id"])

    def collect(result: JobResult) -> None:
        if cluster is not None:
            for record in result.records:
                write(record)
        counts["ran"] += result.ok
        counts["failed"] += result.failed
        if result.first_error:
            errors.append(result.first_error)
        report_progress()

    if groups or studies:
        prep = plan.spec.preprocessing
        args = [
            (run_job, (plan.datasets[ds].X, plan.datasets[ds].y, tasks, prep, plan.spec.score_train))
            for (ds, _, _), tasks in groups.items()
        ] + [
            (run_study, (plan.datasets[t.dataset].X, plan.datasets[t.dataset].y, t, prep))
            for t in studies
        ]
        order = largest_jobs_first(plan, groups, studies)
        if cluster is not None:  # the cluster gives each job the sink that hands records back
            cluster.run((args[i] for i in order), on_result=collect, on_record=write, on_wait=report_progress)
        else:  # local workers append their records (a reused worker may have started elsewhere: absolute path)
            sink = StoreAppender(str(store.root.absolute()))
            ordered = ((fn, (sink, *rest)) for fn, rest in (args[i] for i in order))
            if in_process:
                run_in_process(ordered, on_result=collect)
            else:
                dead = DeadWorkers(store, counts, errors)
                run_calls(ordered, jobs=min(effective_jobs(jobs), len(args)), on_result=collect, on_wait=report_progress,
                          resume=dead.resume, on_dead=dead.record)
    return RunSummary(len(plan.tasks), skipped, counts["ran"], counts["failed"], time.perf_counter() - start,
                      errors[0] if errors else None, len(not_run))


def record_not_run(plan: Plan, store: RunStore, tasks: list[Task]) -> None:
    """Record ``tasks`` (of :attr:`Plan.not_run`) with status ``not run``, the extra they
    ``needs`` (``lkm[fast]``) and the reason (``needs hnswlib: pip install 'lkm[fast]'``);
    a task whose record already says so is not recorded again."""
    if not tasks:
        return
    ids = {t.id for t in tasks}
    recorded = {r["task_id"] for r in store.iter_records()
                if r["task_id"] in ids and r.get("status") == NOT_RUN}
    store.append([{
        "task_id": t.id, "dataset": t.dataset, "split": t.split.id, "repeat": t.split.repeat,
        "fold": t.split.fold, "method": t.method, "estimator": t.estimator, "params": t.params,
        "status": NOT_RUN, "needs": plan.not_run[t.id].needs,
        "error": f"{t.dataset}/{t.split.id}/{t.method}: {plan.not_run[t.id].reason}",
        "lkm_version": __version__,
    } for t in tasks if t.id not in recorded])


class DeadWorkers:
    """What :func:`execute` does with a local job whose worker process died
    (:func:`lkm.engine.workers.run_calls`): the records its worker wrote before dying are
    counted, and only its unrecorded tasks run again; when it dies a second time, its
    first unrecorded task (the one in flight) is recorded as failed with the reason and
    the rest of the job runs afresh."""

    def __init__(self, store: RunStore, counts: dict[str, int], errors: list[str]) -> None:
        self.store, self.counts, self.errors = store, counts, errors
        self.counted: set[str] = set()  # records already counted (a job may die twice)

    def _left(self, call: tuple[Callable[..., Any], tuple[Any, ...]]) -> list[Task | StudyTask]:
        """The call's tasks without a record yet; those with one are counted as ran or failed."""
        fn, args = call
        tasks: list[Task | StudyTask] = list(args[3]) if fn is run_job else [args[3]]
        mine = {t.id for t in tasks}
        status = {r["task_id"]: r.get("status") for r in self.store.iter_records() if r.get("task_id") in mine}
        for t in tasks:
            if t.id in status and t.id not in self.counted:
                self.counted.add(t.id)
                self.counts["failed" if status[t.id] == "error" else "ran"] += 1
        return [t for t in tasks if t.id not in status]

    @staticmethod
    def _with(call: tuple[Callable[..., Any], tuple[Any, ...]], left: list[Task | StudyTask]) -> Any:
        fn, args = call
        if not left:
            return None
        return (fn, (*args[:3], left, *args[4:])) if fn is run_job else call

    def resume(self, call: tuple[Callable[..., Any], tuple[Any, ...]]) -> Any:
        """The call again, for its unrecorded tasks only (None: all were recorded)."""
        return self._with(call, self._left(call))

    def record(self, call: tuple[Callable[..., Any], tuple[Any, ...]], reason: str) -> Any:
        """Record the task in flight as failed with ``reason``; the rest of the call, or None."""
        left = self._left(call)
        if not left:
            return None
        task = left[0]
        params = json.dumps(task.params, default=str)
        if isinstance(task, StudyTask):
            msg = f"{task.dataset}/{task.name} {params}: {reason}"
            record: dict[str, Any] = {"task_id": task.id, "kind": "study", "dataset": task.dataset, "study": task.name,
                      "study_key": task.study, "params": task.params}
        else:
            msg = f"{task.dataset}/{task.split.id}/{task.method} {params}: {reason}"
            record = {"task_id": task.id, "dataset": task.dataset, "split": task.split.id,
                      "repeat": task.split.repeat, "fold": task.split.fold, "method": task.method,
                      "estimator": task.estimator, "params": task.params}
        self.store.append([{**record, "status": "error", "error": msg, "lkm_version": __version__}])
        self.counts["failed"] += 1
        self.errors.append(msg)
        return self._with(call, left[1:])


# -- perturbed runs (Spec.perturb: the claims tables' fragility check) ---------------
def run_job(
    sink: RecordSink, X: np.ndarray, y: np.ndarray, tasks: list[Task], preprocessing: Preprocessing,
    score_train: bool = False,
) -> JobResult:
    """:func:`_run_job`, under the tasks' ``perturb``: each split's training rows in a
    seeded random order (``permute_train``) and BLAS limited to ``blas_threads`` threads."""
    perturb = tasks[0].perturb or {}
    if not perturb:
        return _run_job(sink, X, y, tasks, preprocessing, score_train)
    from dataclasses import replace

    from threadpoolctl import threadpool_limits

    if perturb.get("permute_train") is not None:
        split = tasks[0].split
        order = np.random.default_rng(int(perturb["permute_train"])).permutation(len(split.train))
        split = replace(split, train=split.train[order])
        tasks = [replace(t, split=split) for t in tasks]
    with threadpool_limits(limits=perturb.get("blas_threads")):
        return _run_job(sink, X, y, tasks, preprocessing, score_train)


def _run_job(
    sink: RecordSink, X: np.ndarray, y: np.ndarray, tasks: list[Task], preprocessing: Preprocessing,
    score_train: bool = False,
) -> JobResult:
    """Fit and score every task of one (dataset, split, method), sharing one distance cache;
    each task's record goes to ``sink`` as it is made, and all of them come back in the
    :class:`JobResult`.

    ``score_train`` also records the accuracy on the training part (``train_accuracy``),
    predicted after the timed test prediction."""
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any]) -> None:
        sink(record)
        records.append(record)

    split = tasks[0].split
    X_train, X_test = preprocess(preprocessing, X[split.train], X[split.test])
    y_train, y_test = y[split.train], y[split.test]
    semi = _SemiSupervised.of(split, X_train, y_train)
    if semi is not None:
        y_train = semi.y_masked
    cache = DistanceCache()
    n_ok = n_failed = 0
    first_error = None
    for task in tasks:
        warm = len(cache) > 0
        base = {
            "task_id": task.id, "dataset": task.dataset, "split": split.id, "repeat": split.repeat,
            "fold": split.fold, "method": task.method, "estimator": task.estimator,
            "params": task.params, "n_train": len(y_train), "n_test": len(y_test),
            "n_features": X_train.shape[1], "preprocessing": preprocessing,
            "cache_warm": warm, "lkm_version": __version__,
        }
        if semi is not None:
            base.update(n_train=int((~semi.mask).sum()), n_unlabeled=int(semi.mask.sum()))
        tune_info: dict[str, Any] = {}
        stage = "fit"  # what user code was doing, for the record's reason
        try:
            est = resolve_estimator(task.estimator)(**task.params)
            fit_X, fit_y, fit_extra = _supervised_inputs(est, X_train, y_train) if semi is None else semi.fit_inputs(est)
            t0 = time.perf_counter()
            if task.tune:
                est, tune_info = fit_tuned(est, task.tune, *((X_train, y_train) if semi is None else semi.labeled))
                if semi is not None and fit_extra:  # the chosen setting refitted with the unlabeled rows too
                    est.fit(fit_X, fit_y, **cache_kwargs(est, "fit", cache), **fit_extra)
            else:
                est.fit(fit_X, fit_y, **cache_kwargs(est, "fit", cache), **fit_extra)
            t1 = time.perf_counter()
            stage = "predict"
            predicted, decide = predict_and_decide(est, X_test, None if task.tune else cache)
            y_pred = checked_predictions(predicted, len(y_test), "test")
            t2 = time.perf_counter()
            info = dict(getattr(est, "info_", {}))  # as the test prediction left it
            train_score = {}
            if score_train:
                X_seen, y_seen = (X_train, y_train) if semi is None else semi.labeled
                y_fit = checked_predictions(est.predict(X_seen, **cache_kwargs(est, "predict", None)), len(y_seen),
                                            "training")
                train_score = {"train_accuracy": float(np.mean(y_fit == y_seen))}
            if semi is not None:  # the transductive score: the pool's unlabeled rows
                y_unl = checked_predictions(est.predict(semi.X_unlabeled), len(semi.y_unlabeled), "unlabeled")
                train_score["unlabeled_accuracy"] = float(np.mean(y_unl == semi.y_unlabeled))
            # Scores beyond accuracy (lkm.numerics.metrics): the decision values, after the timing.
            decision = decide()
            warning = one_class_warning(y_test, y_pred)
        except NotApplicable as exc:  # outside the method's domain: recorded, not a failure
            emit({**base, "status": NOT_APPLICABLE, "error": f"{task.dataset}/{split.id}/{task.method}: {exc}"})
            continue
        except user_code_failures() as exc:  # a failing task is recorded, the run goes on (sys.exit too)
            n_failed += 1
            msg = (f"{task.dataset}/{split.id}/{task.method} {json.dumps(task.params, default=str)}: "
                   f"{describe_user_failure(exc, stage)}")
            first_error = first_error or msg
            emit({**base, "status": "error", "error": msg, "traceback": traceback.format_exc(limit=5)})
            continue
        correct = y_pred == y_test
        per_class = {str(c): float(correct[y_test == c].mean()) for c in np.unique(y_test)}
        wrong = np.flatnonzero(~correct)
        errors = ({"errors": [[int(split.test[i]), y_pred[i]] for i in wrong]}
                  if wrong.size <= MAX_RECORDED_ERRORS else {})
        scores = fit_scores(y_test, y_pred, decision, getattr(est, "classes_", np.unique(y_train)))
        emit({
            **base, "status": "ok", "accuracy": float(correct.mean()), **scores, "per_class_accuracy": per_class,
            **errors, **({"warnings": [warning]} if warning else {}),
            "fit_seconds": t1 - t0, "predict_seconds": t2 - t1, **train_score,
            "info": {**info, **tune_info},
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        })
        n_ok += 1
    return JobResult(n_ok, n_failed, first_error, records)

def checked_predictions(y_pred: Any, expected: int, rows: str) -> np.ndarray:
    """``predict``'s output as an array of one label per row, else a one-line ValueError
    naming the expected and the returned counts, or how many rows it predicted NaN or
    infinite for (a user estimator's wrong shape or NaN is a failed fit, never a score
    nor a crash of the run)."""
    pred: np.ndarray = np.asarray(y_pred)
    if pred.ndim == 1 and pred.shape[0] == expected:
        check_finite_output(pred, "predict", rows)
        return pred
    got = f"{pred.shape[0]} predictions" if pred.ndim == 1 else f"an array of shape {pred.shape}"
    raise ValueError(f"predict returned {got} for {expected} {rows} rows (expected {expected} predictions)")


def check_finite_output(values: np.ndarray, method: str, rows: str) -> None:
    """Raise a one-line ValueError when ``method``'s output holds NaN or infinite values:
    ``predict returned NaN for 12 of 40 test rows``."""
    bad = non_finite_rows(values)
    if bad:
        what = " and ".join(f"{kind} for {n}" for kind, n in bad.items())
        raise ValueError(f"{method} returned {what} of {len(values)} {rows} rows")


def predict_and_decide(est: Any, X: np.ndarray, cache: Any = None) -> tuple[Any, Callable[[], np.ndarray | None]]:
    """``est.predict(X)`` and a callable giving :func:`decision_values` on X. Where the
    estimator computes both in one pass (``_predict_and_decision`` of lkm's local
    classifiers: a local SVM or kernel PCA per query, the costly part of a prediction),
    the callable returns the values that pass computed; else it makes the second pass
    when called (after the prediction's timing)."""
    cls: type = type(est)  # typed as a class: mypy does not see type[Any] as Hashable
    shared = getattr(est, "_predict_and_decision", None) if _one_pass_is_current(cls) else None
    if shared is None:
        return est.predict(X, **cache_kwargs(est, "predict", cache)), lambda: decision_values(est, X, cache)
    labels, values = shared(X, **cache_kwargs(est, "_predict_and_decision", cache))
    return labels, lambda: None if values is None else _decision_array(values, "decision_function", X.shape[0])


@functools.cache
def _one_pass_is_current(cls: type) -> bool:
    """Whether ``cls._predict_and_decision`` is defined where ``predict`` and
    ``decision_function`` are, or below: a subclass that overrides either of them (a
    user's variant of an lkm classifier) gets its own methods, by two passes."""

    def owner(name: str) -> type | None:
        return next((k for k in cls.__mro__ if name in k.__dict__), None)

    one_pass = owner("_predict_and_decision")
    return one_pass is not None and all(
        (defined := owner(name)) is not None and issubclass(one_pass, defined) for name in ("predict", "decision_function"))


def decision_values(est: Any, X: np.ndarray, cache: Any = None) -> np.ndarray | None:
    """The estimator's decision values on ``X`` (``decision_function``, else
    ``predict_proba``), passing ``cache`` only where accepted
    (:func:`lkm.methods.base.cache_kwargs`); None when it has neither
    or they fail (a missing score is not a failed fit). NaN or infinite values raise a
    one-line ValueError (:func:`check_finite_output`): a failed fit, as NaN predictions are."""
    for name in ("decision_function", "predict_proba"):
        fn = getattr(est, name, None)  # getattr: predict_proba may raise AttributeError by design
        if fn is None:
            continue
        try:
            values = np.asarray(fn(X, **cache_kwargs(est, name, cache)), dtype=float)
        except user_code_failures():  # a score we cannot compute is left out, the fit stands
            return None
        return _decision_array(values, name, X.shape[0])
    return None


def _decision_array(values: np.ndarray, name: str, n_rows: int) -> np.ndarray | None:
    """``name``'s output as :func:`decision_values` records it: the positive class's
    column of a two-class ``predict_proba``; None unless one row per query; NaN or
    infinite values raise (:func:`check_finite_output`)."""
    values = np.asarray(values, dtype=float)
    if name == "predict_proba" and values.ndim == 2 and values.shape[1] == 2:
        values = values[:, 1]
    if values.ndim not in (1, 2) or values.shape[0] != n_rows:  # not one row per query: left out
        return None
    check_finite_output(values, name, "test")
    return values


def _fit_takes_unlabeled(est: Any) -> bool:
    """Whether the estimator's ``fit`` takes ``unlabeled=`` (a mask of the unlabeled rows)."""
    cls: type = type(est)  # typed as a class: mypy does not see type[Any] as Hashable (accepts_keyword is cached)
    return accepts_keyword(cls, "fit", "unlabeled")


def _supervised_inputs(est: Any, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Every row labeled: an estimator whose ``fit`` takes ``unlabeled=`` gets an all-False
    mask, so a class labelled -1 is not read as "unlabeled" (sklearn's convention)."""
    return X, y, ({"unlabeled": np.zeros(len(y), dtype=bool)} if _fit_takes_unlabeled(est) else {})


@dataclass
class _SemiSupervised:
    """A split's training pool with unlabeled rows (:attr:`Split.unlabeled`).

    Their labels are overwritten (by the first labeled row's) before any estimator sees
    ``y``: the true ones score the transductive accuracy only. Estimators whose ``fit``
    takes ``unlabeled=`` (a boolean mask over the rows) get the whole pool; any other
    estimator is fitted on the labeled rows alone. A ``tune`` block searches on the
    labeled rows alone (its CV fits see no unlabeled row); the chosen setting of an
    estimator taking ``unlabeled=`` is then refitted on the whole pool.
    """

    mask: np.ndarray  # True: unlabeled row of the pool
    y_masked: np.ndarray
    labeled: tuple[np.ndarray, np.ndarray]
    X_unlabeled: np.ndarray
    y_unlabeled: np.ndarray
    X_pool: np.ndarray

    @classmethod
    def of(cls, split: Split, X_train: np.ndarray, y_train: np.ndarray) -> _SemiSupervised | None:
        if split.unlabeled is None:
            return None
        mask = np.isin(split.train, split.unlabeled)
        y_masked = y_train.copy()
        y_masked[mask] = y_train[~mask][0]
        return cls(mask, y_masked, (X_train[~mask], y_train[~mask]), X_train[mask], y_train[mask], X_train)

    def fit_inputs(self, est: Any) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        if _fit_takes_unlabeled(est):
            return self.X_pool, self.y_masked, {"unlabeled": self.mask}
        return self.labeled[0], self.labeled[1], {}


def fit_tuned(est: Any, tune: dict[str, Any], X_train: np.ndarray, y_train: np.ndarray) -> tuple[Any, dict[str, Any]]:
    """Choose among ``tune``'s settings (:meth:`lkm.spec.TuneSpec.settings`: a grid's
    combinations or a space's drawn candidates) by stratified k-fold CV on the training
    part only and refit (the rule of :func:`best_setting`).

    With ``tune['halving'] = h`` the search is successive halving in two rounds (Jamieson &
    Talwalkar 2016; the schedule of scikit-learn's ``HalvingGridSearchCV`` with
    ``factor=h``): every setting is fitted on a seeded stratified 1/h of each inner
    training fold and scored on the whole inner test fold; the best ⌈settings/h⌉ (rounded
    scores, ties to the search's order) and every setting that failed on the small part
    (failing on fewer rows is no evidence) are searched again on whole folds, and the
    choice is made there. scikit-learn's own halving draws its subsets without
    stratification and ranks by an unstable sort; this protocol wants stratified draws and
    the stated tie rule. The first round is skipped (a plain search) when 1/h of an inner
    training fold would hold fewer than :data:`HALVING_MIN_ROWS_PER_CLASS` rows per class.

    Returns the refitted best estimator and the record's extra ``info``: ``tuned_params``,
    ``cv_score`` (mean CV accuracy of the chosen setting), ``refit_seconds`` (the final fit
    alone: the record's ``fit_seconds`` also counts the search), ``cv_folds``, ``cv_seed``,
    ``grid_size`` (settings searched), ``failed_settings`` (settings that failed on some
    inner fold of the final round and were passed over; absent when none did),
    ``halving`` (rows per round and settings kept, when halving ran) and ``cv_n_train``
    (rows the search saw: the training part only, or its seeded stratified ``subsample``
    when the spec asks for one; the refit always uses the whole training part). The search
    does not share the job's distance cache (GridSearchCV calls plain ``fit``).
    """
    from sklearn.model_selection import StratifiedKFold, train_test_split

    from lkm.spec import TuneSpec

    settings = TuneSpec.model_validate(tune).settings()
    cv = StratifiedKFold(n_splits=int(tune["cv"]), shuffle=True, random_state=int(tune["seed"]))
    rows = np.arange(len(y_train))
    if tune.get("subsample") and int(tune["subsample"]) < len(y_train):
        rows = np.sort(train_test_split(rows, train_size=int(tune["subsample"]), stratify=y_train,
                                        random_state=int(tune["seed"]))[0])
    folds = [(rows[a], rows[b]) for a, b in cv.split(X_train[rows], y_train[rows])]
    halving_info: dict[str, Any] | None = None
    factor = int(tune.get("halving") or 0)
    if factor >= 2 and len(settings) > 1:
        small = halving_folds(folds, y_train, factor, int(tune["seed"]))
        if small is not None:
            first = _grid_search(est, settings, small, refit=False)
            with _failed_settings_quiet():  # a setting failing on the small part goes on to whole folds
                first.fit(X_train, y_train, **_labeled_kwargs(est, y_train))
            scores = np.round(np.asarray(first.cv_results_["mean_test_score"], dtype=float), CV_SCORE_DECIMALS)
            keep = halving_kept(len(settings), factor)
            scored = [i for i in range(len(settings)) if not np.isnan(scores[i])]
            best = sorted(scored, key=lambda i: (-scores[i], i))[:keep]  # stable: ties to the search's order
            kept = sorted(set(best) | {i for i in range(len(settings)) if np.isnan(scores[i])})
            halving_info = {"factor": factor, "rows": [int(np.median([len(a) for a, _ in small])),
                                                       int(np.median([len(a) for a, _ in folds]))],
                            "settings": [len(settings), len(kept)]}
            settings = [settings[i] for i in kept]
    search = _grid_search(est, settings, folds, refit=best_setting)
    with _failed_settings_quiet():  # settings that failed are counted in the record instead
        try:
            search.fit(X_train, y_train, **_labeled_kwargs(est, y_train))
        except ValueError as exc:
            if not str(exc).strip().startswith("All the"):
                raise
            _raise_first_failure(est, settings, X_train[folds[0][0]], y_train[folds[0][0]])
            raise
    skipped = int(np.isnan(search.cv_results_["mean_test_score"]).sum())
    chosen = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in search.best_params_.items()}
    cv_score = float(search.cv_results_["mean_test_score"][search.best_index_])
    return search.best_estimator_, {
        "tuned_params": chosen, "cv_score": cv_score, "cv_folds": int(tune["cv"]),
        "cv_seed": int(tune["seed"]), "grid_size": (halving_info or {}).get("settings", [len(settings)])[0],
        "cv_n_train": int(len(rows)), "refit_seconds": float(search.refit_time_),
        **({"failed_settings": skipped} if skipped else {}), **({"halving": halving_info} if halving_info else {}),
    }


@contextlib.contextmanager
def _failed_settings_quiet() -> Iterator[None]:
    """Silence scikit-learn's warnings about settings that failed to fit or to score (e.g.
    kNN with more neighbours than rows): the search scores them NaN, passes them over, and
    the record counts them (``failed_settings``). Likewise lkm's own notes that a setting
    was clipped to what a fold holds (LPL's k above its rows): a range drawn wide meets
    them on purpose, and the refitted estimator's ``info_`` keeps its own."""
    import warnings

    from sklearn.exceptions import FitFailedWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FitFailedWarning)
        warnings.filterwarnings("ignore", category=ParameterClipped)
        warnings.filterwarnings("ignore", message="One or more of the test scores are non-finite")
        warnings.filterwarnings("ignore", message="Scoring failed")
        yield


#: The halving search's small round runs only when 1/factor of an inner training fold keeps
#: at least this many rows per class (on average): fewer, and a local method's neighbourhoods
#: would not be what they are on the whole fold.
HALVING_MIN_ROWS_PER_CLASS = 10


def halving_folds(folds: list[tuple[np.ndarray, np.ndarray]], y: np.ndarray, factor: int,
                   seed: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Each inner fold with its training rows cut to a seeded stratified 1/factor (test rows
    whole), or None when that would leave fewer than HALVING_MIN_ROWS_PER_CLASS rows per class."""
    from sklearn.model_selection import train_test_split

    n_classes = len(np.unique(y))
    out = []
    for train, test in folds:
        size = len(train) // factor
        if size < HALVING_MIN_ROWS_PER_CLASS * n_classes:
            return None
        part = train_test_split(train, train_size=size, stratify=y[train], random_state=seed)[0]
        out.append((np.sort(part), test))
    return out


def _grid_search(est: Any, settings: list[dict[str, Any]], folds: list[tuple[np.ndarray, np.ndarray]],
                 refit: Any) -> Any:
    """scikit-learn's GridSearchCV over an explicit list of settings, in that order (a list
    of one-point grids); a setting the data cannot take (LDCV's C·(K-1) >= d) scores NaN and
    is passed over, the fit failing only when every setting fails."""
    from sklearn.model_selection import GridSearchCV

    grid = [{k: [v] for k, v in s.items()} for s in settings]
    return GridSearchCV(est, grid, scoring="accuracy", cv=folds, refit=refit, error_score=np.nan, n_jobs=1)


def _labeled_kwargs(est: Any, y: np.ndarray) -> dict[str, Any]:
    """An estimator that reads unlabeled rows from y (sklearn's -1) is told none are: a class
    labelled -1 (e.g. the IDA sets' ±1) is a class here."""
    return {"unlabeled": np.zeros(len(y), dtype=bool)} if _fit_takes_unlabeled(est) else {}


#: Mean CV scores are compared rounded to this many decimals (:func:`best_setting`).
CV_SCORE_DECIMALS = 9


def best_setting(cv_results: dict[str, Any]) -> int:
    """The index of the inner CV's chosen setting: the highest mean score rounded to
    :data:`CV_SCORE_DECIMALS` decimals, ties to the first candidate in the search's order
    (scikit-learn's ``ParameterGrid``: keys sorted, the last key varying fastest); a setting
    that failed (NaN) is never chosen while another scored.

    Fold accuracies are ratios k/n; two settings whose means are equal as numbers can
    differ in the last bit of their floating-point sums, and a CPU's kernels can move a
    score by as much. Rounding makes such settings tie, and the stated order decides, so the
    choice does not depend on the order of a float sum (issue 42, point 6)."""
    scores = np.round(np.asarray(cv_results["mean_test_score"], dtype=float), CV_SCORE_DECIMALS)
    scores = np.where(np.isnan(scores), -np.inf, scores)
    return int(np.flatnonzero(scores == scores.max())[0])


def _raise_first_failure(est: Any, settings: list[dict[str, Any]], X: np.ndarray, y: np.ndarray) -> None:
    """Every setting of a search failed: fit the first one again so that its own error
    (one line, e.g. LDCV's C·(K-1) >= d) is what the record keeps, not scikit-learn's
    summary of every traceback."""
    from sklearn.base import clone

    clone(est).set_params(**settings[0]).fit(X, y, **_labeled_kwargs(est, y))


def run_study(
    sink: RecordSink, X: np.ndarray, y: np.ndarray, task: StudyTask, preprocessing: Preprocessing
) -> JobResult:
    """Run one study task on the whole dataset; its record goes to ``sink`` and comes back."""
    from lkm.spec.outputs import load_plugins
    from lkm.studies import STUDIES

    if task.study not in STUDIES:  # a paper's study, in a fresh worker process
        load_plugins()

    base = {
        "task_id": task.id, "kind": "study", "dataset": task.dataset, "study": task.name,
        "study_key": task.study, "params": task.params, "preprocessing": preprocessing,
        "n_rows": int(X.shape[0]), "n_features": int(X.shape[1]), "lkm_version": __version__,
    }
    t0 = time.perf_counter()
    try:
        Xp = preprocess(preprocessing, X, X)[0]  # fitted on all rows: a study has no test part
        rows = STUDIES[task.study](Xp, y, **task.params)
    except user_code_failures() as exc:  # recorded like a failed fit; the run goes on
        msg = f"{task.dataset}/{task.name} {json.dumps(task.params, default=str)}: {describe_user_failure(exc, 'study')}"
        record = {**base, "status": "error", "error": msg, "seconds": time.perf_counter() - t0,
                  "traceback": traceback.format_exc(limit=5)}
        sink(record)
        return JobResult(0, 1, msg, [record])
    record = {
        **base, "status": "ok", "seconds": time.perf_counter() - t0, "rows": rows,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    sink(record)
    return JobResult(1, 0, None, [record])


def plan_table(plan: Plan, done: set[str] | None = None) -> list[dict[str, Any]]:
    """Rows for ``--dry-run``: fits per dataset and method, and how many are already recorded.

    Study tasks appear as one row per (dataset, study), the study name marked
    ``(study)``, with ``splits`` = ``all rows`` (a study runs on the whole dataset).
    """
    done = done or set()
    rows: dict[tuple[str, str, bool], dict[str, Any]] = {}
    for t in plan.tasks:
        is_study = isinstance(t, StudyTask)
        r = rows.setdefault((t.dataset, t.method, is_study), {
            "dataset": t.dataset, "method": f"{t.method} (study)" if is_study else t.method,
            "splits": "all rows" if is_study else len(plan.splits[t.dataset]),
            "settings": 0, "fits": 0, "recorded": 0,
        })
        r["fits"] += 1
        r["recorded"] += t.id in done
    for r in rows.values():
        r["settings"] = r["fits"] // r["splits"] if isinstance(r["splits"], int) else r["fits"]
    return list(rows.values())


def write_plan(plan: Plan, store: RunStore) -> Path:
    """Store the plan's task ids so `lkm report` can rebuild tables without the data, and
    the spec it was planned from (its sha256 and text: `lkm report` refuses a spec.yaml
    edited since, naming what changed; see RunStore.read_plan)."""
    from lkm.files import text_sha256
    from lkm.spec import spec_to_yaml

    spec_yaml = spec_to_yaml(plan.spec)
    write_semisupervised_draws(plan, store)
    return store.write_plan({
        "task_ids": sorted(plan.task_ids),
        "unavailable": plan.unavailable,
        "splits": {k: len(v) for k, v in plan.splits.items()},
        "spec_sha256": text_sha256(spec_yaml),
        "spec_yaml": spec_yaml,
    })


def write_semisupervised_draws(plan: Plan, store: RunStore) -> list[Path]:
    """``splits/<dataset>.json`` for every dataset with semi-supervised splits: per split
    id, the dataset rows drawn as labeled, left unlabeled, and tested."""
    from lkm.files import atomic_save

    written = []
    for ds_id, splits in plan.splits.items():
        if not any(s.unlabeled is not None for s in splits):
            continue
        draws = {s.id: {"labeled": np.setdiff1d(s.train, s.unlabeled).tolist(), "unlabeled": np.asarray(s.unlabeled).tolist(),
                        "test": np.asarray(s.test).tolist()} for s in splits if s.unlabeled is not None}
        path = store.root / "splits" / f"{ds_id.replace('/', '_')}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_save(path, functools.partial(_write_compact_json, draws))
        written.append(path)
    return written


def _write_compact_json(data: Any, tmp: Path) -> None:
    Path(tmp).write_text(json.dumps(data, separators=(",", ":")) + "\n")


def dataset_provenance(plan: Plan) -> dict[str, Any]:
    """Name, files and checksums of every dataset the plan used."""
    out = {}
    for ds_id, ds in plan.datasets.items():
        info = ds.info
        out[ds_id] = {
            "name": info.name, "source": info.source, "rows": int(ds.X.shape[0]),
            "features": int(ds.X.shape[1]), "classes": [str(c) for c in ds.classes],
            "class_counts": {str(c): int(n) for c, n in zip(*np.unique(ds.y, return_counts=True), strict=True)},
            "files": [{"name": f.name, "sha256": f.sha256, "url": f.url} for f in info.files],
        }
    for ds_id, msg in plan.unavailable.items():
        out[ds_id] = {"unavailable": msg}
    return out
