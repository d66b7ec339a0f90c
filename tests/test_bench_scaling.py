"""The scaling benchmark (lkm bench --scaling): cells, failures, slopes, table and figure."""

from __future__ import annotations

import pytest

from lkm.bench.scaling import (
    loglog_slope,
    predicted_seconds,
    run_scaling,
    scaling_figure,
    scaling_markdown,
    slopes,
)


def test_loglog_slope_recovers_the_exponent_and_ignores_small_n():
    ns = [1000, 2000, 4000, 8000]
    seconds = [50.0] + [3e-9 * n**2 for n in ns[1:]]  # the n = 1000 point is overhead
    assert loglog_slope(ns, seconds) == pytest.approx(2.0)
    assert loglog_slope([1000, 2000], [1.0, 2.0]) is None  # one point at n >= 2000


@pytest.fixture(scope="module")
def letter_cells(data_dir):
    return run_scaling(problems=["letter"], methods=["svc", "lpl_exact"], sizes=(500,), max_n=1000, data_dir=data_dir)


def test_each_cell_reports_seconds_accuracy_and_peak_memory(letter_cells):
    assert [(c["method"], c["n"], c["status"]) for c in letter_cells] == [
        ("svc", 500, "ok"), ("svc", 1000, "ok"), ("lpl_exact", 500, "ok"), ("lpl_exact", 1000, "ok")]
    for cell in letter_cells:
        assert cell["seconds"] == pytest.approx(cell["fit_seconds"] + cell["predict_seconds"])
        assert 0.5 < cell["accuracy"] <= 1.0  # 26 letters: chance is 4 %
        assert cell["peak_bytes"] >= cell["data_bytes"] > 0


def test_table_and_figure_show_every_method(letter_cells, tmp_path):
    table = scaling_markdown(letter_cells)
    assert "| svc |" in table and "| lpl_exact |" in table and "n = 1,000" in table
    assert set(slopes(letter_cells)) == {("letter", "svc"), ("letter", "lpl_exact")}
    path = scaling_figure(letter_cells, tmp_path / "scaling.png")
    assert path.stat().st_size > 10_000


def test_a_cell_over_the_time_limit_stops_the_method_and_is_named(data_dir):
    cells = run_scaling(problems=["letter"], methods=["svc"], sizes=(500,), max_n=1000, max_seconds=1e-3, data_dir=data_dir)
    assert [c["status"] for c in cells] == ["timeout", "skipped"]
    assert "over 0.001 s" in cells[0]["message"] and cells[1]["message"] == "timeout at n = 500"
    assert "timeout" in scaling_markdown(cells)


def test_the_table_gives_pl_over_kernel_ridge_at_each_n(data_dir):
    cells = run_scaling(problems=["letter"], methods=["pl", "kernel_ridge"], sizes=(500,), max_n=500, data_dir=data_dir)
    assert [(c["method"], c["status"]) for c in cells] == [("pl", "ok"), ("kernel_ridge", "ok")]
    assert cells[0]["accuracy"] == pytest.approx(cells[1]["accuracy"], abs=0.02)  # nearly the same interpolant
    assert "- pl / kernel_ridge (target <= 1.2): 500: " in scaling_markdown(cells)


def test_the_next_size_is_predicted_at_the_measured_slope_but_never_below_linear():
    assert predicted_seconds([1000, 2000], [1.0, 4.0], 4000) == pytest.approx(16.0)
    assert predicted_seconds([1000], [2.0], 4000) == pytest.approx(8.0)
    assert predicted_seconds([1000, 2000], [3.0, 2.0], 4000) == pytest.approx(4.0)
