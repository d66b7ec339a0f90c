"""Exact vs approximate neighbours in LPL (Tsuji et al., Sec. 7): the estimator's query
time and recall diagnostics, and the ``neighbors`` table and figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore
from lkm.methods import LocalizedProjectionLearning
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.neighbors import ExactNeighbors, neighbor_recall
from lkm.report import build_report
from lkm.spec import spec_from_dict


def _cloud(n: int = 600, m: int = 150, p: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    X, Q = rng.normal(size=(n, p)), rng.normal(size=(m, p))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int), Q


def test_exact_neighbours_record_query_time_and_unit_recall() -> None:
    X, y, Q = _cloud()
    model = LocalizedProjectionLearning(sigma=1.0, measure_recall=True).fit(X, y)
    model.decision_function(Q)
    info = model.info_
    assert info["neighbor_recall"] == 1.0 and info["recall_seconds"] == 0.0  # nothing recomputed
    assert info["neighbor_seconds"] > 0 and info["neighbor_cached"] is False


def test_annoy_recall_is_measured_and_high_with_many_trees() -> None:
    X, y, Q = _cloud()
    k = 5
    _, exact_idx = ExactNeighbors().fit(X).kneighbors(Q, k)
    recalls = {}
    for n_trees in (1, 50):
        model = LocalizedProjectionLearning(sigma=1.0, k=k, neighbors="annoy", n_trees=n_trees,
                                            measure_recall=True, random_state=0).fit(X, y)
        model.decision_function(Q)
        r = model.info_["neighbor_recall"]
        assert 0.0 <= r <= 1.0 and model.info_["neighbor_seconds"] > 0
        assert model.info_["recall_seconds"] > 0  # the exact reference query ran
        _, approx_idx = model.neighbors_.kneighbors(Q, k)
        assert r == pytest.approx(neighbor_recall(approx_idx, exact_idx))
        recalls[n_trees] = r
    assert recalls[50] > 0.9 and recalls[50] > recalls[1]
    quiet = LocalizedProjectionLearning(neighbors="annoy", random_state=0).fit(X, y)
    quiet.decision_function(Q)
    assert quiet.info_["neighbor_recall"] is None  # not measured unless asked


def test_cached_geometry_records_the_time_actually_spent() -> None:
    X, y, Q = _cloud()
    cache = DistanceCache()
    infos = []
    for sigma in (0.5, 2.0):  # the second sigma reuses the neighbour lists from the cache
        model = LocalizedProjectionLearning(sigma=sigma, neighbors="annoy", n_trees=3, measure_recall=True,
                                            random_state=0).fit(X, y, cache=cache)
        model.decision_function(Q, cache=cache)
        infos.append(dict(model.info_))
    first, second = infos
    assert first["neighbor_cached"] is False and first["neighbor_seconds"] > 0 and first["recall_seconds"] > 0
    assert second["neighbor_cached"] is True and second["neighbor_seconds"] == 0.0
    assert second["recall_seconds"] == 0.0 and second["neighbor_recall"] == first["neighbor_recall"]


def test_measure_recall_is_validated() -> None:
    X, y, _ = _cloud(n=50)
    with pytest.raises(ValueError, match="measure_recall"):
        LocalizedProjectionLearning(measure_recall="yes").fit(X, y)


TINY = {
    "name": "tiny-annoy",
    "datasets": ["moons"],
    "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
    "methods": [
        {"name": "LPL-exact", "estimator": "lpl", "params": {"neighbors": "exact", "sigma": 1.0}},
        {"name": "LPL-annoy", "estimator": "lpl", "params": {"neighbors": "annoy", "sigma": 1.0, "measure_recall": True},
         "sweep": {"n_trees": [1, 5], "search_k": [-1, 50]}},
        {"name": "LPL-hnswlib", "estimator": "lpl",
         "params": {"neighbors": "hnswlib", "sigma": 1.0, "measure_recall": True}, "sweep": {"ef": [1, 50]}},
    ],
    "selection": {"over": ["sigma"]},
    "outputs": {"tables": ["summary", "neighbors"], "figures": ["neighbors"], "formats": ["png"]},
}


def test_neighbors_table_and_figure_from_a_tiny_run(tmp_path: Path) -> None:
    spec = spec_from_dict(TINY)
    plan = build_plan(spec)
    store = RunStore(tmp_path)
    store.prepare()
    write_plan(plan, store)
    summary = execute(plan, store)
    assert summary.failed == 0
    build_report(store, spec, plan.task_ids, plan.unavailable)
    table = pd.read_csv(tmp_path / "tables" / "neighbors.csv", keep_default_na=False)
    assert list(table.columns) == [
        "dataset", "method", "neighbors", "n_trees", "search_k", "ef", "sigma", "accuracy %", "Δ vs exact (pts)",
        "Δ vs exact (pts) std", "recall", "query s", "query / exact", "predict s", "fit s", "splits",
    ]
    assert len(table) == 1 + 4 + 2
    exact = table[table["neighbors"] == "exact"].iloc[0]
    assert float(exact["Δ vs exact (pts)"]) == 0.0 and float(exact["Δ vs exact (pts) std"]) == 0.0  # "+0.00 ± 0.00"
    assert float(exact["recall"]) == 1.0 and float(exact["query / exact"]) == 1.0
    approx = table[table["neighbors"] == "annoy"]
    assert approx["recall"].astype(float).between(0, 1).all()
    assert set(approx["n_trees"].astype(int)) == {1, 5} and set(approx["search_k"].astype(int)) == {-1, 50}
    assert (approx["splits"] == 3).all()
    graphs = table[table["neighbors"] == "hnswlib"]
    assert set(graphs["ef"].astype(int)) == {1, 50} and set(graphs["n_trees"]) == {""}  # not an annoy setting
    assert float(graphs[graphs["ef"].astype(int) == 50]["recall"].iloc[0]) > 0.95
    assert (tmp_path / "figures" / "neighbors.png").stat().st_size > 10_000
