"""lkm works as an installed wheel, outside a clone and without its optional extras:
the specs ship inside the package, so `lkm reproduce lpl --smoke` and `lkm run quickstart`
from an empty folder write their results there; the results pack ships too
(lkm/report/published_pack, pinned by lkm/report/published.json), so `lkm report --all
--results published` and `lkm compare`'s default reference work there; `lkm --help`
names only specs that ship; and a fit that needs `lkm[fast]` is skipped, then runs once
the extra is there.

The venvs are made offline: lkm's wheel installed with no dependencies, and the
dependencies are this interpreter's own installed distributions, linked one by one into a
folder the venv reads (a .pth line) — all but the distributions of the optional extras
(``fast``, ``dask``, read from lkm's metadata), which are absent as after `pip install
lkm`. "Installing" ``lkm[fast]`` links those in."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

import pytest
from conftest import made_once

REPO = Path(__file__).resolve().parents[1]
#: Generous: building, installing and a smoke reproduction on a loaded 2-core machine.
CEILING_SECONDS = 1800


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=CEILING_SECONDS, **kw)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """lkm's wheel, built once per test session (tests/conftest.made_once): a build writes
    the clone's build/ folder, so the workers of a session take turns on a lock (two at
    once collided there) and the later ones reuse the first one's wheel."""
    def build(dist: Path) -> None:
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
              str(REPO)])

    (built,) = made_once(tmp_path_factory, "wheel-dist", build).glob("lkm-*.whl")
    return built


def _extras_entries() -> set[str]:
    """The top-level site-packages entries (packages, modules, dist-info folders) of the
    distributions the optional extras ``fast`` and ``dask`` name."""
    names = {re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0] for req in metadata.requires("lkm") or []
             if re.search(r"""extra == ["'](fast|dask)["']""", req)}
    entries: set[str] = set()
    for name in names:
        try:
            files = metadata.files(name) or []
        except metadata.PackageNotFoundError:
            continue
        entries |= {f.parts[0] for f in files if f.parts and f.parts[0] != ".."}
    assert "sklearnex" in entries and any(e.startswith("hnswlib") for e in entries), entries
    return entries


def _link_dependencies(dest: Path, with_extras: bool) -> None:
    """Link every entry of this interpreter's site-packages into ``dest`` (lkm's own
    editable install left out), the extras' distributions only ``with_extras``."""
    dest.mkdir(parents=True, exist_ok=True)
    left_out = set() if with_extras else _extras_entries()
    here = [Path(p) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}]
    for folder in sorted(here):
        for entry in folder.iterdir() if folder.is_dir() else []:
            name = entry.name
            if name in left_out or name.endswith(".pth") or name.startswith(("__editable__", "lkm")) \
                    or (dest / name).exists():
                continue
            (dest / name).symlink_to(entry)


def _venv(root: Path, wheel: Path, with_extras: bool = False) -> Path:
    """A fresh venv holding lkm's wheel (not editable) and its dependencies, without the
    optional extras unless ``with_extras``; nothing is downloaded."""
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    deps = root / "dependencies"
    _link_dependencies(deps, with_extras)
    (purelib / "lkm-test-deps.pth").write_text(f"{deps}\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    return venv


@pytest.fixture(scope="session")
def installed(tmp_path_factory, wheel: Path) -> Path:
    """A fresh venv holding lkm's wheel and its dependencies, none of the optional extras:
    made once per test session, shared by the pytest-xdist workers (the tests only run
    it, from folders of their own)."""
    return made_once(tmp_path_factory, "wheel-venv", lambda root: _venv(root, wheel)) / "venv"


def _timed(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    res = _run(cmd, **kw)
    return res, time.monotonic() - start


def test_the_venv_has_no_optional_extra(installed: Path, tmp_path: Path) -> None:
    """As after `pip install lkm`: hnswlib, scikit-learn-intelex and dask do not import."""
    code = ("import importlib.util as u; "
            "print([m for m in ('hnswlib', 'sklearnex', 'dask', 'distributed') if u.find_spec(m)])")
    res = _run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path)
    assert res.stdout.strip() == "[]"


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


@pytest.mark.slow  # small version: test_lkm_run_of_a_shipped_spec_skips_what_needs_fast_then_runs_it_with_fast
def test_lkm_reproduce_smoke_skips_what_needs_fast_then_runs_it_with_fast(installed: Path, wheel: Path,
                                                                          tmp_path: Path, data_dir: Path) -> None:
    """Without lkm[fast], `lkm reproduce lpl --smoke` exits 0 from an empty folder, says
    before the first fit that LPL-hnswlib is skipped, and the tables say `not run: needs
    lkm[fast]`; with the extra installed, the same command fits just those and they
    are results."""
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "LKM_DATA_DIR": str(data_dir), "LKM_PROGRESS_SECONDS": "600", "COLUMNS": "200",
           "LKM_DISTANCE_CACHE": str(tmp_path / "distances")}
    env.pop("LKM_PRETEND_MISSING", None)
    command = ["reproduce", "lpl", "--smoke", "--jobs", "2", "--no-progress"]
    res, seconds = _timed([str(installed / "bin" / "lkm"), *command], cwd=work, env=env)
    print(f"lkm reproduce lpl --smoke, no extras: {seconds:.1f} s")
    assert "claims table" in res.stdout
    assert "LPL-hnswlib needs hnswlib: `pip install 'lkm[fast]'` — skipped" in " ".join(res.stderr.split())
    claims = work / "results" / "lpl_claims-smoke" / "claims.md"
    assert claims.is_file() and "smoke: not evidence" in claims.read_text(encoding="utf-8")
    annoy = work / "results" / "lpl_annoy-smoke" / "tables" / "summary.md"
    assert "not run: needs lkm[fast]" in annoy.read_text(encoding="utf-8")
    assert (work / "results" / "lpl_vs_svm-smoke" / "tables" / "summary.md").is_file()
    listed = _run([str(installed / "bin" / "lkm"), "specs", "list"], cwd=work, env=env).stdout
    assert "lpl_vs_svm" in listed and "cross_paper" in listed

    with_fast = _venv(tmp_path / "with-fast", wheel, with_extras=True)
    res, seconds = _timed([str(with_fast / "bin" / "lkm"), *command], cwd=work, env=env)
    print(f"lkm reproduce lpl --smoke again, with lkm[fast]: {seconds:.1f} s")
    assert "skipped" not in res.stdout + res.stderr
    assert "not run" not in annoy.read_text(encoding="utf-8")
    assert "LPL-hnswlib" in annoy.read_text(encoding="utf-8")


def test_lkm_run_of_a_shipped_spec_skips_what_needs_fast_then_runs_it_with_fast(installed: Path, wheel: Path,
                                                                                tmp_path: Path, data_dir: Path) -> None:
    """The small version of the test above (what `make test` runs): `lkm run lpl_annoy
    --smoke`, a spec inside the package, from an empty folder without lkm[fast] says
    that LPL-hnswlib is skipped (before the first fit: tests/test_optional_extras.py) and
    its summary row says `not run: needs lkm[fast]`; with the extra installed the same
    command fits just those."""
    work, env = _empty(tmp_path, data_dir)
    env.pop("LKM_PRETEND_MISSING", None)
    command = ["run", "lpl_annoy", "--smoke", "--jobs", "2", "--no-progress"]
    res, seconds = _timed([str(installed / "bin" / "lkm"), *command], cwd=work, env=env)
    print(f"lkm run lpl_annoy --smoke, no extras: {seconds:.1f} s")
    assert "LPL-hnswlib needs hnswlib: `pip install 'lkm[fast]'` — skipped" in " ".join(res.stderr.split())
    assert "lpl_annoy-smoke: 12 fits (0 already recorded, 3 not run)" in " ".join(res.stdout.split())
    summary = work / "results" / "lpl_annoy-smoke" / "tables" / "summary.md"
    assert "not run: needs lkm[fast]" in summary.read_text(encoding="utf-8")

    with_fast = _venv(tmp_path / "with-fast", wheel, with_extras=True)
    res, seconds = _timed([str(with_fast / "bin" / "lkm"), *command], cwd=work, env=env)
    print(f"lkm run lpl_annoy --smoke again, with lkm[fast]: {seconds:.1f} s")
    assert "skipped" not in res.stdout + res.stderr
    assert "lpl_annoy-smoke: 12 fits (9 already recorded)" in " ".join(res.stdout.split())
    text = summary.read_text(encoding="utf-8")
    assert "not run" not in text and "LPL-hnswlib" in text


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
    _, seconds = _timed([lkm, "run", "quickstart", "--jobs", "2", "--no-progress"], cwd=work, env=env)
    print(f"lkm run quickstart: {seconds:.1f} s")
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


def test_compare_smoke_ranks_a_new_classifier_without_extras(installed: Path, tmp_path: Path, data_dir: Path,
                                                              benchmark_smoke: Path) -> None:
    """`lkm compare sklearn.linear_model.RidgeClassifier --smoke` from a folder holding
    only the benchmark's smoke run (`lkm run cross_paper --smoke` writes it there; the
    session's copy stands in): it fits RidgeClassifier and ranks it among the 20."""
    work, env = _empty(tmp_path, data_dir)
    shutil.copytree(benchmark_smoke, work / "results" / "cross_paper-smoke")
    res, seconds = _timed([str(installed / "bin" / "lkm"), "compare", "sklearn.linear_model.RidgeClassifier",
                           "--smoke", "--no-progress"], cwd=work, env=env)
    print(f"lkm compare sklearn.linear_model.RidgeClassifier --smoke: {seconds:.1f} s")
    out = " ".join(res.stdout.split())
    assert re.search(r"RidgeClassifier: rank \d+ of 20 ", out), res.stdout
    assert (work / "results" / "compare" / "RidgeClassifier-smoke" / "comparison" / "ranking.md").is_file()


def test_report_of_a_one_run_pack_from_an_empty_folder(installed: Path, tmp_path: Path, data_dir: Path) -> None:
    """The small version of the test below (what `make test` runs): the installed lkm
    builds the full report machinery's output (page, Markdown, the run's tables and the
    papers' sections) from a pack of one shipped run, offline and without the dataset
    mirror, into --out only."""
    from lkm.report.pack import write_manifest

    work, env = _empty(tmp_path, data_dir)
    env = {k: v for k, v in env.items() if k != "LKM_DATA_DIR"}
    env.update(LKM_CACHE_DIR=str(tmp_path / "cache"), LKM_OFFLINE="1", PYTHONWARNINGS="ignore")
    pack = tmp_path / "pack"
    shutil.copytree(REPO / "docs" / "runs" / "lpl_sigma_sonar", pack / "lpl_sigma_sonar")
    write_manifest(pack, version="wheel.1")
    res, seconds = _timed([str(installed / "bin" / "lkm"), "report", "--all", "--results", str(pack), "--out", "rep",
                           "--jobs", "2"], cwd=work, env=env)
    print(f"lkm report --all of a one-run pack: {seconds:.1f} s")
    out = work / "rep"
    assert (out / "index.html").is_file() and (out / "report.md").is_file()
    assert (out / "runs" / "lpl_sigma_sonar" / "tables" / "summary.json").is_file()
    assert str(REPO) not in res.stdout
    assert "`lkm report --all --results" in (out / "report.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in work.iterdir()) == ["rep"]


@pytest.mark.slow  # small version: test_report_of_a_one_run_pack_from_an_empty_folder
def test_report_of_the_shipped_pack_from_an_empty_folder(installed: Path, tmp_path: Path, data_dir: Path) -> None:
    """The README's first command as an installed user meets it: `lkm report --all
    --results published` rebuilds the full report (every paper's claims, every run and
    the benchmark) from the pack inside the package, from the records alone (no dataset
    mirror, offline), into --out only (~25-60 s on 2 cores: the suite's one full report
    of the shipped pack)."""
    work, env = _empty(tmp_path, data_dir)
    env = {k: v for k, v in env.items() if k != "LKM_DATA_DIR"}
    env.update(LKM_CACHE_DIR=str(tmp_path / "cache"), LKM_OFFLINE="1", PYTHONWARNINGS="ignore")
    res, seconds = _timed([str(installed / "bin" / "lkm"), "report", "--all", "--results", "published", "--out", "rep",
                           "--jobs", "2"], cwd=work, env=env)
    print(f"lkm report --all --results published --out rep: {seconds:.1f} s")
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
