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
import io
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


def _rest_problems(doc: str) -> str:
    """docutils' warnings and errors on ``doc`` rendered by numpydoc as Sphinx sees it
    (an unclosed literal or emphasis, an undefined ``|substitution|``, a bad indent, ...).

    Sphinx's roles (``:func:`` ...) and directives (``seealso``, ``only``) are stood in
    for by literals and plain containers, whose content is still parsed."""
    from docutils import nodes, utils
    from docutils.core import publish_doctree
    from docutils.parsers.rst import Directive, directives, roles
    from numpydoc.docscrape_sphinx import SphinxDocString

    def literal_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: ANN001, ANN202, ARG001
        return [nodes.literal(rawtext, utils.unescape(text))], []

    class Container(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True

        def run(self) -> list:
            node = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    for role in ("func", "class", "meth", "data", "attr", "mod", "obj", "ref", "exc", "term", "doc"):
        roles.register_local_role(role, literal_role)
    for directive in ("seealso", "only", "autosummary", "versionadded", "deprecated"):
        directives.register_directive(directive, Container)
    stream = io.StringIO()
    publish_doctree(str(SphinxDocString(doc)),
                    settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream})
    return stream.getvalue()


@pytest.mark.parametrize("dotted", PUBLIC)
def test_valid_rest(dotted: str) -> None:
    """The docstrings are valid reST (the docs build turns every warning into an error)."""
    problems = {where: found for where, doc in _docstrings(dotted).items() if (found := _rest_problems(doc))}
    assert not problems, problems


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
