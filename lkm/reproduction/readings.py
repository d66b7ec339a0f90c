"""A paper's open choices and the readings of each we run (``readings.yaml`` of a paper
package): where a paper leaves a choice open — a multi-class scheme, a feature scale, a
kernel's constant, the scale a width is given on — each plausible interpretation is a
named :class:`Reading`, run as its own variant.

A reading is either the stated one (what our main run does, ``stated: true``), a variant
run (``runs``: base run → the spec of the variant, in the paper's ``specs/`` folder, run
by ``lkm reproduce`` like any experiment), or another row of the same run (``method``: a
pattern such as ``"{method}-cv"``, e.g. the setting chosen by cross-validation on the
training part). Nothing here is chosen by looking at the test set: the report shows every
reading's number beside each row that differs from the paper
(:mod:`lkm.reproduction.site.tables`), and claims are evaluated under each variant run
(:func:`lkm.reproduction.claims.claim_row`).

Every reading states its provenance, which the row verdicts obey: ``found`` is ``text``
(the paper's text says it), ``in advance`` (an alternative declared before any result
under it was seen) or ``post hoc`` (declared after its results were seen);
``contradicts_text`` whether it goes against the paper's text; ``commit`` the commit that
declared it (the spec or code of a stated reading, readings.yaml otherwise), checked
against the history by tests/test_readings.py. A tuned reading (``method: "{method}-cv"``)
names ``paper_tuned`` — the paper's sentence saying it tuned that setting — or the row
is judged at the paper's printed setting. Only a ``text`` or ``in advance`` reading that
does not contradict the text (and, tuned, has ``paper_tuned``) can reproduce a row; any
other gives at most *matched post hoc* (:attr:`Reading.may_reproduce`).

File format (a list of choices)::

    - choice: linear-svm-multiclass          # an id (anchors, docs)
      question: How are ten classes made binary for the linear SVM?
      paper: Sec. IV says one-against-all; ...
      runs: [cevikalp_usps, cevikalp_segmentation]   # the runs whose rows it concerns
      rows: {method: Linear-SVM}                       # which rows (shell patterns)
      readings:
        - {name: one-against-all, stated: true, says: "...", found: text, contradicts_text: false, commit: 1f4f35a}
        - name: one-vs-one
          says: LIBSVM's own scheme
          found: post hoc
          contradicts_text: true
          commit: 5755d81
          runs: {cevikalp_usps: cevikalp_usps.ovo, cevikalp_segmentation: cevikalp_segmentation.ovo}
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lkm.errors import LkmError
from lkm.reproduction.paper import (
    checked_entry,
    names,
    package_yaml_list,
    row_conditions,
    row_matches,
)
from lkm.reproduction.runs import Experiment, spec_folder

#: The keys of one choice and of one reading in ``readings.yaml``.
CHOICE_KEYS = ("choice", "question", "paper", "runs", "rows", "quantities", "readings")
READING_KEYS = ("name", "says", "stated", "runs", "method", "found", "contradicts_text", "commit", "paper_tuned")
#: Where a reading comes from (``found``): the ones a row can be reproduced under first.
FOUND = ("text", "in advance", "post hoc")


@dataclass(frozen=True)
class Reading:
    """One interpretation of an open choice: ``runs`` maps a base run to the variant run
    that implements it (absent: the base run itself), ``method`` names the row that holds
    its number (``{method}`` is the compared row's method); ``found``, ``contradicts_text``,
    ``commit`` and ``paper_tuned``: its provenance (the module's docstring)."""

    name: str
    says: str
    stated: bool = False
    runs: tuple[tuple[str, str], ...] = ()
    method: str = "{method}"
    found: str = "post hoc"
    contradicts_text: bool = False
    commit: str = ""
    paper_tuned: str = ""  # the paper's sentence saying it tuned this setting ("" : it did not)

    @property
    def tuned(self) -> bool:
        """A tuned variant: its row is the setting chosen by our inner CV."""
        return self.method.endswith("-cv")

    @property
    def judged_at_printed_setting(self) -> bool:
        """A tuned reading of a setting the paper did not tune: it never reaches a row."""
        return self.tuned and not self.paper_tuned

    @property
    def may_reproduce(self) -> bool:
        """Whether a row reached under this reading may read *reproduced* / *consistent*
        under it: found in the text or in advance, not against the text, and not a tuned
        setting the paper did not tune."""
        return self.found != "post hoc" and not self.contradicts_text and not self.judged_at_printed_setting

    def provenance(self) -> str:
        """"post hoc, contradicts the paper's text" and the like, as the report says it."""
        return ", ".join(p for p in (self.found, "contradicts the paper's text" if self.contradicts_text else "",
                                     "tuned, judged at the paper's setting" if self.judged_at_printed_setting else "") if p)

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


def _reading(entry: Any, runs: tuple[str, ...], where: str) -> Reading:
    checked_entry(entry, READING_KEYS, where)
    variants = entry.get("runs") or {}
    if not isinstance(variants, dict) or not all(isinstance(v, str) for v in variants.values()):
        raise LkmError(f"{where}.runs: expected a mapping base run -> variant spec name")
    stray = sorted(set(variants) - set(runs))
    if stray:
        raise LkmError(f"{where}.runs.{stray[0]}: not one of the choice's runs ({', '.join(runs)})")
    method = entry.get("method", "{method}")
    if not isinstance(method, str) or not method.strip():
        raise LkmError(f"{where}.method: expected a row name such as '{{method}}-cv'")
    found = entry.get("found")
    if found not in FOUND:
        raise LkmError(f"{where}.found: expected one of {', '.join(FOUND)}, got {found!r}")
    contradicts = entry.get("contradicts_text")
    if not isinstance(contradicts, bool):
        raise LkmError(f"{where}.contradicts_text: expected true or false, got {contradicts!r}")
    commit = str(entry.get("commit") or "")
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        raise LkmError(f"{where}.commit: expected the commit that declared the reading (7-40 hex digits), got {commit!r}")
    paper_tuned = _text(entry, "paper_tuned", where) if "paper_tuned" in entry else ""
    if paper_tuned and not method.endswith("-cv"):
        raise LkmError(f"{where}.paper_tuned: only a tuned reading (method: '{{method}}-cv') says the paper tuned it")
    return Reading(_text(entry, "name", where), _text(entry, "says", where), bool(entry.get("stated", False)),
                   tuple((str(k), v) for k, v in variants.items()), method, found, contradicts, commit, paper_tuned)


def paper_readings(package: str) -> list[Choice]:
    """The open choices of ``readings.yaml`` of a paper's package (none if absent), in file
    order; each has exactly one stated reading."""
    where, entries = package_yaml_list(package, "readings.yaml", "choices")
    out = []
    for i, entry in enumerate(entries):
        at = f"{where}: [{i}]"
        checked_entry(entry, CHOICE_KEYS, at)
        runs = names(entry.get("runs"), f"{at}.runs")
        _, quantities, rows = row_conditions(entry, at)
        readings = entry.get("readings")
        if not isinstance(readings, list) or len(readings) < 2:
            raise LkmError(f"{at}.readings: a choice needs the stated reading and at least one other")
        parsed = tuple(_reading(r, runs, f"{at}.readings[{j}]") for j, r in enumerate(readings))
        if sum(r.stated for r in parsed) != 1:
            raise LkmError(f"{at}.readings: exactly one reading is the stated one (stated: true)")
        out.append(Choice(
            _text(entry, "choice", at), _text(entry, "question", at), _text(entry, "paper", at), runs,
            rows, quantities, parsed,
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
