"""The report's fast aggregation routes give what the plain pandas routes give: the
accuracy interval of every setting (:func:`lkm.report.aggregation.aggregate`) as
:func:`lkm.numerics.stats.rate_interval` called per group, and the selected settings
(:func:`lkm.report.aggregation.select_best`) as a per-group ``sort_values``, on records
with ties, NaNs, single splits and all-equal rates."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from tiny_runs import TINY

from lkm.numerics.stats import rate_interval
from lkm.report.aggregation import aggregate, resampled_splits, select_best
from lkm.spec import spec_from_dict

SEMISUPERVISED = {"kind": "semisupervised", "pool": 120, "labeled_per_class": 2, "repeats": 2, "seed": 0}


def _spec(metric: str = "accuracy", over: list[str] | None = None):
    """Two methods sweeping sigma × C on a resampled (moons) and a semi-supervised (iris) data set."""
    return spec_from_dict({**TINY, "methods": [{"name": "SVM", "estimator": "svm"}, {"name": "SVM2", "estimator": "svm"}],
                           "datasets": ["moons", {"name": "sklearn-iris", "protocol": SEMISUPERVISED}],
                           "sweep": {"sigma": [0.5, 1.0, 2.0], "C": [0.1, 1.0]},
                           "selection": {"metric": metric, **({"over": over} if over else {})}})


def _records(seed: int) -> pd.DataFrame:
    """Records in shuffled order over every setting (and one off the grid): rates drawn from
    few values (ties), some NaN, some settings with one split or with all splits equal."""
    rng = np.random.default_rng(seed)
    rates = [0.8, 0.9, 0.9, 0.95, np.nan]
    rows = []
    for dataset in ("moons", "sklearn-iris"):
        for method in ("SVM", "SVM2"):
            settings = [{"sigma": s, "C": c} for s in (0.5, 1.0, 2.0) for c in (0.1, 1.0)] + [{"sigma": 3.0, "C": 0.1}]
            for params in settings:
                shape = rng.integers(4)  # 0: one split, 1: all splits equal, else: drawn
                splits = 1 if shape == 0 else int(rng.integers(2, 6))
                same = rng.choice(rates[:4])
                for split in range(splits):
                    acc = same if shape == 1 else rng.choice(rates)
                    bal = rng.choice(rates) if method == "SVM" else np.nan  # SVM2: no balanced accuracy
                    rows.append({"task_id": f"{dataset}-{method}-{json.dumps(params)}-{split}", "dataset": dataset,
                                 "method": method, "params": params, "status": "ok", "accuracy": acc,
                                 "balanced_accuracy": bal, "fit_seconds": 0.01, "predict_seconds": 0.01,
                                 "n_train": int(rng.integers(50, 200)), "n_test": int(rng.integers(10, 60)),
                                 "split": split})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _select_by_sorting(agg: pd.DataFrame, spec) -> pd.DataFrame:
    """The reference: each group's rows sorted by (metric desc, its std asc, grid order asc)."""
    rows = []
    for (_ds, method), g in agg.groupby(["dataset", "method"], sort=False):
        swept = spec.swept_params(next(m for m in spec.methods if m.name == method))
        over = [p for p in (spec.selection.over or swept) if p in swept]
        fixed = [p for p in swept if p not in over]
        keys = g["params"].map(lambda p, fixed=fixed: json.dumps({k: p.get(k) for k in fixed}, default=str))
        for _, sub in g.groupby(keys, sort=False):
            by = spec.selection.metric if sub[spec.selection.metric].notna().any() else "accuracy"
            best = sub.sort_values([by, f"{by}_std", "_order"], ascending=[False, True, True]).iloc[0].copy()
            best["selected_by"] = by
            rows.append(best)
    return pd.DataFrame(rows).reset_index(drop=True)


@pytest.mark.parametrize("seed", range(6))
def test_aggregate_intervals_equal_rate_interval_called_per_setting(seed: int) -> None:
    spec = _spec()
    records = _records(seed)
    agg = aggregate(records, spec)
    expected = {}
    for (ds, method, setting), g in records.assign(
            setting=records["params"].map(lambda p: json.dumps(p, sort_keys=True))).groupby(
            ["dataset", "method", "setting"]):
        expected[(ds, method, setting)] = rate_interval(g["accuracy"], g["n_test"], g["n_train"],
                                                        resampled=resampled_splits(spec, ds))
    got = {(r.dataset, r.method, r.setting): (r.accuracy_ci_low, r.accuracy_ci_high) for r in agg.itertuples()}
    assert got.keys() == expected.keys()
    for key, bounds in expected.items():
        np.testing.assert_array_equal(got[key], bounds, err_msg=str(key))  # exact; NaN equals NaN


@pytest.mark.parametrize("over", [None, ["sigma"], ["C"]])
@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy"])
@pytest.mark.parametrize("seed", range(4))
def test_select_best_equals_sorting_each_group(seed: int, metric: str, over: list[str] | None) -> None:
    spec = _spec(metric, over)
    agg = aggregate(_records(seed), spec)
    best = select_best(agg, spec)
    pd.testing.assert_frame_equal(best, _select_by_sorting(agg, spec), check_exact=True)
    assert list(best.dtypes) == list(_select_by_sorting(agg, spec).dtypes)


def test_select_best_breaks_a_full_tie_by_row_order_and_puts_nan_last() -> None:
    spec = _spec()
    agg = aggregate(_records(0), spec)
    agg = agg[(agg["dataset"] == "moons") & (agg["method"] == "SVM")].reset_index(drop=True)
    agg[["accuracy", "accuracy_std", "_order"]] = [[np.nan, 0.0, 0], [0.9, np.nan, 0], [0.9, 0.01, 1], [0.9, 0.01, 1],
                                                   [0.9, 0.01, 0], [0.9, 0.01, 0], [0.5, 0.0, 0]][:len(agg)]
    best = select_best(agg, spec)
    assert len(best) == 1 and best["setting"].iloc[0] == agg["setting"].iloc[4]  # first of the full tie
    pd.testing.assert_frame_equal(best, _select_by_sorting(agg, spec), check_exact=True)


def _completeness_by_masks(spec, records: pd.DataFrame, expected: dict[str, int]) -> dict[tuple[str, str], str]:
    """The reference: each (data set, method) cell's records picked by boolean masks."""
    out = {}
    for d in spec.datasets:
        for m in spec.methods:
            sub = records[(records["dataset"] == d.id) & (records["method"] == m.name)]
            ok, failed, n = sub[sub["status"] == "ok"], sub[sub["status"] != "ok"], expected.get(d.id, 0)
            if not failed.empty:
                error = str(failed["error"].dropna().iloc[0]) if failed["error"].notna().any() else "error"
                out[(d.id, m.name)] = f"{len(failed)} of {n} folds failed: {error.splitlines()[0][:160]}"
            elif ok["split"].nunique() < n or n == 0:
                out[(d.id, m.name)] = f"{ok['split'].nunique()} of {n} folds recorded"
    return out


def test_benchmark_completeness_names_failed_and_unrecorded_cells_as_masks_do() -> None:
    from lkm.report.ranking import _completeness

    spec = _spec()
    records = _records(1).assign(error=None)
    records.loc[records.index[:3], ["status", "error"]] = [["error", "first\nline"], ["error", None], ["error", "third"]]
    records = records[~((records["dataset"] == "sklearn-iris") & (records["method"] == "SVM2"))]  # a cell with no records
    records = records[~((records["dataset"] == "moons") & (records["method"] == "SVM") & (records["split"] > 1))]
    for planned in ({}, {"moons": 5}, {"moons": 2, "sklearn-iris": 9}):
        expected = records.groupby("dataset")["split"].nunique().to_dict()
        expected = {d: max(int(expected.get(d, 0)), planned.get(d, 0)) for d in set(expected) | set(planned)}
        got = _completeness(spec, records, planned)
        assert got == _completeness_by_masks(spec, records, expected) and got


def test_spread_over_splits_equals_pandas_std_to_the_last_bit() -> None:
    from lkm.report.aggregation import _std

    rng = np.random.default_rng(3)
    for size in [*range(12), 17, 40, 130]:
        for nan_share in (0.0, 0.3, 1.0):
            values = rng.choice([0.81, 0.9, 0.9, 1 / 3, 0.7071], size) + rng.normal(0, 1e-3, size) * (size % 2)
            values[rng.random(size) < nan_share] = np.nan
            series = pd.Series(values)
            expected = float(series.std(ddof=1)) if series.count() > 1 else (0.0 if series.count() else np.nan)
            np.testing.assert_array_equal(_std(values), expected, err_msg=f"{size}, {nan_share}")


def _failed_fits_per_group(records: pd.DataFrame) -> pd.DataFrame:
    """The reference: each (data set, method) group's error records, groups in record order."""
    rows = []
    for (ds, method), g in records.groupby(["dataset", "method"], sort=False):
        errors = g[g["status"] == "error"]
        if not errors.empty:
            first = " ".join(str(errors["error"].iloc[0]).split())
            rows.append({"dataset": ds, "method": method, "failed": len(errors), "total": len(g), "error": first})
    return pd.DataFrame(rows, columns=["dataset", "method", "failed", "total", "error"])


def test_failed_fits_count_each_groups_errors_and_keep_its_first_as_per_group_filters_do() -> None:
    from lkm.report.aggregation import failed_fits

    records = _records(2).assign(error=None)
    pd.testing.assert_frame_equal(failed_fits(records), _failed_fits_per_group(records))  # no failure
    records.loc[records.index[[5, 9, 40, 41]], "status"] = "error"
    records.loc[records.index[[9, 41]], "error"] = ["a  long\n error", "other"]  # 5 and 40: no message (None)
    pd.testing.assert_frame_equal(failed_fits(records), _failed_fits_per_group(records), check_exact=True)
