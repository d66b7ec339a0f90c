"""Re-fitting the shipped records (docs/runs) through the runner, to show that a faster
route computes what the records hold: the tests of a solver route share this."""

from __future__ import annotations

import ast
import gzip
import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lkm.engine.runner import build_plan, run_job
from lkm.spec import load_spec

RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs"


def records(run: str) -> list[dict[str, Any]]:
    """The records of the shipped run ``run``."""
    with gzip.open(RUNS / run / "records" / "part-snapshot.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


def runs_with(estimators: Iterable[str]) -> list[str]:
    """The shipped runs holding an ok record of one of ``estimators``, by name. Called at
    collection by every pytest-xdist worker, so it parses only the lines naming one of
    ``estimators`` and stops at the first ok one (parsing every record took ~7 s)."""
    wanted = set(estimators)

    def holds(run: Path) -> bool:
        with gzip.open(run / "records" / "part-snapshot.jsonl.gz", "rt") as fh:
            for line in fh:
                if any(f'"estimator": "{e}"' in line for e in wanted):
                    r = json.loads(line)
                    if r.get("estimator") in wanted and r.get("status") == "ok":
                        return True
        return False

    return [d.name for d in sorted(RUNS.iterdir()) if (d / "records" / "part-snapshot.jsonl.gz").is_file() and holds(d)]


def as_json(value: Any) -> Any:
    """``value`` as it reads back from a record (numpy scalars as numbers)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


def record_info(record: dict[str, Any]) -> dict[str, Any]:
    """A record's ``info`` as a dict (older records hold its repr)."""
    info = record.get("info")
    return ast.literal_eval(info) if isinstance(info, str) else (info or {})


def refit_records(run: str, data_dir: Path, estimators: Iterable[str], keep: Callable[[dict], bool],
                  keys: Iterable[str] = ("status", "accuracy", "errors"),
                  info_keys: Iterable[str] = ("tuned_params",)) -> tuple[int, list[str]]:
    """Re-fit the ok records of ``run`` whose estimator is one of ``estimators`` and for
    which ``keep(record)`` holds, through the runner (the run's own tasks); return how many
    and the differences: each record key of ``keys`` (accuracy, misclassified rows with
    their labels, ...) and each ``info`` entry of ``info_keys`` (the tuned setting, ...)
    that the new fit does not reproduce."""
    estimators = set(estimators)
    spec = load_spec(RUNS / run / "spec.yaml")
    wanted = {r["task_id"]: r for r in records(run)
              if r.get("estimator") in estimators and r.get("status") == "ok" and keep(r)}
    datasets = {r["dataset"] for r in wanted.values()}
    spec = spec.model_copy(update={"datasets": [d for d in spec.datasets if d.id in datasets],
                                   "methods": [m for m in spec.methods if m.estimator in estimators]})
    plan = build_plan(spec, data_dir=data_dir)
    groups: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for task in plan.tasks:
        if task.id in wanted:
            groups[(task.dataset, task.split.id, task.method)].append(task)
    found: list[dict[str, Any]] = []
    for (dataset, _, _), tasks in groups.items():
        data = plan.datasets[dataset]
        run_job(found.append, data.X, data.y, tasks, spec.preprocessing, spec.score_train)
    assert len(found) == len(wanted), f"{run}: {len(found)} of {len(wanted)} records re-fitted"
    differences = []
    for new in found:
        old = wanted[new["task_id"]]
        where = f"{run} {old['dataset']} {old['split']} {old['method']}"
        differences += [f"{where}: {key}" for key in keys if as_json(new.get(key)) != old.get(key)]
        new_info, old_info = new.get("info", {}), record_info(old)
        differences += [f"{where}: {key}" for key in info_keys
                        if as_json(new_info.get(key)) != old_info.get(key)]
    return len(found), differences
