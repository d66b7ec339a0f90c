"""The `lpl-synthetic` generator (stand-in for Tsuji et al.'s undefined synthetic set)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lkm.data import dataset_info, load_dataset
from lkm.data.synthetic import LPL_SYNTHETIC_CENTERS, generate, lpl_synthetic
from lkm.errors import DataError


def test_same_parameters_give_identical_arrays():
    a = load_dataset("lpl-synthetic")
    b = load_dataset("lpl-synthetic", n_samples=400, spread=0.6, random_state=0)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    X1, y1 = lpl_synthetic(n_samples=123, spread=0.5, random_state=7)
    X2, y2 = lpl_synthetic(n_samples=123, spread=0.5, random_state=7)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)


def test_another_seed_gives_other_points():
    a = load_dataset("lpl-synthetic", random_state=0)
    b = load_dataset("lpl-synthetic", random_state=1)
    assert a.X.shape == b.X.shape
    assert not np.allclose(a.X, b.X)


def test_shape_classes_and_registry_statistics():
    ds = load_dataset("lpl-synthetic")
    info = dataset_info("tsuji-synthetic")  # alias
    assert info.name == "lpl-synthetic" and info.source == "synthetic"
    assert ds.X.shape == (info.n_samples, info.n_features) == (400, 2)
    assert ds.X.dtype == np.float64 and ds.X.flags.c_contiguous
    assert ds.classes == [-1, 1]
    assert dict(Counter(ds.y.tolist())) == info.class_counts == {-1: 200, 1: 200}
    assert ds.feature_names == ["x1", "x2"]
    # Mostly inside [-3, 3]², centred on the blob layout.
    assert np.mean(np.all(np.abs(ds.X) <= 3.0, axis=1)) > 0.9


@pytest.mark.parametrize("n", [2, 3, 101, 6000])
def test_any_number_of_samples(n):
    X, y = lpl_synthetic(n_samples=n, spread=0.6, random_state=0)
    assert X.shape == (n, 2) and y.shape == (n,)
    assert set(y.tolist()) == {-1, 1}
    assert abs(int(np.sum(y == 1)) - int(np.sum(y == -1))) <= 1


def test_points_sit_around_their_class_blobs():
    X, y = lpl_synthetic(n_samples=3000, spread=0.05, random_state=3)
    for label, centers in LPL_SYNTHETIC_CENTERS.items():
        d = np.linalg.norm(X[y == label][:, None, :] - np.asarray(centers)[None], axis=2)
        assert d.min(axis=1).max() < 0.5  # every point near one of its own class's centres


def test_bad_spread_is_rejected():
    with pytest.raises(DataError, match="spread must be a number >= 0"):
        generate("lpl_synthetic", {"n_samples": 10, "spread": -1.0, "random_state": 0}, dataset="lpl-synthetic")
    with pytest.raises(DataError, match="unknown parameter"):
        load_dataset("lpl-synthetic", noise=0.1)
