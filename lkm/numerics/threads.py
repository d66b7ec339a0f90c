"""BLAS threads inside a block: the one thread cap the numerics and the worker
processes share (threadpoolctl)."""

from __future__ import annotations

import contextlib
import functools
from typing import Any


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
