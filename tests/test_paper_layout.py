"""The package layout holds (issue 11): papers depend on report, never the reverse, and
none of lkm.papers, lkm.report, lkm.spec, lkm.runner needs another imported first."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from lkm.outputs import PLUGIN_GROUP
from lkm.papers import PAPERS


@pytest.mark.parametrize("module", ["lkm.papers", "lkm.report", "lkm.spec", "lkm.runner", "lkm.outputs"])
def test_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    res = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_report_does_not_import_any_paper() -> None:
    code = "import sys, lkm.report; print(sorted(m for m in sys.modules if m.startswith('lkm.papers')))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_every_paper_is_an_output_entry_point() -> None:
    modules = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    assert {key: f"lkm.papers.{key}" for key in PAPERS}.items() <= modules.items()
