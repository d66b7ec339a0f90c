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


def _strong_groups(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = {stack.pop()}
            while v not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One import cycle per strongly connected group of ``edges`` (module -> modules it
    imports), as the shortest path ``[a, b, ..., a]`` from the group's first module."""
    cycles = []
    for group in sorted(_strong_groups(edges), key=min):
        start = min(group)
        paths = {start: [start]}
        frontier = [start]
        while not any(start in edges.get(v, ()) for v in frontier):
            step = []
            for v in frontier:
                for w in sorted((edges.get(v, set()) & group) - set(paths)):
                    paths[w] = [*paths[v], w]
                    step.append(w)
            frontier = step
        last = next(v for v in frontier if start in edges.get(v, ()))
        cycles.append([*paths[last], start])
    return cycles


def test_no_import_cycle_between_modules() -> None:
    """No lkm module imports, even inside a function or under ``TYPE_CHECKING`` (grimp
    counts both), a module that imports it back through any chain: shared types live
    below both."""
    import grimp

    graph = grimp.build_graph("lkm", include_external_packages=False, cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    cycles = _cycles(edges)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_an_import_cycle_through_function_and_type_checking_imports_is_caught(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """grimp's graph holds an import inside a function and one under ``TYPE_CHECKING``, so
    the check above sees a cycle closed by either."""
    import grimp

    pkg = tmp_path / "cyclic"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic.b import B\n")
    (pkg / "b.py").write_text("def f():\n    from cyclic import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic", cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == [["cyclic.a", "cyclic.b", "cyclic.a"]]


def test_an_import_cycle_is_caught_and_printed() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert _cycles(edges) == [["a", "b", "c", "a"], ["e", "e2", "e"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
