"""Equal tuning budgets (issue 42, point 3): settings drawn from ranges (``tune.space`` with
``candidates``), successive halving in the inner CV, the edge shares of drawn candidates,
and the same budget for `lkm compare`'s new method."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lkm.engine.runner import HALVING_MIN_ROWS_PER_CLASS, fit_tuned
from lkm.errors import LkmError, ParameterClipped, SpecError
from lkm.report.compare import TuningBudget, check_budget, method_entry
from lkm.report.tuning import grid_edge_table
from lkm.spec import TuneSpec, load_spec, spec_from_dict
from lkm.spec.search_space import draw_candidates, parse_range

SPACE = {"sigma": {"log": [0.25, 256.0]}, "C": {"log": [0.01, 10000.0]}}


def test_drawn_candidates_are_the_same_for_the_same_seed_and_sorted_by_value() -> None:
    a = draw_candidates(SPACE, 16, seed=0)
    assert a == draw_candidates(SPACE, 16, seed=0)
    assert a != draw_candidates(SPACE, 16, seed=1)
    assert len(a) == 16 and len({(s["C"], s["sigma"]) for s in a}) == 16
    assert [s["C"] for s in a] == sorted(s["C"] for s in a)  # parameters in name order: C first


@pytest.mark.parametrize("name", ["sigma", "C"])
def test_a_latin_hypercube_puts_one_candidate_in_each_stratum_of_every_log_range(name: str) -> None:
    lo, hi = SPACE[name]["log"]
    values = [s[name] for s in draw_candidates(SPACE, 16, seed=3)]
    strata = sorted(int(16 * (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) + 1e-9) for v in values)
    # rounding to 3 significant digits may move a value across a stratum's border, never further
    assert all(abs(s - i) <= 1 for i, s in enumerate(strata))
    assert min(strata) == 0 and max(strata) == 15  # the range is covered end to end


def test_integer_ranges_draw_distinct_integers_within_the_bounds() -> None:
    values = [s["k"] for s in draw_candidates({"k": {"logint": [1, 64]}}, 16, seed=0)]
    assert len(set(values)) == 16 and all(isinstance(v, int) and 1 <= v <= 64 for v in values)


def test_a_space_too_small_for_its_budget_is_a_one_line_spec_error() -> None:
    with pytest.raises(SpecError, match=r"tune.*only 7 distinct settings, fewer than candidates = 16"):
        spec_from_dict({"name": "s", "datasets": ["iris"], "methods": [
            {"name": "L", "estimator": "ldcv", "tune": {"space": {"n_neighbors": {"logint": [2, 8]}}, "candidates": 16}}]})


@pytest.mark.parametrize(("value", "message"), [
    ({"log": [0, 1]}, "0 < low < high"),
    ({"log": [2, 1]}, "0 < low < high"),
    ({"logint": [1.5, 4]}, "integers"),
    ({"uniform": [1, 2]}, "expected one of"),
    ({"choice": [1]}, "two distinct"),
])
def test_a_bad_range_is_refused_naming_the_parameter(value: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_range("C", value)
    assert str(info.value).startswith("C")


def test_tune_takes_a_grid_or_a_space_with_candidates_not_both() -> None:
    with pytest.raises(ValueError, match="either grid"):
        TuneSpec.model_validate({"grid": {"C": [1, 2]}, "space": SPACE, "candidates": 4})
    with pytest.raises(ValueError, match="needs candidates"):
        TuneSpec.model_validate({"space": SPACE})
    with pytest.raises(ValueError, match="candidates goes with space"):
        TuneSpec.model_validate({"grid": {"C": [1, 2]}, "candidates": 4})


def test_a_grid_specs_task_payload_is_unchanged_by_the_new_fields() -> None:
    """Task ids hash the tune block: a grid spec's must stay what it was (shipped records)."""
    tune = TuneSpec.model_validate({"grid": {"sigma": [1, 2], "C": [1, 10]}, "cv": 3, "seed": 0})
    assert tune.model_dump(exclude_none=True) == {"grid": {"sigma": [1, 2], "C": [1, 10]}, "cv": 3, "seed": 0}


def _blobs(n_per_class: int, n_classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(3.0 * c, 1.5, size=(n_per_class, 4)) for c in range(n_classes)])
    return X, np.repeat(np.arange(n_classes), n_per_class)


def test_halving_searches_every_setting_on_a_stratified_part_then_the_best_quarter_on_whole_folds() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    X, y = _blobs(120)
    tune = {"space": {"n_neighbors": {"logint": [1, 40]}}, "candidates": 16, "halving": 4, "cv": 3, "seed": 0}
    est, info = fit_tuned(KNeighborsClassifier(), tune, X, y)
    assert info["halving"] == {"factor": 4, "rows": [60, 240], "settings": [16, 4]}
    assert info["grid_size"] == 16
    assert est.n_neighbors in [s["n_neighbors"] for s in TuneSpec.model_validate(tune).settings()]


def test_halving_is_skipped_when_a_quarter_would_hold_too_few_rows_per_class() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    X, y = _blobs(HALVING_MIN_ROWS_PER_CLASS * 4 // 2)  # a quarter of an inner training fold: < 10 per class
    tune = {"space": {"n_neighbors": {"logint": [1, 10]}}, "candidates": 6, "halving": 4, "cv": 3, "seed": 0}
    _, info = fit_tuned(KNeighborsClassifier(), tune, X, y)
    assert "halving" not in info and info["grid_size"] == 6


def test_a_setting_that_fails_on_the_small_part_is_searched_again_on_whole_folds() -> None:
    """kNN with more neighbours than the quarter has rows fails there; on whole folds it runs
    and, on this data, is the best: halving must not have dropped it."""
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 2))
    y = (X[:, 0] + 0.9 * rng.normal(size=240) > 0).astype(int)  # noisy: large k wins
    tune = {"grid": {"n_neighbors": [1, 2, 100]}, "halving": 4, "cv": 3, "seed": 0}
    est, info = fit_tuned(KNeighborsClassifier(), tune, X, y)
    assert info["halving"]["rows"][0] < 100 <= info["halving"]["rows"][1]
    assert info["halving"]["settings"] == [3, 2]  # the best of the scored two, and the failed one
    assert est.n_neighbors == 100


def test_a_search_over_a_wide_range_is_silent_about_clipped_settings_a_lone_fit_is_not() -> None:
    """LPL's k drawn above a fold's rows is clipped; in a search that is expected and the
    log stays clean (2,470 benchmark fits would print it thousands of times), while a lone
    fit still warns and its ``info_`` records the clip."""
    import warnings

    from lkm.methods import LocalizedProjectionLearning as LPL

    X, y = _blobs(60)
    tune = {"grid": {"k": [3, 500]}, "cv": 3, "seed": 0}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit_tuned(LPL(sigma=1.0), tune, X, y)
    assert not [w for w in caught if issubclass(w.category, ParameterClipped)]
    with pytest.warns(ParameterClipped, match="k=500 > 180 training rows"):
        est = LPL(sigma=1.0, k=500).fit(X, y)
    assert est.info_["k_clipped"] and est.info_["k"] == 180


def test_the_choice_does_not_depend_on_the_order_of_the_training_rows() -> None:
    from sklearn.svm import SVC

    X, y = _blobs(90)
    tune = {"space": {"C": {"log": [0.01, 100.0]}, "gamma": {"log": [0.001, 10.0]}}, "candidates": 8,
            "halving": 2, "cv": 3, "seed": 0}
    _, a = fit_tuned(SVC(), tune, X, y)
    order = np.random.default_rng(0).permutation(len(y))
    _, b = fit_tuned(SVC(), tune, X[order], y[order])
    # the folds are drawn from the rows in their order, so the scores may move; the choice is
    # stable here because the data separate cleanly: a check that nothing else is order-bound
    assert a["tuned_params"] == b["tuned_params"]


def _records(method: str, chosen: list[dict]) -> pd.DataFrame:
    return pd.DataFrame({"status": "ok", "method": method, "dataset": "d", "info": [{"tuned_params": c} for c in chosen]})


def test_edge_shares_of_a_drawn_space_count_the_smallest_and_largest_candidate() -> None:
    spec = spec_from_dict({"name": "s", "datasets": ["iris"], "methods": [
        {"name": "M", "estimator": "svm", "tune": {"space": SPACE, "candidates": 8, "cv": 3}}]})
    settings = spec.methods[0].tune.settings()
    sigmas = sorted(s["sigma"] for s in settings)
    chosen = [settings[0], settings[-1], {"C": settings[1]["C"], "sigma": sigmas[0]}, settings[3]]
    table = grid_edge_table(spec, _records("M", chosen))
    sigma = table[table["parameter"] == "sigma"].iloc[0]
    assert sigma["grid"].startswith("log 0.25–256: 8 drawn")
    assert sigma["settings searched"] == 8
    at_min = sum(c["sigma"] == sigmas[0] for c in chosen)
    at_max = sum(c["sigma"] == sigmas[-1] for c in chosen)
    assert sigma["% at the smallest"] == f"{100 * at_min / 4:.1f}" and sigma["% at the largest"] == f"{100 * at_max / 4:.1f}"


def test_compare_gives_the_new_method_the_benchmarks_budget() -> None:
    budget = TuningBudget(16, 4)
    entry = method_entry("sklearn.svm.SVC", None, {"C": [0.1, 1, 10], "kernel": ["rbf"]}, 3, 0, budget)
    assert entry["tune"] == {"space": {"C": {"log": [0.1, 10]}}, "candidates": 16, "halving": 4, "cv": 3, "seed": 0}
    assert entry["params"] == {"kernel": "rbf"}
    knn = method_entry("sklearn.neighbors.KNeighborsClassifier", None, {"n_neighbors": [1, 64]}, 3, 0, budget)
    assert knn["tune"]["space"] == {"n_neighbors": {"logint": [1, 64]}}
    few = method_entry("x.Y", None, {"solver": ["a", "b"]}, 3, 0, budget)
    assert few["tune"] == {"grid": {"solver": ["a", "b"]}, "cv": 3, "seed": 0}


def test_compare_refuses_a_method_file_tuned_beyond_the_budget() -> None:
    budget = TuningBudget(16, 4)
    with pytest.raises(LkmError, match="more than the reference's budget of 16"):
        check_budget({"tune": {"grid": {"C": list(range(1, 9)), "g": [1, 2, 3]}}}, budget, "mine.yaml")
    with pytest.raises(LkmError, match="candidates = 50"):
        check_budget({"tune": {"space": SPACE, "candidates": 50}}, budget, "mine.yaml")
    entry = {"tune": {"space": SPACE}}
    check_budget(entry, budget, "mine.yaml")
    assert entry["tune"]["candidates"] == 16 and entry["tune"]["halving"] == 4


def test_the_benchmark_gives_every_method_the_same_budget() -> None:
    from lkm.papers import CROSS_SPEC

    spec = load_spec(CROSS_SPEC)
    budgets = {(m.tune.size, m.tune.halving, m.tune.cv) for m in spec.methods if m.tune is not None}
    assert len(budgets) == 1 and 12 <= next(iter(budgets))[0] <= 20  # one budget, in the 12-20 settings
    assert budgets == {(12, 4, 3)}
    assert all(m.tune is not None and m.tune.space is not None for m in spec.methods)
