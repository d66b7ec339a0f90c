"""The command line's small things a new user trips on (issue 43, point 5): one line per
mistake that teaches the fix, help that prints what a flag is, one --jobs default."""

from __future__ import annotations

import pytest
import typer
from cli_output import error_line
from typer.testing import CliRunner

from lkm.cli import app

runner = CliRunner()


def _command_paths(group=None, prefix=()):
    """Every command and group of `lkm`, as the words that name it (() is `lkm` itself)."""
    group = group or typer.main.get_command(app)
    yield prefix
    for name, cmd in getattr(group, "commands", {}).items():
        yield from _command_paths(cmd, (*prefix, name))


def _help(path) -> str:
    res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    return res.output


def test_flags_show_no_type_in_any_help():
    """A flag takes no value: `--dry-run`, `--fresh/--resume` and `--help` print no
    `<bool>` (as Click prints none), while an option that takes a value keeps its type."""
    paths = list(_command_paths())
    assert len(paths) > 15, paths
    shown = {path: _help(path) for path in paths}
    with_bool = [" ".join(("lkm", *p)) for p, text in shown.items() if "<bool>" in text]
    assert not with_bool, with_bool
    run_help = shown[("run",)]
    assert "--dry-run" in run_help and "<int>" in run_help  # --jobs still says what it takes


def _commands(group=None, prefix=()):
    """(words, click command) for every command of `lkm`."""
    group = group or typer.main.get_command(app)
    for name, cmd in getattr(group, "commands", {}).items():
        yield (*prefix, name), cmd
        yield from _commands(cmd, (*prefix, name))


def test_every_jobs_option_has_the_one_default():
    """`--jobs` defaulted to 1 for run/sweep/compare and 2 for reproduce/report: now one
    default (lkm.engine.workers.DEFAULT_JOBS), the library's too. `lkm bench --cost --jobs`
    is another option (timing cells run side by side) and is left out."""
    from lkm.api import run
    from lkm.engine.workers import DEFAULT_JOBS

    defaults = {" ".join(path): p.default for path, cmd in _commands() if path != ("bench",)
                for p in cmd.params if p.name == "jobs"}
    assert {"run", "sweep", "compare", "reproduce", "report"} <= set(defaults), defaults
    assert set(defaults.values()) == {DEFAULT_JOBS}, defaults
    assert run.__kwdefaults__["jobs"] == DEFAULT_JOBS
    assert f"[default: {DEFAULT_JOBS}]" in " ".join(_help(("reproduce",)).split())


@pytest.mark.parametrize("args", [("--sigma", "0.1:10"), ("--sigma", "0.1-10"), ("--sigma", "0.1..10"),
                                  ("--param", "sigma=0.1:10"), ("--sigma=0.1 to 10",)])
def test_a_range_without_its_count_teaches_the_grid_syntax(args):
    """`--sigma 0.1:10` (no count), or a range written as other tools write one, is one
    line naming the option and showing both ways to write a grid, with the user's own
    numbers; never the estimator's parameter-range error."""
    res = runner.invoke(app, ["sweep", "-m", "lpl", "-d", "moons", *args, "--dry-run"])
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert line.startswith("error: --sigma: "), line  # `--param sigma=...` is the same option
    assert "START:STOP:COUNT" in line and "(0.1:10:9)" in line and "(0.1,10)" in line, line
    assert "must be a float" not in line


def test_every_listed_spec_has_a_description_of_its_own():
    """`lkm specs list` showed one text for lpl_vs_svm and lpl_vs_svm_scaled, and one for
    lpl_k_diabetes and lpl_k_diabetes_raw (an `extends:` spec took its base's
    description): every shipped spec now says what sets it apart."""
    from lkm.papers import packaged_specs
    from lkm.spec import load_spec

    listed = {name: (load_spec(path, max_fits=1 << 62).description or "").strip().split("\n")[0]
              for name, path in packaged_specs().items()}
    assert all(listed.values()), [n for n, d in listed.items() if not d]
    by_text: dict[str, list[str]] = {}
    for name, text in listed.items():
        by_text.setdefault(text, []).append(name)
    assert not [names for names in by_text.values() if len(names) > 1]
    out = " ".join(runner.invoke(app, ["specs", "list"], env={"COLUMNS": "400"}).output.split())
    for name in ("lpl_vs_svm_scaled", "lpl_k_diabetes_raw"):
        assert listed[name] in out


@pytest.mark.parametrize("method, said", [
    ("lkm_no_such_module.MyEstimator",
     "estimator 'lkm_no_such_module.MyEstimator': cannot import module 'lkm_no_such_module' "
     "(No module named 'lkm_no_such_module'); install it or put its folder on PYTHONPATH"),
    ("lkm_no_such_module:MyEstimator",
     "estimator 'lkm_no_such_module:MyEstimator': write a class's path with dots, 'lkm_no_such_module.MyEstimator'"),
])
def test_a_user_module_that_cannot_be_imported_is_named_without_lkms_keys(method, said):
    """A missing user module ended "(choose from: hknn, laprls, ...)", lkm's own keys the
    user did not mean: now one line naming the module and the import error."""
    res = runner.invoke(app, ["sweep", "-m", method, "-d", "moons", "--sigma", "1", "--dry-run"])
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert line.startswith(f"error: --method {method}: "), line
    assert said in line
    assert "choose from" not in line and "hknn" not in line


def test_a_user_module_whose_own_import_fails_names_that_import(tmp_path, monkeypatch):
    """The module is there but imports a package that is not: the error names that
    package, not the user's module as missing."""
    (tmp_path / "lkm_user_mod_broken.py").write_text("import lkm_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    res = runner.invoke(app, ["sweep", "-m", "lkm_user_mod_broken.Est", "-d", "moons", "--C", "1", "--dry-run"])
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert ("importing module 'lkm_user_mod_broken' failed: ModuleNotFoundError: "
            "No module named 'lkm_no_such_dependency'") in line, line
    assert "choose from" not in line and "PYTHONPATH" not in line


#: A command that runs twice with different --jobs in one process, as `lkm reproduce --jobs 2`
#: does (its perturbed variants run on fewer workers, so joblib replaces the pool), then
#: ends as the `lkm` command does (lkm.cli.main).
_TWO_POOLS = """
import sys
from lkm.api import run
from lkm.cli import main

run("a.yaml", "run_a", jobs=2)
sys.argv = ["lkm", "run", "b.yaml", "--out", "run_b", "--jobs", "1", "--no-progress"]
main()
"""
#: spambase's features (4601 x 57 floats, 2 MB) are over joblib's 1 MB: shared as memmaps.
_SPEC = """name: {name}
datasets: [spambase]
preprocessing: standardize
protocol: {{kind: kfold, folds: 2, seed: 0}}
methods:
  - {{name: NN, estimator: nn}}
"""


def test_a_command_that_changes_its_pool_ends_without_joblibs_leak_warning(tmp_path, data_dir):
    """`lkm reproduce lpl --smoke --jobs 2` ended with joblib's "resource_tracker: There
    appear to be 2 leaked file objects to clean up at shutdown": the pool joblib replaced
    kept its shared arrays registered. No such warning now."""
    import os
    import subprocess
    import sys

    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(_SPEC.format(name=f"pools_{name}"))
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-c", _TWO_POOLS], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr
    assert (tmp_path / "run_b" / "results.csv").is_file()


def test_a_script_using_the_api_ends_without_joblibs_leak_warning(tmp_path, data_dir):
    """A script whose only lkm call is `lkm.api.run` on data shared as memmaps ended with
    joblib's "resource_tracker: There appear to be 1 leaked file objects to clean up at
    shutdown" (the command line hides that notice; a script does not): the idle pool is
    now terminated at exit, before joblib's own handler deletes the run's folder."""
    import os
    import subprocess
    import sys

    (tmp_path / "a.yaml").write_text(_SPEC.format(name="api_only"))
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir)}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run([sys.executable, "-c", "from lkm.api import run; run('a.yaml', 'run_a')"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr
    assert (tmp_path / "run_a" / "results.csv").is_file()


def test_a_two_parameter_sweep_names_the_figure_of_both_as_its_main_figure(tmp_path, data_dir, monkeypatch):
    """The README's `lkm sweep -m lpl -d sonar --sigma … --k 3,7` named `sweep_k.png`, one
    line per sigma, as its main figure; the figure of both parameters is the one to open."""
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["sweep", "-m", "lpl", "-d", "sonar", "--sigma", "0.1:10:3", "--k", "3,7",
                              "--no-progress"], env={"LKM_DATA_DIR": str(data_dir), "COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    shown = [line.split("figure:", 1)[1].strip() for line in res.output.splitlines() if "figure:" in line]
    assert len(shown) == 1 and shown[0].endswith("/figures/sweep_sigma_k.png"), res.output
    assert (tmp_path / shown[0]).is_file()
