"""The report of every reproduction in one folder: ``results/report/index.html`` (static:
no server, no network, no JavaScript; figures copied beside it, a small inline stylesheet)
and the same content as ``report.md`` — what `lkm reproduce all` ends with and
`lkm report --all` rebuilds from the recorded runs (no fitting).

It reads only files the runs wrote:

- each paper's claims table ``RESULTS/<key>_claims[-smoke]/claims.csv`` (the first
  screen: every claim of every paper with its verdict, effect, CI and test, coloured by
  verdict class) and the other tables of that folder;
- each experiment's run folder ``RESULTS/<spec name>[-smoke]/``: ``tables/*.csv`` (caption
  from the first bold line of the ``.md`` twin, notes from what follows the table),
  ``figures/**/*.png`` (copied to ``figures/<run>/``), ``provenance.json`` (settings, data
  versions, seconds, environment) and ``plan.json`` (datasets that could not be had);
- the cross-paper ranking ``RESULTS/cross_paper_summary[-smoke]/`` when present;
- the "where we differ" section of ``docs/reproductions/<key>.md`` when the source tree
  is at hand (copied into the report as text, links dropped: every link of the report
  stays inside its folder).

Where a table has the paper's number beside ours for a rate in percent (``X (ours)`` and
``X (paper)``; ``paper's X`` and ``ours, …: X``; ``ours`` and ``paper`` with an
accuracy/error ``metric``; or "ours (paper)" cells), the report adds the difference and
flags rows differing by more than :data:`DIFF_POINTS` points with their named cause (the
first entry of the paper's ``differences.yaml`` that matches the row,
:class:`lkm.papers.common.Difference`) and a link to the paper's "where we differ"
section.

The HTML parses with no error under the HTML5 algorithm (html5lib in strict mode) and is
well-formed XML (polyglot HTML5); the tests check both.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from lkm.papers.common import EFFECT_COLUMNS, Difference, paper_differences
from lkm.papers.common import SMOKE_LABEL as SMOKE_PREFIX
from lkm.report.core import markdown_table
from lkm.report.cross import CROSS_SPEC
from lkm.report.cross import SUMMARY_NAME as CROSS_SUMMARY

#: The source tree (configs/ and docs/ live here in a checkout).
REPO = Path(__file__).resolve().parents[2]
#: The cross-paper spec and the folder its ranking is written to (lkm.report.cross).
#: A claims table's effect columns (lkm.papers.common adds them); "–" where absent.
#: Rows whose ours − paper exceeds this many points (percent) are flagged.
DIFF_POINTS = 2.0
#: ``metric`` values of a ``paper``/``ours`` table that are rates in percent.
RATE_METRICS = frozenset({"accuracy", "error", "balanced_accuracy", "f1_macro", "macro_f1"})
#: Tables with more rows than this are folded (``<details>``, no JavaScript needed).
FOLD_ROWS = 30
#: Tables shown folded whatever their length (secondary to the paper's numbers).
FOLDED = frozenset({"timing", "sweep", "knn_invariance_rows", "scaling_sizes"})
#: Verdict classes, in the order the summary counts them.
VERDICT_CLASSES = ("holds", "partly", "does not hold", "fragile", "not shown", "n/a")
DASH = "–"


# -- verdicts --------------------------------------------------------------------------
def verdict_class(cell: str) -> tuple[str, bool]:
    """``(class, smoke)`` of a claims table's verdict cell: one of :data:`VERDICT_CLASSES`
    (``fragile`` for a verdict that changed under the perturbation), and whether the cell
    is a smoke run's (``smoke: not evidence (<verdict>)``)."""
    text = (cell or "").strip()
    smoke = text.startswith(SMOKE_PREFIX)
    if smoke:
        text = text[len(SMOKE_PREFIX):].strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
    low = text.lower()
    if low.startswith("same (") and low.endswith(")"):  # the perturbed column: "same (<verdict>)"
        return verdict_class(text[len("same ("):-1])[0], smoke
    if low.startswith("fragile"):
        return "fragile", smoke
    for name in ("does not hold", "not shown", "partly", "holds"):
        if low.startswith(name):
            return name, smoke
    return "n/a", smoke


def _css_class(name: str) -> str:
    return "v-" + name.replace(" ", "-").replace("/", "")


# -- tables ----------------------------------------------------------------------------
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


def _md_parts(md: str) -> tuple[str, list[str], list[str]]:
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


def _md_table(lines: list[str]) -> tuple[list[str], list[list[str]]]:
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
    caption, lines, notes = _md_parts(md)
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
        columns, rows = _md_table(lines)
    return Table(md_path.stem, caption or md_path.stem, columns, rows, notes)


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


# -- the model of the report -----------------------------------------------------------
@dataclass
class Claim:
    paper: str
    number: str
    text: str
    verdict: str
    vclass: str
    smoke: bool
    cells: dict[str, str]

    @property
    def anchor(self) -> str:
        return f"{self.paper}-claim-{_slug(self.number)}"


@dataclass
class RunView:
    """One experiment of a paper: its run folder and what it holds."""

    spec_path: str
    name: str
    description: str
    folder: Path
    exists: bool
    make: str
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, Path, str]] = field(default_factory=list)  # (caption, source, path in the report)
    provenance: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    perturbed: dict[str, Any] | None = None  # {"name", "exists", "seconds"} of its fragility rerun

    @property
    def anchor(self) -> str:
        return f"run-{_slug(self.name)}"


@dataclass
class PaperView:
    key: str
    title: str
    claims_caption: str
    claims_columns: list[str]
    claims: list[Claim]
    extra_tables: list[Table]
    runs: list[RunView]
    differ: str | None
    differ_source: str
    missing: list[str]
    seconds: float

    @property
    def anchor(self) -> str:
        return f"paper-{self.key}"

    @property
    def wall_time(self) -> str:
        return duration(self.seconds) if any(r.provenance for r in self.runs) else "none recorded yet"

    @property
    def short(self) -> str:
        return self.title.split(" — ")[0]


@dataclass
class CrossView:
    folder: Path
    exists: bool
    tables: list[Table]
    figures: list[tuple[str, Path, str]]
    friedman: dict[str, Any] | None
    note: str
    run: RunView | None


@dataclass
class Site:
    smoke: bool
    results: Path
    papers: list[PaperView]
    cross: CrossView
    environment: dict[str, Any]
    built_at: str

    @property
    def claims(self) -> list[Claim]:
        return [c for p in self.papers for c in p.claims]

    def counts(self) -> Counter:
        return Counter(c.vclass for c in self.claims)

    def differing_rows(self) -> tuple[int, int]:
        """How many table rows differ from the paper by more than :data:`DIFF_POINTS`
        points, and how many of them name no cause (:data:`NO_CAUSE`)."""
        flags = [f for p in self.papers for run in p.runs for t in run.tables for f in t.flags if f]
        return len(flags), sum(NO_CAUSE in f for f in flags)


def differing_line(site: Site) -> str:
    """"12 table rows differ from the paper by more than 2 points; each names its cause."""
    flagged, unnamed = site.differing_rows()
    tail = f"{unnamed} of them name no cause yet" if unnamed else "each names its cause"
    return f"{flagged} table rows differ from the paper by more than {DIFF_POINTS:g} points; {tail}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _spec_file(path: str) -> Path | None:
    for p in (Path(path), REPO / path):
        if p.is_file():
            return p
    return None


def _load_spec(path: str, smoke: bool):
    from lkm.errors import LkmError
    from lkm.spec import load_spec

    found = _spec_file(path)
    if found is None:
        return None
    try:
        return load_spec(found, smoke=smoke, max_fits=1 << 62)
    except LkmError:
        return None


def _figures(folder: Path, sub: str = "figures") -> list[tuple[str, Path, str]]:
    """``(caption, source, path in the report)`` of every PNG under ``folder/sub``: copied
    to ``figures/<folder name>/``."""
    fig = folder / sub if sub else folder
    if not fig.is_dir():
        return []
    return [(rel.with_suffix("").as_posix(), p, f"figures/{_slug(folder.name)}/{quote(rel.as_posix())}")
            for p in sorted(fig.rglob("*.png")) for rel in [p.relative_to(fig)]]


def _tables(folder: Path, order: Iterable[str] = (), skip: Iterable[str] = ()) -> list[Table]:
    if not folder.is_dir():
        return []
    found = {p.stem: p for p in folder.glob("*.md")}
    names = [n for n in order if n in found] + sorted(n for n in found if n not in set(order))
    return [read_table(found[n]) for n in names if n not in set(skip)]


def _seconds(prov: dict[str, Any]) -> float:
    """Seconds of a run folder's current provenance plus its history."""
    total = 0.0
    for entry in [prov, *(prov.get("history") or [])]:
        s = entry.get("seconds") if isinstance(entry, dict) else None
        if isinstance(s, int | float):
            total += float(s)
    return total


def _run_view(results: Path, spec_path: str, smoke: bool, make: str, perturbed_names: Iterable[str] = ()) -> RunView:
    spec = _load_spec(spec_path, smoke)
    stem = Path(spec_path).stem
    name = spec.name if spec is not None else (f"{stem}-smoke" if smoke else stem)
    folder = results / name
    exists = (folder / "spec.yaml").is_file()
    view = RunView(spec_path, name, (spec.description or "").strip() if spec is not None else "", folder, exists, make)
    if not exists:
        return view
    order = list(spec.outputs.tables) if spec is not None else []
    view.tables = _tables(folder / "tables", order)
    view.figures = _figures(folder)
    view.provenance = _read_json(folder / "provenance.json")
    plan = _read_json(folder / "plan.json")
    view.unavailable = {str(k): str(v) for k, v in (plan.get("unavailable") or {}).items()}
    for ds, info in (view.provenance.get("datasets") or {}).items():
        if isinstance(info, dict) and "unavailable" in info:
            view.unavailable.setdefault(str(ds), str(info["unavailable"]))
    base = name[: -len("-smoke")] if smoke and name.endswith("-smoke") else name
    if base in set(perturbed_names):
        pfolder = results / f"{name}-perturbed"
        pprov = _read_json(pfolder / "provenance.json")
        view.perturbed = {"name": pfolder.name, "exists": (pfolder / "spec.yaml").is_file(),
                          "seconds": _seconds(pprov), "provenance": pprov}
    return view


def _differ_section(key: str) -> tuple[str | None, str]:
    """The "where we differ" section of docs/reproductions/<key>.md (heading dropped)."""
    src = f"docs/reproductions/{key}.md"
    path = REPO / src
    if not path.is_file():
        return None, src
    lines = path.read_text(encoding="utf-8").splitlines()
    start, level = None, 0
    for i, line in enumerate(lines):
        m = re.match(r"(#+)\s+(.*)", line)
        if m and start is None and "where we differ" in m.group(2).lower():
            start, level = i + 1, len(m.group(1))
        elif m and start is not None and len(m.group(1)) <= level:
            return "\n".join(lines[start:i]).strip() or None, src
    return ("\n".join(lines[start:]).strip() or None, src) if start is not None else (None, src)


def _paper_view(results: Path, key: str, module: Any, smoke: bool) -> PaperView:
    import pandas as pd

    claims_mod = getattr(module, "claims", None)
    title = getattr(claims_mod, "TITLE", None) or (module.__doc__ or key).strip().split(":")[0]
    suffix = " --smoke" if smoke else ""
    make = f"lkm reproduce {key}{suffix}"
    differ, differ_src = _differ_section(key)
    anchor = f"{key}-differ" if differ else None
    differences = paper_differences(module.__name__)
    perturbed = list(getattr(module, "PERTURBED", {}) or {})
    runs = [_run_view(results, e.spec, smoke, make, perturbed) for e in module.SPECS]
    for run in runs:
        base = run.name.removesuffix("-smoke") if smoke else run.name
        run.tables = [with_differences(t, anchor, cause_finder(base, differences)) for t in run.tables]
    folder = results / (f"{key}_claims-smoke" if smoke else f"{key}_claims")
    csv = folder / "claims.csv"
    claims: list[Claim] = []
    columns: list[str] = []
    caption = ""
    missing: list[str] = []
    if csv.is_file():
        df = pd.read_csv(csv, dtype=str, keep_default_na=False)
        columns = [str(c) for c in df.columns]
        caption = _md_parts((folder / "claims.md").read_text(encoding="utf-8"))[0] if (folder / "claims.md").is_file() else ""
        claim_col = "the paper's claim" if "the paper's claim" in columns else columns[1]
        for row in df.to_dict("records"):
            cells = {c: str(row.get(c, "")) for c in columns}
            v = cells.get("verdict", "")
            vclass, is_smoke = verdict_class(v)
            claims.append(Claim(key, cells.get("#", ""), cells.get(claim_col, ""), v, vclass, is_smoke or smoke, cells))
    else:
        missing.append(f"claims table {folder.name}/claims.csv not written yet: `{make}`")
    extra = _tables(folder, skip=["claims"])
    for run in runs:
        if not run.exists:
            spec_cmd = f"lkm run {run.spec_path}{suffix}"
            missing.append(f"run folder {run.name}/ does not exist yet: `{make}` (or `{spec_cmd}` for this experiment alone)")
            continue
        for ds, msg in run.unavailable.items():
            missing.append(f"{run.name}: dataset {ds} unavailable — {msg}")
        tasks = run.provenance.get("tasks") or {}
        if isinstance(tasks, dict) and tasks.get("failed"):
            missing.append(f"{run.name}: {tasks['failed']} fit(s) failed (see its records)")
        if not run.provenance:
            missing.append(f"{run.name}: no provenance.json (the run did not finish): `{make}`")
        if run.perturbed is not None and not run.perturbed["exists"]:
            missing.append(f"fragility rerun {run.perturbed['name']}/ not run yet: `{make}`")
    seconds = sum(_seconds(r.provenance) + (r.perturbed["seconds"] if r.perturbed else 0.0) for r in runs)
    return PaperView(key, title, caption, columns, claims, extra, runs, differ, differ_src, missing, seconds)


def _cross_view(results: Path, smoke: bool) -> CrossView:
    folder = results / (f"{CROSS_SUMMARY}-smoke" if smoke else CROSS_SUMMARY)
    suffix = " --smoke" if smoke else ""
    run = _run_view(results, CROSS_SPEC, smoke, f"lkm run {CROSS_SPEC}{suffix}") if _spec_file(CROSS_SPEC) else None
    if run is not None:
        run.tables, run.figures = [], []  # the ranking below is what the report shows of it
    if not folder.is_dir():
        if run is not None and run.exists:
            note = f"the ranking is not written yet: `lkm reproduce all{suffix}` writes it from the recorded run"
        else:
            note = f"not run yet: `lkm run {CROSS_SPEC}{suffix}` (or `lkm reproduce all{suffix}`)"
        return CrossView(folder, False, [], [], None, note, run)
    tables = _tables(folder, order=["ranking"])
    figures = _figures(folder, sub="")
    figures.sort(key=lambda f: (f[1].stem != "critical_difference", f[0]))
    friedman = _read_json(folder / "friedman.json") or None
    return CrossView(folder, True, tables, figures, friedman, "", run)


def _environment(site_papers: list[PaperView], cross: CrossView) -> dict[str, Any]:
    """The machines and versions the runs recorded, and the source tree now."""
    from lkm.store import git_state

    provs = [(r.name, r.provenance) for p in site_papers for r in p.runs if r.provenance]
    if cross.run is not None and cross.run.provenance:
        provs.append((cross.run.name, cross.run.provenance))
    latest = max((p for _, p in provs), key=lambda p: str(p.get("written_at", "")), default={})

    def distinct(get) -> list[tuple[str, int]]:
        c = Counter(v for _, p in provs if (v := get(p)) not in (None, ""))
        return c.most_common()

    packages: dict[str, Counter] = {}
    for _, p in provs:
        for name, version in (p.get("packages") or {}).items():
            packages.setdefault(name, Counter())[str(version)] += 1
    commits = distinct(lambda p: ((p.get("git") or {}).get("commit") or "")[:12]
                       + (" (uncommitted changes)" if (p.get("git") or {}).get("dirty") else ""))
    return {
        "runs": len(provs),
        "python": distinct(lambda p: p.get("python")),
        "platform": distinct(lambda p: p.get("platform")),
        "cpu": distinct(lambda p: ", ".join(str(x) for x in ((p.get("cpu") or {}).get("model"),
                                                               (p.get("cpu") or {}).get("architecture")) if x)
                        + (f", {(p.get('cpu') or {}).get('logical_cpus')} logical CPUs"
                           if (p.get("cpu") or {}).get("logical_cpus") else "")),
        "blas": [lib for lib in ((latest.get("blas") or {}).get("libraries") or []) if isinstance(lib, dict)],
        "worker_threads": (latest.get("blas") or {}).get("worker_threads") or {},
        "packages": {k: v.most_common() for k, v in sorted(packages.items())},
        "commits": commits,
        "lkm_version": distinct(lambda p: p.get("lkm_version")),
        "now": git_state(),
        "seconds": {p.key: p.seconds for p in site_papers if any(r.provenance for r in p.runs)}
                   | ({"cross-paper": _seconds(cross.run.provenance)} if cross.run and cross.run.provenance else {}),
    }


def collect(results: Path, smoke: bool = False) -> Site:
    """Everything the report shows, read from ``results`` (no fitting)."""
    from lkm.papers import PAPERS

    papers = [_paper_view(results, key, module, smoke) for key, module in PAPERS.items()]
    cross = _cross_view(results, smoke)
    return Site(smoke, results, papers, cross, _environment(papers, cross), time.strftime("%Y-%m-%d %H:%M:%S %z"))


# -- shared text -------------------------------------------------------------------------
def duration(seconds: float) -> str:
    """`1 h 05 min`, `12 min 30 s`, `7.2 s`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _counts_line(site: Site) -> list[tuple[str, int]]:
    counts = site.counts()
    return [(name, counts.get(name, 0)) for name in VERDICT_CLASSES if name != "n/a" or counts.get(name)]


TITLE = "Local kernel methods: five papers reproduced"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of an image (Pillow reads the header only); (0, 0) when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.size
    except (OSError, UnidentifiedImageError):
        return 0, 0


def _figures_html(figures: list[tuple[str, Path, str]], label: str) -> str:
    figs = []
    for caption, src, target in figures:
        w, h = png_size(src)
        wide = ' class="wide"' if h and w / h > 2.2 else ""
        figs.append(f'<figure{wide}><a href="{e(target)}"><img src="{e(target)}" alt="{e(label)}{e(caption)}" '
                    f'loading="lazy" /></a><figcaption>{e(caption)}.png</figcaption></figure>')
    return f'<div class="figs">{"".join(figs)}</div>'


def _all_figures(site: Site) -> list[tuple[str, Path, str]]:
    """``(caption, source, path in the report)`` of every figure shown."""
    out = [f for paper in site.papers for run in paper.runs for f in run.figures]
    return out + list(site.cross.figures)


# -- Markdown inline -> HTML (notes, the "where we differ" text) ---------------------------
def _strip_links(text: str) -> str:
    """Markdown links and images as their text only: the report never links outside itself."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)


def inline_html(text: str) -> str:
    """Escaped text with Markdown's ``**bold**`` and ```code``` (links kept as text)."""
    out = []
    for part in re.split(r"(`[^`]+`)", _strip_links(text)):
        if len(part) > 1 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def markdown_blocks_html(text: str) -> str:
    """A small Markdown subset as HTML: paragraphs, bullet and numbered lists (one level),
    pipe tables, fenced code, headings (shown as h4)."""
    lines = _strip_links(text).splitlines()
    out: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []
    ordered = False
    i = 0

    def flush() -> None:
        nonlocal para, items
        if para:
            out.append(f"<p>{inline_html(' '.join(para))}</p>")
            para = []
        if items:
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{inline_html(' '.join(it))}</li>" for it in items) + f"</{tag}>")
            items = []

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            out.append(f"<pre>{html.escape(chr(10).join(lines[i + 1:j]))}</pre>")
            i = j + 1
            continue
        if line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|?[\s:|-]+\|?", lines[i + 1].strip()):
            flush()
            j = i
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            header, rows = _md_table([x.strip() for x in lines[i:j]])
            out.append(_table_html(Table("", "", header, rows)))
            i = j
            continue
        m_head = re.match(r"#+\s+(.*)", s)
        m_item = re.match(r"([-*+]|\d+[.)])\s+(.*)", s)
        if not s:
            if para:
                flush()
        elif m_head:
            flush()
            out.append(f"<h4>{inline_html(m_head.group(1))}</h4>")
        elif m_item:
            if para:
                flush()
            ordered = m_item.group(1)[0].isdigit()
            items.append([m_item.group(2)])
        elif items and (line.startswith(" ") or line.startswith("\t")):
            items[-1].append(s)
        else:
            if items:
                flush()
            para.append(s)
        i += 1
    flush()
    return "\n".join(out)


# -- HTML ----------------------------------------------------------------------------------
def e(text: Any) -> str:
    return html.escape(str(text), quote=True)


CSS = """
:root{--fg:#1d2329;--muted:#5b6670;--line:#d5dbe1;--bg:#fff;--alt:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1240px;margin:0 auto;padding:0 24px 64px}
header.top{background:#20303f;color:#fff;padding:18px 24px}
header.top h1{margin:0 auto;max-width:1192px;font-size:1.5rem}
header.top p{margin:4px auto 0;max-width:1192px;color:#c9d4de;font-size:.9rem}
header.top code{background:#34475a;color:#fff}
nav.toc{position:sticky;top:0;z-index:3;background:#fff;border-bottom:1px solid var(--line);padding:6px 24px;font-size:.9rem}
nav.toc a{margin-right:14px}
a{color:#0b5cad;text-decoration:none}a:hover{text-decoration:underline}
h2{margin-top:2.2em;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{margin-top:1.8em}h4{margin:1.2em 0 .4em}
code{font:0.86em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--alt);padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
pre{background:var(--alt);padding:8px;overflow-x:auto}
.muted{color:var(--muted);font-size:.9rem}
p.caption{font-weight:600;font-size:.9rem;margin:14px 0 2px}
.banner{background:#fff3cd;border:1px solid #e0c56e;padding:10px 14px;border-radius:6px;margin:16px 0}
.counts{display:flex;flex-wrap:wrap;gap:8px;margin:14px 0}
.count{padding:6px 12px;border-radius:6px;border-left:6px solid;font-weight:600}
.wrap{overflow-x:auto;margin:6px 0 14px}
table{border-collapse:collapse;font-size:.84rem;max-width:100%}
th,td{border:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}
th{background:#eef2f5;white-space:nowrap}
tbody tr:nth-child(even) td{background:var(--alt)}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.nw{white-space:nowrap}
table.claims{width:100%}
table.claims tbody tr td{background:#fff}
table.claims tr.first td{border-top:2px solid #9aa5b1}
table.claims td.paper{font-weight:600;min-width:9em}
table.claims td.claim{min-width:16em}
table.claims td.verdict{font-weight:600;min-width:10em}
table.claims td.cnum{white-space:nowrap}
table.claims td.effect{min-width:7em}
table.claims td.vbar{background:none !important}
table.claims td.ci{white-space:nowrap}
table.claims td.test{min-width:14em;color:#333}
td.vbar{width:6px;min-width:6px;padding:0;border-left:6px solid}
tr.differs td{background:#fff6e5 !important}
td.flag{color:#8a4b00;font-size:.8rem;min-width:30em}
.v-holds{background:#dff3df !important;border-left-color:#2e7d32 !important}
.v-partly{background:#fff1cc !important;border-left-color:#b7791f !important}
.v-does-not-hold{background:#fbdcdc !important;border-left-color:#c62828 !important}
.v-not-shown{background:#e6ebf1 !important;border-left-color:#546e7a !important}
.v-fragile{background:#eedff6 !important;border-left-color:#7b1fa2 !important}
.v-na{background:#fff !important;border-left-color:#999 !important}
.v-smoke{font-style:italic}
.tag{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:.85rem;border:1px solid rgba(0,0,0,.12)}
div.claim{border:1px solid var(--line);border-left:6px solid;border-radius:4px;margin:10px 0;padding:8px 12px;background:#fff !important}
div.claim .chead{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:baseline;margin-bottom:4px}
div.claim .cnum{font-weight:700}div.claim .ctext{font-weight:600;flex:1 1 22em}
div.claim .cwhere{color:var(--muted);font-size:.85rem}
div.claim dl.kv{font-size:.85rem}
.figs{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start;margin:8px 0 16px}
figure{margin:0;flex:1 1 540px;max-width:780px}
figure.wide{flex-basis:100%;max-width:100%}
figure img{width:100%;height:auto;border:1px solid var(--line);background:#fff}
figcaption{font-size:.8rem;color:var(--muted)}
details{margin:4px 0 12px}summary{cursor:pointer;font-weight:600;font-size:.9rem}
ul.missing li{margin:2px 0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:.9rem;margin:6px 0}
dl.kv dt{font-weight:600;color:#39434d}dl.kv dd{margin:0;overflow-wrap:anywhere}
section.paper{margin-top:2em}
""".strip()


def _table_html(t: Table, cls: str = "") -> str:
    numeric = t.numeric
    flagged = bool(t.flags)
    head = "".join(f"<th>{e(c)}</th>" for c in t.columns) + ("<th>beyond ±2 points: why</th>" if flagged else "")
    body = []
    for r, row in enumerate(t.rows):
        flag = t.flags[r] if flagged else ""
        attrs = ' class="differs"' if flag else ""
        cells = "".join(f'<td class="num">{e(v)}</td>' if numeric[j]
                        else f'<td class="nw">{e(v)}</td>' if "±" in v and len(v) <= 20 else f"<td>{e(v)}</td>"
                        for j, v in enumerate(row))
        if flagged:
            see = f' (<a href="#{e(t.link)}">where we differ</a>)' if flag and t.link else ""
            cells += f'<td class="flag">{e(flag)}{see}</td>'
        body.append(f"<tr{attrs}>{cells}</tr>")
    table = (f'<div class="wrap"><table{f" class={chr(34)}{cls}{chr(34)}" if cls else ""}>'
             f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
    notes = "".join(f'<p class="muted">{inline_html(n)}</p>' for n in t.notes)
    if t.name in FOLDED or (len(t.rows) > FOLD_ROWS and not flagged):
        return (f"<details><summary>{inline_html(t.caption or t.name)} ({len(t.rows)} rows)</summary>"
                f"{table}{notes}</details>")
    caption = f'<p class="caption">{inline_html(t.caption)}</p>' if t.caption else ""
    return caption + table + notes


def _claims_first_screen(site: Site) -> str:
    rows = []
    for paper in site.papers:
        for i, c in enumerate(paper.claims):
            vcls = _css_class(c.vclass) + (" v-smoke" if c.smoke else "")
            effects = "".join(f'<td class="{cls}">{e(c.cells.get(col) or DASH)}</td>'
                              for col, cls in zip(EFFECT_COLUMNS, ("effect", "ci", "test"), strict=True))
            first = (f'<td class="paper" rowspan="{len(paper.claims)}"><a href="#{paper.anchor}">{e(paper.short)}</a>'
                     f'<br /><span class="muted">{e(paper.key)}</span></td>') if i == 0 else ""
            rows.append(
                f'<tr class="{"first" if i == 0 else ""}">{first}<td class="vbar {_css_class(c.vclass)}"></td>'
                f'<td class="cnum">{e(c.number)}</td><td class="claim"><a href="#{e(c.anchor)}">{e(c.text)}</a></td>'
                f'<td class="verdict {vcls}">{e(c.verdict)}</td>{effects}</tr>')
        if not paper.claims:
            suffix = " --smoke" if site.smoke else ""
            rows.append(f'<tr class="first"><td class="paper"><a href="#{paper.anchor}">{e(paper.short)}</a>'
                        f'<br /><span class="muted">{e(paper.key)}</span></td><td class="vbar v-na"></td>'
                        f'<td colspan="6">not reproduced yet: <code>lkm reproduce {e(paper.key)}{suffix}</code> '
                        f"(or <code>lkm reproduce all{suffix}</code>)</td></tr>")
    head = "".join(f"<th>{e(x)}</th>" for x in ("paper", "", "#", "the paper's claim", "our verdict", *EFFECT_COLUMNS))
    return (f'<div class="wrap"><table class="claims" id="claims"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _counts_html(site: Site) -> str:
    items = "".join(f'<span class="count {_css_class(name)}">{e(name)}: {n}</span>' for name, n in _counts_line(site))
    return f'<div class="counts">{items}<span class="count v-na">claims: {len(site.claims)}</span></div>'


def _kv(pairs: list[tuple[str, str]]) -> str:
    return '<dl class="kv">' + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def _datasets_rows(prov: dict[str, Any]) -> list[list[str]]:
    """One row per dataset name and file set (a paper's many binary tasks of one set: one row)."""
    groups: dict[tuple, list[str]] = {}
    info: dict[tuple, dict[str, Any]] = {}
    for ds_id, d in (prov.get("datasets") or {}).items():
        if not isinstance(d, dict) or "unavailable" in d:
            continue
        files = tuple((f.get("name", ""), f.get("sha256") or "") for f in d.get("files") or [] if isinstance(f, dict))
        key = (d.get("name", ds_id), files)
        groups.setdefault(key, []).append(str(ds_id))
        info.setdefault(key, d)
    rows = []
    for key, ids in groups.items():
        d = info[key]
        name = key[0] + (f" ({len(ids)} tasks)" if len(ids) > 1 else "")
        files = "; ".join(f"{n} sha256 {s}" if s else n for n, s in key[1]) or d.get("source", "")
        rows.append([name, f"{d.get('rows', '')} × {d.get('features', '')}", files])
    return rows


def _settings_pairs(prov: dict[str, Any], perturbed: dict[str, Any] | None) -> list[tuple[str, str]]:
    git = prov.get("git") or {}
    hist = [h for h in prov.get("history") or [] if isinstance(h, dict)]
    pairs = [
        ("command", f"<code>{e(prov.get('command', DASH))}</code>"),
        ("spec", f"<code>{e(prov.get('spec_source', DASH))}</code>"),
        ("started", e(prov.get("started_at", DASH))),
        ("wall time", e(f"{duration(float(prov.get('seconds') or 0))} this run"
                        + (f"; {duration(_seconds(prov))} with {len(hist)} earlier run(s)" if hist else ""))),
        ("jobs", e(prov.get("jobs", DASH) if prov.get("jobs") is not None else "cluster" if prov.get("cluster") else DASH)),
        ("seeds", e(json.dumps(prov.get("seeds", {})))),
        ("fits", e(", ".join(f"{k} {v}" for k, v in (prov.get("tasks") or {}).items()))),
        ("commit", e(f"{str(git.get('commit') or DASH)[:12]}{' (uncommitted changes)' if git.get('dirty') else ''}")),
    ]
    if perturbed is not None:
        state = (f"{perturbed['name']}/, {duration(perturbed['seconds'])}" if perturbed["exists"]
                 else f"{perturbed['name']}/ not run yet")
        pairs.append(("fragility rerun", e(state)))
    return pairs


def _run_html(run: RunView) -> str:
    parts = [f'<h3 id="{e(run.anchor)}">{e(run.name)} <span class="muted">({e(run.spec_path)})</span></h3>']
    if run.description:
        parts.append(f'<p class="muted">{inline_html(run.description)}</p>')
    if not run.exists:
        parts.append(f"<p><strong>not run yet:</strong> <code>{e(run.make)}</code></p>")
        return "\n".join(parts)
    for t in run.tables:
        parts.append(_table_html(t))
    if run.figures:
        parts.append(_figures_html(run.figures, f"{run.name}: "))
    if run.provenance:
        ds = _datasets_rows(run.provenance)
        body = _kv(_settings_pairs(run.provenance, run.perturbed))
        if ds:
            body += _table_html(Table("datasets", "data versions", ["dataset", "rows × features", "files"], ds))
        parts.append(f"<details><summary>settings and data versions</summary>{body}</details>")
    if run.unavailable:
        parts.append('<ul class="missing">' + "".join(f"<li>dataset {e(k)} unavailable: {e(v)}</li>"
                                                     for k, v in run.unavailable.items()) + "</ul>")
    return "\n".join(parts)


def _claim_card(site: Site, paper: PaperView, c: Claim) -> str:
    """One claim of a paper's claims table: its number, text, where and verdict on top,
    every other column of claims.csv below as label: value."""
    head_cols = {"#", "the paper's claim", "where", "verdict"}
    vcls = _css_class(c.vclass) + (" v-smoke" if c.smoke else "")
    rows = []
    for col in paper.claims_columns:
        value = c.cells.get(col, "")
        if col in head_cols or col == "the paper's claim":
            continue
        if col == "run":
            links = []
            for name in (x.strip() for x in value.split(",") if x.strip()):
                folder = f"{name}-smoke" if site.smoke else name
                links.append(f'<a href="#run-{e(_slug(folder))}">{e(name)}</a>'
                             if any(r.name == folder for r in paper.runs) else e(name))
            rows.append((col, ", ".join(links) or DASH))
        elif col.startswith("verdict") and value not in ("", DASH):
            vc, _ = verdict_class(value)
            rows.append((col, f'<span class="tag {_css_class(vc)}">{e(value)}</span>'))
        else:
            rows.append((col, e(value or DASH)))
    return (f'<div class="claim {_css_class(c.vclass)}" id="{e(c.anchor)}">'
            f'<div class="chead"><span class="cnum">{e(c.number)}</span>'
            f'<span class="ctext">{e(c.text)}</span>'
            f'<span class="cwhere">{e(c.cells.get("where", ""))}</span>'
            f'<span class="tag {vcls}">{e(c.verdict)}</span></div>'
            f"{_kv(rows)}</div>")


def _paper_html(site: Site, paper: PaperView) -> str:
    parts = [f'<section class="paper" id="{e(paper.anchor)}"><h2>{e(paper.title)} '
             f'<span class="muted">(<code>lkm reproduce {e(paper.key)}</code>)</span></h2>']
    links = [f'<a href="#{e(r.anchor)}">{e(r.name)}</a>' for r in paper.runs]
    if paper.differ:
        links.append(f'<a href="#{e(paper.key)}-differ">where we differ</a>')
    parts.append(f'<p class="muted">experiments: {" · ".join(links)}; wall time of the recorded runs: '
                 f"{e(paper.wall_time)}</p>")
    if paper.claims:
        caption = f'<p class="caption">{inline_html(paper.claims_caption)}</p>' if paper.claims_caption else ""
        parts.append("<h3>The claims</h3>" + caption + "".join(_claim_card(site, paper, c) for c in paper.claims))
    for t in paper.extra_tables:
        parts.append(_table_html(t))
    parts.append("<h3>Still missing</h3>")
    if paper.missing:
        parts.append('<ul class="missing">' + "".join(f"<li>{inline_html(m)}</li>" for m in paper.missing) + "</ul>")
    else:
        parts.append("<p>nothing: every experiment has its run folder and every dataset was available.</p>")
    if paper.differ:
        parts.append(f'<h3 id="{e(paper.key)}-differ">Where we differ, and why <span class="muted">'
                     f"(from {e(paper.differ_source)})</span></h3>")
        parts.append(markdown_blocks_html(paper.differ))
    for run in paper.runs:
        parts.append(_run_html(run))
    parts.append("</section>")
    return "\n".join(parts)


def _friedman_pairs(friedman: dict[str, Any]) -> list[tuple[str, str]]:
    def fmt(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return {True: "yes", False: "no", None: DASH}[v]
        if isinstance(v, float):
            return f"{v:.4g}"
        if isinstance(v, dict | list) and not v:
            return DASH
        if isinstance(v, dict):
            return ", ".join(f"{k} {fmt(x)}" for k, x in v.items())
        if isinstance(v, list):
            return ", ".join(f"[{fmt(x)}]" if isinstance(x, list) else fmt(x) for x in v)
        return str(v)
    return [(str(k), e(fmt(v))) for k, v in friedman.items()]


def _cross_html(site: Site) -> str:
    cross = site.cross
    parts = ['<section class="paper" id="cross-paper"><h2>Across the papers: one protocol, every method</h2>']
    if not cross.exists:
        parts.append(f"<p>{inline_html(cross.note)}</p>")
    for t in cross.tables:
        parts.append(_table_html(t))
    if cross.friedman:
        parts.append("<details><summary>the Friedman test and the critical difference (friedman.json)</summary>"
                     + _kv(_friedman_pairs(cross.friedman)) + "</details>")
    if cross.figures:
        parts.append(_figures_html(cross.figures, ""))
    if cross.run is not None and cross.run.exists and cross.run.provenance:
        parts.append(f"<details><summary>settings and data versions ({e(cross.run.name)})</summary>"
                     + _kv(_settings_pairs(cross.run.provenance, None))
                     + _table_html(Table("datasets", "data versions", ["dataset", "rows × features", "files"],
                                         _datasets_rows(cross.run.provenance))) + "</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _versions(items: list[tuple[str, int]]) -> str:
    if not items:
        return DASH
    if len(items) == 1:
        return items[0][0]
    return "; ".join(f"{v} ({n} runs)" for v, n in items)


def _environment_rows(site: Site) -> tuple[list[tuple[str, str]], Table, Table, Table]:
    env = site.environment
    now = env["now"] or {}
    pairs = [
        ("runs read", str(env["runs"])),
        ("commit of the runs", _versions(env["commits"])),
        ("commit now", f"{str(now.get('commit') or DASH)[:12]}{' (uncommitted changes)' if now.get('dirty') else ''}"),
        ("lkm", _versions(env["lkm_version"])),
        ("Python", _versions(env["python"])),
        ("platform", _versions(env["platform"])),
        ("CPU", _versions(env["cpu"])),
        ("BLAS threads per worker", ", ".join(f"{k}: {v}" for k, v in env["worker_threads"].items()) or DASH),
    ]
    packages = Table("packages", "package versions", ["package", "version"],
                     [[k, _versions(v)] for k, v in env["packages"].items()])
    blas = Table("blas", "BLAS and OpenMP libraries (newest run)", ["library", "api", "version", "threading", "architecture", "file"],
                 [[str(lib.get(k) or DASH) for k in ("library", "api", "version", "threading_layer", "architecture", "file")]
                  for lib in env["blas"]])
    total = sum(env["seconds"].values())
    wall = Table("wall", "wall time of the recorded runs (each run folder's provenance and its history, fragility reruns included)",
                 ["paper", "wall time"],
                 [[p.key, duration(env["seconds"][p.key]) if p.key in env["seconds"] else f"{DASH} (not run yet)"]
                  for p in site.papers]
                 + ([["cross-paper", duration(env["seconds"]["cross-paper"])]] if "cross-paper" in env["seconds"] else [])
                 + [["all", duration(total)]])
    return pairs, packages, blas, wall


def _environment_html(site: Site) -> str:
    pairs, packages, blas, wall = _environment_rows(site)
    return ('<section class="paper" id="environment"><h2>Environment</h2>'
            + _kv([(k, e(v)) for k, v in pairs]) + _table_html(wall) + _table_html(packages) + _table_html(blas)
            + "</section>")


def render_html(site: Site) -> str:
    smoke = site.smoke
    banner = (f'<p class="banner"><strong>Smoke run</strong> (few datasets and settings): every verdict is '
              f"“{e(SMOKE_PREFIX)}”. It checks that every output is produced; "
              f"<code>lkm reproduce all</code> makes the real report.</p>") if smoke else ""
    toc = "".join(f'<a href="#{p.anchor}">{e(p.short)}</a>' for p in site.papers)
    body = [
        f'<header class="top"><h1>{e(TITLE)}{" — smoke run" if smoke else ""}</h1>'
        f"<p>Every claim of the five papers checked from our own numbers; the papers' numbers beside ours, "
        f"the figures, and why we differ. Built {e(site.built_at)} from <code>{e(site.results.name or site.results)}/</code> "
        f"(<code>lkm report --all{' --smoke' if smoke else ''}</code> rebuilds it).</p></header>",
        f'<nav class="toc"><a href="#claims-summary">claims</a>{toc}<a href="#cross-paper">across the papers</a>'
        f'<a href="#environment">environment</a></nav>',
        "<main>",
        banner,
        '<h2 id="claims-summary">The papers’ claims and our verdicts</h2>',
        _counts_html(site),
        f'<p class="muted">{e(differing_line(site))} (the flagged rows of each paper’s tables).</p>',
        '<p class="muted">A verdict is decided by a test over the splits (folds, repeats, realizations) both '
        "methods share; <em>fragile</em>: the verdict changed when the run was repeated with permuted training "
        "rows and another BLAS thread count. Each claim links to its row in the paper’s section.</p>",
        _claims_first_screen(site),
    ]
    body += [_paper_html(site, p) for p in site.papers]
    body += [_cross_html(site), _environment_html(site), "</main>"]
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8" />'
            '<meta name="viewport" content="width=device-width, initial-scale=1" />'
            f"<title>{e(TITLE)}{' (smoke run)' if smoke else ''}</title>"
            f"<style>\n{CSS}\n</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")


# -- Markdown --------------------------------------------------------------------------------
def md_table(columns: list[str], rows: list[list[str]]) -> str:
    """Cells as one-line text through the project's one Markdown table writer."""
    import pandas as pd

    return markdown_table(pd.DataFrame([[" ".join(str(v).split()) for v in row] for row in rows],
                                       columns=[" ".join(str(c).split()) for c in columns]))


def _table_md(t: Table) -> str:
    columns, rows = list(t.columns), [list(r) for r in t.rows]
    if t.flags:
        columns.append("beyond ±2 points: why")
        for row, flag in zip(rows, t.flags, strict=True):
            row.append(f"{flag} ([where we differ](#{t.link}))" if flag and t.link else flag)
    out = [f"**{t.caption}**", "", md_table(columns, rows)] if t.caption else [md_table(columns, rows)]
    out += [f"\n{_strip_links(n)}" for n in t.notes]
    return "\n".join(out) + "\n"


def render_markdown(site: Site) -> str:
    out = [f"# {TITLE}{' — smoke run' if site.smoke else ''}", "",
           f"Built {site.built_at} from `{site.results.name or site.results}/` "
           f"(`lkm report --all{' --smoke' if site.smoke else ''}` rebuilds it; `index.html` beside this file has the same content).", ""]
    if site.smoke:
        out += [f"> **Smoke run** (few datasets and settings): every verdict is “{SMOKE_PREFIX}”.", ""]
    out += ['<a id="claims-summary"></a>', "", "## The papers’ claims and our verdicts", "",
            " · ".join(f"**{name}**: {n}" for name, n in _counts_line(site)) + f" · claims: {len(site.claims)}", "",
            f"{differing_line(site)} (the flagged rows of each paper’s tables).", ""]
    rows = [[f"[{p.short}](#{p.anchor})", c.number, f"[{c.text}](#{c.anchor})", c.verdict,
             *(c.cells.get(col) or DASH for col in EFFECT_COLUMNS)] for p in site.papers for c in p.claims]
    out += [md_table(["paper", "#", "the paper's claim", "our verdict", *EFFECT_COLUMNS], rows), ""]
    for paper in site.papers:
        out += [f'<a id="{paper.anchor}"></a>', "", f"## {paper.title} (`lkm reproduce {paper.key}`)", ""]
        if paper.claims:
            out += ["### The claims", ""]
            if paper.claims_caption:
                out += [f"**{paper.claims_caption}**", ""]
            crow = [[f'<a id="{c.anchor}"></a>{c.cells.get(paper.claims_columns[0], "")}',
                     *(c.cells.get(col, "") for col in paper.claims_columns[1:])] for c in paper.claims]
            out += [md_table(paper.claims_columns, crow), ""]
        out += [_table_md(t) for t in paper.extra_tables]
        out += ["### Still missing", ""]
        out += [f"- {m}" for m in paper.missing] or ["Nothing: every experiment has its run folder and every dataset was available."]
        out.append("")
        if paper.differ:
            out += [f'<a id="{paper.key}-differ"></a>', "", f"### Where we differ, and why (from {paper.differ_source})", "",
                    re.sub(r"^(#+)", r"\1##", _strip_links(paper.differ), flags=re.M), ""]
        out += [f"Wall time of the recorded runs: {paper.wall_time}.", ""]
        for run in paper.runs:
            out += [f'<a id="{run.anchor}"></a>', "", f"### {run.name} (`{run.spec_path}`)", ""]
            if run.description:
                out += [_strip_links(run.description), ""]
            if not run.exists:
                out += [f"**Not run yet:** `{run.make}`", ""]
                continue
            out += [_table_md(t) for t in run.tables]
            for caption, _, target in run.figures:
                out += [f"![{run.name}: {caption}]({target})", ""]
            if run.provenance:
                out += ["Settings and data versions:", ""]
                out += [f"- {k}: {_plain(v)}" for k, v in _settings_pairs(run.provenance, run.perturbed)]
                ds = _datasets_rows(run.provenance)
                if ds:
                    out += ["", md_table(["dataset", "rows × features", "files"], ds)]
                out.append("")
            for k, v in run.unavailable.items():
                out += [f"- dataset {k} unavailable: {v}"]
    cross = site.cross
    out += ['<a id="cross-paper"></a>', "", "## Across the papers: one protocol, every method", ""]
    if not cross.exists:
        out += [cross.note, ""]
    out += [_table_md(t) for t in cross.tables]
    if cross.friedman:
        out += ["### The Friedman test and the critical difference (friedman.json)", ""]
        out += [f"- {k}: {_plain(v)}" for k, v in _friedman_pairs(cross.friedman)] + [""]
    for caption, _, target in cross.figures:
        out += [f"![{caption}]({target})", ""]
    pairs, packages, blas, wall = _environment_rows(site)
    out += ['<a id="environment"></a>', "", "## Environment", ""] + [f"- {k}: {v}" for k, v in pairs] + [""]
    out += [_table_md(wall), _table_md(packages), _table_md(blas)]
    return "\n".join(out).rstrip() + "\n"


def _plain(html_text: str) -> str:
    """An HTML fragment of :func:`_settings_pairs` as Markdown text."""
    text = re.sub(r"</?code>", "`", html_text)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


# -- writing -------------------------------------------------------------------------------
def _copy_figures(site: Site, out: Path) -> list[Path]:
    """Copy every figure shown to ``out/figures/<run>/`` (unchanged files kept), and remove
    figures no run shows any more."""
    wanted: dict[Path, Path] = {out / unquote(target): src for _, src, target in _all_figures(site)}
    written = []
    for dest, src in wanted.items():
        st = src.stat()
        if dest.is_file():
            dt = dest.stat()
            if dt.st_size == st.st_size and int(dt.st_mtime) == int(st.st_mtime):
                written.append(dest)
                continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        written.append(dest)
    figures = out / "figures"
    if figures.is_dir():
        for p in sorted(figures.rglob("*"), reverse=True):
            if p.is_file() and p not in wanted:
                p.unlink()
            elif p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    return written


class SiteFiles(list[Path]):
    """The files of the report (``index``, ``markdown`` first) and its claims counts."""

    def __init__(self, files: Iterable[Path], index: Path, markdown: Path, counts: dict[str, int],
                 claims: int, missing: list[str], differing: str = "") -> None:
        super().__init__(files)
        self.index, self.markdown, self.counts, self.claims, self.missing = index, markdown, counts, claims, missing
        self.differing = differing


def build_site(results: Path, out: Path | None = None, smoke: bool = False) -> SiteFiles:
    """Write ``out`` (default ``results/report``, ``results/report-smoke`` with ``smoke``):
    ``index.html``, ``report.md`` and ``figures/``, from the recorded runs under ``results``."""
    from lkm.store import atomic_write

    results = Path(results)
    out = Path(out) if out is not None else results / ("report-smoke" if smoke else "report")
    site = collect(results, smoke)
    out.mkdir(parents=True, exist_ok=True)
    figures = _copy_figures(site, out)
    index = atomic_write(out / "index.html", render_html(site))
    markdown = atomic_write(out / "report.md", render_markdown(site))
    missing = [f"{p.key}: {m}" for p in site.papers for m in p.missing]
    if not site.cross.exists:
        missing.append(f"cross-paper: {site.cross.note}")
    return SiteFiles([index, markdown, *figures], index, markdown, dict(_counts_line(site)), len(site.claims), missing,
                     differing_line(site))


__all__ = ["SiteFiles", "build_site", "collect", "render_html", "render_markdown", "verdict_class"]
