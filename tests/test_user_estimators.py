"""A spec's methods may name any scikit-learn classifier by dotted path (issue 10, part 2):
registry keys and dotted paths go through one resolver (`lkm.methods.resolve_estimator`),
the runner passes ``cache=`` only to estimators that take it, and bad paths or
non-classifiers are one-line spec errors naming file and key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from processes import CEILING
from typer.testing import CliRunner

from lkm.cli import app
from lkm.engine.runner import fit_tuned
from lkm.errors import SpecError
from lkm.methods import METHODS, estimator_param_names, resolve_estimator
from lkm.methods.base import cache_kwargs
from lkm.numerics.kernels import DistanceCache
from lkm.spec import load_spec

SPEC = """\
name: user-estimators
datasets: [moons, sklearn-iris]
preprocessing: standardize
protocol: {{kind: kfold, folds: 3, repeats: 1, seed: 0}}
methods:
{methods}
"""

KNN = "  - {name: kNN, estimator: sklearn.neighbors.KNeighborsClassifier, params: {n_neighbors: 5}}"


def _records(out: Path) -> list[dict]:
    lines = [ln for part in sorted(out.rglob("records/part-*.jsonl")) for ln in part.read_text().splitlines()]
    return [json.loads(ln) for ln in lines if ln.strip()]


def _run(tmp_path: Path, methods: str, *extra: str):
    (tmp_path / "spec.yaml").write_text(SPEC.format(methods=methods))
    return CliRunner().invoke(app, ["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"),
                                    "--no-progress", *extra])


def test_resolver_takes_keys_and_dotted_paths() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    assert resolve_estimator("svm") is METHODS["svm"]
    assert resolve_estimator("lkm.methods.svm.SVMClassifier") is METHODS["svm"]
    assert resolve_estimator("sklearn.neighbors.KNeighborsClassifier") is KNeighborsClassifier
    assert "n_neighbors" in estimator_param_names(KNeighborsClassifier)


def test_cache_is_passed_only_to_estimators_that_accept_it() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    cache = DistanceCache()
    assert cache_kwargs(METHODS["pl"](), "fit", cache) == {"cache": cache}
    assert cache_kwargs(METHODS["svm"](), "predict", cache) == {"cache": cache}
    assert cache_kwargs(KNeighborsClassifier(), "fit", cache) == {}
    assert cache_kwargs(KNeighborsClassifier(), "predict", cache) == {}
    assert cache_kwargs(METHODS["pl"](), "fit", None) == {}


def test_dotted_path_estimator_runs_end_to_end(tmp_path: Path) -> None:
    methods = "\n".join([
        KNN,
        "  - {name: RF, estimator: sklearn.ensemble.RandomForestClassifier, params: {n_estimators: 5}}",
        "  - {name: SVM, estimator: svm, params: {sigma: 1.0}}",
    ])
    res = _run(tmp_path, methods)
    assert res.exit_code == 0, res.output
    records = _records(tmp_path / "out")
    assert len(records) == 2 * 3 * 3 and all(r["status"] == "ok" for r in records)
    knn = [r for r in records if r["method"] == "kNN"]
    assert {r["estimator"] for r in knn} == {"sklearn.neighbors.KNeighborsClassifier"}
    assert min(r["accuracy"] for r in knn) > 0.8
    # RandomForest has random_state: the protocol's seed is given to it, as to lkm's estimators
    assert {r["params"]["random_state"] for r in records if r["method"] == "RF"} == {0}


def test_tuning_a_dotted_path_estimator(tmp_path: Path) -> None:
    from sklearn.datasets import load_iris
    from sklearn.neighbors import KNeighborsClassifier

    X, y = load_iris(return_X_y=True)
    est, info = fit_tuned(KNeighborsClassifier(), {"grid": {"n_neighbors": [1, 7, 15]}, "cv": 3, "seed": 0}, X, y)
    assert info["tuned_params"]["n_neighbors"] in (1, 7, 15) and info["grid_size"] == 3
    assert est.n_neighbors == info["tuned_params"]["n_neighbors"]
    methods = ("  - {name: kNN, estimator: sklearn.neighbors.KNeighborsClassifier,"
               " tune: {grid: {n_neighbors: [1, 7]}, cv: 3, seed: 0}}")
    res = _run(tmp_path, methods)
    assert res.exit_code == 0, res.output
    records = _records(tmp_path / "out")
    assert records and all(r["status"] == "ok" and r["info"]["tuned_params"]["n_neighbors"] in (1, 7) for r in records)


@pytest.mark.parametrize(("estimator", "message"), [
    ("sklearn.neighbors.KNeighborsClasifier", "has no 'KNeighborsClasifier' (did you mean 'KNeighborsClassifier'?)"),
    ("sklearn.neigbors.KNeighborsClassifier", "cannot import module 'sklearn.neigbors'"),
    ("svn", "unknown estimator 'svn' (did you mean 'svm'?)"),
    ("npps", "is a sampler"),
    ("sklearn.preprocessing.StandardScaler", "is not a scikit-learn classifier: it has no predict"),
    ("sklearn.linear_model.Ridge", "is a regressor, not a classifier"),
    ("numpy.pi", "is a float, not a class"),
])
def test_bad_estimator_is_one_line_naming_file_and_key(tmp_path: Path, estimator: str, message: str) -> None:
    res = _run(tmp_path, f"  - {{name: M, estimator: {estimator}}}", "--dry-run")
    assert res.exit_code == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"error: {tmp_path / 'spec.yaml'}: methods[0].estimator: ")
    assert message in lines[0]


def test_parameters_of_a_dotted_estimator_are_checked(tmp_path: Path) -> None:
    bad_name = KNN.replace("n_neighbors: 5", "n_neighbours: 5")
    res = _run(tmp_path, bad_name, "--dry-run")
    assert res.exit_code == 2
    assert "methods[0].params.n_neighbours: 'sklearn.neighbors.KNeighborsClassifier' has no parameter " \
           "'n_neighbours' (did you mean 'n_neighbors'?)" in res.stderr
    # scikit-learn's own _parameter_constraints reject a bad value before any fit
    res = _run(tmp_path, KNN.replace("n_neighbors: 5", "n_neighbors: 0"), "--dry-run")
    assert res.exit_code == 2
    assert "methods[0] (kNN).params.n_neighbors = 0: The 'n_neighbors' parameter of KNeighborsClassifier" in res.stderr


USER_MODULE = '''
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class NearestMean(ClassifierMixin, BaseEstimator):
    """Nearest class mean; takes no cache."""

    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == c].mean(axis=0) * (1 - self.shrink) for c in self.classes_])
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)
        return self.classes_[d.argmin(axis=1)]
'''


def test_users_own_module_runs_when_importable_and_the_spec_folder_is_not_on_sys_path(tmp_path: Path) -> None:
    """docs/specs.md: a dotted path into the user's module works when the module is
    importable (installed or on PYTHONPATH); the spec's folder is not added to sys.path."""
    package = tmp_path / "code" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "mymod.py").write_text(USER_MODULE)
    spec_dir = tmp_path / "code"  # the spec sits next to the package: still not importable
    (spec_dir / "spec.yaml").write_text(SPEC.format(
        methods="  - {name: NM, estimator: mypkg.mymod.NearestMean, params: {shrink: 0.0}}"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-m", "lkm.cli", "run", str(spec_dir / "spec.yaml"), "--out", str(tmp_path / "out"),
               "--no-progress"]
    refused = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=CEILING)
    assert refused.returncode == 2
    assert "methods[0].estimator: estimator 'mypkg.mymod.NearestMean': cannot import module 'mypkg.mymod'" in refused.stderr
    ran = subprocess.run(command, env={**env, "PYTHONPATH": str(spec_dir)}, cwd=tmp_path, capture_output=True,
                         text=True, timeout=CEILING)
    assert ran.returncode == 0, ran.stderr
    records = _records(tmp_path / "out")
    assert len(records) == 2 * 3 and all(r["status"] == "ok" for r in records)
    assert np.mean([r["accuracy"] for r in records]) > 0.7


def test_spec_api_gives_the_same_error(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(methods="  - {name: M, estimator: sklearn.svm.SVR}"))
    with pytest.raises(SpecError, match=r"spec.yaml: methods\[0\].estimator: estimator 'sklearn.svm.SVR' is a regressor"):
        load_spec(path)
