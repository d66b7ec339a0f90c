"""``n_jobs``: the estimators that split per-query (or per-neighbour-set) work over joblib
threads give exactly the same decision values and predictions (bit for bit, not within a
tolerance) at every n_jobs, since the work is cut into the same blocks whatever n_jobs is
(:func:`lkm.numerics.threads.map_row_blocks`); and ``n_jobs`` is an ordinary parameter
(get_params, clone, set_params, ``lkm methods``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.utils._param_validation import InvalidParameterError

import lkm.methods.nearest as nearest_module
import lkm.methods.npps as npps_module
import lkm.methods.projection as projection_module
import lkm.methods.svm_knn as svm_knn_module
from lkm.methods import describe_estimators, resolve_estimator

#: Registry key -> parameters: the classifiers with ``n_jobs``.
PARALLEL = {"lpl": {}, "svm_knn": {"n_neighbors": 8}, "nn": {}, "npps_svm": {"method": "naive"}}
N_JOBS = [None, 1, 2, -1]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks small enough that the test sets span several of them (so two threads share work)."""
    monkeypatch.setattr(projection_module, "LOCAL_SYSTEMS_BLOCK", 64)
    monkeypatch.setattr(svm_knn_module, "LOCAL_SVM_BLOCK", 4)
    monkeypatch.setattr(nearest_module, "QUERY_BLOCK", 50)
    monkeypatch.setattr(npps_module, "CHUNK_BYTES", 2**14)


def _split(binary: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Breast cancer (two classes) or digits (ten), standardized, every third row a query."""
    X, y = load_breast_cancer(return_X_y=True) if binary else load_digits(return_X_y=True)
    X = X[:900] if not binary else X
    y = y[:900] if not binary else y
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    test = np.arange(y.size) % 3 == 0
    return X[~test], y[~test], X[test], y[test]


def _run_independent(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in {*projection_module.RUN_DEPENDENT_INFO,
                                                         *npps_module.RUN_DEPENDENT_INFO}}


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "multiclass"])
@pytest.mark.parametrize("key", PARALLEL)
def test_decision_values_and_predictions_are_identical_at_every_n_jobs(key: str, binary: bool) -> None:
    X, y, X_test, _ = _split(binary)
    results = []
    for n_jobs in N_JOBS:
        est = resolve_estimator(key)(**PARALLEL[key], n_jobs=n_jobs).fit(X, y)
        decision = est.decision_function(X_test)
        results.append((decision, est.predict(X_test), _run_independent(est.info_)))
    for decision, labels, info in results[1:]:
        np.testing.assert_array_equal(decision, results[0][0])  # bit for bit
        np.testing.assert_array_equal(labels, results[0][1])
        assert info == results[0][2]


def test_lpl_with_n_jobs_solves_several_blocks() -> None:
    """The comparison above is not vacuous: LPL's queries span several blocks."""
    X, y, X_test, _ = _split(False)
    assert X_test.shape[0] > 2 * projection_module.LOCAL_SYSTEMS_BLOCK


def test_svm_knn_trains_more_local_svms_than_a_block() -> None:
    X, y, X_test, _ = _split(False)
    est = resolve_estimator("svm_knn")(n_neighbors=8, n_jobs=2).fit(X, y)
    est.predict(X_test)
    assert est.info_["local_svms"] > 2 * svm_knn_module.LOCAL_SVM_BLOCK


def test_npps_selection_is_identical_at_every_n_jobs() -> None:
    from lkm.methods import NPPS

    X, y, _, _ = _split(True)
    selections = [NPPS(method="fast", random_state=0, n_jobs=n_jobs).fit(X, y) for n_jobs in N_JOBS]
    for other in selections[1:]:
        np.testing.assert_array_equal(other.sample_indices_, selections[0].sample_indices_)
        np.testing.assert_array_equal(other.neighbors_entropy_, selections[0].neighbors_entropy_)
    assert selections[0].info_["n_rounds"] > 1


@pytest.mark.parametrize("key", [*PARALLEL, "npps"])
def test_n_jobs_is_a_parameter(key: str) -> None:
    from lkm.methods import NPPS

    cls = NPPS if key == "npps" else resolve_estimator(key)
    est = cls()
    assert est.get_params()["n_jobs"] is None  # the serial path by default
    copy = clone(est.set_params(n_jobs=2))
    assert copy.get_params()["n_jobs"] == 2
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        cls(n_jobs="two").fit(*_split(True)[:2])


def test_lkm_methods_lists_n_jobs() -> None:
    rows = {row["key"]: row["parameters"] for row in describe_estimators()}
    for key in [*PARALLEL, "npps"]:
        assert "n_jobs=None" in rows[key].split(", "), (key, rows[key])
