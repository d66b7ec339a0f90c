"""Studies (lkm.studies) and the kNN-invariance study of Shin & Cho (NPPS), Sec. 3."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lkm.cli import app
from lkm.engine.store import RunStore
from lkm.errors import SpecError
from lkm.numerics.kernels import polynomial_kernel, squared_euclidean
from lkm.papers import packaged_specs
from lkm.report.aggregation import aggregate
from lkm.spec import spec_from_dict
from lkm.studies import STUDIES
from lkm.studies.invariance import feature_sq_distances, knn_invariance

runner = CliRunner()


def fractions(rows, key="fraction_same"):
    return [r[key] for r in rows]


# -- the study itself --------------------------------------------------------------
def test_papers_counter_example_gives_feature_distances_11_and_8():
    X = np.array([[1.0], [2.0], [-1.0]])  # x, y1, y2
    D = squared_euclidean(X)
    F = feature_sq_distances(polynomial_kernel(X, degree=2, coef0=1.0))
    assert D[0, 1] < D[0, 2]  # y1 is closer to x in input space ...
    assert F[0, 1] == pytest.approx(11.0) and F[0, 2] == pytest.approx(8.0)  # ... y2 in feature space
    # So x's nearest neighbour changes: kNN invariance fails for k = 1 on raw data.
    rows = knn_invariance(X, None, kernel="poly", degree=2, coef0=1.0, k_max=1)
    assert rows[0]["fraction_same"] < 1.0 and rows[0]["fraction_same_strict"] < 1.0


@pytest.mark.parametrize("sigma", [0.5, 2.0, "median"])
def test_rbf_kernel_keeps_every_knn_set(sigma):
    X = np.random.default_rng(0).normal(size=(300, 6))
    rows = knn_invariance(X, None, kernel="rbf", sigma=sigma, k_max=10)
    assert [r["k"] for r in rows] == list(range(1, 11))
    assert fractions(rows) == [1.0] * 10
    assert fractions(rows, "fraction_same_strict") == [1.0] * 10


@pytest.mark.parametrize("degree", [2, 3])
def test_polynomial_kernel_on_unit_norm_data_keeps_every_knn_set(degree):
    X = np.random.default_rng(1).normal(size=(300, 5)) * 4 + 2
    rows = knn_invariance(X, None, kernel="poly", degree=degree, coef0=1.0, normalize=True)
    assert fractions(rows) == [1.0] * 10
    assert all(r["n_patterns"] == 300 for r in rows)


def test_polynomial_kernel_on_raw_data_can_change_neighbours():
    X = np.random.default_rng(2).normal(size=(300, 5)) * 3 + 1
    rows = knn_invariance(X, None, kernel="poly", degree=2, coef0=1.0)
    assert max(fractions(rows)) < 1.0
    assert rows[-1]["mean_overlap"] < 1.0


def test_duplicate_rows_and_integer_ties_are_not_counted_as_misses():
    # Integer data with many duplicate rows (like breast-cancer-wisconsin): exact ties in
    # input distances, near-ties after unit normalization.
    rng = np.random.default_rng(3)
    base = rng.integers(1, 5, size=(80, 4)).astype(float)
    X = np.vstack([base, base[:40], base[:20]])
    for params in ({"kernel": "rbf", "sigma": 2.0}, {"kernel": "poly", "degree": 3, "normalize": True}):
        rows = knn_invariance(X, None, **params)
        assert fractions(rows) == [1.0] * 10, params
        assert max(r["fraction_tied_input"] for r in rows) > 0.5  # the case really has ties


def test_subsampling_is_seeded_and_bounded():
    X = np.random.default_rng(4).normal(size=(500, 3))
    a = knn_invariance(X, None, kernel="poly", max_patterns=120, random_state=7, k_max=3)
    b = knn_invariance(X, None, kernel="poly", max_patterns=120, random_state=7, k_max=3)
    assert a == b and a[0]["n_patterns"] == 120 and a[0]["n_rows"] == 500
    assert "knn_invariance" in STUDIES


# -- specs ------------------------------------------------------------------------------
def spec_data(**over):
    data = {
        "name": "inv",
        "datasets": ["moons"],
        "preprocessing": "none",
        "studies": [
            {"name": "rbf", "study": "knn_invariance", "params": {"kernel": "rbf", "k_max": 5}, "sweep": {"sigma": [0.5, 1]}},
            {"name": "poly-raw", "study": "knn_invariance", "params": {"kernel": "poly", "degree": 2, "k_max": 5}},
        ],
    }
    data.update(over)
    return data


def test_studies_only_spec_gets_the_studies_outputs():
    spec = spec_from_dict(spec_data())
    assert spec.methods == [] and spec.outputs.tables == ["knn_invariance"] and spec.outputs.figures == ["knn_invariance"]
    assert [p["sigma"] for p in spec.study_grid(spec.studies[0])] == [0.5, 1]


@pytest.mark.parametrize(
    "over, pattern",
    [
        ({"studies": [{"name": "a", "study": "knn_invarianse"}]},
         r"studies\[0\]\.study: unknown study 'knn_invarianse' \(did you mean 'knn_invariance'\?\)"),
        ({"studies": [{"name": "a", "study": "knn_invariance", "params": {"sigam": 1}}]},
         r"studies\[0\]\.params\.sigam: study 'knn_invariance' has no parameter 'sigam' \(did you mean 'sigma'\?\)"),
        ({"studies": [{"name": "a", "study": "knn_invariance", "sweep": {"k_maxx": [3]}}]},
         r"studies\[0\]\.sweep\.k_maxx: .*did you mean 'k_max'"),
        ({"studies": [{"name": "a", "study": "knn_invariance", "params": {"kernel": "linear"}}]},
         r"studies\[0\] \(a\)\.params\.kernel = 'linear': expected one of rbf, poly"),
        ({"studies": [{"name": "a", "study": "knn_invariance", "sweep": {"sigma": [1, -1]}}]},
         r"studies\[0\] \(a\)\.params\.sigma = -1"),
        ({"studies": [{"name": "a", "study": "knn_invariance", "param": {}}]}, r"studies\[0\]\.param: unknown key \(did you mean 'params'\?\)"),
        ({"studies": []}, r"methods: a spec needs at least one method \(or a `studies:` list\)"),
        ({"outputs": {"tables": ["summary"]}}, r"outputs\.tables\[0\]: 'summary' reads classifier accuracy"),
        ({"sweep": {"sigma": [1]}}, r"sweep\.sigma: the top-level sweep applies to methods only"),
    ],
)
def test_study_spec_errors_are_one_line_naming_the_key(over, pattern):
    with pytest.raises(SpecError, match=pattern) as info:
        spec_from_dict(spec_data(**over), "s.yaml")
    msg = str(info.value)
    assert msg.startswith("s.yaml: ") and "\n" not in msg


# -- end to end through the CLI ------------------------------------------------------------
def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_studies_only_spec_runs_end_to_end_and_resumes(tmp_path):
    spec_file = tmp_path / "inv.yaml"
    spec_file.write_text(yaml.safe_dump(spec_data()))
    out = tmp_path / "run"
    res = invoke("run", str(spec_file), "--out", str(out), "--dry-run")
    assert res.exit_code == 0, res.output
    assert "rbf (study)" in res.output and "3 fits in all" in res.output and not out.exists()

    res = invoke("run", str(spec_file), "--out", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    for f in ("tables/knn_invariance.md", "tables/knn_invariance.csv", "tables/knn_invariance_rows.csv",
              "figures/knn_invariance.png"):  # PNG only by default
        assert (out / f).is_file(), f
    recs = list(RunStore(out).iter_records())
    assert len(recs) == 3 and {r["kind"] for r in recs} == {"study"} and {r["status"] for r in recs} == {"ok"}
    assert all(len(r["rows"]) == 5 and r["seconds"] >= 0 for r in recs)
    table = pd.read_csv(out / "tables" / "knn_invariance.csv")
    assert len(table) == 3 and (table.loc[table["study"].str.startswith("rbf"), "k=1"] == 100).all()
    assert set(json.loads((out / "plan.json").read_text())["task_ids"]) == {r["task_id"] for r in recs}

    res = invoke("run", str(spec_file), "--out", str(out), "--no-progress")  # second run: nothing to compute
    assert res.exit_code == 0, res.output
    assert "nothing new to fit" in res.output
    assert len(list(RunStore(out).iter_records())) == 3

    (out / "tables" / "knn_invariance.md").unlink()
    res = invoke("report", str(out))
    assert res.exit_code == 0, res.output
    assert (out / "tables" / "knn_invariance.md").is_file()


def test_spec_with_methods_and_studies_keeps_accuracy_outputs_apart(tmp_path):
    data = spec_data(
        name="mixed", protocol={"kind": "kfold", "folds": 3},
        methods=[{"name": "PL", "estimator": "pl", "params": {"sigma": 1.0}}],
        studies=[{"name": "rbf", "study": "knn_invariance", "params": {"kernel": "rbf", "k_max": 3}}],
    )
    spec_file = tmp_path / "mixed.yaml"
    spec_file.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    res = invoke("run", str(spec_file), "--out", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    assert (out / "tables" / "summary.md").is_file() and (out / "tables" / "knn_invariance.md").is_file()
    df = RunStore(out).records_frame()
    assert (df["kind"] == "study").sum() == 1 and len(df) == 4
    spec = spec_from_dict(data)
    agg = aggregate(df, spec)
    assert list(agg["method"]) == ["PL"] and int(agg["splits"].iloc[0]) == 3


def test_shipped_config_validates_with_and_without_smoke():
    from lkm.spec import load_spec

    full = load_spec(packaged_specs()["npps_invariance"])
    smoke = load_spec(packaged_specs()["npps_invariance"], smoke=True)
    assert full.outputs.tables == ["knn_invariance"] and len(smoke.datasets) == 1
    assert sum(len(full.study_grid(s)) for s in full.studies) > sum(len(smoke.study_grid(s)) for s in smoke.studies)
