"""A paper's open choices and the readings of each we run (``readings.yaml`` of a paper
package): where a paper leaves a choice open — a multi-class scheme, a feature scale, a
kernel's constant, the scale a width is given on — each plausible interpretation is a
named :class:`Reading`, stated in advance and run as its own variant.

A reading is either the stated one (what our main run does, ``stated: true``), a variant
run (``runs``: base run → the spec of the variant, in the paper's ``specs/`` folder, run
by ``lkm reproduce`` like any experiment), or another row of the same run (``method``: a
pattern such as ``"{method}-cv"``, e.g. the setting chosen by cross-validation on the
training part). Nothing here is chosen by looking at the test set: the report shows every
reading's number and the verdict on each flagged row (:mod:`lkm.reproduction.site.tables`),
and claims are evaluated under each variant run (:func:`lkm.reproduction.claims.claim_row`).

File format (a list of choices)::

    - choice: linear-svm-multiclass          # an id (anchors, docs)
      question: How are ten classes made binary for the linear SVM?
      paper: Sec. IV says one-against-all; ...
      runs: [cevikalp_usps, cevikalp_segmentation]   # the runs whose rows it concerns
      rows: {method: Linear-SVM}                       # which rows (shell patterns)
      readings:
        - {name: one-against-all, stated: true, says: "..."}
        - name: one-vs-one
          says: LIBSVM's own scheme
          runs: {cevikalp_usps: cevikalp_usps.ovo, cevikalp_segmentation: cevikalp_segmentation.ovo}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lkm.errors import LkmError, did_you_mean
from lkm.reproduction.paper import names, package_yaml_list, row_matches
from lkm.reproduction.runs import Experiment, spec_folder

#: The keys of one choice and of one reading in ``readings.yaml``.
CHOICE_KEYS = ("choice", "question", "paper", "runs", "rows", "quantities", "readings")
READING_KEYS = ("name", "says", "stated", "runs", "method")


@dataclass(frozen=True)
class Reading:
    """One interpretation of an open choice: ``runs`` maps a base run to the variant run
    that implements it (absent: the base run itself), ``method`` names the row that holds
    its number (``{method}`` is the flagged row's method)."""

    name: str
    says: str
    stated: bool = False
    runs: tuple[tuple[str, str], ...] = ()
    method: str = "{method}"

    def run_for(self, base: str) -> str:
        """The run folder whose tables hold this reading's numbers for ``base``'s rows."""
        return dict(self.runs).get(base, base)

    def method_for(self, method: str) -> str:
        return self.method.replace("{method}", method)


@dataclass(frozen=True)
class Choice:
    """An open choice of a paper, the rows it concerns and the readings tried."""

    key: str
    question: str
    paper: str
    runs: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    quantities: tuple[str, ...]
    readings: tuple[Reading, ...]

    def matches(self, run: str, quantity: str, row: dict[str, str]) -> bool:
        """Whether a table row of ``run`` (its cells by column, the compared ``quantity``) is one this choice concerns."""
        return row_matches(run, quantity, row, self.runs, self.quantities, self.rows)

    @property
    def stated(self) -> Reading:
        return next(r for r in self.readings if r.stated)


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise LkmError(f"{where}.{key}: a sentence is required")
    return " ".join(value.split())


def _unknown(entry: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(entry) - set(keys))
    if unknown:
        raise LkmError(f"{where}.{unknown[0]}: unknown key{did_you_mean(str(unknown[0]), keys)}")


def _reading(entry: Any, runs: tuple[str, ...], where: str) -> Reading:
    if not isinstance(entry, dict):
        raise LkmError(f"{where}: expected a mapping with {', '.join(READING_KEYS)}")
    _unknown(entry, READING_KEYS, where)
    variants = entry.get("runs") or {}
    if not isinstance(variants, dict) or not all(isinstance(v, str) for v in variants.values()):
        raise LkmError(f"{where}.runs: expected a mapping base run -> variant spec name")
    stray = sorted(set(variants) - set(runs))
    if stray:
        raise LkmError(f"{where}.runs.{stray[0]}: not one of the choice's runs ({', '.join(runs)})")
    method = entry.get("method", "{method}")
    if not isinstance(method, str) or not method.strip():
        raise LkmError(f"{where}.method: expected a row name such as '{{method}}-cv'")
    return Reading(_text(entry, "name", where), _text(entry, "says", where), bool(entry.get("stated", False)),
                   tuple((str(k), v) for k, v in variants.items()), method)


def paper_readings(package: str) -> list[Choice]:
    """The open choices of ``readings.yaml`` of a paper's package (none if absent), in file
    order; each has exactly one stated reading."""
    where, entries = package_yaml_list(package, "readings.yaml", "choices")
    out = []
    for i, entry in enumerate(entries):
        at = f"{where}: [{i}]"
        if not isinstance(entry, dict):
            raise LkmError(f"{at}: expected a mapping with {', '.join(CHOICE_KEYS)}")
        _unknown(entry, CHOICE_KEYS, at)
        runs = names(entry.get("runs"), f"{at}.runs")
        rows = entry.get("rows") or {}
        if not isinstance(rows, dict):
            raise LkmError(f"{at}.rows: expected a mapping column -> value(s)")
        readings = entry.get("readings")
        if not isinstance(readings, list) or len(readings) < 2:
            raise LkmError(f"{at}.readings: a choice needs the stated reading and at least one other")
        parsed = tuple(_reading(r, runs, f"{at}.readings[{j}]") for j, r in enumerate(readings))
        if sum(r.stated for r in parsed) != 1:
            raise LkmError(f"{at}.readings: exactly one reading is the stated one (stated: true)")
        out.append(Choice(
            _text(entry, "choice", at), _text(entry, "question", at), _text(entry, "paper", at), runs,
            tuple((str(c), names(v, f"{at}.rows.{c}")) for c, v in rows.items()),
            names(entry["quantities"], f"{at}.quantities") if "quantities" in entry else (),
            parsed,
        ))
    return out


def reading_experiments(package: str) -> list[Experiment]:
    """The variant runs of a paper's readings, as experiments (``specs/<name>.yaml``), in
    file order without repeats: what ``SPECS`` appends so that ``lkm reproduce`` runs them."""
    folder = spec_folder(package)
    names = dict.fromkeys(v for c in paper_readings(package) for r in c.readings for _, v in r.runs)
    return [Experiment(str(folder / f"{name}.yaml")) for name in names]


def reading_runs(package: str) -> dict[str, list[tuple[str, str]]]:
    """Base run → ``[(label, variant run)]`` of every variant reading: the runs a claim
    that reads the base run is evaluated again on (label: ``choice: reading``)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for choice in paper_readings(package):
        for reading in choice.readings:
            for base, variant in reading.runs:
                out.setdefault(base, []).append((f"{choice.key}: {reading.name}", variant))
    return out
