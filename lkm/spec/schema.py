"""The pydantic schema of a spec (:class:`Spec` and its parts), and reading one: from a
mapping (:func:`spec_from_dict`) or a YAML file with ``extends`` (:func:`load_spec`),
validated through :func:`lkm.spec.validation.validate_semantics`; :func:`spec_to_yaml`
writes one back."""

from __future__ import annotations

import itertools
import json
import math
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from lkm.errors import SpecError, did_you_mean
from lkm.spec.grids import Scalar, parse_grid, unique_values
from lkm.spec.names import short_repr, validate_run_name
from lkm.spec.outputs import load_plugins
from lkm.spec.protocols import (
    HoldoutProtocol,
    KFoldProtocol,
    LearningCurveProtocol,
    PredefinedProtocol,
    RealizationsProtocol,
    SemiSupervisedProtocol,
)
from lkm.spec.validation import validate_semantics
from lkm.spec.yaml_text import load_yaml, read_spec_text


def _grids(v: Any, info: ValidationInfo, where: str) -> Any:
    """Field-validator body for ``{param: grid}`` keys: parse every grid, drop duplicate
    values (noted in ``info.context['notes']``, which :func:`spec_from_dict` turns into
    :attr:`Spec.notes`)."""
    if not isinstance(v, dict):
        return v
    out = {}
    for k, g in v.items():
        try:
            values = parse_grid(g)
        except ValueError as exc:
            raise ValueError(f"{k}: {exc}") from None
        kept = unique_values(values)
        if len(kept) < len(values):
            _note(info, f"{where}.{k}: {len(values) - len(kept)} duplicate value(s) removed, {len(kept)} left")
        out[k] = kept
    return out


def _note(info: ValidationInfo, text: str) -> None:
    notes = info.context.get("notes") if isinstance(info.context, dict) else None
    if notes is not None:
        notes.append(text)


Grid = Annotated[list[Scalar], Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, v: Any, info: ValidationInfo) -> Any:
        """Booleans are not numbers: pydantic would read ``value: true`` as 1."""
        if isinstance(v, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if _numeric_not_bool(annotation):
                raise ValueError(f"expected a number, got the boolean {v}")
        return v


def _numeric_not_bool(annotation: Any) -> bool:
    """True when a field's type takes int or float but not bool (nor Any)."""
    found: set[Any] = set()
    stack = [annotation]
    while stack:
        t = stack.pop()
        args = typing.get_args(t)
        if args:
            stack.extend(args)
        else:
            found.add(t)
    return bool(found & {int, float}) and not found & {bool, Any}


ProtocolField = Annotated[
    KFoldProtocol | HoldoutProtocol | PredefinedProtocol | LearningCurveProtocol | RealizationsProtocol
    | SemiSupervisedProtocol,
    Field(discriminator="kind"),
]
#: The protocol models by their ``kind`` (the tag pydantic also puts in an error's key path).
PROTOCOL_KINDS: dict[str, type[BaseModel]] = {
    m.model_fields["kind"].default: m for m in typing.get_args(typing.get_args(ProtocolField)[0])
}


#: DatasetSpec keys of a user's file; left out of its dump when unset, so the task ids of
#: registered datasets stay what they were.
_FILE_KEYS = ("path", "target", "format", "sha256", "impute")


class DatasetSpec(_Model):
    """A dataset, optionally restricted to some classes or given generator parameters:
    a registered name (packaged or added with ``lkm datasets add``), or a user's file
    (``path``, read with :mod:`lkm.data.user`) named after its stem unless ``name`` is given."""

    name: str
    label: str | None = Field(None, description="name shown in tables (default: name, plus classes)")
    classes: list[int | str] | None = None
    groups: list[list[int | str]] | None = Field(
        None, description="merge classes into one label per group (a binary task: [[1, 2, 3], [4, 5]]); "
        "rows of other classes are dropped"
    )
    tasks: Literal["one_vs_all", "pairwise"] | None = Field(
        None, description="expand into binary tasks: each class against the rest, or every pair of classes "
        "(rows of other classes dropped); tables report the average binary error over the tasks"
    )
    task_of: str | None = Field(None, description="set by `tasks`: the id of the dataset a binary task comes from")
    params: dict[str, Any] = Field(default_factory=dict)
    protocol: ProtocolField | None = Field(
        None, description="this dataset's own protocol (e.g. its own hold-out sizes); default: the spec's"
    )
    path: str | None = Field(
        None, description="a user's data file (or fetch_openml data_home), relative to the spec file's folder"
    )
    target: str | None = Field(None, description="the label column (CSV/TSV/ARFF) or label array (.npz)")
    format: Literal["csv", "tsv", "svmlight", "arff", "npz", "openml"] | None = Field(
        None, description="default: from the file's suffix"
    )
    sha256: str | None = Field(
        None, description="the file's pinned sha256 (default: computed when the spec is read)"
    )
    impute: Literal["mean", "median", "drop"] | None = Field(
        None, description="NaN/empty/infinite feature cells: column mean, median, or drop the row (default: refuse)"
    )
    subsample: int | None = Field(
        None, ge=10, description="keep at most this many rows: a stratified draw with seed 0, made once before "
        "any split (lkm.data.subsample_rows); a larger dataset is used whole"
    )

    @model_validator(mode="before")
    @classmethod
    def _name_from_path(cls, v: Any) -> Any:
        if isinstance(v, dict) and isinstance(v.get("path"), str) and v["path"] and "name" not in v:
            v = {**v, "name": Path(v["path"]).stem}
        return v

    @field_validator("sha256", mode="before")
    @classmethod
    def _hex_string(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):  # YAML reads an all-digit hash as a number
            raise ValueError("give the 64 hex digits as a quoted string")
        return v

    @model_validator(mode="after")
    def _resolve_file(self, info: ValidationInfo) -> DatasetSpec:
        """A file entry's path made absolute (against the spec's folder, ``spec_dir`` in
        the validation context), its format named and its sha256 pinned."""
        from lkm.errors import DataError

        if self.path is None:
            given = [k for k in ("target", "format", "impute") if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{given[0]}: applies to a user's file only (give path:)")
            return self
        if self.params:
            raise ValueError("params: a user's file takes no generator parameters")
        path = Path(self.path).expanduser()
        if not path.is_absolute():
            path = Path((info.context or {}).get("spec_dir") or Path.cwd()) / path
        try:
            ds = self.file_info(path)
        except DataError as exc:
            raise ValueError(f"path: {exc}") from None
        self.path, self.format = str(path.absolute()), ds.meta["format"]
        self.sha256 = ds.files[0].sha256 or None
        return self

    def file_info(self, path: Path | None = None) -> Any:
        """The :class:`~lkm.data.registry.DatasetInfo` of a file entry (see :func:`lkm.data.user.user_dataset`)."""
        from lkm.data.user import user_dataset

        return user_dataset(self.name, path or Path(str(self.path)), target=self.target, fmt=self.format,
                            impute=self.impute, sha256=self.sha256)

    def load(self, data_dir: str | Path | None = None, loaded: dict | None = None) -> Any:
        """The :class:`~lkm.data.Dataset` this entry names: a registered dataset by name, or
        the user's file (``path:``) with its pinned sha256 checked. ``loaded`` (a dict the
        caller keeps) holds whole datasets already read, so the binary tasks of one
        dataset read its files once."""
        from lkm.data import load_dataset, select_classes

        key = json.dumps([self.name, self.path, self.sha256, self.params], sort_keys=True, default=str)
        if loaded is not None and key in loaded:
            data = loaded[key]
        else:
            source = self.file_info() if self.path is not None else self.name
            data = load_dataset(source, data_dir=data_dir, **self.params)
            if loaded is not None:
                loaded[key] = data
        if self.classes is not None:
            data = select_classes(data, self.classes)
        if self.groups:
            from lkm.data import merge_classes

            data = merge_classes(data, self.groups)
        if self.subsample is not None:
            from lkm.data import subsample_rows

            data = subsample_rows(data, self.subsample)
        return data

    @model_serializer(mode="wrap")
    def _without_unset_file_keys(self, handler: Any) -> dict[str, Any]:
        dump = handler(self)
        for key in (*_FILE_KEYS, "groups", "tasks", "task_of", "subsample"):  # unset: left out, so task ids stay what they were
            if dump.get(key) is None:
                dump.pop(key, None)
        return dump

    def binary_tasks(self) -> list[DatasetSpec]:
        """The binary tasks ``tasks`` asks for, each a dataset entry of its own (id
        ``name[c|rest]`` or ``name[a|b]``, ``task_of`` = this entry's id). The classes are
        ``classes`` if given, else the registry's ``class_counts``."""
        classes = list(self.classes or [])
        if not classes:
            from lkm.data import dataset_info

            counts = None if self.path is not None else dataset_info(self.name).class_counts
            if not counts:
                raise ValueError(f"tasks: the registry lists no classes for {self.name!r}; give classes:")
            classes = sorted(counts)
        if self.groups:
            raise ValueError("tasks: give either tasks or groups, not both")
        base = self.model_dump(exclude={"tasks", "task_of", "label", "classes"}, exclude_none=True)
        if self.tasks == "one_vs_all":
            return [DatasetSpec.model_validate({**base, "classes": self.classes, "groups": [[c], [o for o in classes if o != c]],
                                                "label": f"{self.id}[{c}|rest]", "task_of": self.id})
                    for c in classes]
        return [DatasetSpec.model_validate({**base, "classes": [a, b], "label": f"{self.id}[{a}|{b}]", "task_of": self.id})
                for i, a in enumerate(classes) for b in classes[i + 1:]]

    @field_validator("classes")
    @classmethod
    def _two_classes_at_least(cls, v: list[int | str] | None) -> list[int | str] | None:
        if v is not None and len({str(c) for c in v}) < 2:
            raise ValueError(f"{v!r} keeps fewer than two classes: a classifier needs at least two")
        return v

    @property
    def id(self) -> str:
        if self.label:
            return self.label
        if self.groups:
            from lkm.data import group_name

            return f"{self.name}[{'|'.join(group_name(g) for g in self.groups)}]"
        if self.classes:
            return f"{self.name}[{'-'.join(str(c) for c in self.classes)}]"
        return self.name


class TuneSpec(_Model):
    """Parameters chosen by cross-validation on each split's training part only
    (sklearn ``GridSearchCV``, stratified shuffled k-fold, accuracy, refit on the whole
    training part; ties in the mean score rounded to 9 decimals go to the first setting,
    :func:`lkm.engine.runner.best_setting`); the chosen values are recorded in the record's
    ``info.tuned_params``."""

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
    def _parse_grids(cls, v: Any, info: ValidationInfo) -> Any:
        return _grids(v, info, "tune.grid")

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
    def _parse_grids(cls, v: Any, info: ValidationInfo) -> Any:
        return _grids(v or {}, info, f"methods ({info.data.get('name')}).sweep")

    def runs_on(self, dataset_id: str, task_of: str | None = None) -> bool:
        """Whether this method runs on a dataset (or on every binary task of ``task_of``)."""
        return self.datasets is None or dataset_id in self.datasets or (task_of is not None and task_of in self.datasets)


class StudySpec(_Model):
    """One study (a measurement other than accuracy, :mod:`lkm.studies`) with its parameters
    and sweeps. Runs once per dataset and parameter setting, on the whole dataset."""

    name: str
    study: str = Field(description="key in lkm.studies.STUDIES")
    params: dict[str, Any] = Field(default_factory=dict)
    sweep: dict[str, Grid] = Field(default_factory=dict)

    @field_validator("sweep", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any, info: ValidationInfo) -> Any:
        return _grids(v or {}, info, f"studies ({info.data.get('name')}).sweep")


class SelectionSpec(_Model):
    """How the best parameters (the paper's sigma*) are chosen per dataset and method:
    the highest mean over splits of ``metric`` (a score every record carries, see
    :mod:`lkm.numerics.metrics`)."""

    metric: Literal["accuracy", "balanced_accuracy", "macro_f1", "roc_auc"] = "accuracy"
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
    formats: list[Literal["png", "pdf"]] = Field(
        default_factory=lambda: ["png"], description="figure files (the reproductions' specs add pdf)"
    )


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
    preprocessing: Literal["standardize", "scale", "scale_global", "none"] = "standardize"
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

    @field_validator("datasets", mode="after")
    @classmethod
    def _expand_tasks(cls, v: list[DatasetSpec]) -> list[DatasetSpec]:
        """A ``tasks:`` entry becomes its binary tasks, in place (see DatasetSpec.binary_tasks)."""
        return [t for d in v for t in (d.binary_tasks() if d.tasks else [d])]

    _notes: list[str] = PrivateAttr(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """Things changed while validating that the user should hear of (duplicate grid
        values removed), one line each; the CLI prints them."""
        return self._notes

    @field_validator("name", mode="before")
    @classmethod
    def _safe_name(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                validate_run_name(v, "name")
            except SpecError as exc:
                raise ValueError(str(exc).removeprefix("name: ")) from None
        return v

    @field_validator("sweep", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any, info: ValidationInfo) -> Any:
        return _grids(v or {}, info, "sweep")

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
        from lkm.methods import estimator_param_names, resolve_estimator

        names = estimator_param_names(resolve_estimator(method.estimator))
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
        from lkm.methods import estimator_param_names, resolve_estimator

        names = estimator_param_names(resolve_estimator(method.estimator))
        tuned = set(method.tune.grid) if method.tune else set()
        return [k for k in self.sweep if k in names and k not in tuned] + [k for k in method.sweep if k not in self.sweep]


# -- loading and validation -----------------------------------------------------
def _loc(loc: tuple[Any, ...]) -> str:
    """A pydantic error's key path as a spec writes it: ``methods[0].params``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in PROTOCOL_KINDS and out.endswith("protocol"):
            continue  # pydantic adds the union tag to the path
        else:
            out += f".{part}" if out else str(part)
    return out


def _error_message(err: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    """The key path and the one-line message of a pydantic error, in a spec's words
    (what is accepted, never pydantic's internal names: tags, discriminators, ``[key]``)."""
    loc, kind = tuple(err["loc"]), err["type"]
    kinds = ", ".join(PROTOCOL_KINDS)
    if kind == "extra_forbidden":
        known = _known_keys(loc)
        return loc, f"unknown key{did_you_mean(str(loc[-1]), known) if known else ''}"
    if kind == "missing":
        return loc, "required key missing"
    if kind == "union_tag_invalid":
        tag = err["ctx"]["tag"]
        return (*loc, "kind"), f"unknown protocol kind {short_repr(tag)}{did_you_mean(tag, PROTOCOL_KINDS)}; kinds: {kinds}"
    if kind == "union_tag_not_found":
        return (*loc, "kind"), f"required key missing: a protocol names its kind, one of {kinds}"
    if kind == "model_attributes_type" and loc and loc[-1] == "protocol":
        return loc, f"expected a mapping such as {{kind: kfold, folds: 10}}, got {short_repr(err['input'])}"
    if loc and loc[-1] == "[key]":
        return loc[:-2], (f"key {short_repr(loc[-2])} is not a name: inside {{...}} a comma starts a new key, "
                          "so write several values as a list ([0.5, 1, 2]) or in quotes ('0.5,1,2')")
    return loc, err["msg"].removeprefix("Value error, ")


def spec_from_dict(
    data: Any, source: str = "<spec>", smoke: bool = False, max_fits: int | None = None,
    spec_dir: Path | None = None,
) -> Spec:
    """Validate a spec given as a mapping; errors name ``source`` and the key path.

    ``smoke=True`` first replaces top-level keys by those under the spec's ``smoke`` key
    (nested mappings are merged), e.g. fewer sigmas and datasets for a CI smoke run. The
    spec as written and its smoke variant are both validated either way, so a mistake
    under ``smoke:`` is found before the full run, not after it. ``max_fits``: the
    plan-size limit (default: ``LKM_MAX_FITS`` or :data:`~lkm.spec.size.MAX_FITS`; see
    :func:`~lkm.spec.size.check_plan_size`).
    ``spec_dir``: the folder a dataset's relative ``path`` is resolved against (default:
    the working directory).
    """
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the spec must be a mapping of keys (name, datasets, methods, ...)")
    overrides = data.get("smoke")
    if overrides is not None and not isinstance(overrides, dict):
        raise SpecError(f"{source}: smoke: expected a mapping of keys to replace")
    full = _validated(data, source, max_fits, spec_dir=spec_dir)
    if not smoke and overrides is None:
        return full
    merged = _merged(data, overrides or {})
    if "name" not in (overrides or {}) and isinstance(data.get("name"), str):
        # never mixes with the full run's folder
        merged["name"] = validate_run_name(f"{data['name']}-smoke", f"{source}: name", derived_from=data["name"])
    where = source if smoke else f"{source}: smoke"
    smoke_spec = _validated(merged, where, max_fits, paper_of=full if "paper" not in (overrides or {}) else None,
                            spec_dir=spec_dir)
    return smoke_spec if smoke else full


def _validated(data: dict[str, Any], source: str, max_fits: int | None, paper_of: Spec | None = None,
               spec_dir: Path | None = None) -> Spec:
    """One spec mapping through pydantic and :func:`validate_semantics`. ``paper_of``: the
    full spec whose ``paper.results`` a smoke variant inherits; results for datasets or
    methods the variant leaves out are dropped (they were checked against the full spec)."""
    _check_raw(data, source)
    notes: list[str] = []
    try:
        spec = Spec.model_validate(data, context={"notes": notes, "spec_dir": spec_dir})
    except ValidationError as exc:
        errors = exc.errors()
        # an unknown key first: a misspelt `estimater` also makes `estimator` missing
        loc, msg = _error_message(next((e for e in errors if e["type"] == "extra_forbidden"), errors[0]))
        where = _loc(loc)
        raise SpecError(f"{source}: {where}: {msg}" if where else f"{source}: {msg}") from None
    spec._notes.extend(notes)
    if paper_of is not None:
        ids = {d.id for d in spec.datasets} | {d.name for d in spec.datasets}
        names = {m.name for m in spec.methods}
        spec.paper.results = [p for p in spec.paper.results if p.dataset in ids and p.method in names]
    validate_semantics(spec, source, max_fits=max_fits)
    return spec


def _check_raw(data: dict[str, Any], source: str) -> None:
    """Checks pydantic would not make on the raw mapping: booleans given as protocol
    numbers (``folds: true`` would read as 1)."""
    protocols = [("protocol", data.get("protocol"))]
    datasets = data.get("datasets")
    if isinstance(datasets, list):
        protocols += [(f"datasets[{i}].protocol", d.get("protocol")) for i, d in enumerate(datasets) if isinstance(d, dict)]
    for where, proto in protocols:
        if not isinstance(proto, dict):
            continue
        for key, value in proto.items():
            if isinstance(value, bool) and key != "stratified":
                raise SpecError(f"{source}: {where}.{key}: expected a number, got the boolean {value}")


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
    """The keys the mapping holding the unknown key ``loc[-1]`` takes: its model found by
    walking ``loc`` from :class:`Spec` (a protocol's by its kind tag; [] for a free mapping)."""
    models: list[type[BaseModel]] = [Spec]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if part in PROTOCOL_KINDS and PROTOCOL_KINDS[part] in models:
            models = [PROTOCOL_KINDS[part]]
            continue
        models = [m for model in models if part in model.model_fields
                  for m in _models_in(model.model_fields[part].annotation)]
    return list(dict.fromkeys(k for m in models for k in m.model_fields))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's type holds (``list[MethodSpec] | None`` -> [MethodSpec])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def load_spec(path: str | Path, smoke: bool = False, max_fits: int | None = None) -> Spec:
    """Read and validate a YAML spec file (``smoke``, ``max_fits``: see :func:`spec_from_dict`).

    The file is read as bytes and must be UTF-8 without NUL characters and at most
    :data:`~lkm.spec.yaml_text.MAX_SPEC_BYTES`; duplicate keys, nesting deeper than
    :data:`~lkm.spec.yaml_text.MAX_YAML_DEPTH` and aliases expanding past
    :data:`~lkm.spec.yaml_text.MAX_YAML_NODES` values are errors (one line each).
    """
    path = Path(path)
    data = load_yaml(read_spec_text(path), str(path))
    data = _resolve_extends(data, path, seen=(path.resolve(),))
    return spec_from_dict(data, str(path), smoke=smoke, max_fits=max_fits, spec_dir=path.parent)


def _resolve_extends(data: Any, path: Path, seen: tuple[Path, ...]) -> Any:
    """Merge a spec over the spec its ``extends`` key names (see :func:`_extended_file`)."""
    if not isinstance(data, dict) or "extends" not in data:
        return data
    if not isinstance(data["extends"], str) or not data["extends"] or "\x00" in data["extends"]:
        raise SpecError(f"{path}: extends: expected the path of another spec file or the name of a spec lkm ships, "
                        f"got {short_repr(data['extends'])}")
    parent = _extended_file(data["extends"], path)
    if parent.resolve() in seen:
        raise SpecError(f"{path}: extends: {parent} extends itself (a cycle)")
    if len(seen) > 10:
        raise SpecError(f"{path}: extends: more than 10 specs extend one another")
    base = load_yaml(read_spec_text(parent), str(parent))
    base = _resolve_extends(base, parent, (*seen, parent.resolve()))
    if not isinstance(base, dict):
        raise SpecError(f"{parent}: the spec must be a mapping of keys")
    rest = {k: v for k, v in data.items() if k != "extends"}
    return {**base, **rest}  # top-level keys replace the base spec's


def _shipped_specs() -> dict[str, Path]:
    """The specs lkm ships, by name (what `lkm run NAME` takes): those of every
    :data:`~lkm.spec.outputs.PLUGIN_GROUP` module that defines ``packaged_specs()``
    (:func:`lkm.papers.packaged_specs`; this layer finds it without importing it)."""
    found: dict[str, Path] = {}
    for module in load_plugins().values():
        packaged = getattr(module, "packaged_specs", None)
        if callable(packaged):
            found.update(packaged())
    return found


def _extended_file(value: str, path: Path) -> Path:
    """The spec file ``extends: value`` in the spec file ``path`` names: a path relative
    to ``path``'s folder when that file exists (it wins), else a spec lkm ships of that
    name, with or without ``.yaml`` (``extends: lpl_vs_svm``). Neither: one line naming
    ``path``, the key and the closest names."""
    beside = path.parent / value
    if beside.is_file():
        return beside
    if len(Path(value).parts) > 1:
        raise SpecError(f"{path}: extends: no such spec file {beside} (a path in extends is relative to this spec's folder)")
    name = value.removesuffix(".yaml").removesuffix(".yml")
    shipped = _shipped_specs()
    if name in shipped:
        return shipped[name]
    local = [p.name for p in path.parent.glob("*.y*ml") if p.is_file() and p.name != path.name]
    raise SpecError(f"{path}: extends: {short_repr(value)} is neither a file beside this spec ({beside}) nor a spec "
                    f"lkm ships{did_you_mean(name, [*shipped, *local])} (`lkm specs list` lists them)")


def spec_to_yaml(spec: Spec) -> str:
    """The spec as YAML (what a run folder stores)."""
    return yaml.safe_dump(spec.model_dump(mode="json", exclude_defaults=False), sort_keys=False)
