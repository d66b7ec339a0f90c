"""The tree keeps its layers: the import-linter contracts of pyproject.toml hold (imports
only go down, the papers are independent of each other), no module imports another's
private name, and docs/architecture.md's import picture is the one the code gives."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lkm"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ``from X import ...`` reads, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def test_the_import_contracts_hold() -> None:
    """`lint-imports` with the contracts of pyproject.toml (layers, independent papers)."""
    res = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                          "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_no_module_imports_a_private_name_of_another() -> None:
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                source = _imported_from(node, module, path.name == "__init__.py")
                if not source.startswith("lkm"):
                    continue
                offences += [f"{module}: from {source} import {a.name}" for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offences, "\n".join(offences)


def test_a_private_import_across_modules_is_caught(tmp_path: Path) -> None:
    """The check above can fail: a module that imports another's private helper is named."""
    tree = ast.parse("from lkm.cli.app import _hidden\nfrom . import _also\n")
    found = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names
             if a.name.startswith("_") and _imported_from(node, "lkm.cli.runs", False).startswith("lkm")]
    assert found == ["_hidden", "_also"]


def test_the_architecture_picture_is_generated_from_the_code() -> None:
    res = subprocess.run([sys.executable, "scripts/import_graph.py", "--check", "docs/architecture.md"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("layer", ["lkm.engine", "lkm.numerics", "lkm.bench", "lkm.reproduction", "lkm.report",
                                   "lkm.spec", "lkm.data", "lkm.methods", "lkm.papers"])
def test_each_layer_is_a_package_with_a_docstring(layer: str) -> None:
    init = PACKAGE.joinpath(*layer.split(".")[1:], "__init__.py")
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} says what the layer is"
