"""Compile lkm's numba kernels (:mod:`lkm.numerics.local_hulls`) into their on-disk cache
once, before many processes need them (`make test` runs it beside mypy).

Each compiled-route estimator is fitted and queried once on a small random set; numba
writes the machine code next to the module (``cache=True``), and every later process loads
it instead of compiling (about 30 s of CPU per process on a cold cache: without this, the
test suite's processes and fit workers each paid it on first use).

    python scripts/compile_kernels.py
"""

from __future__ import annotations

import time

import numpy as np

from lkm.methods.subspace import HKNN, LDCV, NHKNN, NLDCV


def main() -> None:
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 16))
    y = np.repeat([0, 1, 2], 30)
    for estimator in (HKNN(), LDCV(), NHKNN(), NLDCV()):
        estimator.fit(X, y).predict(X[:10])
    print(f"numba kernels compiled or loaded from their cache in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
