"""The on-disk store of costly distance matrices (lkm.numerics.kernels.persisted_sq_dists)."""

import numpy as np
import pytest

from lkm.numerics import kernels
from lkm.numerics.kernels import DistanceCache, persisted_sq_dists, register_distance, sq_dists


@pytest.fixture
def counted_metric(monkeypatch, tmp_path):
    """A persisted copy of the Euclidean distance that counts its calls."""
    calls = []

    def fn(A, B=None):
        calls.append(1)
        return kernels.squared_euclidean(A, B)

    monkeypatch.setenv("LKM_DISTANCE_CACHE", str(tmp_path / "store"))
    monkeypatch.setitem(kernels.DISTANCES, "counted", fn)
    monkeypatch.setattr(kernels, "PERSISTED_DISTANCES", {"counted"})
    return calls


def test_a_stored_matrix_is_read_back_for_the_same_rows_not_recomputed(counted_metric, tmp_path):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(400, 5)), rng.normal(size=(300, 5))
    first = persisted_sq_dists("counted", A, B)
    again = sq_dists(A.copy(), B.copy(), metric="counted")  # same contents, other objects
    via_cache = DistanceCache().sq_dists(A, B, "counted")
    assert len(counted_metric) == 1
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, via_cache)
    assert again is not first and again.flags.writeable  # a fresh array the caller may overwrite
    assert len(list((tmp_path / "store").glob("counted-*.npy"))) == 1


def test_other_rows_small_matrices_and_a_disabled_store_are_computed(counted_metric, monkeypatch, tmp_path):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(400, 5))
    persisted_sq_dists("counted", A, None)
    B = A.copy()
    B[0, 0] += 1e-12  # one changed bit is another matrix
    persisted_sq_dists("counted", B, None)
    persisted_sq_dists("counted", A[:10], None)  # below PERSIST_MIN_ENTRIES: never stored
    persisted_sq_dists("counted", A[:10], None)
    assert len(counted_metric) == 4
    monkeypatch.setenv("LKM_DISTANCE_CACHE", "off")
    persisted_sq_dists("counted", A, None)
    assert len(counted_metric) == 5
    assert len(list((tmp_path / "store").glob("*.npy"))) == 2


def test_a_corrupt_stored_file_is_recomputed_and_replaced(counted_metric, tmp_path):
    A = np.random.default_rng(2).normal(size=(400, 3))
    D = persisted_sq_dists("counted", A, None)
    (path,) = (tmp_path / "store").glob("*.npy")
    path.write_bytes(b"not a numpy file")
    np.testing.assert_array_equal(persisted_sq_dists("counted", A, None), D)
    np.testing.assert_array_equal(np.load(path), D)
    assert len(counted_metric) == 2


def test_only_registered_costly_metrics_persist():
    assert "tangent" in kernels.PERSISTED_DISTANCES and "euclidean" not in kernels.PERSISTED_DISTANCES
    register_distance("throwaway", kernels.squared_euclidean, persist=True)
    try:
        assert "throwaway" in kernels.PERSISTED_DISTANCES
    finally:
        kernels.DISTANCES.pop("throwaway")
        kernels.PERSISTED_DISTANCES.discard("throwaway")


def _ask_for_the_matrix(barrier, store: str, log: str, out: str) -> None:
    """A worker process: wait until both are ready, then ask for the same matrix."""
    import os
    import time

    os.environ["LKM_DISTANCE_CACHE"] = store

    def slow(A, B=None):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # a costly matrix: long enough for the other process to ask meanwhile
        return kernels.squared_euclidean(A, B)

    kernels.DISTANCES["slow"] = slow
    kernels.PERSISTED_DISTANCES.add("slow")
    A = np.random.default_rng(3).normal(size=(400, 4))
    barrier.wait()
    np.save(out, persisted_sq_dists("slow", A, None))


def test_two_processes_asking_for_the_same_matrix_compute_it_once(tmp_path):
    """Issue 41: two workers built the same 2,007 × 7,291 tangent-distance matrix at the
    same time. With one producer per matrix (a lock beside its file) the second waits
    and reads the first one's file."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    log = tmp_path / "computed.log"
    procs = [ctx.Process(target=_ask_for_the_matrix, args=(barrier, str(tmp_path / "store"), str(log),
                                                            str(tmp_path / f"out{i}.npy"))) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)  # a generous ceiling: the event waited for is the workers' exit
        assert p.exitcode == 0
    assert len(log.read_text().split()) == 1
    np.testing.assert_array_equal(np.load(tmp_path / "out0.npy"), np.load(tmp_path / "out1.npy"))
