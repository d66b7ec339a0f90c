"""Replay a shipped run's records through `lkm run`'s time-left estimate.

The fits are taken in the order the runner sends its jobs (largest first: fits × rows),
and at each tenth of the way the estimate of the seconds left
(:func:`lkm.engine.store.seconds_left`, on one worker) is divided by the fit seconds the
records say were left. Printed beside it: each remaining fit at its method's mean alone
(the estimate before 2026-12-01).

    python scripts/replay_time_left.py cross_paper lpl_vs_svm lrr_benchmark

Reads docs/runs/RUN (spec and records) and the data sets (LKM_DATA_DIR) to plan the run.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from lkm.engine.runner import Task, build_plan, dataset_sizes, largest_jobs_first
from lkm.engine.store import RunStore, seconds_left
from lkm.spec import load_spec

RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs"
POINTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def _seconds(record: dict) -> float:
    return float(record["fit_seconds"]) + float(record["predict_seconds"])


def replay(run: str) -> None:
    plan = build_plan(load_spec(RUNS / run / "spec.yaml"))
    records = {r["task_id"]: r for r in RunStore(RUNS / run).iter_records() if r.get("status") == "ok" and "fit_seconds" in r}
    groups: dict[tuple[str, str, str], list[Task]] = {}
    for t in plan.tasks:
        if isinstance(t, Task) and t.id in records:
            groups.setdefault((t.dataset, t.split.id, t.method), []).append(t)
    keys = list(groups)
    order = [records[t.id] for i in largest_jobs_first(plan, groups, []) for t in groups[keys[i]]]
    sizes = dataset_sizes(plan)
    by_pair, by_method = [], []
    for share in POINTS:
        done, rest = order[:int(share * len(order))], order[int(share * len(order)):]
        left = sum(_seconds(r) for r in rest)
        fits: Counter = Counter()
        seconds: Counter = Counter()
        for r in done:
            fits[(r["method"], r["dataset"])] += 1
            seconds[(r["method"], r["dataset"])] += _seconds(r)
        remaining = Counter((r["method"], r["dataset"]) for r in rest)
        by_pair.append(seconds_left(dict(remaining), dict(fits), dict(seconds), 1, sizes) / left)
        # the estimate before 2026-12-01: every fit at its method's mean, over all data sets
        method_fits: Counter = Counter()
        method_seconds: Counter = Counter()
        for (m, d), n in fits.items():
            method_fits[m] += n
            method_seconds[m] += seconds[(m, d)]
        overall = sum(seconds.values()) / len(done)
        alone = sum(n * (method_seconds[m] / method_fits[m] if method_fits[m] else overall)
                    for (m, _), n in remaining.items())
        by_method.append(alone / left)
    print(f"{run}: {len(order)} fits on {len(plan.datasets)} data sets; estimate / fit seconds left at "
          + ", ".join(f"{p:.0%}" for p in POINTS))
    print("  (method, data set) means, sizes:", " ".join(f"{v:5.2f}" for v in by_pair))
    print("  each method's mean alone:       ", " ".join(f"{v:5.2f}" for v in by_method))


if __name__ == "__main__":
    for name in sys.argv[1:] or ["cross_paper"]:
        replay(name)
