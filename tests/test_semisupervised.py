"""The semi-supervised protocol and the runner's semi-supervised half: labeled /
unlabeled / test draws, labels of unlabeled rows never reaching an estimator, the
transductive and inductive scores, the draws saved in the run folder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from lkm.data import Dataset
from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore
from lkm.errors import SpecError
from lkm.spec import spec_from_dict
from lkm.spec.protocols import SemiSupervisedProtocol


def _dataset() -> Dataset:
    """Iris (150 rows, 3 classes of 50 in file order)."""
    from lkm.data import load_dataset

    return load_dataset("sklearn-iris")


def test_draws_are_seeded_disjoint_and_cover_the_pool():
    data = _dataset()
    proto = SemiSupervisedProtocol(pool=120, labeled_per_class=2, repeats=3, seed=5)
    a, b = proto.splits(data), proto.splits(data)
    for s, t in zip(a, b, strict=True):
        np.testing.assert_array_equal(s.unlabeled, t.unlabeled)  # same seed, same draws
        labeled = np.setdiff1d(s.train, s.unlabeled)
        assert len(labeled) == 2 * len(np.unique(data.y[:120]))
        assert all((data.y[labeled] == c).sum() == 2 for c in np.unique(data.y[:120]))
        np.testing.assert_array_equal(s.train, np.arange(120))
        np.testing.assert_array_equal(s.test, np.arange(120, 150))
    assert not np.array_equal(a[0].unlabeled, a[1].unlabeled)  # realizations differ


@pytest.mark.parametrize("kwargs, words", [
    ({"pool": 120, "labeled_per_class": 60}, "labeled_per_class: 60"),
    ({"pool": 120, "labeled": 120}, "leaves none unlabeled"),
    ({"pool": 150, "labeled": 3}, "nothing left to test on"),
    ({"pool": "predefined", "labeled": 3}, "no official train/test split"),
    # iris is sorted by class: its first 100 rows never show the class all 50 test rows have
    ({"pool": 100, "labeled": 3}, "hold no row of class 2"),
])
def test_impossible_draws_are_one_line_spec_errors(kwargs, words):
    with pytest.raises(SpecError, match=words) as err:
        SemiSupervisedProtocol(**kwargs).splits(_dataset())
    assert "\n" not in str(err.value)


def test_exactly_one_way_to_choose_the_labeled_rows():
    with pytest.raises(ValueError, match="exactly one of labeled, labeled_per_class, labeled_group"):
        SemiSupervisedProtocol(pool=100)
    with pytest.raises(ValueError, match="exactly one"):
        SemiSupervisedProtocol(pool=100, labeled=3, labeled_per_class=1)


class SpyTransductive(ClassifierMixin, BaseEstimator):
    """Remembers what fit saw; predicts the labeled majority class."""

    seen: list = []

    def fit(self, X, y, unlabeled=None):
        SpyTransductive.seen.append((len(y), None if unlabeled is None else unlabeled.copy(), np.asarray(y).copy()))
        self.classes_ = np.unique(y if unlabeled is None else y[~unlabeled])
        values, counts = np.unique(y if unlabeled is None else y[~unlabeled], return_counts=True)
        self.majority_ = values[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


def test_runner_hides_unlabeled_labels_scores_both_parts_and_saves_the_draws(tmp_path, monkeypatch):
    spec = spec_from_dict({
        "name": "semi", "datasets": ["sklearn-iris"],
        "protocol": {"kind": "semisupervised", "pool": 120, "labeled_per_class": 2, "repeats": 2, "seed": 0},
        "methods": [{"name": "spy", "estimator": f"{__name__}.SpyTransductive"},
                    {"name": "knn", "estimator": "sklearn.neighbors.KNeighborsClassifier", "params": {"n_neighbors": 1}}],
    })
    SpyTransductive.seen = []
    plan = build_plan(spec)
    store = RunStore(tmp_path)
    store.prepare()
    write_plan(plan, store)
    summary = execute(plan, store, jobs=1)
    assert summary.failed == 0
    recs = list(store.iter_records())
    assert {r["method"] for r in recs} == {"spy", "knn"} and len(recs) == 4
    for r in recs:
        assert (r["n_train"], r["n_unlabeled"], r["n_test"]) == (6, 114, 30)
        assert 0 <= r["unlabeled_accuracy"] <= 1 and 0 <= r["accuracy"] <= 1
    draws = json.loads((tmp_path / "splits" / "sklearn-iris.json").read_text())
    assert set(draws) == {"r0", "r1"} and len(draws["r0"]["labeled"]) == 6 and len(draws["r0"]["unlabeled"]) == 114
    assert not set(draws["r0"]["labeled"]) & set(draws["r0"]["unlabeled"])


def test_labels_of_unlabeled_rows_never_reach_fit():
    from lkm.engine.runner import _SemiSupervised
    from lkm.spec.protocols import Split

    y = np.array(["a", "b", "c", "a", "b", "c"])
    split = Split("r0", np.arange(6), np.arange(0), unlabeled=np.array([2, 4, 5]))
    semi = _SemiSupervised.of(split, np.arange(12.0).reshape(6, 2), y)
    assert list(semi.y_masked[semi.mask]) == ["a", "a", "a"]  # the first labeled row's label
    X_fit, y_fit, extra = semi.fit_inputs(SpyTransductive())
    assert len(y_fit) == 6 and extra["unlabeled"].sum() == 3
    from sklearn.neighbors import KNeighborsClassifier

    X_fit, y_fit, extra = semi.fit_inputs(KNeighborsClassifier())
    assert list(y_fit) == ["a", "b", "a"] and extra == {}  # supervised: the labeled rows alone


def test_a_pool_of_the_first_rows_can_be_tested_on_the_official_test_part(data_dir):
    """Isolet (Yang et al.): isolet1 (the first 1560 rows) is the pool, isolet5 the test set."""
    from lkm.data import load_dataset

    isolet = load_dataset("isolet", data_dir=data_dir)
    (split,) = SemiSupervisedProtocol(pool=1560, test="predefined", labeled=52).splits(isolet)
    assert len(split.train) == 1560 and len(split.unlabeled) == 1508
    np.testing.assert_array_equal(split.test, isolet.predefined_split["test"])
    assert len(split.test) == 1559


def test_merged_class_groups_make_a_binary_task_with_its_own_id():
    from lkm.data import load_dataset, merge_classes

    spec = spec_from_dict({"name": "g", "datasets": [{"name": "sklearn-iris", "groups": [[0], [1, 2]]}],
                           "methods": [{"name": "NN", "estimator": "nn"}]})
    ds = spec.datasets[0]
    assert ds.id == "sklearn-iris[0|1+2]"
    data = ds.load()
    assert sorted(data.classes) == ["0", "1+2"] and (data.y == "1+2").sum() == 100
    assert "groups" not in spec_from_dict({"name": "g", "datasets": ["sklearn-iris"],
                                           "methods": [{"name": "NN", "estimator": "nn"}]}).datasets[0].model_dump()
    from lkm.errors import DataError

    with pytest.raises(DataError, match="overlap in class"):
        merge_classes(load_dataset("sklearn-iris"), [[0, 1], [1, 2]])


def test_a_class_labelled_minus_one_is_a_class_in_supervised_runs(tmp_path, data_dir):
    """PRLS reads y == -1 as unlabeled (sklearn's convention) unless told otherwise; the
    runner tells it every row is labeled, in plain fits and in a tune block's search."""
    from lkm.data import load_dataset

    data = load_dataset("ida-image", data_dir=data_dir)
    assert -1 in set(data.y.tolist())
    spec = spec_from_dict({
        "name": "pm", "datasets": ["ida-image"], "protocol": {"kind": "holdout", "train_size": 200, "test_size": 200},
        "methods": [{"name": "PRLS", "estimator": "prls", "params": {"kernel": "gaussian", "sigma": 3.0}},
                    {"name": "PRLS-cv", "estimator": "prls", "params": {"kernel": "gaussian"},
                     "tune": {"grid": {"sigma": [2.0, 4.0]}, "cv": 3}}],
    })
    plan = build_plan(spec, data_dir=data_dir)
    store = RunStore(tmp_path)
    store.prepare()
    assert execute(plan, store, jobs=1).failed == 0
    for r in store.iter_records():
        assert r["info"]["n_unlabeled"] == 0 and r["info"]["n_labeled"] == 200
        assert r["accuracy"] > 0.7


def test_isolet_speaker_of_a_row_is_its_rank_within_the_letter_halved(data_dir):
    """The registry's speaker rule, checked on the data: in Isolet1 the nearest row of
    another letter belongs to the same speaker far above chance (1/30)."""
    from lkm.data import load_dataset
    from lkm.numerics.kernels import sq_dists

    isolet = load_dataset("isolet", data_dir=data_dir)
    speaker = isolet.row_groups["speaker"]
    X, y, s = isolet.X[:1560], isolet.y[:1560], speaker[:1560]
    assert np.bincount(s).tolist() == [52] * 30  # 30 speakers, 26 letters x 2 each
    D = sq_dists(X, X)
    D[y[:, None] == y[None, :]] = np.inf
    same = (s[D.argmin(axis=1)] == s).mean()
    assert same > 0.4  # measured 0.52; a wrong rule (e.g. rank % 30) gives < 0.35
    assert (speaker[1560:6238] >= 0).sum() == 6238 - 1560 - 58  # Isolet4's letter 6 lacks two rows: unknown
    assert speaker[6238:].max() == -1  # isolet5: no rule given


def test_labeled_group_makes_one_realization_per_speaker(data_dir):
    from lkm.data import load_dataset

    isolet = load_dataset("isolet", data_dir=data_dir)
    splits = SemiSupervisedProtocol(pool=1560, test="predefined", labeled_group="speaker").splits(isolet)
    assert [s.id for s in splits] == [f"speaker{g}" for g in range(1, 31)]
    for split in splits:
        labeled = np.setdiff1d(split.train, split.unlabeled)
        assert len(labeled) == 52 and len(np.unique(isolet.row_groups["speaker"][labeled])) == 1
        assert len(split.unlabeled) == 1508 and len(split.test) == 1559
    with pytest.raises(SpecError, match="has no row group 'session'"):
        SemiSupervisedProtocol(pool=120, labeled_group="session").splits(_dataset())
    with pytest.raises(ValueError, match="repeats"):
        SemiSupervisedProtocol(pool=1560, labeled_group="speaker", repeats=3)
    first = SemiSupervisedProtocol(pool=1560, test="predefined", labeled_group="speaker", groups_used=3).splits(isolet)
    assert [(s.id, s.unlabeled.tolist()) for s in first] == [(s.id, s.unlabeled.tolist()) for s in splits[:3]]
    with pytest.raises(ValueError, match="groups_used: only with labeled_group"):
        SemiSupervisedProtocol(pool=1560, labeled=52, groups_used=3)


def test_tasks_expand_a_dataset_into_binary_tasks_methods_follow_the_family():
    spec = spec_from_dict({"name": "t", "datasets": [{"name": "sklearn-iris", "tasks": "one_vs_all"},
                                                     {"name": "sklearn-wine", "tasks": "pairwise"}],
                           "methods": [{"name": "NN", "estimator": "nn", "datasets": ["sklearn-iris"]}]})
    ids = [d.id for d in spec.datasets]
    assert ids[:3] == ["sklearn-iris[0|rest]", "sklearn-iris[1|rest]", "sklearn-iris[2|rest]"]
    assert ids[3:] == ["sklearn-wine[0|1]", "sklearn-wine[0|2]", "sklearn-wine[1|2]"]
    assert {d.task_of for d in spec.datasets} == {"sklearn-iris", "sklearn-wine"}
    one = spec.datasets[1].load()
    assert len(one.y) == 150 and (one.y == "1").sum() == 50  # one against the rest keeps every row
    pair = spec.datasets[5].load()
    assert sorted(np.unique(pair.y).tolist()) == [1, 2]  # a pair drops the other classes
    plan = build_plan(spec)
    assert {t.dataset for t in plan.tasks} == set(ids[:3])  # NN restricted to iris runs on its three tasks
    with pytest.raises(Exception, match="tasks"):
        spec_from_dict({"name": "t", "datasets": [{"name": "sklearn-iris", "tasks": "pairwise", "groups": [[0], [1]]}],
                        "methods": [{"name": "NN", "estimator": "nn"}]})
