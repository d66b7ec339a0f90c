"""Distances and inner products computed in row blocks (issue 14, part 3): the same values
for any block size, never through BLAS syrk (which the installed OpenBLAS crashes in with
two threads at MNIST's 16,000 × 784), and PL's predictions computed in query blocks."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from lkm.data import load_dataset
from lkm.methods import projection
from lkm.methods.projection import ProjectionLearning
from lkm.numerics import kernels
from lkm.numerics.kernels import DistanceCache, inner_products, polynomial_kernel, squared_euclidean

BLOCKS = [1, 7, 64, 10_000, None]


def _reference(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Differences squared and summed in extended precision, then rounded once."""
    A, B = A.astype(np.longdouble), B.astype(np.longdouble)
    return ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1).astype(np.float64)


@pytest.fixture(scope="module")
def letter() -> np.ndarray:
    X = load_dataset("letter-recognition").X[:300].astype(np.float64)
    return X / X.max()


@pytest.mark.parametrize("block_rows", BLOCKS)
def test_blocked_distances_equal_the_reference_for_any_block_size(letter: np.ndarray, block_rows) -> None:
    A, B = letter[:211], letter[211:]
    scale = float(np.max(np.einsum("ij,ij->i", letter, letter)))
    for D, ref in ((squared_euclidean(A, B, block_rows=block_rows), _reference(A, B)),
                   (squared_euclidean(A, block_rows=block_rows), _reference(A, A))):
        assert np.abs(D - ref).max() <= 1e-13 * scale


@pytest.mark.parametrize("block_rows", BLOCKS)
def test_self_distances_have_an_exact_zero_diagonal_and_are_exactly_symmetric(letter, block_rows) -> None:
    D = squared_euclidean(letter, block_rows=block_rows)
    assert np.all(np.diagonal(D) == 0.0)
    assert np.array_equal(D, D.T)
    assert np.all(D >= 0.0)


def test_block_sizes_agree_with_each_other_to_round_off() -> None:
    X = np.random.default_rng(0).standard_normal((333, 50))
    one = squared_euclidean(X, block_rows=333)
    for block_rows in (1, 5, 100):
        assert np.allclose(squared_euclidean(X, block_rows=block_rows), one, rtol=0, atol=1e-12)


@pytest.mark.parametrize("block_rows", BLOCKS)
def test_inner_products_equal_the_matrix_product(block_rows) -> None:
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((97, 13)), rng.standard_normal((41, 13))
    assert np.allclose(inner_products(A, B, block_rows=block_rows), A @ B.T, rtol=0, atol=1e-12)
    S = inner_products(A, block_rows=block_rows)
    assert np.array_equal(S, S.T)
    assert np.allclose(S, A @ A.T, rtol=0, atol=1e-12)


def test_polynomial_kernel_is_the_power_of_the_shifted_inner_products() -> None:
    X = np.random.default_rng(2).standard_normal((30, 4))
    assert np.allclose(polynomial_kernel(X, degree=3, coef0=1.0), (X @ X.T + 1.0) ** 3, rtol=1e-13)


def test_empty_inputs_give_empty_matrices() -> None:
    assert squared_euclidean(np.zeros((0, 3)), np.ones((4, 3))).shape == (0, 4)
    assert squared_euclidean(np.zeros((0, 3))).shape == (0, 0)


@pytest.mark.slow
def test_the_shape_that_crashed_openblas_syrk_runs_to_the_end() -> None:
    """MNIST even/odd's n = 16,000 × 784: ``X @ X.T`` (syrk) ended in SIGSEGV (rc 139)
    with two OpenBLAS threads; the blocked gemm route must exit 0 (about 6 s on two quiet
    cores, 25 s on a loaded machine)."""
    code = (
        "import numpy as np\n"
        "from lkm.numerics.kernels import squared_euclidean\n"
        "X = np.random.default_rng(0).standard_normal((16000, 784))\n"
        "D = squared_euclidean(X)\n"
        "assert D.shape == (16000, 16000) and D[0, 0] == 0.0 and D[1, 0] == D[0, 1] > 0\n"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "LKM_MEMORY_LIMIT": ""}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_pl_predictions_do_not_depend_on_the_query_block_size(letter, monkeypatch) -> None:
    y = load_dataset("letter-recognition").y[:300]
    model = ProjectionLearning(sigma=0.3).fit(letter[:200], y[:200])
    whole_decision, whole_labels = model.decision_function(letter[200:]), model.predict(letter[200:])
    monkeypatch.setattr(projection, "QUERY_BLOCK_BYTES", 8 * model.X_unique_.shape[0] * 7)  # 7 rows
    assert np.allclose(model.decision_function(letter[200:]), whole_decision, rtol=1e-12, atol=1e-12)
    assert np.array_equal(model.predict(letter[200:]), whole_labels)
    cache = DistanceCache()
    assert np.array_equal(model.predict(letter[200:], cache=cache), whole_labels)


def test_kernels_module_never_multiplies_a_matrix_by_its_own_transpose() -> None:
    """numpy sends ``M @ M.T`` to syrk: the blocked products copy the one operand where
    the first diagonal block would otherwise share the buffer (checked on the source)."""
    import inspect

    source = inspect.getsource(kernels._blocked_products)
    assert "copy()" in source and "np.matmul" in source
