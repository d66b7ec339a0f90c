"""The public API's docstrings: numpydoc-valid (they become the Sphinx API reference),
free of private lkm names, and with Examples that run.

The public API: every estimator in :mod:`lkm.methods`' registries, ``LocalKernelClassifier``,
``resolve_estimator``, everything in ``lkm.api.__all__``, ``lkm.data.load_dataset``,
``lkm.data.Dataset`` and ``lkm.report.pack.published_folder``. Each object's checks are
one test case named after it, so a failure names the object."""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
from typing import Any

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

from lkm.methods import METHOD_PATHS, REGRESSOR_PATHS, SAMPLER_PATHS  # noqa: E402

#: numpydoc's checks every public docstring passes: GL08 no docstring, SS01 no summary,
#: PR01 a parameter not documented, PR02 a documented parameter that does not exist,
#: RT01 no Returns section (functions and methods), EX01 no Examples section (only
#: classes and module-level functions: the class's examples show its methods), PR10
#: "param:type" without the space, SS06 a summary over several lines, GL02/GL03
#: misplaced blank lines.
CHECKS = {"GL02", "GL03", "GL08", "SS01", "SS06", "PR01", "PR02", "PR10", "RT01", "EX01"}
#: Public methods checked on each class (those it defines or inherits from lkm).
METHODS = ("fit", "predict", "decision_function", "predict_proba", "fit_resample", "score", "transform")


def _public_names() -> list[str]:
    names = [*METHOD_PATHS.values(), *SAMPLER_PATHS.values(), *REGRESSOR_PATHS.values(),
             "lkm.methods.base.LocalKernelClassifier", "lkm.methods.resolve_estimator",
             "lkm.data.load_dataset", "lkm.data.Dataset", "lkm.report.pack.published_folder"]
    try:
        api = importlib.import_module("lkm.api")
    except ImportError:  # lkm.api not there yet: the rest is still checked
        api = None
    for name in getattr(api, "__all__", []):
        obj = getattr(api, name)
        names.append(f"{getattr(obj, '__module__', 'lkm.api')}.{getattr(obj, '__qualname__', name)}"
                      if callable(obj) else f"lkm.api.{name}")
    return list(dict.fromkeys(names))


def _resolve(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        module, _, cls = module.rpartition(".")
        return getattr(getattr(importlib.import_module(module), cls), name)


def _own_lkm_method(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is a public method defined by lkm (not scikit-learn's own)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass.__module__.startswith("lkm.")
    return False


def _targets(dotted: str) -> list[tuple[str, bool]]:
    """``(dotted name, check EX01)`` for the object and, for a class, its public methods."""
    obj = _resolve(dotted)
    out = [(dotted, True)]
    if inspect.isclass(obj):
        out += [(f"{dotted}.{m}", False) for m in METHODS if _own_lkm_method(obj, m)
                and _method_exists(obj, m)]
    return out


def _method_exists(cls: type, name: str) -> bool:
    try:
        return callable(inspect.getattr_static(cls, name))
    except AttributeError:
        return False


PUBLIC = _public_names()


def _errors(dotted: str, examples: bool) -> list[str]:
    result = numpydoc_validate.validate(dotted)
    chosen = CHECKS if examples else CHECKS - {"EX01"}
    return [f"{dotted}: {code} {message}" for code, message in result["errors"] if code in chosen]


@pytest.mark.parametrize("dotted", PUBLIC)
def test_numpydoc_validates(dotted: str) -> None:
    errors = [e for target, examples in _targets(dotted) for e in _errors(target, examples)]
    assert not errors, "\n".join(errors)


def _private_lkm_names() -> set[str]:
    """Every private name lkm defines: functions, classes, methods and assigned names
    starting with one underscore (read from the package's source with :mod:`ast`)."""
    import ast
    from pathlib import Path

    import lkm

    names: set[str] = set()
    for path in Path(lkm.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
                names.update(t.attr for t in targets if isinstance(t, ast.Attribute))
    return {n for n in names if n.startswith("_") and not n.startswith("__") and len(n) > 2}


PRIVATE_NAMES = _private_lkm_names()


def _docstrings(dotted: str) -> dict[str, str]:
    obj = _resolve(dotted)
    docs = {dotted: inspect.getdoc(obj) or ""}
    if inspect.isclass(obj):
        for name in METHODS:
            if _own_lkm_method(obj, name) and _method_exists(obj, name):
                docs[f"{dotted}.{name}"] = inspect.getdoc(inspect.getattr_static(obj, name)) or ""
    return docs


@pytest.mark.parametrize("dotted", PUBLIC)
def test_no_private_names(dotted: str) -> None:
    """No docstring names a private lkm function, class, method or attribute."""
    found = {}
    for where, doc in _docstrings(dotted).items():
        words = set(re.findall(r"(?<![\w.])(?:\w+\.)*(_\w+)", doc))
        if words & PRIVATE_NAMES:
            found[where] = sorted(words & PRIVATE_NAMES)
    assert not found, found


@pytest.mark.parametrize("dotted", PUBLIC)
def test_rest_pitfalls(dotted: str) -> None:
    """reST that breaks the Sphinx build (warnings are errors): an odd number of double
    backticks (an unclosed literal), a bare ``|`` (a substitution reference) or a bare
    ``*`` before a word (emphasis, as in an unescaped ``*args``) outside literals and
    doctest lines."""
    for where, doc in _docstrings(dotted).items():
        prose = "\n".join(line for line in doc.splitlines() if not line.lstrip().startswith((">>>", "...")))
        assert prose.count("``") % 2 == 0, f"{where}: unbalanced ``"
        outside = re.sub(r"``.*?``", "", prose, flags=re.DOTALL)
        outside = re.sub(r"(?m)^(\s*)\.\. math::.*$", "", outside)
        assert "|" not in outside, f"{where}: bare | (write it inside ``...``): {outside[outside.index('|') - 40:][:80]!r}"
        assert not re.search(r"(?<![\w*\\])\*(?=[A-Za-z_])(?![^*\n]*\*)", outside), f"{where}: bare * before a word"


@pytest.mark.parametrize("dotted", PUBLIC)
def test_every_reference_is_cited(dotted: str) -> None:
    """Sphinx warns (an error in the docs build) on a References entry ``.. [1]`` that the
    text never cites as ``[1]_``."""
    for where, doc in _docstrings(dotted).items():
        labels = re.findall(r"^\s*\.\. \[(\w+)\]", doc, flags=re.MULTILINE)
        uncited = [label for label in labels if f"[{label}]_" not in doc]
        assert not uncited, f"{where}: references {uncited} are not cited in the text"


@pytest.mark.parametrize("dotted", PUBLIC)
def test_examples_run(dotted: str) -> None:
    obj = _resolve(dotted)
    finder = doctest.DocTestFinder(recurse=False)
    module = importlib.import_module(obj.__module__)
    tests = [t for t in finder.find(obj, dotted, module=module, globs={}) if t.examples]
    assert tests, f"{dotted} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{dotted}: {result.failed} of {result.attempted} examples failed (output above)"
