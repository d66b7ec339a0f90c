"""README.md and docs/reproductions/*.md from recorded runs: snapshot, build, check.

The tables the docs show are *generated blocks* (markers at the start of a line)::

    <!-- lkm:begin lpl/accuracy -->
    | dataset | PL | ... |
    <!-- lkm:end -->

Each block id names a builder of :func:`doc_blocks` (a paper's claims table from its
``evaluate_claims``, or a table of its own, from its ``DOC_BLOCKS``), rendered by the one Markdown table
writer, :func:`lkm.report.tables.markdown_table`. The builders read a committed, compact
**snapshot** of the runs the docs cite, ``docs/runs/<run>/``::

    spec.yaml  provenance.json  requirements.lock.txt  plan.json (unavailable datasets)
    records/part-snapshot.jsonl.gz   the records of the run's plan, gzipped (byte-stable)

so the check needs neither the data nor a rerun, and CI on a clean clone can tell when a
committed table differs from what the records give. Rates are formatted to 2 decimals,
so the rendered text does not depend on the machine that renders it.

- :func:`snapshot` copies the cited runs from ``results/`` into ``docs/runs/`` and the
  figures the docs show (``docs/figures/<paper>/<run>-<figure>.png``) from the run
  folders' ``figures/``;
- :func:`build` rewrites every block in place from the snapshot;
- :func:`check` lists each stale block with a one-line summary of the difference, each
  unknown block id and each missing figure (``lkm docs check``, ``make docs-check``, and
  ``tests/test_docs.py`` in CI).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from lkm.errors import LkmError, did_you_mean
from lkm.report.aggregation import resampled_splits
from lkm.report.formatting import RATE, format_value, records_interval
from lkm.report.registry import ReportContext
from lkm.report.tables import markdown_table
from lkm.reproduction.readings import paper_readings
from lkm.reproduction.runs import Run, load_run

Papers = dict[str, ModuleType]


def doc_files(papers: Papers) -> tuple[str, ...]:
    """The Markdown files with generated blocks, relative to the repository root: the
    README, the user guide's reproductions page, ``docs/benchmark.md`` and one
    ``docs/reproductions/<key>.md`` per paper."""
    return ("README.md", "docs/guide/reproductions.md", "docs/benchmark.md",
            *(f"docs/reproductions/{key}.md" for key in papers))

#: The committed snapshot, relative to the repository root.
SNAPSHOT = Path("docs/runs")
#: Where the docs' figures live, relative to the repository root.
FIGURES = Path("docs/figures")

BLOCK_RE = re.compile(r"^(<!-- lkm:begin (?P<id>\S+) -->\n)(?P<body>.*?)^(<!-- lkm:end -->)$", re.DOTALL | re.MULTILINE)
BEGIN_RE = re.compile(r"^<!-- lkm:begin ", re.MULTILINE)
END_RE = re.compile(r"^<!-- lkm:end -->", re.MULTILINE)
#: Folders of docs/figures not copied from run folders: the report's screenshot (taken
#: with a headless browser from results/report/index.html, see the README).
NOT_FROM_RUNS = frozenset({"report"})
FIGURE_RE = re.compile(r"\]\((?:\.\./|docs/)?figures/(?P<paper>[\w-]+)/(?P<file>[\w.-]+\.png)\)")
SNAPSHOT_PART = "part-snapshot.jsonl.gz"
#: The benchmark's run (lkm/papers/specs/cross_paper.yaml), whose snapshot `lkm compare` ranks against.
BENCHMARK_RUN = "cross_paper"


class DocsError(LkmError):
    """A block cannot be built (unknown id, run missing from the snapshot)."""


# -- loading runs from the snapshot -----------------------------------------------------
@dataclass
class Snapshot:
    """The runs under ``root`` (``docs/runs``), each loaded once."""

    root: Path
    papers: Papers
    _cache: dict[Any, Any] = field(default_factory=dict)

    def run(self, name: str) -> Run:
        """The run ``name`` (:class:`lkm.reproduction.runs.Run`) of the snapshot."""
        if ("run", name) not in self._cache:
            run = load_run(self.root, name)
            if run is None:
                raise DocsError(f"run {name!r} is not in {self.root}/ (run its reproduction, then `make docs-figures`)")
            self._cache[("run", name)] = run
        return self._cache[("run", name)]

    def context(self, name: str) -> ReportContext:
        """The report context of run ``name``, with the datasets its plan could not load."""
        ctx = self.run(name).context()
        plan = self.root / name / "plan.json"
        ctx.unavailable = json.loads(plan.read_text()).get("unavailable", {}) if plan.is_file() else {}
        return ctx

    def claims(self, paper: str) -> pd.DataFrame:
        """``evaluate_claims`` of paper ``paper`` (a key of :attr:`papers`) on the
        snapshot; its ``<run>-perturbed`` runs are used when the snapshot has them."""
        if ("claims", paper) not in self._cache:
            missing = [r for r in paper_runs(self.papers[paper]) if not (self.root / r / "spec.yaml").is_file()]
            if missing:
                raise DocsError(f"runs {', '.join(missing)} are not in {self.root}/ "
                                f"(run `make reproduce-{paper}`, then `make docs-figures`)")
            self._cache[("claims", paper)] = self.papers[paper].evaluate_claims(self.root)
        return self._cache[("claims", paper)]


def paper_runs(paper: ModuleType) -> list[str]:
    """The run folders of a paper package's reproduction (its specs' names, which are their file stems)."""
    return [e.name for e in paper.SPECS]


def perturbed_runs(paper: ModuleType) -> list[str]:
    """The fragility variants ``<run>-perturbed`` that ``lkm reproduce`` writes for a paper package."""
    return [f"{name}-perturbed" for name in getattr(paper, "PERTURBED", {})]


# -- block builders ------------------------------------------------------------------
@dataclass(frozen=True)
class Block:
    """A generated table: the runs it needs, how it is built from the snapshot, and the
    runs it also reads when they are there (``extra``: the fragility variants)."""

    runs: tuple[str, ...]
    build: Callable[[Snapshot], pd.DataFrame]
    what: str
    extra: tuple[str, ...] = ()


def accuracy_wide(snap: Snapshot, name: str, selected: bool = False) -> pd.DataFrame:
    """Accuracy (%) at each method's selected setting, one column per method, mean ± std
    over splits, the best mean of a row in bold (compared as shown, to 2 decimals);
    with ``selected`` the selected parameters beside each cell."""
    run = snap.run(name)
    best = run.best
    methods = [m for m in run.spec.methods if m.name in set(best["method"])]
    rows = []
    for ds in dict.fromkeys(best["dataset"]):
        sub = best[best["dataset"] == ds].drop_duplicates("method").set_index("method")
        means = {m: f"{RATE * sub.loc[m, 'accuracy']:.2f}" for m in sub.index}
        top = max(means.values(), key=float)
        row = {"dataset": ds}
        for m in methods:
            if m.name not in sub.index:
                row[m.name] = "–"
                continue
            mean = means[m.name]
            cell = f"**{mean}**" if mean == top else mean
            cell += f" ± {RATE * sub.loc[m.name, 'accuracy_std']:.2f}"
            if selected:
                p = sub.loc[m.name, "params"]
                cell += " (" + ", ".join(f"{'σ' if k == 'sigma' else k}* {format_value(p.get(k))}"
                                         for k in run.spec.swept_params(m)) + ")"
            row[m.name] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def claims(snap: Snapshot, paper: str, short: bool) -> pd.DataFrame:
    """The paper's claims table without its ``run`` column; ``short``: the claim and the
    verdict columns only (verdict, on the variant, under the perturbation)."""
    df = snap.claims(paper)
    if short:
        return df[[c for c in df.columns if c in ("#", "the paper's claim") or c.startswith("verdict")]]
    return df.drop(columns=[c for c in ("run",) if c in df.columns])


def _claims_block(key: str, paper: ModuleType, short: bool) -> Block:
    title = getattr(getattr(paper, "claims", None), "TITLE", key)
    what = f"{title}: claims and verdicts" if short else f"{title}: every claim with our measure and verdict"
    return Block(tuple(paper_runs(paper)), lambda s: claims(s, key, short), what, tuple(perturbed_runs(paper)))


def readings_table(snap: Snapshot, paper: ModuleType) -> pd.DataFrame:
    """Every open choice of a paper (readings.yaml) with each reading tried, where it comes
    from (found, whether it contradicts the text, the commit that declared it) and what it
    gives on the rows the choice concerns: accuracy % at the selected setting with its
    95 % interval (one dataset), or the mean over a family of binary tasks."""
    rows = []
    for choice in paper_readings(paper.__name__):
        for reading in choice.readings:
            for base in choice.runs:
                run = snap.run(reading.run_for(base))
                rows.append({"choice": choice.key, "reading": reading.name + (" (stated)" if reading.stated else ""),
                             "found": f"{reading.provenance()} ({reading.commit})",
                             "run": run.name, "what it gives (test accuracy %)": _reading_numbers(run, choice, reading)})
    return pd.DataFrame(rows)


def _reading_numbers(run: Run, choice: Any, reading: Any) -> str:
    patterns = dict(choice.rows).get("method", ("*",))
    names = [m.name for m in run.spec.methods]
    concerned = [n for n in names if any(fnmatchcase(n, p) for p in patterns)]
    wanted = list(dict.fromkeys(reading.method_for(n) for n in concerned if reading.method_for(n) in names))
    families = {d.id: d.task_of or d.id for d in run.spec.datasets}
    out = []
    for family in dict.fromkeys(families.values()):
        ids = [i for i, f in families.items() if f == family]
        for method in wanted:
            best = run.best[run.best["dataset"].isin(ids) & (run.best["method"] == method)]
            if best.empty:
                continue
            if len(ids) == 1:
                interval = records_interval(run.scores(ids[0], method), resampled=resampled_splits(run.spec, ids[0]))
                out.append(f"{family} {method} {RATE * best['accuracy'].iloc[0]:.2f} {interval}")
            else:
                out.append(f"{family} {method} {RATE * best['accuracy'].mean():.2f} (mean of {len(ids)} tasks)")
    return "; ".join(out) or "–"


def _readings_block(paper: ModuleType) -> Block:
    runs = tuple(dict.fromkeys(r.run_for(b) for c in paper_readings(paper.__name__) for r in c.readings for b in c.runs))
    return Block(runs, lambda s: readings_table(s, paper), "the readings of the paper's open choices and what each gives")


def _copy_linking_records(run: Path, to: Path) -> None:
    """A copy of run folder ``run`` at ``to`` whose records folder is a symbolic link to
    ``run``'s (a report only reads records), so the records parsed for the snapshot are
    not parsed again (:meth:`lkm.engine.store.RunStore.records_frame` keys them by file);
    a full copy where links cannot be made."""
    shutil.copytree(run, to, ignore=lambda folder, names: ["records"] if Path(folder) == run else [])
    if (run / "records").is_dir():
        try:
            (to / "records").symlink_to((run / "records").resolve(), target_is_directory=True)
        except OSError:
            shutil.copytree(run / "records", to / "records")


def row_verdict_counts(snap: Snapshot) -> pd.DataFrame:
    """Per paper, the table rows the report compares with the paper's number, by verdict
    (:data:`lkm.reproduction.site.tables.ROW_VERDICTS`; a row of two tables counts twice),
    counted from the snapshot's records (tables rebuilt in a temporary folder, no figures):
    the counts the README and the guide print."""
    import tempfile

    from lkm.engine.store import RunStore
    from lkm.report import build_report
    from lkm.reproduction.site.tables import ROW_VERDICTS
    from lkm.reproduction.site.views import collect
    from lkm.spec import load_spec

    with tempfile.TemporaryDirectory(prefix="lkm-verdicts-") as tmp:
        root = Path(tmp)
        for paper in snap.papers.values():
            for name in paper_runs(paper):
                if (snap.root / name / "spec.yaml").is_file():
                    _copy_linking_records(snap.root / name, root / name)
                    build_report(RunStore(root / name), load_spec(root / name / "spec.yaml"), figures=False)
        site = collect(root, snap.papers, None)
    rows: list[dict[str, Any]] = []
    for view in site.papers:
        counts = view.row_verdicts()
        rows.append({"paper": view.short, "compared rows": sum(counts.values()), **{v: counts[v] for v in ROW_VERDICTS}})
    total = {"paper": "all", **{c: sum(r[c] for r in rows) for c in rows[0] if c != "paper"}} if rows else {}
    return pd.DataFrame([*rows, total] if rows else [])


def claim_counts(snap: Snapshot) -> pd.DataFrame:
    """One row: how many claims the papers have and how many read each verdict
    (:data:`lkm.reproduction.site.views.VERDICT_CLASSES`), counted from every paper's
    ``evaluate_claims`` on the snapshot — the counts the README and the guide state."""
    from collections import Counter

    from lkm.reproduction.site.views import VERDICT_CLASSES, verdict_class

    counts = Counter(verdict_class(v)[0] for key in snap.papers for v in snap.claims(key)["verdict"])
    shown = [name for name in VERDICT_CLASSES if name != "n/a" or counts[name]]
    return pd.DataFrame([{"claims": sum(counts.values()), **{name: counts[name] for name in shown}}])


def doc_blocks(papers: Papers) -> dict[str, Block]:
    """Every block id the docs may use: ``<key>/claims`` and ``<key>/claims-short`` of each
    paper, ``<key>/readings`` of a paper with readings.yaml, and ``<key>/<name>`` for each
    of its ``DOC_BLOCKS`` (the paper's own tables)."""
    out: dict[str, Block] = {}
    for key, paper in papers.items():
        out.update({f"{key}/{name}": block for name, block in getattr(paper, "DOC_BLOCKS", {}).items()})
        out[f"{key}/claims"] = _claims_block(key, paper, False)
        out[f"{key}/claims-short"] = _claims_block(key, paper, True)
        if paper_readings(paper.__name__):
            out[f"{key}/readings"] = _readings_block(paper)
    every = tuple(r for paper in papers.values() for r in paper_runs(paper))
    out["all/claims"] = Block(every, claim_counts, "the papers' claims counted by verdict",
                              tuple(r for paper in papers.values() for r in perturbed_runs(paper)))
    out["all/row-verdicts"] = Block(every, row_verdict_counts, "the report's compared rows per paper, by verdict")
    out["all/benchmark"] = Block((BENCHMARK_RUN,), benchmark_methods, "the benchmark's methods by average rank")
    out["all/benchmark-tests"] = Block((BENCHMARK_RUN,), benchmark_tests,
                                       "the benchmark's Friedman test and the pairs each test separates")
    out["all/benchmark-edges"] = Block((BENCHMARK_RUN,), benchmark_edges,
                                       "per method, its budget and the share of selections at a range edge")
    return out


def benchmark_edges(snap: Snapshot) -> pd.DataFrame:
    """Per method of the benchmark (spec order): the settings searched, the share of outer
    fits with some range parameter at an edge (issue 42's goal: at most 10 %), the share of
    its settings searched with one there (a blind choice's share), and per tuned
    parameter its candidates' span with the shares at the smallest and at the largest
    (:func:`lkm.report.tuning.grid_edge_table`, condensed to one row per method)."""
    from lkm.report.ranking import load_benchmark_run
    from lkm.report.tuning import ANY_RANGE, grid_edge_table

    run = snap.root / BENCHMARK_RUN
    if not (run / "spec.yaml").is_file():
        raise DocsError(f"run {BENCHMARK_RUN!r} is not in {snap.root}/")
    spec, records, _ = load_benchmark_run(run)
    table = grid_edge_table(spec, records)
    rows = []
    for method, part in table.groupby("method", sort=False):
        head = part[part["parameter"] == ANY_RANGE].iloc[0]
        params = part[part["parameter"] != ANY_RANGE]
        rows.append({
            "method": method, "settings searched": int(head["settings searched"]),
            "% of fits at a range edge": head["% at an edge"],
            "% of settings at a range edge": head["% of settings searched at an edge"],
            "per parameter: candidates (% at smallest / % at largest)": "; ".join(
                f"{r['parameter']} {r['grid']} ({r['% at the smallest']} / {r['% at the largest']})"
                for _, r in params.iterrows()),
        })
    return pd.DataFrame(rows)


def benchmark_methods(snap: Snapshot) -> pd.DataFrame:
    """The benchmark's methods by average rank (:func:`lkm.report.ranking.benchmark_summary`)."""
    return _benchmark(snap)[0]


def benchmark_tests(snap: Snapshot) -> pd.DataFrame:
    """One row: N, k, the Iman–Davenport p, the critical difference and how many of the
    pairs Nemenyi, Wilcoxon–Holm and the Bayesian signed-rank test separate."""
    from lkm.numerics.stats import format_p

    r = _benchmark(snap)[1]
    c = r.counts
    return pd.DataFrame([{
        "data sets": r.friedman.n_datasets, "methods": r.friedman.n_methods,
        "Iman–Davenport p": format_p(r.friedman.p_f), "Nemenyi CD (ranks)": f"{r.cd:.2f}",
        "pairs": c["pairs"], "separated by Nemenyi": c["nemenyi"], "by Wilcoxon–Holm": c["wilcoxon_holm"],
        "decided by Bayes (P − 2 MC errors ≥ 0.95)": c["bayes_decided"], "practically equivalent (Bayes)": c["bayes_equivalent"],
    }])


def _benchmark(snap: Snapshot) -> tuple[pd.DataFrame, Any]:
    from lkm.report.ranking import benchmark_summary

    if ("benchmark",) not in snap._cache:
        run = snap.root / BENCHMARK_RUN
        if not (run / "spec.yaml").is_file():
            raise DocsError(f"run {BENCHMARK_RUN!r} is not in {snap.root}/ (`lkm run {BENCHMARK_RUN} --jobs 2`, "
                            "then `lkm docs snapshot`)")
        snap._cache[("benchmark",)] = benchmark_summary(run)
    return snap._cache[("benchmark",)]


def render(block_id: str, snap: Snapshot, blocks: dict[str, Block]) -> str:
    """The Markdown of one block between its markers: the table with a blank line on
    either side, so that Markdown ends the table before the closing marker."""
    if block_id not in blocks:
        raise DocsError(f"unknown block {block_id!r}{did_you_mean(block_id, blocks)}; known: {', '.join(blocks)}")
    return "\n" + markdown_table(blocks[block_id].build(snap)) + "\n\n"


# -- build / check --------------------------------------------------------------------
def _docs(root: Path, papers: Papers) -> list[tuple[str, str]]:
    """``(relative path, text)`` of each of :func:`doc_files` present under ``root``."""
    return [(rel, (root / rel).read_text(encoding="utf-8")) for rel in doc_files(papers) if (root / rel).is_file()]


def _rewrite(text: str, snap: Snapshot) -> tuple[str, list[tuple[str, str, str | None]]]:
    """``text`` with every block rebuilt, and per block (id, committed body, generated body
    or None when it cannot be built, with the reason in place of the committed body)."""
    found: list[tuple[str, str, str | None]] = []
    blocks = doc_blocks(snap.papers)

    def sub(m: re.Match) -> str:
        try:
            body = render(m["id"], snap, blocks)
        except LkmError as exc:
            found.append((m["id"], str(exc), None))
            return m.group(0)
        found.append((m["id"], m["body"], body))
        return m.group(1) + body + m.group(4)

    return BLOCK_RE.sub(sub, text), found


def _markers(text: str) -> str | None:
    begins, ends = len(BEGIN_RE.findall(text)), len(END_RE.findall(text))
    if begins != ends or begins != len(BLOCK_RE.findall(text)):
        return f"unbalanced markers ({begins} lkm:begin, {ends} lkm:end)"
    return None


def _diff_summary(old: str, new: str) -> str:
    a, b = old.splitlines(), new.splitlines()
    differ = [i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]
    i = differ[0]

    def cut(lines: list[str]) -> str:
        return "(none)" if i >= len(lines) else (lines[i] if len(lines[i]) <= 70 else lines[i][:69] + "…")

    return (f"{len(differ)} of {max(len(a), len(b))} lines differ; first, line {i + 1}: "
            f"committed {cut(a)!r}, records give {cut(b)!r}")


#: How often :func:`build` rebuilds a file that was edited while its blocks were built.
EDIT_RETRIES = 3


def build(papers: Papers, root: Path = Path("."), snapshot_root: Path | None = None) -> list[str]:
    """Rewrite every block of :func:`doc_files` from the snapshot; returns the files
    changed. Raises :class:`DocsError` naming every block that cannot be built.

    Each file is read just before its blocks are built and written only if it still
    holds what was read (else rebuilt from the edited text): prose edited while a build
    runs is kept, never overwritten with the text read at the start."""
    snap = Snapshot(snapshot_root or root / SNAPSHOT, papers)
    changed, errors = [], []
    for rel in doc_files(papers):
        path = root / rel
        if not path.is_file():
            continue
        for _attempt in range(EDIT_RETRIES):
            text = path.read_text(encoding="utf-8")
            if (bad := _markers(text)) is not None:
                errors.append(f"{rel}: {bad}")
                break
            new, found = _rewrite(text, snap)
            if path.read_text(encoding="utf-8") != text:
                continue  # edited meanwhile: build again from the edited text
            errors += [f"{rel}: {bid}: {reason}" for bid, reason, body in found if body is None]
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed.append(rel)
            break
        else:
            errors.append(f"{rel}: edited during each of {EDIT_RETRIES} builds of its blocks; run `lkm docs build` again")
    if errors:
        raise DocsError("some blocks could not be built:\n" + "\n".join(errors))
    return changed


def check(papers: Papers, root: Path = Path("."), snapshot_root: Path | None = None) -> list[str]:
    """One line per problem: a block whose committed table differs from what the snapshot
    gives, a block that cannot be built, unbalanced markers, a figure the docs show that
    is missing. Empty when the docs are current."""
    snap = Snapshot(snapshot_root or root / SNAPSHOT, papers)
    problems = [f"{rel}: missing" for rel in doc_files(papers) if not (root / rel).is_file()]
    for rel, text in _docs(root, papers):
        if (bad := _markers(text)) is not None:
            problems.append(f"{rel}: {bad}")
            continue
        for bid, committed, generated in _rewrite(text, snap)[1]:
            if generated is None:
                problems.append(f"{rel}: {bid}: cannot build: {committed}")
            elif committed != generated:
                problems.append(f"{rel}: {bid}: stale — {_diff_summary(committed, generated)}")
        for m in FIGURE_RE.finditer(text):
            if not (root / FIGURES / m["paper"] / m["file"]).is_file():
                problems.append(f"{rel}: figure {FIGURES / m['paper'] / m['file']} is missing")
    return problems


# -- snapshot ---------------------------------------------------------------------------
def cited_runs(papers: Papers, root: Path = Path(".")) -> list[str]:
    """The runs the blocks of :func:`doc_files` read, in first-use order."""
    runs: dict[str, None] = {}
    blocks = doc_blocks(papers)
    for _rel, text in _docs(root, papers):
        for m in BLOCK_RE.finditer(text):
            if m["id"] in blocks:
                runs.update(dict.fromkeys(blocks[m["id"]].runs + blocks[m["id"]].extra))
    return list(runs)


def cited_figures(papers: Papers, root: Path = Path(".")) -> list[tuple[str, str]]:
    """``(paper, file)`` of every figure under docs/figures the docs show."""
    out: dict[tuple[str, str], None] = {}
    for _rel, text in _docs(root, papers):
        for m in FIGURE_RE.finditer(text):
            out[(m["paper"], m["file"])] = None
    return list(out)


def write_run_snapshot(run_dir: Path, dest: Path) -> int:
    """Copy run folder ``run_dir`` into ``dest`` in compact form; returns the records kept
    (those of the run's plan, or all when it has no plan.json)."""
    from lkm.engine.store import RunStore, json_default

    plan_file = run_dir / "plan.json"
    plan = json.loads(plan_file.read_text()) if plan_file.is_file() else {}
    task_ids = set(plan.get("task_ids", []))
    records = [r for r in RunStore(run_dir).iter_records() if not task_ids or r.get("task_id") in task_ids]
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "records").mkdir(parents=True)
    for name in ("spec.yaml", "provenance.json", "requirements.lock.txt"):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, dest / name)
    (dest / "plan.json").write_text(json.dumps(
        {"unavailable": plan.get("unavailable", {}), "splits": plan.get("splits", {}), "records": len(records)},
        indent=1, sort_keys=True) + "\n")
    blob = "".join(json.dumps(r, default=json_default) + "\n" for r in records).encode()
    with open(dest / "records" / SNAPSHOT_PART, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
        gz.write(blob)  # no name, no mtime: the same records give the same bytes
    return len(records)


def _figure_source(results: Path, file: str) -> Path | None:
    """``results/<run>/figures/<figure>.png`` (or ``results/<folder>/<figure>.png``, the
    benchmark's summary folder) for a docs figure named ``<run>-<figure>.png``."""
    stem = file.removesuffix(".png")
    for i in [i for i, ch in enumerate(stem) if ch == "-"]:
        for src in (results / stem[:i] / "figures" / f"{stem[i + 1:]}.png", results / stem[:i] / f"{stem[i + 1:]}.png"):
            if src.is_file():
                return src
    return None


@dataclass
class SnapshotReport:
    runs: dict[str, int] = field(default_factory=dict)  # run -> records kept
    kept: list[str] = field(default_factory=list)  # cited runs absent from results/: committed snapshot kept
    absent: list[str] = field(default_factory=list)  # cited runs in neither results/ nor the snapshot
    removed: list[str] = field(default_factory=list)  # snapshot runs no longer cited
    figures: list[str] = field(default_factory=list)
    missing_figures: list[str] = field(default_factory=list)
    bytes: int = 0
    pack_version: str = ""  # the results pack's version (its manifest, PACK.json)


def snapshot(papers: Papers, results: Path = Path("results"), root: Path = Path(".")) -> SnapshotReport:
    """Copy every run the docs cite from ``results/`` into ``docs/runs/`` and every figure
    they show into ``docs/figures/``. A cited run missing from ``results/`` keeps its
    committed snapshot, except a ``<run>-perturbed`` variant whose run was refreshed
    without it; snapshot runs no longer cited are removed."""
    report = SnapshotReport()
    dest_root = root / SNAPSHOT
    cited = cited_runs(papers, root)
    for name in cited:
        src = results / name
        base = name.removesuffix("-perturbed")
        if (src / "spec.yaml").is_file() and (src / "records").is_dir():
            report.runs[name] = write_run_snapshot(src, dest_root / name)
        elif base != name and base in report.runs and (dest_root / name).is_dir():
            shutil.rmtree(dest_root / name)  # a fragility variant must not outlive the run it perturbs
            report.removed.append(name)
        elif (dest_root / name / "spec.yaml").is_file():
            report.kept.append(name)
        else:
            report.absent.append(name)
    if dest_root.is_dir():
        for d in sorted(dest_root.iterdir()):
            if d.is_dir() and d.name not in cited and (d / "spec.yaml").is_file():
                shutil.rmtree(d)
                report.removed.append(d.name)
    for paper, file in cited_figures(papers, root):
        if paper in NOT_FROM_RUNS:
            continue
        figure = _figure_source(results, file)
        if figure is None:
            report.missing_figures.append(f"{paper}/{file}")
            continue
        (root / FIGURES / paper).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(figure, root / FIGURES / paper / file)
        report.figures.append(f"{paper}/{file}")
    if dest_root.is_dir():  # the results pack: its manifest (version, sha256 of each file) and pin
        from lkm.report.pack import pin_pack, verify_pack, write_manifest

        report.pack_version = write_manifest(dest_root).version
        pin_pack(verify_pack(dest_root), root)
    report.bytes = sum(p.stat().st_size for p in dest_root.rglob("*") if p.is_file()) if dest_root.is_dir() else 0
    return report
