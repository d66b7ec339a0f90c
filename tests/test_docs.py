"""The tables README.md and docs/reproductions show are generated from the committed run
snapshot docs/runs/, and a committed table that differs from what the records give fails
here (CI runs this on a clean clone)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.engine.store import RunStore
from lkm.papers import PAPERS
from lkm.reproduction import docs

REPO = Path(__file__).resolve().parents[1]

TINY_SPEC = """\
name: tiny
datasets: [moons]
preprocessing: standardize
protocol: {kind: kfold, folds: 3, repeats: 1, seed: 0}
methods:
  - {name: PL, estimator: pl}
  - {name: LPL, estimator: lpl, params: {k: 3}}
sweep: {sigma: [0.5, 2.0]}
outputs: {tables: [summary], figures: [best]}
"""

README = """\
# tiny

Accuracy at sigma*:

<!-- lkm:begin lpl/accuracy -->
(to be generated)
<!-- lkm:end -->

![best](docs/figures/lpl/lpl_vs_svm-best.png)
"""


def test_committed_docs_match_the_committed_snapshot() -> None:
    problems = docs.check(PAPERS, REPO)
    assert not problems, "\n".join(["run `make docs-figures` (or `lkm docs build`):", *problems])


def test_tables_for_the_verdict_counts_are_the_pages_and_equal_a_full_reports(tmp_path: Path) -> None:
    """`build_report(figures=False)` (the docs' row-verdict counts) writes each table as
    Markdown and JSON only, what the report page reads, with the same text as a full
    report's; no figures, CSV, LaTeX or results files."""
    import shutil

    from lkm.report import build_report
    from lkm.spec import load_spec

    for name, figures in (("counted", False), ("full", True)):
        shutil.copytree(REPO / docs.SNAPSHOT / "lpl_sigma_sonar", tmp_path / name,
                        ignore=shutil.ignore_patterns("tables", "figures", "results.*"))
        build_report(RunStore(tmp_path / name), load_spec(tmp_path / name / "spec.yaml"), figures=figures)
    counted = sorted(p.name for p in (tmp_path / "counted" / "tables").iterdir() if not p.name.startswith("."))
    assert counted and {Path(n).suffix for n in counted} == {".md", ".json"}
    assert not (tmp_path / "counted" / "figures").exists() and not list((tmp_path / "counted").glob("results.*"))
    for table in counted:
        assert (tmp_path / "counted" / "tables" / table).read_text() == (tmp_path / "full" / "tables" / table).read_text()


def test_every_block_in_the_docs_is_known_and_its_runs_are_committed() -> None:
    blocks = docs.doc_blocks(PAPERS)
    for rel in docs.doc_files(PAPERS):
        for m in docs.BLOCK_RE.finditer((REPO / rel).read_text()):
            assert m["id"] in blocks, (rel, m["id"])
            for run in blocks[m["id"]].runs:
                assert (REPO / docs.SNAPSHOT / run / "records" / docs.SNAPSHOT_PART).is_file(), (rel, m["id"], run)


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory) -> Path:
    """A repository root with one generated block, and results/lpl_vs_svm from a tiny real run
    plus one stale record of an earlier plan."""
    root = tmp_path_factory.mktemp("docs")
    (root / "README.md").write_text(README)
    (root / "docs" / "reproductions").mkdir(parents=True)
    for name in PAPERS:
        (root / "docs" / "reproductions" / f"{name}.md").write_text(f"# {name}\n")
    (root / "docs" / "benchmark.md").write_text("# The benchmark\n")
    (root / "docs" / "guide").mkdir()
    (root / "docs" / "guide" / "reproductions.md").write_text("# Reproductions and the benchmark\n")
    spec = root / "tiny.yaml"
    spec.write_text(TINY_SPEC)
    run = root / "results" / "lpl_vs_svm"
    res = CliRunner().invoke(app, ["run", str(spec), "--out", str(run), "--no-progress"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    RunStore(run).append([{"task_id": "stale-from-an-earlier-plan", "status": "ok", "dataset": "moons",
                           "method": "PL", "params": {"sigma": 9.0}, "accuracy": 0.0}])
    return root


@pytest.fixture()
def built(tiny_root: Path, tmp_path: Path) -> Path:
    """A copy of tiny_root after `lkm docs snapshot` and `lkm docs build`."""
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(tiny_root, root)
    docs.snapshot(PAPERS, root / "results", root)
    docs.build(PAPERS, root)
    return root


def _block(text: str, block_id: str) -> str:
    return next(m["body"] for m in docs.BLOCK_RE.finditer(text) if m["id"] == block_id)


def test_snapshot_keeps_the_plans_records_gzipped_and_byte_stable(tiny_root: Path, tmp_path: Path) -> None:
    report = docs.snapshot(PAPERS, tiny_root / "results", tmp_path)  # tmp_path has no docs: nothing cited
    assert report.runs == {}
    import shutil

    shutil.copytree(tiny_root, tmp_path / "r")
    root = tmp_path / "r"
    report = docs.snapshot(PAPERS, root / "results", root)
    planned = len(json.loads((root / "results" / "lpl_vs_svm" / "plan.json").read_text())["task_ids"])
    assert report.runs == {"lpl_vs_svm": planned}  # the stale record is left out
    part = root / docs.SNAPSHOT / "lpl_vs_svm" / "records" / docs.SNAPSHOT_PART
    with gzip.open(part, "rt") as fh:
        ids = [json.loads(line)["task_id"] for line in fh]
    assert len(ids) == planned and "stale-from-an-earlier-plan" not in ids
    for name in ("spec.yaml", "provenance.json", "requirements.lock.txt", "plan.json"):
        assert (root / docs.SNAPSHOT / "lpl_vs_svm" / name).is_file(), name
    first = part.read_bytes()
    docs.snapshot(PAPERS, root / "results", root)
    assert part.read_bytes() == first  # no timestamps: a rerun on the same records changes nothing
    assert report.figures == ["lpl/lpl_vs_svm-best.png"]
    assert (root / "docs" / "figures" / "lpl" / "lpl_vs_svm-best.png").read_bytes() == \
        (root / "results" / "lpl_vs_svm" / "figures" / "best.png").read_bytes()


def test_build_writes_the_runs_numbers_into_the_block_and_nothing_else(built: Path) -> None:
    text = (built / "README.md").read_text()
    body = _block(text, "lpl/accuracy")
    assert "(to be generated)" not in body
    assert text.replace(body, "(to be generated)\n") == README  # text outside the block untouched
    # each cell is the run's own summary table: mean ± std at sigma*, 2 decimals
    shown = json.loads((built / "results" / "lpl_vs_svm" / "tables" / "summary.json").read_text())
    summary = pd.DataFrame(shown["rows"], columns=shown["columns"])  # the cells as displayed
    row = next(line for line in body.splitlines() if line.startswith("| moons"))
    for _, r in summary.iterrows():
        mean, std = r["accuracy % (ours)"].split(" ± ")
        assert f"{mean}** ± {std}" in row or f"{mean} ± {std}" in row, (row, r["accuracy % (ours)"])
    assert docs.check(PAPERS, built) == []
    assert docs.build(PAPERS, built) == []  # a second build changes nothing


def test_check_names_a_stale_block_with_a_one_line_summary(built: Path) -> None:
    readme = built / "README.md"
    text = readme.read_text()
    body = _block(text, "lpl/accuracy")
    row = next(line for line in body.splitlines() if line.startswith("| moons"))
    edited = row.replace(" ± ", " ± 9", 1)
    readme.write_text(text.replace(row, edited))
    problems = docs.check(PAPERS, built)
    assert len(problems) == 1
    assert problems[0].startswith("README.md: lpl/accuracy: stale — 1 of ") and "\n" not in problems[0]
    res = CliRunner().invoke(app, ["docs", "check", "--root", str(built)])
    assert res.exit_code == 1 and "lpl/accuracy: stale" in res.output
    res = CliRunner().invoke(app, ["docs", "build", "--root", str(built)])
    assert res.exit_code == 0 and docs.check(PAPERS, built) == []


def test_check_reports_unknown_blocks_missing_runs_figures_and_markers(built: Path) -> None:
    readme = built / "README.md"
    readme.write_text(readme.read_text() + "\n<!-- lkm:begin lpl/acuracy -->\nx\n<!-- lkm:end -->\n"
                      "<!-- lkm:begin lpl/claims -->\nx\n<!-- lkm:end -->\n")
    (built / "docs" / "figures" / "lpl" / "lpl_vs_svm-best.png").unlink()
    problems = docs.check(PAPERS, built)
    assert any("lpl/acuracy: cannot build: unknown block" in p and "lpl/accuracy" in p for p in problems)
    assert any("lpl/claims: cannot build: runs" in p and "not in" in p for p in problems)
    assert any("figure docs/figures/lpl/lpl_vs_svm-best.png is missing" in p for p in problems)
    with pytest.raises(docs.DocsError, match="lpl/claims"):
        docs.build(PAPERS, built)
    (built / "docs" / "reproductions" / "lrr.md").write_text("<!-- lkm:begin lrr/claims -->\n")
    assert any(p.startswith("docs/reproductions/lrr.md: unbalanced markers") for p in docs.check(PAPERS, built))


def test_markers_quoted_inside_a_line_are_prose_not_blocks(built: Path) -> None:
    readme = built / "README.md"
    readme.write_text(readme.read_text() + "\nBlocks sit between `<!-- lkm:begin ID -->` and `<!-- lkm:end -->`.\n")
    assert docs.check(PAPERS, built) == []


def test_a_perturbed_variant_does_not_outlive_its_refreshed_run(built: Path, monkeypatch) -> None:
    import dataclasses
    import shutil

    old_variant = built / docs.SNAPSHOT / "lpl_vs_svm-perturbed"
    shutil.copytree(built / docs.SNAPSHOT / "lpl_vs_svm", old_variant)
    block = dataclasses.replace(PAPERS["lpl"].DOC_BLOCKS["accuracy"], extra=("lpl_vs_svm-perturbed",))
    monkeypatch.setitem(PAPERS["lpl"].DOC_BLOCKS, "accuracy", block)
    report = docs.snapshot(PAPERS, built / "results", built)  # results/ has the run but no variant
    assert report.removed == ["lpl_vs_svm-perturbed"] and not old_variant.exists()
    shutil.rmtree(built / "results" / "lpl_vs_svm")  # now the run itself is absent: both are kept
    shutil.copytree(built / docs.SNAPSHOT / "lpl_vs_svm", old_variant)
    report = docs.snapshot(PAPERS, built / "results", built)
    assert report.kept == ["lpl_vs_svm", "lpl_vs_svm-perturbed"] and old_variant.exists()


def test_prose_edited_while_the_blocks_are_built_is_kept(built: Path, monkeypatch) -> None:
    """`lkm docs build` reads a file just before building its blocks and writes it only if
    it still holds what was read: an edit made meanwhile is kept and its blocks rebuilt."""
    readme = built / "README.md"
    stale = readme.read_text().replace(_block(readme.read_text(), "lpl/accuracy"), "(stale)\n")
    readme.write_text(stale)
    render, edits = docs.render, []

    def render_while_edited(block_id, snap, blocks):
        if not edits:  # the first block built: the user saves an edit of the prose meanwhile
            readme.write_text(readme.read_text().replace("Accuracy at sigma*:", "Accuracy at the selected sigma*:"))
            edits.append(block_id)
        return render(block_id, snap, blocks)

    monkeypatch.setattr(docs, "render", render_while_edited)
    assert docs.build(PAPERS, built) == ["README.md"]
    text = readme.read_text()
    assert "Accuracy at the selected sigma*:" in text and "(stale)" not in text
    assert docs.check(PAPERS, built) == []
