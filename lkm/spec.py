"""Experiment specs: the YAML schema, its validation, and parameter grids.

A spec names datasets, a preprocessing, a protocol, methods with parameters, sweeps,
how the best parameter is selected, which outputs to write, and the paper's reported
numbers; ``studies`` (see :mod:`lkm.studies`) are measurements other than accuracy, run
beside or instead of the methods. :func:`load_spec` validates the whole spec (structure, dataset names,
estimator keys, every parameter value of every sweep) before anything is fitted, and
reports the first problem as one line naming the file and key path.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lkm.errors import LkmError, SpecError, did_you_mean
from lkm.protocols import (
    HoldoutProtocol,
    KFoldProtocol,
    LearningCurveProtocol,
    PredefinedProtocol,
    RealizationsProtocol,
)

#: The paper's sigma grid (Tsuji et al., Sec. 9.2): 39 log-spaced values in [0.01, 100].
PAPER_SIGMA_GRID = "0.01:100:39"

#: Grids a bare ``--NAME`` on ``lkm sweep`` stands for.
DEFAULT_GRIDS: dict[str, str] = {"sigma": PAPER_SIGMA_GRID}

#: Datasets and methods of the embedded default (configs/quickstart.yaml, ad-hoc sweeps).
QUICKSTART_DATASETS = ["moons", "sklearn-breast-cancer", "sklearn-iris"]
QUICKSTART_METHODS = [("PL", "pl"), ("LPL", "lpl"), ("SVM", "svm")]

Scalar = float | int | str | bool | None


def parse_grid(value: Any) -> list[Scalar]:
    """Parse a parameter grid.

    Accepts a list (``[0.5, 1, 2]``), a scalar, ``"a:b:n"`` (n log-spaced values from a
    to b inclusive, the paper's way of writing its sigma grid), ``"a,b,c"``, or
    ``"default"`` / ``"paper"`` for the grid of :data:`DEFAULT_GRIDS` (resolved by the caller).
    """
    if isinstance(value, (list, tuple)):
        return [_coerce(v) for v in value]
    if isinstance(value, str):
        s = value.strip()
        if s.count(":") == 2:
            a, b, n = (p.strip() for p in s.split(":"))
            try:
                lo, hi, num = float(a), float(b), int(n)
            except ValueError:
                raise ValueError(f"grid {value!r}: expected 'start:stop:count' with numbers") from None
            if lo <= 0 or hi <= 0 or num < 1:
                raise ValueError(f"grid {value!r}: log-spaced grids need start, stop > 0 and count >= 1")
            return [float(f"{v:.6g}") for v in np.logspace(math.log10(lo), math.log10(hi), num)]
        if "," in s:
            return [_coerce(v.strip()) for v in s.split(",") if v.strip()]
        return [_coerce(s)]
    return [_coerce(value)]


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 floats: ``1e-8`` is a number, not the string
    '1e-8' that YAML 1.1 (which requires a dot) makes of it."""


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 (a SafeLoader subclass)


def _coerce(v: Any) -> Scalar:
    """Turn '5' into 5 and '0.5' into 0.5; leave other strings (e.g. 'auto') alone."""
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
        try:
            return float(v)
        except ValueError:
            return v
    return v


Grid = Annotated[list[Scalar], Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


ProtocolField = Annotated[
    KFoldProtocol | HoldoutProtocol | PredefinedProtocol | LearningCurveProtocol | RealizationsProtocol,
    Field(discriminator="kind"),
]


class DatasetSpec(_Model):
    """A dataset, optionally restricted to some classes or given generator parameters."""

    name: str
    label: str | None = Field(None, description="name shown in tables (default: name, plus classes)")
    classes: list[int | str] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    protocol: ProtocolField | None = Field(
        None, description="this dataset's own protocol (e.g. its own hold-out sizes); default: the spec's"
    )

    @property
    def id(self) -> str:
        if self.label:
            return self.label
        if self.classes:
            return f"{self.name}[{'-'.join(str(c) for c in self.classes)}]"
        return self.name


class TuneSpec(_Model):
    """Parameters chosen by cross-validation on each split's training part only
    (sklearn ``GridSearchCV``, stratified shuffled k-fold, accuracy, refit on the whole
    training part); the chosen values are recorded in the record's ``info.tuned_params``."""

    grid: dict[str, Grid] = Field(min_length=1, description="parameter -> values searched (every combination)")
    cv: int = Field(5, ge=2, description="folds of the stratified k-fold on the training part")
    seed: int = Field(0, description="seed of the fold shuffle")
    subsample: int | None = Field(
        None, ge=10,
        description="run the CV on a seeded stratified subsample of this many training rows "
        "(large sets); the chosen setting is still refitted on the whole training part",
    )

    @field_validator("grid", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any) -> Any:
        return {k: parse_grid(g) for k, g in v.items()} if isinstance(v, dict) else v

    @property
    def size(self) -> int:
        return math.prod(len(g) for g in self.grid.values())


class MethodSpec(_Model):
    """One estimator with fixed parameters and, optionally, its own sweeps."""

    name: str
    estimator: str
    params: dict[str, Any] = Field(default_factory=dict)
    sweep: dict[str, Grid] = Field(default_factory=dict)
    datasets: list[str] | None = Field(
        None, description="dataset ids (names or labels) this method runs on; default: all"
    )
    tune: TuneSpec | None = Field(None, description="parameters chosen by CV on the training part (see TuneSpec)")

    @field_validator("sweep", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any) -> Any:
        return {k: parse_grid(g) for k, g in (v or {}).items()}

    def runs_on(self, dataset_id: str) -> bool:
        return self.datasets is None or dataset_id in self.datasets


class StudySpec(_Model):
    """One study (a measurement other than accuracy, :mod:`lkm.studies`) with its parameters
    and sweeps. Runs once per dataset and parameter setting, on the whole dataset."""

    name: str
    study: str = Field(description="key in lkm.studies.STUDIES")
    params: dict[str, Any] = Field(default_factory=dict)
    sweep: dict[str, Grid] = Field(default_factory=dict)

    @field_validator("sweep", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any) -> Any:
        return {k: parse_grid(g) for k, g in (v or {}).items()}


class SelectionSpec(_Model):
    """How the best parameters (the paper's sigma*) are chosen per dataset and method."""

    metric: Literal["accuracy"] = "accuracy"
    over: list[str] | None = Field(None, description="parameters to select over (default: all swept)")


class PaperValue(_Model):
    """A number the paper reports, shown beside ours."""

    dataset: str
    method: str
    metric: Literal["accuracy", "fit_seconds", "predict_seconds"] = "accuracy"
    value: float
    source: str = ""
    params: dict[str, Any] = Field(default_factory=dict, description="setting it was reported at, if not the selected one")


class PaperSpec(_Model):
    reference: str = ""
    note: str = ""
    results: list[PaperValue] = Field(default_factory=list)


class OutputsSpec(_Model):
    """Which registered tables and figures to write (``lkm methods`` does not list them;
    see docs/specs.md), their options, and the figure formats."""

    tables: list[str] = Field(default_factory=lambda: ["summary", "sweep"])
    figures: list[str] = Field(default_factory=lambda: ["sweep", "best"])
    options: dict[str, dict[str, Any]] = Field(default_factory=dict, description="per-output settings")
    formats: list[Literal["png", "pdf"]] = Field(default_factory=lambda: ["png", "pdf"])


class PerturbSpec(_Model):
    """A perturbation of the numerics that should not change any finding: the claims
    tables (:mod:`lkm.papers`) rerun the runs they read with it and label a claim
    *fragile* when its verdict changes. Part of every task id, so a perturbed run never
    mixes with the plain one."""

    permute_train: int | None = Field(
        None, description="seed of a permutation applied to each split's training rows before fitting"
    )
    blas_threads: int | None = Field(None, ge=1, description="BLAS threads while fitting (threadpoolctl)")


class Spec(_Model):
    """A whole experiment. See ``docs/specs.md`` for every key."""

    name: str
    description: str = ""
    datasets: list[DatasetSpec] = Field(min_length=1)
    preprocessing: Literal["standardize", "scale", "none"] = "standardize"
    protocol: ProtocolField = Field(default_factory=KFoldProtocol)
    methods: list[MethodSpec] = Field(default_factory=list, description="at least one method or one study")
    studies: list[StudySpec] = Field(default_factory=list, description="measurements other than accuracy (lkm.studies)")
    sweep: dict[str, Grid] = Field(default_factory=dict, description="sweeps applied to every method with that parameter")
    selection: SelectionSpec = Field(default_factory=SelectionSpec)
    outputs: OutputsSpec = Field(default_factory=OutputsSpec)
    paper: PaperSpec = Field(default_factory=PaperSpec)
    missing_data: Literal["error", "skip"] = Field("error", description="what to do with a dataset whose files are unavailable")
    score_train: bool = Field(
        False, description="also record each fit's accuracy on its training part (train_accuracy)"
    )
    perturb: PerturbSpec | None = Field(
        None, description="permute training rows / change BLAS threads (fragility checks of the claims tables)"
    )
    smoke: dict[str, Any] = Field(
        default_factory=dict,
        description="keys replacing the spec's own under --smoke (a fast run that checks every output is produced)",
    )

    @field_validator("datasets", mode="before")
    @classmethod
    def _names_to_dicts(cls, v: Any) -> Any:
        return [{"name": d} if isinstance(d, str) else d for d in v] if isinstance(v, list) else v

    @field_validator("sweep", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any) -> Any:
        return {k: parse_grid(g) for k, g in (v or {}).items()}

    @model_validator(mode="after")
    def _unique_names(self) -> Spec:
        if not self.methods and not self.studies:
            raise ValueError("methods: a spec needs at least one method (or a `studies:` list)")
        for what, names in (("methods", [m.name for m in self.methods]), ("studies", [s.name for s in self.studies]),
                            ("datasets", [d.id for d in self.datasets])):
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"{what}: duplicate name {sorted(dup)[0]!r} (give each a distinct name/label)")
        if self.studies and "outputs" not in self.model_fields_set:
            # Without an `outputs` key: the studies' own outputs (plus the accuracy defaults if any method).
            from lkm.studies import STUDY_INFO

            infos = [STUDY_INFO[s.study] for s in self.studies if s.study in STUDY_INFO]
            tables = self.outputs.tables if self.methods else []
            figures = self.outputs.figures if self.methods else []
            self.outputs.tables = list(dict.fromkeys([*tables, *(t for i in infos for t in i.tables)]))
            self.outputs.figures = list(dict.fromkeys([*figures, *(f for i in infos for f in i.figures)]))
        return self

    # -- derived --------------------------------------------------------------
    def protocol_for(self, dataset_id: str) -> Any:
        """The protocol of a dataset: its own ``protocol`` key if given, else the spec's."""
        d = next((d for d in self.datasets if d.id == dataset_id), None)
        return d.protocol if d is not None and d.protocol is not None else self.protocol

    def describe_protocol(self, short: bool = False) -> str:
        """The protocol in words, for captions; per dataset when datasets have their own
        (``short``: just say so, for figure titles)."""
        own = [d for d in self.datasets if d.protocol is not None]
        if not own:
            return self.protocol.describe()
        if short:
            return "each dataset's own protocol, see tables/summary"
        parts = [f"{d.id}: {d.protocol.describe()}" for d in own]
        if len(own) < len(self.datasets):
            parts.append(f"others: {self.protocol.describe()}")
        return "; ".join(parts)

    def method_grid(self, method: MethodSpec) -> list[dict[str, Any]]:
        """Every parameter combination of ``method``: fixed params x global sweeps x own sweeps."""
        from lkm.methods import METHODS

        names = set(METHODS[method.estimator]().get_params())
        tuned = set(method.tune.grid) if method.tune else set()
        # A tuned parameter is chosen by CV, so the spec-wide sweep leaves it alone.
        axes = {k: g for k, g in self.sweep.items() if k in names and k not in tuned}
        axes.update(method.sweep)
        keys = list(axes)
        combos = []
        for values in itertools.product(*(axes[k] for k in keys)):
            params = dict(method.params)
            params.update(zip(keys, values, strict=True))
            combos.append(params)
        return combos

    def study_grid(self, st: StudySpec) -> list[dict[str, Any]]:
        """Every parameter combination of a study: fixed params x its own sweeps (the spec's
        top-level ``sweep`` applies to methods only). A study with a ``random_state``
        parameter the spec leaves unset gets the protocol's seed."""
        from lkm.studies import study_params

        keys = list(st.sweep)
        combos = []
        seeded = "random_state" in study_params(st.study)
        for values in itertools.product(*(st.sweep[k] for k in keys)):
            params = dict(st.params)
            params.update(zip(keys, values, strict=True))
            if seeded and params.get("random_state") is None:
                params["random_state"] = getattr(self.protocol, "seed", 0)
            combos.append(params)
        return combos

    def swept_params(self, method: MethodSpec) -> list[str]:
        from lkm.methods import METHODS

        names = set(METHODS[method.estimator]().get_params())
        tuned = set(method.tune.grid) if method.tune else set()
        return [k for k in self.sweep if k in names and k not in tuned] + [k for k in method.sweep if k not in self.sweep]


# -- loading and validation -----------------------------------------------------
def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("kfold", "holdout", "predefined", "learning_curve", "realizations") and (
            out.endswith("protocol")
        ):
            continue  # pydantic adds the union tag to the path
        else:
            out += f".{part}" if out else str(part)
    return out


def spec_from_dict(data: Any, source: str = "<spec>", smoke: bool = False) -> Spec:
    """Validate a spec given as a mapping; errors name ``source`` and the key path.

    ``smoke=True`` first replaces top-level keys by those under the spec's ``smoke`` key
    (nested mappings are merged), e.g. fewer sigmas and datasets for a CI smoke run.
    """
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the spec must be a mapping of keys (name, datasets, methods, ...)")
    if smoke:
        overrides = data.get("smoke") or {}
        if not isinstance(overrides, dict):
            raise SpecError(f"{source}: smoke: expected a mapping of keys to replace")
        data = _merged(data, overrides)
        if "name" not in overrides and "name" in data:
            data["name"] = f"{data['name']}-smoke"  # never mixes with the full run's folder
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key{did_you_mean(str(err['loc'][-1]), _known_keys(err['loc']))}"
        where = _loc(err["loc"])
        raise SpecError(f"{source}: {where}: {msg}" if where else f"{source}: {msg}") from None
    validate_semantics(spec, source)
    return spec


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    models: dict[str, type[BaseModel]] = {
        "datasets": DatasetSpec, "methods": MethodSpec, "studies": StudySpec, "selection": SelectionSpec,
        "outputs": OutputsSpec, "paper": PaperSpec, "protocol": KFoldProtocol,
    }
    model: type[BaseModel] = models.get(str(loc[0]), Spec) if len(loc) > 1 else Spec
    if loc[0] == "protocol":
        return list({*KFoldProtocol.model_fields, *HoldoutProtocol.model_fields, *LearningCurveProtocol.model_fields,
                     *RealizationsProtocol.model_fields})
    if loc[0] == "paper" and len(loc) > 2:
        model = PaperValue
    return list(model.model_fields)


def load_spec(path: str | Path, smoke: bool = False) -> Spec:
    """Read and validate a YAML spec file (``smoke``: see :func:`spec_from_dict`)."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file")
    try:
        data = _load_yaml(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}:{where}: malformed YAML: {problem}") from None
    data = _resolve_extends(data, path, seen=(path.resolve(),))
    return spec_from_dict(data, str(path), smoke=smoke)


def _resolve_extends(data: Any, path: Path, seen: tuple[Path, ...]) -> Any:
    """Merge a spec over the spec its ``extends`` key names (a path relative to it)."""
    if not isinstance(data, dict) or "extends" not in data:
        return data
    parent = path.parent / str(data["extends"])
    if not parent.is_file():
        raise SpecError(f"{path}: extends: no such spec file {parent}")
    if parent.resolve() in seen:
        raise SpecError(f"{path}: extends: {parent} extends itself (a cycle)")
    try:
        base = _load_yaml(parent.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"{parent}: malformed YAML: {str(exc).splitlines()[0]}") from None
    base = _resolve_extends(base, parent, (*seen, parent.resolve()))
    if not isinstance(base, dict):
        raise SpecError(f"{parent}: the spec must be a mapping of keys")
    rest = {k: v for k, v in data.items() if k != "extends"}
    return {**base, **rest}  # top-level keys replace the base spec's


def validate_semantics(spec: Spec, source: str) -> None:
    """Check names against the registries and every parameter value against its estimator."""
    from lkm.data import dataset_info
    from lkm.methods import METHODS

    for i, d in enumerate(spec.datasets):
        try:
            dataset_info(d.name)
        except LkmError as exc:
            raise SpecError(f"{source}: datasets[{i}].name: {exc}") from None
    all_params: set[str] = set()
    if not spec.methods and spec.sweep:
        key = next(iter(spec.sweep))
        raise SpecError(f"{source}: sweep.{key}: the top-level sweep applies to methods only; put it under studies[].sweep")
    for i, m in enumerate(spec.methods):
        if m.estimator not in METHODS:
            raise SpecError(f"{source}: methods[{i}].estimator: unknown estimator {m.estimator!r}{did_you_mean(m.estimator, METHODS)}")
        names = set(METHODS[m.estimator]().get_params())
        all_params |= names
        for key, where in [(k, "params") for k in m.params] + [(k, "sweep") for k in m.sweep]:
            if key not in names:
                raise SpecError(
                    f"{source}: methods[{i}].{where}.{key}: {m.estimator!r} has no parameter {key!r}{did_you_mean(key, names)}"
                )
        for params in spec.method_grid(m):
            _check_params(m.estimator, params, f"{source}: methods[{i}] ({m.name})")
        if m.tune:
            _validate_tune(spec, i, m, names, source)
    _validate_studies(spec, source)
    dataset_ids = [d.id for d in spec.datasets]
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
    from lkm.report import FIGURES, TABLES, load_builders

    load_builders()
    for kind, names, registry in (("tables", spec.outputs.tables, TABLES), ("figures", spec.outputs.figures, FIGURES)):
        for j, name in enumerate(names):
            if name not in registry:
                raise SpecError(f"{source}: outputs.{kind}[{j}]: unknown output {name!r}{did_you_mean(name, registry)}")
    for name in spec.outputs.options:
        if name not in TABLES and name not in FIGURES:
            raise SpecError(f"{source}: outputs.options.{name}: no table or figure of that name{did_you_mean(name, [*TABLES, *FIGURES])}")
    if not spec.methods:
        from lkm.studies import study_outputs

        study_tables, study_figures = study_outputs()
        for kind, names, allowed in (("tables", spec.outputs.tables, study_tables), ("figures", spec.outputs.figures, study_figures)):
            for j, name in enumerate(names):
                if name not in allowed:
                    raise SpecError(
                        f"{source}: outputs.{kind}[{j}]: {name!r} reads classifier accuracy and this spec has no methods; "
                        f"study {kind}: {', '.join(sorted(allowed)) or 'none'}"
                    )
    method_names = {m.name for m in spec.methods}
    for j, p in enumerate(spec.paper.results):
        if p.method not in method_names:
            raise SpecError(f"{source}: paper.results[{j}].method: no method named {p.method!r}{did_you_mean(p.method, method_names)}")


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
    where = f"{source}: methods[{i}].tune.grid"
    for key in m.tune.grid:
        if key not in names:
            raise SpecError(f"{where}.{key}: {m.estimator!r} has no parameter {key!r}{did_you_mean(key, names)}")
        if key in m.params or key in m.sweep:
            other = "params" if key in m.params else "sweep"
            raise SpecError(f"{where}.{key}: {key!r} is also in methods[{i}].{other}; a parameter is fixed, swept or tuned, not two of these")
    keys = list(m.tune.grid)
    for base in spec.method_grid(m):
        for values in itertools.product(*(m.tune.grid[k] for k in keys)):
            params = {**base, **dict(zip(keys, values, strict=True))}
            try:
                _check_params(m.estimator, params, where)
            except SpecError as exc:
                # name the grid key, not a params key: "...tune.grid.beta = -1: ..."
                raise SpecError(str(exc).replace(f"{where}.params.", f"{where}.", 1)) from None


def _check_params(estimator: str, params: dict[str, Any], where: str) -> None:
    from lkm.methods import METHODS

    est = METHODS[estimator](**params)
    try:
        est._validate_params()
    except (ValueError, TypeError) as exc:
        key = next((k for k in params if f"'{k}'" in str(exc)), None)
        value = f" = {params[key]!r}" if key else ""
        text = str(exc).split(". Got")[0]
        raise SpecError(f"{where}.params.{key or '?'}{value}: {text}") from None


def default_spec(
    datasets: list[str] | None = None, methods: list[str] | None = None, name: str = "quickstart"
) -> Spec:
    """The embedded default: PL, LPL and SVM on offline data under 10-fold CV."""
    from lkm.methods import METHODS

    keys = {k for _, k in QUICKSTART_METHODS}
    chosen = []
    for m in methods or [n for n, _ in QUICKSTART_METHODS]:
        key = m.lower()
        if key not in METHODS:
            raise SpecError(f"--method: unknown method {m!r}{did_you_mean(key, METHODS)}")
        chosen.append({"name": m.upper() if key in keys else m, "estimator": key})
    data = {
        "name": name,
        "description": "Embedded default: offline data, 10-fold CV.",
        "datasets": datasets or QUICKSTART_DATASETS,
        "preprocessing": "standardize",
        "protocol": {"kind": "kfold", "folds": 10, "seed": 0},
        "methods": chosen,
        "sweep": {"sigma": "0.1:10:5"},
    }
    return spec_from_dict(data, "<default spec>")


def spec_to_yaml(spec: Spec) -> str:
    """The spec as YAML (what a run folder stores)."""
    return yaml.safe_dump(spec.model_dump(mode="json", exclude_defaults=False), sort_keys=False)
