"""The results pack (docs/runs: records, specs, provenance, a sha256 manifest) and the
full report built from it into a folder of the user's choosing (issue 28)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.report.pack import (
    MANIFEST,
    PackError,
    open_pack,
    pack_files,
    published_pack,
    verify_pack,
    write_archive,
    write_manifest,
)
from lkm.reproduction.rebuild import BUILT_MARK, check_out

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "docs" / "runs"
#: Two small runs of the shipped pack, for the tests that build a pack of their own.
SMALL = ("lpl_sigma_sonar", "npps_invariance")


def _small_pack(root: Path) -> Path:
    for name in SMALL:
        shutil.copytree(SHIPPED / name, root / name)
    write_manifest(root, version="test.1")
    return root


def _tree_digest(*folders: Path) -> dict[str, str]:
    return {str(p): p.stat().st_mtime_ns.__str__() + ":" + str(p.stat().st_size)
            for f in folders for p in sorted(f.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_the_shipped_pack_matches_its_manifest_and_its_pin() -> None:
    pack = published_pack()
    assert pack.root.resolve() == SHIPPED.resolve()
    assert set(pack.files) == set(pack_files(SHIPPED))  # every file listed, none unlisted
    assert pack.runs == sorted(d.name for d in SHIPPED.iterdir() if d.is_dir())
    for name in pack.runs:  # what the report is computed from is in each run
        assert {"spec.yaml", "plan.json", "provenance.json"} <= {p.name for p in (SHIPPED / name).iterdir()}
        assert any((SHIPPED / name / "records").iterdir())


@pytest.mark.parametrize("damage", ["altered", "missing", "unlisted", "newer format"])
def test_a_damaged_pack_is_refused_in_one_line_naming_the_file(tmp_path: Path, damage: str) -> None:
    pack = _small_pack(tmp_path / "pack")
    spec = pack / SMALL[0] / "spec.yaml"
    if damage == "altered":
        spec.write_text(spec.read_text() + "\n# edited\n")
    elif damage == "missing":
        spec.unlink()
    elif damage == "unlisted":
        (pack / SMALL[0] / "notes.txt").write_text("mine")
    else:
        manifest = json.loads((pack / MANIFEST).read_text())
        (pack / MANIFEST).write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(PackError) as err:
        verify_pack(pack)
    message = str(err.value)
    assert "\n" not in message
    expected = {"altered": "spec.yaml", "missing": "spec.yaml", "unlisted": "notes.txt", "newer format": MANIFEST}
    assert expected[damage] in message


def test_a_manifest_keeps_its_version_until_a_file_changes(tmp_path: Path) -> None:
    pack = _small_pack(tmp_path / "pack")
    assert write_manifest(pack).version == "test.1"  # nothing changed: same version
    (pack / SMALL[0] / "plan.json").write_text("{}\n")
    assert write_manifest(pack).version != "test.1"


def test_a_pack_changed_the_day_it_was_versioned_gets_a_version_of_its_own(tmp_path: Path, monkeypatch) -> None:
    import lkm.report.pack as pack_module

    monkeypatch.setattr(pack_module.time, "strftime", lambda fmt, *a: "2026.11.29" if "." in fmt else "2026-11-29")
    pack = _small_pack(tmp_path / "pack")
    (pack / SMALL[0] / "plan.json").write_text("{}\n")
    assert write_manifest(pack).version == "2026.11.29"
    (pack / SMALL[0] / "plan.json").write_text("{ }\n")
    assert write_manifest(pack).version == "2026.11.29.2"  # same day, other files: another version
    assert write_manifest(pack).version == "2026.11.29.2"  # nothing changed since: kept
    (pack / SMALL[0] / "plan.json").write_text("{  }\n")
    assert write_manifest(pack).version == "2026.11.29.3"


def test_an_archive_is_byte_stable_and_opens_from_a_path_or_a_pinned_url(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LKM_CACHE_DIR", str(tmp_path / "cache"))
    pack = verify_pack(_small_pack(tmp_path / "pack"))
    sha = write_archive(pack, tmp_path / "a.tar.gz")
    assert write_archive(pack, tmp_path / "b.tar.gz") == sha
    from_file = open_pack(str(tmp_path / "a.tar.gz"))
    assert from_file.files == pack.files and from_file.version == "test.1"
    from_url = open_pack(f"{(tmp_path / 'a.tar.gz').as_uri()}#sha256={sha}")
    assert from_url.files == pack.files
    with pytest.raises(PackError, match="not the one given"):
        open_pack(f"{(tmp_path / 'b.tar.gz').as_uri()}#sha256={'0' * 64}")
    with pytest.raises(PackError, match="no such folder"):
        open_pack(str(tmp_path / "nowhere"))


def test_out_inside_the_pack_or_over_a_foreign_folder_is_refused(tmp_path: Path) -> None:
    pack = _small_pack(tmp_path / "pack")
    for bad in (pack, pack / "report", tmp_path):
        with pytest.raises(Exception, match="results pack"):
            check_out(bad, pack)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("x")
    with pytest.raises(Exception, match="did not build"):
        check_out(foreign, pack)
    res = CliRunner().invoke(app, ["report", "--all", "--results", str(pack), "--out", str(pack / "r")])
    assert res.exit_code == 2 and "results pack" in res.output


def test_the_report_of_a_pack_is_written_to_out_only_and_a_second_build_reuses_it(tmp_path: Path) -> None:
    pack = _small_pack(tmp_path / "pack")
    before = _tree_digest(pack, REPO / "docs", REPO / "lkm")
    out = tmp_path / "report"
    res = CliRunner().invoke(app, ["report", "--all", "--results", str(pack), "--out", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert (out / "index.html").is_file() and (out / "report.md").is_file()
    assert (out / "runs" / SMALL[0] / "tables" / "summary.json").is_file()
    assert (out / "runs" / MANIFEST).read_bytes() == (pack / MANIFEST).read_bytes()
    state = json.loads((out / BUILT_MARK).read_text())
    assert state["version"] == "test.1" and f"run {SMALL[0]}" in state["steps"]
    assert _tree_digest(pack, REPO / "docs", REPO / "lkm") == before  # nothing written into the pack or the tree
    index = (out / "index.html").stat().st_mtime_ns
    tables = (out / "runs" / SMALL[0] / "tables" / "summary.json").stat().st_mtime_ns
    res = CliRunner().invoke(app, ["report", "--all", "--results", str(pack), "--out", str(out), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    assert (out / "runs" / SMALL[0] / "tables" / "summary.json").stat().st_mtime_ns == tables  # step skipped
    assert (out / "index.html").stat().st_mtime_ns >= index


def test_lkm_docs_pack_writes_the_archive_and_prints_how_to_open_it(tmp_path: Path) -> None:
    _small_pack(tmp_path / "docs" / "runs")
    res = CliRunner().invoke(app, ["docs", "pack", str(tmp_path / "out.tar.gz"), "--root", str(tmp_path)])
    assert res.exit_code == 0, res.output
    sha = res.output.split("sha256 ")[1].split()[0]
    assert f"#sha256={sha}" in res.output
    assert open_pack(str(tmp_path / "out.tar.gz"), cache=tmp_path / "cache").version == "test.1"
    (tmp_path / "docs" / "runs" / SMALL[0] / "plan.json").write_text("{}\n")  # altered: refused, named
    res = CliRunner().invoke(app, ["docs", "pack", str(tmp_path / "b.tar.gz"), "--root", str(tmp_path)])
    assert res.exit_code == 2 and "plan.json" in res.output and not (tmp_path / "b.tar.gz").exists()
