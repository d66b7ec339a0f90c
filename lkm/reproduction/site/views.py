"""What the report shows, read from the results folder (no fitting): the claims of each
paper, its runs (tables, figures, provenance), the cross-paper ranking and the environment
the runs recorded — :func:`collect` gives it all as one :class:`Site`."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lkm.report.ranking import RUN_NAME as CROSS_RUN
from lkm.report.ranking import SUMMARY_NAME as CROSS_SUMMARY
from lkm.reproduction.claims import SMOKE_LABEL as SMOKE_PREFIX
from lkm.reproduction.paper import paper_differences, paper_margins
from lkm.reproduction.readings import paper_readings, reading_experiments
from lkm.reproduction.runs import shown_path
from lkm.reproduction.site.tables import (
    ROW_VERDICTS,
    Table,
    cause_finder,
    contradictions,
    read_table,
    reading_finder,
    with_differences,
)

#: The source tree (docs/ lives here in a checkout; an installed wheel has none).
REPO = Path(__file__).resolve().parents[3]
#: Verdict classes, in the order the summary counts them.
VERDICT_CLASSES = ("holds", "partly", "contradicted", "equivalent", "fragile", "reading-dependent", "inconclusive",
                   "n/a")


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
    if low.startswith("reading-dependent"):
        return "reading-dependent", smoke
    for name in ("contradicted", "equivalent", "inconclusive", "partly", "holds"):
        if low.startswith(name):
            return name, smoke
    return "n/a", smoke


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
        return f"{self.paper}-claim-{slug(self.number)}"


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
    reading: bool = False  # a variant run of one of the paper's readings (its rows get no verdict)
    older: bool = False  # its tables were written by an older lkm (no tables/*.json): `lkm report <folder>`
    problems: list[str] = field(default_factory=list)  # inputs missing or corrupt: named in "Still missing"

    @property
    def anchor(self) -> str:
        return f"run-{slug(self.name)}"


@dataclass
class PaperView:
    key: str
    title: str
    claims_table: Table | None  # the claims table as written (its caption, columns and files)
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
    def claims_caption(self) -> str:
        return self.claims_table.caption if self.claims_table else ""

    @property
    def claims_columns(self) -> list[str]:
        return self.claims_table.columns if self.claims_table else []

    def row_verdicts(self) -> Counter:
        """The table rows compared with the paper's number, by verdict
        (:data:`lkm.reproduction.site.tables.ROW_VERDICTS`; a row of two tables counts twice)."""
        out: Counter = Counter(dict.fromkeys(ROW_VERDICTS, 0))
        out.update(v for run in self.runs for t in run.tables for v in t.verdicts if v)
        return out

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
    source: str = ""  # what the runs came from, as the page says it (default: the results folder)
    rebuild: str = ""  # the command that rebuilds the report
    #: The interactive figures (:mod:`lkm.reproduction.site.interactive`): {path of the PNG
    #: they replace in the report, or "benchmark": the div}; empty: the PNGs alone.
    interactive: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.source = self.source or f"{self.results.name or self.results}/"
        self.rebuild = self.rebuild or f"lkm report --all{' --smoke' if self.smoke else ''}"

    @property
    def claims(self) -> list[Claim]:
        return [c for p in self.papers for c in p.claims]

    def counts(self) -> Counter:
        return Counter(c.vclass for c in self.claims)

    def row_verdicts(self) -> Counter:
        """:meth:`PaperView.row_verdicts` summed over the papers."""
        return sum((p.row_verdicts() for p in self.papers), Counter(dict.fromkeys(ROW_VERDICTS, 0)))


#: The rule the report's row verdicts follow, as its legend says it.
ROW_VERDICT_RULE = (
    "A row compared with the paper's number is reproduced when our 95% interval lies within the paper's stated "
    "margin of it (two one-sided tests at 2.5% each; the margin, 1 point unless the paper prints a spread for the "
    "row, is in the paper's verdicts.yaml), consistent when the interval holds the paper's number but is wider than "
    "the margin, differs when it does not hold it, untested without an interval. A row that differs takes the verdict "
    "of a reading of the paper's open choices that reaches it only if that reading is in the paper's text or was "
    "declared before its results and does not contradict the text; any other reading gives at most matched post "
    "hoc, and a tuned setting counts only where the paper tuned it.")


def row_verdicts_line(site: Site) -> str:
    """"120 table rows compared with the paper: 30 reproduced (5 under a reading), …", counted from the records."""
    c = site.row_verdicts()
    parts = [f"{c[v]} {v}" for v in ROW_VERDICTS if c[v]]
    unseen = sum(1 for p in site.papers for r in p.runs if r.exists and (r.older or r.problems))
    line = f"{sum(c.values())} table rows compared with the paper's number: " + (", ".join(parts) or "none")
    if unseen:  # never claim agreement the report cannot see
        line += f"; {unseen} run(s) with missing or unreadable tables, figures or provenance are not fully counted (see Still missing)"
    return line


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def _read_json(path: Path) -> dict[str, Any]:
    return read_json_file(path)[0]


def read_json_file(path: Path) -> tuple[dict[str, Any], str | None]:
    """``(content, None)`` of a JSON object file; ``({}, None)`` when it does not exist;
    ``({}, "<path>: unreadable (<why>)")`` when it exists but is corrupt or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError) as exc:
        return {}, f"{path}: unreadable ({' '.join(str(exc).split())[:120]})"
    if not isinstance(data, dict):
        return {}, f"{path}: unreadable (not a JSON object)"
    return data, None


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


def _lost_figures(folder: Path) -> list[str]:
    """Figure files the run's last report drew (``figures/.inputs.json``) that are gone."""
    drawn = _read_json(folder / "figures" / ".inputs.json")
    files = [f for entry in drawn.values() if isinstance(entry, dict) for f in entry.get("files") or []
             if isinstance(f, str) and f.endswith(".png")]
    return [f for f in files if not (folder / f).is_file()]


def _figures(folder: Path, sub: str = "figures") -> list[tuple[str, Path, str]]:
    """``(caption, source, path in the report)`` of every PNG under ``folder/sub``: copied
    to ``figures/<folder name>/``."""
    fig = folder / sub if sub else folder
    if not fig.is_dir():
        return []
    return [(rel.with_suffix("").as_posix(), p, f"figures/{slug(folder.name)}/{quote(rel.as_posix())}")
            for p in sorted(fig.rglob("*.png")) for rel in [p.relative_to(fig)]]


#: The renderings of a table the report copies beside it and links.
TABLE_FILES = ("csv", "tex", "md")
#: What a folder whose tables have no ``.json`` (written by an older lkm) says.
OLDER_TABLES = "tables written by an older lkm"


def table_files(path: Path, shown_as: str) -> list[tuple[str, Path, str]]:
    """``(suffix, source, path in the report)`` of the CSV, LaTeX and Markdown twins of
    the table ``path``: copied to ``tables/<shown_as>/``."""
    return [(ext, src, f"tables/{slug(shown_as)}/{quote(src.name)}")
            for ext in TABLE_FILES for src in [path.with_suffix(f".{ext}")] if src.is_file()]


def _tables(folder: Path, shown_as: str, order: Iterable[str] = (), skip: Iterable[str] = ()) -> tuple[list[Table], bool]:
    """The tables of ``folder`` (its ``*.json``, ``order`` first), and whether some table
    there has no ``.json`` (written by an older lkm)."""
    if not folder.is_dir():
        return [], False
    found = {p.stem: p for p in folder.glob("*.json") if (p.with_suffix(".md")).is_file()}
    older = any(p.stem not in found and p.stem not in set(skip) for p in folder.glob("*.md"))
    names = [n for n in order if n in found] + sorted(n for n in found if n not in set(order))
    return [read_table(found[n], table_files(found[n], shown_as)) for n in names if n not in set(skip)], older


def provenance_seconds(prov: dict[str, Any]) -> float:
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
    view = RunView(shown_path(spec_path), name, (spec.description or "").strip() if spec is not None else "", folder, exists, make)
    if not exists:
        return view
    order = list(spec.outputs.tables) if spec is not None else []
    view.tables, view.older = _tables(folder / "tables", name, order)
    view.problems += [f"{name}: {t.notes[0]}" for t in view.tables if not t.columns and t.notes]
    if not view.tables and not view.older and any((folder / "records").glob("part-*")):
        view.problems.append(f"{name}: no tables in {folder / 'tables'}/ (deleted?): `lkm report {folder}` writes them")
    view.figures = _figures(folder)
    view.problems += [f"{name}: figure {f} is gone (deleted?): `lkm report {folder}` draws it again"
                      for f in _lost_figures(folder)]
    view.provenance, corrupt = read_json_file(folder / "provenance.json")
    if corrupt:
        view.problems.append(f"{name}: {corrupt}; its settings, data versions and time are not shown")
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
                          "seconds": provenance_seconds(pprov), "provenance": pprov}
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
    claims_mod = getattr(module, "claims", None)
    title = getattr(claims_mod, "TITLE", None) or (module.__doc__ or key).strip().split(":")[0]
    suffix = " --smoke" if smoke else ""
    make = f"lkm reproduce {key}{suffix}"
    differ, differ_src = _differ_section(key)
    anchor = f"{key}-differ" if differ else None
    differences = paper_differences(module.__name__)
    perturbed = list(getattr(module, "PERTURBED", {}) or {})
    runs = [_run_view(results, e.spec, smoke, make, perturbed) for e in module.SPECS]
    choices = paper_readings(module.__name__)
    margins = paper_margins(module.__name__)
    variants = {e.name for e in reading_experiments(module.__name__)}

    def base_name(run: RunView) -> str:
        return run.name.removesuffix("-smoke") if smoke else run.name

    tables = {base_name(run): {t.name: t for t in run.tables} for run in runs}
    for run in runs:
        base = base_name(run)
        run.reading = base in variants
        if not run.reading:
            margin_for = lambda quantity, row, base=base: margins.for_row(base, quantity, row)  # noqa: E731
            run.tables = [with_differences(t, anchor, cause_finder(base, differences), reading_finder(base, choices, tables),
                                           margin_for) for t in run.tables]
    folder = results / (f"{key}_claims-smoke" if smoke else f"{key}_claims")
    found, older = _tables(folder, folder.name, ["claims"])
    claims_table = next((t for t in found if t.name == "claims"), None)
    claims: list[Claim] = []
    missing: list[str] = []
    if claims_table is not None and claims_table.columns:
        columns = claims_table.columns
        claim_col = "the paper's claim" if "the paper's claim" in columns else columns[min(1, len(columns) - 1)]
        for row in claims_table.rows:
            cells = dict(zip(columns, row, strict=True))
            v = cells.get("verdict", "")
            vclass, is_smoke = verdict_class(v)
            claims.append(Claim(key, cells.get("#", ""), cells.get(claim_col, ""), v, vclass, is_smoke or smoke, cells))
    elif claims_table is not None and claims_table.notes:  # claims.json exists but cannot be read
        missing.append(f"claims table {folder.name}/claims: {claims_table.notes[0]}: `{make}` rewrites it")
    elif older or (folder / "claims.md").is_file():
        missing.append(f"claims table {folder.name}/claims: {OLDER_TABLES}: `{make}` rewrites it")
    else:
        missing.append(f"claims table {folder.name}/claims not written yet: `{make}`")
    extra = [t for t in found if t.name != "claims"]
    for run in runs:
        compared = [c for t in run.tables for parts in t.details for c in parts]
        missing += [f"{run.name}: a cause contradicted by its own experiment — {why}" for why in contradictions(compared)]
    for run in runs:
        if run.older:
            missing.append(f"{run.name}: {OLDER_TABLES}: run `lkm report {run.folder}`")
        if not run.exists:
            spec_cmd = f"lkm run {Path(run.spec_path).stem}{suffix}"
            missing.append(f"run folder {run.name}/ does not exist yet: `{make}` (or `{spec_cmd}` for this experiment alone)")
            continue
        for ds, msg in run.unavailable.items():
            missing.append(f"{run.name}: dataset {ds} unavailable — {msg}")
        tasks = run.provenance.get("tasks") or {}
        if isinstance(tasks, dict) and tasks.get("failed"):
            missing.append(f"{run.name}: {tasks['failed']} fit(s) failed (see its records)")
        missing += run.problems
        if not run.provenance and not (run.folder / "provenance.json").is_file():
            missing.append(f"{run.name}: no provenance.json (the run did not finish): `{make}`")
        if run.perturbed is not None and not run.perturbed["exists"]:
            missing.append(f"fragility rerun {run.perturbed['name']}/ not run yet: `{make}`")
    seconds = sum(provenance_seconds(r.provenance) + (r.perturbed["seconds"] if r.perturbed else 0.0) for r in runs)
    return PaperView(key, title, claims_table, claims, extra, runs, differ, differ_src, missing, seconds)


def _cross_view(results: Path, cross_spec: str | None, smoke: bool) -> CrossView:
    folder = results / (f"{CROSS_SUMMARY}-smoke" if smoke else CROSS_SUMMARY)
    suffix = " --smoke" if smoke else ""
    command = f"lkm run {Path(cross_spec).stem if cross_spec else CROSS_RUN}{suffix}"
    run = _run_view(results, cross_spec, smoke, command) if cross_spec and _spec_file(cross_spec) else None
    if run is not None:
        run.tables, run.figures = [], []  # the ranking below is what the report shows of it
    if not folder.is_dir():
        if run is not None and run.exists:
            note = f"the ranking is not written yet: `lkm reproduce all{suffix}` writes it from the recorded run"
        else:
            note = f"not run yet: `{command}` (or `lkm reproduce all{suffix}`)"
        return CrossView(folder, False, [], [], None, note, run)
    tables, older = _tables(folder, folder.name, order=["ranking", "speed", "pairwise"])
    figures = _figures(folder, sub="")
    figures.sort(key=lambda f: (f[1].stem != "critical_difference", f[0]))
    friedman = _read_json(folder / "friedman.json") or None
    note = f"{OLDER_TABLES}: `lkm reproduce benchmark{suffix}` rewrites the ranking" if older else ""
    return CrossView(folder, True, tables, figures, friedman, note, run)


def _environment(site_papers: list[PaperView], cross: CrossView) -> dict[str, Any]:
    """The machines and versions the runs recorded, and the source tree now."""
    from lkm.engine.store import git_state

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
                   | ({"cross-paper": provenance_seconds(cross.run.provenance)} if cross.run and cross.run.provenance else {}),
    }


def collect(results: Path, papers: dict[str, Any], cross_spec: str | None, smoke: bool = False) -> Site:
    """Everything the report shows, read from ``results`` (no fitting): one section per
    paper package of ``papers`` (key -> package, :mod:`lkm.reproduction.paper`) and the
    ranking of the ``cross_spec`` run."""
    views = [_paper_view(results, key, module, smoke) for key, module in papers.items()]
    cross = _cross_view(results, cross_spec, smoke)
    return Site(smoke, results, views, cross, _environment(views, cross), time.strftime("%Y-%m-%d %H:%M:%S %z"))


# -- text both renderings use ------------------------------------------------------------
def duration(seconds: float) -> str:
    """`1 h 05 min`, `12 min 30 s`, `7.2 s`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def counts_line(site: Site) -> list[tuple[str, int]]:
    counts = site.counts()
    return [(name, counts.get(name, 0)) for name in VERDICT_CLASSES if name != "n/a" or counts.get(name)]
