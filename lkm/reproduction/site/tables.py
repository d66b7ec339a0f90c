"""The tables of the report: a run folder's ``tables/X.md`` (with its ``X.csv`` twin) read
as a :class:`Table`, and the rows that differ from the paper flagged with their named cause
(:func:`with_differences`, :func:`cause_finder`, :data:`NO_CAUSE`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lkm.reproduction.paper import Difference

#: Rows whose ours − paper exceeds this many points (percent) are flagged.
DIFF_POINTS = 2.0
#: ``metric`` values of a ``paper``/``ours`` table that are rates in percent.
RATE_METRICS = frozenset({"accuracy", "error", "balanced_accuracy", "f1_macro", "macro_f1"})
DASH = "–"


# -- reading a run folder's tables -----------------------------------------------------
@dataclass
class Table:
    """One table of the report: cells as text, a caption, notes below it; ``flags`` per
    row (empty or the "differs" text), ``link`` where a flag points (an anchor)."""

    name: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    link: str | None = None

    @property
    def numeric(self) -> list[bool]:
        out = []
        for j in range(len(self.columns)):
            values = [r[j] for r in self.rows if r[j] not in ("", DASH, "nan", "NA")]
            out.append(bool(values) and all(_NUMBER.fullmatch(v.strip()) for v in values))
        return out


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


def md_parts(md: str) -> tuple[str, list[str], list[str]]:
    """(caption, table lines, notes) of a tables/*.md file: the first bold line, the pipe
    table, the paragraphs after it."""
    caption, table, notes, para = "", [], [], []
    state = "head"
    for line in md.splitlines():
        s = line.strip()
        if state == "head":
            if s.startswith("**") and s.endswith("**") and len(s) > 4 and not caption:
                caption = s[2:-2]
            elif s.startswith("|"):
                state = "table"
                table.append(s)
            continue
        if state == "table" and s.startswith("|"):
            table.append(s)
            continue
        state = "notes"
        if s:
            para.append(s)
        elif para:
            notes.append(" ".join(para))
            para = []
    if para:
        notes.append(" ".join(para))
    return caption, table, notes


def _split_row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|")) if line.strip() != "|" else []
    return [c.strip().replace("\\|", "|") for c in cells]


def parse_md_table(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a pipe table (the alignment line dropped)."""
    if not lines:
        return [], []
    header = _split_row(lines[0])
    rows = [_split_row(x) for x in lines[1:] if not re.fullmatch(r"\|?[\s:|-]+\|?", x)]
    rows = [(r + [""] * len(header))[: len(header)] for r in rows]
    return header, rows


def read_table(md_path: Path) -> Table:
    """A tables/X.md with its X.csv twin (cells from the CSV, caption and notes from the
    Markdown); the Markdown table itself when the CSV is missing or unreadable."""
    import pandas as pd

    md = md_path.read_text(encoding="utf-8") if md_path.is_file() else ""
    caption, lines, notes = md_parts(md)
    csv = md_path.with_suffix(".csv")
    columns: list[str] = []
    rows: list[list[str]] = []
    if csv.is_file():
        try:
            df = pd.read_csv(csv, dtype=str, keep_default_na=False)
            columns = [str(c) for c in df.columns]
            rows = [[str(v) for v in row] for row in df.itertuples(index=False, name=None)]
        except (ValueError, OSError, pd.errors.ParserError):
            columns = []
    if not columns:
        columns, rows = parse_md_table(lines)
    return Table(md_path.stem, caption or md_path.stem, columns, rows, notes)


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
    columns = table.columns
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


#: ``(quantity, the row's cells by column) -> cause`` of a flagged row (None: none named).
CauseFor = Callable[[str, dict[str, str]], str | None]
#: A flagged row's text when no cause matches it.
NO_CAUSE = "no cause named yet"


def with_differences(table: Table, link: str | None = None, cause_for: CauseFor | None = None) -> Table:
    """``table`` with an "ours − paper" column after each comparison with the paper that
    has none (rates in percent only), and a flag for rows differing by more than
    :data:`DIFF_POINTS` points naming the cause ``cause_for`` gives (the paper's
    differences.yaml), or :data:`NO_CAUSE`; ``link`` is the anchor of the paper's "where
    we differ" text."""
    pairs = _pairs(table)
    if not pairs:
        return table
    metric = table.columns.index("metric") if "metric" in table.columns else None
    has_diff = "ours − paper" in table.columns
    columns, rows = list(table.columns), [list(r) for r in table.rows]
    found: list[list[tuple[str, float, str]]] = [[] for _ in rows]
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
            if abs(d) > DIFF_POINTS:
                cause = cause_for(quantity, dict(zip(table.columns, table.rows[r], strict=True))) if cause_for else None
                found[r].append((label or quantity, d, cause or NO_CAUSE))
        if any(x != DASH for x in diffs) and not (has_diff and len(pairs) == 1):
            inserts.append((max(io, ip) + 1, name, diffs))
    for pos, name, diffs in sorted(inserts, key=lambda t: -t[0]):
        columns.insert(pos, name)
        for row, d in zip(rows, diffs, strict=True):
            row.insert(pos, d)
    if not any(found) and not inserts:
        return table
    flags = [_flag_text(parts) for parts in found]
    return Table(table.name, table.caption, columns, rows, table.notes, flags if any(flags) else [], link)


def _flag_text(parts: list[tuple[str, float, str]]) -> str:
    """"testing % -4.28, training % -26.45 points: <cause>; …", one clause per cause."""
    by_cause: dict[str, list[str]] = {}
    for stem, d, cause in parts:
        by_cause.setdefault(cause, []).append(f"{stem} {d:+.2f}".strip())
    return "; ".join(f"{', '.join(ds)} points: {cause}" for cause, ds in by_cause.items())


def cause_finder(run: str, differences: list[Difference]) -> CauseFor:
    """The first of a paper's ``differences`` that matches a flagged row of ``run``."""
    def cause_for(quantity: str, row: dict[str, str]) -> str | None:
        return next((d.cause for d in differences if d.matches(run, quantity, row)), None)
    return cause_for
