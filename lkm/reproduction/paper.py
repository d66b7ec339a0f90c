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
    cause matches (a dataset and method) is ``reproduced`` — the paper's number inside a
    reading's interval, for our number at the stated or at the tuned setting — or not. A
    cause whose own experiment says otherwise is contradicted (the report says so and a
    test fails)."""

    choice: str
    reproduced: bool
    reading: str | None = None

    def describe(self) -> str:
        what = f"reading ‘{self.reading}’ of ‘{self.choice}’" if self.reading else f"the readings of ‘{self.choice}’"
        return f"{what} {'reproduce' if self.reproduced else 'do not reproduce'} the paper's number"


@dataclass(frozen=True)
class Difference:
    """A named cause for table rows where our number differs from the paper's by more
    than the report's threshold (:data:`lkm.reproduction.site.DIFF_POINTS`), from the
    ``differences.yaml`` of a paper's package. It applies to a row when every condition
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

    def strings(value: Any, key: str) -> tuple[str, ...]:
        return names(value, f"{where}: {key}")

    out = []
    for i, entry in enumerate(entries):
        key = f"[{i}]"
        if not isinstance(entry, dict):
            raise LkmError(f"{where}: {key}: expected a mapping with {', '.join(DIFFERENCE_KEYS)}")
        unknown = sorted(set(entry) - set(DIFFERENCE_KEYS))
        if unknown:
            raise LkmError(f"{where}: {key}.{unknown[0]}: unknown key{did_you_mean(str(unknown[0]), DIFFERENCE_KEYS)}")
        cause = entry.get("cause")
        if not isinstance(cause, str) or not cause.strip():
            raise LkmError(f"{where}: {key}.cause: a one-sentence cause is required")
        rows = entry.get("rows") or {}
        if not isinstance(rows, dict):
            raise LkmError(f"{where}: {key}.rows: expected a mapping column -> value(s)")
        evidence = entry.get("evidence") or []
        evidence = evidence if isinstance(evidence, list) else [evidence]
        for j, e in enumerate(evidence):
            if (not isinstance(e, dict) or not isinstance(e.get("choice"), str)
                    or not isinstance(e.get("reproduced"), bool) or set(e) - {"choice", "reproduced", "reading"}):
                raise LkmError(f"{where}: {key}.evidence[{j}]: expected {{choice: <readings.yaml choice>, "
                               "reproduced: true|false, reading: <name> (optional)}")
        evidence = tuple(Evidence(e["choice"], e["reproduced"], e.get("reading")) for e in evidence)
        out.append(Difference(
            " ".join(cause.split()),
            strings(entry["runs"], f"{key}.runs") if "runs" in entry else (),
            strings(entry["quantities"], f"{key}.quantities") if "quantities" in entry else (),
            tuple((str(c), strings(v, f"{key}.rows.{c}")) for c, v in rows.items()),
            evidence,
        ))
    return out


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
