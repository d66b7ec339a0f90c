"""The runner's test prediction computes a local classifier's work once: SVM-KNN's local
SVMs, the subspace classifiers' class distances (kernel PCA per query for NHKNN/NLDCV)
and 1-NN's distances give the labels and the recorded decision values in one pass
(``_predict_and_decision``), where the runner used to call ``decision_function`` again
after the timing. The values are ``predict``'s and ``decision_function``'s bit for bit,
exact ties included, and the records equal those of the two-pass route."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, make_blobs

import lkm.methods.nearest as nearest_module
import lkm.methods.subspace as subspace_module
import lkm.methods.svm_knn as svm_knn_module
from lkm.engine.runner import build_plan, execute, write_plan
from lkm.engine.store import RunStore
from lkm.methods import resolve_estimator
from lkm.spec import spec_from_dict

#: Registry key -> parameters: lkm's classifiers whose prediction is the costly part.
SHARED = {
    "hknn": {"n_neighbors": 2},
    "ldcv": {"n_neighbors": 1},
    "nhknn": {"n_neighbors": 5, "q": 50.0},
    "nldcv": {"n_neighbors": 4, "q": 50.0},
    "nn": {},
    "svm_knn": {"n_neighbors": 12, "sigma": 5.0},
}


def _split(data: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Breast cancer (two classes), digits (ten classes, 600 rows) or three classes in
    the plane, every third row a query, and the first 20 training rows queried too. In
    the plane those 20 rows are also in the training set under the next class: queried,
    they lie on two classes' models, an exact tie."""
    if data == "plane":
        X, y = make_blobs(n_samples=300, centers=3, random_state=0)
    else:
        X, y = load_breast_cancer(return_X_y=True) if data == "binary" else load_digits(return_X_y=True)
        X, y = (X, y) if data == "binary" else (X[:600], y[:600])
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    test = np.arange(y.size) % 3 == 0
    X_train, y_train = X[~test], y[~test]
    if data == "plane":
        X_train = np.vstack([X_train, X_train[:20]])
        y_train = np.concatenate([y_train, (y_train[:20] + 1) % 3])
    return X_train, y_train, np.vstack([X[test], X_train[:20]])


@pytest.mark.parametrize("data", ["binary", "multiclass", "plane"])
@pytest.mark.parametrize("key", SHARED)
def test_one_pass_gives_predict_and_decision_function_bit_for_bit(key: str, data: str) -> None:
    X, y, X_test = _split(data)
    two = resolve_estimator(key)(**SHARED[key]).fit(X, y)
    labels, decision = two.predict(X_test), two.decision_function(X_test)
    info_two = dict(two.info_)
    one = resolve_estimator(key)(**SHARED[key]).fit(X, y)
    shared_labels, shared_decision = one._predict_and_decision(X_test)
    np.testing.assert_array_equal(shared_labels, labels)
    assert shared_decision is not None and shared_decision.dtype == decision.dtype
    np.testing.assert_array_equal(shared_decision, decision)  # bit for bit
    assert one.info_ == info_two


def test_the_queries_include_exact_ties() -> None:
    """The comparison above covers the tie rule: in the plane the 20 doubly labelled
    rows tie exactly under 1-NN and HKNN."""
    X, y, X_test = _split("plane")
    for key in ("nn", "hknn"):
        est = resolve_estimator(key)(**SHARED[key]).fit(X, y)
        est.predict(X_test)
        assert est.info_["tie_share"] >= 20 / X_test.shape[0], key


SPEC = {
    "name": "shared",
    "datasets": ["sklearn-iris"],
    "preprocessing": "standardize",
    "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
    "methods": [
        {"name": "HKNN", "estimator": "hknn", "params": {"n_neighbors": 3}},
        {"name": "NHKNN", "estimator": "nhknn", "params": {"n_neighbors": 5, "q": 2.0}},
        {"name": "NN", "estimator": "nn"},
        {"name": "SVM-KNN", "estimator": "svm_knn", "params": {"n_neighbors": 10, "sigma": 1.0}},
        {"name": "SVM-KNN-cv", "estimator": "svm_knn",
         "tune": {"grid": {"n_neighbors": [5, 10]}, "cv": 2, "seed": 0}},
    ],
}


def _records(folder: Path) -> dict[str, dict]:
    plan = build_plan(spec_from_dict(SPEC))
    store = RunStore(folder)
    store.prepare()
    write_plan(plan, store)
    execute(plan, store, jobs=1, in_process=True)  # the spies patch this process
    return {r["task_id"]: _without_times(r) for r in store.iter_records()}


def _without_times(value):
    """A record without its clock readings (``*seconds``, ``finished_at``), at any depth."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if not k.endswith("seconds") and k != "finished_at"}
    return value


def test_a_run_predicts_once_per_test_set_and_records_what_two_passes_recorded(tmp_path, monkeypatch) -> None:
    calls = {"subspace": 0, "svm_knn": 0, "nn": 0}

    def counted(owner: type, name: str, key: str) -> None:
        method = getattr(owner, name)

        def spy(self, *args, **kwargs):
            calls[key] += 1
            return method(self, *args, **kwargs)

        monkeypatch.setattr(owner, name, spy)

    counted(subspace_module._LocalSubspaceClassifier, "_scaled_decision", "subspace")
    counted(svm_knn_module.SVMKNN, "_local", "svm_knn")
    counted(nearest_module.NearestNeighbor, "_class_distances", "nn")
    one_pass = _records(tmp_path / "one")
    # 3 folds: one test prediction per fold and method (the tuned SVM-KNN also scores
    # 2 settings × 2 inner folds by predict)
    assert calls == {"subspace": 2 * 3, "svm_knn": 3 + 3 + 2 * 2 * 3, "nn": 3}
    assert all(r["status"] == "ok" and r["roc_auc"] is not None for r in one_pass.values())

    for owner in (subspace_module._LocalSubspaceClassifier, svm_knn_module.SVMKNN, nearest_module.NearestNeighbor):
        monkeypatch.delattr(owner, "_predict_and_decision")  # the runner's two-pass route
    two_passes = _records(tmp_path / "two")
    assert calls["subspace"] == 2 * 3 + 2 * 2 * 3  # the second pass is back: the spies see it
    assert json.dumps(one_pass, sort_keys=True) == json.dumps(two_passes, sort_keys=True)


def test_a_subclass_that_overrides_predict_gets_its_own_predict(tmp_path) -> None:
    """A user's variant of an lkm classifier: the one-pass route would bypass its
    ``predict``, so the runner calls its methods instead (two passes)."""
    from lkm.engine.runner import predict_and_decide

    class AlwaysFirst(nearest_module.NearestNeighbor):
        def predict(self, X, cache=None):
            return np.full(len(X), self.classes_[0])

    X, y, X_test = _split("multiclass")
    labels, decide = predict_and_decide(AlwaysFirst().fit(X, y), X_test)
    assert (labels == np.unique(y)[0]).all()
    np.testing.assert_array_equal(decide(), nearest_module.NearestNeighbor().fit(X, y).decision_function(X_test))
    labels, _ = predict_and_decide(nearest_module.NearestNeighbor().fit(X, y), X_test)
    assert len(set(labels)) > 1  # lkm's own class still takes the one-pass route
