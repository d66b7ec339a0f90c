"""The documentation site (docs/site, `make docs`) builds with warnings as errors, and has
its landing page, every command in the CLI reference, a page per estimator in the API
reference, and every gallery example executed with its output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import made_once

# the build runs every example: about 2 min on 2 cores
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "docs" / "site"
#: Folders the build writes into the site's source: a stale copy would let sphinx-gallery
#: skip examples it ran before, so the test builds a fresh copy.
GENERATED = ("_build", "generated", "auto_examples", "sg_execution_times.rst")


def command_paths() -> list[str]:
    """Every command and subcommand of `lkm`, as typed (``lkm datasets list``)."""
    import typer

    from lkm.cli import app

    paths: list[str] = []

    def walk(command, path: str) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            if sub.hidden:
                continue
            paths.append(f"{path} {name}")
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "lkm")
    return paths


def estimator_names() -> list[str]:
    """The class name of every registered classifier, sampler and regressor."""
    from lkm.methods import METHOD_PATHS, REGRESSOR_PATHS, SAMPLER_PATHS

    paths = [*METHOD_PATHS.values(), *SAMPLER_PATHS.values(), *REGRESSOR_PATHS.values()]
    return [path.rsplit(".", 1)[1] for path in paths]


def repository_copy(root: Path) -> Path:
    """A view of the repository under ``root``: docs/site copied without anything a build
    generated, every other entry a symbolic link to the real one (nothing written back)."""
    for entry in REPO.iterdir():
        if entry.name not in ("docs", ".git", ".venv"):
            (root / entry.name).symlink_to(entry)
    (root / "docs").mkdir()
    for entry in (REPO / "docs").iterdir():
        if entry.name != "site":
            (root / "docs" / entry.name).symlink_to(entry)
    shutil.copytree(SITE, root / "docs" / "site", ignore=shutil.ignore_patterns(*GENERATED))
    return root


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, data_dir: Path) -> Path:
    """The site built from a fresh copy with `sphinx-build -W --keep-going` (as `make docs`),
    once per test session: the pytest-xdist workers share it (tests/conftest.made_once)."""
    def build(folder: Path) -> None:
        (folder / "repo").mkdir()
        root = repository_copy(folder / "repo")
        env = os.environ | {"LKM_DATA_DIR": str(data_dir), "MPLBACKEND": "Agg"}
        result = subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
             str(root / "docs" / "site"), str(folder / "html")],
            cwd=root, env=env, capture_output=True, text=True, timeout=1800,
        )
        assert result.returncode == 0, f"sphinx-build failed:\n{result.stderr[-6000:]}"

    return made_once(tmp_path_factory, "docs-site", build) / "html"


def test_landing_page_links_every_section(built_site: Path) -> None:
    index = (built_site / "index.html").read_text(encoding="utf-8")
    assert "local kernel machines" in index
    for page in ("getting-started.html", "guide/index.html", "cli.html", "api/index.html",
                 "auto_examples/index.html", *(f"reproductions/{key}.html"
                                               for key in ("lpl", "npps", "lrr", "cevikalp", "prls"))):
        assert f'href="{page}' in index, page
        assert (built_site / page).is_file(), page


def test_cli_reference_names_every_command(built_site: Path) -> None:
    cli = (built_site / "cli.html").read_text(encoding="utf-8")
    paths = command_paths()
    assert "lkm datasets list" in paths and "lkm run" in paths
    missing = [path for path in paths if f'id="{path.replace(" ", "-")}"' not in cli
               or f"Usage: {path} " not in cli]
    assert not missing, f"commands without a section in the CLI reference: {missing}"


def test_api_reference_has_a_page_per_estimator(built_site: Path) -> None:
    generated = built_site / "api" / "generated"
    names = [f"lkm.methods.{name}" for name in estimator_names()]
    names += ["lkm.methods.resolve_estimator", "lkm.data.load_dataset", "lkm.data.Dataset",
              "lkm.report.pack.published_folder", "lkm.api"]
    missing = [name for name in names if not (generated / f"{name}.html").is_file()]
    assert not missing, f"no API page for {missing}"
    lpl = (generated / "lkm.methods.LocalizedProjectionLearning.html").read_text(encoding="utf-8")
    assert 'id="lkm.methods.LocalizedProjectionLearning"' in lpl and "Parameters" in lpl


def test_every_example_ran_with_its_output(built_site: Path) -> None:
    examples = sorted((REPO / "examples").glob("plot_*.py"))
    assert examples, "no examples/plot_*.py"
    for example in examples:
        page = built_site / "auto_examples" / f"{example.stem}.html"
        assert page.is_file(), f"no gallery page for {example.name}"
        text = page.read_text(encoding="utf-8")
        shows_output = any(mark in text for mark in ("sphx-glr-single-img", "sphx-glr-multi-img",
                                                     "sphx-glr-script-out"))
        assert shows_output, f"{example.name}: no figure and no printed output on its page"
