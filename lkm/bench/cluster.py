"""``lkm bench --cluster ADDRESS``: the cluster engine against local worker processes, in one run.

One sweep (:data:`BENCH_SPEC`: PL, LPL and SVM over a sigma grid under 10-fold CV on
six UCI sets, 540 fits) is executed, each time into a fresh
temporary run folder:

* ``local, --jobs 1``: the reference — one local worker process (:mod:`lkm.engine.workers`);
* ``local, --jobs W``: W local worker processes, W the cluster's worker count;
* ``cluster, 1 worker``: a ``local:1`` cluster (only when ADDRESS is ``local:N``);
* ``cluster``: ADDRESS itself.

Only :func:`lkm.engine.runner.execute` is timed: workers are started, and have imported the
estimators, before the clock starts (start-up is reported apart). The speed-up is
``T(--jobs 1) / T(cluster)`` (target :data:`SPEEDUP_TARGET` on 2 cores). The per-fit
overhead of the cluster path is ``(T(cluster, 1 worker) - T(--jobs 1)) / fits``: the
same single worker process either way, so the difference is the engine's (submitting,
scattering, handing records back; target below :data:`OVERHEAD_TARGET_SECONDS`). Every
run's records are checked to hold the same task ids and accuracies.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lkm.errors import LkmError

#: Target of T(--jobs 1) / T(cluster) with 2 workers on 2 cores.
SPEEDUP_TARGET = 1.6
#: Target of the cluster path's extra wall time per fit against the local path.
OVERHEAD_TARGET_SECONDS = 0.020

#: The benchmark's sweep: 6 datasets x 10 folds x 3 methods x 3 sigmas = 540 fits in 180
#: jobs of 3 fits each (short jobs: the engine's own cost per job shows).
BENCH_SPEC: dict[str, Any] = {
    "name": "bench-cluster",
    "description": "PL, LPL and SVM over three sigmas on six UCI sets (lkm bench --cluster).",
    "datasets": ["pima-indians-diabetes", "ida-german", "wdbc", "ionosphere", "sonar", "heart-statlog"],
    "preprocessing": "standardize",
    "protocol": {"kind": "kfold", "folds": 10, "repeats": 1, "seed": 0},
    "methods": [
        {"name": "PL", "estimator": "pl"},
        {"name": "LPL", "estimator": "lpl", "params": {"k": "auto"}},
        {"name": "SVM", "estimator": "svm", "params": {"C": 1.0}},
    ],
    "sweep": {"sigma": "1:10:3"},
}


def _records(root: Path) -> dict[str, float]:
    """task id -> accuracy, from the raw record lines (a second line for an id is an error)."""
    out: dict[str, float] = {}
    for part in sorted((root / "records").glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec["task_id"] in out:
                    raise LkmError(f"bench: task {rec['task_id']} recorded twice in {root}")
                out[rec["task_id"]] = rec.get("accuracy")
    return out


def run_cluster_bench(
    address: str, *, data_dir: str | Path | None = None, spec: dict[str, Any] | None = None,
    on_line: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Time the sweep on each engine (see the module doc); returns the timings, speed-up,
    overhead and whether each target is met."""
    from lkm.engine.cluster import ClusterAddress, connect
    from lkm.engine.runner import build_plan, execute
    from lkm.engine.store import RunStore
    from lkm.engine.workers import preload, run_calls, stop_workers
    from lkm.methods import METHOD_PATHS
    from lkm.spec import spec_from_dict

    say = on_line or (lambda _: None)
    parsed = ClusterAddress.parse(address)
    bench_spec = spec_from_dict(spec or BENCH_SPEC, "<bench --cluster>")
    plan = build_plan(bench_spec, data_dir=data_dir)
    fits = len(plan.tasks)
    jobs = len({(t.dataset, t.split.id, t.method) for t in plan.tasks if t.split is not None})  # fits only
    modules = ["lkm.engine.runner", *sorted({p.rpartition(".")[0] for p in METHOD_PATHS.values()})]
    runs: list[dict[str, Any]] = []
    accuracies: dict[str, dict[str, float]] = {}

    def timed(label: str, workers: int, run: Callable[[RunStore], Any], started: float) -> None:
        with tempfile.TemporaryDirectory(prefix="lkm-bench-cluster-") as tmp:
            store = RunStore(Path(tmp) / "run")
            store.prepare()
            t0 = time.perf_counter()
            summary = run(store)
            seconds = time.perf_counter() - t0
            accuracies[label] = _records(store.root)
        if summary.failed or summary.ran != fits:
            raise LkmError(f"bench --cluster: {label}: {summary.ran} of {fits} fits ok, {summary.failed} failed "
                           f"({summary.first_error})")
        runs.append({"engine": label, "workers": workers, "seconds": seconds, "startup_seconds": started})
        say(f"[bench --cluster] {label}: {fits} fits in {seconds:.2f} s (workers started in {started:.2f} s)")

    def local(n: int) -> None:
        t0 = time.perf_counter()
        run_calls([(preload, (modules,))] * n, jobs=n, on_result=lambda _: None)  # start and warm n workers
        started = time.perf_counter() - t0
        timed(f"local, --jobs {n}", n, lambda store: execute(plan, store, jobs=n), started)

    def on_cluster(where: str, label: str) -> int:
        t0 = time.perf_counter()
        with connect(where) as cluster:
            cluster.client.run(preload, modules)
            started = time.perf_counter() - t0
            n = len(cluster.workers())
            timed(label, n, lambda store: execute(plan, store, cluster=cluster), started)
        return n

    try:
        local(1)
        if parsed.local_workers is not None:
            on_cluster("local:1", "cluster, 1 worker")
        n = on_cluster(address, f"cluster ({address})")
        local(n)
    finally:
        stop_workers()
    reference = accuracies["local, --jobs 1"]
    for label, acc in accuracies.items():
        if acc != reference:
            differ = sorted(t for t in reference if acc.get(t) != reference[t])
            raise LkmError(f"bench --cluster: {label} differs from --jobs 1 on {len(differ)} task(s), e.g. {differ[:3]}")
    seconds = {r["engine"]: r["seconds"] for r in runs}
    cluster_label = f"cluster ({address})"
    speedup = seconds["local, --jobs 1"] / seconds[cluster_label]
    overhead = ((seconds["cluster, 1 worker"] - seconds["local, --jobs 1"]) / fits
                if "cluster, 1 worker" in seconds else None)
    return {
        "address": address, "fits": fits, "jobs": jobs, "workers": n, "runs": runs,
        "speedup": speedup, "speedup_target": SPEEDUP_TARGET, "speedup_passed": speedup >= SPEEDUP_TARGET,
        "cluster_over_local_same_workers": seconds[cluster_label] / seconds[f"local, --jobs {n}"],
        "overhead_per_fit_seconds": overhead,
        "overhead_per_job_seconds": overhead * fits / jobs if overhead is not None else None,
        "overhead_target_seconds": OVERHEAD_TARGET_SECONDS,
        "overhead_passed": overhead < OVERHEAD_TARGET_SECONDS if overhead is not None else None,
        "same_records": True,
    }


def format_cluster_bench(result: dict[str, Any]) -> str:
    """A plain-text table of :func:`run_cluster_bench`'s runs and its two measures."""
    header = ("engine", "workers", "seconds", "start-up s")
    rows = [(r["engine"], str(r["workers"]), f"{r['seconds']:.2f}", f"{r['startup_seconds']:.2f}") for r in result["runs"]]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    ok = {True: "met", False: "NOT met", None: "not measured"}
    lines.append(f"{result['fits']} fits in {result['jobs']} jobs; same task ids and accuracies on every engine")
    lines.append(f"speed-up, --jobs 1 / cluster: {result['speedup']:.2f}x "
                 f"(target >= {result['speedup_target']:g}x: {ok[result['speedup_passed']]})")
    lines.append(f"cluster / local with the same {result['workers']} worker(s): "
                 f"{result['cluster_over_local_same_workers']:.2f}")
    if result["overhead_per_fit_seconds"] is not None:
        lines.append(f"cluster overhead: {1000 * result['overhead_per_fit_seconds']:.1f} ms per fit, "
                     f"{1000 * result['overhead_per_job_seconds']:.1f} ms per job "
                     f"(target < {1000 * result['overhead_target_seconds']:g} ms per fit: {ok[result['overhead_passed']]})")
    else:
        lines.append("cluster overhead: measured only with local:N (it needs a one-worker cluster)")
    return "\n".join(lines)

