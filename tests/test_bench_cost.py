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
        # every setting × inner folds, and the refit (no halving here: a quarter of an inner
        # training fold would hold fewer than 10 rows per class)
        assert c["fits"] == tune.size * tune.cv + 1
        assert c["rows"] == c["n"] and c["n_train"] == c["n"] * 4 // 5  # outer fold 0 of 5
        assert c["cpu_seconds"] > 0 and c["wall_seconds"] > 0
        assert 0 <= c["accuracy"] <= 1
    assert {c["method"]: c["fits"] for c in tiny} == {"kNN": 12 * 3 + 1, "LogReg": 12 * 3 + 1}


def test_table_structure(tiny):
    text = cost.cost_markdown(tiny)
    lines = text.splitlines()
    assert lines[0].startswith("**sklearn-wine** (13 features, 3 classes)")
    header = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    assert lines[header] == "| method | fits | n = 60 | n = 120 | wall s (largest measured) |"
    assert lines[header + 1] == "|---|---|---|---|---|"
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[header + 2:header + 5]]
    assert [r[0] for r in rows] == ["kNN", "LogReg", "**all methods**"]
    assert rows[0][1] == "37" and rows[1][1] == "37"
    assert all(len(r) == 5 for r in rows)
    assert "extrapolated" not in text
    assert any(line.startswith("- n = 120: the fold costs") for line in lines)
    with_shipped = cost.cost_markdown(tiny, shipped={("sklearn-wine", "kNN"): 1.0}).splitlines()
    assert with_shipped[header] == "| method | fits | shipped run, n = 500 | n = 60 | n = 120 | wall s (largest measured) |"
    assert with_shipped[header + 2].startswith("| kNN | 37 | 0.20 | ") and with_shipped[header + 3].startswith("| LogReg | 37 | – | ")


class FakeWorker:
    """Stands in for :class:`cost.CellWorker`: a whole fold costs a · n^slope CPU seconds
    (killed above the kill limit); a sample estimates 0.8 of it and costs a tenth."""

    def __init__(self, a: float, slope: float) -> None:
        self.a, self.slope = a, slope
        self.asked: list[tuple[int, str]] = []

    def __call__(self) -> FakeWorker:
        return self

    def run(self, n: int, data_path: str, kill_cpu: float, mode: str = "full") -> dict:
        self.asked.append((n, mode))
        seconds = self.a * n**self.slope
        if mode == "full":
            if seconds > kill_cpu:
                return {"status": "timeout", "mode": mode, "message": "killed"}
            return {"status": "ok", "mode": mode, "cpu_seconds": seconds, "wall_seconds": 2 * seconds,
                    "run_cpu_seconds": seconds, "fits": 7}
        return {"status": "ok", "mode": mode, "cpu_seconds": 0.8 * seconds, "wall_seconds": 1.6 * seconds,
                "run_cpu_seconds": 0.1 * seconds, "fits": 7}


def grow(worker: FakeWorker, sizes=(500, 2000, 5000), max_seconds=10.0, full_rows=None):
    return cost._grow(worker, "set", "M", list(sizes), max_seconds, lambda n: "unused", full_rows, None, None)


def test_whole_folds_within_the_ceiling_then_a_calibrated_sample():
    worker = FakeWorker(a=1e-6, slope=2.0)  # 0.25 s at 500, 4 s at 2,000, 25 s at 5,000
    cells = grow(worker)
    # whole folds while predicted within 10 s, each with its calibration sample; 5,000 sampled
    assert worker.asked == [(500, "full"), (500, "sampled"), (2000, "full"), (2000, "sampled"), (5000, "sampled")]
    assert [c["estimate"] for c in cells] == ["full", "full", "sampled"]
    assert [c["measured"] for c in cells] == [True, True, False]
    last = cells[-1]
    assert last["calibration"] == pytest.approx(1 / 0.8) and last["calibrated_at"] == 2000
    assert last["cpu_seconds"] == pytest.approx(25.0)  # 0.8 × 25, times the calibration
    text = cost.cost_markdown(cells)
    assert "| M | 7 | 0.25 | 4.0 | 25 (sampled, ×1.25) |" in text


def test_a_sample_predicted_over_the_ceiling_is_extrapolated_and_marked():
    worker = FakeWorker(a=1e-4, slope=2.0)  # 25 s at 500: over the 10 s ceiling, under the kill
    cells = grow(worker)
    assert worker.asked == [(500, "full"), (500, "sampled")]  # 2,000's sample: 2.5 × 16 = 40 s predicted
    assert cells[0]["measured"] and cells[0]["cpu_seconds"] == pytest.approx(25.0)
    for c in cells[1:]:
        assert c["extrapolated"] and c["status"] == "extrapolated" and not c["measured"]
        assert c["default_slope"] and c["slope"] == cost.DEFAULT_SLOPE and c["from_n"] == 500
        assert c["cpu_seconds"] == pytest.approx(25.0 * (c["n"] / 500) ** cost.DEFAULT_SLOPE)
    assert "400 (extrapolated, slope 2.0 assumed)" in cost.cost_markdown(cells)


def test_a_killed_whole_fold_falls_back_to_a_sample():
    worker = FakeWorker(a=0.1 / 500**3, slope=3.0)  # 0.1 s at 500; 2,000 predicted 1.6 s (slope 2 assumed) ...
    cells = grow(worker, sizes=(500, 2000, 2500), max_seconds=2.0)  # ... takes 6.4 s: killed at 3 × 2 s
    # no whole fold after a killed one: 2,500 is sampled directly
    assert worker.asked == [(500, "full"), (500, "sampled"), (2000, "full"), (2000, "sampled"), (2500, "sampled")]
    killed = cells[1]
    assert killed["killed"] and killed["estimate"] == "sampled" and not killed["measured"]
    assert killed["cpu_seconds"] == pytest.approx(0.8 * 6.4 * (0.1 / 0.08))
    assert "the whole fold was killed" in cost.cost_markdown(cells)


def test_a_set_smaller_than_a_cap_is_used_whole():
    worker = FakeWorker(a=1e-3, slope=1.0)
    cells = grow(worker, sizes=(500, 2000, 5000), full_rows=1500, max_seconds=100.0)
    assert [n for n, mode in worker.asked if mode == "full"] == [500, 1500]
    assert [c["rows_used"] for c in cells] == [500, 1500, 1500]
    assert cells[2]["cpu_seconds"] == cells[1]["cpu_seconds"]
    assert "[1,500 rows: the whole set]" in cost.cost_markdown(cells)


def test_benchmark_hours_scale_unmeasured_sets_by_the_measured_growth():
    cells = [{"dataset": "big", "method": "M", "n": n, "rows_used": n, "cpu_seconds": s}
             for n, s in ((500, 10.0), (2000, 160.0), (5000, 1000.0))]
    shipped = {("big", "M"): 55.0, ("small", "M"): 3600.0, ("mid", "M"): 3600.0}
    rows = {"big": 20000, "small": 300, "mid": 1000}
    hours = cost.benchmark_hours(cells, shipped, rows, caps=(500, 1000, 2000))
    growth_1000 = math.exp(math.log(10) + 0.5 * (math.log(160) - math.log(10))) / 10  # 4: slope 2 between the caps
    protocol = 5 * 10 / 55.0  # the cells' protocol costs 50 s where the shipped run took 55 on "big"
    assert hours["measured_sets"] == ["big"]
    assert hours["by_method"][500]["M"] == pytest.approx((5 * 10 + 3600 * protocol + 3600 * protocol) / 3600)
    assert hours["by_method"][1000]["M"] == pytest.approx((5 * 40 + 3600 * protocol * (1 + growth_1000)) / 3600)
    # "mid" has 1,000 rows: at the 2,000 cap it is used whole
    assert hours["by_method"][2000]["M"] == pytest.approx((5 * 160 + 3600 * protocol * (1 + growth_1000)) / 3600)
    assert hours["total"] == {cap: hours["by_method"][cap]["M"] for cap in (500, 1000, 2000)}
    assert cost.hours_markdown(hours).splitlines()[2].startswith("| 500 | 1.8 |")


def test_a_single_point_chain_takes_the_methods_slope_on_other_sets():
    a = grow(FakeWorker(a=1e-6, slope=1.5), max_seconds=1e3)  # set A: measured to 5,000 (slope 1.5)
    b = grow(FakeWorker(a=1e-4, slope=2.0), sizes=(500, 2000))  # set B: one point, then assumed slope 2
    b = [{**c, "dataset": "B"} for c in b]
    assert b[1]["default_slope"]
    assert cost.method_slopes(a + b) == {"M": pytest.approx(1.5)}
    fixed = cost.with_method_slopes(a + b)
    assert fixed[:3] == a
    assert fixed[-1]["slope"] == pytest.approx(1.5) and fixed[-1]["slope_from"] == "other sets"
    assert fixed[-1]["cpu_seconds"] == pytest.approx(b[0]["cpu_seconds"] * 4**1.5)
    assert "(extrapolated, slope 1.5 of other sets)" in cost.cost_markdown(fixed)


def test_bad_cost_options_are_one_line_errors_naming_the_option(tmp_path) -> None:
    from typer.testing import CliRunner

    from lkm.cli import app

    for args, words in ((["--sizes", "abc"], "--sizes: expected comma-separated whole numbers, got 'abc'"),
                        (["--from-cells", str(tmp_path / "none.jsonl")], "--from-cells")):
        res = CliRunner().invoke(app, ["bench", "--cost", *args])
        assert res.exit_code == 2, res.output
        assert words in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_from_cells_totals_the_whole_benchmark_at_the_caps_given_by_sizes() -> None:
    """The whole benchmark's CPU-hours at the caps ``--sizes`` names, read off the committed
    cells and the shipped pack (docs/speed.md: 4.2 at 700 rows against the 500-row pack the
    cells were measured beside); nothing is measured. The totals grow with the cap, and the
    wall-clock column is half the CPU-hours (two perfectly packed cores)."""
    from pathlib import Path

    from typer.testing import CliRunner

    from lkm.cli import app

    cells = Path(__file__).resolve().parents[1] / "docs" / "bench" / "cost-2026-11-29-equal-budget.cells.jsonl"
    res = CliRunner().invoke(app, ["bench", "--cost", "--from-cells", str(cells), "--sizes", "500,700,2000"])
    assert res.exit_code == 0, res.output
    caps = [line.split("|")[1].strip() for line in res.output.splitlines() if line.startswith("| ") and " h |" in line]
    assert caps == ["500", "700", "2,000"]
    rows = [[c.strip() for c in line.split("|")[1:4]] for line in res.output.splitlines()
            if line.startswith("| ") and " h |" in line]
    hours = [float(cpu) for _, cpu, _ in rows]
    assert hours == sorted(hours) and hours[0] < hours[-1]
    for _, cpu, wall in rows:
        assert abs(float(wall.removesuffix(" h")) - float(cpu) / 2) <= 0.051


def test_the_shipped_runs_cap_is_read_from_its_spec(tmp_path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("datasets:\n  - {name: a, subsample: 700}\n  - {name: b, subsample: 700}\n")
    assert cost.run_cap(spec) == 700
    spec.write_text("datasets:\n  - {name: a}\n")
    assert cost.run_cap(spec) == cost.SHIPPED_CAP
    assert cost.run_cap(tmp_path / "none.yaml") == cost.SHIPPED_CAP
