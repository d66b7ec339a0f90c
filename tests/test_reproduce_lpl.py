"""`lkm reproduce lpl --smoke`: every experiment of the Tsuji et al. reproduction runs on
the real data (few settings) and writes every table and figure its spec names, and the
claims table is built from those runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.papers import tsuji
from lkm.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory, data_dir: Path) -> Path:
    results = tmp_path_factory.mktemp("reproduce")
    mp = pytest.MonkeyPatch()
    mp.chdir(REPO)
    mp.setenv("LKM_DATA_DIR", str(data_dir))
    try:
        res = CliRunner().invoke(
            app, ["reproduce", "lpl", "--smoke", "--results", str(results), "--jobs", "2", "--no-progress"],
            catch_exceptions=False,
        )
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    return results


@pytest.mark.parametrize("experiment", tsuji.SPECS, ids=lambda e: Path(e.spec).stem)
def test_every_experiment_writes_every_output_it_names(smoke_results: Path, experiment) -> None:
    spec = load_spec(REPO / experiment.spec, smoke=True)
    run = smoke_results / spec.name
    for name in ("results.csv", "results.parquet", "provenance.json", "spec.yaml", "plan.json"):
        assert (run / name).is_file(), name
    tables = {p.stem for p in (run / "tables").glob("*.md")}
    for name in spec.outputs.tables:
        assert name in tables, (name, tables)
    figures = {p.stem for p in (run / "figures").glob("*.png")} if (run / "figures").exists() else set()
    for name in spec.outputs.figures:
        assert any(f == name or f.startswith(f"{name}_") for f in figures), (name, figures)
        assert any(p.suffix == ".pdf" for p in (run / "figures").glob(f"{name}*"))


def test_claims_table_has_a_verdict_for_every_claim(smoke_results: Path) -> None:
    claims = (smoke_results / "lpl_claims-smoke" / "claims.csv").read_text()
    for number, *_ in tsuji.CLAIMS:
        assert f"\n{number}," in claims
    assert "not run" not in claims
    assert (smoke_results / "lpl_claims-smoke" / "spambase_timing.md").is_file()


def test_a_second_reproduce_fits_nothing(smoke_results: Path, data_dir: Path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    res = CliRunner().invoke(app, ["reproduce", "lpl", "--smoke", "--results", str(smoke_results), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert res.output.count("nothing new to fit") == len(tsuji.SPECS)
