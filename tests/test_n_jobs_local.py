"""``n_jobs`` of the local subspace classifiers (HKNN, LDCV, NHKNN, NLDCV; issue 40).

Their prediction is per query (each query's own neighbours, hulls and subspaces), run
over fixed blocks of query rows (:func:`lkm.numerics.threads.map_row_blocks`) whose
bounds do not depend on ``n_jobs``, each block on one BLAS thread. So every row's
arithmetic is the same at any ``n_jobs``: decision values are compared EXACTLY (bit for
bit), not within a tolerance, at n_jobs = None (the default, serial), 1, 2 and -1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits, load_iris
from sklearn.utils._param_validation import InvalidParameterError

import lkm.methods.subspace as subspace
from lkm.methods.subspace import HKNN, LDCV, NHKNN, NLDCV

JOBS = (1, 2, -1)


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """sklearn's bundled handwritten digits (1797 × 64, 10 classes), scaled to [0, 1]:
    even rows train, odd rows query (898 queries: several blocks of every route)."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[::2], y[::2], X[1::2]


def _outputs(est: Any, X: np.ndarray, y: np.ndarray, Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    est.fit(X, y)
    decision = est.decision_function(Xq)
    info = dict(est.info_)
    return decision, est.predict(Xq), info


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, Any]]:
    """Record every (n_rows, block, n_jobs) the estimators hand to map_row_blocks."""
    calls: list[tuple[int, int, Any]] = []
    real = subspace.map_row_blocks

    def spy(func: Any, n_rows: int, block: int, n_jobs: int | None = None) -> list:
        calls.append((n_rows, block, n_jobs))
        return real(func, n_rows, block, n_jobs)

    monkeypatch.setattr(subspace, "map_row_blocks", spy)
    return calls


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: HKNN(n_neighbors=10, **kw),
        lambda **kw: LDCV(n_neighbors=2, **kw),
        lambda **kw: NHKNN(n_neighbors=5, **kw),
        lambda **kw: NLDCV(n_neighbors=3, **kw),
    ],
    ids=["HKNN", "LDCV", "NHKNN", "NLDCV"],
)
def test_same_outputs_bit_for_bit_at_every_n_jobs(make: Any, digits: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y, Xq = digits
    monkeypatch.setattr(subspace, "CHUNK_BYTES", 2**16)  # LDCV: several distance blocks too
    calls = _recording(monkeypatch)
    serial, labels, info = _outputs(make(), X, y, Xq)
    serial_blocks = [c[:2] for c in calls]
    assert len(serial_blocks) >= 2 and all(c[2] is None for c in calls)
    assert any(-(-n // block) >= 3 for n, block in serial_blocks), serial_blocks  # really several blocks
    for jobs in JOBS:
        calls.clear()
        decision, predicted, info_jobs = _outputs(make(n_jobs=jobs), X, y, Xq)
        np.testing.assert_array_equal(decision, serial, err_msg=f"n_jobs={jobs}")
        np.testing.assert_array_equal(predicted, labels, err_msg=f"n_jobs={jobs}")
        assert info_jobs == info
        # the same blocks, handed the estimator's n_jobs
        assert [c[:2] for c in calls] == serial_blocks and all(c[2] == jobs for c in calls)
    assert (labels == load_digits().target[1::2]).mean() > 0.9  # a working classifier, not a constant


@pytest.mark.parametrize("cls", [NHKNN, NLDCV])
def test_whole_class_route_same_at_every_n_jobs(cls: type, monkeypatch: pytest.MonkeyPatch) -> None:
    """K reaching every class's size: one kernel PCA for all queries, queries in blocks."""
    X, y = load_iris(return_X_y=True)
    train = np.concatenate([np.flatnonzero(y == c)[:6] for c in range(3)])
    monkeypatch.setattr(subspace, "CHUNK_BYTES", 8 * 18 * 3 * 16)  # 16 queries per block
    serial, labels, info = _outputs(cls(n_neighbors=10), X[train], y[train], X)
    for jobs in JOBS:
        decision, predicted, info_jobs = _outputs(cls(n_neighbors=10, n_jobs=jobs), X[train], y[train], X)
        np.testing.assert_array_equal(decision, serial)
        np.testing.assert_array_equal(predicted, labels)
        assert info_jobs == info


@pytest.mark.parametrize("cls", [HKNN, NHKNN])
def test_tangent_metric_same_at_every_n_jobs(cls: type, digits: Any) -> None:
    """A non-Euclidean metric (Cevikalp et al.'s tangent distance on the 8 × 8 images):
    the distance-matrix routes, and NHKNN's non-PSD local Gram matrices, whose per-block
    counts add up to the same ``info_`` at every n_jobs."""
    X, y, Xq = digits
    X, y, Xq = X[:150], y[:150], Xq[:150]  # NHKNN: 3 blocks of 68 queries (2048 // M, M = 30)
    serial, labels, info = _outputs(cls(n_neighbors=3, metric="tangent"), X, y, Xq)
    for jobs in JOBS:
        decision, predicted, info_jobs = _outputs(cls(n_neighbors=3, metric="tangent", n_jobs=jobs), X, y, Xq)
        np.testing.assert_array_equal(decision, serial)
        np.testing.assert_array_equal(predicted, labels)
        assert info_jobs == info


@pytest.mark.parametrize("cls", [HKNN, LDCV, NHKNN, NLDCV])
def test_n_jobs_is_a_parameter(cls: type) -> None:
    est = cls()
    assert est.get_params()["n_jobs"] is None  # default: the serial path
    est.set_params(n_jobs=2)
    twin = clone(est)
    assert twin.get_params()["n_jobs"] == 2 and twin is not est
    assert clone(cls(n_jobs=-1)).n_jobs == -1
    X, y = load_iris(return_X_y=True)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        cls(n_jobs="two").fit(X, y)
