"""Optional extras a method needs (``pip install 'lkm[fast]'``), found before any fit.

Some settings of a method need a package that lkm's own dependencies leave out:
LPL's and NPPS's ``neighbors="hnswlib"`` need hnswlib, ``SVMClassifier(backend="intelex")``
needs scikit-learn-intelex (both in the ``fast`` extra of pyproject.toml). The runner asks
:func:`missing_extra` for every task when it plans a run (from the method's estimator and
parameters; the module is looked up with :func:`importlib.util.find_spec`, never
imported): a task whose package is absent is not fitted but recorded with status
:data:`NOT_RUN`, and tables and claims show :func:`not_run_cell` (``not run: needs
lkm[fast]``) for it. With the package installed nothing changes, and a rerun fits
exactly those tasks (a not-run record is not a completed one).

Testing aid: ``LKM_PRETEND_MISSING=hnswlib,sklearnex`` (module names, comma-separated)
makes :func:`is_installed` report those modules absent, in this process and in the
worker processes it starts, without uninstalling anything. Nothing else reads it.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

#: Status of a task whose method needs an optional extra that is not installed: not
#: fitted, not a failure, and fitted on the next run once the extra is installed.
NOT_RUN = "not run"

#: Environment variable naming modules to treat as absent (a testing aid, see the module doc).
PRETEND_MISSING_ENV = "LKM_PRETEND_MISSING"


@dataclass(frozen=True)
class Extra:
    """What a setting needs: the module imported, the package pip installs, the lkm extra."""

    module: str
    package: str
    extra: str

    @property
    def install(self) -> str:
        """``pip install 'lkm[fast]'``"""
        return f"pip install 'lkm[{self.extra}]'"

    @property
    def needs(self) -> str:
        """``lkm[fast]``, as a not-run record's ``needs`` and a table cell name it."""
        return f"lkm[{self.extra}]"

    @property
    def reason(self) -> str:
        """``needs hnswlib: pip install 'lkm[fast]'``, a not-run record's ``error``."""
        return f"needs {self.package}: {self.install}"


_HNSWLIB = Extra("hnswlib", "hnswlib", "fast")
_INTELEX = Extra("sklearnex", "scikit-learn-intelex", "fast")

#: (estimator key, parameter, value) -> what that setting needs. Estimators named by
#: their dotted class path are looked up by the class's key (lkm.methods.METHOD_PATHS).
OPTIONAL: dict[tuple[str, str, Any], Extra] = {
    ("lpl", "neighbors", "hnswlib"): _HNSWLIB,
    ("npps_svm", "neighbors", "hnswlib"): _HNSWLIB,
    ("svm", "backend", "intelex"): _INTELEX,
}


def _pretended_missing() -> set[str]:
    return {m.strip() for m in os.environ.get(PRETEND_MISSING_ENV, "").split(",") if m.strip()}


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (and False for a module
    named in ``LKM_PRETEND_MISSING``)."""
    if module in _pretended_missing():
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _estimator_key(estimator: str) -> str:
    """The registry key of ``estimator`` (a key, or the dotted path of a registered class)."""
    from lkm.methods import METHOD_PATHS

    if estimator in METHOD_PATHS:
        return estimator
    name = estimator.rpartition(".")[2]
    for key, path in METHOD_PATHS.items():
        if estimator == path or (estimator == f"lkm.methods.{name}" and path.endswith(f".{name}")):
            return key
    return estimator


def needed_extra(estimator: str, params: dict[str, Any]) -> Extra | None:
    """The optional extra the setting ``params`` of ``estimator`` needs, installed or not."""
    key = _estimator_key(estimator)
    for (est, param, value), extra in OPTIONAL.items():
        if est == key and param in params and _same(params[param], value):
            return extra
    return None


def _same(given: Any, value: Any) -> bool:
    try:
        return bool(given == value)
    except Exception:  # noqa: BLE001 (an array or an odd object: not a registered value)
        return False


def missing_extra(estimator: str, params: dict[str, Any]) -> Extra | None:
    """The optional extra ``params`` of ``estimator`` need when its module is absent, else None."""
    extra = needed_extra(estimator, params)
    return extra if extra is not None and not is_installed(extra.module) else None


def not_run_cell(needs: Any) -> str:
    """What tables and claims show for a method not run: ``not run: needs lkm[fast]``."""
    return f"{NOT_RUN}: needs {needs}" if isinstance(needs, str) and needs else NOT_RUN
