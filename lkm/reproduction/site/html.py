"""The report as one static HTML page (:func:`render_html`): no JavaScript, a small inline
stylesheet, polyglot HTML5 (parses with no error under the HTML5 algorithm and as XML)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from lkm.reproduction.claims import EFFECT_COLUMNS
from lkm.reproduction.claims import SMOKE_LABEL as SMOKE_PREFIX
from lkm.reproduction.site.shared import (
    TITLE,
    datasets_rows,
    e,
    environment_rows,
    friedman_pairs,
    settings_pairs,
    strip_links,
)
from lkm.reproduction.site.tables import DASH, FLAG_COLUMN, Table, parse_md_table
from lkm.reproduction.site.views import (
    Claim,
    PaperView,
    RunView,
    Site,
    counts_line,
    differing_line,
    slug,
    verdict_class,
)

#: Tables with more rows than this are folded (``<details>``, no JavaScript needed).
FOLD_ROWS = 30
#: Tables shown folded whatever their length (secondary to the paper's numbers).
FOLDED = frozenset({"timing", "sweep", "knn_invariance_rows", "scaling_sizes"})


def _css_class(name: str) -> str:
    return "v-" + name.replace(" ", "-").replace("/", "")


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


# -- Markdown inline -> HTML (notes, the "where we differ" text) ---------------------------
def inline_html(text: str) -> str:
    """Escaped text with Markdown's ``**bold**`` and ```code``` (links kept as text)."""
    out = []
    for part in re.split(r"(`[^`]+`)", strip_links(text)):
        if len(part) > 1 and part.startswith("`") and part.endswith("`"):
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            out.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(part)))
    return "".join(out)


def markdown_blocks_html(text: str) -> str:
    """A small Markdown subset as HTML: paragraphs, bullet and numbered lists (one level),
    pipe tables, fenced code, headings (shown as h4)."""
    lines = strip_links(text).splitlines()
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
            header, rows = parse_md_table([x.strip() for x in lines[i:j]])
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
.v-reading-dependent{background:#e0f2f1 !important;border-left-color:#00796b !important}
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
    head = "".join(f"<th>{e(c)}</th>" for c in t.columns) + (f"<th>{e(FLAG_COLUMN)}</th>" if flagged else "")
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
    items = "".join(f'<span class="count {_css_class(name)}">{e(name)}: {n}</span>' for name, n in counts_line(site))
    return f'<div class="counts">{items}<span class="count v-na">claims: {len(site.claims)}</span></div>'


def _kv(pairs: list[tuple[str, str]]) -> str:
    return '<dl class="kv">' + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


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
        ds = datasets_rows(run.provenance)
        body = _kv(settings_pairs(run.provenance, run.perturbed))
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
                links.append(f'<a href="#run-{e(slug(folder))}">{e(name)}</a>'
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


def _cross_html(site: Site) -> str:
    cross = site.cross
    parts = ['<section class="paper" id="cross-paper"><h2>Across the papers: one protocol, every method</h2>']
    if not cross.exists:
        parts.append(f"<p>{inline_html(cross.note)}</p>")
    for t in cross.tables:
        parts.append(_table_html(t))
    if cross.friedman:
        parts.append("<details><summary>the Friedman test and the critical difference (friedman.json)</summary>"
                     + _kv(friedman_pairs(cross.friedman)) + "</details>")
    if cross.figures:
        parts.append(_figures_html(cross.figures, ""))
    if cross.run is not None and cross.run.exists and cross.run.provenance:
        parts.append(f"<details><summary>settings and data versions ({e(cross.run.name)})</summary>"
                     + _kv(settings_pairs(cross.run.provenance, None))
                     + _table_html(Table("datasets", "data versions", ["dataset", "rows × features", "files"],
                                         datasets_rows(cross.run.provenance))) + "</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _environment_html(site: Site) -> str:
    pairs, packages, blas, wall = environment_rows(site)
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
        "rows and another BLAS thread count; <em>reading-dependent</em>: the verdict changes between documented "
        "readings of a choice the paper leaves open. Each claim links to its row in the paper’s section.</p>",
        _claims_first_screen(site),
    ]
    body += [_paper_html(site, p) for p in site.papers]
    body += [_cross_html(site), _environment_html(site), "</main>"]
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8" />'
            '<meta name="viewport" content="width=device-width, initial-scale=1" />'
            f"<title>{e(TITLE)}{' (smoke run)' if smoke else ''}</title>"
            f"<style>\n{CSS}\n</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")
