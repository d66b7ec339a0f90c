"""Helper of the report tests: a tiny real run (two offline data sets, PL and SVM, a
3-value sigma sweep, 3 folds) fitted and reported in a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore
from lkm.report import build_report
from lkm.spec import spec_from_dict

TINY: dict[str, Any] = {
    "name": "tiny",
    "datasets": ["moons", "sklearn-iris"],
    "protocol": {"kind": "kfold", "folds": 3, "seed": 1},
    "methods": [{"name": "PL", "estimator": "pl"}, {"name": "SVM", "estimator": "svm"}],
    "sweep": {"sigma": [0.5, 1.0, 2.0]},
    "outputs": {"tables": ["summary", "metrics"], "figures": ["sweep", "best"]},
}


def run_tiny(folder: Path, spec_dict: dict[str, Any] = TINY):
    """Fit ``spec_dict`` into ``folder`` and build its report: ``(spec, plan, store, written)``."""
    spec = spec_from_dict(spec_dict)
    plan = build_plan(spec)
    store = RunStore(folder)
    store.prepare()
    write_plan(plan, store)
    execute(plan, store, jobs=1)
    return spec, plan, store, build_report(store, spec, plan.task_ids, plan.unavailable)
