"""The report page's interactive figures (issue 43): each sweep figure of a run
(``figures/sweep_<param>.png``), the benchmark's critical-difference and
accuracy-against-time figures, and the benchmark itself with a data-set selector, built
by :mod:`lkm.report.interactive` (plotly; why plotly: see there) from the records the PNGs
were drawn from, and ``plotly.min.js`` written once beside the page.

Each figure is a ``<div>`` from ``fig.to_html(full_html=False, include_plotlyjs=False)``;
the page loads ``plotly.min.js`` by a relative ``<script src>`` (no CDN: the page works
from a file with no network) and shows each PNG until its twin is drawn. A figure whose
records cannot be read keeps its PNG alone."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from lkm.errors import LkmError
from lkm.reproduction.site.views import CrossView, RunView, Site, slug

#: The file the page loads plotly.js from, beside index.html.
PLOTLY_JS = "plotly.min.js"
#: The key of :attr:`Site.interactive` holding the benchmark's figure (no PNG of its own).
BENCHMARK = "benchmark"
#: What reading a run's records can raise: the figure keeps its PNG alone.
UNREADABLE = (LkmError, OSError, ValueError, KeyError)


def figure_html(fig: Any, div_id: str) -> str:
    """``fig`` as a ``<div>`` and its drawing script (no plotly.js), with a stable id; the
    script's ``&`` escaped as ``\\u0026`` (plotly escapes ``<`` and ``>``), so that the
    page stays well-formed XML."""
    html = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"responsive": True, "displaylogo": False})
    return re.sub(r"(<script[^>]*>)(.*?)(</script>)", lambda m: m[1] + m[2].replace("&", "\\u0026") + m[3], html,
                  flags=re.S)


def write_plotly_js(out: Path) -> Path:
    """``out/plotly.min.js`` (plotly.js from the installed wheel), rewritten only when it differs."""
    from plotly.offline import get_plotlyjs

    from lkm.files import atomic_write

    path = out / PLOTLY_JS
    text = get_plotlyjs()
    if not (path.is_file() and path.stat().st_size == len(text.encode()) and path.read_text(encoding="utf-8") == text):
        atomic_write(path, text)
    return path


def _drawn(folder: Path, name: str) -> set[str]:
    """The files (relative to the run folder) the figure builder ``name`` last drew (``figures/.inputs.json``)."""
    try:
        entry = json.loads((folder / "figures" / ".inputs.json").read_text(encoding="utf-8")).get(name) or {}
    except (OSError, ValueError, AttributeError):
        return set()
    return {f for f in entry.get("files") or [] if isinstance(f, str)}


def sweep_figures(run: RunView) -> dict[str, str]:
    """``{path in the report: div}`` of the run's sweep figures (the core ``sweep`` builder's
    PNGs), from its records aggregated as the PNG's were."""
    from lkm.engine.store import RunStore
    from lkm.report.aggregation import aggregate, select_best
    from lkm.report.interactive import sweep_plot
    from lkm.spec import load_spec

    drawn = _drawn(run.folder, "sweep")
    wanted = {target: src.stem.removeprefix("sweep_") for _, src, target in run.figures
              if src.stem.startswith("sweep_") and src.relative_to(run.folder).as_posix() in drawn}
    if not wanted:
        return {}
    store = RunStore(run.folder)
    spec = load_spec(run.folder / "spec.yaml", max_fits=sys.maxsize)  # the run it describes was already allowed
    df = store.records_frame(set(store.read_plan().get("task_ids") or []) or None)  # as build_report reads them
    agg = aggregate(df, spec)
    best = select_best(agg, spec) if not agg.empty else agg
    out = {}
    for target, param in wanted.items():
        fig = sweep_plot(agg, best, spec, param)
        if fig is not None:
            out[target] = figure_html(fig, f"plot-{slug(run.name)}-sweep-{slug(param)}")
    return out


def benchmark_frames(run_dir: Path, datasets: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The benchmark's accuracies (data sets × methods, %), the ranks on each data set and
    the fit + predict seconds per outer fold, from the run's records as
    :func:`lkm.report.ranking.write_cross_paper` computes them, on the ranked ``datasets``."""
    from lkm.numerics.stats import rank_matrix
    from lkm.report.ranking import (
        TIE_DECIMALS,
        complete_scores,
        load_benchmark_run,
        scores_table,
        seconds_per_fold,
    )

    spec, records, best = load_benchmark_run(run_dir)
    scores = complete_scores(scores_table(run_dir, spec, records, best))[0]
    if list(scores.index) != list(datasets):
        raise LkmError(f"{run_dir}: its records rank other data sets than friedman.json (rebuild the ranking)")
    ranks = pd.DataFrame(rank_matrix(scores.round(TIE_DECIMALS)), index=scores.index, columns=scores.columns)
    return scores, ranks, seconds_per_fold(spec, records).reindex(index=scores.index)


def cross_figures(cross: CrossView, results: Path) -> dict[str, str]:
    """``{path in the report: div}`` of the ranking's figures (critical difference from
    friedman.json; accuracy against time) and :data:`BENCHMARK` (every data set, a selector)."""
    from lkm.report.interactive import accuracy_time_plot, benchmark_plot, critical_difference_plot

    fr = cross.friedman or {}
    if not isinstance(fr.get("average_ranks"), dict) or not isinstance(fr.get("cd"), int | float):
        return {}
    ranks = {m: float(fr["average_ranks"][m]) for m in fr.get("methods_by_rank") or fr["average_ranks"]}
    targets = {src.stem: target for _, src, target in cross.figures}
    out = {}
    if "critical_difference" in targets:
        fig = critical_difference_plot(ranks, float(fr["cd"]), fr.get("nemenyi_groups") or [],
                                       int(fr.get("n_datasets") or 0), float(fr.get("alpha") or 0.05))
        out[targets["critical_difference"]] = figure_html(fig, "plot-critical-difference")
    run_dir = cross.run.folder if cross.run is not None else results / str(fr.get("run", ""))
    try:
        scores, on_each, seconds = benchmark_frames(run_dir, list(fr.get("datasets") or []))
    except UNREADABLE:
        return out
    if "accuracy_time" in targets:
        out[targets["accuracy_time"]] = figure_html(accuracy_time_plot(ranks, seconds), "plot-accuracy-time")
    out[BENCHMARK] = figure_html(benchmark_plot(scores[list(ranks)], on_each[list(ranks)], ranks), "plot-benchmark")
    return out


def interactive_figures(site: Site) -> dict[str, str]:
    """Every interactive figure of the report: ``{path of its PNG in the report, or
    :data:`BENCHMARK`: div}``."""
    out: dict[str, str] = {}
    for run in (r for p in site.papers for r in p.runs if r.exists and r.figures):
        try:
            out.update(sweep_figures(run))
        except UNREADABLE:
            continue
    out.update(cross_figures(site.cross, site.results))
    return out
