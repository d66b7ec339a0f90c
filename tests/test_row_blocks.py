"""The threads behind ``n_jobs`` (:func:`lkm.numerics.threads.map_row_blocks`,
:func:`lkm.numerics.threads.run_blocks`): one pool kept for the process, so it must still
be right where a kept pool could go wrong: results in block order, no more blocks at a
time than asked, no new threads per call, an error in a block raised to the caller, a
call from inside a block (nested), and a child made by ``fork`` after the parent used the
pool (the child inherits the pool's bookkeeping but none of its threads)."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from lkm.numerics.threads import map_row_blocks, run_blocks


def test_results_come_in_block_order_on_two_threads() -> None:
    threads: set[str] = set()

    def block(rows: slice) -> tuple[int, int]:
        threads.add(threading.current_thread().name)
        return rows.start, rows.stop

    assert map_row_blocks(block, 95, 10, 2) == [(a, min(a + 10, 95)) for a in range(0, 95, 10)]
    assert threading.current_thread().name not in threads  # the blocks ran on the pool's threads


def test_at_most_the_asked_threads_run_at_once_and_calls_reuse_them() -> None:
    running, peak = [0], [0]
    lock = threading.Lock()

    def block(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)  # long enough for the blocks to overlap
        with lock:
            running[0] -= 1
        return i

    def kept_threads() -> int:
        return sum(t.name.startswith("lkm-blocks") for t in threading.enumerate())

    for round_ in range(4):
        for workers in (2, 3):
            peak[0] = 0
            assert run_blocks(block, 12, workers) == list(range(12))
            assert peak[0] <= workers
        if round_ == 0:
            after_first = kept_threads()
    assert kept_threads() == after_first  # later calls ran on the threads the first ones started


def test_an_error_in_a_block_reaches_the_caller() -> None:
    def block(rows: slice) -> int:
        if rows.start == 30:
            raise ValueError("block 30 failed")
        return rows.start

    with pytest.raises(ValueError, match="block 30 failed"):
        map_row_blocks(block, 60, 10, 2)
    assert map_row_blocks(lambda rows: rows.start, 60, 10, 2) == [0, 10, 20, 30, 40, 50]  # the pool still works


def test_a_call_from_inside_a_block_runs_in_that_thread() -> None:
    """Two threads each waiting for blocks of an inner call on the same two threads would
    wait for ever; the inner call runs its blocks where it is."""

    def inner(rows: slice) -> str:
        return threading.current_thread().name

    def outer(rows: slice) -> bool:
        me = threading.current_thread().name
        return set(map_row_blocks(inner, 40, 10, 2)) == {me}

    assert all(map_row_blocks(outer, 40, 10, 2))


def _child(queue) -> None:
    queue.put(map_row_blocks(lambda rows: rows.start, 40, 10, 2))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_a_forked_child_runs_blocks_after_the_parent_used_the_pool() -> None:
    assert map_row_blocks(lambda rows: rows.start, 40, 10, 2) == [0, 10, 20, 30]
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=600) == [0, 10, 20, 30]  # a ceiling for a loaded machine; instant when right
    finally:
        child.join(timeout=600)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
