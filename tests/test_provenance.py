"""provenance.json names the BLAS and its thread counts, the CPU model and core counts,
and every run folder pins its packages in requirements.lock.txt."""

from __future__ import annotations

import gzip
import json
from importlib.metadata import version

from lkm.engine import environment
from lkm.engine.environment import frozen_requirements, prefetch_provenance
from lkm.engine.store import RunStore
from lkm.engine.workers import threads_per_worker


def test_provenance_records_blas_threads_and_cpu(tmp_path):
    store = RunStore(tmp_path)
    prov = json.loads(store.write_provenance({"jobs": 1}).read_text())
    libs = prov["blas"]["libraries"]
    assert any(lib["api"] == "blas" and lib["library"] for lib in libs)  # numpy's and scipy's BLAS
    for lib in libs:
        assert isinstance(lib["num_threads"], int) and lib["num_threads"] >= 1
    # the fits ran in one worker with the same libraries, at most lkm's cap of all the cores
    # (the count itself follows the environment: a test session gives each worker its share)
    workers = prov["blas"]["worker_threads"]
    assert set(workers) == {f"{lib['library']} ({lib['file']})" for lib in libs}
    assert all(1 <= n <= threads_per_worker(1) for n in workers.values()), workers
    cpu = prov["cpu"]
    assert isinstance(cpu["model"], str) and cpu["model"]
    assert isinstance(cpu["logical_cpus"], int) and 1 <= cpu["usable_cpus"] <= cpu["logical_cpus"]


def test_worker_threads_are_measured_inside_joblib_workers(tmp_path):
    prov = json.loads(RunStore(tmp_path).write_provenance({"jobs": 2}).read_text())
    threads = prov["blas"]["worker_threads"]
    assert threads and all(isinstance(n, int) and n >= 1 for n in threads.values())


def test_run_folder_pins_the_installed_packages(tmp_path):
    RunStore(tmp_path).write_provenance({"jobs": 1})
    lock = (tmp_path / "requirements.lock.txt").read_text().splitlines()
    pins = dict(line.split("==", 1) for line in lock if line and not line.startswith("#"))
    assert pins["numpy"] == version("numpy") and pins["scikit-learn"] == version("scikit-learn")
    assert "pip" not in pins
    # lkm itself is an editable checkout here: a comment, not a pin pip would try to fetch
    assert not any(name.lower() == "lkm" for name in pins)
    assert lock == frozen_requirements().splitlines()


def test_prefetched_requirements_are_the_pins_and_are_taken_once(monkeypatch):
    fresh = frozen_requirements()
    prefetch_provenance()
    monkeypatch.setattr(environment, "_read_requirements", lambda: "read again\n")
    assert frozen_requirements() == fresh  # the prefetched pins
    assert frozen_requirements() == "read again\n"  # then read anew


def test_gzipped_record_parts_are_read_like_plain_ones(tmp_path):
    store = RunStore(tmp_path)
    store.append([{"task_id": "a", "status": "ok"}])
    store.records_dir.mkdir(exist_ok=True)
    with gzip.open(store.records_dir / "part-snapshot.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"task_id": "b", "status": "ok"}) + "\n")
        fh.write(json.dumps({"task_id": "a", "status": "ok"}) + "\n")  # duplicate: first kept
    assert sorted(r["task_id"] for r in store.iter_records()) == ["a", "b"]
