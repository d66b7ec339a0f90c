"""The report as Markdown (:func:`render_markdown`): ``report.md``, the same content as the
HTML page."""

from __future__ import annotations

import html
import re

from lkm.report.core import markdown_table
from lkm.reproduction.claims import EFFECT_COLUMNS
from lkm.reproduction.claims import SMOKE_LABEL as SMOKE_PREFIX
from lkm.reproduction.site.shared import (
    TITLE,
    datasets_rows,
    environment_rows,
    friedman_pairs,
    settings_pairs,
    strip_links,
)
from lkm.reproduction.site.tables import DASH, FLAG_COLUMN, Table
from lkm.reproduction.site.views import Site, counts_line, differing_line


def md_table(columns: list[str], rows: list[list[str]]) -> str:
    """Cells as one-line text through the project's one Markdown table writer."""
    import pandas as pd

    return markdown_table(pd.DataFrame([[" ".join(str(v).split()) for v in row] for row in rows],
                                       columns=[" ".join(str(c).split()) for c in columns]))


def _table_md(t: Table) -> str:
    columns, rows = list(t.columns), [list(r) for r in t.rows]
    if t.flags:
        columns.append(FLAG_COLUMN)
        for row, flag in zip(rows, t.flags, strict=True):
            row.append(f"{flag} ([where we differ](#{t.link}))" if flag and t.link else flag)
    out = [f"**{t.caption}**", "", md_table(columns, rows)] if t.caption else [md_table(columns, rows)]
    out += [f"\n{strip_links(n)}" for n in t.notes]
    return "\n".join(out) + "\n"


def render_markdown(site: Site) -> str:
    out = [f"# {TITLE}{' — smoke run' if site.smoke else ''}", "",
           f"Built {site.built_at} from `{site.results.name or site.results}/` "
           f"(`lkm report --all{' --smoke' if site.smoke else ''}` rebuilds it; `index.html` beside this file has the same content).", ""]
    if site.smoke:
        out += [f"> **Smoke run** (few datasets and settings): every verdict is “{SMOKE_PREFIX}”.", ""]
    out += ['<a id="claims-summary"></a>', "", "## The papers’ claims and our verdicts", "",
            " · ".join(f"**{name}**: {n}" for name, n in counts_line(site)) + f" · claims: {len(site.claims)}", "",
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
                    re.sub(r"^(#+)", r"\1##", strip_links(paper.differ), flags=re.M), ""]
        out += [f"Wall time of the recorded runs: {paper.wall_time}.", ""]
        for run in paper.runs:
            out += [f'<a id="{run.anchor}"></a>', "", f"### {run.name} (`{run.spec_path}`)", ""]
            if run.description:
                out += [strip_links(run.description), ""]
            if not run.exists:
                out += [f"**Not run yet:** `{run.make}`", ""]
                continue
            out += [_table_md(t) for t in run.tables]
            for caption, _, target in run.figures:
                out += [f"![{run.name}: {caption}]({target})", ""]
            if run.provenance:
                out += ["Settings and data versions:", ""]
                out += [f"- {k}: {_plain(v)}" for k, v in settings_pairs(run.provenance, run.perturbed)]
                ds = datasets_rows(run.provenance)
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
        out += [f"- {k}: {_plain(v)}" for k, v in friedman_pairs(cross.friedman)] + [""]
    for caption, _, target in cross.figures:
        out += [f"![{caption}]({target})", ""]
    pairs, packages, blas, wall = environment_rows(site)
    out += ['<a id="environment"></a>', "", "## Environment", ""] + [f"- {k}: {v}" for k, v in pairs] + [""]
    out += [_table_md(wall), _table_md(packages), _table_md(blas)]
    return "\n".join(out).rstrip() + "\n"


def _plain(html_text: str) -> str:
    """An HTML fragment of :func:`settings_pairs` as Markdown text."""
    text = re.sub(r"</?code>", "`", html_text)
    return html.unescape(re.sub(r"<[^>]+>", "", text))
