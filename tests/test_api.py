"""lkm.api: run() and compare() give what `lkm run` and `lkm compare` give (one core,
lkm.api.execute_plan, behind both), read_records reads a run folder or the results pack,
and bad input is one LkmError line."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import lkm.api
from lkm.api import compare, published_folder, read_records, run
from lkm.cli import app
from lkm.errors import LkmError, SpecError

#: The columns that say what a fit was and what it scored (not when, nor how long).
SAME = ["task_id", "dataset", "split", "fold", "method", "estimator", "params", "status", "accuracy", "errors"]


def _cli(args: list[str], data_dir: Path, cwd: Path):
    mp = pytest.MonkeyPatch()
    mp.chdir(cwd)
    mp.setenv("LKM_DATA_DIR", str(data_dir))
    mp.setenv("COLUMNS", "160")
    try:
        return CliRunner().invoke(app, [*args, "--no-progress"], catch_exceptions=False)
    finally:
        mp.undo()


def _fits(records: pd.DataFrame) -> pd.DataFrame:
    out = records[SAME].sort_values("task_id").reset_index(drop=True)
    return out.assign(params=out["params"].map(json.dumps), errors=out["errors"].map(json.dumps))


def test_run_gives_the_records_and_files_of_lkm_run(data_dir: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    res = _cli(["run", "quickstart", "--out", str(tmp_path / "cli")], data_dir, tmp_path)
    assert res.exit_code == 0, res.output
    monkeypatch.chdir(tmp_path)
    result = run("quickstart", data_dir=data_dir)  # default folder: results/quickstart
    assert result.run_dir == Path("results") / "quickstart" and result.ran == 450 and result.failed == 0
    assert len(result.records) == 450 and set(result.records["status"]) == {"ok"}
    pd.testing.assert_frame_equal(_fits(result.records), _fits(read_records(tmp_path / "cli")))
    def shown(folder: Path) -> list[str]:
        return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                      if p.parent.name in ("tables", "figures") and not p.name.startswith("."))

    assert shown(result.run_dir) == shown(tmp_path / "cli") and "tables/summary.md" in shown(result.run_dir)
    assert f"{len(result.files)} files written under" in res.output
    assert (result.run_dir / "tables" / "summary.md").read_text() == (tmp_path / "cli" / "tables" / "summary.md").read_text()
    assert list(result.summary["method"]) == ["PL", "LPL", "SVM"] * 3
    provenance = json.loads((result.run_dir / "provenance.json").read_text())
    assert provenance["command"].startswith("lkm.api.run(") and provenance["tasks"]["ran"] == 450

    again = run("quickstart", data_dir=data_dir)  # resumes: nothing left to fit
    assert again.ran == 0 and again.files == []
    pd.testing.assert_frame_equal(_fits(again.records), _fits(result.records))


def test_run_takes_a_mapping_and_refuses_another_spec_in_its_folder(data_dir: Path, tmp_path: Path) -> None:
    spec = {"name": "iris-knn", "datasets": ["sklearn-iris"], "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
            "methods": [{"name": "kNN", "estimator": "sklearn.neighbors.KNeighborsClassifier", "sweep": {"n_neighbors": [1, 5]}}]}
    result = run(spec, tmp_path / "run", data_dir=data_dir)
    assert len(result.records) == 6 and sorted(result.records["param_n_neighbors"].unique()) == [1, 5]
    assert result.records["accuracy"].between(0.8, 1.0).all()
    with pytest.raises(LkmError, match="another spec|different spec|spec.yaml"):
        run({**spec, "methods": [{"name": "kNN", "estimator": "sklearn.neighbors.KNeighborsClassifier", "params": {"n_neighbors": 3}}]},
            tmp_path / "run", data_dir=data_dir)


@pytest.mark.parametrize(("spec", "error", "words"), [
    ("quickstrat", LkmError, "did you mean 'quickstart'"),
    ({"name": "x", "datasets": ["sonr"], "methods": [{"name": "kNN", "estimator": "svm"}]}, SpecError, "sonr"),
    ({"name": "x", "datasets": ["sklearn-iris"], "methods": [{"name": "A", "estimator": "no.such.Estimator"}]},
     SpecError, "no.such"),
    (42, SpecError, "expected a spec name"),
])
def test_bad_specs_are_one_error_line(spec: object, error: type[Exception], words: str, tmp_path: Path) -> None:
    with pytest.raises(error) as caught:
        run(spec, tmp_path / "run")
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "run").exists()


def test_compare_gives_the_rank_lkm_compare_prints(benchmark_smoke: Path, data_dir: Path, tmp_path: Path) -> None:
    from sklearn.neighbors import KNeighborsClassifier

    res = _cli(["compare", "sklearn.neighbors.KNeighborsClassifier", "--param", "n_neighbors=3", "--name", "kNN3",
                "--against", str(benchmark_smoke), "--smoke", "--out", str(tmp_path / "cli")], data_dir, tmp_path)
    assert res.exit_code == 0, res.output
    result = compare(KNeighborsClassifier, {"n_neighbors": 3}, name="kNN3", against=benchmark_smoke, smoke=True,
                     out=tmp_path / "api", data_dir=data_dir)
    said = " ".join(res.output.split())  # compare's prose wraps at the terminal's width
    assert f"kNN3: rank {result.rank} of {result.n_methods} (average rank {result.average_ranks['kNN3']:.2f})" in said
    assert result.n_methods == 20 and result.n_datasets == 3 and list(result.average_ranks)[result.rank - 1] == "kNN3"
    assert f"critical difference {result.cd:.2f}" in said
    assert len(result.pairwise) == 19 and set(result.pairwise["a"]) == {"kNN3"}
    assert (result.folder / "critical_difference.png").is_file() and result.folder == tmp_path / "api" / "comparison"
    cli = json.loads((tmp_path / "cli" / "comparison" / "friedman.json").read_text())
    assert cli["average_ranks"] == result.payload["average_ranks"]


@pytest.mark.parametrize(("estimator", "params", "words"), [
    ("nosuch.module.Classifier", None, "nosuch"),
    ("svm", {"C": 1.0}, "give another with --name"),  # the benchmark has an SVM already
    (object(), None, "expected a method key"),
])
def test_compare_refuses_bad_input_in_one_line(benchmark_smoke: Path, data_dir: Path, tmp_path: Path,
                                               estimator: object, params: dict | None, words: str) -> None:
    with pytest.raises(LkmError) as caught:
        compare(estimator, params, name="SVM" if estimator == "svm" else None, against=benchmark_smoke, smoke=True,
                out=tmp_path / "new", data_dir=data_dir)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "new").exists()


def test_read_records_reads_the_published_benchmark() -> None:
    records = read_records(published_folder() / "cross_paper")
    assert {"dataset", "method", "params", "accuracy", "fit_seconds"} <= set(records.columns)
    assert records["method"].nunique() >= 10 and records["dataset"].nunique() >= 5
    with pytest.raises(LkmError, match="not a run folder"):
        read_records(published_folder())


def test_the_docstring_examples_run(data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    monkeypatch.chdir(tmp_path)
    failures, tried = doctest.testmod(lkm.api, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert tried >= 4 and failures == 0
