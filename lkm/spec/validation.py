"""Semantic checks of a validated spec: names against the registries, seeds, the plan
size, every parameter value against its estimator or study, and outputs; plus which
parameters an estimator uses only under a condition (:func:`unused_parameter`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lkm.errors import LkmError, SpecError, did_you_mean
from lkm.spec.grids import unique_values
from lkm.spec.model import MethodSpec, Spec
from lkm.spec.names import short_repr
from lkm.spec.outputs import FIGURES, TABLES, load_plugins
from lkm.spec.protocols import DEFAULT_REALIZATIONS, RealizationsProtocol
from lkm.spec.size import check_plan_size

#: Seeds go to numpy, which takes 0 <= seed < 2**32.
SEED_LIMIT = 2**32
#: Kernel widths and the kernel scale they give: outside [1e-150, 1e150] the scale
#: (1/(2 sigma²), 1/(4 t)) overflows to inf or underflows to 0 in float64.
KERNEL_WIDTHS: dict[str, str] = {"sigma": "1/(2·sigma²)", "t": "1/(4·t)"}
KERNEL_WIDTH_RANGE = (1e-150, 1e150)


def validate_semantics(spec: Spec, source: str, max_fits: int | None = None) -> None:
    """Check names against the registries, seeds, the plan size (before any grid is
    listed) and every parameter value against its estimator."""
    from lkm.data import dataset_info
    from lkm.data.catalog import check_spec_file_name
    from lkm.methods import estimator_param_names, resolve_estimator

    for i, d in enumerate(spec.datasets):
        try:
            if d.path is not None:  # loaded from its path (DatasetSpec.load); its name must be free
                check_spec_file_name(d.name, d.path)
                continue
            info = dataset_info(d.name)
        except LkmError as exc:
            raise SpecError(f"{source}: datasets[{i}].name: {exc}") from None
        if info.source == "user":  # a user-registered file: its sha256 joins the task ids
            if d.sha256 is not None and d.sha256.lower() != info.files[0].sha256:
                raise SpecError(f"{source}: datasets[{i}].sha256: {d.name!r} is registered with sha256 "
                                f"{info.files[0].sha256}, not {d.sha256}")
            d.sha256 = info.files[0].sha256 or None
        elif d.sha256 is not None:
            raise SpecError(f"{source}: datasets[{i}].sha256: {d.name!r} is a packaged dataset; "
                            "its files' sha256s are in its registry entry")
    all_params: set[str] = set()
    if not spec.methods and spec.sweep:
        key = next(iter(spec.sweep))
        raise SpecError(f"{source}: sweep.{key}: the top-level sweep applies to methods only; put it under studies[].sweep")
    for i, m in enumerate(spec.methods):
        try:
            estimator = resolve_estimator(m.estimator)
        except LkmError as exc:
            raise SpecError(f"{source}: methods[{i}].estimator: {exc}") from None
        names = estimator_param_names(estimator)
        all_params |= names
        for key, where in [(k, "params") for k in m.params] + [(k, "sweep") for k in m.sweep]:
            if key not in names:
                raise SpecError(
                    f"{source}: methods[{i}].{where}.{key}: {m.estimator!r} has no parameter {key!r}{did_you_mean(key, names)}"
                )
        constraints = getattr(estimator, "_parameter_constraints", {})
        for key, value in m.params.items():  # also those a sweep replaces: a bad value is a mistake either way
            _check_value(key, value, constraints.get(key, []), f"{source}: methods[{i}] ({m.name})")
    _validate_seeds(spec, source)
    check_plan_size(spec, source, max_fits)
    for i, m in enumerate(spec.methods):
        for params in spec.method_grid(m):
            _check_params(m.estimator, params, f"{source}: methods[{i}] ({m.name})")
        if m.tune:
            _validate_tune(spec, i, m, estimator_param_names(resolve_estimator(m.estimator)), source)
    load_plugins()  # papers register outputs and studies (lkm.spec.outputs entry points)
    _validate_studies(spec, source)
    dataset_ids = list(dict.fromkeys([d.id for d in spec.datasets] + [d.task_of for d in spec.datasets if d.task_of]))
    for i, m in enumerate(spec.methods):
        for j, ds in enumerate(m.datasets or []):
            if ds not in dataset_ids:
                raise SpecError(f"{source}: methods[{i}].datasets[{j}]: no dataset {ds!r} in this spec{did_you_mean(ds, dataset_ids)}")
    for key in spec.sweep:
        if key not in all_params:
            raise SpecError(f"{source}: sweep.{key}: no method has a parameter {key!r}{did_you_mean(key, all_params)}")
    if spec.selection.over:
        for key in spec.selection.over:
            if key not in all_params:
                raise SpecError(f"{source}: selection.over: unknown parameter {key!r}{did_you_mean(key, all_params)}")
    load_plugins()
    for kind, outputs, registry in (("tables", spec.outputs.tables, TABLES), ("figures", spec.outputs.figures, FIGURES)):
        for j, name in enumerate(outputs):
            if name not in registry:
                raise SpecError(f"{source}: outputs.{kind}[{j}]: unknown output {name!r}{did_you_mean(name, registry)}")
    for name in spec.outputs.options:
        if name not in TABLES and name not in FIGURES:
            raise SpecError(f"{source}: outputs.options.{name}: no table or figure of that name{did_you_mean(name, [*TABLES, *FIGURES])}")
    if not spec.methods:
        from lkm.studies import study_outputs

        study_tables, study_figures = study_outputs()
        for kind, outputs, allowed in (("tables", spec.outputs.tables, study_tables), ("figures", spec.outputs.figures, study_figures)):
            for j, name in enumerate(outputs):
                if name not in allowed:
                    raise SpecError(
                        f"{source}: outputs.{kind}[{j}]: {name!r} reads classifier accuracy and this spec has no methods; "
                        f"study {kind}: {', '.join(sorted(allowed)) or 'none'}"
                    )
    method_names = {m.name for m in spec.methods}
    dataset_names = {d.id for d in spec.datasets} | {d.name for d in spec.datasets}
    for j, p in enumerate(spec.paper.results):
        if p.dataset not in dataset_names:
            raise SpecError(f"{source}: paper.results[{j}].dataset: no dataset {p.dataset!r} in this spec"
                            f"{did_you_mean(p.dataset, dataset_names)}")
        if p.method not in method_names:
            raise SpecError(f"{source}: paper.results[{j}].method: no method named {p.method!r}{did_you_mean(p.method, method_names)}")


#: Parameter names taken as seeds wherever they appear (method, study, dataset params).
_SEED_PARAMS = ("random_state", "seed")


def _check_seed(value: Any, where: str, *, offset: int = 0, what: str = "") -> None:
    """``value`` (plus ``offset``, the largest ``+ r`` the run adds) is a numpy seed."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{where}: a seed must be a whole number 0 <= seed < 2**32, got {short_repr(value)}")
    if not 0 <= value or value + offset >= SEED_LIMIT:
        extra = f" (+ {offset} {what})" if offset else ""
        raise SpecError(f"{where}: seed {value}{extra} is out of range: seeds must be 0 <= seed < 2**32 = {SEED_LIMIT}")


def _validate_seeds(spec: Spec, source: str) -> None:
    """Every seed the run will hand to numpy, including the ``seed + r`` of repeats and
    realizations, is in numpy's range; otherwise the first split would fail mid-run."""
    protocols = [("protocol", spec.protocol)] + [
        (f"datasets[{i}].protocol", d.protocol) for i, d in enumerate(spec.datasets) if d.protocol is not None
    ]
    for where, proto in protocols:
        seed = getattr(proto, "seed", None)
        if isinstance(proto, RealizationsProtocol):
            last = proto.first + (proto.count or DEFAULT_REALIZATIONS) - 1
            _check_seed(seed, f"{source}: {where}.seed", offset=last, what="for realization numbers")
        else:
            repeats = getattr(proto, "repeats", 1)
            _check_seed(seed, f"{source}: {where}.seed", offset=repeats - 1, what="for repeats")
    for i, d in enumerate(spec.datasets):
        for key in _SEED_PARAMS:
            _check_seed(d.params.get(key), f"{source}: datasets[{i}].params.{key}")
    for i, m in enumerate(spec.methods):
        if m.tune is not None:
            _check_seed(m.tune.seed, f"{source}: methods[{i}].tune.seed")
        for key in _SEED_PARAMS:
            _check_seed(m.params.get(key), f"{source}: methods[{i}].params.{key}")
            for v in m.sweep.get(key, []):
                _check_seed(v, f"{source}: methods[{i}].sweep.{key}")
    for i, st in enumerate(spec.studies):
        for key in _SEED_PARAMS:
            _check_seed(st.params.get(key), f"{source}: studies[{i}].params.{key}")
            for v in st.sweep.get(key, []):
                _check_seed(v, f"{source}: studies[{i}].sweep.{key}")
    if spec.perturb is not None:
        _check_seed(spec.perturb.permute_train, f"{source}: perturb.permute_train")


def _validate_studies(spec: Spec, source: str) -> None:
    """Study keys against the registry, parameter names against the study function's
    signature, and every parameter setting against the study's own check."""
    from lkm.studies import STUDIES, STUDY_INFO, study_params

    for i, st in enumerate(spec.studies):
        if st.study not in STUDIES:
            raise SpecError(f"{source}: studies[{i}].study: unknown study {st.study!r}{did_you_mean(st.study, STUDIES)}")
        names = set(study_params(st.study))
        for key, where in [(k, "params") for k in st.params] + [(k, "sweep") for k in st.sweep]:
            if key not in names:
                raise SpecError(
                    f"{source}: studies[{i}].{where}.{key}: study {st.study!r} has no parameter {key!r}{did_you_mean(key, names)}"
                )
        for params in spec.study_grid(st):
            for key, value in params.items():
                _check_value(key, value, [], f"{source}: studies[{i}] ({st.name})")
        check = STUDY_INFO[st.study].check
        if check is None:
            continue
        for params in spec.study_grid(st):
            try:
                check(params)
            except (ValueError, TypeError) as exc:
                key, _, text = str(exc).partition(": ")
                if key not in names:  # the check did not name a parameter
                    key, text = "?", str(exc)
                value = f" = {params[key]!r}" if key in params else ""
                raise SpecError(f"{source}: studies[{i}] ({st.name}).params.{key}{value}: {text}") from None


def _validate_tune(spec: Spec, i: int, m: MethodSpec, names: set[str], source: str) -> None:
    """``methods[i].tune``: grid keys are parameters of the estimator, not also fixed or
    swept by the method itself, and every combination is a valid parameter setting."""
    assert m.tune is not None
    kind = "grid" if m.tune.grid is not None else "space"
    where = f"{source}: methods[{i}].tune.{kind}"
    for key in m.tune.params:
        if key not in names:
            raise SpecError(f"{where}.{key}: {m.estimator!r} has no parameter {key!r}{did_you_mean(key, names)}")
        if key in m.params or key in m.sweep:
            other = "params" if key in m.params else "sweep"
            raise SpecError(f"{where}.{key}: {key!r} is also in methods[{i}].{other}; a parameter is fixed, swept or tuned, not two of these")
    for base in spec.method_grid(m):
        for setting in m.tune.settings():
            params = {**base, **setting}
            try:
                _check_params(m.estimator, params, where)
            except SpecError as exc:
                # name the tuned key, not a params key: "...tune.grid.beta = -1: ..."
                raise SpecError(str(exc).replace(f"{where}.params.", f"{where}.", 1)) from None


def _check_params(estimator: str, params: dict[str, Any], where: str) -> None:
    from lkm.methods import resolve_estimator

    cls = resolve_estimator(estimator)
    constraints = getattr(cls, "_parameter_constraints", {})
    for key, value in params.items():
        _check_value(key, value, constraints.get(key, []), where)
    try:
        est = cls(**params)
        if hasattr(cls, "_parameter_constraints") and callable(getattr(est, "_validate_params", None)):
            est._validate_params()  # scikit-learn's checks of its _parameter_constraints
    except (ValueError, TypeError) as exc:
        named = next((k for k in params if f"'{k}'" in str(exc)), None)
        value = f" = {params[named]!r}" if named else ""
        text = str(exc).split(". Got")[0]
        raise SpecError(f"{where}.params.{named or '?'}{value}: {text}") from None


def _check_value(key: str, value: Any, constraints: list[Any], where: str) -> None:
    """What sklearn's constraints let through: booleans as numbers (``Interval(Real)``
    accepts True), NaN/inf, and kernel widths whose kernel scale overflows."""
    head = f"{where}.params.{key} = {short_repr(value)}"
    if isinstance(value, (bool, np.bool_)):
        if constraints and "boolean" not in constraints and bool not in constraints:
            raise SpecError(f"{head}: expected a number, got a boolean")
        return
    if isinstance(value, (int, float, np.number)) and not math.isfinite(float(value)):
        raise SpecError(f"{head}: not a finite number")
    if key in KERNEL_WIDTHS and isinstance(value, (int, float, np.number)) and value > 0:
        lo, hi = KERNEL_WIDTH_RANGE
        if value < lo:
            raise SpecError(f"{where}.params.{key}: {key}={value!r} is too small: {KERNEL_WIDTHS[key]} overflows "
                            f"(use {key} >= {lo:g})")
        if value > hi:
            raise SpecError(f"{where}.params.{key}: {key}={value!r} is too large: {KERNEL_WIDTHS[key]} underflows "
                            f"to 0 (use {key} <= {hi:g})")


def conditional_parameter(estimator: str, name: str) -> tuple[str, tuple[Any, ...]] | None:
    """(other parameter, values) when ``estimator`` uses its parameter ``name`` only while
    the other one has one of those values (the class's ``conditional_params``), else None."""
    from lkm.methods import resolve_estimator

    return dict(getattr(resolve_estimator(estimator), "conditional_params", None) or {}).get(name)


def unused_parameter(spec: Spec, method: MethodSpec, name: str) -> str | None:
    """Why ``method`` ignores its parameter ``name`` in every parameter setting ``spec``
    gives it (e.g. ``"kernel='heat' in every setting; sigma is used only with
    kernel='gaussian'"``), or None when some setting uses it (see
    :func:`conditional_parameter`; a tuning grid over the other parameter counts as using it)."""
    condition = conditional_parameter(method.estimator, name)
    if condition is None:
        return None
    other, values = condition
    if method.tune is not None and any(v in values for v in method.tune.values().get(other, [])):
        return None
    from lkm.methods import resolve_estimator

    default = resolve_estimator(method.estimator)().get_params().get(other)
    seen = unique_values([params.get(other, default) for params in spec.method_grid(method)])
    if any(v in values for v in seen):
        return None
    wanted = " or ".join(f"{other}={v!r}" for v in values)
    return f"{other}={'/'.join(repr(v) for v in seen)} in every setting; {name} is used only with {wanted}"
