"""The benchmark's grid-edge shares (issue 42, point 3; lkm.report.tuning): per method
the tuning budget and the share of outer-fold selections at the smallest or largest
value of each tuned parameter's grid, on a tiny synthetic record set."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd

from lkm.report.tuning import (
    ANY_RANGE,
    ONE_VALUE,
    RANGE,
    TWO_VALUES,
    UNORDERED,
    edge_shares,
    grid_edge_table,
    parameter_kind,
)
from lkm.spec import TuneSpec

GRID = {"sigma": [1, 2, 4, 8, 16], "k": [3, 9], "max_features": ["sqrt", None], "fixed": [5]}
#: min edge, max edge (given as a float), two interior values; k at both ends of its
#: 2-value grid; max_features as text and None
CHOSEN = [{"sigma": 1, "k": 3, "max_features": "sqrt", "fixed": 5},
          {"sigma": 16.0, "k": 9, "max_features": None, "fixed": 5},
          {"sigma": 4, "k": 9, "max_features": "sqrt", "fixed": 5},
          {"sigma": 2, "k": 9, "max_features": None, "fixed": 5}]


def test_parameter_kinds() -> None:
    assert parameter_kind("sigma", [1, 2, 4]) == RANGE
    assert parameter_kind("k", [3, 9]) == TWO_VALUES
    assert parameter_kind("C", [1, 1.0]) == ONE_VALUE  # one value, written twice
    assert parameter_kind("max_features", ["sqrt", 0.5]) == UNORDERED
    assert parameter_kind("max_depth", [None, 3, 10]) == UNORDERED
    assert parameter_kind("shrinking", [True, False]) == UNORDERED  # booleans are not a scale
    assert parameter_kind("x0", [0, 5, 10]) == UNORDERED  # an index of a training point
    assert parameter_kind("kernel", ["rbf"]) == ONE_VALUE


def test_edge_shares_count_both_ends_of_a_range_and_only_which_end_of_two_values() -> None:
    (m,) = edge_shares({"M": GRID}, {"M": CHOSEN})
    assert (m.method, m.budget, m.fits, m.passed_over) == ("M", 5 * 2 * 2 * 1, 4, 0)
    by_name = {p.parameter: p for p in m.parameters}
    sigma, k, features, fixed = (by_name[n] for n in ("sigma", "k", "max_features", "fixed"))
    assert (sigma.kind, sigma.at_min, sigma.at_max, sigma.at_edge) == (RANGE, 1, 1, 2)
    assert (k.kind, k.at_min, k.at_max, k.at_edge) == (TWO_VALUES, 1, 3, None)
    assert (features.kind, features.at_min, features.at_max, features.at_edge) == (UNORDERED, None, None, None)
    assert fixed.kind == ONE_VALUE and fixed.at_edge is None
    assert m.any_range_at_edge == 2  # the 2-value grid puts every fit at an end: not counted
    (only_two,) = edge_shares({"HGB": {"k": [3, 9]}}, {"HGB": CHOSEN})
    assert only_two.any_range_at_edge is None  # no range parameter: no share


def test_edge_shares_of_two_range_parameters_count_a_fit_once() -> None:
    grid = {"sigma": [1, 2, 4], "C": [0.1, 1, 10]}
    chosen = [{"sigma": 1, "C": 10}, {"sigma": 2, "C": 1}, {"sigma": 4, "C": 1}, {"sigma": 2, "C": 0.1}]
    (m,) = edge_shares({"SVM": grid}, {"SVM": chosen})
    assert [(p.at_min, p.at_max) for p in m.parameters] == [(1, 1), (1, 1)]
    assert m.any_range_at_edge == 3  # the first fit has both at an edge


def test_grid_edge_table_reads_the_records_selections() -> None:
    spec = SimpleNamespace(methods=[SimpleNamespace(name="M", tune=TuneSpec.model_validate({"grid": GRID, "cv": 3})),
                                    SimpleNamespace(name="Fixed", tune=None)])
    infos = [{"tuned_params": c} for c in CHOSEN]
    infos[1] = json.dumps(infos[1])  # a record read back as text
    infos[2]["failed_settings"] = 3
    records = pd.DataFrame({
        "method": ["M"] * 6 + ["Fixed"],
        "status": ["ok"] * 4 + ["error", "ok", "ok"],
        "kind": ["fit"] * 5 + ["study", "fit"],
        "info": [*infos, {"tuned_params": {"sigma": 1}}, {"tuned_params": {"sigma": 1}}, {}],
    })
    table = grid_edge_table(spec, records)
    assert set(table["method"]) == {"M"}  # an untuned method has no grid
    rows = {r["parameter"]: r for r in table.to_dict("records")}
    assert list(rows) == [ANY_RANGE, "sigma", "k", "max_features", "fixed"]
    head = rows[ANY_RANGE]
    assert (head["settings searched"], head["outer fits"], head["fits with settings passed over"]) == (20, 4, 1)
    assert head["% at an edge"] == "50.0"
    assert (rows["sigma"]["% at the smallest"], rows["sigma"]["% at the largest"], rows["sigma"]["% at an edge"]) == \
        ("25.0", "25.0", "50.0")
    assert (rows["k"]["kind"], rows["k"]["% at the smallest"], rows["k"]["% at the largest"], rows["k"]["% at an edge"]) == \
        (TWO_VALUES, "25.0", "75.0", "–")
    assert rows["max_features"]["kind"] == UNORDERED and rows["max_features"]["% at an edge"] == "–"
    assert rows["sigma"]["grid"] == "1, 2, 4, 8, 16"


def test_edge_shares_count_the_settings_searched_at_an_edge_a_blind_choice_would_give() -> None:
    grid = {"sigma": [1, 2, 4], "C": [0.1, 1, 10], "k": [3, 9]}
    searched = [{"sigma": 2, "C": 1, "k": 3}, {"sigma": 1, "C": 1, "k": 9}, {"sigma": 2, "C": 10, "k": 3},
                {"sigma": 4, "C": 0.1, "k": 9}, {"sigma": 2, "C": 1, "k": 9}]
    (m,) = edge_shares({"SVM": grid}, {"SVM": searched[:2]}, settings={"SVM": searched})
    assert m.settings_at_edge == 3  # the 2-value k never counts; the last setting is at both
    assert m.any_range_at_edge == 1
    (unknown,) = edge_shares({"SVM": grid}, {"SVM": searched[:2]})
    assert unknown.settings_at_edge is None


def test_a_latin_hypercube_puts_two_settings_per_range_at_an_edge() -> None:
    tune = TuneSpec.model_validate({"space": {"sigma": {"log": [0.25, 256]}, "C": {"log": [0.01, 1e6]}},
                                    "candidates": 12, "cv": 3})
    spec = SimpleNamespace(methods=[SimpleNamespace(name="SVM", tune=tune)])
    records = pd.DataFrame({"method": ["SVM"], "status": ["ok"], "info": [{"tuned_params": tune.settings()[5]}]})
    head = grid_edge_table(spec, records).iloc[0]
    assert head["parameter"] == ANY_RANGE
    edge_settings = float(head["% of settings searched at an edge"])
    assert edge_settings in (100 * 3 / 12, 100 * 4 / 12)  # 2 per range, shared by at most one
