"""Issue 43, point 4: `lkm compare` shows what it did: what the new method's inner CV
chose per data set, on which machine each method's seconds were measured (and the
calibration that puts the recorded seconds on this machine's scale), and tables that fit
80 columns when piped, every method name whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lkm.cli import app

RIDGE = ["sklearn.linear_model.RidgeClassifier", "--param", "alpha=0.1,1,10"]


@pytest.fixture(scope="module")
def piped(benchmark_smoke: Path, data_dir: Path, tmp_path_factory) -> tuple[str, Path]:
    """`lkm compare` of a ridge classifier tuned over alpha, its stdout a pipe, COLUMNS=80."""
    work = tmp_path_factory.mktemp("compare-piped")
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir), "COLUMNS": "80"}
    res = subprocess.run([sys.executable, "-m", "lkm.cli", "compare", *RIDGE, "--against", str(benchmark_smoke),
                          "--smoke", "--no-progress"], env=env, cwd=work, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout, work / "results" / "compare" / "RidgeClassifier-smoke" / "comparison"


def test_the_inner_cvs_choice_of_a_tuned_parameter_is_shown_per_data_set(piped: tuple[str, Path]) -> None:
    out, folder = piped
    lines = out.splitlines()
    start = lines.index("RidgeClassifier: chosen by the inner CV (most frequent value, folds)")
    rows = [ln.split() for ln in lines[start + 2:start + 5]]
    assert [r[0] for r in rows] == ["sonar", "heart-statlog", "iris"]
    assert all(r[1].startswith("alpha=") and r[2].endswith("/3)") for r in rows), rows
    selected = json.loads((folder / "friedman.json").read_text())["selected"]
    assert list(selected) == ["sonar", "heart-statlog", "iris"] and all(v.startswith("alpha=") for v in selected.values())


def test_the_timing_calibration_is_printed_and_written_beside_the_seconds(piped: tuple[str, Path]) -> None:
    out, folder = piped
    said = " ".join(out.split())
    assert "SVM is refitted on the 3 smallest sets to time this machine" in said
    assert "Timing: SVM refitted now on " in said and "× its recorded seconds (recorded on " in said
    assert "the benchmark's recorded seconds are multiplied by" in said
    timing = json.loads((folder / "friedman.json").read_text())["timing"]
    assert timing.startswith("Timing: SVM refitted now on") and timing in (folder / "speed.md").read_text()
    assert (folder.parent / "calibration" / "records").is_dir()


def test_piped_tables_fit_80_columns_and_name_every_method_whole(piped: tuple[str, Path]) -> None:
    """What compare prints itself (its plan line, the inner CV's choices, the rank, the
    pairwise table and the notes); the run's summary between them is `lkm run`'s."""
    out, folder = piped
    lines = out.splitlines()
    own = lines[:lines.index(next(ln for ln in lines if ln.startswith("compare-RidgeClassifier:")))]
    own += lines[lines.index("RidgeClassifier: chosen by the inner CV (most frequent value, folds)"):]
    assert own and all(len(ln) <= 80 for ln in own), [ln for ln in own if len(ln) > 80]
    methods = [m for m in json.loads((folder / "friedman.json").read_text())["methods_by_rank"] if m != "RidgeClassifier"]
    header = next(i for i, ln in enumerate(lines) if ln.startswith("against"))
    table = lines[header + 1:header + 1 + len(methods)]
    assert sorted(ln.split()[0] for ln in table) == sorted(methods)
    assert all(" / " in ln and len(ln.split()) == 12 for ln in table), table  # W / T / L on the row, never wrapped


def test_without_calibration_the_seconds_are_labelled_with_their_machines_and_days(
        benchmark_smoke: Path, data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    res = CliRunner().invoke(app, ["compare", *RIDGE, "--against", str(benchmark_smoke), "--smoke", "--no-progress",
                                   "--no-calibrate"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "the benchmark's seconds were recorded on " in said and "not calibrated" in said and "CPUs, 20" in said
    assert not (tmp_path / "results" / "compare" / "RidgeClassifier-smoke" / "calibration").exists()
