"""Spec parsing and validation: every user mistake is one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from lkm.errors import SpecError
from lkm.papers import packaged_specs
from lkm.spec import PAPER_SIGMA_GRID, default_spec, load_spec, parse_grid, spec_from_dict

REPO = Path(__file__).resolve().parents[1]


def base(**over):
    data = {
        "name": "t",
        "datasets": ["moons"],
        "protocol": {"kind": "kfold", "folds": 3},
        "methods": [{"name": "PL", "estimator": "pl"}, {"name": "LPL", "estimator": "lpl"}],
        "sweep": {"sigma": [0.5, 1]},
    }
    data.update(over)
    return data


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    return p


def test_paper_grid_is_39_log_spaced_values_from_0_01_to_100():
    g = parse_grid(PAPER_SIGMA_GRID)
    assert len(g) == 39 and g[0] == pytest.approx(0.01) and g[-1] == pytest.approx(100)
    assert g[19] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text, expected",
    [("0.5,1,2", [0.5, 1, 2]), ([1, 2], [1, 2]), (3, [3]), ("1:100:3", [1, 10, 100])],
)
def test_grids_parse_lists_commas_and_log_ranges(text, expected):
    assert parse_grid(text) == pytest.approx(expected)


def test_grids_keep_non_numeric_values():
    assert parse_grid("auto,5,9") == ["auto", 5, 9]


def test_bad_log_grid_is_rejected():
    with pytest.raises(ValueError, match="start, stop > 0"):
        parse_grid("0:10:5")


def test_every_shipped_config_validates():
    for path in [*sorted((REPO / "configs").glob("*.yaml")), *packaged_specs().values()]:
        spec = load_spec(path)
        assert (spec.methods or spec.studies) and spec.datasets


def test_quickstart_config_matches_the_embedded_default():
    shipped = load_spec(REPO / "configs" / "quickstart.yaml")
    embedded = default_spec()
    assert [d.name for d in shipped.datasets] == [d.name for d in embedded.datasets]
    assert [m.estimator for m in shipped.methods] == [m.estimator for m in embedded.methods]


def test_method_grid_combines_fixed_params_global_and_own_sweeps():
    spec = spec_from_dict(base(methods=[{"name": "LPL", "estimator": "lpl", "params": {"k": 3}, "sweep": {"k": [3, 5]}}]))
    grid = spec.method_grid(spec.methods[0])
    assert {(p["sigma"], p["k"]) for p in grid} == {(0.5, 3), (0.5, 5), (1, 3), (1, 5)}


def test_malformed_yaml_names_file_and_line(tmp_path):
    p = write(tmp_path, "name: x\ndatasets: [moons\nmethods: []\n")
    with pytest.raises(SpecError, match=r"spec\.yaml: line \d+, column \d+: malformed YAML"):
        load_spec(p)


def test_missing_spec_file_is_one_line_error(tmp_path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "over, pattern",
    [
        ({"datasets": ["sonr"]}, r"datasets\[0\]\.name: .*did you mean 'sonar'"),
        ({"methods": [{"name": "A", "estimator": "lpll"}]}, r"methods\[0\]\.estimator: unknown estimator 'lpll' \(did you mean 'lpl'\?\)"),
        ({"methods": [{"name": "A", "estimator": "lpl", "params": {"sigam": 1}}]}, r"methods\[0\]\.params\.sigam: .*did you mean 'sigma'"),
        ({"methods": [{"name": "A", "estimator": "pl", "params": {"sigma": -1}}], "sweep": {}}, r"methods\[0\] \(A\)\.params\.sigma = -1"),
        ({"sweep": {"sigma": [1, 0]}}, r"params\.sigma = 0"),
        ({"methods": [{"name": "A", "estimator": "lpl", "params": {"k": 0}}]}, r"params\.k = 0"),
        ({"sweep": {"betaa": [1]}}, r"sweep\.betaa: no method has a parameter"),
        ({"protocol": {"kind": "kfold", "folds": 1}}, r"protocol\.folds: Input should be greater than or equal to 2"),
        ({"protocol": {"kind": "kfold", "fold": 3}}, r"protocol\.fold: unknown key \(did you mean 'folds'\?\)"),
        ({"preprocessing": "zscore"}, r"preprocessing: Input should be 'standardize', 'scale', 'scale_global' or 'none'"),
        ({"methodz": []}, r"methodz: unknown key \(did you mean 'methods'\?\)"),
        ({"methods": [{"name": "A", "estimator": "pl"}, {"name": "A", "estimator": "lpl"}]}, "duplicate name 'A'"),
        ({"paper": {"results": [{"dataset": "moons", "method": "XX", "value": 0.9}]}}, r"paper\.results\[0\]\.method: no method named 'XX'"),
    ],
)
def test_spec_errors_name_the_key(over, pattern):
    with pytest.raises(SpecError, match=pattern) as info:
        spec_from_dict(base(**over), "s.yaml")
    msg = str(info.value)
    assert msg.startswith("s.yaml: ") and "\n" not in msg


def test_more_folds_than_smallest_class_is_reported_before_fitting():
    from lkm.engine.runner import build_plan

    spec = spec_from_dict(base(datasets=["sklearn-iris"], protocol={"kind": "kfold", "folds": 51}), "s.yaml")
    with pytest.raises(SpecError, match=r"s\.yaml: protocol\.folds: 51 folds but class .* has only 50 samples"):
        build_plan(spec, source="s.yaml")


def test_method_restricted_to_some_datasets_is_planned_only_there(data_dir) -> None:
    from lkm.engine.runner import build_plan

    spec = spec_from_dict({
        "name": "x", "datasets": ["moons", {"name": "sonar", "label": "s"}],
        "protocol": {"kind": "kfold", "folds": 2},
        "methods": [{"name": "PL", "estimator": "pl"},
                    {"name": "SVM-s", "estimator": "svm", "datasets": ["s"]}],
    })
    plan = build_plan(spec, data_dir=data_dir)
    assert {(t.dataset, t.method) for t in plan.tasks} == {("moons", "PL"), ("s", "PL"), ("s", "SVM-s")}
    with pytest.raises(SpecError, match=r"methods\[0\]\.datasets\[0\]: no dataset 'sonar' in this spec"):
        spec_from_dict({**spec.model_dump(mode="json"), "methods": [
            {"name": "PL", "estimator": "pl", "datasets": ["sonar"]}]})


def test_exponent_floats_without_a_dot_are_numbers(tmp_path) -> None:
    """YAML 1.1 reads ``1e-8`` as a string; specs read it as the number users mean."""
    from lkm.spec import load_spec

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: e-floats\ndatasets: [moons]\nprotocol: {kind: kfold, folds: 3, seed: 0}\n"
        "methods:\n  - {name: PL, estimator: pl, params: {sigma: 1.0, rcond: 1e-8}}\n"
    )
    assert load_spec(path).methods[0].params["rcond"] == 1e-8


def test_a_spec_validated_again_is_an_equal_copy_with_its_notes_and_edits_do_not_leak() -> None:
    data = base(sweep={"sigma": [0.5, 1, 1]})  # a duplicate value: validation notes it
    first = spec_from_dict(data, "s.yaml")
    again = spec_from_dict(data, "s.yaml")
    assert again == first and again is not first
    assert again.notes == first.notes and any("duplicate" in n for n in again.notes)
    again.methods[0].name = "edited"
    assert spec_from_dict(data, "s.yaml").methods[0].name == "PL"


def test_a_kept_spec_is_validated_again_when_its_environment_changes(tmp_path, monkeypatch) -> None:
    """The cache of validated specs keys on what validation reads: a plan-size limit set
    after a spec was validated still refuses it."""
    data = base()
    spec_from_dict(data, "s.yaml")
    monkeypatch.setenv("LKM_MAX_FITS", "2")
    with pytest.raises(SpecError, match="fits"):
        spec_from_dict(data, "s.yaml")
    monkeypatch.delenv("LKM_MAX_FITS")
    data["datasets"] = ["my-own-set"]
    with pytest.raises(SpecError, match="my-own-set"):
        spec_from_dict(data, "s.yaml")
    csv = tmp_path / "mine.csv"
    csv.write_text("a,b,y\n0,1,0\n1,0,1\n0,0,0\n1,1,1\n")
    from lkm.data.user import add_user_dataset, user_dataset
    add_user_dataset(user_dataset("my-own-set", csv, target="y"))  # the registry of tests/conftest.py
    assert spec_from_dict(data, "s.yaml").datasets[0].id == "my-own-set"


def test_two_specs_differing_only_in_key_order_keep_their_own_grid_order() -> None:
    """The cache of validated specs tells key orders apart: a sweep's order is its grid's."""
    first = spec_from_dict(base(sweep={"sigma": [0.5, 1], "k": [3, 5]}), "s.yaml")
    second = spec_from_dict(base(sweep={"k": [3, 5], "sigma": [0.5, 1]}), "s.yaml")
    assert list(first.sweep) == ["sigma", "k"] and list(second.sweep) == ["k", "sigma"]
