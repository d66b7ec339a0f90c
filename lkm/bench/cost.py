"""``lkm bench --cost``: what one outer fold of the cross-paper benchmark costs per method
at larger caps (issue 41, point 6; the table issue 42 picks its row cap from).

The benchmark (spec ``cross_paper``) subsamples every data set to a cap (``subsample``;
600 rows since 2026-11-30), splits it by stratified 5-fold CV and tunes each method by an
inner stratified 3-fold CV over its ``tune:`` settings on the training part, then refits
and predicts the held-out fold. Here a *cell* is (data set, cap n, method): the data set
drawn to n rows exactly as the benchmark would with ``subsample: n``
(:func:`lkm.data.subsample_rows`, seed 0), the spec's outer fold 0 (training part 4n/5),
and the method's whole protocol run once by the engine's own job function
(:func:`lkm.engine.runner.run_job`: the grid search over
the spec's grid and inner CV, the refit, the test prediction and the decision values the
record keeps). Nothing is copied from the spec: the grid, the inner CV, the fixed
parameters, the preprocessing and the outer protocol are read from ``cross_paper.yaml``
through :func:`lkm.spec.load_spec`; each cell reports the number of fits the search
made (settings × inner folds + the refit).

The cells of one (data set, method) run in one fresh Python process (one per chain, as
the benchmark's long-lived workers; interpreter start-up, imports and drawing the data
stay outside the clock) with one BLAS/OpenMP thread (as the benchmark's workers run
under ``--jobs 2`` on 2 cores) and the persisted distance store off
(``LKM_DISTANCE_CACHE=off``: distances are computed, not read back). Each cell reports
CPU seconds (:func:`time.process_time` of the child: all its threads) and wall seconds
of the job, and the peak resident memory during it (reset per cell).

Per (data set, method) the caps are tried in increasing order, and each gets one of
three estimates, named in the table:

* **whole fold** (measured): when its CPU seconds, predicted from the whole folds done
  (log-log slope of the last two, at least 1; :data:`DEFAULT_SLOPE` after one), are
  within the ceiling ``max_seconds`` (always at the first cap). Each is followed by a
  sampled cell at the same size, for calibration.
* **sampled** (:func:`run_sample`): when the whole fold is predicted over the ceiling
  (or was killed), the first, middle and last settings of the grid are fitted on the
  first inner fold and scored; their mean CPU seconds times (grid size × inner folds),
  plus one refit with the test prediction, estimate the fold, multiplied by the
  calibration (whole / sampled) measured at the largest cap where both ran.
* **extrapolated**: when even the sample is predicted over the ceiling (or the budget
  is spent), the last estimate at the slope of the last two estimates.

The ceiling is in CPU seconds (other processes on the machine inflate wall time far
more); a cell is killed at :data:`KILL_FACTOR` ceilings of CPU seconds (read from
``/proc``) or :data:`MAX_WALL` seconds of wall. A set smaller than a cap is used whole
(``rows_used``).

:func:`benchmark_hours` turns the table into the whole benchmark's CPU-hours at a cap:
26 sets × 5 folds × 19 methods, every set at min(cap, its size). Measured sets use their
own per-fold cost × 5 (log-log interpolated between the caps measured); the others
scale their recorded cost in the shipped benchmark run (the sum of fit + predict seconds
over its 5 folds, at the run's own cap) by the method's median factor over the measured
sets: growth to the cap times the ratio of the cells' protocol to the shipped run's.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lkm.bench.scaling import CellProcess, reset_peak_memory, status_bytes

#: The benchmark spec measured.
SPEC = "cross_paper"
#: Data sets measured, in this order (the large ones that set the cost).
DATASETS = ("letter-recognition", "mnist", "isolet", "spambase")
#: Caps tried per (set, method).
SIZES = (500, 2000, 5000)
#: Caps shown in the table and summed into CPU-hours.
CAPS = (500, 2000, 5000)
#: Outer fold timed (of the spec's protocol).
FOLD = 0
#: CPU seconds a cell may be predicted to take: a whole fold predicted above it is
#: sampled instead, a sample predicted above it is extrapolated.
MAX_SECONDS = 90.0
#: A cell is killed once it has used this many ceilings of CPU seconds.
KILL_FACTOR = 3.0
#: ... or this many seconds of wall (other processes on the machine slow wall time).
MAX_WALL = 1800.0
#: How often the parent reads a running cell's CPU seconds.
POLL_SECONDS = 2.0
#: Slope assumed when a method has one measured cell only.
DEFAULT_SLOPE = 2.0
#: Cap assumed for a benchmark run whose spec gives none (the cap of the first shipped runs).
SHIPPED_CAP = 500


def benchmark_spec(spec: str | Path = SPEC) -> Any:
    """The benchmark's :class:`~lkm.spec.Spec`: a shipped spec's name or a YAML path."""
    from lkm.spec import load_spec
    from lkm.spec.outputs import load_plugins

    path = Path(spec)
    if not path.exists():
        shipped: dict[str, Path] = {}
        for module in load_plugins().values():  # the shipped specs, as `extends:` finds them
            packaged = getattr(module, "packaged_specs", None)
            if callable(packaged):
                shipped.update(packaged())
        if str(spec) not in shipped:
            raise ValueError(f"{spec}: not a spec file nor a shipped spec")
        path = shipped[str(spec)]
    return load_spec(path)


def draw(spec: Any, dataset: str, n: int, data_dir: str | None = None, loaded: dict | None = None) -> Any:
    """``dataset`` as the benchmark would draw it with ``subsample: n`` (its spec entry
    with the cap changed; the whole set when it has at most ``n`` rows). ``loaded``: whole
    sets already read (:meth:`lkm.spec.schema.DatasetSpec.load`)."""
    ds_spec = next((d for d in spec.datasets if d.id == dataset or d.name == dataset), None)
    if ds_spec is None:
        raise ValueError(f"{dataset}: no such data set in {spec.name}")
    return ds_spec.model_copy(update={"subsample": int(n)}).load(data_dir, loaded)


def _setup(spec_ref: str, dataset: str, method: str, n: int, fold: int, data_dir: str | None,
           data_path: str | None) -> tuple[Any, Any, Any, Any, Any, dict[str, Any]]:
    """(spec, method spec, data-set spec, drawn data, outer split, fixed parameters)."""
    from lkm.spec.seeds import with_seed

    spec = benchmark_spec(spec_ref)
    m = next((m for m in spec.methods if m.name == method), None)
    if m is None:
        raise ValueError(f"{method}: no such method in {spec.name}")
    if m.tune is None:
        raise ValueError(f"{method}: not tuned in {spec.name}")
    ds_spec = next((d for d in spec.datasets if d.id == dataset or d.name == dataset), None)
    if ds_spec is None:
        raise ValueError(f"{dataset}: no such data set in {spec.name}")
    if data_path is not None:
        with open(data_path, "rb") as fh:
            data = pickle.load(fh)
    else:
        data = draw(spec, dataset, n, data_dir)
    split = spec.protocol_for(ds_spec.id).splits(data)[fold]
    (params,) = [with_seed(m, p, spec) for p in spec.method_grid(m)]
    return spec, m, ds_spec, data, split, params


def run_cell(spec_ref: str, dataset: str, method: str, n: int, fold: int = FOLD,
             data_dir: str | None = None, data_path: str | None = None) -> dict[str, Any]:
    """One outer fold of ``method``'s benchmark protocol on ``dataset`` drawn to ``n`` rows,
    in this process (run it in a fresh one: see the module doc). ``data_path``: the drawn
    set pickled by :func:`draw` (the parent draws each (set, n) once)."""
    from threadpoolctl import threadpool_limits

    from lkm.engine.runner import Task, run_job
    from lkm.spec.size import tuned_fit_count

    spec, m, ds_spec, data, split, params = _setup(spec_ref, dataset, method, n, fold, data_dir, data_path)
    tune = m.tune.model_dump(exclude_none=True)
    task = Task("cost", ds_spec.id, split, m.name, m.estimator, params, tune)
    reset = reset_peak_memory()
    with threadpool_limits(limits=1):
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = run_job(lambda record: None, data.X, data.y, [task], spec.preprocessing)
        cpu1, t1 = time.process_time(), time.perf_counter()
    record = result.records[0]
    info = record.get("info", {})
    out: dict[str, Any] = {
        "status": "ok" if record["status"] == "ok" else "error", "mode": "full",
        "cpu_seconds": cpu1 - cpu0, "wall_seconds": t1 - t0, "run_cpu_seconds": cpu1 - cpu0,
        "rows": int(len(data.y)), "n_train": int(record.get("n_train", len(split.train))),
        "n_features": int(data.X.shape[1]), "n_classes": int(len(set(data.y.tolist()))),
        "grid_size": info.get("grid_size"), "cv_folds": info.get("cv_folds"),
        "spec_grid_size": int(m.tune.size), "spec_cv_folds": int(m.tune.cv),
        "peak_bytes": status_bytes("VmHWM") if reset else None,
    }
    if out["grid_size"] is not None and out["cv_folds"] is not None:
        halving = info.get("halving") or {}
        kept = int(halving["settings"][1]) if halving else 0  # the whole-fold round after the small one
        out["fits"] = tuned_fit_count(int(out["grid_size"]), int(out["cv_folds"]), kept)
    if record["status"] == "ok":
        out.update(accuracy=record["accuracy"], tuned_params=info.get("tuned_params"),
                   failed_settings=int(info.get("failed_settings", 0)))
    else:
        out["message"] = str(record.get("error", record["status"]))[:300]
    return out


def sampled_settings(grid_size: int) -> list[int]:
    """Indices of the grid settings a sampled cell fits: the first, the middle and the last
    (in scikit-learn's ParameterGrid order, the order GridSearchCV searches)."""
    return sorted({0, grid_size // 2, grid_size - 1})


def run_sample(spec_ref: str, dataset: str, method: str, n: int, fold: int = FOLD,
               data_dir: str | None = None, data_path: str | None = None) -> dict[str, Any]:
    """A sampled estimate of :func:`run_cell` for cells too costly to run whole: on the
    spec's first inner fold, the fit and the validation prediction at
    :func:`sampled_settings` (first, middle, last of the grid), their mean CPU seconds
    times (grid size × inner folds), plus one refit on the whole training part at the
    middle setting with the test prediction and the decision values (as
    :func:`lkm.engine.runner.run_job` does). ``cpu_seconds``/``wall_seconds`` are the
    estimate for the full fold; ``run_cpu_seconds`` what the sample itself took. For a
    search by successive halving (:func:`lkm.engine.runner.fit_tuned`) the same settings are
    also fitted on the first inner fold's small part, and the estimate is the halving
    schedule's: small-part mean × settings × inner folds + whole-fold mean × kept settings
    × inner folds + the refit (settings failing on the small part, also kept, not counted)."""
    import warnings

    import numpy as np
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    from lkm.engine.runner import halving_folds, predict_and_decide
    from lkm.methods import resolve_estimator
    from lkm.methods.base import accepts_keyword
    from lkm.numerics.preprocessing import preprocess
    from lkm.spec.size import halving_kept

    spec, m, ds_spec, data, split, params = _setup(spec_ref, dataset, method, n, fold, data_dir, data_path)
    X_train, X_test = preprocess(spec.preprocessing, data.X[split.train], data.X[split.test])
    y_train = data.y[split.train]
    grid = m.tune.settings()
    inner = StratifiedKFold(n_splits=int(m.tune.cv), shuffle=True, random_state=int(m.tune.seed))
    tr, va = next(inner.split(X_train, y_train))
    small = (halving_folds([(tr, va)], y_train, int(m.tune.halving), int(m.tune.seed))
             if m.tune.halving and len(grid) > 1 else None)
    base = resolve_estimator(m.estimator)(**params)
    cls: type = type(base)  # typed as a class: mypy does not see type[Any] as Hashable (accepts_keyword is cached)
    takes_mask = accepts_keyword(cls, "fit", "unlabeled")

    def fit(est: Any, X: Any, y: Any) -> None:
        est.fit(X, y, **({"unlabeled": np.zeros(len(y), dtype=bool)} if takes_mask else {}))

    reset = reset_peak_memory()
    cpu_fits: list[float] = []
    wall_fits: list[float] = []
    failed = 0
    cpu_small: list[float] = []
    wall_small: list[float] = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in sampled_settings(len(grid)):
            for rows, cpu_out, wall_out in [(tr, cpu_fits, wall_fits)] + ([(small[0][0], cpu_small, wall_small)] if small else []):
                c, w = time.process_time(), time.perf_counter()
                try:
                    est = clone(base).set_params(**grid[i])
                    fit(est, X_train[rows], y_train[rows])
                    est.predict(X_train[va])
                except Exception:  # a setting the data cannot take fails fast, as in the search
                    failed += rows is tr
                cpu_out.append(time.process_time() - c)
                wall_out.append(time.perf_counter() - w)
        c, w = time.process_time(), time.perf_counter()
        est = clone(base).set_params(**grid[len(grid) // 2])
        fit(est, X_train, y_train)
        predict_and_decide(est, X_test)[1]()
        cpu_refit, wall_refit = time.process_time() - c, time.perf_counter() - w
    cpu1, t1 = time.process_time(), time.perf_counter()
    folds = int(m.tune.cv)
    searched = len(grid) * folds
    whole = halving_kept(len(grid), int(m.tune.halving)) * folds if small else searched
    return {
        "status": "ok", "mode": "sampled",
        "cpu_seconds": float(np.mean(cpu_fits)) * whole + (float(np.mean(cpu_small)) * searched if small else 0.0) + cpu_refit,
        "wall_seconds": float(np.mean(wall_fits)) * whole + (float(np.mean(wall_small)) * searched if small else 0.0) + wall_refit,
        "run_cpu_seconds": cpu1 - cpu0, "run_wall_seconds": t1 - t0,
        "sampled_fits": len(cpu_fits), "failed_settings": failed, "refit_cpu_seconds": cpu_refit,
        "rows": int(len(data.y)), "n_train": int(len(split.train)),
        "n_features": int(data.X.shape[1]), "n_classes": int(len(set(data.y.tolist()))),
        "grid_size": len(grid), "cv_folds": int(m.tune.cv), "fits": (searched + whole if small else searched) + 1,
        "spec_grid_size": int(m.tune.size), "spec_cv_folds": int(m.tune.cv),
        "peak_bytes": status_bytes("VmHWM") if reset else None,
    }


def child_env() -> dict[str, str]:
    """The child's environment: one BLAS/OpenMP thread, no persisted distances."""
    from lkm.engine.workers import THREAD_VARS

    env = dict(os.environ)
    env.update({var: "1" for var in THREAD_VARS})
    env.update(OMP_WAIT_POLICY="PASSIVE", LKM_DISTANCE_CACHE="off")
    return env


class CellWorker(CellProcess):
    """A fresh interpreter running the cells of one (data set, method) on request: the
    parent writes ``n path`` on its stdin, it answers one JSON line (:func:`run_cell`).
    One process per (set, method), as the benchmark's long-lived workers, keeps interpreter
    start-up and imports (seconds under load) out of every cell; a crash, a memory error
    or a cell past the ceiling ends that chain only. The peak memory is reset per cell."""

    def __init__(self, spec_ref: str, dataset: str, method: str, fold: int = FOLD) -> None:
        super().__init__([sys.executable, "-m", "lkm.bench.cost", spec_ref, dataset, method, str(fold)],
                         env=child_env())

    def run(self, n: int, data_path: str, kill_cpu: float, mode: str = "full") -> dict[str, Any]:
        """One cell (``mode`` "full": :func:`run_cell`, "sampled": :func:`run_sample`),
        killed once it has used ``kill_cpu`` CPU seconds (read from ``/proc``; other load
        slows wall time, not CPU time) or :data:`MAX_WALL` seconds of wall; failures
        become a status, never an exception."""
        import selectors

        sent = self.send(f"{n} {data_path} {mode}")
        if sent is not None:
            return sent
        proc = self.process
        start_cpu, start = _process_cpu(proc.pid), time.perf_counter()
        with selectors.DefaultSelector() as sel:
            sel.register(self.stdout_pipe(), selectors.EVENT_READ)
            while not sel.select(timeout=POLL_SECONDS):
                used = _process_cpu(proc.pid) - start_cpu
                if used > kill_cpu or time.perf_counter() - start > MAX_WALL:
                    self.close()
                    return {"status": "timeout", "mode": mode,
                            "message": f"killed after {used:.0f} CPU s, {time.perf_counter() - start:.0f} s wall"}
        return self.answer()


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from ``/proc/PID/stat``; 0 when unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def slope_of(ns: Sequence[int], seconds: Sequence[float]) -> float | None:
    """Log-log slope between the last two cells (at least 1); None with fewer than two."""
    if len(ns) < 2 or min(seconds[-2:]) <= 0 or ns[-1] == ns[-2]:
        return None
    return max(1.0, math.log(seconds[-1] / seconds[-2]) / math.log(ns[-1] / ns[-2]))


def extrapolate(ns: Sequence[int], seconds: Sequence[float], n: int) -> tuple[float, float]:
    """(seconds at ``n``, slope used): from the largest cell at the last two cells' slope
    (:data:`DEFAULT_SLOPE` with one cell)."""
    slope = slope_of(ns, seconds)
    slope = DEFAULT_SLOPE if slope is None else slope
    return seconds[-1] * (n / ns[-1]) ** slope, slope


def _chain(spec_ref: str, dataset: str, method: str, sizes: Sequence[int], max_seconds: float,
           fold: int, data_of: Callable[[int], str], full_rows: int | None, deadline: float | None,
           on_cell: Callable[[dict[str, Any]], None] | None) -> list[dict[str, Any]]:
    """The cells of one (data set, method), in increasing n."""
    holder: list[CellWorker] = []

    def worker() -> CellWorker:  # a new process after a kill
        if not holder or holder[0].process.poll() is not None:
            holder[:] = [CellWorker(spec_ref, dataset, method, fold)]
        return holder[0]

    try:
        return _grow(worker, dataset, method, sizes, max_seconds, data_of, full_rows, deadline, on_cell)
    finally:
        if holder:
            holder[0].close()


def _grow(worker: Callable[[], Any], dataset: str, method: str, sizes: Sequence[int], max_seconds: float,
          data_of: Callable[[int], str], full_rows: int | None, deadline: float | None,
          on_cell: Callable[[dict[str, Any]], None] | None) -> list[dict[str, Any]]:
    """Per size: the whole fold when its CPU seconds, predicted from the whole folds done
    (:func:`extrapolate`), are within ``max_seconds`` (always at the first size); else a
    sampled cell (:func:`run_sample`) when the sample's own cost, predicted likewise, is
    within it, its estimate scaled by the calibration (whole / sampled at the largest
    size where both ran); else the estimate of the last size extrapolated at the slope
    of the last two estimates. A whole fold killed at :data:`KILL_FACTOR` ceilings falls
    back to a sample at the same size."""
    cells: list[dict[str, Any]] = []
    est_n: list[int] = []  # estimates of a whole fold's seconds (measured, sampled), per size
    est_cpu: list[float] = []
    est_wall: list[float] = []
    full: dict[int, float] = {}  # whole folds measured: CPU seconds
    sample_run: dict[int, float] = {}  # samples: what they cost to run
    calibration: tuple[int, float, float] | None = None  # (n, whole / sampled CPU, wall)
    failed = False
    whole_killed = False  # a whole fold killed: larger ones are not tried
    kill_cpu = KILL_FACTOR * max_seconds

    def emit(cell: dict[str, Any]) -> None:
        cells.append(cell)
        if on_cell:
            on_cell(cell)

    for n in sizes:
        n_eff = min(n, full_rows) if full_rows else n  # a set smaller than the cap is used whole
        cell: dict[str, Any] = {"dataset": dataset, "method": method, "n": n, "rows_used": n_eff}
        if est_n and est_n[-1] == n_eff:
            emit({**cells[-1], "n": n})
            continue
        if failed or (deadline is not None and time.time() > deadline):
            result = None
            cell["message"] = "an earlier cell failed" if failed else "wall budget spent"
        else:
            result = None
            if not whole_killed and (
                    not full or extrapolate(sorted(full), [full[k] for k in sorted(full)], n_eff)[0] <= max_seconds):
                result = worker().run(n_eff, data_of(n_eff), kill_cpu, "full")
                if result["status"] == "ok":
                    full[n_eff] = result["cpu_seconds"]
                    sampled = worker().run(n_eff, data_of(n_eff), kill_cpu, "sampled")  # calibration
                    if sampled["status"] == "ok" and sampled["cpu_seconds"] > 0:
                        sample_run[n_eff] = sampled["run_cpu_seconds"]
                        calibration = (n_eff, result["cpu_seconds"] / sampled["cpu_seconds"],
                                       result["wall_seconds"] / max(sampled["wall_seconds"], 1e-9))
                        result["sampled_estimate_cpu_seconds"] = sampled["cpu_seconds"]
                elif result["status"] != "timeout":
                    failed = True
                else:
                    cell["killed"] = result["message"]
                    whole_killed, result = True, None
            if result is None and not failed:
                runs = sorted(sample_run)
                predicted = (extrapolate(runs, [sample_run[k] for k in runs], n_eff)[0] if runs else 0.0)
                if predicted <= max_seconds:
                    sampled = worker().run(n_eff, data_of(n_eff), kill_cpu, "sampled")
                    if sampled["status"] == "ok":
                        sample_run[n_eff] = sampled["run_cpu_seconds"]
                        cpu_factor, wall_factor = (calibration[1], calibration[2]) if calibration else (1.0, 1.0)
                        result = {**sampled, "sampled_estimate_cpu_seconds": sampled["cpu_seconds"],
                                  "calibration": cpu_factor, "calibrated_at": calibration[0] if calibration else None,
                                  "cpu_seconds": sampled["cpu_seconds"] * cpu_factor,
                                  "wall_seconds": sampled["wall_seconds"] * wall_factor}
                    elif sampled["status"] != "timeout":
                        failed, result = True, sampled
                    else:
                        cell["killed"] = sampled["message"]
                else:
                    cell["message"] = f"sample predicted {predicted:.0f} CPU s > ceiling {max_seconds:g} s"
        if result is not None and result["status"] == "ok":
            cell.update(result, measured=result["mode"] == "full", estimate=result["mode"])
            est_n.append(n_eff)
            est_cpu.append(cell["cpu_seconds"])
            est_wall.append(cell["wall_seconds"])
        elif result is not None:  # an error or a crash: shown, and the chain ends
            cell.update(result, measured=False)
        elif est_n:
            cpu, slope = extrapolate(est_n, est_cpu, n_eff)
            wall, _ = extrapolate(est_n, est_wall, n_eff)
            if "killed" in cell:
                cpu = max(cpu, kill_cpu)
            cell.update(status="extrapolated", measured=False, estimate="extrapolated", extrapolated=True,
                        cpu_seconds=cpu, wall_seconds=wall, slope=slope, from_n=est_n[-1],
                        default_slope=len(est_n) < 2)
        else:
            cell.update(status="timeout" if "killed" in cell else "skipped", measured=False)
            if "killed" in cell:
                cell.update(lower_bound=True, cpu_seconds=kill_cpu, wall_seconds=None)
        emit(cell)
    return cells


def run_cost(
    datasets: Sequence[str] = DATASETS,
    methods: Sequence[str] | None = None,
    sizes: Sequence[int] = SIZES,
    max_seconds: float = MAX_SECONDS,
    spec: str = SPEC,
    fold: int = FOLD,
    jobs: int = 1,
    budget_seconds: float | None = None,
    data_dir: str | None = None,
    on_cell: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every cell (see the module doc), one dict each: dataset, method, n (the cap),
    rows_used, status ("ok", "timeout", "skipped", "error", "crashed"), measured,
    cpu_seconds, wall_seconds (measured or, with ``extrapolated``, estimated), and for
    measured cells fits, grid_size, cv_folds, n_train, peak_bytes, accuracy.
    ``jobs`` (data set, method) chains run side by side, method by method in the order of
    ``methods`` (each on every set); past ``budget_seconds`` of wall no new cell starts
    (the rest are extrapolated). Cells come back grouped by set, then method."""
    from lkm.data.registry import load_registry

    the_spec = benchmark_spec(spec)
    known = [m.name for m in the_spec.methods]
    methods = list(methods) if methods else known
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; {spec} has {', '.join(known)}")
    ids = {d.id for d in the_spec.datasets} | {d.name for d in the_spec.datasets}
    missing = [d for d in datasets if d not in ids]
    if missing:
        raise ValueError(f"unknown data set(s) {', '.join(missing)} for {spec}")
    registry = load_registry()
    sizes = sorted(set(int(s) for s in sizes))
    deadline = None if budget_seconds is None else time.time() + budget_seconds
    # method-major: each method's chains on every set side by side, in the order given
    # (the CLI puts the costliest first), so that a spent budget leaves the cheap cells
    chains = [(d, m) for m in methods for d in datasets]
    rows_of = {d: (registry[d].n_samples if d in registry else None) for d in datasets}

    with tempfile.TemporaryDirectory(prefix="lkm-cost-") as tmp:
        drawn: dict[tuple[str, int], str] = {}
        for d in datasets:  # every (set, size) drawn once, up front, the whole set read once
            loaded: dict[str, Any] = {}
            for n in sizes:
                rows = rows_of[d]
                n_eff = min(n, rows) if rows else n
                if (d, n_eff) not in drawn:
                    path = Path(tmp) / f"{d}-{n_eff}.pkl"
                    with open(path, "wb") as fh:
                        pickle.dump(draw(the_spec, d, n_eff, data_dir, loaded), fh)
                    drawn[d, n_eff] = str(path)
            del loaded

        def one(key: tuple[str, str]) -> list[dict[str, Any]]:
            d, m = key
            return _chain(spec, d, m, sizes, max_seconds, fold, lambda n: drawn[d, n], rows_of[d], deadline,
                          on_cell)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            out = [cell for cells in pool.map(one, chains) for cell in cells]
    order = {key: i for i, key in enumerate((d, m) for d in datasets for m in methods)}
    return sorted(out, key=lambda c: order[c["dataset"], c["method"]])  # stable: n stays increasing


# -- tables ----------------------------------------------------------------------------
def _num(seconds: float) -> str:
    return f"{seconds:,.0f}" if seconds >= 10 else f"{seconds:.1f}" if seconds >= 1 else f"{seconds:.2f}"


def _seconds_text(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return ""
    if cell.get("cpu_seconds") is None:
        return "not run" if cell["status"] == "skipped" else cell["status"]
    if cell.get("lower_bound"):
        return f"> {_num(cell['cpu_seconds'])} (killed)"
    text = _num(cell["cpu_seconds"])
    if cell.get("estimate") == "sampled":
        text += " (sampled" + (f", ×{cell['calibration']:.2f}" if cell.get("calibration") else "") + ")"
    elif cell.get("extrapolated"):
        source = " assumed" if cell.get("default_slope") else " of other sets" if cell.get("slope_from") else ""
        text += f" (extrapolated, slope {cell['slope']:.1f}{source})"
    if cell.get("rows_used", cell["n"]) < cell["n"]:
        text += f" [{cell['rows_used']:,} rows: the whole set]"
    return text


def cost_markdown(cells: Sequence[dict[str, Any]], shipped: dict[tuple[str, str], float] | None = None,
                  folds: int = 5) -> str:
    """A Markdown table per data set: method × cap (every size tried), CPU seconds of one
    outer fold, sampled and extrapolated cells marked; the fits per fold; the wall
    seconds of the largest cell measured; with ``shipped`` (:func:`shipped_costs`), the
    published run's seconds per fold at 500 rows beside them; and the set's total per cap
    with the three most expensive methods."""
    lines: list[str] = []
    for d in dict.fromkeys(c["dataset"] for c in cells):
        rows = [c for c in cells if c["dataset"] == d]
        shown = sorted({c["n"] for c in rows})
        meta = next((c for c in rows if c.get("measured")), {})
        lines += [f"**{d}** ({meta.get('n_features', '?')} features, {meta.get('n_classes', '?')} classes): "
                  "CPU seconds of one outer fold (tuning grid × inner CV + refit + test prediction), "
                  "one BLAS thread", ""]
        ref = "shipped run, n = 500 | " if shipped is not None else ""
        lines.append("| method | fits | " + ref + " | ".join(f"n = {n:,}" for n in shown)
                     + " | wall s (largest measured) |")
        lines.append("|---" * (len(shown) + 3 + (shipped is not None)) + "|")
        totals = dict.fromkeys(shown, 0.0)
        per_method: dict[int, list[tuple[float, str]]] = {n: [] for n in shown}
        for m in dict.fromkeys(c["method"] for c in rows):
            by_n = {c["n"]: c for c in rows if c["method"] == m}
            fits = next((c.get("fits") for c in by_n.values() if c.get("fits")), None)
            measured = [c for c in by_n.values() if c.get("measured")]
            wall = (f"{measured[-1]['wall_seconds']:,.1f} (n = {measured[-1]['n']:,})" if measured else "–")
            ref = "" if shipped is None else (f"{_num(shipped[d, m] / folds)} | " if (d, m) in shipped else "– | ")
            lines.append(f"| {m} | {fits or '?'} | {ref}" + " | ".join(_seconds_text(by_n.get(n)) for n in shown)
                         + f" | {wall} |")
            for n in shown:
                c = by_n.get(n)
                if c is not None and c.get("cpu_seconds") is not None:
                    totals[n] += c["cpu_seconds"]
                    per_method[n].append((c["cpu_seconds"], m))
        listed = set(c["method"] for c in rows)  # the shipped total over the methods shown
        ref = "" if shipped is None else (
            f"{_num(sum(v for (dd, mm), v in shipped.items() if dd == d and mm in listed) / folds)} | ")
        lines.append(f"| **all methods** | | {ref}" + " | ".join(f"**{_num(totals[n])}**" for n in shown) + " | |")
        lines.append("")
        for n in shown:
            top = sorted(per_method[n], reverse=True)[:3]
            if top and totals[n] > 0:
                share = ", ".join(f"{m} {s / totals[n]:.0%}" for s, m in top)
                lines.append(f"- n = {n:,}: the fold costs {totals[n] / 3600:.2f} CPU-hours; largest: {share}")
        notes = [f"{c['method']} at n = {c['n']:,}: {c['status']} ({c.get('message', '')})"
                 for c in rows if c["status"] in ("error", "crashed")]
        notes += [f"{c['method']} at n = {c['n']:,}: the whole fold was killed ({c['killed']})"
                  for c in rows if c.get("killed")]
        lines += [f"- {note}" for note in notes]
        lines.append("")
    return "\n".join(lines)


def shipped_costs(records_path: str | Path) -> dict[tuple[str, str], float]:
    """Seconds (fit + predict, summed over the outer folds) per (data set, method) in a
    benchmark run's records (a ``.jsonl`` or ``.jsonl.gz`` file or a folder of them: the
    CLI passes the published benchmark run's, ``lkm.api.published_folder() / "cross_paper"``)."""
    import gzip

    path = Path(records_path)
    files = sorted(path.glob("*.jsonl*")) if path.is_dir() else [path]
    out: dict[tuple[str, str], float] = {}
    for f in files:
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt") as fh:
            for line in fh:
                r = json.loads(line)
                if r.get("status") == "ok" and "fit_seconds" in r:
                    key = (r["dataset"], r["method"])
                    out[key] = out.get(key, 0.0) + r["fit_seconds"] + r["predict_seconds"]
    return out


def run_cap(spec_file: Path) -> int:
    """The row cap of the benchmark run whose spec is ``spec_file`` (its datasets'
    ``subsample``; :data:`SHIPPED_CAP` when the file or the key is missing)."""
    import yaml

    try:
        datasets = yaml.safe_load(Path(spec_file).read_text()).get("datasets", [])
    except (OSError, AttributeError, yaml.YAMLError):
        return SHIPPED_CAP
    caps = [int(d["subsample"]) for d in datasets if isinstance(d, dict) and d.get("subsample")]
    return max(caps) if caps else SHIPPED_CAP


def costliest_first(records_path: str | Path) -> list[str]:
    """The methods of a benchmark run, by their total seconds in its records, largest first."""
    total: dict[str, float] = {}
    for (_, m), seconds in shipped_costs(records_path).items():
        total[m] = total.get(m, 0.0) + seconds
    return sorted(total, key=lambda m: -total[m])


def _at(cells: dict[int, float], n: int, one_point_slope: float = DEFAULT_SLOPE) -> float:
    """Log-log interpolation of per-fold seconds at ``n`` over the sizes given (beyond
    them, the nearest two sizes' slope, at least 1; ``one_point_slope`` from one size)."""
    ns = sorted(cells)
    if n in cells:
        return cells[n]
    if len(ns) == 1:
        return cells[ns[0]] * (n / ns[0]) ** one_point_slope
    if n > ns[-1] or n < ns[0]:
        a, b = (ns[-2], ns[-1]) if n > ns[-1] else (ns[0], ns[1])
        slope = max(1.0, math.log(cells[b] / cells[a]) / math.log(b / a))
        return cells[b] * (n / b) ** slope if n > b else cells[a] * (n / a) ** slope
    lo = max(k for k in ns if k < n)
    hi = min(k for k in ns if k > n)
    t = math.log(n / lo) / math.log(hi / lo)
    return math.exp(math.log(cells[lo]) + t * (math.log(cells[hi]) - math.log(cells[lo])))


def benchmark_hours(cells: Sequence[dict[str, Any]], shipped: dict[tuple[str, str], float],
                    rows: dict[str, int], caps: Sequence[int] = CAPS, folds: int = 5,
                    shipped_cap: int = SHIPPED_CAP) -> dict[str, Any]:
    """The whole benchmark's CPU-hours at each cap (see the module doc): ``total`` per cap,
    ``by_method`` per cap, ``measured_sets``, and ``assumed``: the methods with no cell
    on any set, whose growth from the shipped run's cap is assumed n^DEFAULT_SLOPE.
    A chain with one estimate grows at the method's slope on the other sets
    (:func:`method_slopes`). ``shipped`` from :func:`shipped_costs` (a run capped at
    ``shipped_cap`` rows), ``rows`` the full size of every benchmark set.

    A set without cells scales its shipped seconds by the median over the measured sets
    of (the cells' growth from its shipped size to the cap) × (the cells' cost at the
    shipped cap / the shipped seconds there): the second factor carries a change of
    protocol between the shipped run and the cells (a larger tuning budget), which growth
    alone would miss."""
    slopes = method_slopes(cells)
    fold_cost: dict[tuple[str, str], dict[int, float]] = {}
    for c in cells:
        if c.get("cpu_seconds") is not None:
            fold_cost.setdefault((c["dataset"], c["method"]), {})[c["rows_used"]] = c["cpu_seconds"]
    measured_sets = sorted({d for d, _ in fold_cost})
    methods = sorted({m for _, m in shipped})
    totals: dict[int, float] = {}
    by_method: dict[int, dict[str, float]] = {}
    for cap in caps:
        by_method[cap] = dict.fromkeys(methods, 0.0)
        for (d, m), seconds in shipped.items():
            n = min(cap, rows.get(d, shipped_cap))
            if (d, m) in fold_cost:
                cost = folds * _at(fold_cost[d, m], n, slopes.get(m, DEFAULT_SLOPE))
            else:
                slope = slopes.get(m, DEFAULT_SLOPE)
                was = min(shipped_cap, rows.get(d, shipped_cap))
                factors = [_at(v, n, slope) / _at(v, was, slope)
                           * folds * _at(v, min(shipped_cap, rows.get(dd, shipped_cap)), slope) / shipped[dd, mm]
                           for (dd, mm), v in fold_cost.items() if mm == m and shipped.get((dd, mm))]
                factor = sorted(factors)[len(factors) // 2] if factors else (n / was) ** DEFAULT_SLOPE
                cost = seconds * factor
            by_method[cap][m] += cost / 3600
        totals[cap] = sum(by_method[cap].values())
    assumed = sorted(set(methods) - {m for _, m in fold_cost})
    return {"total": totals, "by_method": by_method, "measured_sets": measured_sets, "assumed": assumed,
            "shipped_cap": shipped_cap}


def hours_markdown(hours: dict[str, Any], top: int = 6) -> str:
    """The CPU-hours per cap and the methods that dominate them."""
    caps = list(hours["total"])
    lines = ["| cap | CPU-hours (26 sets × 5 folds × 19 methods) | wall on 2 cores, perfectly packed | "
             f"largest {top} methods (CPU-hours) |", "|---|---|---|---|"]
    for cap in caps:
        ranked = sorted(hours["by_method"][cap].items(), key=lambda kv: -kv[1])[:top]
        lines.append(f"| {cap:,} | {hours['total'][cap]:,.1f} | {hours['total'][cap] / 2:,.1f} h | "
                     + ", ".join(f"{m} {h:,.1f}" for m, h in ranked) + " |")
    assumed = hours.get("assumed") or []
    if assumed:
        share = {cap: sum(hours["by_method"][cap][m] for m in assumed) for cap in caps}
        lines += ["", f"Not measured on any set (growth from the shipped run's {hours.get('shipped_cap', SHIPPED_CAP):,} rows "
                  f"assumed n^{DEFAULT_SLOPE:g}): "
                  + ", ".join(assumed) + "; together " + ", ".join(f"{share[c]:,.1f} CPU-hours at {c:,}" for c in caps)
                  + "."]
    return "\n".join(lines)


def method_slopes(cells: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per method, the median over data sets of the log-log slope between its smallest
    and largest estimated (whole or sampled, not extrapolated) caps, at least 1."""
    found: dict[str, list[float]] = {}
    for d, m in dict.fromkeys((c["dataset"], c["method"]) for c in cells):
        points = sorted({c["rows_used"]: c["cpu_seconds"] for c in cells
                         if (c["dataset"], c["method"]) == (d, m) and c.get("estimate") in ("full", "sampled")
                         and c.get("cpu_seconds")}.items())
        if len(points) >= 2 and points[-1][0] > points[0][0]:
            (n0, s0), (n1, s1) = points[0], points[-1]
            found.setdefault(m, []).append(max(1.0, math.log(s1 / s0) / math.log(n1 / n0)))
    return {m: float(sorted(v)[len(v) // 2]) if len(v) % 2 else float(sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2)
            for m, v in found.items()}


def with_method_slopes(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells, where a chain was extrapolated from a single estimate (the assumed
    :data:`DEFAULT_SLOPE`) and the method has a measured slope on other sets
    (:func:`method_slopes`): re-extrapolated at that slope, marked ``slope_from: "other sets"``."""
    slopes = method_slopes(cells)
    base = {(c["dataset"], c["method"], c["rows_used"]): c for c in cells if c.get("estimate") in ("full", "sampled")}
    out = []
    for c in cells:
        if c.get("extrapolated") and c.get("default_slope") and c["method"] in slopes:
            b = base.get((c["dataset"], c["method"], c["from_n"]))
            if b is not None:
                slope = slopes[c["method"]]
                factor = (c["rows_used"] / c["from_n"]) ** slope
                c = {**c, "slope": slope, "default_slope": False, "slope_from": "other sets",
                     "cpu_seconds": b["cpu_seconds"] * factor,
                     "wall_seconds": None if b.get("wall_seconds") is None else b["wall_seconds"] * factor}
        out.append(c)
    return out


def full_rows(spec: Any) -> dict[str, int]:
    """Rows of every data set of ``spec`` at full size (the registry's count)."""
    from lkm.data.registry import load_registry

    registry = load_registry()
    out = {}
    for d in spec.datasets:
        info = registry.get(d.name)
        if info is not None and info.n_samples:
            out[d.id] = int(info.n_samples)
    return out


def cost_report(cells: Sequence[dict[str, Any]], records: str | Path, spec: str = SPEC,
                caps: Sequence[int] = CAPS) -> tuple[str, dict[str, Any]]:
    """The Markdown of :func:`cost_markdown` and :func:`hours_markdown`, and the hours
    (``records``: the shipped benchmark run's, see :func:`shipped_costs`)."""
    shipped = shipped_costs(records)
    cells = with_method_slopes(cells)
    hours = benchmark_hours(cells, shipped, full_rows(benchmark_spec(spec)), caps,
                            shipped_cap=run_cap(Path(records).parent / "spec.yaml"))
    text = cost_markdown(cells, shipped) + "\n" + hours_markdown(hours) + "\n"
    return text, hours


def read_cells(path: str | Path) -> list[dict[str, Any]]:
    """The cells saved by :func:`run_cost`'s caller: its JSON (``{"cells": [...]}``) or the
    ``.cells.jsonl`` written cell by cell (grouped here by set, then method, in file order)."""
    text = Path(path).read_text()
    if text.lstrip().startswith("{") and '"cells"' in text[:200]:
        return list(json.loads(text)["cells"])
    cells = [json.loads(line) for line in text.splitlines() if line.strip()]
    sets = list(dict.fromkeys(c["dataset"] for c in cells))
    methods = list(dict.fromkeys(c["method"] for c in cells))
    return sorted(cells, key=lambda c: (sets.index(c["dataset"]), methods.index(c["method"])))


if __name__ == "__main__":  # a worker (CellWorker): SPEC DATASET METHOD FOLD; reads "N DRAWN_SET [full|sampled]"
    spec_ref, dataset, method, fold = sys.argv[1:5]
    for request in sys.stdin:
        n, data_path, *mode = request.split()
        run = run_sample if mode == ["sampled"] else run_cell
        print(json.dumps(run(spec_ref, dataset, method, int(n), int(fold), data_path=data_path), default=str),
              flush=True)
