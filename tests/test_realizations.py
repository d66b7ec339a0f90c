"""The ``realizations`` protocol (Li, Chen, Tang Table 4: IDA benchmarks), the official
sizes in the registry, and the holdout protocol for Table 7 and generated data sets."""

from __future__ import annotations

import numpy as np
import pytest

from lkm.data import Dataset, dataset_info, list_datasets, load_dataset
from lkm.errors import SpecError
from lkm.spec import spec_from_dict
from lkm.spec.protocols import HoldoutProtocol, RealizationsProtocol

# Li, Chen, Tang Table 4 (train, test) and the IDA documentation for the sets it omits
TABLE4 = {
    "ida-breast-cancer": (200, 77), "ida-flare-solar": (666, 400), "ida-german": (700, 300),
    "ida-thyroid": (140, 75), "ida-image": (1300, 1010), "ida-titanic": (150, 2051),
    "ida-splice": (1000, 2175), "ida-banana": (400, 4900), "ida-twonorm": (400, 7000),
    "ida-waveform": (400, 4600),
}
IDA = sorted(TABLE4)
OFFICIAL_COUNT = {name: 20 if name in ("ida-image", "ida-splice") else 100 for name in IDA}


def test_registry_holds_the_official_sizes_and_they_add_up_to_the_rows():
    assert sorted(i.name for i in list_datasets() if i.name.startswith("ida-")) == IDA
    for name in IDA:
        info = dataset_info(name)
        assert tuple(info.meta["official_train_test_sizes"]) == TABLE4[name]
        assert sum(TABLE4[name]) == info.n_samples, name  # the mirror holds exactly train + test rows
        assert info.meta["official_realizations"] == OFFICIAL_COUNT[name]
        split_file = info.meta["official_split_file"]
        assert split_file["name"] == "benchmarks.mat" and split_file["url"].startswith("https://")
        assert len(split_file["sha256"]) == 64


@pytest.mark.parametrize("name", IDA)
def test_seeded_realizations_of_the_official_sizes(name, data_dir):
    ds = load_dataset(name, data_dir=data_dir)
    assert ds.realizations is None  # the mirror has no benchmarks.mat
    n_train, n_test = TABLE4[name]
    assert len(ds.y) == n_train + n_test
    proto = RealizationsProtocol(count=3, seed=5)
    splits = proto.splits(ds)
    assert [s.id for s in splits] == ["real1-seeded", "real2-seeded", "real3-seeded"]
    assert [s.repeat for s in splits] == [1, 2, 3]
    for s in splits:
        assert (len(s.train), len(s.test)) == (n_train, n_test)
        assert not np.intersect1d(s.train, s.test).size
    assert not np.array_equal(splits[0].train, splits[1].train)
    again = RealizationsProtocol(count=3, seed=5).splits(ds)
    assert all(np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test) for a, b in zip(splits, again, strict=True))
    assert "seeded random realizations" in proto.describe()
    assert "official split file is not available" in proto.describe()
    assert not proto.official(ds)


def test_default_count_is_the_official_number(data_dir):
    ds = load_dataset("ida-thyroid", data_dir=data_dir)
    assert len(RealizationsProtocol().splits(ds)) == 100
    image = load_dataset("ida-image", data_dir=data_dir)
    assert len(RealizationsProtocol().splits(image)) == 20
    with pytest.raises(SpecError, match="has 20 official realizations"):
        RealizationsProtocol(first=20, count=2).splits(image)


def test_count_and_first_select_the_numbered_realizations(data_dir):
    ds = load_dataset("ida-breast-cancer", data_dir=data_dir)
    all5 = RealizationsProtocol(count=5, seed=1).splits(ds)
    only1 = RealizationsProtocol(count=1, seed=1).splits(ds)
    mid = RealizationsProtocol(first=3, count=2, seed=1).splits(ds)
    assert [s.repeat for s in only1] == [1] and np.array_equal(only1[0].train, all5[0].train)
    assert [s.repeat for s in mid] == [3, 4]
    assert np.array_equal(mid[0].test, all5[2].test) and np.array_equal(mid[1].test, all5[3].test)
    assert RealizationsProtocol(count=1).describe().startswith("seeded random realizations 1 of")


def _tiny(realizations=None, meta=None) -> Dataset:
    info = dataset_info("ida-thyroid")
    info = type(info)(**{**info.__dict__, "name": "tiny", "meta": meta or {}})
    rng = np.random.default_rng(0)
    y = np.array([-1, 1] * 10)
    return Dataset("tiny", rng.normal(size=(20, 2)), y, [-1, 1], info, None, None, realizations)


def test_official_indices_are_used_when_present():
    official = [(np.arange(r, r + 5), np.arange(10, 20)) for r in range(4)]
    ds = _tiny(official, meta={"official_train_test_sizes": [5, 15], "official_realizations": 4})
    proto = RealizationsProtocol()
    splits = proto.splits(ds)
    assert [s.id for s in splits] == ["real1", "real2", "real3", "real4"]
    assert np.array_equal(splits[2].train, np.arange(2, 7)) and np.array_equal(splits[2].test, np.arange(10, 20))
    assert proto.official(ds)
    assert proto.describe() == "official realizations 1..N"
    assert RealizationsProtocol(first=2, count=2).splits(ds)[1].repeat == 3
    with pytest.raises(SpecError, match="4 official realizations"):
        RealizationsProtocol(count=5).splits(ds)
    assert "tiny" in repr(ds) and "realizations=4" in repr(ds)


def test_sizes_without_registry_meta_must_be_given():
    ds = _tiny()
    with pytest.raises(SpecError, match="train_size and test_size"):
        RealizationsProtocol(count=1).splits(ds)
    s = RealizationsProtocol(count=2, train_size=6, test_size=10, stratified=True).splits(ds)
    assert [(len(x.train), len(x.test)) for x in s] == [(6, 10), (6, 10)]
    assert sorted(np.unique(ds.y[s[0].train], return_counts=True)[1]) == [3, 3]
    with pytest.raises(SpecError, match="exceed the 20 rows"):
        RealizationsProtocol(count=1, train_size=15, test_size=10).splits(ds)


def _spec(protocol, dataset="ida-thyroid"):
    return {"name": "t", "datasets": [{"name": dataset}],
            "methods": [{"name": "SVM", "estimator": "svm"}], "protocol": protocol}


def test_spec_accepts_the_realizations_kind_and_names_a_bad_key():
    spec = spec_from_dict(_spec({"kind": "realizations", "count": 1, "seed": 3}))
    assert isinstance(spec.protocol, RealizationsProtocol) and spec.protocol.first == 1
    with pytest.raises(SpecError) as err:
        spec_from_dict(_spec({"kind": "realizations", "cuont": 1}))
    assert "\n" not in str(err.value)
    assert "protocol.cuont" in str(err.value) and "did you mean 'count'" in str(err.value)
    with pytest.raises(SpecError, match=r"protocol\.first"):
        spec_from_dict(_spec({"kind": "realizations", "first": 0}))


def test_holdout_gives_exact_counts_with_a_seed_table7(data_dir):
    ds = load_dataset("ionosphere", data_dir=data_dir)
    proto = HoldoutProtocol(train_size=185, test_size=166, seed=7, repeats=2)
    splits = proto.splits(ds)
    assert [(len(s.train), len(s.test)) for s in splits] == [(185, 166)] * 2
    again = HoldoutProtocol(train_size=185, test_size=166, seed=7, repeats=2).splits(ds)
    assert np.array_equal(splits[1].train, again[1].train)
    assert not np.array_equal(splits[0].train, splits[1].train)


def test_generated_data_with_its_own_sizes():
    spec = spec_from_dict(_spec({"kind": "holdout", "train_size": 60, "test_size": 240, "stratified": True},
                                dataset="gaussians"))
    ds = load_dataset("gaussians")
    splits = spec.protocol.splits(ds)
    assert (len(splits[0].train), len(splits[0].test)) == (60, 240)
    assert sorted(np.unique(ds.y[splits[0].train], return_counts=True)[1]) == [30, 30]


def test_benchmarks_mat_indices_map_onto_the_mirrored_rows(tmp_path):
    from scipy.io import savemat

    from lkm.data.realizations import read_realizations

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(8, 2)), np.array([-1, 1] * 4)
    perm = rng.permutation(8)  # the file stores the patterns in another order
    train = np.array([[1, 2, 3], [4, 5, 6]])  # 1-based, one row per realization
    test = np.array([[4, 5, 6, 7, 8], [1, 2, 3, 7, 8]])
    struct = {"x": X[perm], "t": y[perm].reshape(-1, 1).astype(float), "train": train, "test": test}
    savemat(tmp_path / "benchmarks.mat", {"tiny": struct})
    reals = read_realizations(tmp_path / "benchmarks.mat", "tiny", X, y, "tiny")
    assert len(reals) == 2
    assert np.array_equal(X[reals[0][0]], X[perm][[0, 1, 2]])
    assert np.array_equal(y[reals[1][1]], y[perm][[0, 1, 2, 6, 7]])
