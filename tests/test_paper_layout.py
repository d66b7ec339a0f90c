"""The package layout holds (issues 11, 25): papers depend on the framework and the report,
never the reverse, and no layer needs another imported first."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from lkm.papers import PAPERS
from lkm.spec.outputs import PLUGIN_GROUP


#: lkm.report, lkm.reproduction.site and lkm.reproduction.docs are imported alone in a fresh
#: interpreter by the next test (which also checks that they import no paper).
@pytest.mark.parametrize("module", ["lkm.papers", "lkm.spec", "lkm.engine.runner", "lkm.spec.outputs",
                                    "lkm.numerics.kernels", "lkm.bench.speed", "lkm.files"])
def test_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    res = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("module", ["lkm.report", "lkm.reproduction.site", "lkm.reproduction.docs"])
def test_the_report_and_the_framework_import_no_paper(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('lkm.papers')))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_the_papers_package_is_an_output_entry_point_that_imports_every_paper() -> None:
    modules = {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    assert modules.get("papers") == "lkm.papers"
    code = ("import sys; from lkm.spec.outputs import load_plugins; load_plugins(); "
            "print(sorted(m.split('.')[2] for m in sys.modules if m.count('.') == 2 and m.startswith('lkm.papers.')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert set(PAPERS) <= set(ast.literal_eval(res.stdout))
