"""The command line through Typer's test runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lkm.cli import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_help_lists_every_command():
    res = invoke("--help")
    assert res.exit_code == 0
    for cmd in ("run", "sweep", "datasets", "methods", "report", "bench"):
        assert cmd in res.output


def test_dry_run_prints_the_plan_without_fitting(tmp_path):
    res = invoke("run", str(REPO / "configs" / "quickstart.yaml"), "--dry-run", "--out", str(tmp_path / "r"))
    assert res.exit_code == 0, res.output
    assert "450 fits in all" in res.output  # 3 datasets x 10 folds x 3 methods x 5 sigmas
    assert not (tmp_path / "r").exists()


def test_bare_sigma_means_the_papers_39_value_grid(tmp_path):
    res = invoke("sweep", "--sigma", "--dry-run", "-m", "lpl", "-d", "moons", "--out", str(tmp_path / "r"))
    assert res.exit_code == 0, res.output
    assert "390 fits in all" in res.output  # 10 folds x 39 sigmas


def test_sweep_k_and_unknown_named_parameter_become_grids(tmp_path):
    res = invoke("sweep", "-m", "lpl", "-d", "moons", "--k", "3,5", "--sigma", "1,2", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "40 fits in all" in res.output
    # The command-line grids are the whole sweep (the default 5 sigmas go), and n_trees
    # counts only with annoy neighbours (alone it is refused: tests/test_sweep_cli.py).
    res = invoke("sweep", "-m", "lpl", "-d", "moons", "--n_trees", "5,10", "--neighbors", "annoy", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "20 fits in all" in res.output  # 10 folds x 2 n_trees


def test_sweep_of_a_spec_saves_the_spec_it_used(tmp_path):
    out = tmp_path / "r"
    res = invoke("sweep", str(REPO / "configs" / "quickstart.yaml"), "--sigma", "0.5,2", "--out", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    saved = (out / "spec.yaml").read_text()
    assert "sigma:\n  - 0.5\n  - 2" in saved
    assert (out / "figures" / "sweep_sigma.png").is_file()
    # `lkm report` rebuilds the tables from records alone.
    (out / "tables" / "summary.md").unlink()
    res = invoke("report", str(out))
    assert res.exit_code == 0, res.output
    assert (out / "tables" / "summary.md").is_file()


@pytest.mark.parametrize(
    "args, pattern",
    [
        (("sweep", "-m", "lrr", "--beta", "--dry-run"), "--beta: give a grid"),  # bare --k is the paper's k grid now
        (("sweep", "--dry-run", "-m", "lpl"), "name at least one parameter"),
        (("sweep", "--sigma", "0,1", "--dry-run"), "params.sigma = 0"),
        (("sweep", "--sigma", "-m", "lpx", "--dry-run"), "did you mean 'lpl'"),
        (("sweep", "--sigma", "-d", "sonr", "--dry-run"), "did you mean 'sonar'"),
        (("sweep", "--sigmaa", "1", "--dry-run"), "--sigmaa: not an option of `lkm sweep` and no method of this sweep has a parameter 'sigmaa' (did you mean 'sigma'?)"),
        (("run", "nope.yaml"), "nope.yaml: no such spec file"),
        (("report", "."), "not a run directory"),
        (("datasets", "info", "sonr"), "did you mean 'sonar'"),
    ],
)
def test_user_errors_are_one_line_with_exit_code_2(args, pattern):
    res = runner.invoke(app, list(args))
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert pattern in text
    assert "Traceback" not in res.output


def test_bad_spec_file_reports_file_and_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\ndatasets: [moons]\nmethods:\n  - {name: A, estimator: pl, params: {sigma: -2}}\n")
    res = runner.invoke(app, ["run", str(p)])
    assert res.exit_code == 2
    assert "bad.yaml: methods[0] (A).params.sigma = -2" in " ".join(res.output.split())


def test_methods_lists_estimators_and_parameters():
    res = invoke("methods")
    assert res.exit_code == 0
    for key in ("pl", "lpl", "svm", "sigma"):
        assert key in res.output


def test_datasets_list_and_info(data_dir):
    res = invoke("datasets", "list")
    assert res.exit_code == 0 and "spambase" in res.output and "ida-banana" in res.output
    res = invoke("datasets", "info", "sonar")
    assert res.exit_code == 0 and "208" in res.output and "sha256" in res.output


def test_datasets_verify_the_mirror(data_dir):
    res = invoke("datasets", "verify", "--data-dir", str(data_dir))
    assert res.exit_code == 0, res.output
    assert "0 checksum mismatches" in res.output


def test_every_spec_the_makefile_runs_exists() -> None:
    """`make demo` and the reproduction targets name a spec file of the repository or a
    spec lkm ships (`lkm run NAME`): a moved spec cannot silently break a target."""
    import re

    from lkm.papers import packaged_specs

    named = re.findall(r"\$\(LKM\) (?:run|sweep) (\S+)", (REPO / "Makefile").read_text())
    assert named, "the Makefile runs no spec"
    missing = [s for s in named if not (REPO / s).is_file() and s not in packaged_specs()]
    assert not missing, missing
