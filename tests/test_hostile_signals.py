"""Hostile cases, part "signals" (issue 9, item 5): Ctrl-C, SIGTERM and kill -9 during a
run, LIBSVM's print hook, worker threads and the parent watchdog.

Subprocess tests start `lkm run` in a new session (its own process group), wait for
events (a record, an exit) with a generous ceiling (:data:`processes.CEILING`), assert
response times scaled by the machine's load (:func:`processes.patience`) and kill the
whole group in a ``finally``. Processes are found through
/proc (Linux); zombies count as gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from processes import CEILING, kill_group, live_processes, patience, wait_until

from lkm.engine import workers
from lkm.engine.store import RunStore
from lkm.files import pid_alive

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

#: Slow enough to be interrupted mid-run (800 fits), starting to record within a few seconds.
SLOW_SPEC = textwrap.dedent("""\
    name: slow
    datasets: [sklearn-breast-cancer]
    preprocessing: standardize
    protocol: {kind: kfold, folds: 10, seed: 0}
    methods:
      - {name: SVM, estimator: svm}
      - {name: PL, estimator: pl}
    sweep:
      sigma: 0.1:10:40
""")


def _default_sigint() -> None:
    """A child with Ctrl-C's default disposition: a shell starts background jobs with
    SIGINT ignored, and an ignored signal stays ignored across exec (a test run from
    `cmd &` would otherwise see children that cannot be interrupted)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _lines(out: Path) -> list[bytes]:
    return [line for p in sorted((out / "records").glob("part-*.jsonl")) for line in p.read_bytes().splitlines(True)]


def _assert_records_valid(out: Path) -> int:
    """Every finished record line is a JSON object with a task id and status; only the very
    last line of a part file may be cut (a worker killed while writing). Returns the count."""
    n = 0
    for p in sorted((out / "records").glob("part-*.jsonl")):
        lines = p.read_bytes().splitlines(True)
        for i, line in enumerate(lines):
            if not line.endswith(b"\n"):
                assert i == len(lines) - 1, f"{p}: cut line in the middle"
                continue
            rec = json.loads(line)
            assert isinstance(rec, dict) and rec["task_id"] and rec["status"] in ("ok", "error")
            n += 1
    return n


@pytest.fixture
def slow_run(tmp_path: Path) -> Iterator:
    """Start `lkm run` on :data:`SLOW_SPEC` in its own session; returns (start, out);
    everything started is killed afterwards."""
    spec = tmp_path / "slow.yaml"
    spec.write_text(SLOW_SPEC)
    out = tmp_path / "run"
    started: list[subprocess.Popen] = []

    def start(jobs: int, *extra: str) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lkm.cli", "run", str(spec), "--jobs", str(jobs), "--out", str(out),
             "--no-progress", *extra],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=_default_sigint,
        )
        started.append(proc)
        return proc

    try:
        yield start, out
    finally:
        for proc in started:
            kill_group(proc)


def _wait_for_records(proc: subprocess.Popen, out: Path, n: int = 1, timeout: float = CEILING) -> None:
    ok = wait_until(lambda: proc.poll() is not None or len(_lines(out)) >= n, timeout)
    assert ok and proc.poll() is None, f"no records within {timeout} s (exit {proc.returncode})"


@linux_only
@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_ctrl_c_stops_the_run_within_a_second_or_two_and_a_rerun_resumes(slow_run, jobs: int) -> None:
    """Signals: Ctrl-C (SIGINT to the process group, as a terminal sends it) stops `lkm run`
    at any --jobs within ~2 s: exit 130, one line; the records are valid, no worker is
    left, and a rerun counts them as recorded and fits only the rest."""
    start, out = slow_run
    proc = start(jobs)
    _wait_for_records(proc, out)
    slack = patience()
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=CEILING)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert elapsed < 2.5 * slack, f"took {elapsed:.1f} s to stop (load x{slack:.1f})"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted (SIGINT)" in lines[0] and str(out) in lines[0], err
    assert wait_until(lambda: not live_processes("pgrp", proc.pid), 3 * slack), \
        f"left behind: {live_processes('pgrp', proc.pid)}"
    n = _assert_records_valid(out)
    recorded = RunStore(out).completed_ids()
    assert 0 < len(recorded) <= n
    # The rerun resumes: its header counts what is recorded, and it goes on fitting.
    again = start(jobs)
    header = again.stdout.readline()
    assert f"({len(recorded)} already recorded)" in header, header
    _wait_for_records(again, out, len(_lines(out)) + 1)
    again.send_signal(signal.SIGTERM)
    again.communicate(timeout=CEILING)
    assert again.returncode == 143


@linux_only
@pytest.mark.parametrize("jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_sigterm_is_handled_like_ctrl_c_and_leaves_no_process(slow_run, jobs: int) -> None:
    """Signals: SIGTERM to `lkm run` ends it like Ctrl-C: within ~2 s, exit 143, one line
    naming SIGTERM and the records folder; its worker processes are gone."""
    start, out = slow_run
    proc = start(jobs)
    _wait_for_records(proc, out)
    workers_seen = live_processes("ppid", proc.pid)
    assert workers_seen, "no worker processes"
    slack = patience()
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=CEILING)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 143, err
    assert elapsed < 2.5 * slack, f"took {elapsed:.1f} s to stop (load x{slack:.1f})"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted (SIGTERM)" in lines[0] and "records" in lines[0], err
    assert wait_until(lambda: not live_processes("pgrp", proc.pid), 3 * slack), \
        f"left behind: {live_processes('pgrp', proc.pid)}"
    _assert_records_valid(out)


@linux_only
def test_kill_9_of_the_main_process_ends_its_workers(slow_run) -> None:
    """Signals: after kill -9 of `lkm run --jobs 2`, its workers are gone within ~3 s and no
    record is written afterwards."""
    start, out = slow_run
    proc = start(2)
    _wait_for_records(proc, out)
    kids = live_processes("ppid", proc.pid)
    assert len(kids) >= 2, kids
    slack = patience()
    proc.kill()
    proc.wait(timeout=CEILING)
    t0 = time.monotonic()
    assert wait_until(lambda: not live_processes("pgrp", proc.pid), 3 * slack), \
        f"still running: {live_processes('pgrp', proc.pid)}"
    assert time.monotonic() - t0 < 3 * slack
    n = len(_lines(out))
    time.sleep(1.0)
    assert len(_lines(out)) == n, "records written after the workers should be gone"
    _assert_records_valid(out)


#: 120 fits (10 folds x 2 methods x 6 sigmas): a few seconds on 2 idle cores, long
#: enough to be killed at three points of its records.
KILL_SPEC = SLOW_SPEC.replace("name: slow", "name: killed").replace("0.1:10:40", "0.1:10:6")


@linux_only
@pytest.mark.parametrize("kill_points", [(45,), pytest.param((10, 45, 80), marks=pytest.mark.slow)],
                         ids=["once", "three-times"])
def test_resume_after_kill_9_at_several_points_loses_nothing_and_duplicates_nothing(
        tmp_path: Path, kill_points: tuple[int, ...]) -> None:
    """Signals: `lkm run --jobs 2` killed with kill -9 once this many of its 120 records
    are written, resumed by the same command, killed again at the next point (the default
    run kills once; three times is `slow`), then run to the end: every planned task is
    recorded exactly once (only a line cut by a kill is skipped), every fit recorded before
    a kill is kept, and the numbers equal an uninterrupted run's."""
    spec = tmp_path / "killed.yaml"
    spec.write_text(KILL_SPEC)
    out = tmp_path / "run"

    def command(folder: Path, jobs: int = 2) -> list[str]:
        return [sys.executable, "-m", "lkm.cli", "run", str(spec), "--jobs", str(jobs), "--out", str(folder),
                "--no-progress"]

    started: list[subprocess.Popen] = []
    try:
        recorded: set[str] = set()
        for point in kill_points:
            proc = subprocess.Popen(command(out), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    start_new_session=True)
            started.append(proc)
            _wait_for_records(proc, out, point)
            proc.kill()
            proc.wait(timeout=CEILING)
            # Its workers end too (the watchdog); the next run starts once they have.
            assert wait_until(lambda pgrp=proc.pid: not live_processes("pgrp", pgrp), CEILING)
            _assert_records_valid(out)
            now = RunStore(out).completed_ids()
            assert recorded < now, (point, len(recorded), len(now))  # kept, and more
            recorded = now
        done = subprocess.run(command(out), cwd=tmp_path, capture_output=True, text=True, timeout=CEILING)
        assert done.returncode == 0, done.stderr
        assert f"({len(recorded)} already recorded)" in done.stdout, done.stdout
        planned = set(json.loads((out / "plan.json").read_text())["task_ids"])
        ids = [json.loads(line)["task_id"] for line in _lines(out) if line.endswith(b"\n")]  # every copy
        assert len(planned) == 120 and len(ids) == len(planned) and set(ids) == planned, len(ids)
        assert recorded <= RunStore(out).completed_ids()
        fresh = tmp_path / "fresh"
        # in one process (no workers to start): a run's numbers do not depend on --jobs
        subprocess.run(command(fresh, jobs=1), cwd=tmp_path, check=True, capture_output=True, timeout=CEILING)
        a = RunStore(out).records_frame().set_index("task_id")["accuracy"].sort_index()
        b = RunStore(fresh).records_frame().set_index("task_id")["accuracy"].sort_index()
        assert a.equals(b), (a.compare(b) if a.index.equals(b.index) else "different task ids")
    finally:
        for proc in started:
            kill_group(proc)


@linux_only
def test_watchdog_ends_a_worker_whose_parent_was_killed(tmp_path: Path) -> None:
    """Signals: the watchdog alone (no loky) ends a process within ~1 s of its parent's
    kill -9; without it the child would sleep on."""
    child = (
        "import sys, time; from lkm.engine.workers import start_parent_watchdog; "
        "assert start_parent_watchdog(int(sys.argv[1])); print('ready', flush=True); time.sleep(CEILING)"
    )
    parent = (
        "import os, subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', {child!r}, str(os.getpid())]); "
        "print(p.pid, flush=True); time.sleep(CEILING)"
    ).replace("CEILING", str(CEILING))
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        kid = int(proc.stdout.readline())
        assert proc.stdout.readline().strip() == "ready"  # the child imported lkm and started its watchdog
        assert kid in live_processes("pgrp", proc.pid)
        slack = patience()
        proc.kill()
        proc.wait(timeout=CEILING)
        assert wait_until(lambda: kid not in live_processes("pgrp", proc.pid), 3 * slack), "orphan still alive"
    finally:
        kill_group(proc)


@linux_only
def test_a_zombie_is_not_alive_and_a_running_process_is() -> None:
    """Signals: `pid_alive` (the watchdog's and the stale-temporary sweep's test) calls an
    ended but unreaped process dead."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        assert pid_alive(os.getpid())
        assert wait_until(lambda: not pid_alive(proc.pid), timeout=CEILING)
        assert Path(f"/proc/{proc.pid}/stat").is_file()  # a zombie: not reaped until the wait below
    finally:
        proc.wait(timeout=CEILING)
    assert not pid_alive(proc.pid)


@linux_only
def test_a_worker_whose_parent_died_before_its_watchdog_started_ends(tmp_path: Path) -> None:
    """Signals (CI, stop 56): a pack build's worker outlived a `kill -9` of the build. The
    parent died while the forked worker was still starting; killed but not yet reaped, it
    was a zombie, which `kill(pid, 0)` counts as alive, so the worker took its new parent
    (init) for an intermediate one and watched that. A zombie parent is a dead one."""
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        parent = os.getpid()
        kid = os.fork()
        if kid == 0:
            while os.getppid() == parent:  # a worker still starting when its parent is killed
                time.sleep(0.01)
            from lkm.engine.workers import start_parent_watchdog
            start_parent_watchdog(parent)
            print("watching", flush=True)
            time.sleep({CEILING})
            os._exit(0)
        print(kid, flush=True)
        os.kill(parent, signal.SIGKILL)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        kid = int(proc.stdout.readline())
        line = proc.stdout.readline()  # "" once the worker, the pipe's last writer, has ended
        assert line == "", f"worker {kid} started watching another process while its parent was a zombie"
        assert proc.poll() is None or proc.returncode == -signal.SIGKILL  # the zombie was not reaped before
    finally:
        kill_group(proc)
        proc.wait(timeout=CEILING)


def test_watchdog_never_starts_in_the_main_process() -> None:
    """Signals: the watchdog is for workers; in the driver it does nothing."""
    assert workers.start_parent_watchdog(os.getpid()) is False
    assert workers._watchdog is None or not workers._watchdog.is_alive()


def test_threads_per_worker_share_the_cores() -> None:
    """Threads: each of `jobs` workers gets max(1, cores // jobs) OpenMP/BLAS threads."""
    assert [workers.threads_per_worker(j, cores=2) for j in (1, 2, 3)] == [2, 1, 1]
    assert workers.threads_per_worker(2, cores=8) == 4
    assert workers.effective_jobs(-1) == workers.cpu_count()
    with pytest.raises(ValueError):
        workers.effective_jobs(0)


def test_worker_env_caps_threads_and_keeps_the_users_choices(monkeypatch) -> None:
    """Threads: workers start with thread counts set and passive OpenMP waiting; variables
    the user set are passed through unchanged."""
    for var in (*workers.THREAD_VARS, "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    env = workers.worker_env(3)
    assert all(env[v] == "3" for v in workers.THREAD_VARS) and env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert env["OPENBLAS_THREAD_TIMEOUT"] == "4"  # idle BLAS threads sleep at once: --jobs 1 costs no extra CPU
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "10")
    env = workers.worker_env(3)
    assert env["OMP_NUM_THREADS"] == "7" and env["OMP_WAIT_POLICY"] == "ACTIVE" and env["OPENBLAS_NUM_THREADS"] == "3"
    assert env["OPENBLAS_THREAD_TIMEOUT"] == "10"


def test_jobs_run_under_the_thread_cap_in_workers() -> None:
    """Threads: inside a worker of a 2-worker pool on C cores, OpenMP and BLAS each have
    max(1, C // 2) threads, and the worker's environment says so before libraries load."""
    results: list = []
    workers.run_calls([(_thread_report, ())] * 2, jobs=2, on_result=results.append)
    want = workers.threads_per_worker(2)
    for info in results:
        assert info["pid"] != os.getpid()
        assert info["OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
        assert info["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS", str(want))
        assert "openmp" in info["threads"] and set(info["threads"].values()) == {want}, info


def test_a_users_lower_thread_count_holds_inside_every_job(monkeypatch) -> None:
    """Threads: with OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 set by the user, a
    one-worker pool's jobs run on one BLAS and one OpenMP thread, though the cap on C cores
    is C // 1 (the cap around a job only lowers a count; it once raised it to C). On a
    one-core machine the cap is 1 either way."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(var, "1")
    results: list = []
    # one worker runs both in turn: the first loads every library (numpy's and scipy's
    # OpenBLAS, LIBSVM's OpenMP), the second sees each under the cap around its job
    workers.run_calls([(_thread_counts, ())] * 2, jobs=1, on_result=results.append)
    counts = results[-1]
    assert {api for api, _ in counts} >= {"blas", "openmp"} and {n for _, n in counts} == {1}, counts


def _thread_counts() -> list[tuple[str, int]]:
    from threadpoolctl import threadpool_info

    import lkm.methods.svm  # noqa: F401  (loads LIBSVM's libgomp in the worker)

    return [(p["user_api"], p["num_threads"]) for p in threadpool_info()]


def _thread_report() -> dict:
    from threadpoolctl import threadpool_info

    import lkm.methods.svm  # noqa: F401  (loads LIBSVM's libgomp in the worker)

    return {"pid": os.getpid(), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "threads": {p["user_api"]: p["num_threads"] for p in threadpool_info()}}


def _breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


def _python_print_calls(train) -> int:
    """How many times LIBSVM called libsvm's Python print callback during ``train()``."""
    calls = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "print_null":
            calls.append(1)

    sys.setprofile(profile)
    try:
        train()
    finally:
        sys.setprofile(None)
    return len(calls)


@pytest.mark.parametrize("route", ["precomputed", "rbf"])
def test_libsvm_training_calls_no_python_print_callback(route: str, monkeypatch) -> None:
    """Signals: LIBSVM prints through a C no-op, so no Python runs inside svm_train (where
    ctypes would swallow Ctrl-C); libsvm's own `-q` does call back into Python."""
    import scipy.sparse
    from libsvm.svm import svm_problem
    from libsvm.svmutil import svm_train

    from lkm.methods import svm as svm_module

    X, y = _breast_cancer()
    monkeypatch.setattr(svm_module, "FORCE_ROUTE", route)
    est = svm_module.SVMClassifier(sigma=2.0)
    assert _python_print_calls(lambda: est.fit(X, y)) == 0
    assert est.info_["route"] == route
    quiet = svm_problem(np.where(y == 1, 1.0, -1.0), scipy.sparse.csr_matrix(X))
    assert _python_print_calls(lambda: svm_train(quiet, "-s 0 -t 2 -g 0.1 -q")) > 0  # the old way


def test_sigint_during_svm_training_raises_keyboardinterrupt() -> None:
    """Signals: a SIGINT that arrives while LIBSVM trains raises KeyboardInterrupt (right
    after svm_train returns) instead of being swallowed by a print callback."""
    code = textwrap.dedent("""\
        import os, signal, threading, time
        import numpy as np
        from lkm.methods.svm import SVMClassifier
        rng = np.random.default_rng(0)
        X = rng.normal(size=(1500, 5)); y = (rng.random(1500) < 0.5).astype(int)
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        t = time.perf_counter()
        try:
            while time.perf_counter() - t < 8:
                SVMClassifier(sigma=0.3, C=100.0).fit(X, y)
            print("not interrupted")
        except KeyboardInterrupt:
            print("interrupted")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=CEILING,
                         preexec_fn=_default_sigint)
    assert res.stdout.strip() == "interrupted", res.stdout + res.stderr
    assert "Exception ignored" not in res.stderr, res.stderr


def test_a_signal_inside_the_workers_loop_is_raised_at_its_next_safe_point() -> None:
    """Signals: inside run_calls' loop (:func:`workers.signals_at_safe_points`) Ctrl-C is
    noted, not raised where it lands (inside concurrent.futures' wait it left a future's
    lock held, and the pool's shutdown waited for it for ever: `lkm run --jobs 2` hung
    after Ctrl-C once in CI); the loop's next check raises it, a signal noted at the
    block's end is raised there, and the earlier handlers come back."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers can only be set in the main thread")
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with workers.signals_at_safe_points() as deliver:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler has run by now: it only noted the signal
            reached = True
            deliver()
            reached = False
    assert reached and signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):
        with workers.signals_at_safe_points():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is before
    with workers.signals_at_safe_points() as deliver:
        deliver()  # nothing noted: nothing raised
    assert signal.getsignal(signal.SIGINT) is before
