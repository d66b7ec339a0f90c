"""Leftovers of the hostile-input review (issue 39, point 6): non-regular data files,
`extends:` by a shipped spec's name, `lkm specs show --out` through a symlink, and spec
error messages that blamed the wrong key or spoke pydantic. Each error is one line
naming the file and the key, exit 2."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest
from cli_output import error_line as one_error_line
from typer.testing import CliRunner

from lkm.cli import app
from lkm.errors import SpecError
from lkm.spec import load_spec

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[1] / "docs" / "specs.md"


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def error_line(res) -> str:
    """The one line of error output (asserting there is exactly one, and exit 2)."""
    assert res.exit_code == 2, res.output
    return one_error_line(res)


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKM_USER_REGISTRY", str(tmp_path / "registry.yaml"))
    return tmp_path


# -- lkm datasets add: what is not a regular file ---------------------------------------
@pytest.mark.parametrize("args", [("/dev/zero",), ("/dev/null", "--format", "csv", "--target", "y")])
def test_a_character_device_is_refused_by_what_it_is(workdir, args):
    """Case: `lkm datasets add /dev/zero` said "no such file" (and reading it never ends)."""
    line = error_line(invoke("datasets", "add", *args))
    assert line == f"error: {args[0]}: is a character device, not a regular file"
    assert not (workdir / "registry.yaml").exists()


def test_a_fifo_is_refused_without_opening_it(workdir):
    """Case: a FIFO would block the reader forever; it is refused by os.stat alone."""
    os.mkfifo(workdir / "pipe.csv")
    line = error_line(invoke("datasets", "add", "pipe.csv", "--target", "y"))
    assert line == f"error: {workdir / 'pipe.csv'}: is a FIFO (named pipe), not a regular file"


def test_a_socket_and_a_link_to_a_device_are_refused(workdir):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(workdir / "s.csv"))
        assert "is a socket, not a regular file" in error_line(invoke("datasets", "add", "s.csv", "--target", "y"))
    (workdir / "z.csv").symlink_to("/dev/zero")
    line = error_line(invoke("datasets", "add", "z.csv", "--target", "y"))
    assert line == f"error: {workdir / 'z.csv'} (a link to /dev/zero): is a character device, not a regular file"


def test_a_spec_path_naming_a_fifo_is_refused(workdir):
    os.mkfifo(workdir / "pipe.csv")
    (workdir / "s.yaml").write_text("name: x\ndatasets: [{path: pipe.csv, target: y}]\nmethods: [{name: S, estimator: svm}]\n")
    line = error_line(invoke("run", "s.yaml", "--dry-run"))
    assert line.startswith("error: s.yaml: datasets[0]") and "is a FIFO (named pipe), not a regular file" in line


# -- extends: a shipped spec's name, a path relative to the extending file ---------------
def docs_extends_example() -> str:
    """The YAML block of docs/specs.md that follows "A spec can start from another"."""
    text = DOCS.read_text(encoding="utf-8")
    after = text[text.index("A spec can start from another"):]
    return re.search(r"```yaml\n(.*?)```", after, re.S).group(1)


def test_the_docs_extends_example_runs_from_an_unrelated_folder(workdir):
    """Case: the docs' `extends: lpl_vs_svm.yaml` failed outside the package folder."""
    example = docs_extends_example()
    assert "extends: lpl_vs_svm" in example
    (workdir / "mine").mkdir()
    (workdir / "mine" / "my_lpl.yaml").write_text(example)
    (workdir / "elsewhere").mkdir()
    os.chdir(workdir / "elsewhere")
    res = invoke("run", "../mine/my_lpl.yaml", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "plan for my_lpl_scaled" in res.stdout and "spambase" in res.stdout


@pytest.mark.parametrize("value", ["lpl_vs_svm", "lpl_vs_svm.yaml", "cevikalp_usps.q_half"])
def test_extends_takes_a_shipped_specs_name(workdir, value):
    (workdir / "s.yaml").write_text(f"extends: {value}\nname: mine\n")
    spec = load_spec(workdir / "s.yaml")
    assert spec.name == "mine" and spec.datasets and spec.methods


def test_a_file_beside_the_extending_spec_wins_over_a_shipped_name(workdir):
    (workdir / "sub").mkdir()
    (workdir / "sub" / "lpl_vs_svm.yaml").write_text("name: base\ndatasets: [iris]\nmethods: [{name: Mine, estimator: svm}]\n")
    (workdir / "sub" / "s.yaml").write_text("extends: lpl_vs_svm.yaml\nname: mine\n")
    spec = load_spec("sub/s.yaml")  # relative to sub/, not to the working directory
    assert [m.name for m in spec.methods] == ["Mine"]


def test_an_unknown_extends_is_one_line_with_the_closest_name(workdir):
    (workdir / "s.yaml").write_text("extends: lpl_vs_sv\nname: mine\n")
    with pytest.raises(SpecError) as err:
        load_spec(workdir / "s.yaml")
    assert str(err.value) == (f"{workdir / 's.yaml'}: extends: 'lpl_vs_sv' is neither a file beside this spec "
                              f"({workdir / 'lpl_vs_sv'}) nor a spec lkm ships (did you mean 'lpl_vs_svm'?) "
                              "(`lkm specs list` lists them)")
    (workdir / "s.yaml").write_text("extends: base/x.yaml\nname: mine\n")
    with pytest.raises(SpecError, match=r"s.yaml: extends: no such spec file .*base/x.yaml \(a path in extends is "
                                         r"relative to this spec's folder\)"):
        load_spec(workdir / "s.yaml")


# -- lkm specs show --out ---------------------------------------------------------------
@pytest.mark.parametrize("target", ["missing.yaml", "present.yaml"])
def test_specs_show_out_refuses_a_symlink(workdir, target):
    """Case: --out through a dangling symlink created the link's target."""
    (workdir / "present.yaml").write_text("keep\n")
    (workdir / "link.yaml").symlink_to(target)
    line = error_line(invoke("specs", "show", "lpl_vs_svm", "--out", "link.yaml"))
    assert line == f"error: --out: link.yaml is a symbolic link (to {target}); give the path of a new file"
    assert not (workdir / "missing.yaml").exists()
    assert (workdir / "present.yaml").read_text() == "keep\n"


def test_specs_show_out_still_refuses_an_existing_file_and_writes_a_new_one(workdir):
    (workdir / "present.yaml").write_text("keep\n")
    assert error_line(invoke("specs", "show", "lpl_vs_svm", "--out", "present.yaml")) == \
        "error: --out: present.yaml exists; choose another file"
    res = invoke("specs", "show", "lpl_vs_svm", "--out", "new.yaml")
    assert res.exit_code == 0 and (workdir / "new.yaml").read_text().startswith("# Tsuji")


# -- spec error messages that misled (before -> after in each docstring) -----------------
BASE = "name: x\ndatasets: [iris]\n"
SVM = "methods: [{name: S, estimator: svm}]\n"


def run_error(workdir: Path, text: str) -> str:
    """`lkm run s.yaml --dry-run`'s one error line, without `error: s.yaml: `."""
    (workdir / "s.yaml").write_text(text)
    line = error_line(invoke("run", "s.yaml", "--dry-run"))
    assert line.startswith("error: s.yaml: "), line
    return line.removeprefix("error: s.yaml: ")


def plan(workdir: Path, text: str) -> str:
    (workdir / "s.yaml").write_text(text)
    res = invoke("run", "s.yaml", "--dry-run")
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_misspelt_required_key_is_named_not_the_key_it_leaves_missing(workdir):
    """Before: `methods[0].estimator: Field required` for `estimater: svm`."""
    msg = run_error(workdir, BASE + "methods: [{name: S, estimater: svm}]\n")
    assert msg == "methods[0].estimater: unknown key (did you mean 'estimator'?)"


def test_an_unknown_key_is_matched_against_the_keys_of_its_own_mapping(workdir):
    """Before: `methods[0].tune.folds: unknown key (choose from: datasets, estimator, name, ...)`
    (a method's keys), and `tune.grid: Field required` for `grd`."""
    msg = run_error(workdir, BASE + "methods: [{name: S, estimator: svm, tune: {grid: {C: [1]}, folds: 3}}]\n")
    assert msg == "methods[0].tune.folds: unknown key (choose from: candidates, cv, grid, halving, seed, space, subsample)"
    msg = run_error(workdir, BASE + "methods: [{name: S, estimator: svm, tune: {grd: {C: [1]}}}]\n")
    assert msg == "methods[0].tune.grd: unknown key (did you mean 'grid'?)"
    msg = run_error(workdir, BASE + SVM + "protocol: {kind: holdout, train_size: 0.5, folds: 3}\n")
    assert msg.startswith("protocol.folds: unknown key (choose from: ") and "train_size" in msg and "stratified" in msg


def test_a_base_60_looking_grid_is_a_grid_not_a_silent_number(workdir):
    """Before: `sweep: {C: 1:10:3}` ran C = 4203 alone (YAML 1.1 base 60), `1:10:0` C = 4200,
    and `-1:10:3` blamed `methods[0] (S).params.C = -4203`."""
    assert "iris     S           10         3    30" in plan(workdir, BASE + SVM + "sweep: {C: 1:10:3}\n")
    msg = run_error(workdir, BASE + SVM + "sweep: {C: 1:10:0}\n")
    assert msg == "sweep: C: grid '1:10:0': log-spaced grids need finite start, stop > 0 and count >= 1"
    assert run_error(workdir, BASE + SVM + "sweep: {C: -1:10:3}\n").startswith("sweep: C: grid '-1:10:3': ")
    msg = run_error(workdir, BASE + SVM + "sweep: {C: 1:10}\n")
    assert msg == ("sweep: C: grid '1:10': write a range as START:STOP:COUNT, COUNT log-spaced values (1:10:9), "
                   "or list the values with commas (1,10)")


@pytest.mark.parametrize("grid, shown", [("{a: 1}", "grid {'a': 1} is a mapping"),
                                         ("[[1, 2]]", "grid [[1, 2]]: value [1, 2] is a list")])
def test_a_grid_that_is_no_grid_says_how_grids_are_written(workdir, grid, shown):
    """Before: `sweep.C[0].float: Input should be a valid number` (a union branch's name)."""
    msg = run_error(workdir, BASE + SVM + f"sweep: {{C: {grid}}}\n")
    assert msg == f"sweep: C: {shown}; a grid is a value, a list of values ([0.5, 1, 2]), 'start:stop:count' or 'a,b,c'"


def test_a_comma_inside_braces_is_named_as_a_new_key(workdir):
    """Before: `sweep[2].[key]: Input should be a valid string` for `sweep: {C: 1,2,x}`."""
    msg = run_error(workdir, BASE + SVM + "sweep: {C: 1,2,x}\n")
    assert msg.startswith("sweep: key 2 is not a name: inside {...} a comma starts a new key") and "'0.5,1,2'" in msg


def test_an_unknown_or_missing_protocol_kind_says_which_kinds_exist(workdir):
    """Before: `protocol: Input tag 'kfld' found using 'kind' does not match any of the expected
    tags: ...` and `protocol: Unable to extract tag using discriminator 'kind'`."""
    kinds = "kfold, holdout, predefined, learning_curve, realizations, semisupervised"
    msg = run_error(workdir, BASE + SVM + "protocol: {kind: kfld}\n")
    assert msg == f"protocol.kind: unknown protocol kind 'kfld' (did you mean 'kfold'?); kinds: {kinds}"
    msg = run_error(workdir, BASE + SVM + "protocol: {folds: 5}\n")
    assert msg == f"protocol.kind: required key missing: a protocol names its kind, one of {kinds}"
    msg = run_error(workdir, BASE + SVM + "protocol: kfold\n")
    assert msg == "protocol: expected a mapping such as {kind: kfold, folds: 10}, got 'kfold'"
    # no union tag in the path (was protocol.semisupervised.labeled)
    assert run_error(workdir, BASE + SVM + "protocol: {kind: semisupervised, labeled: 0}\n").startswith("protocol.labeled: ")


@pytest.mark.parametrize("protocol, key, value", [
    ("{kind: holdout, train_size: 0.5, test_size: 1.5}", "test_size", "1.5"),
    ("{kind: holdout, train_size: 0}", "train_size", "0"),
    ("{kind: holdout, train_size: 100.0}", "train_size", "100.0"),
    ("{kind: learning_curve, sizes: [10], test_size: 2.0}", "test_size", "2.0"),
])
def test_a_split_size_out_of_range_is_named_at_its_key(workdir, protocol, key, value):
    """Before: `protocol: dataset 'iris': The 'test_size' parameter of train_test_split must be
    a float in the range (0.0, 1.0), ... Got 1.5 instead.` (and `protocol: train_size must be > 0`)."""
    msg = run_error(workdir, BASE + SVM + f"protocol: {protocol}\n")
    assert msg == (f"protocol.{key}: expected a fraction of the rows between 0 and 1 (0.25) "
                   f"or a number of rows >= 1 (100), got {value}")


def test_split_fractions_adding_up_past_one_are_named(workdir):
    msg = run_error(workdir, BASE + SVM + "protocol: {kind: holdout, train_size: 0.7, test_size: 0.7}\n")
    assert msg == "protocol: train_size 0.7 + test_size 0.7 = 1.4: fractions of the rows add up to at most 1"
    assert "hold-out realization" in plan(workdir, BASE + SVM + "protocol: {kind: holdout, train_size: 0.7, test_size: 0.3}\n")


def test_a_copied_spec_that_extends_a_shipped_one_runs_where_it_was_copied(workdir):
    """`lkm specs show --help`: a copied spec's `extends: lpl_vs_svm.yaml` finds the shipped spec."""
    assert invoke("specs", "show", "lpl_vs_svm_scaled", "--out", "mine.yaml").exit_code == 0
    assert "extends: lpl_vs_svm.yaml" in (workdir / "mine.yaml").read_text()
    res = invoke("run", "mine.yaml", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "plan for lpl_vs_svm_scaled" in res.stdout
