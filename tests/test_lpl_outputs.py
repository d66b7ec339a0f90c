"""Outputs for Tsuji et al. Fig. 3 / Fig. 4 / Table 1: learning curves, slopes, boundaries,
and smoke runs of configs/lpl_synthetic.yaml and configs/lpl_scaling.yaml."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from lkm.data import load_dataset
from lkm.engine.runner import build_plan, execute
from lkm.engine.store import RunStore
from lkm.papers.lpl.scaling import MIN_SECONDS, fitted_slope
from lkm.report import build_report
from lkm.spec import spec_from_dict
from lkm.spec.protocols import LearningCurveProtocol

REPO = Path(__file__).resolve().parents[1]


# -- learning-curve protocol ------------------------------------------------------------
def test_learning_curve_subsets_are_nested_against_one_test_set():
    ds = load_dataset("lpl-synthetic", n_samples=300)
    proto = LearningCurveProtocol(sizes=[20, 50, 120], test_size=60, repeats=2, seed=0)
    splits = proto.splits(ds)
    assert [s.id for s in splits] == ["n20-r0", "n50-r0", "n120-r0", "n20-r1", "n50-r1", "n120-r1"]
    tests = {}
    for r in (0, 1):
        curve = [s for s in splits if s.repeat == r]
        assert [len(s.train) for s in curve] == [20, 50, 120]
        for small, large in zip(curve, curve[1:], strict=False):
            assert set(small.train) < set(large.train)  # nested
        for s in curve:
            assert np.array_equal(s.test, curve[0].test)  # one fixed test set per repeat
            assert len(s.test) == 60 and not set(s.test) & set(s.train)
        assert sorted(np.unique(ds.y[curve[0].test], return_counts=True)[1]) == [30, 30]  # stratified
        tests[r] = curve[0].test
    assert not np.array_equal(tests[0], tests[1])  # repeats draw other test sets
    assert [s.id for s in proto.splits(ds)] == [s.id for s in splits]
    assert all(np.array_equal(a.train, b.train) for a, b in zip(proto.splits(ds), splits, strict=True))


# -- slope fitting ------------------------------------------------------------------------
def test_fitted_slope_recovers_a_known_exponent():
    n = np.array([250, 500, 1000, 2000, 4000])
    assert fitted_slope(n, 3e-7 * n**2.0) == pytest.approx(2.0)
    assert fitted_slope(n, 2e-5 * n**1.0) == pytest.approx(1.0)
    noisy = 1e-6 * n**1.5 * np.exp(np.random.default_rng(0).normal(scale=0.05, size=n.size))
    assert fitted_slope(n, noisy) == pytest.approx(1.5, abs=0.1)


def test_fitted_slope_leaves_out_times_below_the_noise_floor():
    n = np.array([10, 100, 1000, 10000])
    seconds = 1e-9 * n.astype(float) ** 2  # 1e-7, 1e-5, 1e-3, 0.1
    seconds[1] = 9e-5  # timer noise below MIN_SECONDS: must not bend the fit
    assert seconds[1] < MIN_SECONDS
    assert fitted_slope(n, seconds) == pytest.approx(2.0)
    assert math.isnan(fitted_slope(n, np.full(4, 1e-6)))  # nothing measurable
    assert math.isnan(fitted_slope([100, 100], [1.0, 2.0]))  # one distinct size


# -- boundary agreement -------------------------------------------------------------------
def test_boundary_agreement_on_a_tiny_run(tmp_path):
    spec = spec_from_dict({
        "name": "tiny-boundary",
        "datasets": [{"name": "lpl-synthetic", "params": {"n_samples": 60}}],
        "preprocessing": "standardize",
        "protocol": {"kind": "kfold", "folds": 2},
        "methods": [{"name": "PL", "estimator": "pl"}, {"name": "PL-again", "estimator": "pl"},
                    {"name": "LPL", "estimator": "lpl", "params": {"k": "auto"}}],
        "sweep": {"sigma": [1.0]},
        "outputs": {"tables": ["boundary_agreement"], "figures": ["boundary"], "formats": ["png"],
                    "options": {"boundary": {"sigma": 0.8, "resolution": 30}}},
    })
    store = RunStore(tmp_path / "run")
    plan = build_plan(spec)
    with threadpool_limits(limits=1):  # see test_smoke_run_writes_every_output
        execute(plan, store)
        written = build_report(store, spec, plan.task_ids, plan.unavailable)
    assert tmp_path / "run" / "figures" / "boundary.png" in written
    t = pd.read_csv(tmp_path / "run" / "tables" / "boundary_agreement.csv")
    assert list(zip(t["method A"], t["method B"], strict=True)) == [("PL", "PL-again"), ("PL", "LPL"), ("PL-again", "LPL")]
    assert (t["grid points"] == 900).all()
    assert t["setting B"].iloc[1] == "k=auto, sigma=0.8"  # the option's sigma over the method's params
    assert t["same class % (grid)"].iloc[0] == 100.0  # the same method agrees with itself
    assert 50.0 <= t["same class % (grid)"].iloc[1] <= 100.0
    assert t["same class % (grid)"].iloc[1] == t["same class % (grid)"].iloc[2]


# -- smoke runs of the two configs --------------------------------------------------------
def _files(root: Path, tables: list[str], figures: list[str]) -> list[Path]:
    out = [root / f for f in ("results.csv", "results.parquet", "spec.yaml", "provenance.json", "plan.json")]
    out += [root / "tables" / f"{t}.{ext}" for t in tables for ext in ("md", "csv", "tex")]
    out += [root / "figures" / f"{f}.{ext}" for f in figures for ext in ("png", "pdf")]
    return out


@pytest.mark.parametrize(
    "config,tables,figures",
    [
        ("lpl_synthetic", ["summary", "sweep", "boundary_agreement"], ["sweep_sigma", "best", "boundary"]),
        ("lpl_scaling", ["scaling", "scaling_sizes", "timing"], ["time_vs_size"]),
    ],
)
def test_smoke_run_writes_every_output(smoke_results, config, tables, figures):
    # the config's smoke run inside the session's `lkm reproduce lpl --smoke`
    # (tests/conftest.smoke_results: made once per session and shared). Read only.
    out = smoke_results("lpl") / f"{config}-smoke"
    missing = [str(p.relative_to(out)) for p in _files(out, tables, figures) if not p.is_file()]
    assert not missing
    if config == "lpl_scaling":
        s = pd.read_csv(out / "tables" / "scaling.csv")
        assert set(s["method"]) == {"PL", "LPL", "SVM"} and set(s["phase"]) == {"training", "testing"}
        assert s.loc[(s["method"] == "PL") & (s["phase"] == "training"), "Table 1"].item() == "O(l² p)"
        sizes = pd.read_csv(out / "tables" / "scaling_sizes.csv")
        assert sorted(set(sizes["n_train"])) == [100, 200, 400]
