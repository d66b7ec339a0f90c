"""Figures (issue 28, point 4): one colour per method across every figure of a run, tick
labels that never overlap in best.png, methods without the swept parameter drawn as
reference lines in a sweep figure, and one type size and resolution for every figure."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.colors import to_hex

import lkm.report.figures as report_figures
from lkm.report.aggregation import aggregate, select_best
from lkm.report.figures import (
    best_figure,
    load_pyplot,
    method_colors,
    sweep_figure,
    sweep_grid_figure,
    sweep_pairs,
)
from lkm.spec import spec_from_dict

REPO = Path(__file__).resolve().parents[1]


def _records(methods: dict[str, list[dict]], datasets=("moons", "sklearn-iris"), splits: int = 3) -> pd.DataFrame:
    """Synthetic records: every method at every setting on every dataset and split."""
    rows = []
    for d, ds in enumerate(datasets):
        for m, (method, settings) in enumerate(methods.items()):
            for s, params in enumerate(settings):
                for split in range(splits):
                    acc = 0.6 + 0.02 * m + 0.01 * s + 0.005 * split + 0.01 * d
                    rows.append({"task_id": f"{ds}-{method}-{s}-{split}", "dataset": ds, "method": method,
                                 "params": params, "status": "ok", "accuracy": acc, "fit_seconds": 0.01,
                                 "predict_seconds": 0.01, "n_train": 100, "n_test": 50, "split": split})
    return pd.DataFrame(rows)


@pytest.fixture
def captured(monkeypatch) -> list:
    """The figures the figure functions save, drawn (Agg) and kept for inspection."""
    figures = []

    def keep(fig, base, formats, tight=True):
        fig.canvas.draw()
        figures.append(fig)
        return []

    monkeypatch.setattr(report_figures, "save_figure", keep)
    yield figures
    import matplotlib.pyplot as plt

    for fig in figures:
        plt.close(fig)


def _k_sweep_spec():
    return spec_from_dict({
        "name": "k_sweep", "datasets": ["moons", "sklearn-iris"],
        "protocol": {"kind": "kfold", "folds": 3, "seed": 1},
        "methods": [{"name": "LPL", "estimator": "lpl", "params": {"sigma": 1.0}},
                    {"name": "SVM", "estimator": "svm"}, {"name": "PL", "estimator": "pl"}],
        "sweep": {"k": [3, 5, 7]},
    })


def _k_sweep(spec):
    records = _records({"LPL": [{"sigma": 1.0, "k": k} for k in (3, 5, 7)], "SVM": [{}], "PL": [{}]})
    agg = aggregate(records, spec)
    return agg, select_best(agg, spec)


def test_a_method_without_the_swept_parameter_is_a_dashed_reference_line(captured, tmp_path: Path) -> None:
    spec = _k_sweep_spec()
    agg, best = _k_sweep(spec)
    sweep_figure(agg, best, spec, "k", tmp_path / "sweep_k", ["png"])
    (fig,) = captured
    colors = method_colors(spec)
    for ax in [a for a in fig.axes if a.get_visible()]:
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        for method in ("SVM", "PL"):
            ref = lines[f"{method} (no k)"]
            assert ref.get_linestyle() == "--" and to_hex(ref.get_color()) == colors[method]
            assert len(set(ref.get_ydata())) == 1  # horizontal
            want = 100 * best[(best["dataset"] == ax.get_title()) & (best["method"] == method)]["accuracy"].iloc[0]
            assert ref.get_ydata()[0] == pytest.approx(want)
        assert to_hex(lines["LPL"].get_color()) == colors["LPL"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"LPL", "SVM (no k)", "PL (no k)"} <= set(legend)


def test_a_method_has_one_colour_in_every_figure_of_a_run(captured, tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "two_sweeps", "datasets": ["moons"], "protocol": {"kind": "kfold", "folds": 3, "seed": 1},
        "methods": [{"name": "PL", "estimator": "pl"}, {"name": "LPL", "estimator": "lpl"},
                    {"name": "SVM", "estimator": "svm"}],
        "sweep": {"sigma": [0.5, 1.0, 2.0], "k": [3, 5]},
    })
    records = _records({"PL": [{"sigma": s} for s in (0.5, 1.0, 2.0)],
                        "LPL": [{"sigma": s, "k": k} for s in (0.5, 1.0, 2.0) for k in (3, 5)],
                        "SVM": [{"sigma": s} for s in (0.5, 1.0, 2.0)]}, datasets=("moons",))
    agg = aggregate(records, spec)
    best = select_best(agg, spec)
    best_figure(best, spec, tmp_path / "best", ["png"])
    sweep_figure(agg, best, spec, "sigma", tmp_path / "sweep_sigma", ["png"])
    sweep_figure(agg, best, spec, "k", tmp_path / "sweep_k", ["png"])
    bars, sigma, k = captured
    colors = method_colors(spec)
    ax = bars.axes[0]
    for patch, label in zip(ax.patches, [t.get_text() for t in ax.get_xticklabels()], strict=True):
        assert to_hex(patch.get_facecolor()) == colors[label.split("\n")[0]]
    for fig in (sigma, k):
        for line in fig.axes[0].get_lines():
            method = line.get_label().split(" ")[0]
            if method in colors:  # LPL's two curves (k = 3, 5) both in LPL's colour, told apart by style
                assert to_hex(line.get_color()) == colors[method], line.get_label()
    lpl = [ln for ln in sigma.axes[0].get_lines() if ln.get_label().startswith("LPL (")]
    assert len(lpl) == 1  # LPL sweeps sigma and k: one curve here, at its selected k (every k: sweep_sigma_k)
    assert len(set(colors.values())) == 3


def _overlaps(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].width and boxes[j].width and boxes[i].overlaps(boxes[j])]


@pytest.mark.parametrize("n, name", [(12, "a-method-with-a-rather-long-name-{i}"), (12, "M{i}"), (3, "method {i}")])
def test_tick_labels_of_the_best_figure_never_overlap(captured, tmp_path: Path, n: int, name: str) -> None:
    methods = [{"name": name.format(i=i), "estimator": "pl" if i % 2 else "svm"} for i in range(n)]
    spec = spec_from_dict({"name": "many", "datasets": ["moons", "sklearn-iris"],
                           "protocol": {"kind": "kfold", "folds": 3, "seed": 1}, "methods": methods,
                           "sweep": {"sigma": [0.5, 1.0, 2.0]}})
    records = _records({m["name"]: [{"sigma": s} for s in (0.5, 1.0, 2.0)] for m in methods})
    best = select_best(aggregate(records, spec), spec)
    best_figure(best, spec, tmp_path / "best", ["png"])
    (fig,) = captured
    renderer = fig.canvas.get_renderer()
    figure_box = fig.bbox
    for ax in [a for a in fig.axes if a.get_visible()]:
        labels = ax.get_xticklabels()
        assert len(labels) == n
        boxes = [label.get_window_extent(renderer) for label in labels]
        assert _overlaps(boxes) == [], [labels[i].get_text() for pair in _overlaps(boxes) for i in pair]
        for box in boxes:  # inside the figure, below the panel
            assert box.y0 >= figure_box.y0 - 1 and box.x0 >= figure_box.x0 - 1 and box.x1 <= figure_box.x1 + 1
            assert box.y1 <= ax.get_window_extent(renderer).y0 + 1
    title_bottom = min(t.get_window_extent(renderer).y0 for t in [fig._suptitle])
    assert all(ax.title.get_window_extent(renderer).y1 <= title_bottom + 1 for ax in fig.axes if ax.get_visible())


def test_every_figure_has_one_type_size_and_resolution() -> None:
    plt = load_pyplot()
    assert plt.rcParams["figure.dpi"] == plt.rcParams["savefig.dpi"] == report_figures.FIGURE_DPI
    assert plt.rcParams["font.size"] == report_figures.FONT_PT
    assert plt.rcParams["xtick.labelsize"] == plt.rcParams["legend.fontsize"] == report_figures.SMALL_PT
    # figure code sizes text through load_pyplot's rcParams or its constants, never with numbers of its own
    # (lkm/bench/scaling.py, which draws with its own sizes and dpi, is not aligned yet)
    own = []
    for folder in ("report", "papers"):
        for path in sorted((REPO / "lkm" / folder).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\b(fontsize|dpi)=\d", line):
                    own.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert own == []


def _texts(fig) -> list:
    """Every piece of text a reader sees: titles, axis and tick labels, legends, cell values."""
    texts = [fig._suptitle] if fig._suptitle else []
    for legend in fig.legends:
        texts += legend.get_texts()
    for ax in [a for a in fig.axes if a.get_visible()]:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        for axis in (ax.xaxis, ax.yaxis):  # the tick labels drawn: those of ticks inside the view
            low, high = sorted(axis.get_view_interval())
            texts += [t.label1 for t in axis.get_major_ticks() if low - 1e-9 <= t.get_loc() <= high + 1e-9]
    return [t for t in texts if t.get_visible() and t.get_text()]


def _assert_no_text_overlaps(fig) -> None:
    renderer = fig.canvas.get_renderer()
    texts = _texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert _overlaps(boxes) == [], [(texts[i].get_text(), texts[j].get_text()) for i, j in _overlaps(boxes)]
    for box in boxes:  # inside the figure
        assert box.x0 >= fig.bbox.x0 - 1 and box.x1 <= fig.bbox.x1 + 1 and box.y0 >= fig.bbox.y0 - 1


def test_the_readme_two_parameter_sweep_draws_one_colour_per_k_without_overlapping_text(
        captured, tmp_path: Path, data_dir: Path) -> None:
    """README's `lkm sweep -m lpl -d sonar --sigma 0.1:10:9 --k 3,7` (smaller, with k =
    auto): a figure of sigma x k with one line of its own colour per k, k = auto among
    them, the selected setting circled, and no text over other text (issue 43, point 1)."""
    from lkm.api import run

    run({"name": "readme-sweep", "datasets": ["sonar"], "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
         "methods": [{"name": "LPL", "estimator": "lpl"}], "sweep": {"sigma": "0.1:10:3", "k": ["auto", 3, 7]},
         "outputs": {"tables": ["summary"], "figures": ["sweep"]}}, tmp_path / "run", data_dir=data_dir)
    (grid,) = [f for f in captured if "sigma × k" in f._suptitle.get_text()]
    ax = grid.axes[0]
    curves = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith("k = ")}
    assert list(curves) == ["k = auto", "k = 3", "k = 7"]
    assert len({to_hex(ln.get_color()) for ln in curves.values()}) == 3
    assert not ax.collections  # no bands
    assert [t.get_text() for t in grid.legends[0].get_texts()] == [*curves, "selected"]
    _assert_no_text_overlaps(grid)
    for fig in captured:
        _assert_no_text_overlaps(fig)


def test_a_sweep_of_more_than_four_values_of_its_second_parameter_is_a_heatmap(captured, tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "k_grid", "datasets": ["moons", "sklearn-iris"], "protocol": {"kind": "kfold", "folds": 3, "seed": 1},
        "methods": [{"name": "LPL", "estimator": "lpl"}, {"name": "SVM", "estimator": "svm"}],
        "sweep": {"sigma": [0.5, 1.0, 2.0, 4.0], "k": ["auto", 3, 5, 7, 9]},
        "selection": {"over": ["sigma"]},
    })
    ks = ["auto", 3, 5, 7, 9]
    records = _records({"LPL": [{"sigma": s, "k": k} for s in (0.5, 1.0, 2.0, 4.0) for k in ks],
                        "SVM": [{"sigma": s} for s in (0.5, 1.0, 2.0, 4.0)]})
    agg = aggregate(records, spec)
    best = select_best(agg, spec)
    assert sweep_pairs(spec, agg) == [("sigma", "k")]  # k has more values, but sigma only numbers: the x axis
    sweep_grid_figure(agg, best, spec, "sigma", "k", tmp_path / "grid", ["png"])
    (fig,) = captured
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title().split("\n")[0] for ax in panels] == ["moons: LPL", "sklearn-iris: LPL"]
    assert all("SVM at its selected setting" in ax.get_title() for ax in panels)
    ax = panels[0]
    assert ax.images[0].get_array().shape == (5, 4)  # a row per k, auto its own, a column per sigma
    assert [t.get_text() for t in ax.get_yticklabels()] == ["auto", "3", "5", "7", "9"]
    assert len(ax.texts) == 20  # a small grid shows its values
    assert len(ax.patches) == 5  # the selected sigma of each k framed (selection over sigma)
    assert len(fig.axes) == 4  # two panels, two colour bars
    _assert_no_text_overlaps(fig)


def test_accuracy_time_labels_sit_nearest_their_own_point_when_points_crowd(monkeypatch, tmp_path: Path) -> None:
    """The benchmark's run of 2026-11-30 put LRR (rank 7.00, 0.414 s) and RLS (7.17, 0.396 s)
    9 pixels apart, and each label ended beside the other's point. Every label must now be
    nearer its own point than any other."""
    import math

    import lkm.report.ranking as ranking

    kept = []
    monkeypatch.setattr(ranking, "save_figure", lambda fig, base, formats: kept.append(fig) or [])
    ranks = {"RBF-SVC": 5.98, "SVM": 6.35, "LRR": 7.00, "LapRLS": 7.06, "RLS": 7.17, "PRLS": 8.54, "kNN": 12.35,
             "RandomForest": 8.42, "LDCV": 16.67}
    seconds = pd.DataFrame({"RBF-SVC": [0.466], "SVM": [0.471], "LRR": [0.414], "LapRLS": [0.62], "RLS": [0.396],
                            "PRLS": [0.52], "kNN": [0.42], "RandomForest": [16.0], "LDCV": [0.383]})
    ranking.accuracy_time_figure(ranks, seconds, tmp_path / "at", "crowded")
    (fig,) = kept
    fig.canvas.draw()
    ax, renderer = fig.axes[0], fig.canvas.get_renderer()
    points = {m: ax.transData.transform((seconds[m][0], r)) for m, r in ranks.items()}
    labels = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    assert set(labels) == set(ranks)
    for t in ax.texts:  # a label's anchor: the middle of the edge on its point's side
        box = labels[t.get_text()]
        anchor = (box.x0 if t.get_horizontalalignment() == "left" else box.x1, (box.y0 + box.y1) / 2)
        nearest = min(points, key=lambda k: math.dist(points[k], anchor))
        assert nearest == t.get_text(), (t.get_text(), nearest)
    assert _overlaps(list(labels.values())) == []
    import matplotlib.pyplot as plt

    plt.close(fig)
