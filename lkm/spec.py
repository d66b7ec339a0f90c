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
import json
import math
import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
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
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from lkm.errors import LkmError, SpecError, did_you_mean
from lkm.outputs import FIGURES, TABLES, load_plugins
from lkm.protocols import (
    DEFAULT_REALIZATIONS,
    HoldoutProtocol,
    KFoldProtocol,
    LearningCurveProtocol,
    PredefinedProtocol,
    RealizationsProtocol,
    SemiSupervisedProtocol,
)

#: The paper's sigma grid (Tsuji et al., Sec. 9.2): 39 log-spaced values in [0.01, 100].
PAPER_SIGMA_GRID = "0.01:100:39"

#: Grids a bare ``--NAME`` on ``lkm sweep`` stands for: the paper's sigma grid, and the
#: neighbour counts of its Fig. 8 (``auto`` = ⌊log₁₀ ℓ + 1⌋).
DEFAULT_GRIDS: dict[str, str] = {"sigma": PAPER_SIGMA_GRID, "k": "auto,5,9,13,17"}

#: Datasets and methods of the embedded default (configs/quickstart.yaml, ad-hoc sweeps).
QUICKSTART_DATASETS = ["moons", "sklearn-breast-cancer", "sklearn-iris"]
QUICKSTART_METHODS = [("PL", "pl"), ("LPL", "lpl"), ("SVM", "svm")]

Scalar = float | int | str | bool | None

# -- limits on hostile or runaway specs -------------------------------------------
#: Largest spec file read (bytes).
MAX_SPEC_BYTES = 1_000_000
#: Most YAML nodes a spec may expand to, counting every alias as the nodes it stands for.
MAX_YAML_NODES = 100_000
#: Deepest nesting of mappings and lists in a spec.
MAX_YAML_DEPTH = 50
#: Most values in one parameter grid.
MAX_GRID_VALUES = 10_000
#: Default limit on the fits a plan may have (override: ``LKM_MAX_FITS`` or ``--max-fits``).
MAX_FITS = 100_000
#: Longest run name (it becomes a folder name).
MAX_NAME_LENGTH = 100
#: Seeds go to numpy, which takes 0 <= seed < 2**32.
SEED_LIMIT = 2**32
#: Kernel widths and the kernel scale they give: outside [1e-150, 1e150] the scale
#: (1/(2 sigma²), 1/(4 t)) overflows to inf or underflows to 0 in float64.
KERNEL_WIDTHS: dict[str, str] = {"sigma": "1/(2·sigma²)", "t": "1/(4·t)"}
KERNEL_WIDTH_RANGE = (1e-150, 1e150)

_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def validate_run_name(name: Any, where: str, *, derived_from: str | None = None) -> str:
    """Return ``name`` if it is a safe run name (it becomes ``results/<name>/``), else raise
    a one-line SpecError starting with ``where``.

    A run name is an identifier, not a path: letters, digits, ``.``, ``_`` and ``-``, not
    starting with ``.`` or ``-`` (so never ``.`` or ``..``), at most
    :data:`MAX_NAME_LENGTH` characters. ``derived_from``: the name it was derived from
    (``<name>-smoke``, ``<name>-sweep-...``), named in the message.
    """
    origin = f" (derived from name {_short(derived_from)})" if derived_from is not None else ""
    if not isinstance(name, str):
        raise SpecError(f"{where}: a run name must be a string, got {type(name).__name__}")
    if not name:
        raise SpecError(f"{where}: the run name is empty{origin}")
    if len(name) > MAX_NAME_LENGTH:
        raise SpecError(f"{where}: run name {_short(name)}{origin} has {len(name)} characters (at most {MAX_NAME_LENGTH})")
    if not _NAME_RE.fullmatch(name):
        raise SpecError(
            f"{where}: run name {_short(name)}{origin} is not an identifier: use letters, digits, '.', '_' and '-', "
            "not starting with '.' or '-' (it names the folder results/<name>/)"
        )
    return name


def _short(value: Any, n: int = 60) -> str:
    """``repr(value)`` cut to about ``n`` characters (one line: control characters escaped)."""
    text = repr(value)
    return text if len(text) <= n else f"{text[:n]}...'"


def parse_grid(value: Any) -> list[Scalar]:
    """Parse a parameter grid.

    Accepts a list (``[0.5, 1, 2]``), a scalar, ``"a:b:n"`` (n log-spaced values from a
    to b inclusive, the paper's way of writing its sigma grid), ``"a,b,c"``, or
    ``"default"`` / ``"paper"`` for the grid of :data:`DEFAULT_GRIDS` (resolved by the caller).
    """
    if isinstance(value, (list, tuple)):
        _check_grid_length(len(value), value)
        return [_finite(_coerce(v), value) for v in value]
    if isinstance(value, str):
        s = value.strip()
        if s.count(":") == 2:
            a, b, n = (p.strip() for p in s.split(":"))
            try:
                lo, hi, num = float(a), float(b), int(n)
            except ValueError:
                raise ValueError(f"grid {_short(value)}: expected 'start:stop:count' with numbers") from None
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= 0 or num < 1:
                raise ValueError(f"grid {_short(value)}: log-spaced grids need finite start, stop > 0 and count >= 1")
            _check_grid_length(num, value)  # before np.logspace allocates
            return [float(f"{v:.6g}") for v in np.logspace(math.log10(lo), math.log10(hi), num)]
        if "," in s:
            parts = [v.strip() for v in s.split(",") if v.strip()]
            _check_grid_length(len(parts), value)
            return [_finite(_coerce(v), value) for v in parts]
        return [_finite(_coerce(s), value)]
    return [_finite(_coerce(value), value)]


def _check_grid_length(n: int, value: Any) -> None:
    if n > MAX_GRID_VALUES:
        shown = _short(value) if isinstance(value, str) else "list"
        raise ValueError(f"grid {shown} has {n} values (at most {MAX_GRID_VALUES} per grid)")


def _finite(v: Scalar, grid: Any) -> Scalar:
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"grid value {v!r} is not a finite number")
    return v


def unique_values(values: list[Any]) -> list[Any]:
    """``values`` without repeats, first occurrence kept (``[1, 1.0, 1]`` -> ``[1]``;
    ``True`` and ``1`` stay distinct)."""
    seen: set[Any] = set()
    out = []
    for v in values:
        try:
            key = (type(v) is bool, v)
            hash(key)
        except TypeError:
            key = (False, repr(v))
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


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


class _SpecYAMLError(yaml.MarkedYAMLError):
    """A spec that is well-formed YAML but breaks a limit or has a duplicate key."""


class _Bounded:
    """Composer and constructor hooks of the spec loader: nesting depth, alias expansion
    and duplicate mapping keys.

    Every node's *expanded* size (the nodes it would have with every alias written out)
    is counted as it is composed, an alias adding the size of the node it refers to; the
    document fails as soon as the total passes :data:`MAX_YAML_NODES`, so an alias bomb
    ("billion laughs") stops after at most that many steps, before anything is built.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._total = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[attr-defined]
            event = self.peek_event()  # type: ignore[attr-defined]
            node = super().compose_node(parent, index)  # type: ignore[misc]
            size = self._sizes.get(id(node))
            if size is None:
                raise _SpecYAMLError(None, None, f"alias *{event.anchor} is used inside the node it names (a recursive alias)",
                                     event.start_mark)
            self._count(size, event.start_mark)
            return node
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise _SpecYAMLError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                 self.peek_event().start_mark)  # type: ignore[attr-defined]
        before = self._total
        self._count(1, self.peek_event().start_mark)  # type: ignore[attr-defined]
        node = super().compose_node(parent, index)  # type: ignore[misc]
        self._sizes[id(node)] = self._total - before
        self._depth -= 1
        return node

    def _count(self, n: int, mark: Any) -> None:
        self._total += n
        if self._total > MAX_YAML_NODES:
            raise _SpecYAMLError(None, None, f"the spec expands to more than {MAX_YAML_NODES} values "
                                 "(aliases counted as what they stand for)", mark)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base` merges keys; the mapping's own keys override them
                key = self.construct_object(key_node, deep=deep)  # type: ignore[attr-defined]
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: the base constructor reports it
                if first is not None:
                    raise _SpecYAMLError(None, None, f"duplicate key {_short(key)} (first on line {first + 1})",
                                         key_node.start_mark)
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]


if getattr(yaml, "__with_libyaml__", False):
    from yaml._yaml import CParser

    class _SpecLoader(_Bounded, Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """Safe loading with libyaml's parser, Python's composer (for the limits of
        :class:`_Bounded`) and YAML 1.2 floats: ``1e-8`` is a number, not the string
        '1e-8' that YAML 1.1 (which requires a dot) makes of it."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            _Bounded.__init__(self)

else:  # pragma: no cover - PyYAML without libyaml

    class _SpecLoader(_Bounded, yaml.SafeLoader):  # type: ignore[no-redef]
        """PyYAML's safe loader with the limits of :class:`_Bounded` and YAML 1.2 floats."""

        def __init__(self, stream: str) -> None:
            yaml.SafeLoader.__init__(self, stream)
            _Bounded.__init__(self)


_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$"),
    list("-+0123456789."),
)


def _load_yaml(text: str, source: str = "<spec>") -> Any:
    """Parse spec text (safe tags only, within the limits of :class:`_Bounded`); every
    problem is a one-line SpecError naming ``source`` and the line."""
    try:
        return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 (safe constructor)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        what = "" if isinstance(exc, _SpecYAMLError) else " malformed YAML:"
        if "maximum nesting depth" in problem:  # libyaml >= 0.2.6 (PyYAML 6.0.4) stops at 1000 levels first
            problem, what = f"nested more than {MAX_YAML_DEPTH} levels deep", ""
        raise SpecError(f"{source}:{where}{what} {problem}".replace("\n", " ")) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an int of 5000 digits
        raise SpecError(f"{source}: malformed YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def _read_spec_text(path: Path) -> str:
    """The text of a spec file: at most :data:`MAX_SPEC_BYTES`, UTF-8, no NUL."""
    if path.is_dir():
        raise SpecError(f"{path}: is a folder, not a spec file")
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the spec file: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES} bytes; a spec is a short text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte offset {exc.start})") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SpecError(f"{path}: line {line}: contains a NUL character (not a text file?)")
    return text.removeprefix("\ufeff")


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
        return data

    @model_serializer(mode="wrap")
    def _without_unset_file_keys(self, handler: Any) -> dict[str, Any]:
        dump = handler(self)
        for key in (*_FILE_KEYS, "groups", "tasks", "task_of"):  # unset: left out, so task ids stay what they were
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
    :mod:`lkm.metrics`)."""

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


def spec_from_dict(
    data: Any, source: str = "<spec>", smoke: bool = False, max_fits: int | None = None,
    spec_dir: Path | None = None,
) -> Spec:
    """Validate a spec given as a mapping; errors name ``source`` and the key path.

    ``smoke=True`` first replaces top-level keys by those under the spec's ``smoke`` key
    (nested mappings are merged), e.g. fewer sigmas and datasets for a CI smoke run. The
    spec as written and its smoke variant are both validated either way, so a mistake
    under ``smoke:`` is found before the full run, not after it. ``max_fits``: the
    plan-size limit (default: ``LKM_MAX_FITS`` or :data:`MAX_FITS`; see :func:`check_plan_size`).
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
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key{did_you_mean(str(err['loc'][-1]), _known_keys(err['loc']))}"
        where = _loc(err["loc"])
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
    models: dict[str, type[BaseModel]] = {
        "datasets": DatasetSpec, "methods": MethodSpec, "studies": StudySpec, "selection": SelectionSpec,
        "outputs": OutputsSpec, "paper": PaperSpec, "protocol": KFoldProtocol,
    }
    model: type[BaseModel] = models.get(str(loc[0]), Spec) if len(loc) > 1 else Spec
    if loc[0] == "protocol":
        return list({*KFoldProtocol.model_fields, *HoldoutProtocol.model_fields, *LearningCurveProtocol.model_fields,
                     *RealizationsProtocol.model_fields, *SemiSupervisedProtocol.model_fields})
    if loc[0] == "paper" and len(loc) > 2:
        model = PaperValue
    return list(model.model_fields)


def load_spec(path: str | Path, smoke: bool = False, max_fits: int | None = None) -> Spec:
    """Read and validate a YAML spec file (``smoke``, ``max_fits``: see :func:`spec_from_dict`).

    The file is read as bytes and must be UTF-8 without NUL characters and at most
    :data:`MAX_SPEC_BYTES`; duplicate keys, nesting deeper than :data:`MAX_YAML_DEPTH`
    and aliases expanding past :data:`MAX_YAML_NODES` values are errors (one line each).
    """
    path = Path(path)
    data = _load_yaml(_read_spec_text(path), str(path))
    data = _resolve_extends(data, path, seen=(path.resolve(),))
    return spec_from_dict(data, str(path), smoke=smoke, max_fits=max_fits, spec_dir=path.parent)


def _resolve_extends(data: Any, path: Path, seen: tuple[Path, ...]) -> Any:
    """Merge a spec over the spec its ``extends`` key names (a path relative to it)."""
    if not isinstance(data, dict) or "extends" not in data:
        return data
    if not isinstance(data["extends"], str) or not data["extends"] or "\x00" in data["extends"]:
        raise SpecError(f"{path}: extends: expected the path of another spec file, got {_short(data['extends'])}")
    parent = path.parent / data["extends"]
    if not parent.is_file():
        raise SpecError(f"{path}: extends: no such spec file {parent}")
    if parent.resolve() in seen:
        raise SpecError(f"{path}: extends: {parent} extends itself (a cycle)")
    if len(seen) > 10:
        raise SpecError(f"{path}: extends: more than 10 specs extend one another")
    base = _load_yaml(_read_spec_text(parent), str(parent))
    base = _resolve_extends(base, parent, (*seen, parent.resolve()))
    if not isinstance(base, dict):
        raise SpecError(f"{parent}: the spec must be a mapping of keys")
    rest = {k: v for k, v in data.items() if k != "extends"}
    return {**base, **rest}  # top-level keys replace the base spec's


# -- plan size -------------------------------------------------------------------------
def max_fits_limit(max_fits: int | None = None) -> int:
    """The plan-size limit: ``max_fits`` if given, else ``LKM_MAX_FITS``, else :data:`MAX_FITS`."""
    if max_fits is not None:
        if isinstance(max_fits, bool) or not isinstance(max_fits, int) or max_fits < 1:
            raise SpecError(f"--max-fits: expected a positive whole number, got {_short(max_fits)}")
        return max_fits
    env = os.environ.get("LKM_MAX_FITS")
    if env is None or not env.strip():
        return MAX_FITS
    try:
        value = int(env.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise SpecError(f"LKM_MAX_FITS: expected a positive whole number, got {_short(env)}")
    return value


def split_count(spec: Spec, dataset_index: int) -> int:
    """Splits the protocol of ``spec.datasets[dataset_index]`` will draw, known before
    the data is loaded (realizations without ``count``: the registry's official number)."""
    d = spec.datasets[dataset_index]
    proto = d.protocol if d.protocol is not None else spec.protocol
    if isinstance(proto, KFoldProtocol):
        return proto.folds * proto.repeats
    if isinstance(proto, (HoldoutProtocol, SemiSupervisedProtocol)):
        return proto.repeats
    if isinstance(proto, LearningCurveProtocol):
        return len(proto.sizes) * proto.repeats
    if isinstance(proto, RealizationsProtocol):
        if proto.count is not None:
            return proto.count
        return _official_realizations(d.name) or DEFAULT_REALIZATIONS
    return 1


def _official_realizations(name: str) -> int | None:
    from lkm.data import dataset_info

    try:
        n = dataset_info(name).meta.get("official_realizations")
    except LkmError:
        return None
    return int(n) if isinstance(n, int) and n > 0 else None


def method_grid_size(spec: Spec, method: MethodSpec) -> int:
    """``len(spec.method_grid(method))``, computed without listing the combinations."""
    from lkm.methods import estimator_param_names, resolve_estimator

    try:
        names = estimator_param_names(resolve_estimator(method.estimator))
    except LkmError:  # reported by validate_semantics
        names = set(spec.sweep)
    tuned = set(method.tune.grid) if method.tune else set()
    axes = {k: len(g) for k, g in spec.sweep.items() if k in names and k not in tuned}
    axes.update({k: len(g) for k, g in method.sweep.items()})
    return math.prod(axes.values())


def planned_fits(spec: Spec, n_splits_per_dataset: Mapping[str, int] | None = None) -> int:
    """Tasks the spec's plan will have (what ``lkm run`` reports as fits): per dataset,
    its splits x every method's parameter settings, plus one study task per dataset and
    study setting. Computed from grid lengths, before any data is loaded or grid listed;
    ``n_splits_per_dataset`` (dataset id -> splits) replaces the protocol's estimate."""
    total = 0
    for i, d in enumerate(spec.datasets):
        given = (n_splits_per_dataset or {}).get(d.id)
        n_splits = given if given is not None else split_count(spec, i)
        per_split = sum(method_grid_size(spec, m) for m in spec.methods if m.runs_on(d.id, d.task_of))
        total += n_splits * per_split if spec.methods else 0
        total += sum(math.prod(len(g) for g in st.sweep.values()) for st in spec.studies)
    return total


def check_plan_size(spec: Spec, source: str, max_fits: int | None = None) -> int:
    """Raise a one-line SpecError when the plan has more fits than the limit (see
    :func:`max_fits_limit`), or when one method's settings x its tuning grid (each
    checked while validating) do; return the planned fits."""
    limit = max_fits_limit(max_fits)
    n = planned_fits(spec)
    if n > limit:
        raise SpecError(f"{source}: plan has {n} fits (> limit {limit}): narrow the grids or pass --max-fits {n}")
    for i, m in enumerate(spec.methods):
        settings = method_grid_size(spec, m) * (m.tune.size if m.tune else 1)
        if settings > limit:
            raise SpecError(
                f"{source}: methods[{i}] ({m.name}): {settings} parameter settings with its tune.grid "
                f"(> limit {limit}): narrow the grids or pass --max-fits {settings}"
            )
    return n


def validate_semantics(spec: Spec, source: str, max_fits: int | None = None) -> None:
    """Check names against the registries, seeds, the plan size (before any grid is
    listed) and every parameter value against its estimator."""
    from lkm.data import dataset_info
    from lkm.data.registry import check_spec_file_name
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
    load_plugins()  # papers register outputs and studies (lkm.outputs entry points)
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
        raise SpecError(f"{where}: a seed must be a whole number 0 <= seed < 2**32, got {_short(value)}")
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
        key = next((k for k in params if f"'{k}'" in str(exc)), None)
        value = f" = {params[key]!r}" if key else ""
        text = str(exc).split(". Got")[0]
        raise SpecError(f"{where}.params.{key or '?'}{value}: {text}") from None


def _check_value(key: str, value: Any, constraints: list[Any], where: str) -> None:
    """What sklearn's constraints let through: booleans as numbers (``Interval(Real)``
    accepts True), NaN/inf, and kernel widths whose kernel scale overflows."""
    head = f"{where}.params.{key} = {_short(value)}"
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
    if method.tune is not None and any(v in values for v in method.tune.grid.get(other, [])):
        return None
    from lkm.methods import resolve_estimator

    default = resolve_estimator(method.estimator)().get_params().get(other)
    seen = unique_values([params.get(other, default) for params in spec.method_grid(method)])
    if any(v in values for v in seen):
        return None
    wanted = " or ".join(f"{other}={v!r}" for v in values)
    return f"{other}={'/'.join(repr(v) for v in seen)} in every setting; {name} is used only with {wanted}"


def default_spec(
    datasets: list[str] | None = None, methods: list[str] | None = None, name: str = "quickstart"
) -> Spec:
    """The embedded default: PL, LPL and SVM on offline data under 10-fold CV."""
    return spec_from_dict(default_spec_data(datasets, methods, name), "<default spec>")


def default_spec_data(
    datasets: list[str] | None = None, methods: list[str] | None = None, name: str = "quickstart",
    sweep: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The embedded default as a mapping (not validated): ``methods`` are registry keys
    (any case) or estimators' dotted paths, ``sweep`` replaces its ``{sigma: 0.1:10:5}``."""
    from lkm.methods import METHOD_PATHS

    keys = {k for _, k in QUICKSTART_METHODS}
    chosen = []
    for m in methods or [n for n, _ in QUICKSTART_METHODS]:
        key = m.lower()
        if key in METHOD_PATHS:
            chosen.append({"name": m.upper() if key in keys else m, "estimator": key})
        elif "." in m.strip("."):  # a dotted path: checked with the spec
            chosen.append({"name": m.rsplit(".", 1)[1], "estimator": m})
        else:
            raise SpecError(f"--method: unknown method {m!r}{did_you_mean(key, METHOD_PATHS)}; give a key "
                            "(`lkm methods`) or a classifier's dotted path, e.g. sklearn.neighbors.KNeighborsClassifier")
    return {
        "name": name,
        "description": "Embedded default: offline data, 10-fold CV.",
        "datasets": datasets or QUICKSTART_DATASETS,
        "preprocessing": "standardize",
        "protocol": {"kind": "kfold", "folds": 10, "seed": 0},
        "methods": chosen,
        "sweep": {"sigma": "0.1:10:5"} if sweep is None else sweep,
    }


def spec_to_yaml(spec: Spec) -> str:
    """The spec as YAML (what a run folder stores)."""
    return yaml.safe_dump(spec.model_dump(mode="json", exclude_defaults=False), sort_keys=False)
