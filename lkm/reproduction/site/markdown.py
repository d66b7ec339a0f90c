"""The report as Markdown (:func:`render_markdown`): ``report.md``, the same content as the
HTML page, from the template ``templates/report.md.j2``. Every value the template prints
passes :func:`lkm.report.tables.markdown_text` (text that would open raw HTML, such as a
hostile ``<script>`` in a dataset name, is escaped), except the blocks this module built
and marked as Markdown already (:class:`markupsafe.Markup`: tables, whose cells the table
writer escaped)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from markupsafe import Markup

from lkm.report.tables import markdown_table, markdown_text
from lkm.reproduction.claims import EFFECT_COLUMNS
from lkm.reproduction.claims import SMOKE_LABEL as SMOKE_PREFIX
from lkm.reproduction.site.shared import (
    TEMPLATES,
    TITLE,
    datasets_table,
    environment_rows,
    friedman_pairs,
    settings_pairs,
    strip_links,
)
from lkm.reproduction.site.tables import DASH, FLAG_COLUMN, Table
from lkm.reproduction.site.views import (
    ROW_VERDICT_RULE,
    PaperView,
    Site,
    counts_line,
    row_verdicts_line,
)


def md_table(columns: list[str], rows: list[list[str]], raw_html: bool = False) -> Markup:
    """Cells as one-line text through the project's one Markdown table writer (cells
    escaped unless ``raw_html``: cells this module escaped itself)."""
    import pandas as pd

    return Markup(markdown_table(pd.DataFrame([[" ".join(str(v).split()) for v in row] for row in rows],
                                              columns=[" ".join(str(c).split()) for c in columns]), raw_html=raw_html))


def table_md(t: Table) -> str:
    """A table with its caption, flag column (each named cause a link ``[n]`` to it),
    the causes numbered once under it (:func:`causes_md`) and notes."""
    columns, rows = list(t.columns), [list(r) for r in t.rows]
    if t.flags:
        columns.append(FLAG_COLUMN)
        for i, row in enumerate(rows):
            row.append("; ".join(f"{text} [[{n}]](#{t.cause_anchor(n)})" if n else text for text, n in t.flag_parts(i)))
    out = [f"**{markdown_text(t.caption)}**", "", md_table(columns, rows)] if t.caption else [md_table(columns, rows)]
    out += causes_md(t)
    out += [f"\n{markdown_text(strip_links(n))}" for n in t.notes]
    return Markup("\n".join(out) + "\n")


def causes_md(t: Table) -> list[str]:
    """The causes the rows of ``t`` link, each once with its anchor, then the paper's
    "where we differ" link."""
    if not t.causes:
        return []
    where = f" (more in [where we differ](#{t.link}))" if t.link else ""
    return [f"\nWhy, by the rows' marker [n]{where}:", "",
            *(f'{n}. <a id="{t.cause_anchor(n)}"></a>{markdown_text(strip_links(c))}' for n, c in enumerate(t.causes, 1))]


def claims_summary(site: Site) -> str:
    """The first screen: every claim of every paper with its verdict."""
    rows = [[f"[{p.short}](#{p.anchor})", c.number, f"[{c.text}](#{c.anchor})", c.verdict,
             *(c.cells.get(col) or DASH for col in EFFECT_COLUMNS)] for p in site.papers for c in p.claims]
    return md_table(["paper", "#", "the paper's claim", "our verdict", *EFFECT_COLUMNS], rows)


def claims_table(paper: PaperView) -> str:
    """A paper's claims table, each row carrying its claim's anchor."""
    first, *rest = paper.claims_columns
    rows = [[f'<a id="{c.anchor}"></a>{markdown_text(c.cells.get(first, ""))}',
             *(markdown_text(c.cells.get(col, "")) for col in rest)] for c in paper.claims]
    return md_table([markdown_text(c) for c in paper.claims_columns], rows, raw_html=True)


def demote(text: str) -> str:
    """Markdown headings two levels down (copied prose sits under a ``###`` heading)."""
    return re.sub(r"^(#+)", r"\1##", text, flags=re.M)


def _escaped(value: Any) -> Any:
    """What the template prints: Markdown built here as it is, any other text escaped."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return markdown_text(value)


@cache
def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=False, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=_escaped)
    env.filters.update(strip_links=strip_links, demote=demote)
    env.globals.update(table=table_md, md_table=md_table, claims_table=claims_table, settings_pairs=settings_pairs,
                       datasets_table=datasets_table, friedman_pairs=friedman_pairs)
    return env


def render_markdown(site: Site) -> str:
    """The text of ``report.md``."""
    text = _environment().get_template("report.md.j2").render(
        site=site, title=TITLE, smoke_prefix=SMOKE_PREFIX, counts=counts_line(site), differing=row_verdicts_line(site),
        verdict_rule=ROW_VERDICT_RULE,
        claims_summary=Markup(claims_summary(site)), environment=environment_rows(site))
    return text.rstrip() + "\n"
