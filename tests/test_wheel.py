"""lkm works as an installed wheel, outside a clone: the specs ship inside the package,
so `lkm reproduce lpl --smoke` and `lkm run quickstart` from an empty folder write their
results there; the results pack ships too (lkm/report/published_pack, pinned by
lkm/report/published.json), so `lkm report --all --results published` and `lkm compare`'s
default reference work there; and `lkm --help` names only specs that ship."""

from __future__ import annotations

import fcntl
import json
import os
import re
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Generous: building, installing and a smoke reproduction on a loaded 2-core machine.
CEILING_SECONDS = 1800


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=CEILING_SECONDS, **kw)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="session")
def wheel(smoke_root: Path) -> Path:
    """lkm's wheel, built once per test session: a build writes the clone's build/ folder,
    so the workers of a session take turns on a lock (two at once collided there) and
    the later ones reuse the first one's wheel."""
    dist = smoke_root.parent / "wheel-dist"
    with open(smoke_root.parent / ".wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not list(dist.glob("lkm-*.whl")):
            _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                  str(REPO)])
    (built,) = dist.glob("lkm-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel: Path) -> Path:
    """A fresh venv holding lkm's wheel (not editable); its dependencies are this
    interpreter's own site-packages, added by a .pth file, so nothing is downloaded."""
    root = tmp_path_factory.mktemp("wheel")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    (purelib / "lkm-test-deps.pth").write_text("\n".join(sorted(here)) + "\n")
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)])
    return venv


def test_the_installed_wheel_is_not_the_source_tree(installed: Path, tmp_path: Path) -> None:
    res = _run([str(installed / "bin" / "python"), "-c", "import lkm; print(lkm.__file__)"], cwd=tmp_path)
    location = Path(res.stdout.strip())
    assert installed in location.parents and REPO not in location.parents


def test_the_wheel_carries_every_data_file_of_the_package(installed: Path, tmp_path: Path) -> None:
    """Every file of lkm/ that is not Python source (specs, paper values, readings,
    differences, templates, the registry, the pin) is in the installed package: the
    readings.yaml files were not, so an installed report said "no such reading was run"."""
    res = _run([str(installed / "bin" / "python"), "-c", "import lkm; print(lkm.__file__)"], cwd=tmp_path)
    site_lkm = Path(res.stdout.strip()).parent

    def data_files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*")
                if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
                and "published_pack" not in p.parts}

    assert data_files(REPO / "lkm") <= data_files(site_lkm), data_files(REPO / "lkm") - data_files(site_lkm)


def test_lkm_reproduce_smoke_runs_from_an_empty_folder(installed: Path, tmp_path: Path, data_dir: Path) -> None:
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir), "LKM_PROGRESS_SECONDS": "600",
           "LKM_DISTANCE_CACHE": str(tmp_path / "distances")}
    res = _run([str(installed / "bin" / "lkm"), "reproduce", "lpl", "--smoke", "--jobs", "2", "--no-progress"],
               cwd=work, env=env)
    assert "claims table" in res.stdout
    claims = work / "results" / "lpl_claims-smoke" / "claims.md"
    assert claims.is_file() and "smoke: not evidence" in claims.read_text(encoding="utf-8")
    assert (work / "results" / "lpl_vs_svm-smoke" / "tables" / "summary.md").is_file()
    listed = _run([str(installed / "bin" / "lkm"), "specs", "list"], cwd=work, env=env).stdout
    assert "lpl_vs_svm" in listed and "cross_paper" in listed


def _empty(tmp_path: Path, data_dir: Path) -> tuple[Path, dict[str, str]]:
    """An empty working folder and the environment the installed lkm runs in there."""
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir), "LKM_PROGRESS_SECONDS": "600", "COLUMNS": "200",
           "LKM_DISTANCE_CACHE": str(tmp_path / "distances")}
    return work, env


def test_the_wheel_carries_the_pinned_results_pack(installed: Path, tmp_path: Path) -> None:
    """The pack inside the package is docs/runs file for file (its manifest the pinned one)."""
    res = _run([str(installed / "bin" / "python"), "-c",
                "from lkm.report.pack import published_pack; p = published_pack(); print(p.root); print(len(p.files))"],
               cwd=tmp_path)
    root, count = res.stdout.split()
    assert installed in Path(root).parents and Path(root).name == "published_pack"
    assert (Path(root) / "PACK.json").read_bytes() == (REPO / "docs" / "runs" / "PACK.json").read_bytes()
    assert int(count) == len([p for p in (REPO / "docs" / "runs").rglob("*") if p.is_file()]) - 1


def test_quickstart_and_help_from_an_empty_folder(installed: Path, tmp_path: Path, data_dir: Path) -> None:
    """`lkm run quickstart` (what `lkm --help` starts with) finds the shipped spec by name,
    and every `lkm run NAME` the help names is a spec lkm ships."""
    work, env = _empty(tmp_path, data_dir)
    lkm = str(installed / "bin" / "lkm")
    helped = _run([lkm, "--help"], cwd=work, env=env).stdout
    named = re.findall(r"lkm run ([^\s`]+)", helped)
    assert "quickstart" in named
    listed = _run([lkm, "specs", "list"], cwd=work, env=env).stdout
    shipped = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert set(named) <= shipped, (named, listed)
    _run([lkm, "run", "quickstart", "--jobs", "2", "--no-progress"], cwd=work, env=env)
    assert (work / "results" / "quickstart" / "tables" / "summary.md").is_file()


def test_compare_ranks_against_the_shipped_results_from_an_empty_folder(installed: Path, tmp_path: Path,
                                                                          data_dir: Path) -> None:
    """`lkm compare X`'s default reference is the published pack inside the installed
    package (verified against its pin); --dry-run prints the plan and writes nothing."""
    work, env = _empty(tmp_path, data_dir)
    res = _run([str(installed / "bin" / "lkm"), "compare", "sklearn.linear_model.RidgeClassifier",
                "--param", "alpha=0.01,0.1,1,10,100", "--dry-run"], cwd=work, env=env)
    out = " ".join(res.stdout.split())
    assert "published_pack/cross_paper" in out and str(installed) in out, res.stdout
    assert "fits in all" in out
    assert not any(work.iterdir())


def test_report_of_the_shipped_pack_from_an_empty_folder(installed: Path, tmp_path: Path, data_dir: Path) -> None:
    """The README's first command as an installed user meets it: `lkm report --all
    --results published` rebuilds the full report (every paper's claims, every run and
    the benchmark) from the pack inside the package, from the records alone (no dataset
    mirror, offline), into --out only (~25-60 s on 2 cores: the suite's one full report
    of the shipped pack)."""
    work, env = _empty(tmp_path, data_dir)
    env = {k: v for k, v in env.items() if k != "LKM_DATA_DIR"}
    env.update(LKM_CACHE_DIR=str(tmp_path / "cache"), LKM_OFFLINE="1", PYTHONWARNINGS="ignore")
    res = _run([str(installed / "bin" / "lkm"), "report", "--all", "--results", "published", "--out", "rep",
                "--jobs", "2"], cwd=work, env=env)
    out = work / "rep"
    assert (out / "index.html").is_file() and (out / "report.md").is_file()
    assert (out / "runs" / "PACK.json").read_bytes() == (REPO / "docs" / "runs" / "PACK.json").read_bytes()
    assert "from the results pack published" in res.stdout and str(REPO) not in res.stdout
    assert "`lkm report --all --results published --out rep` rebuilds it" in (out / "report.md").read_text()
    assert "missing:" not in res.stdout + res.stderr  # no paper section says "not written yet"
    assert "not written yet" not in (out / "index.html").read_text(encoding="utf-8")
    for key in ("lpl", "npps", "lrr", "cevikalp", "prls"):
        claims = json.loads((out / "runs" / f"{key}_claims" / "claims.json").read_text(encoding="utf-8"))
        assert claims["rows"], key
    assert (out / "runs" / "cross_paper_summary" / "friedman.json").is_file()
    assert sorted(p.name for p in work.iterdir()) == ["rep"]
