"""lkm works as an installed wheel, outside a clone: the specs ship inside the package,
so `lkm reproduce lpl --smoke` from an empty folder writes its results there."""

from __future__ import annotations

import os
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding lkm's wheel (not editable); its dependencies are this
    interpreter's own site-packages, added by a .pth file, so nothing is downloaded."""
    root = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "dist"),
          str(REPO)])
    (wheel,) = (root / "dist").glob("lkm-*.whl")
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
