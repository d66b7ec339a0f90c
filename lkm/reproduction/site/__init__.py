"""The report of every reproduction in one folder: ``results/report/index.html`` (static:
no server, no network; figures and tables copied beside it, a small inline stylesheet and
one script that only adds to a page complete without it, and ``plotly.min.js`` for the
interactive twins of the sweep and benchmark figures, each PNG shown until its twin is
drawn) and the same content as
``report.md`` — what `lkm reproduce all` ends with and `lkm report --all` rebuilds from
the recorded runs (no fitting).

It reads only files the runs wrote:

- each paper's claims table ``RESULTS/<key>_claims[-smoke]/claims.json`` (the first
  screen: every claim of every paper with its verdict, effect, CI and test, coloured by
  verdict class, filterable by paper and verdict) and the other tables of that folder;
- each experiment's run folder ``RESULTS/<spec name>[-smoke]/``: ``tables/*.json``
  (caption, notes, columns and the cells as shown, :func:`lkm.report.tables.table_json`;
  the ``.csv``, ``.tex`` and ``.md`` twins copied to ``tables/<run>/`` and linked under
  each table), ``figures/**/*.png`` (copied to ``figures/<run>/``, shown at their
  natural size), ``provenance.json`` (settings, data versions, seconds, environment) and
  ``plan.json`` (datasets that could not be had); a folder whose tables have no ``.json``
  was written by an older lkm: the report names it and the command that rewrites it;
- the cross-paper ranking ``RESULTS/cross_paper_summary[-smoke]/`` when present;
- the records of the runs whose figures have interactive twins (sweeps, the benchmark:
  :mod:`~lkm.reproduction.site.interactive`), read as the PNGs' builders read them;
- the "where we differ" section of ``docs/reproductions/<key>.md`` when the source tree
  is at hand (rendered by markdown-it-py, raw HTML off, links kept as their text: every
  link of the report stays inside its folder).

Where a table has the paper's number beside ours for a rate in percent (``X (ours)`` and
``X (paper)``; ``paper's X`` and ``ours, …: X``; ``ours`` and ``paper`` with an
accuracy/error ``metric``; or "ours (paper)" cells), the report adds the difference and
gives every such row a verdict (:data:`ROW_VERDICTS`: *reproduced* when our 95 % interval
lies within the paper's stated margin of its number, *consistent*, *differs*, *untested*
without an interval; :func:`lkm.reproduction.site.tables.equivalence`), what the paper's
readings give where it differs, and for a row that differs or is untested the named
cause (the first entry of the paper's ``differences.yaml`` that matches the row,
:class:`lkm.reproduction.paper.Difference`) and a link to the paper's "where we differ"
section; a wide table leads with those columns and folds the full table below.

The HTML parses with no error under the HTML5 algorithm (html5lib in strict mode) and is
well-formed XML (polyglot HTML5); the tests check both.

The package: :mod:`~lkm.reproduction.site.tables` reads a run folder's tables and flags
the rows that differ from the paper; :mod:`~lkm.reproduction.site.views` gathers what the
report shows (:func:`collect`); :mod:`~lkm.reproduction.site.shared` holds what both
renderings show; :mod:`~lkm.reproduction.site.html` and
:mod:`~lkm.reproduction.site.markdown` render it from the Jinja2 templates of
``templates/`` (:func:`render_html`, :func:`render_markdown`); this module writes the
folder (:func:`build_site`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lkm.reproduction.site.html import SCRIPT, render_html
from lkm.reproduction.site.interactive import interactive_figures, write_plotly_js
from lkm.reproduction.site.markdown import render_markdown
from lkm.reproduction.site.tables import (
    NO_CAUSE,
    ROW_VERDICTS,
    Comparison,
    ReadingResult,
    ReadingsTried,
    Table,
    cause_finder,
    contradictions,
    equivalence,
    reading_finder,
    row_verdict,
    with_differences,
)
from lkm.reproduction.site.views import (
    Site,
    collect,
    counts_line,
    row_verdicts_line,
    slug,
    verdict_class,
)

#: The folders of the report that hold copies of the runs' files (stale copies removed).
COPIED = ("figures", "tables")


def _shown_files(site: Site) -> list[tuple[str, Path, str]]:
    """``(caption, source, path in the report)`` of every figure shown and of every
    table's CSV, LaTeX and Markdown file linked."""
    runs = [run for paper in site.papers for run in paper.runs]
    tables = [t for paper in site.papers for t in (*paper.extra_tables, *filter(None, [paper.claims_table]))]
    tables += [t for run in runs for t in run.tables] + list(site.cross.tables)
    return ([f for run in runs for f in run.figures] + list(site.cross.figures)
            + [f for t in tables for f in t.files])


def _copy_files(files: list[tuple[str, Path, str]], out: Path) -> list[Path]:
    """Copy each ``(caption, source, path in the report)`` into ``out`` (unchanged files
    kept), and remove the files under :data:`COPIED` the report no longer shows."""
    wanted: dict[Path, Path] = {out / unquote(target): src for _, src, target in files}
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
    for folder in (out / name for name in COPIED):
        if folder.is_dir():
            for p in sorted(folder.rglob("*"), reverse=True):
                if p.is_file() and p not in wanted:
                    p.unlink()
                elif p.is_dir() and not any(p.iterdir()):
                    p.rmdir()
            if not any(folder.iterdir()):
                folder.rmdir()
    return written


class SiteFiles(list[Path]):
    """The files of the report (``page``, its index.html, and ``markdown`` first) and its
    claims counts. (Not ``index``: that would hide ``list.index``.)"""

    def __init__(self, files: Iterable[Path], page: Path, markdown: Path, counts: dict[str, int],
                 claims: int, missing: list[str], differing: str = "") -> None:
        super().__init__(files)
        self.page, self.markdown, self.counts, self.claims, self.missing = page, markdown, counts, claims, missing
        self.differing = differing


def build_site(results: Path, papers: dict[str, Any], cross_spec: str | None, out: Path | None = None,
               smoke: bool = False, source: str = "", rebuild: str = "") -> SiteFiles:
    """Write ``out`` (default ``results/report``, ``results/report-smoke`` with ``smoke``):
    ``index.html``, ``report.md``, ``report.js``, ``plotly.min.js`` (with interactive figures), ``figures/`` and ``tables/``, from the recorded runs under ``results``
    of the paper packages ``papers`` and of the cross-paper spec ``cross_spec``; ``source``
    and ``rebuild`` say on the page where the runs came from and what rebuilds it."""
    from lkm.files import atomic_write

    results = Path(results)
    out = Path(out) if out is not None else results / ("report-smoke" if smoke else "report")
    site = collect(results, papers, cross_spec, smoke)
    if source or rebuild:  # e.g. a results pack: "the results pack docs/runs (version …)"
        site.source, site.rebuild = source or site.source, rebuild or site.rebuild
    out.mkdir(parents=True, exist_ok=True)
    copied = _copy_files([*_shown_files(site), ("script", SCRIPT, SCRIPT.name)], out)
    site.interactive = interactive_figures(site)
    if site.interactive:  # plotly.js once beside the page, for every figure
        copied.append(write_plotly_js(out))
    index = atomic_write(out / "index.html", render_html(site))
    markdown = atomic_write(out / "report.md", render_markdown(site))
    missing = [f"{p.key}: {m}" for p in site.papers for m in p.missing]
    if site.cross.note:
        missing.append(f"cross-paper: {site.cross.note}")
    return SiteFiles([index, markdown, *copied], index, markdown, dict(counts_line(site)), len(site.claims), missing,
                     row_verdicts_line(site))


__all__ = [
    "NO_CAUSE",
    "ROW_VERDICTS",
    "Comparison",
    "ReadingResult",
    "ReadingsTried",
    "SiteFiles",
    "Table",
    "build_site",
    "cause_finder",
    "collect",
    "contradictions",
    "equivalence",
    "reading_finder",
    "row_verdict",
    "slug",
    "render_html",
    "render_markdown",
    "verdict_class",
    "with_differences",
]
