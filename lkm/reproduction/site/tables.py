"""The tables of the report: a run folder's ``tables/X.json`` read as a :class:`Table`
(:func:`read_table`), and the rows that differ from the paper flagged with their named cause
(:func:`with_differences`, :func:`cause_finder`, :data:`NO_CAUSE`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lkm.report.core import ci_column
from lkm.reproduction.paper import Difference
from lkm.reproduction.readings import Choice, Reading

#: Rows whose ours − paper exceeds this many points (percent) are flagged.
DIFF_POINTS = 2.0
#: ``metric`` values of a ``paper``/``ours`` table that are rates in percent.
RATE_METRICS = frozenset({"accuracy", "error", "balanced_accuracy", "f1_macro", "macro_f1"})
DASH = "–"


# -- reading a run folder's tables -----------------------------------------------------
@dataclass
class Table:
    """One table of the report: cells as text, a caption, notes below it; ``flags`` per
    row (empty or the "differs" text), ``link`` where a flag points (an anchor); ``lead``
    the columns a reader compares first (the row's identity, ours beside the paper's
    number and their difference), ``files`` the table as CSV, LaTeX and Markdown
    ``(suffix, source, path in the report)``."""

    name: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    link: str | None = None
    details: list[list[Flag]] = field(default_factory=list)
    margin_only: int = 0  # rows beyond DIFF_POINTS whose interval holds the paper's number (not flagged)
    lead: list[str] = field(default_factory=list)
    files: list[tuple[str, Path, str]] = field(default_factory=list)

    numeric_memo: tuple[tuple[int, int], list[bool]] | None = field(default=None, repr=False, compare=False)

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
    cells as every rendering shows them, :func:`lkm.report.core.table_json`); ``files``:
    the table's other renderings the report links. An unreadable file: an empty table
    whose note says so."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        columns = [str(c) for c in data["columns"]]
        rows = [[str(v) for v in row][: len(columns)] + [""] * (len(columns) - len(row)) for row in data["rows"]]
        caption, notes = str(data.get("caption") or path.stem), [str(n) for n in data.get("notes") or []]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Table(path.stem, path.stem, [], [], [f"{path.name} could not be read ({exc})"], files=files or [])
    return Table(path.stem, caption, columns, rows, notes, files=files or [])


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
        for i, o in enumerate(columns if m else ()):
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


#: ``(quantity, the row's cells by column) -> the differences.yaml entry naming the cause`` of a flagged row (None: none).
CauseFor = Callable[[str, dict[str, str]], Difference | None]
#: The heading of the column that says why a row is flagged.
FLAG_COLUMN = "outside our 95% interval: readings and why"
#: A flagged row's text when no cause matches it.
NO_CAUSE = "no cause named yet"
#: The interval a paper's number is compared with, ``(low, high)`` in the table's units.
Interval = tuple[float, float]


@dataclass(frozen=True)
class Flag:
    """One comparison of a row with the paper that is flagged: the paper's number lies
    outside our 95 % interval (:func:`lkm.numerics.stats.rate_interval`), or — for a
    column without an interval — differs by more than :data:`DIFF_POINTS` points."""

    label: str
    diff: float
    paper: float
    interval: Interval | None
    cause: str
    reading: ReadingVerdict | None = None
    difference: Difference | None = None  # the differences.yaml entry that names the cause
    row: tuple[str, ...] = ()  # the row's dataset and method (what a cause's evidence is checked per)

    @property
    def beyond_margin(self) -> bool:
        return abs(self.diff) > DIFF_POINTS

    def text(self) -> str:
        where = (f"paper outside our 95% CI [{self.interval[0]:.2f}, {self.interval[1]:.2f}]"
                 if self.interval else f"beyond ±{DIFF_POINTS:g} points (no interval)")
        return f"{self.label} {self.diff:+.2f} points, {where}".strip()


@dataclass(frozen=True)
class ReadingVerdict:
    """What the readings of the choices that concern a flagged row give: every reading
    tried with its number (and interval), the one that reproduces the paper (its number
    inside that reading's interval) or none."""

    tried: tuple[tuple[str, float, Interval | None], ...]
    paper: float

    @property
    def inside(self) -> list[tuple[str, float, Interval | None]]:
        """The readings whose interval holds the paper's number, closest first."""
        hits = [t for t in self.tried if t[2] is not None and t[2][0] <= self.paper <= t[2][1]]
        return sorted(hits, key=lambda t: abs(t[1] - self.paper))

    @property
    def reproduced(self) -> tuple[str, float, Interval | None] | None:
        return self.inside[0] if self.inside else None

    @property
    def closest(self) -> tuple[str, float, Interval | None]:
        return min(self.tried, key=lambda t: abs(t[1] - self.paper))

    def text(self) -> str:
        if self.inside:
            return "reproduced under " + "; ".join(f"reading ‘{t[0]}’ ({_with_interval(t)})" for t in self.inside)
        listed = "; ".join(f"‘{name}’ {_with_interval((name, v, ci))}" for name, v, ci in self.tried)
        return (f"not reached under the {len(self.tried)} readings tried ({listed}); "
                f"closest ‘{self.closest[0]}’")


def _with_interval(t: tuple[str, float, Interval | None]) -> str:
    return f"{t[1]:.2f}" + (f" [{t[2][0]:.2f}, {t[2][1]:.2f}]" if t[2] else "")


#: ``(table, pair, row cells, paper, ours, interval) -> verdict`` of the readings that
#: concern a flagged row (None: no choice concerns it).
ReadingFor = Callable[[str, str, str, dict[str, str], float, float, "Interval | None"], "ReadingVerdict | None"]

_INTERVAL_CELL = re.compile(r"\s*\[\s*([+\-−]?[\d.]+)\s*,\s*([+\-−]?[\d.]+)\s*\]\s*")


def _interval(cell: str) -> Interval | None:
    m = _INTERVAL_CELL.fullmatch(cell or "")
    if not m:
        return None
    low, high = (float(g.replace("−", "-")) for g in m.groups())
    return (low, high) if low <= high else None


def is_flagged(ours: float, paper: float, interval: Interval | None) -> bool:
    """The report's flag rule: the paper's number outside our 95 % interval; where a
    table gives no interval, a difference of more than :data:`DIFF_POINTS` points."""
    if interval is not None:
        return not interval[0] <= paper <= interval[1]
    return abs(ours - paper) > DIFF_POINTS


def row_comparisons(table: Table) -> list[tuple[str, str, int, int, int | None]]:
    """``(pair name, quantity stem, ours index, paper index, interval index)`` of each rate
    comparison with the paper (:func:`_pairs`), the interval column found by
    :func:`lkm.report.core.ci_column`."""
    index = {c: i for i, c in enumerate(table.columns)}
    return [(name, stem, io, ip, index.get(ci_column(table.columns[io])))
            for stem, io, ip, name, _ in _pairs(table)]


#: The columns that identify a row across the run folders of one paper's readings.
KEY_COLUMNS = ("dataset", "method", "the paper's row", "paper row", "metric", "setting")


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


def with_differences(table: Table, link: str | None = None, cause_for: CauseFor | None = None,
                     reading_for: ReadingFor | None = None) -> Table:
    """``table`` with an "ours − paper" column after each comparison with the paper that
    has none (rates in percent only), and a flag (:func:`is_flagged`) for rows whose
    paper's number lies outside our interval, naming the cause ``cause_for`` gives (the
    paper's differences.yaml) or :data:`NO_CAUSE`, and what the readings give
    (``reading_for``); ``link`` is the anchor of the paper's "where we differ" text."""
    pairs = _pairs(table)
    if not pairs:
        return table
    intervals = {name: ic for name, _, _, _, ic in row_comparisons(table)}
    metric = table.columns.index("metric") if "metric" in table.columns else None
    has_diff = "ours − paper" in table.columns
    columns, rows = list(table.columns), [list(r) for r in table.rows]
    found: list[list[Flag]] = [[] for _ in rows]
    beyond = [False] * len(rows)
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
            ic = intervals.get(name)
            interval = _interval(row[ic]) if ic is not None else None
            beyond[r] = beyond[r] or abs(d) > DIFF_POINTS
            if is_flagged(ours, paper, interval):
                cells = dict(zip(table.columns, table.rows[r], strict=True))
                difference = cause_for(quantity, cells) if cause_for else None
                reading = reading_for(table.name, name, quantity, cells, paper, ours, interval) if reading_for else None
                found[r].append(Flag(label or quantity, d, paper, interval, difference.cause if difference else NO_CAUSE,
                                     reading, difference, (cells.get("dataset", ""), cells.get("method", ""))))
        if any(x != DASH for x in diffs) and not (has_diff and len(pairs) == 1):
            inserts.append((max(io, ip) + 1, name, diffs))
    for pos, name, diffs in sorted(inserts, key=lambda t: -t[0]):
        columns.insert(pos, name)
        for row, d in zip(rows, diffs, strict=True):
            row.insert(pos, d)
    if not any(found) and not inserts:
        return table
    flags = [_flag_text(parts) for parts in found]
    out = Table(table.name, table.caption, columns, rows, table.notes, flags if any(flags) else [], link,
                files=table.files)
    out.details = found if any(flags) else []
    out.margin_only = sum(b and not f for b, f in zip(beyond, found, strict=True))
    inserted = {name for _, name, _ in inserts}
    compared = []
    for stem, io, ip, name, _ in pairs:
        if not stem or _is_rate(stem):
            ours = table.columns[io]
            difference = name if name in inserted else "ours − paper" if has_diff else ""
            compared += [table.columns[ip], ours, ci_column(ours), difference]
    ids = [c for c in table.columns if c in KEY_COLUMNS]
    out.lead = [c for c in dict.fromkeys(ids + compared) if c in columns]
    return out


def _flag_text(parts: list[Flag]) -> str:
    """"testing % -4.28 points, paper outside our 95% CI [..]: <readings>; <cause>", one clause per cause."""
    by_cause: dict[str, list[str]] = {}
    for f in parts:
        head = f.text() + (f" — {f.reading.text()}" if f.reading else "")
        by_cause.setdefault(f.cause, []).append(head)
    return "; ".join(f"{'; '.join(heads)}: {cause}" for cause, heads in by_cause.items())


#: A flagged row's verdicts (:func:`row_status`), in the order the report counts them.
FLAG_STATUSES = ("reproduced", "not reached", "no reading tried")


def row_status(parts: list[Flag]) -> str:
    """A flagged row's verdict: ``reproduced`` (every flagged comparison reached under a
    reading), ``not reached`` (a comparison that readings were tried on and none reached),
    or ``no reading tried``."""
    if parts and all(f.reading is not None and f.reading.reproduced for f in parts):
        return "reproduced"
    if any(f.reading is not None and not f.reading.reproduced for f in parts):
        return "not reached"
    return "no reading tried"


def cause_finder(run: str, differences: list[Difference]) -> CauseFor:
    """The first of a paper's ``differences`` that matches a flagged row of ``run``."""
    def cause_for(quantity: str, row: dict[str, str]) -> Difference | None:
        return next((d for d in differences if d.matches(run, quantity, row)), None)
    return cause_for


def contradictions(flags: list[Flag]) -> list[str]:
    """The causes among ``flags`` (one run's flagged comparisons) that their own experiment
    contradicts: for each differences.yaml entry with ``evidence`` and each row (dataset,
    method) it names a cause for, the readings of the evidence's choice, over every flagged
    comparison of that row, must reproduce the paper's number — or not — as the entry says;
    an evidence no reading of which was run is reported too."""
    groups: dict[tuple[int, tuple[str, ...]], list[Flag]] = {}
    for f in flags:
        if f.difference is not None and f.difference.evidence:
            groups.setdefault((id(f.difference), f.row), []).append(f)
    out = []
    for (_, row), group in groups.items():
        for evidence in group[0].difference.evidence:
            prefix = f"{evidence.choice}: "
            verdicts = []
            for f in group:
                tried = tuple(t for t in (f.reading.tried if f.reading else ())
                              if t[0].startswith(prefix) and (evidence.reading is None or t[0] == prefix + evidence.reading))
                if tried:
                    verdicts.append((f, ReadingVerdict(tried, f.paper)))
            where = " ".join(x for x in row if x)
            if not verdicts:
                out.append(f"{where}: the cause names {evidence.describe()}, but no such reading was run")
                continue
            reached = any(v.reproduced is not None for _, v in verdicts)
            if reached != evidence.reproduced:
                shown = "; ".join(f"{f.label}: {', '.join(_with_interval(t) for t in v.tried)} (paper {f.paper:g})"
                                  for f, v in verdicts)
                out.append(f"{where}: the cause says {evidence.describe()}, but they give {shown}")
    return out


def reading_finder(run: str, choices: list[Choice], tables: dict[str, dict[str, Table]]) -> ReadingFor:
    """What the readings of ``choices`` concerning a flagged row of ``run`` give: each
    reading's number for the same row (the variant run's table of the same name, or the
    row its ``method`` names; else that row of the run's ``summary`` table), with the
    flagged row itself as the stated reading."""
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

    def reading_for(table: str, pair: str, quantity: str, row: dict[str, str], paper: float, ours: float,
                    interval: Interval | None) -> ReadingVerdict | None:
        matching = [c for c in choices if c.matches(run, quantity, row)]
        if not matching:
            return None
        tried: list[tuple[str, float, Interval | None]] = [("stated", ours, interval)]
        for choice in matching:
            for reading in choice.readings:
                if reading.stated:
                    continue
                found = lookup(reading, table, pair, quantity, row)
                if found is not None:
                    tried.append((f"{choice.key}: {reading.name}", found[0], found[1]))
        return ReadingVerdict(tuple(tried), paper) if len(tried) > 1 else None

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
