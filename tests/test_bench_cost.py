"""`lkm bench --cost` (lkm/bench/cost.py): the benchmark's cost per method and outer fold.

One real run on a tiny configuration (sklearn-wine, bundled with scikit-learn, drawn to
60 and 120 rows; kNN and LogReg) checks that the grids and the inner CV come from the
spec and the table's structure; the growth and extrapolation rules are checked with a
stand-in worker (no processes, no clock)."""

from __future__ import annotations

import math

import pytest

from lkm.bench import cost


@pytest.fixture(scope="module")
def tiny():
    return cost.run_cost(["sklearn-wine"], ["kNN", "LogReg"], sizes=[60, 120], max_seconds=1e4, jobs=2)


def test_grids_and_inner_cv_come_from_the_spec(tiny):
    spec = cost.benchmark_spec()
    methods = {m.name: m for m in spec.methods}
    assert [(c["method"], c["n"]) for c in tiny] == [("kNN", 60), ("kNN", 120), ("LogReg", 60), ("LogReg", 120)]
    for c in tiny:
        tune = methods[c["method"]].tune
        assert c["status"] == "ok" and c["measured"] and not c.get("extrapolated")
        assert c["grid_size"] == tune.size == c["spec_grid_size"]
        assert c["cv_folds"] == tune.cv == 3
        assert c["fits"] == tune.size * tune.cv + 1  # the whole grid × inner folds, and the refit
        assert c["rows"] == c["n"] and c["n_train"] == c["n"] * 4 // 5  # outer fold 0 of 5
        assert c["cpu_seconds"] > 0 and c["wall_seconds"] > 0
        assert 0 <= c["accuracy"] <= 1
    assert {c["method"]: c["fits"] for c in tiny} == {"kNN": 6 * 3 + 1, "LogReg": 5 * 3 + 1}


def test_table_structure(tiny):
    text = cost.cost_markdown(tiny)
    lines = text.splitlines()
    assert lines[0].startswith("**sklearn-wine** (13 features, 3 classes)")
    header = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    assert lines[header] == "| method | fits | n = 60 | n = 120 | wall s (largest measured) |"
    assert lines[header + 1] == "|---|---|---|---|---|"
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[header + 2:header + 5]]
    assert [r[0] for r in rows] == ["kNN", "LogReg", "**all methods**"]
    assert rows[0][1] == "19" and rows[1][1] == "16"
    assert all(len(r) == 5 for r in rows)
    assert "extrapolated" not in text
    assert any(line.startswith("- n = 120: the fold costs") for line in lines)


class FakeWorker:
    """Stands in for :class:`cost.CellWorker`: CPU seconds = a · n^slope, or a timeout."""

    def __init__(self, a: float, slope: float, timeout_at: int | None = None) -> None:
        self.a, self.slope, self.timeout_at = a, slope, timeout_at
        self.asked: list[int] = []

    def run(self, n: int, data_path: str, max_seconds: float) -> dict:
        self.asked.append(n)
        if self.timeout_at is not None and n >= self.timeout_at:
            return {"status": "timeout", "message": "killed"}
        seconds = self.a * n**self.slope
        return {"status": "ok", "cpu_seconds": seconds, "wall_seconds": 2 * seconds, "fits": 7,
                "over_ceiling": seconds > max_seconds}


def grow(worker: FakeWorker, sizes=(500, 1000, 2000, 5000), max_seconds=100.0, full_rows=None):
    return cost._grow(worker, "set", "M", list(sizes), max_seconds, lambda n: "unused", full_rows, None, None)


def test_sizes_predicted_over_the_ceiling_are_extrapolated_at_the_measured_slope():
    worker = FakeWorker(a=1e-6, slope=2.0)  # 0.25 s at 500, 1 s at 1,000, 4 s at 2,000, 25 s at 5,000
    cells = grow(worker, max_seconds=10.0)
    assert worker.asked == [500, 1000, 2000]
    assert [c["measured"] for c in cells] == [True, True, True, False]
    last = cells[-1]
    assert last["extrapolated"] and last["status"] == "skipped" and last["from_n"] == 2000
    assert last["slope"] == pytest.approx(2.0) and not last["default_slope"]
    assert last["cpu_seconds"] == pytest.approx(25.0)
    assert "predicted 25 CPU s > ceiling 10 s" in last["message"]
    text = cost.cost_markdown(cells)
    assert "| M | 7 | 0.25 | 1.0 | 4.0 | 25 (extrapolated, slope 2.0) |" in text


def test_one_measured_cell_takes_the_default_slope_and_a_cell_over_the_ceiling_ends_the_chain():
    worker = FakeWorker(a=1.0, slope=1.0)  # 500 s at n = 500: over the 100 s ceiling
    cells = grow(worker)
    assert worker.asked == [500]
    assert cells[0]["measured"] and cells[0]["over_ceiling"]
    for c in cells[1:]:
        assert c["extrapolated"] and c["default_slope"] and c["slope"] == cost.DEFAULT_SLOPE
        assert c["cpu_seconds"] == pytest.approx(500.0 * (c["n"] / 500) ** cost.DEFAULT_SLOPE)


def test_a_killed_cell_is_extrapolated_at_least_to_the_ceiling():
    worker = FakeWorker(a=1e-3, slope=1.0, timeout_at=2000)  # 0.5 s, 1 s, then killed
    cells = grow(worker)
    assert worker.asked == [500, 1000, 2000]
    killed = cells[2]
    assert killed["status"] == "timeout" and killed["extrapolated"] and not killed["measured"]
    assert killed["cpu_seconds"] == pytest.approx(100.0)  # the ceiling, above the slope's 2 s
    assert cells[3]["extrapolated"] and cells[3]["status"] == "skipped"
    assert "timeout" in cost.cost_markdown(cells)


def test_a_set_smaller_than_a_cap_is_used_whole():
    worker = FakeWorker(a=1e-3, slope=1.0)
    cells = grow(worker, sizes=(500, 2000, 5000), full_rows=1500)
    assert worker.asked == [500, 1500]
    assert [c["rows_used"] for c in cells] == [500, 1500, 1500]
    assert cells[2]["cpu_seconds"] == cells[1]["cpu_seconds"]
    assert "(1,500 rows: the whole set)" in cost.cost_markdown(cells)


def test_benchmark_hours_scale_unmeasured_sets_by_the_measured_growth():
    cells = [{"dataset": "big", "method": "M", "n": n, "rows_used": n, "cpu_seconds": s}
             for n, s in ((500, 10.0), (2000, 160.0), (5000, 1000.0))]
    shipped = {("big", "M"): 55.0, ("small", "M"): 3600.0, ("mid", "M"): 3600.0}
    rows = {"big": 20000, "small": 300, "mid": 1000}
    hours = cost.benchmark_hours(cells, shipped, rows, caps=(500, 1000, 2000))
    growth_1000 = math.exp(math.log(10) + 0.5 * (math.log(160) - math.log(10))) / 10  # 4: slope 2 between the caps
    assert hours["measured_sets"] == ["big"]
    assert hours["by_method"][500]["M"] == pytest.approx((5 * 10 + 3600 + 3600) / 3600)
    assert hours["by_method"][1000]["M"] == pytest.approx((5 * 40 + 3600 + 3600 * growth_1000) / 3600)
    # "mid" has 1,000 rows: at the 2,000 cap it is used whole
    assert hours["by_method"][2000]["M"] == pytest.approx((5 * 160 + 3600 + 3600 * growth_1000) / 3600)
    assert hours["total"] == {cap: hours["by_method"][cap]["M"] for cap in (500, 1000, 2000)}
    assert cost.hours_markdown(hours).splitlines()[2].startswith("| 500 | 2.0 |")
