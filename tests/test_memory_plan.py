"""Memory planned before allocation (issue 14, part 3): a one-line InsufficientMemory
naming n, the bytes needed and the bytes available, instead of an allocation the machine
cannot hold (which ends in the OOM killer, or a crash, with no message)."""

from __future__ import annotations

import numpy as np
import pytest

from lkm.data import load_dataset
from lkm.errors import InsufficientMemory, LkmError
from lkm.methods.projection import LocalizedProjectionLearning, ProjectionLearning, pl_fit_memory
from lkm.numerics.kernels import (
    DistanceCache,
    available_memory,
    check_memory,
    parse_bytes,
    sq_dists,
    squared_euclidean,
)


@pytest.fixture(scope="module")
def letter() -> tuple[np.ndarray, np.ndarray]:
    d = load_dataset("letter-recognition")
    X = d.X[:2000].astype(np.float64)
    return X / X.max(), d.y[:2000]


@pytest.mark.parametrize(("text", "value"), [
    ("4GiB", 4 * 2**30), ("4G", 4 * 2**30), ("4GB", 4 * 10**9), ("500 MiB", 500 * 2**20),
    ("2e9", 2 * 10**9), ("123", 123), ("1.5KiB", 1536),
])
def test_memory_sizes_parse_with_units(text: str, value: int) -> None:
    assert parse_bytes(text) == value


def test_a_malformed_memory_limit_is_a_one_line_error(monkeypatch) -> None:
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "lots")
    with pytest.raises(LkmError, match="LKM_MEMORY_LIMIT='lots'"):
        available_memory()


def test_the_environment_override_replaces_the_detected_memory(monkeypatch) -> None:
    monkeypatch.delenv("LKM_MEMORY_LIMIT", raising=False)
    detected, source = available_memory()
    assert detected > 0 and source in {"MemAvailable", "psutil", "cgroup limit", "unknown"}
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "3GiB")
    assert available_memory() == (3 * 2**30, "LKM_MEMORY_LIMIT")


def test_distances_too_large_for_memory_raise_before_allocating(monkeypatch) -> None:
    """100,000² distances need 74.5 GiB: refused at once, nothing allocated."""
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "1GiB")
    with pytest.raises(InsufficientMemory) as info:
        squared_euclidean(np.zeros((100_000, 2)))
    message = str(info.value)
    assert "100,000 x 100,000" in message and "74.5 GiB" in message and "1.0 GiB is available" in message
    assert "\n" not in message
    assert isinstance(info.value, LkmError) and isinstance(info.value, MemoryError)


def test_small_allocations_are_not_checked(monkeypatch) -> None:
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "1KiB")
    assert squared_euclidean(np.ones((50, 3))).shape == (50, 50)
    with pytest.raises(InsufficientMemory):
        check_memory(2**11, "two kibibytes", always=True)


def test_pl_fit_refuses_a_training_set_that_does_not_fit(letter, monkeypatch) -> None:
    X, y = letter
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "20MiB")
    with pytest.raises(InsufficientMemory) as info:
        ProjectionLearning().fit(X, y)
    message = str(info.value)
    n_unique = np.unique(X, axis=0).shape[0]
    assert f"n = {n_unique:,} distinct training rows" in message
    assert "distance matrix" in message and "20.0 MiB is available (LKM_MEMORY_LIMIT)" in message
    assert "\n" not in message
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "1GiB")
    assert ProjectionLearning(solver="cholesky").fit(X, y).info_["n_unique_rows"] == n_unique


def test_lpl_with_k_equal_to_the_training_size_plans_its_global_system(letter, monkeypatch) -> None:
    X, y = letter
    monkeypatch.setenv("LKM_MEMORY_LIMIT", "20MiB")
    with pytest.raises(InsufficientMemory, match=f"LPL fit with k = ℓ .* on n = {len(y):,} training rows"):
        LocalizedProjectionLearning(k=len(y), sigma=1.0).fit(X, y)
    LocalizedProjectionLearning(k=5, sigma=1.0).fit(X, y)  # local systems: nothing n × n


def test_pl_memory_plan_counts_what_a_cache_keeps_alive(letter) -> None:
    X, _ = letter
    n = 2000
    alone, _ = pl_fit_memory(n, "cholesky")
    cache = DistanceCache()
    with_cache, text = pl_fit_memory(n, "cholesky", cache, X)
    assert alone == 8 * n * n and with_cache == 2 * alone and "cache keeps the distances" in text
    sq_dists(X, X, cache)  # now held: only the Gram matrix is new
    assert pl_fit_memory(X.shape[0], "cholesky", cache, X)[0] == 8 * X.shape[0] ** 2
    assert pl_fit_memory(n, "eigh")[0] == 3 * alone  # dsyevd's 2n² workspace


def test_pl_with_a_cache_is_refused_where_it_alone_would_fit(letter, monkeypatch) -> None:
    """With a DistanceCache the distances stay alive beside the Gram matrix: twice the memory."""
    X, y = letter
    X_u = np.unique(X, axis=0)
    single = 8 * X_u.shape[0] ** 2
    monkeypatch.setenv("LKM_MEMORY_LIMIT", str(int(1.5 * single)))
    ProjectionLearning(solver="cholesky").fit(X, y)
    with pytest.raises(InsufficientMemory, match="Gram matrix"):
        ProjectionLearning(solver="cholesky").fit(X, y, cache=DistanceCache())
