"""The table writers: one table as Markdown, LaTeX, JSON (the cells as shown, for the
HTML report) and CSV (the numbers as data), all written by :func:`write_table`."""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

#: What would open raw HTML in Markdown (CommonMark: "<" then a tag name, "/", "!" or "?").
_RAW_HTML = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_text(text: Any) -> str:
    """``text`` safe to put in Markdown: a ``<`` that would open raw HTML (``<script>``,
    ``</b>``, ``<!--``) is written ``&lt;``, which every viewer shows as "<" and none runs;
    "< 0.001" is left as it is."""
    return _RAW_HTML.sub("&lt;", str(text))


def markdown_table(df: pd.DataFrame, raw_html: bool = False) -> str:
    """``df`` as a GitHub Markdown table: the one Markdown writer of tables/*.md and of the
    generated blocks in README.md and docs/. Strings are kept as written (so "70.00" stays
    "70.00"; tabulate would otherwise parse and reformat it), floats are shown with ``g``,
    numeric columns right-aligned, ``|`` inside cells escaped and, unless ``raw_html``
    (cells lkm itself wrote HTML into), text that would open raw HTML escaped
    (:func:`markdown_text`)."""
    text = (lambda v: str(v)) if raw_html else markdown_text
    cells = pd.DataFrame(index=df.index)
    align = []
    for col in df.columns:
        values = df[col]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        cells[text(col).replace("|", "\\|")] = values.map(lambda v: "" if v is None else text(v).replace("|", "\\|"))
        align.append("right" if numeric else "left")
    return cells.to_markdown(index=False, disable_numparse=True, colalign=align)


#: What stands for a character with no LaTeX the kernel can set (and no compatibility
#: decomposition that has): never a raw non-ASCII byte.
LATEX_PLACEHOLDER = "?"
#: Where lkm's LaTeX differs from pylatexenc's defaults: ``|`` is an em dash in the
#: default (OT1) font encoding; ``\\mathscr``, ``\\varnothing`` and ``\\gtrsim`` need
#: packages; ¹ ² ³ are math superscripts like every other (``10⁻³``: not text superscripts
#: beside a math minus); × · → † ‡, frequent in lkm's tables, stay in the math and symbol
#: fonts every TeX has in Type 1 (the text companion font is bitmap without cm-super, and
#: its glyphs copy out of a PDF as other letters).
_LATEX_OVERRIDES = {
    ord("|"): r"\textbar{}", ord("𝒦"): r"\ensuremath{\mathcal{K}}", ord("∅"): r"\ensuremath{\emptyset}",
    ord("≳"): r"\ensuremath{\stackrel{>}{\sim}}", ord("×"): r"\ensuremath{\times}", ord("·"): r"\ensuremath{\cdot}",
    ord("→"): r"\ensuremath{\rightarrow}", ord("†"): r"\dag{}", ord("‡"): r"\ddag{}",
    **{ord(c): rf"\ensuremath{{^{d}}}" for c, d in zip("¹²³", "123", strict=True)},
}


def _latex_unknown(ch: str) -> str:
    """A character without LaTeX here: its compatibility decomposition (full-width letters,
    ligatures, a letter under accents) encoded, else :data:`LATEX_PLACEHOLDER`."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", ch)
    return str(_latex_encoder(False).unicode_to_latex(plain)) if plain != ch else LATEX_PLACEHOLDER


@functools.cache
def _latex_encoder(decompose: bool = True) -> Any:
    """pylatexenc's encoder with its default encodings the kernel can set
    (:data:`lkm.report.latex_kernel.UNSUPPORTED` left out) and :data:`_LATEX_OVERRIDES`; a
    character without LaTeX is decomposed (``decompose``) or :data:`LATEX_PLACEHOLDER`."""
    from pylatexenc.latexencode import (
        RULE_DICT,
        UnicodeToLatexConversionRule,
        UnicodeToLatexEncoder,
        get_builtin_uni2latex_dict,
    )

    from lkm.report.latex_kernel import UNSUPPORTED

    known = {cp: rep for cp, rep in get_builtin_uni2latex_dict().items() if cp not in UNSUPPORTED}
    return UnicodeToLatexEncoder(
        conversion_rules=[UnicodeToLatexConversionRule(RULE_DICT, {**known, **_LATEX_OVERRIDES})],
        replacement_latex_protection="braces-after-macro", unknown_char_warning=False,
        unknown_char_policy=_latex_unknown if decompose else (lambda ch: LATEX_PLACEHOLDER))


def latex_escape(text: Any) -> str:
    """``text`` as pure-ASCII LaTeX text-mode source that compiles with pdflatex and no
    package beyond the kernel, by pylatexenc (``% _ & # $ { } ~ ^ \\ |`` escaped, symbols,
    Greek letters, scripts and accents as LaTeX commands, anything else as
    :data:`LATEX_PLACEHOLDER`). Lines are joined (a blank line would end the row). The
    one escaping function of every ``.tex`` file lkm writes."""
    import unicodedata

    text = unicodedata.normalize("NFC", " ".join(str(text).split("\n")))
    text = "".join(ch if not ch.isascii() or ch.isprintable() else " " for ch in text)
    return str(_latex_encoder().unicode_to_latex(text))


#: pdflatex's text width in an ``article`` at 10 pt (345 pt), the width of an average
#: character of a table cell and the space between two columns, in points: what
#: :func:`latex_table` estimates a tabular's width with (on the smoke reproductions' 88
#: tables the estimate was 1.0 to 1.12 times the width pdflatex set them at).
LATEX_LINEWIDTH_PT, LATEX_CHAR_PT, LATEX_COLSEP_PT = 345.0, 5.0, 12.0
#: A text column whose longest cell has more characters than this is a paragraph column
#: (``p{}``, its text wrapped) in a table wider than the line; the narrowest paragraph
#: column (2.5 cm, in points); the width of a capital (wider than the average character).
LATEX_LONG_CELL, LATEX_MIN_PARAGRAPH_PT, LATEX_WORD_CHAR_PT = 28, 71.0, 7.5
#: The type sizes :func:`latex_table` tries, in turn, for a table that does not fit the
#: line even with its text wrapped: the declaration, its width relative to the normal
#: size, and the space between two columns (points) set with it.
LATEX_SIZES = (("", 1.0, LATEX_COLSEP_PT), ("\\small", 0.9, 10.0), ("\\footnotesize", 0.8, 8.0))


def latex_width_pt(columns: list[str], body: list[list[str]]) -> float:
    """Estimated rendered width of a tabular: per column its longest cell or header
    (as displayed), :data:`LATEX_CHAR_PT` per character, plus the column separation."""
    return sum(LATEX_COLSEP_PT + LATEX_CHAR_PT * max([len(c), *(len(v) for v in cells)])
               for c, cells in zip(columns, body, strict=True))


def _latex_text_pt(text: str) -> float:
    """Width of ``text`` (as displayed) at 10 pt, erring high: :data:`LATEX_WORD_CHAR_PT`
    per capital, :data:`LATEX_CHAR_PT` per other character."""
    return sum(LATEX_WORD_CHAR_PT if ch.isupper() or ch in "mwMW%" else LATEX_CHAR_PT for ch in text)


def _latex_column_widths(header: str, cells: list[str], numeric: bool, size: float) -> tuple[float, float]:
    """A column's natural width (longest cell or header on one line) and the narrowest
    paragraph width it may be given (points, at relative type ``size``): text wraps down
    to :data:`LATEX_MIN_PARAGRAPH_PT` (at that size), numbers and cells without letters
    (``89.09 +- 5.14``, ``[31.14, 100.00]``) never wrap (only the header does), and no
    word is cut (a line may break after a space or a hyphen)."""
    natural = size * max(_latex_text_pt(v) for v in [header, *cells])
    words = [w for v in [header, *cells] for w in re.split(r"\s+|(?<=-)", v)]
    whole = [v for v in cells if numeric or not re.search(r"[^\W\d_]", v)]
    least = 1.1 * size * max(_latex_text_pt(w) for w in [*words, *whole, ""])
    if numeric:
        return natural, least
    return natural, max(least, min(size * LATEX_MIN_PARAGRAPH_PT, natural))


def _latex_layout(columns: list[str], shown: list[list[str]], numeric: list[bool], size: float,
                  colsep: float) -> tuple[dict[int, float], bool]:
    """Paragraph widths (points, by column index) for a table wider than the line, and
    whether the table then fits: every long text column wraps; then, widest saving first,
    columns whose header (or text) may wrap, until the rest fits. The paragraph columns
    share what the others leave of the line in proportion to their natural widths, none
    narrower than its minimum nor wider than its natural width."""
    widths = [_latex_column_widths(c, cells, num, size) for c, cells, num in zip(columns, shown, numeric, strict=True)]
    wrap = {j for j, (cells, num) in enumerate(zip(shown, numeric, strict=True))
            if not num and max([0, *(len(v) for v in cells)]) > LATEX_LONG_CELL}
    room = LATEX_LINEWIDTH_PT - colsep * len(columns)

    def needed() -> float:
        return sum(widths[j][1] if j in wrap else widths[j][0] for j in range(len(columns)))

    savings = sorted((j for j in range(len(columns)) if j not in wrap and widths[j][1] < widths[j][0]),
                     key=lambda j: widths[j][1] - widths[j][0])
    for j in savings:
        if needed() <= room:
            break
        wrap.add(j)
    fits = needed() <= room
    share = room - sum(widths[j][0] for j in range(len(columns)) if j not in wrap)

    def given(scale: float) -> dict[int, float]:
        return {j: min(max(scale * widths[j][0], widths[j][1]), widths[j][0]) for j in wrap}

    low, high = 0.0, 1.0  # the largest scale of the natural widths whose clamped sum fits
    if sum(given(high).values()) <= share:
        return given(high), fits
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if sum(given(mid).values()) <= share else (low, mid)
    return given(low), fits


def latex_table(df: pd.DataFrame, caption: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    """``df`` as a LaTeX ``table`` (booktabs rules, numbers right-aligned) with its
    caption and notes below it; every cell, header, caption and note escaped with
    :func:`latex_escape` (so the file is pure ASCII). A table whose estimated width
    (:func:`latex_width_pt`) fits the text width is written as it is. A wider one wraps
    its long text columns (and, when that is not enough, the headers of other columns) in
    ragged-right paragraph columns ``p{<fraction>\\linewidth}`` sized to share the line
    (see :func:`_latex_layout`); only when even that does not fit is it set ``\\small``,
    then ``\\footnotesize`` with narrower column gaps, and, as the last resort, put in a
    ``\\resizebox`` that shrinks it to the line (only if it really is wider: the
    estimate errs high). ``\\input`` it in a document with ``\\usepackage{booktabs}``,
    ``\\usepackage{graphicx}`` and ``\\usepackage{array}``."""
    align, shown, numeric = [], [], []
    for col in df.columns:
        values = df[col]
        numeric.append(pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values))
        align.append("r" if numeric[-1] else "l")
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        shown.append(["" if v is None else " ".join(str(v).split()) for v in values])
    body = [[latex_escape(v) for v in cells] for cells in shown]
    columns = [str(c) for c in df.columns]
    wide = latex_width_pt(columns, shown) > LATEX_LINEWIDTH_PT
    size, colsep, resize = "", LATEX_COLSEP_PT, False
    if wide:
        for choice in LATEX_SIZES:  # the largest type at which the table fits, else the smallest
            paragraphs, fits = _latex_layout(columns, shown, numeric, choice[1], choice[2])
            if fits:
                break
        size, _, colsep = choice
        resize = not fits
        for j, width in paragraphs.items():
            ragged = "\\raggedleft" if numeric[j] else "\\raggedright"
            fraction = math.floor(1000 * width / LATEX_LINEWIDTH_PT) / 1000
            align[j] = f">{{{ragged}\\arraybackslash}}p{{{fraction:.3f}\\linewidth}}"
    lines = [
        "% written by lkm; \\input{} it with \\usepackage{booktabs}, \\usepackage{graphicx} and \\usepackage{array}",
        "\\begin{table}", "\\centering", f"\\caption{{{latex_escape(caption)}}}",
        *([size] if size else []),
        *([f"\\setlength{{\\tabcolsep}}{{{colsep / 2:g}pt}}"] if colsep != LATEX_COLSEP_PT else []),
        *(["\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%"] if resize else []),
        f"\\begin{{tabular}}{{{''.join(align)}}}", "\\toprule",
        " & ".join(latex_escape(c) for c in df.columns) + " \\\\", "\\midrule",
        *(" & ".join(cells) + " \\\\" for cells in zip(*body, strict=True)),
        "\\bottomrule", "\\end{tabular}" + ("}" if resize else ""),
        *(f"\\par\\footnotesize {latex_escape(n)}" for n in notes),
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


def display_cells(df: pd.DataFrame) -> list[list[str]]:
    """The cells of ``df`` as shown in every rendering: strings as written, floats with
    ``g``, None as empty."""
    columns = []
    for col in df.columns:
        values = df[col]
        if pd.api.types.is_float_dtype(values):
            values = values.map(lambda v: f"{v:g}")
        columns.append(["" if v is None else str(v) for v in values])
    return [list(row) for row in zip(*columns, strict=True)] if columns else [[] for _ in range(len(df))]


def table_json(df: pd.DataFrame, caption: str, notes: list[str] | tuple[str, ...] = ()) -> str:
    """``df`` as the JSON the HTML report is built from (``{"caption", "notes", "columns",
    "rows"}``, cells as shown): what the report reads instead of parsing Markdown back."""
    return json.dumps({"caption": caption, "notes": list(notes), "columns": [str(c) for c in df.columns],
                       "rows": display_cells(df)}, ensure_ascii=False, indent=0) + "\n"


#: A number as tables show it: optional sign (ASCII or the minus sign −), digits, decimals.
_NUMBER = r"[+\-\u2212]?\d+(?:\.\d+)?(?:[eE][+\-]?\d+)?"
#: An optional short mark after a number (EDGE_MARK, a footnote mark).
_MARK = r"\s*(?P<mark>[^\d\s][^\d]{0,4})?\s*"
#: Display cells holding two numbers, and the suffixes of the CSV columns they go to:
#: "<mean> ± <std>" (a number alone is a mean without std), "[<low>, <high>]" (an interval).
_COMPOSITE_CELLS = (
    (re.compile(rf"\s*(?P<a>{_NUMBER})\s*±\s*(?P<b>{_NUMBER}){_MARK}"), re.compile(rf"\s*(?P<a>{_NUMBER}){_MARK}"),
     ("", " std")),
    (re.compile(rf"\s*\[\s*(?P<a>{_NUMBER})\s*,\s*(?P<b>{_NUMBER})\s*\]{_MARK}"), None, (" low", " high")),
)
#: What a table shows for "no value".
_NO_VALUE = frozenset({"", "–", "—", "-"})


def _number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def _cell_text(v: Any) -> str | None:
    """A cell as text, None when it is not text (missing, or a number)."""
    return v if isinstance(v, str) else None


def _split_cells(texts: list[str | None], col: str, whole: re.Pattern, alone: re.Pattern | None,
                 suffixes: tuple[str, str]) -> dict[str, list[Any]]:
    """The columns one composite column becomes (see :func:`csv_frame`)."""
    first: list[float] = []
    second: list[float] = []
    marks: list[str] = []
    notes: list[str] = []
    for t in texts:
        m = (whole.fullmatch(t) or (alone.fullmatch(t) if alone else None)) if t is not None else None
        first.append(_number(m["a"]) if m else math.nan)
        second.append(_number(m["b"]) if m and "b" in m.groupdict() else math.nan)
        marks.append((m["mark"] or "").strip() if m else "")
        notes.append("" if m or t is None or t.strip() in _NO_VALUE else t)
    out: dict[str, list[Any]] = {f"{col}{suffixes[0]}": first, f"{col}{suffixes[1]}": second}
    if any(marks):
        out[f"{col} mark"] = marks
    if any(notes):
        out[f"{col} note"] = notes
    return out


def csv_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` as data, for the CSV twin of a table. A column holding cells ``<mean> ±
    <std>`` (possibly followed by a mark such as :data:`EDGE_MARK`) becomes the numeric
    columns ``<col>`` (the mean) and ``<col> std``; one holding intervals ``[<low>,
    <high>]`` becomes ``<col> low`` and ``<col> high``; plus ``<col> mark`` when some cell
    has a mark and ``<col> note`` for the cells that are text (``failed (...)``, ``data
    unavailable``); "–" is an empty cell. In a column of numbers written as text with "–"
    for none, the dashes become empty and the minus sign −, "-", so ``pd.read_csv`` reads
    floats. Other columns are kept as they are."""
    out: dict[str, Any] = {}
    for col in df.columns:
        values = df[col]
        textual = pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)
        texts = [_cell_text(v) if textual else None for v in values]
        composite = next(((whole, alone, suffixes) for whole, alone, suffixes in _COMPOSITE_CELLS
                          if any(t is not None and whole.fullmatch(t) for t in texts)), None)
        if composite:
            out.update(_split_cells(texts, str(col), *composite))
        elif (textual and any(t is not None and t.strip() not in _NO_VALUE for t in texts)
              and all(t is not None and (t.strip() in _NO_VALUE or re.fullmatch(_NUMBER, t.strip()))
                      for t in texts)):
            out[str(col)] = ["" if t is None or t.strip() in _NO_VALUE else t.strip().replace("\u2212", "-")
                             for t in texts]  # none is None here (checked above)
        else:
            out[str(col)] = values.to_numpy()
    return pd.DataFrame(out, index=df.index)


#: The files of a table, in the order :func:`write_table` writes them.
TABLE_FORMATS = ("md", "csv", "tex", "json")
#: What the HTML report reads of a table (:mod:`lkm.reproduction.site.views`).
PAGE_TABLE_FORMATS = ("md", "json")


def write_table(df: pd.DataFrame, base: Path, caption: str, notes: list[str] | tuple[str, ...] = (),
                formats: tuple[str, ...] = TABLE_FORMATS) -> list[Path]:
    """Write ``df`` as ``base.md``, ``base.csv``, ``base.tex`` and ``base.json`` (the
    displayed cells with caption and notes, read by the HTML report), or only the
    ``formats`` named; ``notes`` (footnotes such as what a mark means) go below the
    Markdown and LaTeX tables. The CSV holds the data (:func:`csv_frame`: mean and std in
    columns of their own), not the display cells, written by :func:`lkm.files.write_csv`
    (text a spreadsheet would evaluate is quoted)."""
    from lkm.files import atomic_write, write_csv

    below = "".join(f"\n{n}\n" for n in notes)
    writers = {
        "md": lambda path: atomic_write(path, f"**{markdown_text(caption)}**\n\n" + markdown_table(df) + "\n"
                                        + markdown_text(below)),
        "csv": lambda path: write_csv(path, csv_frame(df)),
        "tex": lambda path: atomic_write(path, latex_table(df, caption, notes)),
        "json": lambda path: atomic_write(path, table_json(df, caption, notes)),
    }
    written = []
    for fmt in TABLE_FORMATS:
        if fmt in formats:
            path = base.with_suffix(f".{fmt}")
            writers[fmt](path)
            written.append(path)
    return written
