"""The fused Gaussian / heat kernel builder (issue 41, point 5): one output buffer, each
block exponentiated while warm, against the two-pass route (distances, then exp)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lkm.numerics import kernels as K

_U = np.finfo(np.float64).eps / 2


def _two_pass(A, B, scale, flush, factor=None):
    """distances on one BLAS thread, then the exponent, then exp (gaussian_from_sq's steps)."""
    with threadpool_limits(1):
        D = K.squared_euclidean(A, B)
    out = K._exp_in_place(K.times_scale(D, scale, negate=True), flush)
    return out if factor is None else out * factor


def _bound(A, B, scale, K_ref):
    """gemm's round-off moves d² by at most (2p + 8)·u·(|a|² + |b|²), K by scale·K times that."""
    B = A if B is None else B
    p = A.shape[1]
    norms = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :]
    return K_ref * (scale * (2 * p + 8) * _U * norms + 4 * _U) + 1e-300


def _data(m, n, p, offset=0.0, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, p)) * rng.uniform(0.5, 3.0, p) + offset
    B = rng.standard_normal((n, p)) * rng.uniform(0.5, 3.0, p) + offset
    return A, B


@pytest.mark.parametrize("m, n, p", [(1, 1, 3), (7, 5, 3), (300, 300, 57), (513, 700, 256), (1000, 257, 9)])
@pytest.mark.parametrize("same", [True, False])
@pytest.mark.parametrize("scale", [0.5, 0.02, 3.0])
def test_the_fused_gram_equals_the_two_pass_route(m, n, p, same, scale):
    A, B = _data(m, n, p)
    B = None if same else B
    ref = _two_pass(A, B, scale, flush=True)
    got = K.exp_distance_gram(A, B, scale, flush=True)
    assert np.all(np.abs(got - ref) <= _bound(A, B, scale, ref))
    ref_h = _two_pass(A, B, scale, flush=False, factor=0.3)
    got_h = K.exp_distance_gram(A, B, scale, flush=False, factor=0.3)
    assert np.all(np.abs(got_h - ref_h) <= _bound(A, B, scale, ref_h))


def test_the_fused_gram_is_bit_identical_to_the_two_pass_route_in_aligned_shapes():
    # rows a multiple of the block, one block of columns: the same gemm bits (this VM and
    # OpenBLAS's unrolling); a check that no elementwise step differs
    A, _ = _data(512, 512, 57, seed=3)
    for sigma in (0.3, 2.0, 50.0):
        with threadpool_limits(1):
            ref = K.gaussian_from_sq(K.squared_euclidean(A[:256]), sigma)
        got = K.exp_distance_gram(A[:256], None, K.exponent_scale(2.0 * sigma, sigma), flush=True)
        assert np.array_equal(got, ref)


@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_the_fused_gram_keeps_symmetry_unit_diagonal_and_range(offset):
    A, _ = _data(700, 1, 20, offset=offset, seed=1)
    G = K.gaussian_kernel(A, sigma=1.5)
    assert np.array_equal(G, G.T)
    assert np.all(np.diag(G) == 1.0)
    assert np.all((G >= 0.0) & (G <= 1.0))
    H = K.heat_kernel(A, t=0.7)
    c = K.heat_constant(A.shape[1], 0.7)
    assert np.array_equal(H, H.T) and np.all(np.diag(H) == c)


def test_the_fused_gaussian_flushes_below_exp_minus_708_and_the_heat_kernel_does_not():
    # distances² 0, 1410 and 1425 at 2σ² = 2: exponents 0, -705 (kept), -712.5 (flushed)
    A = np.array([[0.0], [np.sqrt(1410.0)], [np.sqrt(1425.0)]])
    G = K.gaussian_kernel(A, A[:1], sigma=1.0)[:, 0]
    assert G[0] == 1.0 and G[1] == pytest.approx(np.exp(-705.0), rel=1e-12) and G[2] == 0.0
    H = K.heat_kernel(A, A[:1], t=0.5, normalized=False)[:, 0]
    assert 0.0 < H[2] == pytest.approx(np.exp(-712.5), rel=1e-10)  # a subnormal, as heat_from_sq gives
    G_all = K.gaussian_kernel(np.vstack([A, A + 1.0]), sigma=1.0)
    assert not np.any((G_all > 0.0) & (G_all < np.exp(K.EXP_FLUSH_BELOW)))


def test_a_tiny_sigma_gives_the_identity_without_nans():
    A, _ = _data(50, 1, 4, seed=2)
    G = K.gaussian_kernel(A, sigma=1e-170)  # 2σ² is not a normal float: divisors
    assert np.array_equal(G, np.eye(50))


def test_the_fused_gram_does_not_depend_on_the_thread_count():
    A, B = _data(900, 600, 57, seed=4)
    out = []
    for threads in (1, 2):
        with threadpool_limits(threads):
            out.append((K.gaussian_kernel(A, sigma=2.0), K.gaussian_kernel(A, B, sigma=2.0),
                        K.heat_gram(A, B, 1.5, normalized=False)))
    for one, two in zip(*out, strict=True):
        assert np.array_equal(one, two)


def test_a_cache_keeps_its_distances_and_the_gram_comes_from_them():
    A, B = _data(300, 200, 10, seed=5)
    cache = K.DistanceCache()
    D = cache.sq_dists(A, B).copy()
    G = K.gaussian_gram(A, B, 2.0, cache)
    assert np.array_equal(cache.sq_dists(A, B), D)  # not overwritten
    assert np.array_equal(G, K.gaussian_from_sq(D, 2.0))
    H = K.heat_gram(A, B, 0.8, cache, normalized=True)
    assert np.array_equal(H, K.heat_from_sq(D, 0.8) * K.heat_constant(10, 0.8))
    assert np.array_equal(cache.sq_dists(A, B), D)


def test_the_heat_gram_without_a_cache_is_the_fused_one():
    A, B = _data(400, 300, 30, seed=6)
    with threadpool_limits(1):
        ref = K.heat_from_sq(K.squared_euclidean(A, B), 2.0) * K.heat_constant(30, 2.0)
    got = K.heat_gram(A, B, 2.0)
    assert np.all(np.abs(got - ref) <= _bound(A, B, 0.125, ref))


def test_clip_negative_equals_the_float_maximum_bit_for_bit():
    x = np.array([-3.0, -0.0, 0.0, 5e-324, -5e-324, 1.0, -np.inf, np.inf, 1e308])
    y = x.copy()
    K._clip_negative(y)
    assert np.array_equal(y.view(np.int64), np.maximum(x, 0.0).view(np.int64))
