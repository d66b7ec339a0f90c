"""Experiment specs: the YAML schema, its validation, and parameter grids.

A spec names datasets, a preprocessing, a protocol, methods with parameters, sweeps,
how the best parameter is selected, which outputs to write, and the paper's reported
numbers; ``studies`` (see :mod:`lkm.studies`) are measurements other than accuracy, run
beside or instead of the methods. :func:`load_spec` validates the whole spec (structure, dataset names,
estimator keys, every parameter value of every sweep) before anything is fitted, and
reports the first problem as one line naming the file and key path.

Submodules:

- :mod:`lkm.spec.model` — the pydantic models (:class:`Spec` and its parts); below validation and size, which read them.
- :mod:`lkm.spec.schema` — reading a spec: :func:`spec_from_dict`, :func:`load_spec` (with ``extends``), :func:`spec_to_yaml` (the models re-exported).
- :mod:`lkm.spec.grids` — the grid language (``[..]``, ``a:b:n``, ``a,b,c``): :func:`parse_grid`, :func:`unique_values`.
- :mod:`lkm.spec.yaml_text` — bounded reading of spec text (size, encoding, nesting, aliases, duplicate keys).
- :mod:`lkm.spec.validation` — semantic checks (registries, seeds, parameter values, outputs) and unused parameters.
- :mod:`lkm.spec.size` — plan size counted from grid lengths, and its limit (:data:`MAX_FITS`).
- :mod:`lkm.spec.names` — run names, and the short quoting of values in error messages.
- :mod:`lkm.spec.defaults` — the embedded default spec (quickstart, ad-hoc sweeps).
- :mod:`lkm.spec.protocols` — the evaluation protocols (how splits are drawn).
- :mod:`lkm.spec.outputs` — the registry of tables and figures a spec may ask for.
- :mod:`lkm.spec.seeds` — the protocol's seed for randomized estimators.
"""

from __future__ import annotations

from lkm.spec.defaults import default_spec, default_spec_data
from lkm.spec.grids import (
    DEFAULT_GRIDS,
    MAX_GRID_VALUES,
    PAPER_SIGMA_GRID,
    parse_grid,
    unique_values,
)
from lkm.spec.names import MAX_NAME_LENGTH, validate_run_name
from lkm.spec.schema import (
    DatasetSpec,
    MethodSpec,
    OutputsSpec,
    PerturbSpec,
    Spec,
    TuneSpec,
    load_spec,
    spec_from_dict,
    spec_to_yaml,
)
from lkm.spec.size import MAX_FITS, planned_fits
from lkm.spec.validation import KERNEL_WIDTH_RANGE, conditional_parameter, unused_parameter
from lkm.spec.yaml_text import MAX_SPEC_BYTES

__all__ = [
    "DEFAULT_GRIDS",
    "KERNEL_WIDTH_RANGE",
    "MAX_FITS",
    "MAX_GRID_VALUES",
    "MAX_NAME_LENGTH",
    "MAX_SPEC_BYTES",
    "PAPER_SIGMA_GRID",
    "DatasetSpec",
    "MethodSpec",
    "OutputsSpec",
    "PerturbSpec",
    "Spec",
    "TuneSpec",
    "conditional_parameter",
    "default_spec",
    "default_spec_data",
    "load_spec",
    "parse_grid",
    "planned_fits",
    "spec_from_dict",
    "spec_to_yaml",
    "unique_values",
    "unused_parameter",
    "validate_run_name",
]
