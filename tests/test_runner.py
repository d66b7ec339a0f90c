"""The runner and the store: records, resume after a kill, determinism, reports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from processes import CEILING

from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore, StoreWarning
from lkm.report import build_report
from lkm.spec import spec_from_dict

SMALL = {
    "name": "small",
    "datasets": ["moons", "sklearn-iris"],
    "protocol": {"kind": "kfold", "folds": 3, "seed": 1},
    "methods": [
        {"name": "PL", "estimator": "pl"},
        {"name": "LPL", "estimator": "lpl", "params": {"k": "auto"}},
        {"name": "SVM", "estimator": "svm"},
    ],
    "sweep": {"sigma": [0.5, 2.0]},
    "paper": {"reference": "test", "results": [{"dataset": "moons", "method": "SVM", "value": 0.9}]},
}


def run_small(tmp_path: Path, spec_dict=SMALL, jobs=1):
    spec = spec_from_dict(spec_dict)
    plan = build_plan(spec)
    store = RunStore(tmp_path)
    store.prepare()
    write_plan(plan, store)
    summary = execute(plan, store, jobs=jobs)
    build_report(store, spec, plan.task_ids, plan.unavailable)
    return plan, store, summary


def test_plan_expands_datasets_splits_methods_and_grid():
    plan = build_plan(spec_from_dict(SMALL))
    assert len(plan.tasks) == 2 * 3 * 3 * 2
    assert len(plan.task_ids) == len(plan.tasks)  # ids are unique


def test_run_writes_records_tables_figures(tmp_path):
    plan, store, summary = run_small(tmp_path)
    assert summary.ran == len(plan.tasks) and summary.failed == 0
    df = pd.read_csv(tmp_path / "results.csv")
    assert len(df) == len(plan.tasks)
    assert df["accuracy"].between(0, 1).all()
    assert (df.groupby(["dataset", "method"])["accuracy"].mean() > 0.6).all()
    for name in ("summary", "sweep", "paper"):
        for ext in ("md", "csv", "tex"):
            assert (tmp_path / "tables" / f"{name}.{ext}").is_file()
    assert (tmp_path / "results.parquet").is_file()
    assert (tmp_path / "figures" / "sweep_sigma.png").stat().st_size > 5000
    assert (tmp_path / "figures" / "best.png").is_file()
    assert not (tmp_path / "figures" / "best.pdf").exists()  # PNG only unless the spec asks for pdf
    summary_md = (tmp_path / "tables" / "summary.md").read_text()
    assert "accuracy % (paper)" in summary_md and "90.00" in summary_md


def test_records_list_the_misclassified_test_rows_with_their_predictions(tmp_path):
    from lkm.data import load_dataset

    plan, store, _ = run_small(tmp_path)
    y = load_dataset("moons").y
    for rec in store.iter_records():
        wrong = rec["errors"]
        assert len(wrong) == round((1 - rec["accuracy"]) * rec["n_test"])
        if rec["dataset"] == "moons":
            assert all(pred != y[row] for row, pred in wrong)
    assert "errors" not in pd.read_csv(tmp_path / "results.csv").columns


def test_a_setting_the_method_refuses_is_recorded_not_applicable_not_failed(tmp_path):
    """LDCV needs C·(K−1) < d: on iris (d = 4, C = 3) K = 3 is outside its domain."""
    spec = {"name": "na", "datasets": ["sklearn-iris"], "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
            "methods": [{"name": "LDCV", "estimator": "ldcv", "sweep": {"n_neighbors": [2, 3]}}]}
    plan, store, summary = run_small(tmp_path, spec)
    assert summary.failed == 0
    status = {json.dumps(r["params"]): r["status"] for r in store.iter_records()}
    assert status == {'{"n_neighbors": 2}': "ok", '{"n_neighbors": 3}': "n/a"}
    assert store.completed_ids() == set(plan.task_ids)  # complete: a resume does not retry it
    reason = next(r["error"] for r in store.iter_records() if r["status"] == "n/a")
    assert "C·(K-1) < d" in reason and "\n" not in reason
    assert "n_neighbors=2" in (tmp_path / "tables" / "summary.md").read_text()


def test_rerun_computes_nothing_and_duplicates_nothing(tmp_path):
    plan, store, _ = run_small(tmp_path)
    again = execute(plan, store)
    assert again.ran == 0 and again.skipped == len(plan.tasks)
    assert len(list(store.iter_records())) == len(plan.tasks)


def test_same_spec_and_seed_give_the_same_numbers(tmp_path):
    _, a, _ = run_small(tmp_path / "a")
    _, b, _ = run_small(tmp_path / "b", jobs=2)
    ra = a.records_frame().set_index("task_id")["accuracy"].sort_index()
    rb = b.records_frame().set_index("task_id")["accuracy"].sort_index()
    pd.testing.assert_series_equal(ra, rb)


def test_a_line_cut_by_a_kill_is_ignored_and_does_not_swallow_the_next(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    store.append([{"task_id": "a", "status": "ok", "accuracy": 1.0}])  # ok counts only with its metric
    part = next(store.records_dir.glob("part-*.jsonl"))
    with open(part, "a") as fh:
        fh.write('{"task_id": "b", "stat')  # killed mid-write
    store.append([{"task_id": "c", "status": "ok", "accuracy": 1.0}])
    with pytest.warns(StoreWarning, match="1 malformed line skipped"):  # no longer the last line
        assert store.completed_ids() == {"a", "c"}


def test_failed_tasks_are_recorded_and_retried_on_resume(tmp_path):
    store = RunStore(tmp_path)
    store.prepare()
    store.append([{"task_id": "x", "status": "error", "error": "boom"}])
    assert store.completed_ids() == set()


def test_end_to_end_on_real_uci_data(tmp_path, data_dir):
    spec = {
        "name": "sonar-e2e", "datasets": ["sonar"], "protocol": {"kind": "kfold", "folds": 5, "seed": 0},
        "methods": [{"name": "LPL", "estimator": "lpl"}, {"name": "SVM", "estimator": "svm"}],
        "sweep": {"sigma": [1.0, 5.0]},
    }
    spec_path = tmp_path / "sonar.yaml"
    spec_path.write_text(json.dumps(spec))
    res = subprocess.run(
        [sys.executable, "-m", "lkm.cli", "run", str(spec_path), "--out", str(tmp_path / "run"),
         "--data-dir", str(data_dir), "--no-progress"],
        capture_output=True, text=True, timeout=CEILING,
    )
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(tmp_path / "run" / "results.csv")
    assert len(df) == 5 * 2 * 2 and set(df["n_train"] + df["n_test"]) == {208}
    best = df.groupby(["method", "params"])["accuracy"].mean().groupby("method").max()
    assert best["SVM"] > 0.75 and best["LPL"] > 0.75  # sonar is well above chance (53%)
    prov = json.loads((tmp_path / "run" / "provenance.json").read_text())
    assert prov["datasets"]["sonar"]["files"][0]["sha256"]
    assert prov["packages"]["libsvm-official"]


def test_score_train_records_training_accuracy_and_the_train_test_table(tmp_path):
    spec = spec_from_dict({
        "name": "tt", "datasets": ["moons"], "protocol": {"kind": "kfold", "folds": 2},
        "methods": [{"name": "PL", "estimator": "pl", "params": {"sigma": 0.5}}],
        "score_train": True, "outputs": {"tables": ["train_test"], "figures": []},
    })
    store = RunStore(tmp_path / "tt")
    store.prepare()
    plan = build_plan(spec)
    execute(plan, store)
    df = store.records_frame()
    # PL interpolates its training labels (G invertible on distinct moons points).
    assert (df["train_accuracy"] == 1.0).all()
    build_report(store, spec, plan.task_ids, {})
    table = (tmp_path / "tt" / "tables" / "train_test.csv").read_text()
    assert "training % (ours)" in table and "100.00" in table
    # Without score_train the ids differ, so a plain run never reuses these records.
    plain = build_plan(spec.model_copy(update={"score_train": False}))
    assert not (plain.task_ids & plan.task_ids)
