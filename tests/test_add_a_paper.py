"""docs/architecture.md's "How to add a paper", followed once: a toy sixth paper whose
files all live in its own package (tests/toy_paper/toy/, placed among lkm.papers'
packages) is found, reproduced, checked and shown in the report without a change
anywhere else in lkm."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lkm.papers
from lkm.cli import app
from lkm.errors import LkmError
from lkm.reproduction.paper import discover_papers

TOY = Path(__file__).with_name("toy_paper") / "toy"


@pytest.fixture
def with_toy(tmp_path: Path, monkeypatch, data_dir: Path) -> dict:
    """lkm.papers with the toy package beside the five (as if it were lkm/papers/toy/)."""
    extra = tmp_path / "papers"
    shutil.copytree(TOY, extra / "toy")
    monkeypatch.setattr(lkm.papers, "__path__", [*lkm.papers.__path__, str(extra)])
    papers = discover_papers("lkm.papers")
    monkeypatch.setattr(lkm.papers, "PAPERS", papers)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    monkeypatch.chdir(tmp_path)
    return papers


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_a_new_paper_package_is_found_after_the_five(with_toy: dict) -> None:
    assert list(with_toy) == ["lpl", "npps", "lrr", "cevikalp", "prls", "toy"]
    assert "toy_moons" in lkm.papers.packaged_specs()
    listed = invoke("specs", "list")
    assert listed.exit_code == 0 and "toy_moons" in listed.output


def test_a_new_paper_reproduces_and_joins_the_report(with_toy: dict, tmp_path: Path) -> None:
    res = invoke("reproduce", "toy", "--smoke", "--jobs", "1", "--no-progress")
    assert res.exit_code == 0, res.output
    results = tmp_path / "results"
    claims = (results / "toy_claims-smoke" / "claims.md").read_text(encoding="utf-8")
    assert "LPL is as accurate as SVM on two moons" in claims and "smoke: not evidence" in claims
    beside = (results / "toy_moons-smoke" / "tables" / "toy_beside_paper.md").read_text(encoding="utf-8")
    assert "96.00" in beside and "Table 1" in beside
    report = invoke("report", "--all", "--smoke")
    assert report.exit_code == 0, report.output
    page = (results / "report-smoke" / "index.html").read_text(encoding="utf-8")
    assert 'id="paper-toy"' in page and "LPL is as accurate as SVM on two moons" in page


def test_a_paper_package_missing_a_part_is_named(tmp_path: Path, monkeypatch) -> None:
    extra = tmp_path / "papers"
    (extra / "halfdone").mkdir(parents=True)
    (extra / "halfdone" / "__init__.py").write_text('"""A paper without its specs or claims yet."""\nORDER = 7\n')
    monkeypatch.setattr(lkm.papers, "__path__", [*lkm.papers.__path__, str(extra)])
    with pytest.raises(LkmError, match=r"lkm\.papers\.halfdone: .*missing SPECS, evaluate_claims, write_summary"):
        discover_papers("lkm.papers")
