"""Every failure of user code is a failed fit with its reason in the record (issue 29,
point 4): ``sys.exit`` in ``fit``, a ``KeyboardInterrupt`` raised by the estimator in a
worker, the wrong number of predictions, and a worker killed by the estimator
(``os._exit``: rerun once alone in a fresh worker, then recorded). A run whose every
fit failed exits 1. The user's estimators live in a module written to ``tmp_path``
and put on ``PYTHONPATH``; runs go through the ``lkm`` CLI in a subprocess, so that
fits run in real worker processes (bounded by generous timeouts, not wall-clock limits)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lkm.engine.runner import build_plan, checked_predictions, execute
from lkm.engine.store import RunStore
from lkm.engine.workers import describe_user_failure, run_calls, user_code_failures
from lkm.spec import load_spec

USER_MODULE = '''
import os
import sys
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class NearestMean(ClassifierMixin, BaseEstimator):
    def __init__(self, marker=""):
        self.marker = marker

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == c].mean(axis=0) for c in self.classes_])
        return self

    def predict(self, X):
        return self.classes_[((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2).argmin(axis=1)]


class Exits(NearestMean):
    def fit(self, X, y):
        sys.exit(0)


class WrongCount(NearestMean):
    def predict(self, X):
        return super().predict(X)[:-1]


class Interrupts(NearestMean):
    def fit(self, X, y):
        raise KeyboardInterrupt


class KillsWorker(NearestMean):
    def fit(self, X, y):
        os._exit(3)


class KillsOnce(NearestMean):
    """Kills its worker the first time any fit of it runs (the marker file says so)."""

    def fit(self, X, y):
        marker = Path(self.marker)
        if not marker.exists():
            marker.write_text("died once")
            os._exit(5)
        return super().fit(X, y)
'''

SPEC = """\
name: user-code
datasets: [moons]
preprocessing: standardize
protocol: {{kind: kfold, folds: 2, repeats: 1, seed: 0}}
methods:
{methods}
outputs: {{tables: [summary], figures: []}}
"""

NM = "  - {name: NM, estimator: hostile_user.NearestMean}"


def _write(tmp_path: Path, *methods: str) -> Path:
    (tmp_path / "hostile_user.py").write_text(USER_MODULE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(methods="\n".join(methods)))
    return spec


def _lkm_run(tmp_path: Path, *methods: str, jobs: int = 2) -> subprocess.CompletedProcess:
    spec = _write(tmp_path, *methods)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "lkm.cli", "run", str(spec), "--out", str(tmp_path / "out"),
                           "--no-progress", "--jobs", str(jobs)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def _records(out: Path) -> list[dict]:
    lines = [ln for part in sorted(out.rglob("records/part-*.jsonl")) for ln in part.read_text().splitlines()]
    return [json.loads(ln) for ln in lines if ln.strip()]


def _error_lines(res: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.strip()]


# -- the pieces ---------------------------------------------------------------------
def test_reasons_name_what_user_code_did() -> None:
    assert describe_user_failure(SystemExit(0), "fit") == "fit called sys.exit(0)"
    assert describe_user_failure(SystemExit(), "fit") == "fit called sys.exit()"
    assert describe_user_failure(SystemExit("bye"), "predict") == "predict called sys.exit('bye')"
    assert describe_user_failure(KeyboardInterrupt(), "fit") == "fit raised KeyboardInterrupt"
    assert describe_user_failure(ValueError("bad"), "fit") == "ValueError: bad"
    # in this (main) process Ctrl-C is the user's: never a failed fit
    assert SystemExit in user_code_failures() and KeyboardInterrupt not in user_code_failures()


def test_wrong_prediction_shapes_are_one_line_naming_both_counts() -> None:
    assert checked_predictions([0, 1, 1], 3, "test").tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=r"^predict returned 2 predictions for 3 test rows \(expected 3 predictions\)$"):
        checked_predictions([0, 1], 3, "test")
    with pytest.raises(ValueError, match=r"an array of shape \(3, 1\) for 3 test rows"):
        checked_predictions([[0], [1], [1]], 3, "test")


def _exit_worker(code: int) -> int:
    os._exit(code)


def _square(x: int) -> int:
    return x * x


def test_run_calls_reruns_a_dead_workers_call_once_then_reports_it_and_the_pool_keeps_working() -> None:
    calls = [(_square, (i,)) for i in range(3)] + [(_exit_worker, (7,))] + [(_square, (i,)) for i in range(3, 6)]
    results: list[int] = []
    dead: list[tuple] = []
    resumed: list[tuple] = []

    def resume(call):
        resumed.append(call)
        return call

    def on_dead(call, reason):
        dead.append((call, reason))
        return None

    run_calls(calls, jobs=2, on_result=results.append, resume=resume, on_dead=on_dead)
    assert sorted(results) == [i * i for i in range(6)]
    assert dead == [((_exit_worker, (7,)), "the worker process died (exit code 7) twice")]
    assert (_exit_worker, (7,)) in resumed
    results.clear()
    run_calls([(_square, (i,)) for i in range(4)], jobs=2, on_result=results.append)
    assert sorted(results) == [0, 1, 4, 9]


def test_in_the_main_process_sys_exit_is_a_failed_fit_and_keyboardinterrupt_still_stops(tmp_path, monkeypatch) -> None:
    """``in_process`` runs fits here: sys.exit is the estimator's and is recorded; a
    KeyboardInterrupt may be the user's Ctrl-C, so it stops the run as before."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hostile_user", raising=False)
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    plan = build_plan(load_spec(_write(tmp_path, "  - {name: Exit, estimator: hostile_user.Exits}")))
    summary = execute(plan, RunStore(tmp_path / "exit"), in_process=True)
    assert (summary.ran, summary.failed) == (0, 2) and summary.first_error.endswith(": fit called sys.exit(0)")
    plan = build_plan(load_spec(_write(tmp_path, "  - {name: Int, estimator: hostile_user.Interrupts}")))
    with pytest.raises(KeyboardInterrupt):
        execute(plan, RunStore(tmp_path / "int"), in_process=True)


# -- whole runs through the CLI, in worker processes ----------------------------------
def test_sys_exit_in_fit_is_a_failed_fit_and_a_run_of_only_those_exits_1(tmp_path: Path) -> None:
    """Case: ``sys.exit(0)`` in fit made `lkm run` exit 0 with no message, record or table."""
    res = _lkm_run(tmp_path, "  - {name: Exit, estimator: hostile_user.Exits}", jobs=1)
    assert res.returncode == 1, res.stderr
    lines = _error_lines(res)
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: 2 fit(s) failed (every fit of this run; recorded with status 'error')")
    assert lines[0].endswith("moons/r0f0/Exit {}: fit called sys.exit(0)")
    records = _records(tmp_path / "out")
    assert len(records) == 2 and all(r["status"] == "error" for r in records)
    assert all(r["error"].endswith(": fit called sys.exit(0)") for r in records)
    results = (tmp_path / "out" / "results.csv").read_text()
    assert results.count("fit called sys.exit(0)") == 2
    assert "Exit: failed, 2 of 2 fits" in res.stdout
    summary = (tmp_path / "out" / "tables" / "summary.md").read_text()  # the table says so too
    assert "failed (2 of 2 fits)" in summary and "fit called sys.exit(0)" in summary


def test_wrong_counts_and_a_users_keyboardinterrupt_are_failed_fits_and_the_run_goes_on(tmp_path: Path) -> None:
    """Case: too few predictions stopped the run as "internal error (a bug in lkm)"; a
    KeyboardInterrupt raised by the estimator in a worker is not the user's Ctrl-C."""
    res = _lkm_run(tmp_path, NM, "  - {name: Wrong, estimator: hostile_user.WrongCount}",
                   "  - {name: Int, estimator: hostile_user.Interrupts}")
    assert res.returncode == 1, res.stderr
    assert "internal error" not in res.stderr and len(_error_lines(res)) == 1, res.stderr
    assert _error_lines(res)[0].startswith("error: 4 fit(s) failed (recorded with status 'error')")
    by_method: dict[str, list[dict]] = {}
    for r in _records(tmp_path / "out"):
        by_method.setdefault(r["method"], []).append(r)
    assert {m: len(rs) for m, rs in by_method.items()} == {"NM": 2, "Wrong": 2, "Int": 2}
    assert all(r["status"] == "ok" for r in by_method["NM"])
    assert {r["error"].split(": ", 1)[1] for r in by_method["Wrong"]} == {
        "ValueError: predict returned 99 predictions for 100 test rows (expected 100 predictions)"}
    assert {r["error"].split(": ", 1)[1] for r in by_method["Int"]} == {"fit raised KeyboardInterrupt"}


def test_a_worker_killed_once_is_rerun_in_a_fresh_worker_and_every_fit_recorded_once(tmp_path: Path) -> None:
    marker = tmp_path / "died"
    res = _lkm_run(tmp_path, NM, f"  - {{name: Once, estimator: hostile_user.KillsOnce, params: {{marker: '{marker}'}}}}")
    assert res.returncode == 0, res.stderr
    assert marker.read_text() == "died once"
    records = _records(tmp_path / "out")
    ids = [r["task_id"] for r in records]
    assert len(ids) == 4 == len(set(ids)) and all(r["status"] == "ok" for r in records)


@pytest.mark.slow  # small version: test_run_calls_reruns_a_dead_workers_call_once_then_reports_it_and_the_pool_keeps_working
def test_a_worker_killed_twice_is_a_failed_fit_and_the_other_fits_run(tmp_path: Path) -> None:
    """Case: ``os._exit`` in fit stopped the whole local run with "internal error (a bug in
    lkm)" and recorded nothing."""
    res = _lkm_run(tmp_path, NM, "  - {name: Kill, estimator: hostile_user.KillsWorker}",
                   "  - {name: Exit, estimator: hostile_user.Exits}")
    assert res.returncode == 1, res.stderr
    assert "internal error" not in res.stderr and len(_error_lines(res)) == 1, res.stderr
    records = _records(tmp_path / "out")
    ids = [r["task_id"] for r in records]
    assert len(ids) == 6 == len(set(ids))
    kill = [r for r in records if r["method"] == "Kill"]
    assert len(kill) == 2 and all(r["status"] == "error" for r in kill)
    assert {r["error"].split(": ", 1)[1] for r in kill} == {"the worker process died (exit code 3) twice"}
    assert {r["split"] for r in kill} == {"r0f0", "r0f1"}
    assert all(r["status"] == "ok" for r in records if r["method"] == "NM")
    assert all(r["status"] == "error" for r in records if r["method"] == "Exit")
