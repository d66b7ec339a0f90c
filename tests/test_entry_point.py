"""The `lkm` entry point (`lkm.cli.main`, also `python -m lkm.cli`): it leaves through
`os._exit` after killing idle workers, so check what that must not lose — the exit code,
every line of output, and quiet handling of a reader that goes away."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from processes import CEILING

LKM = [sys.executable, "-m", "lkm.cli"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LKM, *args], cwd=cwd, capture_output=True, text=True, timeout=CEILING,
                          env={**os.environ, "LKM_PROGRESS_SECONDS": "0"})


def test_a_run_keeps_its_exit_code_and_every_line_of_output(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        "name: ok\ndatasets: [moons]\nprotocol: {kind: kfold, folds: 3}\n"
        "methods: [{name: S, estimator: svm}]\nsweep: {sigma: [0.5, 1]}\n")
    res = _run(["run", "ok.yaml", "--out", "run"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip().splitlines()[-1].startswith("  figure:")  # the last line, flushed
    assert (tmp_path / "run" / "tables" / "summary.md").is_file()


def test_a_failed_fit_exits_1_and_a_bad_spec_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "fails.yaml").write_text(
        "name: fails\ndatasets: [moons]\nprotocol: {kind: kfold, folds: 3}\n"
        "methods: [{name: K, estimator: sklearn.neighbors.KNeighborsClassifier, params: {n_neighbors: 1000}}]\n")
    failed = _run(["run", "fails.yaml", "--out", "run"], tmp_path)
    assert failed.returncode == 1
    assert [ln for ln in failed.stderr.splitlines() if ln.strip()][-1].startswith("error: 3 fit(s) failed")
    bad = _run(["run", "missing.yaml"], tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: missing.yaml: no such spec file"


def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(monkeypatch) -> None:
    """`lkm datasets list | head -1` with a listing longer than the pipe holds: the write
    fails with BrokenPipeError, which ends the command like `cat` (exit 141, no message)."""
    from typer.testing import CliRunner

    import lkm.cli.datasets as cli_datasets
    from lkm.cli import app

    def closed_pipe(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli_datasets, "print_rows", closed_pipe)
    monkeypatch.setattr(os, "dup2", lambda *a: None)  # the boundary points fd 1 at /dev/null; not in a test
    res = CliRunner().invoke(app, ["datasets", "list"])
    assert res.exit_code == 141 and res.stderr == ""
