"""The tables of the report: a run folder's ``tables/X.json`` read as a :class:`Table`
(:func:`read_table`), and a verdict for every row compared with the paper's number
(:func:`with_differences`, :func:`equivalence`: *reproduced* within the paper's stated
margin, *consistent*, *differs*, *untested*), what the readings of the paper's open choices
give where it differs (:class:`ReadingsTried`), and the named cause (:func:`cause_finder`,
:data:`NO_CAUSE`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lkm.report.formatting import ci_column
from lkm.reproduction.paper import DEFAULT_MARGIN, Difference
from lkm.reproduction.readings import Choice, Reading

#: ``metric`` values of a ``paper``/``ours`` table that are rates in percent.
RATE_METRICS = frozenset({"accuracy", "error", "balanced_accuracy", "f1_macro", "macro_f1"})
DASH = "–"


# -- reading a run folder's tables -----------------------------------------------------
@dataclass
class Table:
    """One table of the report: cells as text, a caption, notes below it; ``flags`` per
    row (empty or its verdict against the paper, as text, each named cause a marker
    ``[n]``: :meth:`flag_parts`), ``causes`` the distinct causes those markers number,
    written once under the table (:meth:`cause_anchor`), ``verdicts`` per row (empty or
    one of :data:`ROW_VERDICTS`), ``details`` per row its :class:`Comparison` s, ``link``
    the paper's "where we differ" section (an anchor); ``lead``
    the columns a reader compares first (the row's identity, ours beside the paper's
    number and their difference), ``files`` the table as CSV, LaTeX and Markdown
    ``(suffix, source, path in the report)``; ``source`` ``run folder/name`` (what makes
    its anchors unique in the report)."""

    name: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    link: str | None = None
    details: list[list[Comparison]] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    files: list[tuple[str, Path, str]] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    source: str = ""

    numeric_memo: tuple[tuple[int, int], list[bool]] | None = field(default=None, repr=False, compare=False)

    @property
    def differs(self) -> bool:
        """Whether some row's verdict is *differs* (under every reading allowed to reach it)."""
        return any(v.startswith(DIFFERS) for v in self.verdicts)

    def flag_parts(self, row: int) -> list[tuple[str, int]]:
        """Row ``row``'s verdict as ``(text, cause number)`` clauses (:func:`row_parts`;
        0: no numbered cause)."""
        return row_parts(self.details[row], self.causes) if self.details else []

    def cause_anchor(self, number: int) -> str:
        """The anchor of cause ``number`` (from 1) under this table, unique in the report."""
        return f"why-{re.sub(r'[^A-Za-z0-9_-]+', '-', self.source or self.name).strip('-')}-{number}"

    @property
    def numeric(self) -> list[bool]:
        """Per column, whether every non-empty cell is a number; computed once per shape
        (the page asks for it per cell)."""
        shape = (len(self.columns), len(self.rows))
        if self.numeric_memo is None or self.numeric_memo[0] != shape:
            out = []
            for j in range(len(self.columns)):
                values = [r[j] for r in self.rows if r[j] not in ("", DASH, "nan", "NA")]
                out.append(bool(values) and all(_NUMBER.fullmatch(v.strip()) for v in values))
            self.numeric_memo = (shape, out)
        return self.numeric_memo[1]


_NUMBER = re.compile(r"[+\-−]?(\d+(\.\d*)?|\.\d+)([eE][+\-]?\d+)?")
_LEADING = re.compile(r"\s*([+\-−]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+\-]?\d+)?)")


def _number(cell: str) -> float | None:
    """The leading number of a cell ("94.37 ± 0.00" → 94.37, "4.24 (85/2007)" → 4.24)."""
    m = _LEADING.match(cell or "")
    if not m:
        return None
    try:
        return float(m.group(1).replace("−", "-"))
    except ValueError:
        return None


def read_table(path: Path, files: list[tuple[str, Path, str]] | None = None) -> Table:
    """A run folder's ``tables/X.json`` (``{"caption", "notes", "columns", "rows"}``, the
    cells as every rendering shows them, :func:`lkm.report.tables.table_json`); ``files``:
    the table's other renderings the report links. An unreadable file: an empty table
    whose note says so."""
    source = f"{path.parent.parent.name}/{path.stem}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        columns = [str(c) for c in data["columns"]]
        rows = [[str(v) for v in row][: len(columns)] + [""] * (len(columns) - len(row)) for row in data["rows"]]
        caption, notes = str(data.get("caption") or path.stem), [str(n) for n in data.get("notes") or []]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Table(path.stem, path.stem, [], [], [f"{path.name} could not be read ({exc})"], files=files or [], source=source)
    return Table(path.stem, caption, columns, rows, notes, files=files or [], source=source)


# -- the paper's numbers beside ours ----------------------------------------------------
#: A cell holding ours and the paper's number, "0.60 (0.50)" (tables whose caption says
#: "ours (paper)", e.g. NPPS's Table 2).
_OURS_PAPER_CELL = re.compile(r"\s*([+\-−]?\d+(?:\.\d*)?)\s*\(([+\-−]?\d+(?:\.\d*)?)\)\s*")


def _pairs(table: Table) -> list[tuple[str, int, int, str, str]]:
    """``(quantity, ours index, paper index, name of the difference column, label)`` of every
    comparison with the paper a table holds: "X (ours)" beside "X (paper)"; "paper's X"
    beside "ours, <how>: X…"; a bare "ours"/"paper" pair (quantity ""; the ``metric``
    cell names it per row); and, when the caption says "ours (paper)", every rate column
    whose cells read "ours (paper)" (both indices that column)."""
    columns = ["\0" if c.endswith(ci_column("")) else c for c in table.columns]  # intervals are no pair
    index = {c: i for i, c in enumerate(columns)}
    out = []
    for i, c in enumerate(columns):
        m = re.fullmatch(r"(.*\S)\s*\(ours\)", c)
        if m and f"{m.group(1)} (paper)" in index:
            out.append((m.group(1), i, index[f"{m.group(1)} (paper)"], f"{m.group(1)}: ours − paper", m.group(1)))
    for j, c in enumerate(columns):
        m = re.fullmatch(r"paper's\s+(.*\S)", c)
        if m is None:
            continue
        for i, o in enumerate(columns):
            mo = re.fullmatch(r"(ours[^:]*):\s*(.*)", o)
            if mo and mo.group(2).startswith(m.group(1)):
                out.append((m.group(1), i, j, f"{mo.group(1)} − paper", f"{m.group(1)} ({mo.group(1)})"))
    if "ours" in index and "paper" in index:
        out.append(("", index["ours"], index["paper"], "ours − paper (points)", ""))
    if "ours (paper)" in table.caption:
        for i, c in enumerate(columns):
            if _is_rate(c) and any(_OURS_PAPER_CELL.fullmatch(r[i]) for r in table.rows):
                out.append((c, i, i, f"{c}: ours − paper", c))
    return out


def _is_rate(stem: str) -> bool:
    low = stem.lower()
    return "%" in low or "accuracy" in low or "error" in low or "rate" in low


def _ours_paper(row: list[str], io: int, ip: int) -> tuple[float | None, float | None]:
    if io == ip:
        m = _OURS_PAPER_CELL.fullmatch(row[io])
        return (_number(m.group(1)), _number(m.group(2))) if m else (None, None)
    return _number(row[io]), _number(row[ip])


#: ``(quantity, the row's cells by column) -> the differences.yaml entry naming the cause`` of a row that differs (None: none).
CauseFor = Callable[[str, dict[str, str]], Difference | None]
#: ``(quantity, the row's cells by column) -> the equivalence margin in points`` (a paper's verdicts.yaml).
MarginFor = Callable[[str, dict[str, str]], float]
#: The heading of the column that gives each compared row's verdict.
FLAG_COLUMN = "verdict against the paper (margin, readings, why)"
#: A row's text when it differs and no cause matches it.
NO_CAUSE = "no cause named yet"
#: The interval a paper's number is compared with, ``(low, high)`` in the table's units.
Interval = tuple[float, float]

REPRODUCED, CONSISTENT, DIFFERS, UNTESTED = "reproduced", "consistent", "differs", "untested (no interval)"
MATCHED_POST_HOC = "matched post hoc"
NOT_REACHED, NO_READING = "differs, not reached under the readings", "differs, no reading tried"
#: The verdicts of a compared row, best first; a row of several comparisons takes its worst.
ROW_VERDICTS = (REPRODUCED, f"{REPRODUCED} under a reading", CONSISTENT, f"{CONSISTENT} under a reading",
                UNTESTED, MATCHED_POST_HOC, NOT_REACHED, NO_READING)


def equivalence(paper: float, interval: Interval | None, margin: float) -> str:
    """Our 95 % interval against the paper's number ± ``margin`` points: *reproduced* when
    the interval lies inside [paper − margin, paper + margin] — two one-sided tests at
    2.5 % each, which the 95 % interval the tables carry decides —; *consistent* when it
    holds the paper's number but is not inside the margin; *differs* when the paper's
    number lies outside it; *untested (no interval)* without one (never reproduced)."""
    if interval is None:
        return UNTESTED
    low, high = interval
    if paper - margin <= low and high <= paper + margin:
        return REPRODUCED
    return CONSISTENT if low <= paper <= high else DIFFERS


def _ci(interval: Interval) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _width(interval: Interval, margin: float) -> str:
    return f"our interval {interval[1] - interval[0]:.1f} points wide, margin ±{margin:g}"


@dataclass(frozen=True)
class ReadingResult:
    """One reading's number for a compared row: ``name`` ``choice: reading`` (``stated``
    for the row itself), its value and interval, and the :class:`Reading` (None: stated)."""

    name: str
    value: float
    interval: Interval | None
    reading: Reading | None = None

    def shown(self) -> str:
        return f"{self.value:.2f}" + (f" {_ci(self.interval)}" if self.interval else "")


@dataclass(frozen=True)
class ReadingsTried:
    """What the readings of the choices that concern a row that differs give, judged
    against the paper's number with the row's margin (:func:`equivalence`) and by their
    provenance (:attr:`lkm.reproduction.readings.Reading.may_reproduce`)."""

    tried: tuple[ReadingResult, ...]
    paper: float
    margin: float

    def verdict(self, result: ReadingResult) -> str:
        return equivalence(self.paper, result.interval, self.margin)

    @property
    def reached(self) -> list[ReadingResult]:
        """The other readings that reach the paper's number (*reproduced* or *consistent*
        under them), best first, leaving out tuned readings of a setting the paper prints."""
        hits = [t for t in self.tried if t.reading is not None and not t.reading.judged_at_printed_setting
                and self.verdict(t) in (REPRODUCED, CONSISTENT)]
        return sorted(hits, key=lambda t: (self.verdict(t) != REPRODUCED, abs(t.value - self.paper)))

    @property
    def outcome(self) -> tuple[str, ReadingResult | None]:
        """``(row verdict, the reading it rests on)``: *reproduced / consistent under a
        reading* only under one that :attr:`~lkm.reproduction.readings.Reading.may_reproduce`,
        else *matched post hoc*, else *not reached*."""
        valid = [t for t in self.reached if t.reading is not None and t.reading.may_reproduce]
        if valid:
            return f"{self.verdict(valid[0])} under a reading", valid[0]
        if self.reached:
            return MATCHED_POST_HOC, self.reached[0]
        return NOT_REACHED, None

    def text(self) -> str:
        verdict, result = self.outcome
        if result is not None and result.reading is not None:
            wide = f"; {_width(result.interval, self.margin)}" if self.verdict(result) == CONSISTENT and result.interval else ""
            words = verdict.removesuffix(" under a reading")
            return f"{words} under reading ‘{result.name}’ ({result.shown()}{wide}; {result.reading.provenance()})"
        listed = "; ".join(f"‘{t.name}’ {t.shown()}" + (f" ({t.reading.provenance()})" if t.reading else "")
                           for t in self.tried)
        closest = min(self.tried, key=lambda t: abs(t.value - self.paper))
        return f"not reached under the {len(self.tried)} readings tried ({listed}); closest ‘{closest.name}’"


@dataclass(frozen=True)
class Comparison:
    """One comparison of a row with the paper's number: our number's difference, our 95 %
    interval (:func:`lkm.numerics.stats.rate_interval`; None where the table has none), the
    margin, the row's ``verdict`` (one of :data:`ROW_VERDICTS`), and for a row that differs
    or is untested the named cause and what the readings give."""

    label: str
    diff: float
    paper: float
    interval: Interval | None
    margin: float
    verdict: str
    cause: str = ""
    readings: ReadingsTried | None = None
    difference: Difference | None = None  # the differences.yaml entry that names the cause
    row: tuple[str, ...] = ()  # the row's dataset and method (what a cause's evidence is checked per)

    def text(self) -> str:
        head = f"{self.label} " if self.label else ""
        if self.interval is None:
            return f"{head}{UNTESTED}: {self.diff:+.2f} points"
        if self.verdict == REPRODUCED:
            return f"{head}reproduced: our 95% CI {_ci(self.interval)} within {self.paper:g} ± {self.margin:g}"
        if self.verdict == CONSISTENT:
            return f"{head}consistent ({_width(self.interval, self.margin)}): {self.diff:+.2f} points"
        out = f"{head}differs: {self.diff:+.2f} points, paper outside our 95% CI {_ci(self.interval)}"
        return out + (f" — {self.readings.text()}" if self.readings else "")


#: ``(table, pair, quantity, row cells, ours, interval) -> every reading's number`` for a
#: row that differs, the row itself first as ``stated`` (None: no choice concerns it).
ReadingFor = Callable[[str, str, str, dict[str, str], float, "Interval | None"], "tuple[ReadingResult, ...] | None"]

_INTERVAL_CELL = re.compile(r"\s*\[\s*([+\-−]?[\d.]+)\s*,\s*([+\-−]?[\d.]+)\s*\]\s*")


def _interval(cell: str) -> Interval | None:
    m = _INTERVAL_CELL.fullmatch(cell or "")
    if not m:
        return None
    low, high = (float(g.replace("−", "-")) for g in m.groups())
    return (low, high) if low <= high else None


def row_comparisons(table: Table) -> list[tuple[str, str, int, int, int | None]]:
    """``(pair name, quantity stem, ours index, paper index, interval index)`` of each rate
    comparison with the paper (:func:`_pairs`), the interval column found by
    :func:`lkm.report.formatting.ci_column`."""
    index = {c: i for i, c in enumerate(table.columns)}
    return [(name, stem, io, ip, index.get(ci_column(table.columns[io])))
            for stem, io, ip, name, _ in _pairs(table)]


#: The columns that identify a row across the run folders of one paper's readings.
KEY_COLUMNS = ("dataset", "method", "the paper's row", "paper row", "metric", "setting")
#: An "ours, tuned: …" column: our number at the setting inner CV chose, not the row's own
#: (judged as the tuned reading of the row, never as the row).
_TUNED_COLUMN = re.compile(r"\btuned\b")


def row_value(table: Table, pair: str, key: dict[str, str]) -> tuple[float, Interval | None] | None:
    """Our number and interval in ``table`` for the row whose key columns equal ``key``,
    in the comparison named ``pair``; None if the table has no such row or number."""
    comparisons = {name: (io, ip, ic) for name, _, io, ip, ic in row_comparisons(table)}
    if pair not in comparisons:
        return None
    io, ip, ic = comparisons[pair]
    for row in table.rows:
        cells = dict(zip(table.columns, row, strict=True))
        if all(cells.get(c, v) == v for c, v in key.items()):
            ours, _ = _ours_paper(row, io, ip)
            if ours is None:
                return None
            return ours, _interval(row[ic]) if ic is not None else None
    return None


def row_verdict(parts: list[Comparison]) -> str:
    """A compared row's verdict: the worst of its comparisons' (:data:`ROW_VERDICTS`)."""
    return max((c.verdict for c in parts), key=ROW_VERDICTS.index)


def with_differences(table: Table, link: str | None = None, cause_for: CauseFor | None = None,
                     reading_for: ReadingFor | None = None, margin_for: MarginFor | None = None) -> Table:
    """``table`` with an "ours − paper" column after each comparison with the paper that
    has none (rates in percent only), and a verdict for every compared row
    (:func:`equivalence` with the margin ``margin_for`` gives, default
    :data:`lkm.reproduction.paper.DEFAULT_MARGIN`): a row that differs gets what the
    readings give (``reading_for``, :class:`ReadingsTried`); a row that differs or is
    untested names the cause ``cause_for`` gives (the paper's differences.yaml) or
    :data:`NO_CAUSE`. An "ours, tuned" column gets its difference but no verdict (the
    row is judged at the paper's setting). ``link`` is the anchor of the paper's "where we
    differ" text."""
    pairs = _pairs(table)
    if not pairs:
        return table
    intervals = {name: ic for name, _, _, _, ic in row_comparisons(table)}
    metric = table.columns.index("metric") if "metric" in table.columns else None
    has_diff = "ours − paper" in table.columns
    columns, rows = list(table.columns), [list(r) for r in table.rows]
    found: list[list[Comparison]] = [[] for _ in rows]
    inserts: list[tuple[int, str, list[str]]] = []
    for stem, io, ip, name, label in pairs:
        if stem and not _is_rate(stem):
            continue
        diffs = []
        for r, row in enumerate(rows):
            quantity = stem or (row[metric].strip().lower() if metric is not None else "")
            ours, paper = _ours_paper(row, io, ip)
            if (not stem and quantity not in RATE_METRICS) or ours is None or paper is None:
                diffs.append(DASH)
                continue
            d = ours - paper
            diffs.append(f"{d:+.2f}")
            if _TUNED_COLUMN.search(label or name):
                continue
            ic = intervals.get(name)
            interval = _interval(row[ic]) if ic is not None else None
            cells = dict(zip(table.columns, table.rows[r], strict=True))
            margin = margin_for(quantity, cells) if margin_for else DEFAULT_MARGIN
            verdict = equivalence(paper, interval, margin)
            if verdict in (REPRODUCED, CONSISTENT):
                found[r].append(Comparison(label or quantity, d, paper, interval, margin, verdict))
                continue
            readings = None
            if verdict == DIFFERS:
                tried = reading_for(table.name, name, quantity, cells, ours, interval) if reading_for else None
                readings = ReadingsTried(tried, paper, margin) if tried else None
                verdict = readings.outcome[0] if readings else NO_READING
            difference = cause_for(quantity, cells) if cause_for else None
            found[r].append(Comparison(label or quantity, d, paper, interval, margin, verdict,
                                       difference.cause if difference else NO_CAUSE, readings, difference,
                                       (cells.get("dataset", ""), cells.get("method", ""))))
        if any(x != DASH for x in diffs) and not (has_diff and len(pairs) == 1):
            inserts.append((max(io, ip) + 1, name, diffs))
    for pos, name, diffs in sorted(inserts, key=lambda t: -t[0]):
        columns.insert(pos, name)
        for row, cell in zip(rows, diffs, strict=True):
            row.insert(pos, cell)
    if not any(found) and not inserts:
        return table
    causes = list(dict.fromkeys(c.cause for parts in found for c in parts if c.cause and c.cause != NO_CAUSE))
    out = Table(table.name, table.caption, columns, rows, table.notes,
                [_row_text(parts, causes) for parts in found] if any(found) else [], link, files=table.files,
                causes=causes, source=table.source)
    out.details = found if any(found) else []
    out.verdicts = [row_verdict(parts) if parts else "" for parts in found] if any(found) else []
    inserted = {name for _, name, _ in inserts}
    compared = []
    for stem, io, ip, name, _ in pairs:
        if not stem or _is_rate(stem):
            ours_column = table.columns[io]
            difference_column = name if name in inserted else "ours − paper" if has_diff else ""
            compared += [table.columns[ip], ours_column, ci_column(ours_column), difference_column]
    ids = [c for c in table.columns if c in KEY_COLUMNS]
    out.lead = [c for c in dict.fromkeys(ids + compared) if c in columns]
    return out


def row_parts(parts: list[Comparison], causes: list[str]) -> list[tuple[str, int]]:
    """A row's verdict as ``(text, cause number)`` clauses, one per cause its comparisons
    share: "testing % differs: -4.28 points, paper outside our 95% CI [..] — <readings>"
    and the number of its cause in ``causes`` (from 1; 0 for none, and for
    :data:`NO_CAUSE`, said in the text: shorter than a marker)."""
    by_cause: dict[str, list[str]] = {}
    for c in parts:
        by_cause.setdefault(c.cause, []).append(c.text())
    return [("; ".join(heads) + (f": {cause}" if cause == NO_CAUSE else ""), causes.index(cause) + 1 if cause in causes else 0)
            for cause, heads in by_cause.items()]


def _row_text(parts: list[Comparison], causes: list[str]) -> str:
    """A row's verdict as one line, each numbered cause a marker ``[n]``; "" for a row
    compared with nothing."""
    return "; ".join(f"{text} [{n}]" if n else text for text, n in row_parts(parts, causes))


def cause_finder(run: str, differences: list[Difference]) -> CauseFor:
    """The first of a paper's ``differences`` that matches a row of ``run`` that differs."""
    def cause_for(quantity: str, row: dict[str, str]) -> Difference | None:
        return next((d for d in differences if d.matches(run, quantity, row)), None)
    return cause_for


def contradictions(comparisons: list[Comparison]) -> list[str]:
    """The causes among ``comparisons`` (one run's) that their own experiment contradicts:
    for each differences.yaml entry with ``evidence`` and each row (dataset, method) it
    names a cause for, the readings of the evidence's choice, over every comparison of that
    row, must reach the paper's number (*reproduced* or *consistent* under one, whatever
    its provenance) — or not — as the entry says; an evidence no reading of which was run
    is reported too."""
    groups: dict[tuple[int, tuple[str, ...]], list[Comparison]] = {}
    for c in comparisons:
        if c.difference is not None and c.difference.evidence:
            groups.setdefault((id(c.difference), c.row), []).append(c)
    out = []
    for (_, row), group in groups.items():
        difference = group[0].difference
        assert difference is not None  # grouped by it above
        for evidence in difference.evidence:
            prefix = f"{evidence.choice}: "
            verdicts = []
            for c in group:
                tried = [t for t in (c.readings.tried if c.readings else ())
                         if t.name.startswith(prefix) and (evidence.reading is None or t.name == prefix + evidence.reading)]
                if tried:
                    verdicts.append((c, tried))
            where = " ".join(x for x in row if x)
            if not verdicts:
                out.append(f"{where}: the cause names {evidence.describe()}, but no such reading was run")
                continue
            reached = any(equivalence(c.paper, t.interval, c.margin) in (REPRODUCED, CONSISTENT)
                          for c, tried in verdicts for t in tried)
            if reached != evidence.reached:
                shown = "; ".join(f"{c.label}: {', '.join(t.shown() for t in tried)} (paper {c.paper:g})"
                                  for c, tried in verdicts)
                out.append(f"{where}: the cause says {evidence.describe()}, but they give {shown}")
    return out


def reading_finder(run: str, choices: list[Choice], tables: dict[str, dict[str, Table]]) -> ReadingFor:
    """What the readings of ``choices`` concerning a row of ``run`` that differs give: each
    reading's number for the same row (the variant run's table of the same name, or the
    row its ``method`` names; else that row of the run's ``summary`` table), with the
    row itself as the stated reading."""
    def lookup(reading: Reading, table: str, pair: str, quantity: str, row: dict[str, str]) -> tuple[float, Interval | None] | None:
        folder = tables.get(reading.run_for(run), {})
        key = {c: row[c] for c in KEY_COLUMNS if c in row}
        if "method" in key:
            key["method"] = reading.method_for(key["method"])
        if table in folder:
            found = row_value(folder[table], pair, key)
            if found is not None:
                return found
        summary = folder.get("summary")
        if summary is None or "dataset" not in row or "method" not in key:
            return None
        found = _summary_value(summary, row["dataset"], key["method"])
        if found is None or "error" not in f"{pair} {quantity}".lower():
            return found
        value, ci = found
        return 100.0 - value, (100.0 - ci[1], 100.0 - ci[0]) if ci else None

    def reading_for(table: str, pair: str, quantity: str, row: dict[str, str], ours: float,
                    interval: Interval | None) -> tuple[ReadingResult, ...] | None:
        matching = [c for c in choices if c.matches(run, quantity, row)]
        if not matching:
            return None
        tried = [ReadingResult("stated", ours, interval)]
        for choice in matching:
            for reading in choice.readings:
                if reading.stated:
                    continue
                found = lookup(reading, table, pair, quantity, row)
                if found is not None:
                    tried.append(ReadingResult(f"{choice.key}: {reading.name}", found[0], found[1], reading))
        return tuple(tried) if len(tried) > 1 else None

    return reading_for


def _summary_value(summary: Table, dataset: str, method: str) -> tuple[float, Interval | None] | None:
    """Accuracy % and its interval of (dataset, method) in a run's ``summary`` table."""
    if "accuracy % (ours)" not in summary.columns:
        return None
    io = summary.columns.index("accuracy % (ours)")
    ci = ci_column("accuracy % (ours)")
    ic = summary.columns.index(ci) if ci in summary.columns else None
    for row in summary.rows:
        cells = dict(zip(summary.columns, row, strict=True))
        if cells.get("dataset") == dataset and cells.get("method") == method:
            value = _number(row[io])
            return None if value is None else (value, _interval(row[ic]) if ic is not None else None)
    return None
