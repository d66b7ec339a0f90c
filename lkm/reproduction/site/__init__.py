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
:class:`lkm.reproduction.paper.Difference`) and a link to the paper's "where we differ"
section.

The HTML parses with no error under the HTML5 algorithm (html5lib in strict mode) and is
well-formed XML (polyglot HTML5); the tests check both.

The package: :mod:`~lkm.reproduction.site.tables` reads a run folder's tables and flags
the rows that differ from the paper; :mod:`~lkm.reproduction.site.views` gathers what the
report shows (:func:`collect`); :mod:`~lkm.reproduction.site.shared` holds what both
renderings show; :mod:`~lkm.reproduction.site.html` and
:mod:`~lkm.reproduction.site.markdown` render it (:func:`render_html`,
:func:`render_markdown`); this module writes the folder (:func:`build_site`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lkm.reproduction.site.html import render_html
from lkm.reproduction.site.markdown import render_markdown
from lkm.reproduction.site.tables import (
    DIFF_POINTS,
    NO_CAUSE,
    Flag,
    ReadingVerdict,
    Table,
    cause_finder,
    contradictions,
    is_flagged,
    reading_finder,
    row_status,
    with_differences,
)
from lkm.reproduction.site.views import (
    Site,
    collect,
    counts_line,
    differing_line,
    slug,
    verdict_class,
)


def _all_figures(site: Site) -> list[tuple[str, Path, str]]:
    """``(caption, source, path in the report)`` of every figure shown."""
    out = [f for paper in site.papers for run in paper.runs for f in run.figures]
    return out + list(site.cross.figures)


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


def build_site(results: Path, papers: dict[str, Any], cross_spec: str | None, out: Path | None = None,
               smoke: bool = False) -> SiteFiles:
    """Write ``out`` (default ``results/report``, ``results/report-smoke`` with ``smoke``):
    ``index.html``, ``report.md`` and ``figures/``, from the recorded runs under ``results``
    of the paper packages ``papers`` and of the cross-paper spec ``cross_spec``."""
    from lkm.files import atomic_write

    results = Path(results)
    out = Path(out) if out is not None else results / ("report-smoke" if smoke else "report")
    site = collect(results, papers, cross_spec, smoke)
    out.mkdir(parents=True, exist_ok=True)
    figures = _copy_figures(site, out)
    index = atomic_write(out / "index.html", render_html(site))
    markdown = atomic_write(out / "report.md", render_markdown(site))
    missing = [f"{p.key}: {m}" for p in site.papers for m in p.missing]
    if not site.cross.exists:
        missing.append(f"cross-paper: {site.cross.note}")
    return SiteFiles([index, markdown, *figures], index, markdown, dict(counts_line(site)), len(site.claims), missing,
                     differing_line(site))


__all__ = [
    "DIFF_POINTS",
    "NO_CAUSE",
    "Flag",
    "ReadingVerdict",
    "SiteFiles",
    "Table",
    "build_site",
    "cause_finder",
    "collect",
    "contradictions",
    "is_flagged",
    "reading_finder",
    "row_status",
    "slug",
    "render_html",
    "render_markdown",
    "verdict_class",
    "with_differences",
]
