"""Hostile input to `lkm compare` (issue 39, point 2): a reference it cannot verify is
refused in one line naming the file (exit 2) before anything is fitted; a new method whose
every fit fails ends with the failures and one error line (exit 1, no internal error); a
broken YAML method entry names its file and line.

One smoke run of the benchmark (`lkm run cross_paper --smoke`) is made per module; each
test edits a copy of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_output import error_line
from typer.testing import CliRunner

from lkm.cli import app

REPO = Path(__file__).resolve().parents[1]

#: Two estimators whose every fit fails, written into a module the workers import.
FAILING = '''
import sys

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class ExitsInFit(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        sys.exit(3)

    def predict(self, X):
        return np.zeros(len(X))


class OneTooMany(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.label_ = y[0]
        return self

    def predict(self, X):
        return np.full(len(X) + 1, self.label_)
'''


@pytest.fixture(scope="module")
def reference(tmp_path_factory, benchmark_smoke: Path) -> Path:
    """A clean smoke run of the benchmark (3 sets, 3 folds, 19 methods): this module's copy
    of the session's."""
    return Path(shutil.copytree(benchmark_smoke, tmp_path_factory.mktemp("hostile-compare") / "cross_paper-smoke"))


@pytest.fixture
def ref(reference: Path, tmp_path: Path) -> Path:
    """This test's copy of the reference, to edit."""
    return Path(shutil.copytree(reference, tmp_path / "ref"))


@pytest.fixture
def workdir(tmp_path: Path, data_dir: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


def compare(*args: str):
    return CliRunner().invoke(app, ["compare", *args, "--no-progress"], catch_exceptions=False)


def refused(ref: Path, *extra: str) -> str:
    """Run a small compare against ``ref``: it must be refused (exit 2, one line) and fit nothing."""
    res = compare("sklearn.neighbors.KNeighborsClassifier", "--name", "kNN-new", "--against", str(ref), "--smoke", *extra)
    assert res.exit_code == 2, res.output
    assert not Path("results").exists()  # refused before any fit
    return error_line(res)


def _records(ref: Path, holding) -> tuple[Path, list[dict], dict]:
    """The first records part (by name) with a record ``holding`` is true of, its records,
    and that record: a run with two workers spreads its records over their parts in
    whatever order the fits finished."""
    for part in sorted((ref / "records").glob("part-*.jsonl")):
        records = [json.loads(line) for line in part.read_text().splitlines()]
        for rec in records:
            if holding(rec):
                return part, records, rec
    raise AssertionError(f"no record of {ref} is the one this test edits")


def _write_records(part: Path, records: list[dict]) -> None:
    part.write_text("".join(json.dumps(r) + "\n" for r in records))


# -- the reference: spec, plan and records must be those of one run ---------------------------
def test_a_reference_whose_spec_was_edited_after_the_run_is_refused(ref, workdir):
    """Case: spec.yaml's protocol seed edited 0 → 1; compare fitted the new method on the
    seed-1 splits, ranked it against seed-0 records and captioned all of it seed 1."""
    spec_file = ref / "spec.yaml"
    text = spec_file.read_text()
    edited = re.sub(r"(\nprotocol:\n(?:  .*\n)*?  seed: )0", r"\g<1>1", text, count=1)
    assert edited != text
    spec_file.write_text(edited)
    line = refused(ref)
    assert f"{spec_file} changed since the run (protocol.seed 0→1)" in line


def test_a_reference_without_plan_json_is_refused(ref, workdir):
    (ref / "plan.json").unlink()
    assert f"{ref / 'plan.json'}: missing" in refused(ref)


def test_a_reference_with_an_unreadable_plan_json_is_refused(ref, workdir):
    (ref / "plan.json").write_text("{")
    assert f"{ref / 'plan.json'}: unreadable" in refused(ref)


def test_a_reference_whose_plan_lost_fits_is_refused(ref, workdir):
    """Case: task ids removed from plan.json: their records would be left out unsaid."""
    plan = json.loads((ref / "plan.json").read_text())
    plan["task_ids"] = plan["task_ids"][:-4]
    (ref / "plan.json").write_text(json.dumps(plan))
    line = refused(ref)
    assert f"{ref / 'plan.json'}: lists 167 fits where its spec.yaml and splits plan 171: the plan was edited" in line


def test_a_reference_whose_plan_hash_was_edited_is_refused(ref, workdir):
    plan = json.loads((ref / "plan.json").read_text())
    plan["spec_sha256"] = "0" * 64
    (ref / "plan.json").write_text(json.dumps(plan))
    assert f"{ref / 'spec.yaml'} changed since the run" in refused(ref)


def test_a_reference_with_an_edited_accuracy_is_refused(ref, workdir):
    """Case: one record's accuracy raised by hand (it no longer matches its listed errors)."""
    part, records, rec = _records(ref, lambda r: r["status"] == "ok" and r["method"] == "PL")
    rec["accuracy"] = min(1.0, rec["accuracy"] + 0.05)
    _write_records(part, records)
    line = refused(ref)
    assert f"{ref / 'records'}: the record of {rec['dataset']}/{rec['split']}/PL says accuracy" in line
    assert "the records were edited" in line


def test_a_reference_with_deleted_records_is_refused(ref, workdir):
    part, records, _ = _records(ref, lambda r: r["status"] == "ok")
    _write_records(part, records[3:])
    line = refused(ref)
    assert f"{ref / 'records'}: 3 of the 171 fits planned in {ref / 'plan.json'} have no finished record" in line


def test_a_reference_with_a_record_moved_to_another_method_is_refused(ref, workdir):
    """Case: a record relabelled from PL to kNN: PL would lose a fold, kNN count one twice."""
    part, records, rec = _records(ref, lambda r: r["method"] == "PL")
    rec["method"] = "kNN"
    _write_records(part, records)
    line = refused(ref)
    assert f"both claim the fit {rec['dataset']}/{rec['split']}/kNN" in line and "the records were edited" in line


def test_a_run_folder_that_is_not_a_benchmark_is_refused_with_what_it_lacks(workdir, tmp_path):
    """Case: any run folder was taken as the benchmark (here: one data set, a sigma sweep
    selected on the test folds, no inner CV)."""
    spec = tmp_path / "paper.yaml"
    spec.write_text("name: paper\ndatasets: [iris]\nprotocol: {kind: kfold, folds: 3, seed: 0}\n"
                    "methods:\n  - {name: PL, estimator: pl, sweep: {sigma: [1, 2]}}\n")
    run = tmp_path / "paper-run"
    res = CliRunner().invoke(app, ["run", str(spec), "--out", str(run), "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    line = refused(run)
    assert f"{run}: not a benchmark run to rank against (spec paper)" in line
    assert "1 data set(s), a ranking needs two or more" in line
    assert "several settings without `tune:`: PL" in line and "no method tuned by inner CV" in line


def test_a_papers_run_of_the_shipped_pack_is_refused_with_what_it_lacks(workdir):
    """A run of a results pack is checked against the pack's manifest, then must be a benchmark too."""
    line = refused(REPO / "docs" / "runs" / "lpl_vs_svm")
    assert "not a benchmark run to rank against (spec lpl_vs_svm)" in line and "no method tuned by inner CV" in line


def test_an_edited_copy_of_the_shipped_pack_is_refused(workdir, tmp_path):
    """Case: the benchmark's spec.yaml edited in a copy of the pack (plan.json of a
    snapshot has no spec hash: the pack's manifest is what checks it)."""
    pack = Path(shutil.copytree(REPO / "docs" / "runs", tmp_path / "pack"))
    spec_file = pack / "cross_paper" / "spec.yaml"
    spec_file.write_text(spec_file.read_text().replace("seed: 0", "seed: 1"))
    line = refused(pack / "cross_paper")
    assert f"{spec_file}: sha256" in line and "differs from the pack's manifest" in line


def test_the_shipped_benchmark_named_with_against_is_accepted(workdir):
    """--against docs/runs/cross_paper (the published run named explicitly) is checked
    against the pin, as the default, and planned."""
    res = compare("sklearn.neighbors.KNeighborsClassifier", "--name", "kNN-new", "--against",
                  str(REPO / "docs" / "runs" / "cross_paper"), "--dry-run")
    assert res.exit_code == 0, res.output
    assert "130 outer folds on 26 data sets" in res.stdout


def test_a_clean_copy_of_the_reference_is_ranked_against(ref, workdir):
    """The refusals above do not hit a clean reference."""
    res = compare("sklearn.neighbors.KNeighborsClassifier", "--param", "n_neighbors=3", "--name", "kNN-new",
                  "--against", str(ref), "--smoke")
    assert res.exit_code == 0, res.output
    assert "kNN-new: rank" in res.stdout and "of 20" in res.stdout


# -- the new method ---------------------------------------------------------------------------
@pytest.mark.parametrize(("estimator", "why", "each_why"), [
    pytest.param("ExitsInFit", "fit called sys.exit(3)", "fit called sys.exit(3)", marks=pytest.mark.slow),
    ("OneTooMany", "predict returned 91 predictions for 90 test rows", "ValueError: predict returned"),
])
def test_a_new_method_whose_every_fit_fails_ends_with_its_failures_and_exit_1(ref, workdir, estimator, why, each_why):
    """Case: every fit failed, then `internal error … KeyError: 'fit_seconds'`. In a
    subprocess: its fit workers import the estimators' module from PYTHONPATH."""
    (workdir / "failing_estimators.py").write_text(FAILING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(workdir), os.environ.get("PYTHONPATH")]))}
    res = subprocess.run([sys.executable, "-m", "lkm.cli", "compare", f"failing_estimators.{estimator}", "--against",
                          str(ref), "--smoke", "--no-progress"],
                         env=env, cwd=workdir, capture_output=True, text=True, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    line = error_line(res)
    assert "9 fit(s) failed (every fit of this run" in line and why in line
    assert "internal error" not in res.stderr and "KeyError" not in res.stderr
    for dataset in ("sonar", "heart-statlog", "iris"):  # the failure table: each data set, its folds and why
        row = next(ln for ln in res.stdout.splitlines() if ln.startswith(dataset) and estimator in ln)
        assert "failed (3 of 3 fits)" in row and each_why in row
    assert not (workdir / "results" / "compare" / f"{estimator}-smoke" / "comparison").exists()


def test_a_broken_yaml_method_entry_names_its_file_and_line(ref, workdir):
    """Case: a YAML syntax error in the method entry ended in an internal ParserError
    naming no file."""
    entry = workdir / "mine.yaml"
    entry.write_text("name: Mine\nestimator: [sklearn.neighbors.KNeighborsClassifier\n  params: {n_neighbors: 3}\n")
    res = compare(str(entry), "--against", str(ref), "--smoke")
    assert res.exit_code == 2, res.output
    line = error_line(res)
    assert f"{entry}: line 3" in line and "malformed YAML" in line


def test_a_yaml_method_entry_with_a_bad_name_is_one_line(ref, workdir):
    entry = workdir / "mine.yaml"
    entry.write_text("name: [1, 2]\nestimator: sklearn.neighbors.KNeighborsClassifier\n")
    res = compare(str(entry), "--against", str(ref), "--smoke")
    assert res.exit_code == 2, res.output
    assert f"{entry}: name: expected the method's name as text" in error_line(res)


def test_the_plan_size_limit_names_an_option_compare_has(ref, workdir):
    """Case: the limit's message said `pass --max-fits N`, an option compare lacked. (The
    smoke reference draws 4 settings per method, so the new method's plan is 9 tasks
    whatever its ranges: a limit of 5 is what it exceeds.)"""
    args = ["sklearn.svm.SVC", "--param", "C=0.01:100:40", "--param", "gamma=0.001:1:30",
            "--name", "big", "--against", str(ref), "--smoke"]
    res = compare(*args, "--max-fits", "5")
    assert res.exit_code == 2, res.output
    line = error_line(res)
    needed = re.search(r"\(> limit 5\): narrow the grids or pass --max-fits (\d+)$", line)
    assert needed, line
    res = compare(*args, "--max-fits", needed[1], "--dry-run")
    assert res.exit_code == 0, res.output
