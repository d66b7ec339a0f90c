"""What lkm imports is what pyproject.toml declares, and what lkm.methods offers is what
``dir()`` lists.

Every third-party module imported by name anywhere in ``lkm/**/*.py`` (inside functions
too) must be a distribution in ``[project].dependencies``: one that only arrives through
another package (Pillow through matplotlib, MarkupSafe through Jinja2, requests through
pooch) can vanish with that package's next release. Imports guarded as optional (inside
``try: ... except ImportError``, or listed in :data:`LAZY_OPTIONAL`) may instead be
declared in an extra of ``[project.optional-dependencies]``.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import lkm.methods

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lkm"

#: Optional modules imported without a try/except of their own, with why that is safe: a
#: plain ``import lkm`` (and every command that does not ask for them) never reaches them.
LAZY_OPTIONAL = {
    "dask": "lkm.engine.cluster imports it only inside functions reached after its guarded `import distributed`",
}

_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


@dataclass(frozen=True)
class Import:
    module: str  # top-level name, e.g. "PIL"
    where: str  # "lkm/reproduction/site/html.py:54"
    guarded: bool  # inside a try whose handlers catch ImportError
    top_level: bool  # executed when its module is imported (not inside a function)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds)


@functools.cache
def third_party_imports() -> tuple[Import, ...]:
    """Every absolute import of a module outside the standard library and lkm (parsed once)."""
    found: list[Import] = []

    def visit(node: ast.AST, path: Path, guarded: bool, top_level: bool) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.partition(".")[0]
            if top not in sys.stdlib_module_names and top != "lkm":
                found.append(Import(top, f"{path.relative_to(ROOT)}:{node.lineno}", guarded, top_level))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            top_level = False
        if isinstance(node, ast.Try):
            body_guarded = guarded or any(_catches_import_error(h) for h in node.handlers)
            for child in node.body:
                visit(child, path, body_guarded, top_level)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, path, guarded, top_level)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, path, guarded, top_level)

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), path, False, True)
    return tuple(found)


def _normalize(name: str) -> str:
    """A distribution name in PEP 503's normal form (``Jinja2`` -> ``jinja2``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return _normalize(match.group(1))


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """Distribution names of ``[project].dependencies`` and of each optional extra."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        pytest.skip("tomllib is Python 3.11+")
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    required = {_requirement_name(r) for r in project["dependencies"]}
    extras = {extra: {_requirement_name(r) for r in reqs}
              for extra, reqs in project.get("optional-dependencies", {}).items()}
    return required, extras


def distributions_of(module: str, mapping: dict[str, list[str]]) -> set[str]:
    """The installed distributions that provide top-level ``module`` (``PIL`` -> pillow);
    the module's own name when none is installed here."""
    return {_normalize(d) for d in mapping.get(module, [])} or {_normalize(module)}


def test_every_imported_module_is_a_declared_dependency() -> None:
    imports = third_party_imports()
    required, extras = declared()
    in_extras = set().union(*extras.values())
    mapping = importlib.metadata.packages_distributions()
    by_module: dict[str, list[Import]] = {}
    for imp in imports:
        by_module.setdefault(imp.module, []).append(imp)
    undeclared = []
    for module, uses in sorted(by_module.items()):
        optional = module in LAZY_OPTIONAL or all(u.guarded for u in uses)
        allowed = required | in_extras if optional else required
        dists = distributions_of(module, mapping)
        if not dists & allowed:
            where = ", ".join(u.where for u in uses[:3]) + (" ..." if len(uses) > 3 else "")
            kind = "an extra or [project].dependencies" if optional else "[project].dependencies"
            undeclared.append(f"{module} (distribution {'/'.join(sorted(dists))}; imported at {where}) "
                              f"is not in {kind}")
    assert not undeclared, "undeclared imports:\n" + "\n".join(undeclared)


def test_the_walk_sees_imports_inside_functions_and_guards() -> None:
    """The scan itself: the names the issue found, and the guarded optional ones."""
    imports = third_party_imports()
    modules = {i.module for i in imports}
    assert {"PIL", "markupsafe", "requests", "numpy", "sklearn", "libsvm"} <= modules
    assert not any(i.module in {"os", "sys", "lkm", "__future__"} for i in imports)
    pil = [i for i in imports if i.module == "PIL"]
    assert pil and not any(i.top_level for i in pil)  # imported inside png_size
    for module in ("hnswlib", "sklearnex", "distributed", "psutil"):
        uses = [i for i in imports if i.module == module]
        assert uses and all(i.guarded for i in uses), (module, uses)


def test_lazy_optional_modules_are_never_imported_at_module_level() -> None:
    for imp in third_party_imports():
        if imp.module in LAZY_OPTIONAL:
            assert not imp.top_level and not imp.where.startswith("lkm/__init__"), imp


def test_requirement_names_are_parsed() -> None:
    assert _requirement_name("dask[distributed]>=2024.1") == "dask"
    assert _requirement_name("psutil>=5.9; sys_platform != 'linux'") == "psutil"
    assert _requirement_name("Jinja2>=3.1") == "jinja2"
    assert _requirement_name("scikit_learn") == "scikit-learn"


# --- the package surface: lazily imported names are listed ---------------------------------

def test_dir_of_lkm_methods_lists_and_resolves_every_public_name() -> None:
    names = dir(lkm.methods)
    missing = [n for n in lkm.methods.__all__ if n not in names]
    assert not missing, missing
    for name in lkm.methods.__all__:
        assert getattr(lkm.methods, name) is not None, name
    assert names == sorted(names)


def test_dir_of_lkm_methods_imports_no_estimator() -> None:
    """Tab completion stays cheap: listing the names imports neither scikit-learn nor an
    estimator module."""
    code = ("import sys, lkm.methods as m; names = dir(m); "
            "assert 'HKNN' in names and 'SVMClassifier' in names; "
            "loaded = [k for k in sys.modules if k.startswith('sklearn') or k.startswith('lkm.methods.')]; "
            "print(loaded)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
