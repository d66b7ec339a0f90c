"""The report page's interactive figures (issue 43, point 2; lkm.report.interactive,
lkm.reproduction.site.interactive), on a report of two shipped runs (docs/runs: the sonar
sigma sweep and the 26-set benchmark): no script or style from the network, plotly.min.js
written once beside the page, every figure's numbers those of the records, every PNG kept
as the fallback, and the benchmark section leading with the ranking."""

from __future__ import annotations

import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from lkm.engine.store import RunStore
from lkm.papers import CROSS_SPEC, PAPERS
from lkm.report import build_report
from lkm.report.aggregation import aggregate
from lkm.report.formatting import RATE
from lkm.report.ranking import (
    complete_scores,
    load_benchmark_run,
    scores_table,
    seconds_per_fold,
    write_cross_paper,
)
from lkm.reproduction.site import build_site
from lkm.reproduction.site.interactive import PLOTLY_JS, figure_html
from lkm.spec import load_spec

RUNS = Path(__file__).resolve().parents[1] / "docs" / "runs"
SWEEP = "lpl_sigma_sonar"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Copies of the shipped sonar sweep (its tables and figures drawn) and benchmark (its ranking written)."""
    root = tmp_path_factory.mktemp("interactive") / "results"
    for name in (SWEEP, "cross_paper"):
        shutil.copytree(RUNS / name, root / name)
    build_report(RunStore(root / SWEEP), load_spec(root / SWEEP / "spec.yaml", max_fits=sys.maxsize))
    write_cross_paper(root)
    return root


@pytest.fixture(scope="module")
def report(results: Path) -> Path:
    out = results.parent / "report"
    build_site(results, {"lpl": PAPERS["lpl"]}, CROSS_SPEC, out=out)
    return out


@pytest.fixture(scope="module")
def page(report: Path) -> str:
    return (report / "index.html").read_text(encoding="utf-8")


def plot_data(page: str, div_id: str) -> tuple[list[dict], dict]:
    """The traces and layout the page hands Plotly.newPlot for the div ``div_id``."""
    m = re.search(r'Plotly\.newPlot\(\s*"' + re.escape(div_id) + r'",\s*', page)
    assert m, f"no plot {div_id}"
    decoder = json.JSONDecoder()
    data, end = decoder.raw_decode(page, m.end())
    layout, _ = decoder.raw_decode(page, page.index("{", end))
    return data, layout


def values(v: object) -> np.ndarray:
    """A trace's array as plotly.js reads it: a list, or a typed array (``{"dtype", "bdata"[, "shape"]}``, base64)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        return a.reshape([int(n) for n in str(v["shape"]).split(",")]) if "shape" in v else a
    return np.asarray(v)


def test_the_page_loads_no_script_or_style_from_the_network(page: str, report: Path) -> None:
    sources = re.findall(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="([^"]*)"', page)
    assert sources and not [s for s in sources if re.match(r"(https?:)?//", s)]
    assert not re.search(r"https?://cdn|cdn\.plot\.ly", page)
    for src in re.findall(r'<script\b[^>]*\bsrc="([^"]*)"', page):
        assert (report / src).is_file(), src


def test_plotly_js_is_written_once_beside_the_page_and_loaded_relatively(page: str, report: Path) -> None:
    from plotly.offline import get_plotlyjs

    assert re.findall(r'<script\b[^>]*\bsrc="([^"]*plotly[^"]*)"', page) == [PLOTLY_JS]
    assert (report / PLOTLY_JS).read_text(encoding="utf-8") == get_plotlyjs()
    assert sorted(p.name for p in report.rglob("*plotly*")) == [PLOTLY_JS]
    assert page.count("plotly-graph-div") >= 4 and len(page) < len(get_plotlyjs())  # the library is not inline


def test_the_page_with_its_figures_is_well_formed_xml_and_html5(page: str) -> None:
    import html5lib

    ET.fromstring(page.split("\n", 1)[1])
    html5lib.HTMLParser(strict=True).parse(page)


def test_the_sweep_figure_plots_the_means_and_spreads_the_records_aggregate_to(page: str, results: Path) -> None:
    spec = load_spec(results / SWEEP / "spec.yaml", max_fits=sys.maxsize)
    agg = aggregate(RunStore(results / SWEEP).records_frame(), spec)
    traces, _ = plot_data(page, f"plot-{SWEEP}-sweep-sigma")
    curves = [t for t in traces if t.get("mode") == "lines+markers"]
    assert sorted(t["name"] for t in curves) == sorted(set(agg["method"]))
    for t in curves:
        rows = agg[agg["method"] == t["name"]]
        rows = rows.assign(sigma=rows["params"].map(lambda p: float(p["sigma"]))).sort_values("sigma")
        assert len(values(t["x"])) == 39 and np.allclose(values(t["x"]), rows["sigma"])
        assert np.allclose(values(t["y"]), RATE * rows["accuracy"], rtol=0, atol=1e-9)
        assert np.allclose(values(t["customdata"])[:, 0], RATE * rows["accuracy_std"], rtol=0, atol=1e-9)


def test_the_critical_difference_figure_plots_the_ranks_and_cd_of_friedman_json(page: str, results: Path) -> None:
    fr = json.loads((results / "cross_paper_summary" / "friedman.json").read_text(encoding="utf-8"))
    traces, _ = plot_data(page, "plot-critical-difference")
    dots = traces[0]
    assert list(dots["y"]) == [f"{m} ({fr['average_ranks'][m]:.2f})" for m in fr["methods_by_rank"]]
    assert list(values(dots["x"])) == [fr["average_ranks"][m] for m in fr["methods_by_rank"]]
    assert dots["error_x"]["value"] == pytest.approx(fr["cd"] / 2)
    bars = [t for t in traces if t.get("legendgroup") == "groups"]
    assert [[fr["average_ranks"][g[0]], fr["average_ranks"][g[-1]]] for g in fr["nemenyi_groups"]] == [list(values(t["x"])) for t in bars]


def test_the_benchmark_and_time_figures_hold_the_records_numbers_the_ranking_table_shows(page: str, results: Path) -> None:
    run = results / "cross_paper"
    spec, records, best = load_benchmark_run(run)
    scores = complete_scores(scores_table(run, spec, records, best))[0]
    fr = json.loads((results / "cross_paper_summary" / "friedman.json").read_text(encoding="utf-8"))
    order = fr["methods_by_rank"]
    traces, layout = plot_data(page, "plot-benchmark")
    assert [t["name"] for t in traces][1:] == list(scores.index) and len(scores) == 26
    assert [t["visible"] for t in traces] == [True] + [False] * 26
    assert len(layout["updatemenus"][0]["buttons"]) == 27
    table = json.loads((results / "cross_paper_summary" / "ranking.json").read_text(encoding="utf-8"))
    cells = {row[0]: row[1:] for row in table["rows"]}
    assert table["columns"][1:] == order
    for t in traces[1:]:
        assert list(t["x"]) == order
        assert np.allclose(values(t["y"]), scores.loc[t["name"], order], rtol=0, atol=1e-9)
        assert [f"{y:.2f}" for y in values(t["y"])] == [c.split(" ")[0] for c in cells[t["name"]]]  # the table's numbers
    assert np.allclose(values(traces[0]["y"]), scores[order].mean(), rtol=0, atol=1e-9)
    seconds = seconds_per_fold(spec, records).reindex(index=scores.index)
    (dots,), _ = plot_data(page, "plot-accuracy-time")
    assert list(dots["text"]) == order and list(values(dots["y"])) == [fr["average_ranks"][m] for m in order]
    assert np.allclose(values(dots["x"]), [seconds[m].median() for m in order], rtol=1e-12)


def test_every_interactive_figure_keeps_its_png_as_the_fallback(page: str, report: Path) -> None:
    doc = ET.fromstring(page.split("\n", 1)[1])
    twins = [f for f in doc.iter() if f.tag.endswith("figure") and "twin" in (f.get("class") or "").split()]
    with_png = [f for f in twins if "solo" not in f.get("class", "")]
    assert len(with_png) == 3  # the sonar sweep, the critical difference, accuracy against time
    for f in with_png:
        img = f.find(".//img")
        assert img is not None and (report / img.get("src")).is_file()
    css = page[page.index("<style>"):page.index("</style>")]
    # the PNG is hidden only once plotly.js has loaded (the class set after it), the plot shown only then
    assert "html.plotly figure.twin a.png{display:none}" in css and "figure.twin .plot,.twin-note{display:none}" in css
    assert re.search(r'<script src="plotly.min.js"></script>\s*<script>if \(window.Plotly\)', page)
    md = (report / "report.md").read_text(encoding="utf-8")
    assert "critical_difference.png" in md and "sweep_sigma.png" in md and "plotly" not in md


def test_the_benchmark_section_leads_with_the_ranking_and_folds_the_full_table(page: str) -> None:
    section = page[page.index('id="cross-paper"'):page.index('id="environment"')]
    cd, table = section.index('id="plot-critical-difference"'), section.index("<summary>The benchmark: 19 methods on 26")
    assert section.index('id="cross-ranking"') < cd < section.index("critical_difference.png") < table
    assert section.index("average rank") < table  # the ranking (speed table: methods by average rank) first
    assert section.rfind("</details>", 0, table) < section.rindex("<details", 0, table)  # the table is inside <details>
    assert section.index('id="plot-benchmark"') < table
    toc = page[page.index('<nav class="toc"'):]
    assert toc.index('href="#cross-paper"') < toc.index('href="#cross-ranking"') < toc.index('href="#cross-datasets"')
    assert 'id="cross-datasets"' in section


def test_figure_html_escapes_ampersands_in_the_script_for_xml() -> None:
    import plotly.graph_objects as go

    html = figure_html(go.Figure(go.Scatter(x=[1], y=[2], name="a & b <c>")), "plot-x")
    ET.fromstring(html)
    assert 'id="plot-x"' in html and "\\u0026" in html and "cdn" not in html


def test_a_method_sweeping_two_parameters_shows_the_curve_through_its_selection_the_rest_in_the_legend() -> None:
    from lkm.report.aggregation import select_best
    from lkm.report.interactive import sweep_plot

    run = RUNS / "lpl_k_diabetes"
    spec = load_spec(run / "spec.yaml", max_fits=sys.maxsize)
    agg = aggregate(RunStore(run).records_frame(), spec)
    best = select_best(agg, spec)
    curves = [t for t in sweep_plot(agg, best, spec, "k").data if t.mode == "lines+markers"]
    shown = [t for t in curves if t.visible is not False and t.visible != "legendonly"]
    assert len(curves) > 1 and len(shown) == 1 and all(t.visible == "legendonly" for t in curves if t not in shown)
    lpl = best[(best["method"] == shown[0].name.split(" ")[0])]
    on_axis = agg["params"].map(lambda p: isinstance(p.get("k"), int | float))  # k = auto is no point of the k axis
    through = agg[agg["setting"].isin(lpl["setting"]) & on_axis]
    assert {float(p["sigma"]) for p in through["params"]} == {float(shown[0].name.split("sigma=")[1].rstrip(")"))}
