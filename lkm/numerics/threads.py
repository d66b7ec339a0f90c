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
    -1 every core; :func:`_row_pool`).

    The blocks do not depend on ``n_jobs``, so neither does any row's arithmetic: only
    which thread computes a block changes. With more than one thread each runs its BLAS
    on one thread (threadpoolctl), so the threads do not oversubscribe the cores; the
    numerics release the GIL inside numpy, LAPACK and the compiled kernels, which is where
    the time goes. Called from inside a block (nested), it runs its blocks in that thread."""
    from joblib import effective_n_jobs

    blocks = [slice(start, min(start + block, n_rows)) for start in range(0, n_rows, max(1, block))]
    workers = min(effective_n_jobs(n_jobs), len(blocks))
    if workers <= 1 or getattr(_in_row_pool, "active", False):
        return [func(rows) for rows in blocks]
    with blas_threads(1):
        return list(_row_pool(workers).map(func, blocks))


_in_row_pool = threading.local()
_row_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_row_pools_lock = threading.Lock()


def _mark_row_pool_thread() -> None:
    _in_row_pool.active = True


def _forget_row_pools() -> None:
    """In a forked child: the parent's pools have no threads here (and the lock may have
    been held by another thread at the fork)."""
    global _row_pools_lock
    _row_pools_lock = threading.Lock()
    _row_pools.clear()


os.register_at_fork(after_in_child=_forget_row_pools)


def _row_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads kept for the process: joblib's ``Parallel`` started
    its threads on every call, about 10 ms a call, 17 % of HKNN's prediction on USPS with
    two threads (0.206 → 0.171 s). Keyed by process id too: a forked child, which
    inherits the pool but not its threads, makes its own."""
    key = (os.getpid(), workers)
    with _row_pools_lock:
        pool = _row_pools.get(key)
        if pool is None:
            pool = _row_pools[key] = ThreadPoolExecutor(workers, thread_name_prefix="lkm-rows",
                                                        initializer=_mark_row_pool_thread)
        return pool
