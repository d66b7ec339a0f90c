"""Paper packages: how they are found (:func:`discover_papers`) and what they hold
besides code, read from their own folder: the numbers the paper prints
(``paper_values.yaml``) and the named causes of where we differ (``differences.yaml``).

A paper package (``lkm/papers/<key>/``; docs/architecture.md, "How to add a paper")
defines :data:`PAPER_ATTRIBUTES`: ``ORDER`` (its place in the report), ``SPECS`` (its
experiments, :func:`lkm.reproduction.runs.experiments`), ``evaluate_claims(root,
smoke)`` and ``write_summary(root, smoke)`` (its claims table); optionally ``PERTURBED``
(the runs the fragility check reruns), ``DOC_BLOCKS`` (generated docs tables) and a
``claims`` module with a ``TITLE``.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib.resources import files
from types import ModuleType
from typing import Any

import yaml

from lkm.errors import LkmError, did_you_mean
from lkm.numerics.stats import MARGIN_POINTS


#: What every verdict of a smoke run (``--smoke``: few datasets and settings) is labelled:
#: its numbers exercise the code, they are not evidence for or against a claim.
def paper_values(package: str) -> dict[str, Any]:
    """The numbers a paper prints, from ``paper_values.yaml`` of its package (e.g.
    ``lkm.papers.lpl``), each entry with ``where`` (section, table or figure)."""
    return yaml.safe_load((files(package) / "paper_values.yaml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Evidence:
    """An experiment a cause names (``evidence:`` in differences.yaml, one or a list): under
    the readings of ``choice`` (only ``reading``, when given; readings.yaml), each row the
    cause matches (a dataset and method) is ``reached`` — the paper's number inside a
    reading's 95 % interval or that interval inside the margin (the reading's verdict
    *reproduced* or *consistent*, whatever its provenance) — or not. A cause whose own
    experiment says otherwise is contradicted (the report says so and a test fails)."""

    choice: str
    reached: bool
    reading: str | None = None

    def describe(self) -> str:
        what = f"reading ‘{self.reading}’ of ‘{self.choice}’" if self.reading else f"the readings of ‘{self.choice}’"
        return f"{what} {'reach' if self.reached else 'do not reach'} the paper's number"


@dataclass(frozen=True)
class Difference:
    """A named cause for table rows whose verdict against the paper is *differs* or
    *untested* (:mod:`lkm.reproduction.site.tables`), from the ``differences.yaml`` of a
    paper's package. It applies to a row when every condition
    matches (shell-style patterns, :func:`fnmatch.fnmatchcase`): ``runs`` the run
    folder's spec name, ``quantities`` the compared quantity (``accuracy %``, ``testing
    %``, or the ``metric`` cell of a ``paper``/``ours`` table), ``rows`` a column → value
    mapping (``dataset``, ``method``, ...). An empty condition matches everything."""

    cause: str
    runs: tuple[str, ...] = ()
    quantities: tuple[str, ...] = ()
    rows: tuple[tuple[str, tuple[str, ...]], ...] = ()
    evidence: tuple[Evidence, ...] = ()

    def matches(self, run: str, quantity: str, row: dict[str, str]) -> bool:
        return row_matches(run, quantity, row, self.runs, self.quantities, self.rows)


def row_matches(run: str, quantity: str, row: dict[str, str], runs: tuple[str, ...],
                quantities: tuple[str, ...], rows: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Whether a table row of ``run`` (its cells by column; ``quantity`` the compared
    column) meets every condition — shell-style patterns, an empty one matching all: what
    a cause (differences.yaml) and a choice (readings.yaml) say they concern."""
    def any_of(value: str, patterns: tuple[str, ...]) -> bool:
        return any(fnmatchcase(value.strip(), p) for p in patterns)

    if runs and not any_of(run, runs):
        return False
    if quantities and not any_of(quantity, quantities):
        return False
    return all(column in row and any_of(row[column], values) for column, values in rows)


def names(value: Any, where: str) -> tuple[str, ...]:
    """A name or a list of names of a paper's YAML file as a tuple; a one-line error
    naming ``where`` (file and key) otherwise."""
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, str | int | float) and str(v).strip() for v in values):
        raise LkmError(f"{where}: expected a name or a list of names, got {value!r}")
    return tuple(str(v) for v in values)


def checked_entry(entry: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``entry`` of a paper's YAML file when it is a mapping of ``keys`` only; a one-line
    error naming ``where`` (file and entry) and the key otherwise."""
    if not isinstance(entry, dict):
        raise LkmError(f"{where}: expected a mapping with {', '.join(keys)}")
    unknown = sorted(set(entry) - set(keys))
    if unknown:
        raise LkmError(f"{where}.{unknown[0]}: unknown key{did_you_mean(str(unknown[0]), keys)}")
    return entry


def row_conditions(entry: dict[str, Any], where: str) -> tuple[tuple[str, ...], tuple[str, ...],
                                                                tuple[tuple[str, tuple[str, ...]], ...]]:
    """``(runs, quantities, rows)`` of an entry (absent: match all), the conditions
    :func:`row_matches` reads; a one-line error naming ``where`` for a malformed one."""
    rows = entry.get("rows") or {}
    if not isinstance(rows, dict):
        raise LkmError(f"{where}.rows: expected a mapping column -> value(s)")
    return (names(entry["runs"], f"{where}.runs") if "runs" in entry else (),
            names(entry["quantities"], f"{where}.quantities") if "quantities" in entry else (),
            tuple((str(c), names(v, f"{where}.rows.{c}")) for c, v in rows.items()))


#: The keys of one ``differences.yaml`` entry.
DIFFERENCE_KEYS = ("cause", "runs", "quantities", "rows", "evidence")


def package_yaml_list(package: str, file: str, what: str) -> tuple[str, list[Any]]:
    """``(where, entries)`` of the YAML list ``file`` in a paper's package (``entries``
    empty when the file is absent); ``where`` names the file in errors, and a file that
    is not a list of ``what`` is refused."""
    resource = files(package) / file
    where = f"{package.replace('.', '/')}/{file}"
    if not resource.is_file():
        return where, []
    entries = yaml.safe_load(resource.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise LkmError(f"{where}: expected a list of {what}, got {type(entries).__name__}")
    return where, entries


def paper_differences(package: str) -> list[Difference]:
    """The named causes of ``differences.yaml`` of a paper's package (none if absent), in
    file order: the report names the first that matches a flagged row."""
    where, entries = package_yaml_list(package, "differences.yaml", "causes")
    out = []
    for i, entry in enumerate(entries):
        at = f"{where}: [{i}]"
        checked_entry(entry, DIFFERENCE_KEYS, at)
        cause = entry.get("cause")
        if not isinstance(cause, str) or not cause.strip():
            raise LkmError(f"{at}.cause: a one-sentence cause is required")
        conditions = row_conditions(entry, at)
        evidence = entry.get("evidence") or []
        evidence = evidence if isinstance(evidence, list) else [evidence]
        for j, e in enumerate(evidence):
            if (not isinstance(e, dict) or not isinstance(e.get("choice"), str)
                    or not isinstance(e.get("reached"), bool) or set(e) - {"choice", "reached", "reading"}):
                raise LkmError(f"{at}.evidence[{j}]: expected {{choice: <readings.yaml choice>, "
                               "reached: true|false, reading: <name> (optional)}")
        evidence = tuple(Evidence(e["choice"], e["reached"], e.get("reading")) for e in evidence)
        out.append(Difference(" ".join(cause.split()), *conditions, evidence))
    return out


#: The equivalence margin, in points, of every compared row of a paper without ``verdicts.yaml``:
#: the claims' default margin (one margin for rows and claims).
DEFAULT_MARGIN = MARGIN_POINTS
#: The keys of ``verdicts.yaml`` and of one of its overrides.
MARGIN_KEYS = ("margin", "overrides")
OVERRIDE_KEYS = ("margin", "source", "runs", "quantities", "rows")


@dataclass(frozen=True)
class Margins:
    """The equivalence margin of a paper's compared rows (``verdicts.yaml`` of its package,
    stated once, before the verdicts are read): ``default`` points for every row, and
    ``overrides`` — ``(margin, source, runs, quantities, rows)``, allowed only where the
    paper itself prints a spread for the row, ``source`` citing it — matched like a cause
    (:func:`row_matches`), the first that matches winning."""

    default: float = DEFAULT_MARGIN
    overrides: tuple[tuple[float, str, tuple[str, ...], tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()

    def for_row(self, run: str, quantity: str, row: dict[str, str]) -> float:
        """The margin of one compared row of ``run``."""
        return next((m for m, _, runs, quantities, rows in self.overrides
                     if row_matches(run, quantity, row, runs, quantities, rows)), self.default)


def paper_margins(package: str) -> Margins:
    """The margins of ``verdicts.yaml`` of a paper's package (:class:`Margins`; the
    :data:`DEFAULT_MARGIN` when absent)::

        margin: 1.0            # points, every compared row
        overrides:             # only where the paper prints a spread for the row
          - {runs: cevikalp_segmentation, rows: {method: NN}, margin: 0.92, source: "Table II: 96.36 ± 0.92"}
    """
    resource = files(package) / "verdicts.yaml"
    where = f"{package.replace('.', '/')}/verdicts.yaml"
    if not resource.is_file():
        return Margins()
    data = yaml.safe_load(resource.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise LkmError(f"{where}: expected a mapping with {', '.join(MARGIN_KEYS)}")
    unknown = sorted(set(data) - set(MARGIN_KEYS))
    if unknown:
        raise LkmError(f"{where}: {unknown[0]}: unknown key{did_you_mean(str(unknown[0]), MARGIN_KEYS)}")

    def points(value: Any, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise LkmError(f"{where}: {key}: expected a positive number of points, got {value!r}")
        return float(value)

    overrides = []
    for i, entry in enumerate(data.get("overrides") or []):
        key = f"overrides[{i}]"
        checked_entry(entry, OVERRIDE_KEYS, f"{where}: {key}")
        source = entry.get("source")
        if not isinstance(source, str) or not source.strip():
            raise LkmError(f"{where}: {key}.source: where the paper prints the spread is required")
        overrides.append((points(entry.get("margin"), f"{key}.margin"), " ".join(source.split()),
                          *row_conditions(entry, f"{where}: {key}")))
    return Margins(points(data.get("margin", DEFAULT_MARGIN), "margin"), tuple(overrides))


#: What every paper package defines (checked when it is discovered).
PAPER_ATTRIBUTES = ("ORDER", "SPECS", "evaluate_claims", "write_summary")


def discover_papers(package: str) -> dict[str, ModuleType]:
    """Every subpackage of ``package`` (one per paper, named by its `lkm reproduce` key),
    imported (which registers its outputs) and ordered by its ``ORDER``. A package that
    lacks one of :data:`PAPER_ATTRIBUTES` is an error naming it."""
    parent = importlib.import_module(package)
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(parent.__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        missing = [a for a in PAPER_ATTRIBUTES if not hasattr(module, a)]
        if missing:
            raise LkmError(f"{module.__name__}: a paper package defines {', '.join(PAPER_ATTRIBUTES)}; "
                           f"missing {', '.join(missing)} (docs/architecture.md, 'How to add a paper')")
        found[info.name] = module
    return dict(sorted(found.items(), key=lambda kv: (kv[1].ORDER, kv[0])))
