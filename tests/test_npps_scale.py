"""NPPS's exact neighbour lists at scale: the float32 candidate stage, the upper bound on
the n-th value and the exact distances computed only where round-off could reorder
candidates must give exactly the lists (and the selections) of the tie rule itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lkm.data import load_dataset
from lkm.methods import NPPS
from lkm.methods.npps import TIE_RTOL, tie_ruled_neighbors
from lkm.numerics.preprocessing import preprocess


def _rule_lists(X: np.ndarray, rows: np.ndarray, n_neighbors: int) -> np.ndarray:
    """The tie rule on ALL patterns, no candidate stage: squared distances summed feature
    by feature, chained within a relative TIE_RTOL into one value, then by index."""
    out = []
    for q in rows:
        d = np.cumsum((X - X[q]) ** 2, axis=1)[:, -1]  # sequential: the same bits everywhere
        order = np.lexsort((np.arange(len(d)), d))
        ds = d[order]
        group = np.cumsum(np.r_[True, ds[1:] - ds[:-1] > TIE_RTOL * ds[1:]])
        out.append(order[np.lexsort((order, group))][:n_neighbors])
    return np.array(out)


@pytest.fixture(scope="module")
def mnist_digits(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """MNIST 3 and 8 from the official test images, pixels scaled to [-1, 1]."""
    d = load_dataset("mnist-test", data_dir=data_dir, classes=[3, 8])
    X = preprocess("scale", d.X, d.X[:1])[0]
    return X, np.unique(d.y, return_inverse=True)[1]


def test_lists_equal_the_rule_on_all_distances_for_mnist_digits(mnist_digits) -> None:
    X, _ = mnist_digits
    X = np.vstack([X, X[:40]])  # exact duplicates: ties at distance 0, ordered by index
    rows = np.r_[np.arange(0, X.shape[0], 61), np.arange(X.shape[0] - 40, X.shape[0])]
    np.testing.assert_array_equal(tie_ruled_neighbors(X, rows, 21), _rule_lists(X, rows, 21))


def test_lists_equal_the_rule_where_float32_cannot_order_the_candidates() -> None:
    # Distances 1e-7 apart (below float32's resolution) far from the origin, and integer
    # ties: only the exact distances of the close runs can order these.
    rng = np.random.default_rng(0)
    base = 1e3 + np.arange(300)[:, None] * 1e-7 * rng.integers(1, 3, size=(300, 3))
    X = np.vstack([base, rng.integers(0, 4, size=(300, 3)).astype(float)])
    rows = np.arange(0, 600, 7)
    np.testing.assert_array_equal(tie_ruled_neighbors(X, rows, 15), _rule_lists(X, rows, 15))


def test_lists_equal_the_rule_for_values_too_large_for_float32() -> None:
    X = np.random.default_rng(1).normal(size=(200, 4)) * 1e20
    rows = np.arange(0, 200, 9)
    np.testing.assert_array_equal(tie_ruled_neighbors(X, rows, 6), _rule_lists(X, rows, 6))


def test_naive_selection_on_mnist_digits_follows_the_rule(mnist_digits) -> None:
    """Naive NPPS (k = 10, beta = 0.5) on 600 MNIST 3/8 digits selects exactly the
    patterns the Selecting Condition picks on the rule's lists; fast NPPS selects a
    subset of them (each evaluated pattern gets naive's verdict)."""
    X, y = mnist_digits
    X, y = X[:600], y[:600]
    k = 10
    lists = _rule_lists(X, np.arange(X.shape[0]), k + 1)
    expected = []
    for i, row in enumerate(lists):
        others = [j for j in row if j != i][:k]
        own = int(np.sum(y[others] == y[i]))
        if 0 < own < k and own * 2 >= 0.5 * k:
            expected.append(i)
    naive = NPPS(k=k, method="naive").fit(X, y)
    np.testing.assert_array_equal(naive.sample_indices_, expected)
    fast = NPPS(k=k, initial_fraction=0.1, random_state=0).fit(X, y)
    assert set(fast.sample_indices_) <= set(expected) and fast.info_["n_rounds"] > 1
