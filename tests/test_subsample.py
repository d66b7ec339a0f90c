"""`subsample:` on a dataset entry (the benchmark's rule for large sets): a seeded
stratified draw made once, before any split (lkm.data.subsample_rows)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lkm.data import Dataset, subsample_rows
from lkm.spec.schema import DatasetSpec


def _toy(n: int = 1000) -> Dataset:
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [600, 300, 100])[:n]
    return Dataset("toy", rng.normal(size=(len(y), 3)), y, [0, 1, 2], None, None, None, None, None)


def test_subsample_keeps_each_class_share_in_the_original_order() -> None:
    data = _toy()
    cut = subsample_rows(data, 500)
    assert len(cut.y) == 500
    assert np.bincount(cut.y).tolist() == [300, 150, 50]
    rows = [int(np.flatnonzero((data.X == x).all(axis=1))[0]) for x in cut.X]
    assert rows == sorted(rows)  # kept rows stay in the file's order


def test_subsample_is_the_same_draw_every_time_and_a_no_op_when_small() -> None:
    data = _toy()
    assert np.array_equal(subsample_rows(data, 400).X, subsample_rows(data, 400).X)
    assert subsample_rows(data, 5000) is data


def test_a_subsampled_entry_loads_the_same_rows_and_keeps_its_id(data_dir: Path) -> None:
    entry = DatasetSpec(name="spambase", subsample=500)
    a, b = entry.load(data_dir), entry.load(data_dir)
    assert a.X.shape == (500, 57) and np.array_equal(a.X, b.X)
    assert entry.id == "spambase"
    assert "subsample" not in DatasetSpec(name="spambase").model_dump()  # unset: task ids unchanged
