"""Reading a spec: from a mapping (:func:`spec_from_dict`) or a YAML file with ``extends``
(:func:`load_spec`), into the pydantic models of :mod:`lkm.spec.model` (re-exported here),
validated through :func:`lkm.spec.validation.validate_semantics`; :func:`spec_to_yaml`
writes one back."""

from __future__ import annotations

import os
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from lkm.data.user import user_registry_path
from lkm.errors import SpecError, did_you_mean
from lkm.spec.model import (
    PROTOCOL_KINDS,
    DatasetSpec,
    Grid,
    MethodSpec,
    OutputsSpec,
    PaperSpec,
    PaperValue,
    PerturbSpec,
    ProtocolField,
    SelectionSpec,
    Spec,
    StudySpec,
    TuneSpec,
)
from lkm.spec.names import short_repr, validate_run_name
from lkm.spec.outputs import load_plugins
from lkm.spec.validation import validate_semantics
from lkm.spec.yaml_text import load_yaml, read_spec_text

__all__ = [
    "PROTOCOL_KINDS",
    "DatasetSpec",
    "Grid",
    "MethodSpec",
    "OutputsSpec",
    "PaperSpec",
    "PaperValue",
    "PerturbSpec",
    "ProtocolField",
    "SelectionSpec",
    "Spec",
    "StudySpec",
    "TuneSpec",
    "load_spec",
    "spec_from_dict",
    "spec_to_yaml",
]


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


def _error_message(err: Mapping[str, Any]) -> tuple[tuple[Any, ...], str]:
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
    key = _validated_key(data, source, smoke, max_fits, spec_dir)
    if key in _VALIDATED:
        return _VALIDATED[key].model_copy(deep=True)
    spec = _spec_from_dict(data, source, smoke, max_fits, spec_dir)
    if not any(d.path is not None for d in spec.datasets):  # a named file's sha256 is read: never kept
        if len(_VALIDATED) >= VALIDATED_KEPT:
            _VALIDATED.pop(next(iter(_VALIDATED)))
        _VALIDATED[key] = spec.model_copy(deep=True)
    return spec


#: Specs validated in this process, by :func:`_validated_key`: validating resolves every
#: estimator and sizes the plan (about 90 ms), and a report reads each run's spec several
#: times. Copies go in and out, so a caller may edit the spec it gets.
_VALIDATED: dict[tuple[Any, ...], Spec] = {}
VALIDATED_KEPT = 256


def _validated_key(data: dict[str, Any], source: str, smoke: bool, max_fits: int | None,
                   spec_dir: Path | None) -> tuple[Any, ...]:
    """What validating ``data`` depends on: the mapping itself, the arguments, and the
    environment validation reads (``LKM_MAX_FITS``, the user's dataset registry file,
    ``sys.path`` and the working folder, against which estimators and paths resolve; a
    spec naming a data file, whose sha256 validation pins, is not kept). The mapping by its
    ``repr``: key order is kept (a sweep's order is its grid's) and ``1`` is not ``"1"``."""
    registry = user_registry_path()
    try:
        st = registry.stat()
        stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    folder = str(spec_dir.resolve()) if spec_dir is not None else None
    return (repr(data), source, smoke, max_fits, folder, os.getcwd(), os.environ.get("LKM_MAX_FITS"), str(registry), stamp,
            tuple(sys.path))


def _spec_from_dict(data: dict[str, Any], source: str, smoke: bool, max_fits: int | None,
                    spec_dir: Path | None) -> Spec:
    """:func:`spec_from_dict` without its cache."""
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
