"""Hostile specs (issue 9, "Runaway specs", "Data loss and path escape", and the spec
cases of "Tracebacks" and "Unclear"): every bad spec is one SpecError line naming the
file and the key, found before anything is expanded, loaded or written."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from processes import patience
from typer.testing import CliRunner

from lkm.cli import app
from lkm.engine.runner import build_plan
from lkm.errors import SpecError
from lkm.papers import packaged_specs
from lkm.spec import (
    MAX_FITS,
    MAX_GRID_VALUES,
    MAX_SPEC_BYTES,
    load_spec,
    parse_grid,
    planned_fits,
    spec_from_dict,
    unique_values,
    validate_run_name,
)

REPO = Path(__file__).resolve().parents[1]
BASE = "datasets: [moons]\nprotocol: {kind: kfold, folds: 3}\nmethods: [{name: PL, estimator: pl}, {name: LPL, estimator: lpl}]\n"


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


def write(tmp_path: Path, text: str | bytes, name: str = "bad.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def spec_error(fn, *args, **kwargs) -> str:
    """The SpecError message of ``fn(*args)``, asserted to be one line."""
    with pytest.raises(SpecError) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg and "\r" not in msg, msg
    return msg


def billion_laughs(levels: int = 9) -> str:
    lines = ['  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(levels):
        prev, cur = chr(97 + i), chr(98 + i)
        lines.append(f"  {cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


# -- run names are identifiers, not paths ------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../../x", "/some/folder", "a/b", "a\\b", "a\x00b", "-rf", ".hidden", "x\ny", "é" * 3, "a" * 101],
)
def test_run_names_that_are_paths_or_odd_are_rejected(name):
    """Case: `name` with separators, `..`, absolute, empty or over-long became a path."""
    msg = spec_error(spec_from_dict, base(name=name), "s.yaml")
    assert msg.startswith("s.yaml: name: ")


@pytest.mark.parametrize("name", ["quickstart", "lpl_vs_svm", "run-2.v1", "A" * 100, "_x"])
def test_identifier_run_names_are_returned_unchanged(name):
    """Case: valid names still work (validate_run_name is what the CLI calls)."""
    assert validate_run_name(name, "--out") == name
    assert spec_from_dict(base(name=name)).name == name


def test_a_smoke_name_past_the_length_limit_is_rejected_even_without_smoke(tmp_path):
    """Case: a derived name (<name>-smoke) must stay a valid name too."""
    p = write(tmp_path, f"name: {'a' * 97}\n{BASE}smoke: {{}}\n")
    msg = spec_error(load_spec, p)
    assert msg.startswith(f"{p}: name: ") and "derived from name" in msg and "103 characters" in msg


# -- the YAML text ---------------------------------------------------------------------
def test_non_utf8_spec_names_the_byte_offset(tmp_path):
    """Case: a non-UTF-8 spec gave a UnicodeDecodeError traceback."""
    p = write(tmp_path, b"name: caf\xe9\n" + BASE.encode())
    assert spec_error(load_spec, p) == f"{p}: not UTF-8 text (byte 0xe9 at byte offset 9)"


def test_nul_in_a_spec_names_the_line(tmp_path):
    """Case: a NUL-containing spec gave a traceback."""
    p = write(tmp_path, "name: x\n" + BASE + "description: a\x00b\n")
    assert spec_error(load_spec, p) == f"{p}: line 5: contains a NUL character (not a text file?)"


def test_oversized_spec_is_refused_before_parsing(tmp_path):
    """Case: a huge spec file is not parsed at all."""
    p = write(tmp_path, "name: x\n" + "#" * MAX_SPEC_BYTES)
    t0 = time.perf_counter()
    msg = spec_error(load_spec, p)
    assert time.perf_counter() - t0 < 1.0 * patience()  # a bound, scaled by the machine's load
    assert msg.startswith(f"{p}: larger than {MAX_SPEC_BYTES} bytes")


@pytest.mark.parametrize(
    "text, key, line, first",
    [
        ("name: x\nname: y\n" + BASE, "'name'", 2, 1),
        ("name: x\n" + BASE + "sweep: {sigma: [1], sigma: [2]}\n", "'sigma'", 5, 5),
        ("name: x\n" + BASE + "protocol: {kind: kfold, folds: 5}\n", "'protocol'", 5, 3),
    ],
)
def test_duplicate_keys_are_an_error_naming_key_and_line(tmp_path, text, key, line, first):
    """Case: duplicate YAML keys passed (PyYAML keeps the last one silently)."""
    p = write(tmp_path, text)
    msg = spec_error(load_spec, p)
    assert msg.startswith(f"{p}: line {line}, column ") and f"duplicate key {key} (first on line {first})" in msg


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    """Case: `<<: *anchor` then an overriding key is valid YAML, not a duplicate."""
    proto = "protocol: {<<: &p {kind: kfold, folds: 2}, folds: 3}"
    p = write(tmp_path, "name: x\n" + BASE.replace("protocol: {kind: kfold, folds: 3}", proto))
    assert load_spec(p).protocol.folds == 3


def test_alias_bomb_under_smoke_fails_fast(tmp_path):
    """Case: a YAML alias bomb under the unchecked `smoke:` key exhausted memory."""
    p = write(tmp_path, "name: b\n" + BASE + "smoke:\n" + billion_laughs())
    t0 = time.perf_counter()
    msg = spec_error(load_spec, p, smoke=True)
    assert time.perf_counter() - t0 < 1.0 * patience()  # a bound, scaled by the machine's load
    assert msg.startswith(f"{p}: line ") and "expands to more than" in msg


def test_recursive_alias_is_an_error(tmp_path):
    """Case: an alias inside the node it names would recurse forever downstream."""
    p = write(tmp_path, "name: r\n" + BASE + "smoke: &a {x: *a}\n")
    assert "recursive alias" in spec_error(load_spec, p)


@pytest.mark.parametrize("depth", [60, 20_000])
def test_deep_nesting_is_a_spec_error_not_a_recursion_error(tmp_path, depth):
    """Case: deeply nested YAML gave a RecursionError traceback."""
    p = write(tmp_path, "name: d\n" + BASE + "description: " + "[" * depth + "]" * depth + "\n")
    msg = spec_error(load_spec, p)
    assert msg.startswith(f"{p}: line 5, column ") and "nested more than 50 levels" in msg


@pytest.mark.parametrize(
    "text, expected",
    [
        ("name: !!python/object/apply:os.system [echo hi]\n", "could not determine a constructor"),
        ("name: x\ndescription: " + "9" * 5000 + "\n", "malformed YAML"),
        ("name: [unclosed\n", "malformed YAML"),
    ],
)
def test_unsafe_or_unparsable_yaml_is_one_line(tmp_path, text, expected):
    """Case: YAML tags and parser errors end as one line naming the file."""
    p = write(tmp_path, text + BASE)
    msg = spec_error(load_spec, p)
    assert msg.startswith(f"{p}:") and expected in msg


# -- field values ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "over, where",
    [
        ({"protocol": {"kind": "kfold", "folds": 3, "seed": -1}}, "protocol.seed"),
        ({"protocol": {"kind": "kfold", "folds": 3, "seed": 2**32}}, "protocol.seed"),
        ({"protocol": {"kind": "kfold", "folds": 3, "seed": 2**32 - 1, "repeats": 2}}, "protocol.seed"),
        ({"protocol": {"kind": "holdout", "train_size": 0.5, "seed": 10**30}}, "protocol.seed"),
        ({"protocol": {"kind": "realizations", "seed": 2**32 - 50}}, "protocol.seed"),
        ({"methods": [{"name": "R", "estimator": "rls", "tune": {"grid": {"t": [1]}, "seed": -3}}], "sweep": {}},
         "methods[0].tune.seed"),
        ({"perturb": {"permute_train": 2**40}}, "perturb.permute_train"),
    ],
)
def test_seeds_outside_numpys_range_are_rejected(over, where):
    """Case: a negative or huge `seed` gave a numpy traceback mid-run."""
    msg = spec_error(spec_from_dict, base(**over), "s.yaml")
    assert msg.startswith(f"s.yaml: {where}: seed ") and "2**32" in msg


@pytest.mark.parametrize(
    "over, where",
    [
        ({"sweep": {"sigma": [1, True]}}, "methods[0] (PL).params.sigma"),
        ({"methods": [{"name": "PL", "estimator": "pl", "params": {"sigma": True}}]}, "methods[0] (PL).params.sigma"),
        ({"protocol": {"kind": "kfold", "folds": True}}, "protocol.folds"),
        ({"protocol": {"kind": "kfold", "folds": 3, "seed": True}}, "protocol.seed"),
        ({"paper": {"results": [{"dataset": "moons", "method": "PL", "value": True}]}}, "paper.results[0].value"),
    ],
)
def test_booleans_are_not_numbers(over, where):
    """Case: `sigma: true` was accepted (as 1)."""
    msg = spec_error(spec_from_dict, base(**over), "s.yaml")
    assert msg.startswith(f"s.yaml: {where}") and "boolean" in msg


def test_boolean_parameters_still_take_booleans():
    """Case: a real boolean parameter (SVM's shrinking) is not caught by the number check."""
    spec = spec_from_dict(base(methods=[{"name": "S", "estimator": "svm", "sweep": {"shrinking": [True, False]}}]))
    assert spec.methods[0].sweep["shrinking"] == [True, False]


@pytest.mark.parametrize(
    "estimator, key, value, text",
    [
        ("pl", "sigma", 1e-320, "sigma=1e-320 is too small: 1/(2·sigma²) overflows"),
        ("svm", "sigma", 1e-160, "sigma=1e-160 is too small: 1/(2·sigma²) overflows"),
        ("lpl", "sigma", 1e200, "sigma=1e+200 is too large"),
        ("rls", "t", 1e-310, "t=1e-310 is too small: 1/(4·t) overflows"),
    ],
)
def test_kernel_widths_whose_scale_overflows_are_rejected(estimator, key, value, text):
    """Case: sigma = 1e-320 failed as ZeroDivisionError (and 1e-160 gave NaN decisions)."""
    msg = spec_error(spec_from_dict, base(methods=[{"name": "M", "estimator": estimator, "sweep": {key: [1, value]}}], sweep={}), "s.yaml")
    assert msg.startswith(f"s.yaml: methods[0] (M).params.{key}: ") and text in msg


def test_the_smallest_accepted_sigma_gives_a_finite_kernel_scale():
    """Case: the accepted range is one that works: 1/(2·sigma²) finite at its ends."""
    from lkm.spec import KERNEL_WIDTH_RANGE

    lo, hi = KERNEL_WIDTH_RANGE
    assert 0 < 1 / (2 * lo * lo) < float("inf") and 0 < 1 / (2 * hi * hi)
    spec_from_dict(base(sweep={"sigma": [lo, hi]}))


@pytest.mark.parametrize("grid", [[float("nan")], [1, float("inf")], "nan,1", "1,inf", [1e400], "0.01:inf:5"])
def test_nan_and_inf_in_grids_are_rejected(grid):
    """Case: NaN/inf grid values were fitted (and NaN never equals itself in tables)."""
    msg = spec_error(spec_from_dict, base(sweep={"sigma": grid}), "s.yaml")
    assert msg.startswith("s.yaml: sweep: sigma: ") and ("finite" in msg)


# -- grids -----------------------------------------------------------------------------
def test_duplicate_grid_values_are_removed_with_a_note():
    """Case: `[1, 1.0, 1]` fitted duplicates and reported "3 already recorded"."""
    spec = spec_from_dict(base(sweep={"sigma": [1, 1.0, 1, 2]}))
    assert spec.sweep["sigma"] == [1, 2] and type(spec.sweep["sigma"][0]) is int
    assert spec.notes == ["sweep.sigma: 2 duplicate value(s) removed, 2 left"]
    assert len(spec.method_grid(spec.methods[0])) == 2


def test_log_grids_that_round_to_the_same_value_are_deduplicated():
    """Case: ~10 % of a dense log grid were duplicates after rounding to 6 digits."""
    spec = spec_from_dict(base(methods=[{"name": "PL", "estimator": "pl", "sweep": {"sigma": "1:1.00001:50"}}], sweep={}))
    grid = spec.methods[0].sweep["sigma"]
    assert len(grid) == len(set(grid)) < 50
    assert spec.notes and spec.notes[0].startswith("methods (PL).sweep.sigma: ")


def test_unique_values_keeps_booleans_apart_from_numbers():
    """Case: dedup must not merge True with 1 (a boolean grid is not a number grid)."""
    assert unique_values([1, True, 1.0, "1", None, None]) == [1, True, "1", None]


def test_log_spaced_count_is_bounded_before_allocating():
    """Case: a grid of 10^6 values took 180 s and 1.5 GB just to plan."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=f"has 1000000000 values \\(at most {MAX_GRID_VALUES} per grid\\)"):
        parse_grid("0.01:100:1000000000")
    assert time.perf_counter() - t0 < 0.1 * patience()  # a bound, scaled by the machine's load
    with pytest.raises(ValueError, match="per grid"):
        parse_grid(list(range(MAX_GRID_VALUES + 1)))


# -- plan size -------------------------------------------------------------------------
def test_planned_fits_matches_the_built_plan():
    """Case: the estimate made before loading data is the plan's task count."""
    spec = spec_from_dict(base(sweep={"sigma": [0.5, 1, 2]}, methods=[
        {"name": "PL", "estimator": "pl"}, {"name": "LPL", "estimator": "lpl", "sweep": {"k": [3, 5]}, "datasets": ["moons"]},
    ]))
    assert planned_fits(spec) == len(build_plan(spec).tasks) == 3 * (3 + 3 * 2)


def test_plan_over_the_limit_fails_fast_with_the_override_named():
    """Case: 3,000,000 fits were planned with no limit or warning."""
    t0 = time.perf_counter()
    msg = spec_error(spec_from_dict, base(sweep={"sigma": "0.01:100:10000", "k": "1:1000:10000"}), "s.yaml")
    assert time.perf_counter() - t0 < 1.0 * patience()  # a bound, scaled by the machine's load
    n = 3 * (10_000 + 10_000 * 10_000)  # PL: sigma only; LPL: sigma x k
    assert msg == f"s.yaml: plan has {n} fits (> limit {MAX_FITS}): narrow the grids or pass --max-fits {n}"


def test_plan_limit_counts_protocol_repeats_before_drawing_splits():
    """Case: `repeats: 10**9` is refused from the spec alone."""
    msg = spec_error(spec_from_dict, base(protocol={"kind": "kfold", "folds": 3, "repeats": 10**9}), "s.yaml")
    assert "plan has 12000000000 fits" in msg


def test_plan_limit_override_by_parameter_and_environment(monkeypatch):
    """Case: the limit has an override (--max-fits N, LKM_MAX_FITS)."""
    data = base(sweep={"sigma": "0.01:100:20"})  # 3 folds x 2 methods x 20 = 120 fits
    assert planned_fits(spec_from_dict(data, max_fits=120)) == 120
    assert "plan has 120 fits (> limit 100)" in spec_error(spec_from_dict, data, max_fits=100)
    monkeypatch.setenv("LKM_MAX_FITS", "100")
    assert "(> limit 100)" in spec_error(spec_from_dict, data)
    monkeypatch.setenv("LKM_MAX_FITS", "lots")
    assert spec_error(spec_from_dict, data).startswith("LKM_MAX_FITS: expected a positive whole number")


def test_tuning_grid_size_is_bounded():
    """Case: a tune grid's combinations are checked one by one, so they count too."""
    data = base(sweep={}, methods=[{"name": "R", "estimator": "rls", "tune": {"grid": {"t": "1:10:1000", "lam": "1:10:1000"}}}])
    t0 = time.perf_counter()
    msg = spec_error(spec_from_dict, data, "s.yaml")
    assert time.perf_counter() - t0 < 1.0 * patience()  # a bound, scaled by the machine's load
    assert msg.startswith("s.yaml: methods[0] (R): 1000000 parameter settings with its tune.grid")


# -- smoke and paper ---------------------------------------------------------------------
def test_a_bad_smoke_override_is_found_on_a_normal_load(tmp_path):
    """Case: `smoke:` was unchecked until `--smoke` ran it."""
    p = write(tmp_path, "name: x\n" + BASE + "smoke: {sweep: {sigma: [-1]}}\n")
    msg = spec_error(load_spec, p)
    assert msg.startswith(f"{p}: smoke: methods[0] (PL).params.sigma = -1")


def test_paper_results_with_unknown_dataset_or_method_are_rejected():
    """Case: a typo in `paper.results` dataset names passed."""
    msg = spec_error(spec_from_dict, base(paper={"results": [{"dataset": "mons", "method": "PL", "value": 0.9}]}), "s.yaml")
    assert msg == "s.yaml: paper.results[0].dataset: no dataset 'mons' in this spec (did you mean 'moons'?)"
    msg = spec_error(spec_from_dict, base(paper={"results": [{"dataset": "moons", "method": "LP", "value": 0.9}]}), "s.yaml")
    assert msg.startswith("s.yaml: paper.results[0].method: no method named 'LP'")


def test_smoke_keeps_only_paper_results_of_its_datasets():
    """Case: a smoke run with fewer datasets keeps the paper values it can show."""
    data = base(datasets=["moons", "sklearn-iris"], paper={"results": [
        {"dataset": "moons", "method": "PL", "value": 0.9}, {"dataset": "sklearn-iris", "method": "PL", "value": 0.9}]},
        smoke={"datasets": ["moons"]})
    assert len(spec_from_dict(data).paper.results) == 2
    assert [p.dataset for p in spec_from_dict(data, smoke=True).paper.results] == ["moons"]


@pytest.mark.parametrize("path", [*sorted((REPO / "configs").glob("*.yaml")), *packaged_specs().values()], ids=lambda p: p.name)
def test_every_shipped_config_loads_with_and_without_smoke(path):
    """Case: the new limits reject no shipped config."""
    assert load_spec(path).datasets and load_spec(path, smoke=True).name.endswith("-smoke")


# -- through the command line --------------------------------------------------------------
runner = CliRunner()


def cli_error(workdir: Path, spec: Path, *args: str) -> str:
    """Run `lkm run SPEC` in ``workdir``; assert exit 2, one error line, nothing written."""
    before = {str(p.relative_to(workdir)) for p in workdir.rglob("*")}
    t0 = time.perf_counter()
    res = runner.invoke(app, ["run", spec.name, *args], catch_exceptions=False)
    assert time.perf_counter() - t0 < 5.0 * patience()  # a bound, scaled by the machine's load
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert not (workdir / "results").exists()
    assert {str(p.relative_to(workdir)) for p in workdir.rglob("*")} == before
    return lines[0]


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """An empty current folder inside tmp_path (so a `../escape` would land in tmp_path)."""
    inner = tmp_path / "inner"
    inner.mkdir()
    monkeypatch.chdir(inner)
    return inner


@pytest.mark.parametrize("name", ["../escape", "", "..", "/tmp/lkm-hostile-abs"])
def test_cli_refuses_path_names_and_writes_nothing(workdir, name):
    """Case: `name: ../../x`, `""`, `..`, `/some/folder` wrote outside results/<name>/."""
    spec = write(workdir, f"name: '{name}'\n" + BASE)
    line = cli_error(workdir, spec)
    assert line.startswith("error: bad.yaml: name: ")
    assert not (workdir.parent / "escape").exists() and not Path("/tmp/lkm-hostile-abs").exists()


def test_cli_alias_bomb_under_smoke_exits_2_fast(workdir):
    """Case: an alias bomb under `smoke:` exhausted memory after minutes."""
    spec = write(workdir, "name: b\n" + BASE + "smoke:\n" + billion_laughs())
    assert "expands to more than" in cli_error(workdir, spec, "--smoke")


@pytest.mark.parametrize(
    "text, expected",
    [
        (b"name: caf\xe9\n" + BASE.encode(), "bad.yaml: not UTF-8 text (byte 0xe9 at byte offset 9)"),
        ("name: x\n" + BASE + "sweep: {sigma: [1, true]}\n", "bad.yaml: methods[0] (PL).params.sigma = True"),
        ("name: x\n" + BASE + "protocol: {kind: kfold, folds: 5}\n", "duplicate key 'protocol'"),
        ("name: x\n" + BASE.replace("folds: 3", "folds: 3, seed: -1"), "bad.yaml: protocol.seed: seed -1"),
        ("name: x\n" + BASE + "description: " + "[" * 100 + "]" * 100 + "\n", "nested more than 50 levels"),
    ],
    ids=["non-utf8", "bool-sigma", "duplicate-key", "negative-seed", "deep-nesting"],
)
def test_cli_bad_spec_is_one_line_exit_2(workdir, text, expected):
    """Case: tracebacks for non-UTF-8 specs, bad seeds, deep nesting; silent bools and duplicate keys."""
    spec = write(workdir, text)
    assert expected in cli_error(workdir, spec)


def test_cli_plan_over_the_limit_names_the_override(workdir, monkeypatch):
    """Case: a runaway grid planned 3,000,000 fits; the limit says how to lift it."""
    monkeypatch.delenv("LKM_MAX_FITS", raising=False)
    spec = write(workdir, "name: x\n" + BASE + "sweep: {sigma: '0.01:100:10000', k: '1:100:100'}\n")
    line = cli_error(workdir, spec)
    assert "bad.yaml: plan has 3030000 fits (> limit 100000): narrow the grids or pass --max-fits 3030000" in line
