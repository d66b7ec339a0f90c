"""The pydantic models of a spec: :class:`Spec` and its parts (datasets, methods, tuning,
studies, selection, outputs, the paper's numbers, perturbations). Reading one (a mapping or a
YAML file) and checking it against the registries is :mod:`lkm.spec.schema`'s; this module
is below :mod:`lkm.spec.validation` and :mod:`lkm.spec.size`, which read these models."""

from __future__ import annotations

import itertools
import json
import math
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from lkm.errors import SpecError
from lkm.spec.grids import Scalar, parse_grid, unique_values
from lkm.spec.names import validate_run_name
from lkm.spec.protocols import (
    HoldoutProtocol,
    KFoldProtocol,
    LearningCurveProtocol,
    PredefinedProtocol,
    RealizationsProtocol,
    SemiSupervisedProtocol,
    without_unset,
)


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
#: The file formats a figure may be written in.
FigureFormat = Literal["png", "pdf"]


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
    label: str | None = Field(default=None, description="name shown in tables (default: name, plus classes)")
    classes: list[int | str] | None = None
    groups: list[list[int | str]] | None = Field(
        default=None, description="merge classes into one label per group (a binary task: [[1, 2, 3], [4, 5]]); "
        "rows of other classes are dropped"
    )
    tasks: Literal["one_vs_all", "pairwise"] | None = Field(
        default=None, description="expand into binary tasks: each class against the rest, or every pair of classes "
        "(rows of other classes dropped); tables report the average binary error over the tasks"
    )
    task_of: str | None = Field(default=None, description="set by `tasks`: the id of the dataset a binary task comes from")
    params: dict[str, Any] = Field(default_factory=dict)
    protocol: ProtocolField | None = Field(
        default=None, description="this dataset's own protocol (e.g. its own hold-out sizes); default: the spec's"
    )
    path: str | None = Field(
        default=None, description="a user's data file (or fetch_openml data_home), relative to the spec file's folder"
    )
    target: str | None = Field(default=None, description="the label column (CSV/TSV/ARFF) or label array (.npz)")
    format: Literal["csv", "tsv", "svmlight", "arff", "npz", "openml"] | None = Field(
        default=None, description="default: from the file's suffix"
    )
    sha256: str | None = Field(
        default=None, description="the file's pinned sha256 (default: computed when the spec is read)"
    )
    impute: Literal["mean", "median", "drop"] | None = Field(
        default=None, description="NaN/empty/infinite feature cells: column mean, median, or drop the row (default: refuse)"
    )
    subsample: int | None = Field(
        default=None, ge=10, description="keep at most this many rows: a stratified draw with seed 0, made once before "
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

    def load(self, data_dir: str | Path | None = None, loaded: dict[str, Any] | None = None) -> Any:
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
        return without_unset(handler(self), (*_FILE_KEYS, "groups", "tasks", "task_of", "subsample"))

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
    ``info.tuned_params``.

    The settings searched are either a ``grid`` (every combination) or ``candidates``
    settings drawn from a ``space`` of ranges (:mod:`lkm.spec.search_space`: a seeded
    log-uniform Latin hypercube, the same list on every data set and fold). ``halving``
    (a factor, e.g. 4) searches by successive halving: every setting on a stratified
    1/halving of each inner training fold, the best 1/halving of them again on the whole
    fold (:func:`lkm.engine.runner.fit_tuned`)."""

    grid: dict[str, Grid] | None = Field(default=None, description="parameter -> values searched (every combination)")
    space: dict[str, dict[str, list[Any]]] | None = Field(
        default=None, description="parameter -> range ({log: [lo, hi]}, {logint: [lo, hi]} or {choice: [...]}); "
        "needs candidates")
    candidates: int | None = Field(default=None, ge=2, description="settings drawn from the space (the tuning budget)")
    halving: int | None = Field(default=None, ge=2, description="successive-halving factor (none: every setting on whole folds)")
    cv: int = Field(default=5, ge=2, description="folds of the stratified k-fold on the training part")
    seed: int = Field(default=0, description="seed of the fold shuffle and of the space's draw")
    subsample: int | None = Field(
        default=None, ge=10,
        description="run the CV on a seeded stratified subsample of this many training rows "
        "(large sets); the chosen setting is still refitted on the whole training part",
    )
    _settings: list[dict[str, Any]] | None = PrivateAttr(default=None)

    @field_validator("grid", mode="before")
    @classmethod
    def _parse_grids(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, dict) and not v:
            raise ValueError("give at least one parameter")
        return _grids(v, info, "tune.grid") if v is not None else v

    @field_validator("space", mode="before")
    @classmethod
    def _parse_space(cls, v: Any) -> Any:
        from lkm.spec.search_space import parse_range

        if v is None:
            return v
        if not isinstance(v, dict) or not v:
            raise ValueError(f"expected a mapping parameter -> range, got {v!r}")
        return {str(k): parse_range(str(k), r) for k, r in v.items()}

    @model_validator(mode="after")
    def _grid_or_space(self) -> TuneSpec:
        if (self.grid is None) == (self.space is None):
            raise ValueError("give either grid (values to combine) or space with candidates (ranges to draw from)")
        if self.space is not None and self.candidates is None:
            raise ValueError("space needs candidates: the number of settings to draw")
        if self.grid is not None and self.candidates is not None:
            raise ValueError("candidates goes with space; a grid searches every combination")
        if self.space is not None:
            from lkm.spec.search_space import draw_candidates

            try:
                self._settings = draw_candidates(self.space, int(self.candidates or 0), self.seed)
            except ValueError as exc:
                raise ValueError(f"space: {exc}") from None
        return self

    @property
    def params(self) -> list[str]:
        """The tuned parameters' names."""
        return list(self.grid if self.grid is not None else self.space or {})

    def settings(self) -> list[dict[str, Any]]:
        """Every setting searched, in the search's order (a grid's: scikit-learn's
        ``ParameterGrid``, keys sorted, the last varying fastest; a space's: sorted draws)."""
        if self._settings is not None:
            return [dict(s) for s in self._settings]
        from sklearn.model_selection import ParameterGrid

        return [dict(s) for s in ParameterGrid({k: list(v) for k, v in (self.grid or {}).items()})]

    def values(self) -> dict[str, list[Any]]:
        """Each tuned parameter's values: a grid's as written, a space's distinct candidate
        values in first-seen order."""
        if self.grid is not None:
            return {k: list(v) for k, v in self.grid.items()}
        out: dict[str, list[Any]] = {k: [] for k in self.params}
        for s in self.settings():
            for k, v in s.items():
                if not any(v == w and type(v) is type(w) for w in out[k]):
                    out[k].append(v)
        return out

    @property
    def size(self) -> int:
        if self.grid is not None:
            return math.prod(len(g) for g in self.grid.values())
        return len(self._settings or [])


class MethodSpec(_Model):
    """One estimator with fixed parameters and, optionally, its own sweeps."""

    name: str
    estimator: str
    params: dict[str, Any] = Field(default_factory=dict)
    sweep: dict[str, Grid] = Field(default_factory=dict)
    datasets: list[str] | None = Field(
        default=None, description="dataset ids (names or labels) this method runs on; default: all"
    )
    tune: TuneSpec | None = Field(default=None, description="parameters chosen by CV on the training part (see TuneSpec)")

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
    over: list[str] | None = Field(default=None, description="parameters to select over (default: all swept)")


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
    formats: list[FigureFormat] = Field(
        default_factory=lambda: list[FigureFormat](["png"]), description="figure files (the reproductions' specs add pdf)"
    )


class PerturbSpec(_Model):
    """A perturbation of the numerics that should not change any finding: the claims
    tables (:mod:`lkm.papers`) rerun the runs they read with it and label a claim
    *fragile* when its verdict changes. Part of every task id, so a perturbed run never
    mixes with the plain one."""

    permute_train: int | None = Field(
        default=None, description="seed of a permutation applied to each split's training rows before fitting"
    )
    blas_threads: int | None = Field(default=None, ge=1, description="BLAS threads while fitting (threadpoolctl)")


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
    missing_data: Literal["error", "skip"] = Field(default="error", description="what to do with a dataset whose files are unavailable")
    score_train: bool = Field(
        default=False, description="also record each fit's accuracy on its training part (train_accuracy)"
    )
    perturb: PerturbSpec | None = Field(
        default=None, description="permute training rows / change BLAS threads (fragility checks of the claims tables)"
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
        parts = [f"{d.id}: {d.protocol.describe()}" for d in own if d.protocol is not None]  # all of own
        if len(own) < len(self.datasets):
            parts.append(f"others: {self.protocol.describe()}")
        return "; ".join(parts)

    def method_grid(self, method: MethodSpec) -> list[dict[str, Any]]:
        """Every parameter combination of ``method``: fixed params x global sweeps x own sweeps."""
        from lkm.methods import estimator_param_names, resolve_estimator

        names = estimator_param_names(resolve_estimator(method.estimator))
        tuned = set(method.tune.params) if method.tune else set()
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
        tuned = set(method.tune.params) if method.tune else set()
        return [k for k in self.sweep if k in names and k not in tuned] + [k for k in method.sweep if k not in self.sweep]
