"""Estimators, registered under the keys an experiment spec uses (``estimator: pl``).

Every estimator is a scikit-learn classifier whose ``fit``/``predict``/
``decision_function`` also accept ``cache=`` (a :class:`lkm.numerics.kernels.DistanceCache`), and
which records method facts in ``info_`` after fitting.

A spec may also name any scikit-learn-compatible classifier by dotted path
(``estimator: sklearn.neighbors.KNeighborsClassifier``); :func:`resolve_estimator` turns
a key or a path into the class. Importing this package is cheap: the registry below holds
dotted paths, and the estimator modules (and scikit-learn) are imported on first use of
a class, of :data:`METHODS` or of :func:`resolve_estimator` (PEP 562 ``__getattr__``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import TYPE_CHECKING, Any

from lkm.errors import SpecError, did_you_mean

if TYPE_CHECKING:
    from lkm.methods.base import LocalKernelClassifier
    from lkm.methods.manifold import PRLS, LapRLS, LapRLSRegressor, PLapRLS, PRLSRegressor
    from lkm.methods.nearest import NearestNeighbor
    from lkm.methods.npps import NPPS, NPPSSVM
    from lkm.methods.projection import LocalizedProjectionLearning, ProjectionLearning
    from lkm.methods.risk import LocalRiskPair, LocalRiskRegularization, RegularizedLeastSquares
    from lkm.methods.subspace import HKNN, LDCV, NHKNN, NLDCV
    from lkm.methods.svm import SVMClassifier
    from lkm.methods.svm_knn import SVMKNN

#: Spec key -> dotted path of the estimator class (classifiers a spec's methods[] may name).
METHOD_PATHS: dict[str, str] = {
    "pl": "lkm.methods.projection.ProjectionLearning",
    "lpl": "lkm.methods.projection.LocalizedProjectionLearning",
    "svm": "lkm.methods.svm.SVMClassifier",
    "svm_knn": "lkm.methods.svm_knn.SVMKNN",
    "hknn": "lkm.methods.subspace.HKNN",
    "ldcv": "lkm.methods.subspace.LDCV",
    "nhknn": "lkm.methods.subspace.NHKNN",
    "nldcv": "lkm.methods.subspace.NLDCV",
    "npps_svm": "lkm.methods.npps.NPPSSVM",
    "rls": "lkm.methods.risk.RegularizedLeastSquares",
    "lrr": "lkm.methods.risk.LocalRiskRegularization",
    "lrr_pair": "lkm.methods.risk.LocalRiskPair",
    "prls": "lkm.methods.manifold.PRLS",
    "laprls": "lkm.methods.manifold.LapRLS",
    "plaprls": "lkm.methods.manifold.PLapRLS",
    "nn": "lkm.methods.nearest.NearestNeighbor",
}

#: Name -> dotted path of the samplers (``fit_resample``; not classifiers, not spec methods).
SAMPLER_PATHS: dict[str, str] = {"npps": "lkm.methods.npps.NPPS"}

#: Name -> dotted path of the regressors (real-valued targets; not spec methods, whose
#: protocols score classifiers): Yang, King, Lyu's PRLS and Belkin et al.'s LapRLS for one
#: target (the paper's Fig. 1 toy).
REGRESSOR_PATHS: dict[str, str] = {
    "prls_regressor": "lkm.methods.manifold.PRLSRegressor",
    "laprls_regressor": "lkm.methods.manifold.LapRLSRegressor",
}

#: Public names of this package -> dotted path (imported on first access).
_LAZY: dict[str, str] = {
    path.rsplit(".", 1)[1]: path
    for path in [*METHOD_PATHS.values(), *SAMPLER_PATHS.values(), *REGRESSOR_PATHS.values()]
} | {"LocalKernelClassifier": "lkm.methods.base.LocalKernelClassifier"}


def _import_path(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@functools.cache
def resolve_estimator(key_or_path: str) -> type:
    """The estimator class for a registry key or a classifier's dotted path.

    A spec's ``estimator:`` (and ``lkm methods``) names either a key of
    :data:`METHOD_PATHS` (``"pl"``) or a dotted path (``"sklearn.neighbors.KNeighborsClassifier"``,
    ``"mypkg.mymod.MyClassifier"``). A path's module must be importable (installed, or
    on ``PYTHONPATH``); lkm does not add the spec's folder to ``sys.path``. The class
    must be a scikit-learn-style classifier: ``fit``, ``predict`` and ``get_params``,
    and not a regressor. Results are cached per name.

    Parameters
    ----------
    key_or_path : str
        A registry key or a dotted path ``module.Class``.

    Returns
    -------
    type
        The estimator class (not an instance).

    Raises
    ------
    lkm.errors.SpecError
        One line without location (callers prefix file and key): an unknown key (with a
        suggestion), a sampler's or regressor's key, a module that cannot be imported,
        a missing class, or a class that is not a classifier.

    See Also
    --------
    lkm.methods.LocalKernelClassifier : The base class of lkm's own classifiers.

    Examples
    --------
    >>> from lkm.methods import resolve_estimator
    >>> resolve_estimator("lpl").__name__
    'LocalizedProjectionLearning'
    >>> resolve_estimator("sklearn.neighbors.KNeighborsClassifier").__name__
    'KNeighborsClassifier'
    >>> resolve_estimator("npps")
    Traceback (most recent call last):
        ...
    lkm.errors.SpecError: 'npps' is a sampler (fit_resample), not a classifier; use 'npps_svm'
    """
    if key_or_path in METHOD_PATHS:
        registered: type = _import_path(METHOD_PATHS[key_or_path])
        return registered
    module_part, colon, class_part = key_or_path.partition(":")
    if colon and all(part.isidentifier() for part in [*module_part.split("."), *class_part.split(".")]):
        raise SpecError(f"estimator {key_or_path!r}: write a class's path with dots, "
                        f"{f'{module_part}.{class_part}'!r}")
    if "." not in key_or_path.strip(".") or not all(part.isidentifier() for part in key_or_path.split(".")):
        if key_or_path in SAMPLER_PATHS:
            raise SpecError(f"{key_or_path!r} is a sampler (fit_resample), not a classifier; use 'npps_svm'")
        if key_or_path in REGRESSOR_PATHS:
            raise SpecError(f"{key_or_path!r} is a regressor, not a classifier; use "
                            f"{key_or_path.removesuffix('_regressor')!r}")
        raise SpecError(
            f"unknown estimator {key_or_path!r}{did_you_mean(key_or_path, METHOD_PATHS)}; give a registered "
            "key (`lkm methods`) or a classifier's dotted path such as sklearn.neighbors.KNeighborsClassifier"
        )
    module_name, _, name = key_or_path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        if isinstance(exc, ModuleNotFoundError) and missing and f"{module_name}.".startswith(f"{missing}."):
            # the module named (or its package) is not there: no list of lkm's own keys,
            # which the user did not mean
            raise SpecError(
                f"estimator {key_or_path!r}: cannot import module {module_name!r} ({exc}); install it or put its "
                "folder on PYTHONPATH (the spec's folder is not on sys.path)"
            ) from None
        raise SpecError(f"estimator {key_or_path!r}: importing module {module_name!r} failed: "
                        f"{type(exc).__name__}: {exc}") from None  # found, but one of its own imports fails
    except Exception as exc:  # the user's module itself fails while importing
        raise SpecError(f"estimator {key_or_path!r}: importing module {module_name!r} failed: "
                        f"{type(exc).__name__}: {exc}") from None
    cls = getattr(module, name, None)
    if cls is None:
        classes = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise SpecError(f"estimator {key_or_path!r}: module {module_name!r} has no {name!r}{did_you_mean(name, classes)}")
    return check_classifier_class(cls, key_or_path)


def check_classifier_class(cls: Any, shown: str) -> type:
    """Return ``cls``; raise :class:`SpecError` unless it is a class with ``fit``,
    ``predict`` and ``get_params`` that scikit-learn's tags do not call a regressor,
    clusterer, ... (untagged estimators are accepted)."""
    if not inspect.isclass(cls):
        raise SpecError(f"estimator {shown!r} is a {type(cls).__name__}, not a class")
    missing = [m for m in ("fit", "predict", "get_params") if not callable(getattr(cls, m, None))]
    if missing:
        raise SpecError(f"estimator {shown!r} is not a scikit-learn classifier: it has no {', '.join(missing)}")
    if hasattr(cls, "__sklearn_tags__"):
        from sklearn.utils import get_tags

        try:
            kind = get_tags(cls()).estimator_type
        except Exception:  # noqa: BLE001 (a class that needs arguments: its tags are unknown here)
            return cls
        if kind not in (None, "classifier"):
            raise SpecError(f"estimator {shown!r} is a {kind}, not a classifier (scikit-learn's tags)")
    return cls


def estimator_param_names(cls: type[Any]) -> set[str]:
    """The constructor parameters of an estimator class (what ``get_params`` returns),
    without instantiating it."""
    names = getattr(cls, "_get_param_names", None)
    if callable(names):
        return set(names())
    signature = inspect.signature(cls.__init__)
    return {
        p.name for p in list(signature.parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


def describe_estimators() -> list[dict[str, str]]:
    """Every registered estimator without importing it: key, kind ("classifier",
    "sampler" or "regressor"), dotted class path, constructor parameters with defaults
    (``"sigma='scale', rcond=1e-10"``) and the first line of the class docstring, read
    from the modules' source with :mod:`ast` (milliseconds; importing the estimators
    means importing scikit-learn, seconds)."""
    import ast
    import importlib.util

    entries = [(k, "classifier", p) for k, p in METHOD_PATHS.items()]
    entries += [(k, "sampler", p) for k, p in SAMPLER_PATHS.items()]
    entries += [(k, "regressor", p) for k, p in REGRESSOR_PATHS.items()]
    trees: dict[str, ast.Module] = {}
    rows = []
    for key, kind, path in entries:
        module, _, name = path.rpartition(".")
        if module not in trees:
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin is not None, module
            with open(spec.origin, encoding="utf-8") as f:
                trees[module] = ast.parse(f.read())
        tree = trees[module]
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        constants = {
            t.id: n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)
        }
        args = init.args.args[1:] + init.args.kwonlyargs
        defaults = [None] * (len(init.args.args[1:]) - len(init.args.defaults)) + list(init.args.defaults)
        defaults += list(init.args.kw_defaults)
        params = []
        for arg, default in zip(args, defaults, strict=True):
            if default is None:
                params.append(arg.arg)
                continue
            node = constants.get(default.id, default) if isinstance(default, ast.Name) else default
            if isinstance(node, ast.Name) and node.id in constants:  # e.g. SCALE imported: look it up below
                node = constants[node.id]
            try:
                shown = repr(ast.literal_eval(node))
            except ValueError:
                shown = _imported_constant(node, tree) or ast.unparse(default)
            params.append(f"{arg.arg}={shown}")
        doc = (ast.get_docstring(cls) or "").strip().split("\n\n")[0]
        rows.append({"key": key, "kind": kind, "class": f"{__name__}.{name}",  # every class is re-exported here
                     "parameters": ", ".join(params), "doc": " ".join(doc.split())})
    return rows


def _imported_constant(node: Any, tree: Any = None) -> str | None:
    """``repr`` of a default named after an imported constant, read from the source of the
    module the estimator's module imports it from (``from lkm.numerics.psd_pinv import
    DEFAULT_RCOND``), else of :mod:`lkm.methods.base` (``SCALE``), like the rest (no import)."""
    import ast
    import importlib.util

    if not isinstance(node, ast.Name):
        return None
    sources = [n.module for n in getattr(tree, "body", []) if isinstance(n, ast.ImportFrom) and n.module
               and n.level == 0 and any(a.name == node.id and a.asname is None for a in n.names)]
    for module in [*sources, "lkm.methods.base"]:
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        with open(spec.origin, encoding="utf-8") as f:
            for n in ast.parse(f.read()).body:
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets):
                    try:
                        return repr(ast.literal_eval(n.value))
                    except ValueError:
                        return None
    return None


def __getattr__(name: str) -> Any:  # PEP 562: import estimator modules on first use
    if name == "METHODS":
        methods = {key: _import_path(path) for key, path in METHOD_PATHS.items()}
        globals()["METHODS"] = methods
        return methods
    if name in _LAZY:
        value = _import_path(_LAZY[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:  # PEP 562: list the lazy names too (tab completion), importing nothing
    return sorted(set(globals()) | set(__all__))


#: Spec key -> estimator class (imports every estimator module on first access).
METHODS: dict[str, type[LocalKernelClassifier]]

__all__ = [
    "METHODS",
    "METHOD_PATHS",
    "SAMPLER_PATHS",
    "REGRESSOR_PATHS",
    "HKNN",
    "LDCV",
    "LapRLS",
    "LapRLSRegressor",
    "LocalKernelClassifier",
    "LocalRiskPair",
    "LocalRiskRegularization",
    "LocalizedProjectionLearning",
    "NHKNN",
    "NLDCV",
    "NPPS",
    "NPPSSVM",
    "NearestNeighbor",
    "PLapRLS",
    "PRLS",
    "PRLSRegressor",
    "ProjectionLearning",
    "RegularizedLeastSquares",
    "SVMClassifier",
    "SVMKNN",
    "check_classifier_class",
    "describe_estimators",
    "estimator_param_names",
    "resolve_estimator",
]
