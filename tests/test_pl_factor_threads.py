"""PL's pivoted Cholesky (LAPACK dpstrf, :func:`lkm.numerics.psd_pinv.psd_pinv_solve`)
runs on the caller's BLAS threads (issue 41, point 4): every core when the process owns
them, one under a worker's cap, one above the crash order. Its outputs must not depend
on the thread count: predictions equal, decision values within 1e-6 of max |f|."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from threadpoolctl import threadpool_info, threadpool_limits

from lkm.bench.speed import spambase_fold
from lkm.methods import ProjectionLearning
from lkm.numerics import psd_pinv
from lkm.numerics.psd_pinv import SINGLE_THREAD_FACTOR_ORDER, factor_threads

#: Relative tolerance of PL's decision values across BLAS thread counts (of max |f|).
THREAD_RTOL = 1e-6


def _blas_threads_now() -> int:
    return min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


@pytest.fixture
def dpstrf_threads(monkeypatch) -> list[tuple[int, int]]:
    """(order, BLAS threads) of every dpstrf call while the test runs."""
    calls: list[tuple[int, int]] = []
    real = scipy.linalg.lapack.dpstrf

    def spy(a, *args, **kwargs):
        calls.append((a.shape[0], _blas_threads_now()))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(scipy.linalg.lapack, "dpstrf", spy)
    return calls


@pytest.fixture(scope="module")
def spambase_2030(data_dir):
    """2,160 training rows of spambase (2,030 distinct): G's order is above
    EIGH_MAX_ROWS and above the small-factorization threshold, so ``solver="auto"``
    would also take dpstrf, on the caller's threads."""
    return spambase_fold(data_dir, max_rows=2400)


@pytest.mark.parametrize("sigma", [2.0, 50.0])
def test_pl_through_dpstrf_does_not_depend_on_the_blas_thread_count(sigma, spambase_2030, dpstrf_threads) -> None:
    X_train, y_train, X_test, _ = spambase_2030
    fits = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads):
            model = ProjectionLearning(sigma=sigma, solver="cholesky").fit(X_train, y_train)
            fits[threads] = (model.info_, model.decision_function(X_test), model.predict(X_test))
    (one, f_one, pred_one), (two, f_two, pred_two) = fits[1], fits[2]
    # the route under test: one block, factored by dpstrf, rank-deficient at both sigmas
    assert one["solver"] == two["solver"] == "cholesky"
    assert one["route"] == two["route"] == "pseudo-inverse" and one["n_blocks"] == 1
    assert one["n_unique_rows"] == 2030 and factor_threads(2030) is None
    assert one["rank_G"] == two["rank_G"] < 2030
    assert [order for order, _ in dpstrf_threads] == [2030, 2030]
    assert dpstrf_threads[0][1] == 1
    if dpstrf_threads[1][1] < 2:
        pytest.skip("this BLAS runs one thread only")
    assert dpstrf_threads[1][1] == 2
    np.testing.assert_array_equal(pred_two, pred_one)
    np.testing.assert_allclose(f_two, f_one, rtol=0, atol=THREAD_RTOL * np.abs(f_one).max())


def test_factorizations_stay_on_one_thread_when_small_or_above_the_crash_order(monkeypatch, dpstrf_threads) -> None:
    assert factor_threads(1000) == 1  # below SMALL_BLAS_FLOPS: the hand-off costs more
    assert factor_threads(SINGLE_THREAD_FACTOR_ORDER) == 1
    assert factor_threads(SINGLE_THREAD_FACTOR_ORDER - 1) is None
    # above the (lowered) crash order dpstrf runs on one thread whatever the caller allows
    monkeypatch.setattr(psd_pinv, "SINGLE_THREAD_FACTOR_ORDER", 1500)
    X = np.random.default_rng(0).normal(size=(1600, 3))
    G = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    with threadpool_limits(limits=2):
        _, rank, route = psd_pinv.psd_pinv_solve(G, X[:, 0])
    assert route == "pseudo-inverse" and rank < 1600
    assert dpstrf_threads == [(1600, 1)]
