"""The cross-paper comparison: Demšar's (2006, JMLR 7, Sec. 3.2.2) average ranks,
Friedman and Iman–Davenport tests and Nemenyi critical difference (lkm.numerics.stats), and the
ranking, friedman.json and critical-difference diagram written from a smoke run of
lkm/papers/specs/cross_paper.yaml (lkm.report.ranking)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.numerics.stats import average_ranks, friedman, friedman_from_ranks, nemenyi_cd, nemenyi_q
from lkm.papers import CROSS_SPEC
from lkm.report.ranking import (
    RUN_NAME,
    cross_paper_table,
    nemenyi_groups,
    write_cross_paper,
)
from lkm.spec import load_spec

REPO = Path(__file__).resolve().parents[1]

# -- the statistics ------------------------------------------------------------------------

# 4 data sets x 3 methods, B and A tied on d2. By hand:
#   ranks  d1: 1 2 3   d2: 1.5 1.5 3   d3: 2 1 3   d4: 3 2 1
#   R = (7.5/4, 6.5/4, 10/4) = (1.875, 1.625, 2.5)           (sum k(k+1)/2 = 6)
#   chi2_F = 12·4/(3·4) · (1.875² + 1.625² + 2.5² − 3·4²/4) = 4 · (12.40625 − 12) = 1.625
#   F_F = (4 − 1)·1.625 / (4·2 − 1.625) = 4.875 / 6.375 = 13/17, df (2, 6)
#   p(chi2, 2 df) = exp(−1.625/2);  p(F(2, 6) > f) = (1 + f/3)^(−3) = (51/64)^3
#   CD (k = 3, N = 4) = 2.343·sqrt(3·4/(6·4)) = 2.343·sqrt(1/2) = 1.657
HAND = pd.DataFrame(
    [[0.90, 0.80, 0.70], [0.85, 0.85, 0.60], [0.70, 0.75, 0.65], [0.60, 0.65, 0.70]],
    index=["d1", "d2", "d3", "d4"], columns=["A", "B", "C"],
)

# Demšar (2006), Table 6: AUC of C4.5 with m and cf tuned, as printed (3 decimals).
DEMSAR_METHODS = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
DEMSAR_TABLE6 = np.array([
    [0.763, 0.768, 0.771, 0.798],  # adult (sample)
    [0.599, 0.591, 0.590, 0.569],  # breast cancer
    [0.954, 0.971, 0.968, 0.967],  # breast cancer wisconsin
    [0.628, 0.661, 0.654, 0.657],  # cmc
    [0.882, 0.888, 0.886, 0.898],  # ionosphere
    [0.936, 0.931, 0.916, 0.931],  # iris
    [0.661, 0.668, 0.609, 0.685],  # liver disorders
    [0.583, 0.583, 0.563, 0.625],  # lung cancer
    [0.775, 0.838, 0.866, 0.875],  # lymphography
    [1.000, 1.000, 1.000, 1.000],  # mushroom
    [0.940, 0.962, 0.965, 0.962],  # primary tumor
    [0.619, 0.666, 0.614, 0.669],  # rheum
    [0.972, 0.981, 0.975, 0.975],  # voting
    [0.957, 0.978, 0.946, 0.970],  # wine
])
DEMSAR_RANKS = [3.143, 2.000, 2.893, 1.964]


def test_friedman_matches_the_hand_computed_example_with_a_tie() -> None:
    r = friedman(HAND)
    assert (r.n_datasets, r.n_methods, r.methods) == (4, 3, ("A", "B", "C"))
    assert r.average_ranks == pytest.approx((1.875, 1.625, 2.5))
    assert r.chi2 == pytest.approx(1.625)
    assert r.p_chi2 == pytest.approx(math.exp(-1.625 / 2))
    assert r.f_f == pytest.approx(13 / 17)
    assert (r.df1, r.df2) == (2, 6)
    assert r.p_f == pytest.approx((51 / 64) ** 3)
    assert not r.significant()
    assert nemenyi_cd(3, 4) == pytest.approx(2.343 * math.sqrt(0.5), abs=1e-3)


def test_average_ranks_give_tied_methods_the_mean_of_their_ranks() -> None:
    ranks = average_ranks(HAND)
    assert isinstance(ranks, pd.Series) and list(ranks.index) == ["A", "B", "C"]
    assert ranks.tolist() == pytest.approx([1.875, 1.625, 2.5])
    # three-way tie for first of four: each gets (1 + 2 + 3)/3 = 2, the last 4
    assert average_ranks(np.array([[0.9, 0.9, 0.9, 0.1]])).tolist() == [2.0, 2.0, 2.0, 4.0]


def test_demsar_table6_gives_his_average_ranks_and_statistics() -> None:
    # As printed, voting ties C4.5+cf and C4.5+m+cf (0.975): 2.5 each.
    printed = average_ranks(DEMSAR_TABLE6)
    assert printed == pytest.approx([44 / 14, 28 / 14, 41 / 14, 27 / 14])
    # Demšar's ranks (3.143, 2.000, 2.893, 1.964) put C4.5+cf ahead on voting (the
    # printed 0.975s differ beyond the third decimal): break that tie as he did.
    table = DEMSAR_TABLE6.copy()
    table[12, 2] = 0.97501
    r = friedman(pd.DataFrame(table, columns=DEMSAR_METHODS))
    assert r.average_ranks == pytest.approx(DEMSAR_RANKS, abs=5e-4)
    assert r.chi2 == pytest.approx(9.28, abs=0.005)
    assert r.f_f == pytest.approx(3.69, abs=0.005)
    assert (r.df1, r.df2) == (3, 39)
    assert r.p_f < 0.05 and r.significant()  # "we can reject the null hypothesis"
    cd = nemenyi_cd(4, 14)
    assert cd == pytest.approx(1.25, abs=0.005)
    # his conclusion: only C4.5 vs C4.5+m+cf is (nearly) beyond CD at 0.05; no pair is
    ranks = r.ranks
    assert all(abs(ranks[a] - ranks[b]) < cd for a in ranks for b in ranks)


def test_friedman_from_demsar_printed_average_ranks() -> None:
    r = friedman_from_ranks(DEMSAR_RANKS, 14, DEMSAR_METHODS)
    assert r.chi2 == pytest.approx(9.28, abs=0.01)
    assert r.f_f == pytest.approx(3.69, abs=0.01)
    assert r.ranks == dict(zip(DEMSAR_METHODS, DEMSAR_RANKS, strict=True))


@pytest.mark.parametrize("k, q", [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850), (7, 2.949),
                                  (8, 3.031), (9, 3.102), (10, 3.164)])
def test_nemenyi_q_matches_demsar_table_5a(k: int, q: float) -> None:
    assert nemenyi_q(k, 0.05) == pytest.approx(q, abs=1e-3)


def test_ranks_do_not_depend_on_the_order_of_methods_or_data_sets() -> None:
    rng = np.random.default_rng(0)
    scores = pd.DataFrame(rng.integers(60, 70, size=(7, 5)) / 100.0, columns=list("ABCDE"))  # many ties
    base = friedman(scores)
    shuffled = scores.iloc[rng.permutation(7), rng.permutation(5)]
    again = friedman(shuffled)
    assert again.ranks == pytest.approx(base.ranks)
    assert (again.chi2, again.f_f, again.p_f) == pytest.approx((base.chi2, base.f_f, base.p_f))
    assert average_ranks(shuffled)[list("ABCDE")].tolist() == pytest.approx(average_ranks(scores).tolist())


def test_all_ties_and_perfect_agreement_are_the_two_extremes() -> None:
    tied = friedman(np.full((5, 4), 0.8))
    assert tied.average_ranks == (2.5, 2.5, 2.5, 2.5)
    assert (tied.chi2, tied.f_f, tied.p_chi2, tied.p_f) == pytest.approx((0.0, 0.0, 1.0, 1.0))
    same = friedman(np.tile([0.9, 0.8, 0.7], (6, 1)))  # every data set ranks A > B > C
    assert same.average_ranks == (1.0, 2.0, 3.0)
    assert same.chi2 == pytest.approx(6 * 2) and same.f_f == math.inf and same.p_f == 0.0


def test_missing_scores_and_a_single_method_are_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        friedman(np.array([[0.9, np.nan], [0.8, 0.7]]))
    with pytest.raises(ValueError, match="at least 2 methods"):
        friedman(np.array([[0.9], [0.8]]))


def test_nemenyi_groups_are_maximal_runs_within_the_critical_difference() -> None:
    ranks = {"A": 1.0, "B": 1.5, "C": 2.4, "D": 4.0, "E": 4.2}
    assert nemenyi_groups(ranks, 1.5) == [["A", "B", "C"], ["D", "E"]]
    assert nemenyi_groups(ranks, 0.1) == []
    assert nemenyi_groups(ranks, 10) == [["A", "B", "C", "D", "E"]]


# -- the smoke run and its summary ------------------------------------------------------------


@pytest.fixture(scope="module")
def cross_root(tmp_path_factory, benchmark_smoke: Path) -> Path:
    """A copy of the session's `lkm run cross_paper --smoke` in <tmp>/cross_paper-smoke."""
    root = tmp_path_factory.mktemp("cross")
    shutil.copytree(benchmark_smoke, root / f"{RUN_NAME}-smoke")
    return root


def test_smoke_summary_ranks_every_method_of_the_spec(cross_root: Path) -> None:
    paths = write_cross_paper(cross_root, smoke=True)
    out = cross_root / "cross_paper_summary-smoke"
    names = {p.name for p in paths}
    assert {"ranking.md", "ranking.csv", "ranking.tex", "pairwise.md", "pairwise.csv", "speed.md", "friedman.json",
            "critical_difference.png", "accuracy_time.png", "grid_edges.md", "grid_edges.csv"} <= names
    assert all(p.is_file() and p.parent == out for p in paths)
    edges = pd.read_csv(out / "grid_edges.csv")
    assert set(edges["method"]) == {m.name for m in load_spec(CROSS_SPEC, smoke=True).methods if m.tune is not None}

    from PIL import Image

    with Image.open(out / "critical_difference.png") as im:
        im.verify()
    with Image.open(out / "critical_difference.png") as im:
        assert im.format == "PNG" and im.size[0] > 400 and im.size[1] > 200

    spec = load_spec(CROSS_SPEC, smoke=True)
    methods = [m.name for m in spec.methods]
    assert methods == [m.name for m in load_spec(CROSS_SPEC).methods]  # the smoke run keeps every method
    table = pd.read_csv(out / "ranking.csv")
    assert sorted(table.columns[1:]) == sorted(methods)
    assert table["dataset"].tolist() == [*[d.id for d in spec.datasets], "average rank"]
    avg = table.iloc[-1, 1:].astype(float)
    assert avg.tolist() == sorted(avg.tolist())  # methods ordered by average rank
    assert avg.sum() == pytest.approx(len(methods) * (len(methods) + 1) / 2, abs=0.05)
    assert "SMOKE RUN" in (out / "ranking.md").read_text()

    result = json.loads((out / "friedman.json").read_text())
    assert (result["n_datasets"], result["n_methods"]) == (3, len(methods))
    assert result["cd"] == pytest.approx(nemenyi_cd(len(methods), 3)) and result["alpha"] == 0.05
    k = len(methods)
    assert result["separated_pairs"]["pairs"] == k * (k - 1) // 2
    pairs = pd.read_csv(out / "pairwise.csv")
    assert len(pairs) == k * (k - 1) // 2 and set(pairs["a"]) | set(pairs["b"]) == set(methods)
    speed = pd.read_csv(out / "speed.csv")
    assert speed["method"].tolist() == table.columns[1:].tolist()
    for key in ("chi2", "p_chi2", "f_f", "p_f", "df1", "df2", "average_ranks"):
        assert key in result
    assert result["dropped_methods"] == {}


def _fail(run: Path, method: str, datasets: set[str]) -> None:
    """Turn ``method``'s fold r0f1 on ``datasets`` into a failed fit, in place."""
    for part in (run / "records").glob("part-*.jsonl"):
        lines = []
        for line in part.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("method") == method and rec.get("dataset") in datasets and rec.get("split") == "r0f1":
                rec = {k: v for k, v in rec.items() if k != "accuracy"} | {"status": "error", "error": "boom: refused"}
            lines.append(json.dumps(rec))
        part.write_text("\n".join(lines) + "\n")


def test_a_method_missing_on_one_data_set_costs_that_set_not_its_rank(cross_root: Path, tmp_path: Path) -> None:
    """A failed fold on one of three sets leaves that set out of the ranking (every
    method keeps its place); the caption says which set and why."""
    copy = tmp_path / f"{RUN_NAME}-smoke"
    shutil.copytree(cross_root / f"{RUN_NAME}-smoke", copy)
    _fail(copy, "LDCV", {"sonar"})
    assert math.isnan(cross_paper_table(copy).loc["sonar", "LDCV"])
    write_cross_paper(tmp_path, smoke=True)
    out = tmp_path / "cross_paper_summary-smoke"
    ranking = pd.read_csv(out / "ranking.csv")
    assert "LDCV" in ranking.columns and "sonar" not in ranking["dataset"].tolist()
    md = (out / "ranking.md").read_text()
    assert "data sets left out" in md and "sonar (LDCV: 1 of 3 folds failed: boom: refused)" in md
    result = json.loads((out / "friedman.json").read_text())
    assert (result["n_methods"], result["n_datasets"]) == (19, 2)


def test_a_method_missing_on_most_data_sets_is_dropped_and_named(cross_root: Path, tmp_path: Path) -> None:
    copy = tmp_path / f"{RUN_NAME}-smoke"
    shutil.copytree(cross_root / f"{RUN_NAME}-smoke", copy)
    _fail(copy, "LDCV", {"sonar", "iris"})
    write_cross_paper(tmp_path, smoke=True)
    out = tmp_path / "cross_paper_summary-smoke"
    assert "LDCV" not in pd.read_csv(out / "ranking.csv").columns
    md = (out / "ranking.md").read_text()
    assert "left out, results on fewer than half the data sets: LDCV (results on 1 of 3 data sets" in md
    assert json.loads((out / "friedman.json").read_text())["n_methods"] == 18


# -- lkm compare ------------------------------------------------------------------------------


def _compare(args: list[str], data_dir: Path, cwd: Path):
    mp = pytest.MonkeyPatch()
    mp.chdir(cwd)
    mp.setenv("LKM_DATA_DIR", str(data_dir))
    mp.setenv("COLUMNS", "160")
    try:
        return CliRunner().invoke(app, ["compare", *args, "--no-progress"], catch_exceptions=False)
    finally:
        mp.undo()


def test_compare_runs_on_the_benchmark_splits(cross_root: Path, data_dir: Path) -> None:
    """The compare spec's data sets, subsample, outer folds and inner CV are the
    reference run's: every planned split has the same training and test rows."""
    from lkm.engine.runner import build_plan
    from lkm.report.compare import compare_spec, inner_cv, method_entry

    ref_dir = cross_root / f"{RUN_NAME}-smoke"
    ref = load_spec(ref_dir / "spec.yaml")
    spec = compare_spec(ref_dir, method_entry("sklearn.neighbors.KNeighborsClassifier", "kNN-new",
                                              {"n_neighbors": [1, 5]}, *inner_cv(ref_dir)))
    assert [d.model_dump() for d in spec.datasets] == [d.model_dump() for d in ref.datasets]
    assert spec.protocol == ref.protocol and spec.preprocessing == ref.preprocessing
    assert spec.methods[0].tune.cv == 3 and spec.methods[0].tune.seed == 0
    a, b = build_plan(ref, data_dir=str(data_dir)), build_plan(spec, data_dir=str(data_dir))
    assert a.splits.keys() == b.splits.keys()
    for d in a.splits:
        assert [(s.train.tolist(), s.test.tolist()) for s in a.splits[d]] == \
            [(s.train.tolist(), s.test.tolist()) for s in b.splits[d]]


def test_compare_ranks_a_new_method_without_refitting_the_others(cross_root: Path, data_dir: Path, tmp_path: Path) -> None:
    ref = cross_root / f"{RUN_NAME}-smoke"
    before = sorted(p.stat().st_mtime_ns for p in (ref / "records").glob("*"))
    res = _compare(["sklearn.neighbors.KNeighborsClassifier", "--param", "n_neighbors=1,5", "--name", "kNN-new",
                    "--against", str(ref), "--smoke"], data_dir, tmp_path)
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    # the benchmark's budget (4 settings drawn, halving by 2): (4 + 2) x 3 inner fits + 1 refit, at most
    assert "9 outer folds on 3 data sets, 4 settings drawn from ranges" in said and "171 model fits in all" in said
    assert "kNN-new: rank" in res.output and "of 20" in res.output
    out = tmp_path / "results" / "compare" / "kNN-new-smoke" / "comparison"
    pairs = pd.read_csv(out / "pairwise.csv")
    assert (pairs["a"] == "kNN-new").all() and len(pairs) == 19
    assert json.loads((out / "friedman.json").read_text())["n_methods"] == 20
    assert (out / "critical_difference.png").is_file() and (out / "accuracy_time.png").is_file()
    assert sorted(p.stat().st_mtime_ns for p in (ref / "records").glob("*")) == before  # the others untouched


def test_compare_ranks_a_method_that_fails_on_some_sets_on_the_rest_with_a_warning(
        cross_root: Path, data_dir: Path, tmp_path: Path) -> None:
    """LDCV with K = 3 cannot run on iris (C·(K-1) = 6 >= d = 4): recorded as failed,
    ranked on sonar and heart-statlog, and the command warns."""
    ref = cross_root / f"{RUN_NAME}-smoke"
    res = _compare(["ldcv", "--param", "n_neighbors=3", "--name", "LDCV-K3", "--against", str(ref), "--smoke"],
                   data_dir, tmp_path)
    assert res.exit_code == 0, res.output
    assert "warning:" in res.output and "LDCV-K3 has no result on 1 data set(s)" in res.output and "iris" in res.output
    out = tmp_path / "results" / "compare" / "LDCV-K3-smoke" / "comparison"
    result = json.loads((out / "friedman.json").read_text())
    assert result["n_datasets"] == 2 and "iris" in result["dropped_datasets"]
    assert "3 of 3 folds failed" in result["failed_datasets"]["iris"] and "pooled difference vectors" in result["failed_datasets"]["iris"]


def test_compare_refuses_bad_input_in_one_line(cross_root: Path, data_dir: Path, tmp_path: Path) -> None:
    ref = cross_root / f"{RUN_NAME}-smoke"
    res = _compare(["knn", "--against", str(ref)], data_dir, tmp_path)
    assert res.exit_code == 2 and "knn" in res.output
    res = _compare(["svm", "--param", "C", "--against", str(ref)], data_dir, tmp_path)
    assert res.exit_code == 2 and "NAME=GRID" in res.output
    res = _compare(["svm", "--name", "SVM", "--against", str(ref)], data_dir, tmp_path)
    assert res.exit_code == 2 and "give another with --name" in res.output
    res = _compare(["svm", "--against", str(tmp_path)], data_dir, tmp_path)
    assert res.exit_code == 2 and "no spec.yaml" in res.output


def test_the_published_benchmark_records_match_their_pin() -> None:
    from lkm.report.compare import published_run

    run = published_run()
    assert (run / "spec.yaml").is_file() and load_spec(run / "spec.yaml").name == RUN_NAME


def test_the_packaged_spec_runs_the_protocol_declared_before_its_run() -> None:
    """The protocol of the shipped records was committed before any of its fits (a62b0ce,
    then 8711cc2 for the SVMs' wider ranges; docs/benchmark.md): 600 rows, 12 settings per
    method, RandomForest's 100 trees, HistGB's 31 bins, C up to 1e6 for every SVM. A
    change to any of them needs a new run, declared first."""
    now = load_spec(Path(__file__).resolve().parents[1] / "lkm" / "papers" / "specs" / "cross_paper.yaml")
    assert {d.subsample for d in now.datasets} == {600}
    assert {(m.tune.candidates, m.tune.halving, m.tune.cv) for m in now.methods} == {(12, 4, 3)}
    params = {m.name: m.params for m in now.methods}
    assert params["RandomForest"]["n_estimators"] == 100 and params["HistGB"]["max_bins"] == 31
    # widened in 8711cc2, before any fit under them: C to 1e6 for every SVM, SVM-KNN's sigma from 1/16
    space = {m.name: m.tune.space for m in now.methods}
    assert {name: space[name]["C"] for name in ("SVM", "NPPS-SVM", "SVM-KNN", "RBF-SVC")} == \
        dict.fromkeys(("SVM", "NPPS-SVM", "SVM-KNN", "RBF-SVC"), {"log": [0.01, 1e6]})
    assert space["SVM-KNN"]["sigma"] == {"log": [0.0625, 256]}
    assert {space[m.name]["sigma"]["log"][0] for m in now.methods if "sigma" in space[m.name]} == {0.25, 0.0625}
