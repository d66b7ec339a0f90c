"""`--cluster` (lkm.engine.cluster): the fits on a dask.distributed cluster, the run folder as a
local run's, written by the driver alone.

Tests that start a cluster use ``local:N`` (worker processes of this machine) or a real
``dask scheduler`` and ``dask worker`` processes on 127.0.0.1. Subprocesses start in a
session of their own, every wait for an event has a generous ceiling
(:data:`processes.CEILING`), and everything started is killed in a ``finally``. Processes are found through /proc (Linux); zombies count as gone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from processes import CEILING, live_processes, patience, wait_until
from typer.testing import CliRunner

import lkm
import lkm.engine.cluster
from lkm.cli import app
from lkm.engine.cluster import EXTRA_HINT, ClusterAddress, connect
from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore
from lkm.errors import LkmError
from lkm.spec import spec_from_dict

needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                                reason="dask.distributed (lkm[dask]) is not installed")
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

runner = CliRunner()

#: 90 fits of built-in data: 2 datasets x 5 folds x 3 methods x 3 sigmas.
SMALL = {
    "name": "cluster-small",
    "datasets": ["moons", "sklearn-iris"],
    "protocol": {"kind": "kfold", "folds": 5, "seed": 1},
    "methods": [
        {"name": "PL", "estimator": "pl"},
        {"name": "LPL", "estimator": "lpl", "params": {"k": "auto"}},
        {"name": "SVM", "estimator": "svm"},
    ],
    "sweep": {"sigma": [0.5, 1.0, 2.0]},
}

#: 6 fits: enough for a run folder with tables and provenance.
TINY_SPEC = textwrap.dedent("""\
    name: cluster-tiny
    datasets: [moons]
    protocol: {kind: kfold, folds: 3, seed: 0}
    methods:
      - {name: SVM, estimator: svm}
    sweep:
      sigma: [0.5, 2.0]
""")

#: 480 fits in 60 jobs (2 datasets x 10 folds x 3 methods x 8 sigmas): a few seconds on
#: two single-threaded workers, recording from the first seconds on.
BIG_SPEC = textwrap.dedent("""\
    name: cluster-big
    datasets: [sonar, ionosphere]
    preprocessing: standardize
    protocol: {kind: kfold, folds: 10, seed: 0}
    methods:
      - {name: PL, estimator: pl}
      - {name: LPL, estimator: lpl, params: {k: auto}}
      - {name: SVM, estimator: svm}
    sweep:
      sigma: 0.01:100:8
""")

#: 720 fits (12 sigmas): a few seconds on local:2, ~6-10 s with --jobs 1.
MID_SPEC = BIG_SPEC.replace("cluster-big", "cluster-mid").replace("0.01:100:8", "0.1:10:12")
#: 240 fits (4 sigmas): a driver killed at its first record, then a rerun with --jobs 1.
KILL_SPEC = BIG_SPEC.replace("cluster-big", "cluster-kill").replace("0.01:100:8", "0.1:10:4")


# -- helpers -------------------------------------------------------------------------
def _record_ids(out: Path, *, allow_cut: bool = False) -> list[str]:
    """The task id of every raw record line of ``out/records/part-*.jsonl`` (duplicates
    kept, unlike :meth:`RunStore.iter_records`). With ``allow_cut``, the last line of a
    part file may be cut (its writer was killed mid-line) and is left out."""
    ids = []
    for part in sorted((out / "records").glob("part-*.jsonl")):
        lines = part.read_bytes().splitlines(True)
        for i, line in enumerate(lines):
            if not line.endswith(b"\n"):
                assert allow_cut and i == len(lines) - 1, f"{part}: line {i + 1} is cut"
                continue
            ids.append(json.loads(line)["task_id"])
    return ids


def _n_lines(out: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (out / "records").glob("part-*.jsonl")) \
        if (out / "records").is_dir() else 0


def _planned_ids(out: Path) -> set[str]:
    return set(json.loads((out / "plan.json").read_text())["task_ids"])


def _kill_all(procs: list[subprocess.Popen]) -> None:
    """SIGKILL every process of each one's session (each was started in its own), then reap."""
    for proc in procs:
        for pid in [*live_processes("session", proc.pid), proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for proc in procs:
        try:
            proc.wait(timeout=CEILING)
        except subprocess.TimeoutExpired:
            pass


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LKM_CLUSTER"}
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lkm(*args: str) -> list[str]:
    return [sys.executable, "-m", "lkm.cli", *args]


# -- the address ---------------------------------------------------------------------
@pytest.mark.parametrize(("text", "address", "workers"), [
    ("local:3", "local:3", 3),
    ("tcp://h:8786", "tcp://h:8786", None),
    ("h:8786", "tcp://h:8786", None),
])
def test_cluster_address_parse_accepts_local_n_and_scheduler_addresses(text, address, workers) -> None:
    parsed = ClusterAddress.parse(text)
    assert (parsed.text, parsed.local_workers) == (address, workers)


@pytest.mark.parametrize("text", ["local:0", "local:x", "local:", "foo", "tcp://h", "tcp://:8786"])
def test_cluster_address_parse_refuses_bad_addresses_naming_the_label(text) -> None:
    with pytest.raises(LkmError) as exc:
        ClusterAddress.parse(text, "LKM_CLUSTER")
    assert str(exc.value).startswith(f"LKM_CLUSTER {text!r}: ")
    with pytest.raises(LkmError, match=r"^--cluster "):
        ClusterAddress.parse(text)


def test_bad_lkm_cluster_in_the_environment_is_one_line_naming_it(tmp_path, monkeypatch) -> None:
    """The address comes from $LKM_CLUSTER: the error says so, before anything is read or written."""
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.yaml"
    spec.write_text(TINY_SPEC)
    res = runner.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "--no-progress"],
                        env={"LKM_CLUSTER": "local:0"}, catch_exceptions=False)
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: LKM_CLUSTER 'local:0': "), res.stderr
    assert not (tmp_path / "out").exists()


def test_connect_without_distributed_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    with pytest.raises(LkmError) as exc, connect("local:1"):
        pass
    assert EXTRA_HINT in str(exc.value) and "pip install 'lkm[dask]'" in str(exc.value)


# -- local:N in this process ---------------------------------------------------------
@needs_dask
def test_worker_with_another_lkm_version_is_refused(monkeypatch) -> None:
    """The workers are fresh processes importing the installed lkm; this process claims
    another version: connecting is refused with one line, nothing run."""
    monkeypatch.setattr(lkm, "__version__", "0.0.0-other")
    with pytest.raises(LkmError) as exc, connect("local:1"):
        pytest.fail("connected to workers with another lkm")
    msg = str(exc.value)
    assert msg.startswith("--cluster local:1: worker ") and "this is lkm 0.0.0-other" in msg, msg
    assert "install the same lkm on every worker" in msg and "\n" not in msg


@needs_dask
def test_local_cluster_run_folder_equals_local_run(tmp_path) -> None:
    """The same plan run by local worker processes and on local:2 gives the same task ids,
    accuracies and record fields; on the cluster this process alone writes the records
    (one part file, its pid), each task id once."""
    plan = build_plan(spec_from_dict(SMALL))
    stores = {}
    for name in ("local", "cluster"):
        store = stores[name] = RunStore(tmp_path / name)
        store.prepare()
        write_plan(plan, store)
    summary_a = execute(plan, stores["local"], jobs=1)
    with connect("local:2") as cluster:
        assert cluster.provenance()["workers"] == 2
        summary_b = execute(plan, stores["cluster"], cluster=cluster)
    assert (summary_a.ran, summary_a.failed) == (len(plan.tasks), 0)
    assert (summary_b.ran, summary_b.failed, summary_b.skipped) == (len(plan.tasks), 0, 0)

    parts = sorted((tmp_path / "cluster" / "records").glob("part-*.jsonl"))
    assert len(parts) == 1 and parts[0].name.endswith(f"-{os.getpid()}.jsonl"), parts
    lines = _record_ids(tmp_path / "cluster")
    assert Counter(lines) == Counter(plan.task_ids), "each task id exactly once"
    assert Counter(_record_ids(tmp_path / "local")) == Counter(plan.task_ids)

    local = {r["task_id"]: r for r in stores["local"].iter_records()}
    remote = {r["task_id"]: r for r in stores["cluster"].iter_records()}
    assert set(local) == set(remote) == plan.task_ids
    for tid, rec in local.items():
        assert rec["status"] == remote[tid]["status"] == "ok", (rec.get("error"), remote[tid].get("error"))
        assert remote[tid]["accuracy"] == rec["accuracy"], (tid, rec["method"], rec["params"])
        assert set(remote[tid]) == set(rec), set(remote[tid]) ^ set(rec)


@needs_dask
@pytest.mark.parametrize("how", ["option", "env"])
def test_run_with_cluster_records_the_cluster_in_provenance(tmp_path, monkeypatch, how) -> None:
    """`lkm run --cluster local:1` (or LKM_CLUSTER=local:1) exits 0 and provenance.json
    says which cluster ran the fits, with the dask versions."""
    import dask
    import distributed

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LKM_CLUSTER", raising=False)
    spec = tmp_path / "s.yaml"
    spec.write_text(TINY_SPEC)
    out = tmp_path / "out"
    args = ["run", str(spec), "--out", str(out), "--no-progress"]
    if how == "option":
        res = runner.invoke(app, [*args, "--cluster", "local:1"], catch_exceptions=False)
    else:
        res = runner.invoke(app, args, env={"LKM_CLUSTER": "local:1"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    prov = json.loads((out / "provenance.json").read_text())
    c = prov["cluster"]
    assert c["address"] == "local:1" and c["kind"] == "local" and c["workers"] == 1, c
    assert c["scheduler"].startswith("tcp://127.0.0.1:"), c
    assert (c["dask"], c["distributed"]) == (dask.__version__, distributed.__version__)
    assert prov["jobs"] is None and prov["tasks"]["ran"] == 6
    assert Counter(_record_ids(out)) == Counter(_planned_ids(out))


# -- subprocesses --------------------------------------------------------------------
@needs_dask
def test_unreachable_scheduler_is_one_line_exit_2_and_writes_nothing(tmp_path) -> None:
    """Nobody listens on the port: `lkm run --cluster tcp://127.0.0.1:PORT` gives up after
    CONNECT_SECONDS (1 s here) with exit 2 and one line on stderr, and creates no folder."""
    spec = tmp_path / "s.yaml"
    spec.write_text(TINY_SPEC)
    out = tmp_path / "out"
    port = _free_port()
    code = "import lkm.engine.cluster as c; c.CONNECT_SECONDS = 1.0; from lkm.cli import main; main()"
    res = subprocess.run(
        [sys.executable, "-c", code, "run", str(spec), "--out", str(out), "--no-progress",
         "--cluster", f"tcp://127.0.0.1:{port}"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=CEILING,
    )
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --cluster tcp://127.0.0.1:{port}: "), res.stderr
    assert "cannot reach the scheduler" in lines[0]
    assert not out.exists()


class LoopbackCluster:
    """A real `dask scheduler` and `dask worker --no-nanny` processes on 127.0.0.1 (each in a
    session of its own, logging into ``tmp``), a client to watch them, and `lkm run` against
    them; :meth:`close` kills everything it started."""

    def __init__(self, tmp: Path) -> None:
        from distributed import Client

        self.tmp, self.procs, self.logs, self.client = tmp, [], [], None
        self.env = _env(OMP_NUM_THREADS="1")
        sched_file = tmp / "scheduler.json"
        self.start([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                    "--no-dashboard", "--scheduler-file", str(sched_file)], "scheduler.log")

        def address() -> str | None:
            try:
                return json.loads(sched_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                return None

        assert wait_until(address, CEILING), f"no scheduler file within {CEILING} s"
        self.address = address()
        self.client = Client(self.address, timeout=CEILING, set_as_default=False)

    def start(self, args: list[str], log: str) -> subprocess.Popen:
        fh = open(self.tmp / log, "wb")  # closed in close()
        self.logs.append(fh)
        proc = subprocess.Popen(args, cwd=self.tmp, env=self.env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def add_worker(self) -> subprocess.Popen:
        """Start one single-threaded worker and wait until the scheduler has it."""
        n = len(self.client.scheduler_info(n_workers=-1)["workers"])
        proc = self.start([sys.executable, "-m", "dask", "worker", "--scheduler-file", str(self.tmp / "scheduler.json"),
                           "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
                          f"worker{len(self.procs)}.log")
        self.client.wait_for_workers(n + 1, timeout=CEILING)
        return proc

    def worker_pids(self) -> dict[str, int]:
        return self.client.run(os.getpid)  # worker address -> pid

    def lkm_run(self, spec: Path, out: Path) -> subprocess.Popen:
        """`lkm run SPEC --cluster ADDRESS`, returned once it has recorded a first fit (and still runs)."""
        proc = self.start(_lkm("run", str(spec), "--cluster", self.address, "--out", str(out), "--no-progress"),
                          "lkm.log")
        assert wait_until(lambda: proc.poll() is not None or _n_lines(out) >= 1, CEILING), f"no record within {CEILING} s"
        assert proc.poll() is None, "the run ended before a worker could be killed"
        return proc

    def finish(self, proc: subprocess.Popen) -> tuple[int, str]:
        try:
            code = proc.wait(timeout=CEILING)
        except subprocess.TimeoutExpired:
            pytest.fail(f"lkm run did not finish within {CEILING} s of the worker's kill")
        return code, (self.tmp / "lkm.log").read_text(errors="replace")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        _kill_all(self.procs)
        for fh in self.logs:
            fh.close()


def _assert_every_task_once(out: Path, n: int) -> None:
    ids = _record_ids(out)
    planned = _planned_ids(out)
    assert len(planned) == n
    assert Counter(ids) == Counter(planned), "every planned task id exactly once"


@pytest.fixture
def loopback(tmp_path) -> Iterator[tuple[LoopbackCluster, Path, Path]]:
    """A :class:`LoopbackCluster` (no worker yet), BIG_SPEC's file and a run folder path."""
    spec = tmp_path / "big.yaml"
    spec.write_text(BIG_SPEC)
    cluster = LoopbackCluster(tmp_path)
    try:
        yield cluster, spec, tmp_path / "run"
    finally:
        cluster.close()


@needs_dask
@linux_only
@pytest.mark.slow
def test_killed_worker_tasks_run_elsewhere_and_every_record_once(loopback) -> None:
    """A real scheduler and two workers; one worker is killed (kill -9) while `lkm run
    --cluster` is fitting: its jobs run on the other worker, the run ends with exit 0 and
    the records hold every planned task exactly once."""
    cluster, spec, out = loopback
    workers = {p.pid: p for p in (cluster.add_worker(), cluster.add_worker())}
    pids = cluster.worker_pids()
    assert set(pids.values()) == set(workers), (pids, list(workers))
    run = cluster.lkm_run(spec, out)
    busy = [a for a, tasks in cluster.client.processing().items() if tasks]
    victim = workers[pids[(busy or sorted(pids))[0]]]  # one with a job in flight, if any
    victim.kill()
    victim.wait(timeout=CEILING)
    code, log = cluster.finish(run)
    assert code == 0, log[-2000:]
    _assert_every_task_once(out, 480)


@needs_dask
@linux_only
@pytest.mark.slow
def test_a_dataset_lost_with_its_only_worker_is_sent_again(loopback) -> None:
    """The run starts on one worker (which alone holds the scattered datasets); a second
    worker joins and the first is killed: the cluster has lost the data, and the driver
    sends it again, so the jobs run on the newcomer and every task is recorded once."""
    cluster, spec, out = loopback
    first = cluster.add_worker()
    run = cluster.lkm_run(spec, out)
    cluster.add_worker()
    first.kill()
    first.wait(timeout=CEILING)
    code, log = cluster.finish(run)
    assert code == 0, log[-2000:]
    _assert_every_task_once(out, 480)


@needs_dask
@linux_only
@pytest.mark.slow
def test_killed_driver_rerun_completes_only_missing_tasks(tmp_path) -> None:
    """kill -9 of `lkm run --cluster local:2` once it has recorded a fit: its local:2
    workers go with it; the same command without --cluster (--jobs 1) counts the
    recorded fits and fits only the rest, so every planned task is recorded once."""
    spec = tmp_path / "kill.yaml"
    spec.write_text(KILL_SPEC)
    out = tmp_path / "run"
    env = _env()
    procs: list[subprocess.Popen] = []
    try:
        driver = subprocess.Popen(
            _lkm("run", str(spec), "--out", str(out), "--no-progress", "--cluster", "local:2"),
            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        procs.append(driver)
        assert wait_until(lambda: driver.poll() is not None or _n_lines(out) >= 1, CEILING), f"no record within {CEILING} s"
        assert driver.poll() is None, f"the run ended (exit {driver.returncode}) before it could be killed"
        assert len(live_processes("session", driver.pid)) >= 3, "expected the driver and its local:2 workers"
        slack = patience()
        driver.kill()
        driver.wait(timeout=CEILING)
        assert wait_until(lambda: not live_processes("session", driver.pid), 10 * slack), \
            f"left behind: {live_processes('session', driver.pid)}"
        before = set(_record_ids(out, allow_cut=True))
        planned = _planned_ids(out)
        assert 0 < len(before) < len(planned)
        assert before == RunStore(out).completed_ids()

        rerun = subprocess.Popen(
            _lkm("run", str(spec), "--out", str(out), "--no-progress", "--jobs", "1"),
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        procs.append(rerun)
        try:
            stdout, stderr = rerun.communicate(timeout=CEILING)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the rerun did not finish within {CEILING} s")
        assert rerun.returncode == 0, stderr
        assert f"{len(planned)} fits ({len(before)} already recorded)" in stdout, stdout
        assert f"{len(planned) - len(before)} fits in " in stdout, stdout
        ids = _record_ids(out, allow_cut=True)
        assert Counter(ids) == Counter(planned), "every planned task id exactly once"
    finally:
        _kill_all(procs)


def test_closing_a_cluster_logs_nothing_even_at_critical(capfd) -> None:
    """After Ctrl-C a local cluster's in-process scheduler may log, at CRITICAL and with a
    traceback, each send to the client just closed (seen once in CI under the one-line
    message): closing keeps every distributed logger silent, and restores them after."""
    import logging

    from lkm.engine.cluster import Cluster

    scheduler_log = logging.getLogger("distributed.scheduler")
    handler = logging.StreamHandler()
    scheduler_log.addHandler(handler)

    class Noisy:
        def close(self) -> None:
            scheduler_log.critical("Closed comm <BatchedSend: closed> while trying to write")
            logging.getLogger("distributed").critical("and its parent")

    try:
        Cluster(Noisy(), ClusterAddress("local:2", 2), local=Noisy()).close()
        assert capfd.readouterr().err == ""
        assert not scheduler_log.disabled and not logging.getLogger("distributed").disabled
    finally:
        scheduler_log.removeHandler(handler)


@needs_dask
@linux_only
def test_ctrl_c_on_a_local_cluster_run_stops_it_in_one_line_and_leaves_no_process(tmp_path) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it: the workers
    ignore it, the driver cancels the jobs, closes the cluster and says so in one line
    (exit 130); no traceback from any worker, no process left, the records valid."""
    spec = tmp_path / "mid.yaml"
    spec.write_text(MID_SPEC)
    out = tmp_path / "run"
    driver = subprocess.Popen(
        _lkm("run", str(spec), "--out", str(out), "--no-progress", "--cluster", "local:2"),
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert wait_until(lambda: driver.poll() is not None or _n_lines(out) >= 1, CEILING), f"no record within {CEILING} s"
        assert driver.poll() is None, "the run ended before it could be interrupted"
        slack = patience()
        os.killpg(driver.pid, signal.SIGINT)
        try:
            stdout, stderr = driver.communicate(timeout=30 * slack)
        except subprocess.TimeoutExpired:
            pytest.fail(f"not stopped within {30 * slack:.0f} s of Ctrl-C (load x{slack:.1f})")
        assert driver.returncode == 130, stderr
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: interrupted (SIGINT)"), stderr
        assert wait_until(lambda: not live_processes("session", driver.pid), 10 * slack), \
            f"left behind: {live_processes('session', driver.pid)}"
        ids = _record_ids(out)
        assert ids and len(ids) == len(set(ids)) and set(ids) <= _planned_ids(out)
    finally:
        _kill_all([driver])


@needs_dask
@pytest.mark.slow
def test_cluster_bench_reports_speedup_overhead_and_checks_the_records_agree(tmp_path) -> None:
    """`lkm bench --cluster local:1` on a small sweep: the four engines ran the same
    fits, the speed-up and the per-fit overhead are reported, and `--out` has them."""
    from lkm.bench.cluster import format_cluster_bench, run_cluster_bench

    result = run_cluster_bench("local:1", spec={**SMALL, "name": "bench-small"})
    assert [r["engine"] for r in result["runs"]] == [
        "local, --jobs 1", "cluster, 1 worker", "cluster (local:1)", "local, --jobs 1"]
    assert result["fits"] == 90 and result["jobs"] == 30 and result["same_records"]
    assert result["speedup"] > 0 and result["overhead_per_fit_seconds"] is not None
    text = format_cluster_bench(result)
    assert "speed-up, --jobs 1 / cluster" in text and "ms per fit" in text
