"""The report as one static HTML page (:func:`render_html`), from the Jinja2 templates of
``templates/`` with autoescaping on: polyglot HTML5 (parses with no error under the HTML5
algorithm and as XML), a small inline stylesheet, and one script (``report.js``, copied
beside the page) that only adds to a page complete without it: the claims' filters and
sortable columns. Markdown prose (notes, descriptions, the "where we differ" text) is
rendered by markdown-it-py with raw HTML off and links kept as their text (every link of
the report stays inside its folder)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from lkm.report.formatting import ci_column
from lkm.reproduction.claims import EFFECT_COLUMNS
from lkm.reproduction.claims import SMOKE_LABEL as SMOKE_PREFIX
from lkm.reproduction.site.shared import (
    TEMPLATES,
    TITLE,
    datasets_table,
    environment_rows,
    friedman_pairs,
    settings_pairs,
)
from lkm.reproduction.site.tables import DASH, FLAG_COLUMN, Table
from lkm.reproduction.site.views import (
    ROW_VERDICT_RULE,
    PaperView,
    Site,
    counts_line,
    row_verdicts_line,
    slug,
    verdict_class,
)

#: The script the page loads, copied beside it.
SCRIPT = TEMPLATES / "report.js"
#: Tables with more rows than this are folded (``<details>``).
FOLD_ROWS = 30
#: Tables shown folded whatever their length (secondary to the paper's numbers).
FOLDED = frozenset({"timing", "sweep", "knn_invariance_rows", "scaling_sizes"})
#: A table wider than this many columns leads with its :attr:`Table.lead` columns and
#: folds the full table below them.
WIDE = 10


def css_class(name: str) -> str:
    """The CSS class of a verdict class (``v-reading-dependent``)."""
    return "v-" + name.replace(" ", "-").replace("/", "")


def png_size(path: Path) -> tuple[int, int]:
    """Width and height of an image (Pillow reads the header only); (0, 0) when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.size
    except (OSError, UnidentifiedImageError):
        return 0, 0


# -- Markdown prose -> HTML ----------------------------------------------------------------
def _text_only(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    """A link's opening or closing tag: nothing (its text stays)."""
    return ""


def _image_as_text(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    """An image: its alt text."""
    return self.renderInlineAsText(tokens[idx].children or [], options, env)


def _heading(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    """A heading of copied prose as ``h4``: below the section it sits in."""
    tokens[idx].tag = "h4"
    return self.renderToken(tokens, idx, options, env)


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    for rule in ("link_open", "link_close"):
        md.add_render_rule(rule, _text_only)
    md.add_render_rule("image", _image_as_text)
    for rule in ("heading_open", "heading_close"):
        md.add_render_rule(rule, _heading)
    return md


def markdown_html(text: str) -> Any:
    """Markdown blocks as HTML (raw HTML escaped, links as their text)."""
    from markupsafe import Markup

    return Markup(_markdown().render(str(text or "")))


def inline_markdown_html(text: str) -> Any:
    """One line of Markdown (``**bold**``, ```code```, ``*em*``) as HTML, no paragraph."""
    from markupsafe import Markup

    return Markup(_markdown().renderInline(str(text or "")))


# -- what the templates ask -----------------------------------------------------------------
def shown_columns(t: Table) -> tuple[list[int], bool]:
    """The columns of ``t`` shown first (indices) and whether the full table is folded
    below them: a table wider than :data:`WIDE` columns (its flag column counted) with a
    :attr:`Table.lead` leaving two or more columns out leads with those; any other shows
    every column."""
    every = list(range(len(t.columns)))
    lead = [t.columns.index(c) for c in t.lead if c in t.columns]
    if lead and len(t.columns) + bool(t.flags) > WIDE and len(t.columns) - len(lead) >= 2:
        return lead, True
    return every, False


def is_folded(t: Table) -> bool:
    """A table shown folded (``<details>``): secondary, or long with no row that differs from the paper."""
    return t.name in FOLDED or (len(t.rows) > FOLD_ROWS and not t.differs)


def column_class(t: Table, j: int) -> str:
    """``ci`` for a column of 95 % intervals (hidden in the leading table on a narrow
    screen: the flag text gives the interval and the full table keeps it)."""
    return "ci" if t.columns[j].endswith(ci_column("")) else ""


def cell_class(t: Table, j: int, value: str) -> str:
    """``num`` for a numeric column; ``nw`` (no wrap) for a short dataset or method name
    and a short "mean ± std" or "[low, high]" cell; and :func:`column_class`."""
    if t.numeric[j]:
        return "num"
    short = len(value) <= 24 and ("±" in value or value.startswith("["))
    nowrap = short or (t.columns[j] in ("dataset", "method") and len(value) <= 18)
    return " ".join(c for c in ("nw" if nowrap else "", column_class(t, j)) if c)


def run_links(site: Site, paper: PaperView, value: str) -> list[tuple[str, str | None]]:
    """``(run name, anchor or None)`` of a claims table's ``run`` cell."""
    out = []
    for name in (x.strip() for x in value.split(",") if x.strip()):
        folder = f"{name}-smoke" if site.smoke else name
        out.append((name, f"run-{slug(folder)}" if any(r.name == folder for r in paper.runs) else None))
    return out


def figures_shown(figures: list[tuple[str, Path, str]]) -> list[dict[str, Any]]:
    """Each figure with its natural size (from the PNG header)."""
    out = []
    for caption, src, target in figures:
        w, h = png_size(src)
        out.append({"caption": caption, "src": target, "width": w, "height": h})
    return out


@cache
def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "html.j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(md=markdown_html, mdi=inline_markdown_html, vclass=css_class, slug=slug)
    env.globals.update(shown_columns=shown_columns, is_folded=is_folded, cell_class=cell_class, column_class=column_class, run_links=run_links,
                       figures_shown=figures_shown, verdict_class=verdict_class, settings_pairs=settings_pairs,
                       datasets_table=datasets_table, friedman_pairs=friedman_pairs, DASH=DASH,
                       FLAG_COLUMN=FLAG_COLUMN, EFFECT_COLUMNS=EFFECT_COLUMNS, zip=zip)
    return env


def render_html(site: Site) -> str:
    """The page ``index.html``."""
    return _environment().get_template("index.html.j2").render(
        site=site, title=TITLE, smoke_prefix=SMOKE_PREFIX, counts=counts_line(site), differing=row_verdicts_line(site),
        verdict_rule=ROW_VERDICT_RULE,
        environment=environment_rows(site))
