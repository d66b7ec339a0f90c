"""examples/: the sphinx-gallery scripts. Each has an rst title, text cells, cites its
source and uses only public names of lkm; the fastest runs standalone from another folder
with warnings as errors (the documentation site runs them all: docs/site)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))


def test_the_gallery_has_a_readme_and_at_least_eight_scripts() -> None:
    assert (EXAMPLES / "README.rst").read_text(encoding="utf-8").startswith("Examples\n========\n")
    assert len(SCRIPTS) >= 8


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_an_example_is_a_gallery_script_on_public_names(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = ast.get_docstring(tree, clean=False) or ""
    title, underline = doc.strip().splitlines()[:2]
    assert set(underline) == {"="} and len(underline) >= len(title), script.name
    assert "\n# %%\n" in text and "plt.subplots" in text  # text cells, and a figure
    assert any(year in doc for year in ("2005", "2006", "2007", "2008", "2010")), f"{script.name}: cite the paper"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lkm"):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private and "._" not in node.module, f"{script.name}: {node.module} {private}"
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            pytest.fail(f"{script.name}: private attribute .{node.attr}")


def test_the_results_pack_example_runs_standalone_without_warnings(tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    res = subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / "plot_results_pack.py")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert "cross_paper: " in res.stdout and "of 19 methods on 26 data sets" in res.stdout
    assert list(tmp_path.iterdir()) == []  # writes nothing where it runs
