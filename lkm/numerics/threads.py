"""BLAS threads inside a block: the one thread cap the numerics and the worker
processes share (threadpoolctl)."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def _blas_pools() -> Any:
    """threadpoolctl's controller of the BLAS libraries numpy and scipy load, found once."""
    import numpy  # noqa: F401  (threadpoolctl lists only libraries already loaded)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def blas_threads(limit: int | None) -> contextlib.AbstractContextManager[Any]:
    """At most ``limit`` BLAS threads inside the block (``None``: unchanged), restored after.

    The libraries are looked up once per process: threadpoolctl's ``threadpool_limits``
    rescans the process's loaded libraries on every call (milliseconds), which made a
    39-sigma PL sweep, with ~3,000 small factorizations, 8 s slower."""
    return _blas_pools().limit(limits=limit) if limit is not None else contextlib.nullcontext()


#: Products below this many flops run on one BLAS thread (:func:`small_blas`).
SMALL_BLAS_FLOPS = 2**30


def small_blas(flops: float) -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread for a matrix product (gemm) of fewer than :data:`SMALL_BLAS_FLOPS`
    flops: it takes microseconds to milliseconds on one core, and each extra OpenBLAS
    thread adds a hand-off that costs milliseconds when the other cores are busy. The
    product's bits then do not depend on the caller's thread count either (OpenBLAS's
    two-thread gemm gives other bits than its one-thread gemm on some CPUs: measured on
    a SkylakeX VM, 2026-11-26). LAPACK's factorizations are left at the caller's count:
    their blocking changes with it, which is what the fragility reruns perturb."""
    return blas_threads(1 if flops < SMALL_BLAS_FLOPS else None)


def map_row_blocks(func: Callable[[slice], T], n_rows: int, block: int, n_jobs: int | None = None) -> list[T]:
    """``[func(rows) for rows in blocks]`` over the row blocks ``0:block, block:2·block, …``
    of ``n_rows`` rows, in order, on ``n_jobs`` threads (scikit-learn's meaning: None is 1,
    -1 every core; :func:`run_blocks`).

    The blocks do not depend on ``n_jobs``, so neither does any row's arithmetic: only
    which thread computes a block changes. With more than one thread each runs its BLAS
    on one thread (threadpoolctl), so the threads do not oversubscribe the cores; the
    numerics release the GIL inside numpy, LAPACK and the compiled kernels, which is where
    the time goes."""
    blocks = [slice(start, min(start + block, n_rows)) for start in range(0, n_rows, max(1, block))]
    workers = min(thread_count(n_jobs), len(blocks))
    if workers <= 1 or in_kept_thread():
        return [func(rows) for rows in blocks]
    with blas_threads(1):
        return run_blocks(lambda i: func(blocks[i]), len(blocks), workers)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def thread_count(n_jobs: int | None) -> int:
    """Threads for scikit-learn's ``n_jobs``: None is 1, -1 every usable core, -2 all but
    one, and so on. Not joblib's ``effective_n_jobs``: inside a dask worker that one says
    1 and warns on stderr, a rule for processes; these are threads."""
    if n_jobs is None:
        return 1
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning: a positive number of threads, or -1 for one per core")
    if n_jobs < 0:
        from joblib import cpu_count

        return max(1, int(cpu_count()) + 1 + n_jobs)
    return int(n_jobs)


#: Threads the process's kept pool may hold (started only as calls need them).
MAX_KEPT_THREADS = 64

_kept = threading.local()
_kept_pool: ThreadPoolExecutor | None = None
_kept_lock = threading.Lock()


def in_kept_thread() -> bool:
    """Whether this thread is one of the kept pool's: a call from inside a block runs its
    own blocks where it is (threads waiting for the pool's threads could wait for ever)."""
    return getattr(_kept, "active", False)


def _mark_kept_thread() -> None:
    _kept.active = True


def _forget_kept_pool() -> None:
    """In a forked child: the parent's pool has no threads here (and the lock may have
    been held by another thread at the fork)."""
    global _kept_pool, _kept_lock
    _kept_pool, _kept_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_kept_pool)


def run_blocks(func: Callable[[int], T], count: int, workers: int) -> list[T]:
    """``[func(i) for i in range(count)]`` with at most ``workers`` calls at a time, on the
    threads the process keeps (one pool, started once: joblib's ``Parallel`` started its
    threads on every call, about 10 ms, 17 % of HKNN's prediction on USPS with two
    threads). Each thread takes the next index in turn, so the calls start in index order
    (put the largest first to finish together). The first exception is raised once the
    running calls end; no call starts after it, nor after an interrupt of the caller.
    From inside a block (:func:`in_kept_thread`) the calls run in order, in that thread."""
    global _kept_pool
    if workers <= 1 or count <= 1 or in_kept_thread():
        return [func(i) for i in range(count)]
    results: list[Any] = [None] * count
    todo = iter(range(count))
    lock = threading.Lock()
    failed: list[BaseException] = []
    stop = threading.Event()

    def loop() -> None:
        while True:
            with lock:
                i = None if failed or stop.is_set() else next(todo, None)
            if i is None:
                return
            try:
                results[i] = func(i)
            except BaseException as exc:  # handed to the caller below
                with lock:
                    failed.append(exc)
                return

    with _kept_lock:
        if _kept_pool is None:
            _kept_pool = ThreadPoolExecutor(MAX_KEPT_THREADS, thread_name_prefix="lkm-blocks",
                                            initializer=_mark_kept_thread)
        futures = [_kept_pool.submit(loop) for _ in range(min(workers, count))]
    try:
        for future in futures:
            future.result()
    finally:
        stop.set()
    if failed:
        raise failed[0]
    return results
