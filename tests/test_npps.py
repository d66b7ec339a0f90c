"""NPPS (Shin and Cho, Sec. 2, Fig. 4): the two measures, naive vs fast, NPPSSVM."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from lkm.data import load_dataset
from lkm.errors import ParameterClipped
from lkm.methods import METHODS, NPPS, NPPSSVM, SVMClassifier
from lkm.methods.npps import (
    FALLBACK_ALL,
    neighbor_class_counts,
    neighbors_entropy,
    neighbors_match,
    tie_ruled_neighbors,
)
from lkm.numerics.kernels import DistanceCache
from lkm.numerics.preprocessing import preprocess


def _standardized(X: np.ndarray) -> np.ndarray:
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _two_gaussians(n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two 2-D Gaussians 4 standard deviations apart: a thin overlap region."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = rng.normal(size=(n, 2))
    X[:, 0] += np.where(y == 1, 2.0, -2.0)
    return X, y


# ---------------------------------------------------------------- the measures, by hand


def test_entropy_and_match_by_hand() -> None:
    # 1-D, k = 3. Ties go to the lower index; x7 duplicates x6 with the other label.
    X = np.array([0.0, 1, 2, 3, 4, 5, 20, 20])[:, None]
    y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    # Neighbour labels worked out by hand:
    #   x0: x1 x2 x3 -> 0 0 1     x1: x0 x2 x3 -> 0 0 1     x2: x1 x3 x0 -> 0 1 0
    #   x3: x2 x4 x1 -> 0 1 0     x4: x3 x5 x2 -> 1 1 0     x5: x4 x3 x2 -> 1 1 0
    #   x6: x7 x5 x4 -> 0 1 1     x7: x6 x5 x4 -> 1 1 1
    h = (1 / 3) * math.log2(3) + (2 / 3) * math.log2(3 / 2)  # P = (1/3, 2/3), base J = 2
    entropy = [h, h, h, h, h, h, h, 0.0]
    match = [2 / 3, 2 / 3, 2 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3, 0.0]
    sampler = NPPS(k=3, beta=1.0, method="naive").fit(X, y)
    np.testing.assert_allclose(sampler.neighbors_entropy_, entropy, rtol=1e-12, atol=0)
    np.testing.assert_allclose(sampler.neighbors_match_, match, rtol=1e-12)
    # beta = 1: Match >= 1/2 and Entropy > 0; x6 counts its duplicate x7 as a neighbour.
    np.testing.assert_array_equal(sampler.sample_indices_, [0, 1, 2, 4, 5, 6])
    # beta = 0.5: Match >= 1/4 also keeps x3; x7 (Entropy 0) never.
    X_sel, y_sel = NPPS(k=3, beta=0.5, method="naive").fit_resample(X, y)
    np.testing.assert_array_equal(X_sel[:, 0], [0, 1, 2, 3, 4, 5, 20])
    np.testing.assert_array_equal(y_sel, [0, 0, 0, 1, 1, 1, 1])


def test_entropy_uses_log_base_j_and_match_threshold_is_exact() -> None:
    # 3 classes, k = 3: x0 sees classes 1,2,0 (Entropy 1, Match 1/3 = beta/J for beta=1).
    X = np.array([0.0, 1, 2, 3])[:, None]
    y = np.array([0, 1, 2, 0])
    s = NPPS(k=3, beta=1.0, method="naive").fit(X, y)
    h = (2 / 3) * math.log(3 / 2, 3) + (1 / 3) * math.log(3, 3)  # P = (2/3, 0, 1/3)
    np.testing.assert_allclose(s.neighbors_entropy_, [1.0, h, h, 1.0], rtol=1e-12)
    np.testing.assert_allclose(s.neighbors_match_, [1 / 3, 0, 0, 1 / 3])
    np.testing.assert_array_equal(s.sample_indices_, [0, 3])  # 1/3 >= 1/3 holds exactly
    counts = neighbor_class_counts(np.array([[0, 0, 0], [0, 1, 2], [1, 1, 0]]), 3)
    np.testing.assert_array_equal(counts, [[3, 0, 0], [1, 1, 1], [1, 2, 0]])
    np.testing.assert_allclose(neighbors_entropy(counts)[:2], [0.0, 1.0])
    np.testing.assert_allclose(neighbors_match(counts, np.array([0, 2, 1])), [1, 1 / 3, 2 / 3])


# ---------------------------------------------------------------- naive vs fast


@pytest.fixture(scope="module")
def pima(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    d = load_dataset("pima-indians-diabetes", data_dir=data_dir)
    return _standardized(d.X), d.y


@pytest.mark.parametrize("k", [3, 5, 10])
def test_fast_with_all_initial_patterns_is_naive_on_pima(pima, k: int) -> None:
    X, y = pima
    naive = NPPS(k=k, method="naive").fit(X, y)
    fast = NPPS(k=k, method="fast", initial_fraction=1.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(fast.sample_indices_, naive.sample_indices_)
    assert naive.n_evaluated_ == fast.n_evaluated_ == X.shape[0]
    assert 0 < naive.info_["n_selected"] < X.shape[0]


@pytest.mark.parametrize("name", ["sklearn-iris", "sklearn-wine"])
def test_fast_with_all_initial_patterns_is_naive_on_three_classes(name: str) -> None:
    d = load_dataset(name)
    X = _standardized(d.X)
    naive = NPPS(k=5, method="naive").fit(X, d.y)
    fast = NPPS(k=5, initial_fraction=1.0, random_state=3).fit(X, d.y)
    np.testing.assert_array_equal(fast.sample_indices_, naive.sample_indices_)
    assert naive.sample_indices_.size > 0


def test_naive_equals_brute_force_definition(pima) -> None:
    X, y = pima
    X, y = X[:300], y[:300]
    k, beta, J = 7, 0.5, 2
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    expected = []
    for i in range(X.shape[0]):
        nn = np.lexsort((np.arange(X.shape[0]), D[i]))[:k]
        P = np.bincount(y[nn], minlength=J) / k
        entropy = -sum(p * math.log(p, J) for p in P if p > 0)
        if entropy > 0 and np.mean(y[nn] == y[i]) >= beta / J:
            expected.append(i)
    np.testing.assert_array_equal(NPPS(k=k, beta=beta, method="naive").fit(X, y).sample_indices_, expected)


# -- the tie rule: equal distances ordered by the lower training index ---------------------
def test_tie_rule_by_hand() -> None:
    """1-D points 0, 2, 1, 1, 3 (indices 0..4): from x = 1 (index 2) the distances are
    1, 1, 0, 0, 2, so the order is 2, 3 (distance 0, lower index first), then 0, 1
    (distance 1), then 4; from index 3 it is 2, 3, 0, 1, 4 as well. NPPS drops the query
    itself, keeping its duplicate: index 3's 2 nearest others are 2 and 0, not 2 and 1."""
    X = np.array([[0.0], [2.0], [1.0], [1.0], [3.0]])
    lists = tie_ruled_neighbors(X, np.array([2, 3, 0]), 5)
    np.testing.assert_array_equal(lists, [[2, 3, 0, 1, 4], [2, 3, 0, 1, 4], [0, 2, 3, 1, 4]])
    # The same points scaled by 0.1 (inexact in binary: 0.1 + 0.2 != 0.3) keep the rule.
    np.testing.assert_array_equal(tie_ruled_neighbors(0.1 * X, np.array([2, 3, 0]), 5), lists)
    y = np.array([0, 1, 1, 0, 1])
    # k = 2: index 3 (class 0) sees 2 (class 1) and 0 (class 0): entropy > 0, match 1/2 >= 0.5/2.
    # With 1 before 0 (round-off) it would see two class-1 patterns: match 0 -> not selected.
    sel = NPPS(k=2, beta=0.5, method="naive").fit(X, y)
    assert 3 in sel.sample_indices_


def _integer_reference_selection(Xi: np.ndarray, y: np.ndarray, k: int, beta: float) -> np.ndarray:
    """Naive NPPS by the definition on exact integer distances, ties by lower index."""
    D = ((Xi[:, None, :] - Xi[None, :, :]) ** 2).sum(-1)
    n = len(y)
    order = np.argsort(D, axis=1, kind="stable")[:, : k + 1]  # (distance, index) order
    selected = []
    for i in range(n):
        row = [j for j in order[i] if j != i][:k]
        own = int(np.sum(y[row] == y[i]))
        if 0 < own < k and own * 2 >= beta * k:
            selected.append(i)
    return np.array(selected)


@pytest.fixture(scope="module")
def wisconsin(data_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    d = load_dataset("breast-cancer-wisconsin", data_dir=data_dir)
    return d.X.astype(np.int64), np.unique(d.y, return_inverse=True)[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selection_under_row_permutation_follows_the_tie_rule(wisconsin, seed: int) -> None:
    """Wisconsin's integer features (values 1..10, many duplicate rows) scaled to [-1, 1]:
    for the rows in any order, naive NPPS selects exactly what the rule (exact integer
    distances, ties by lower index in that order) predicts, and fast NPPS with all
    patterns as its initial set agrees. (The matrix-product neighbour query used before
    the rule disagreed with it in about 530 of the 683 rows' 20-NN lists.)"""
    Xi, y = wisconsin
    perm = np.random.default_rng(seed).permutation(len(y)) if seed else np.arange(len(y))
    Xp, yp = Xi[perm], y[perm]
    Xs = preprocess("scale", Xp.astype(np.float64), Xp[:1].astype(np.float64))[0]
    for k in (5, 10, 20):
        expected = _integer_reference_selection(Xp, yp, k, 0.5)
        naive = NPPS(k=k, method="naive").fit(Xs, yp).sample_indices_
        fast = NPPS(k=k, initial_fraction=1.0, random_state=seed).fit(Xs, yp).sample_indices_
        np.testing.assert_array_equal(naive, expected)
        np.testing.assert_array_equal(fast, expected)
    assert len(np.unique(Xi, axis=0)) < len(Xi)  # the data do have duplicates: ties matter


def test_fast_selects_most_of_naive_evaluating_far_fewer() -> None:
    # Fast NPPS reaches only the overlap patterns connected (through expanded patterns'
    # k-NN lists) to its random start: with k = 10 that is ~94% of naive's selection
    # here, with k = 5 only ~70% (isolated overlap patterns in the tails are missed).
    X, y = _two_gaussians()
    naive = NPPS(k=10, method="naive").fit(X, y)
    fast = NPPS(k=10, initial_fraction=0.02, random_state=0).fit(X, y)
    naive_set, fast_set = set(naive.sample_indices_), set(fast.sample_indices_)
    assert fast_set <= naive_set  # an evaluated pattern gets naive's verdict
    overlap = len(fast_set) / len(naive_set)
    assert overlap > 0.85, overlap
    assert fast.n_evaluated_ < 0.25 * X.shape[0], fast.info_
    assert naive.info_["n_selected"] < 0.15 * X.shape[0]
    assert fast.info_["n_rounds"] > 1


def test_annoy_backend_runs_and_agrees_with_exact() -> None:
    X, y = _two_gaussians(1500)
    exact = NPPS(k=5, initial_fraction=0.05, random_state=1).fit(X, y)
    annoy = NPPS(k=5, initial_fraction=0.05, neighbors="annoy", n_trees=20, random_state=1).fit(X, y)
    assert annoy.info_["neighbors"] == "annoy"
    common = np.intersect1d(exact.sample_indices_, annoy.sample_indices_).size
    assert common > 0.8 * exact.sample_indices_.size


def test_hnswlib_backend_gives_a_valid_selection() -> None:
    pytest.importorskip("hnswlib")
    X, y = _two_gaussians(1500)
    exact = NPPS(k=5, initial_fraction=0.05, random_state=1).fit(X, y)
    runs = [NPPS(k=5, initial_fraction=0.05, neighbors="hnswlib", random_state=1).fit(X, y) for _ in range(2)]
    selected = runs[0].sample_indices_
    assert runs[0].info_["neighbors"] == "hnswlib"
    assert selected.size and np.all(np.diff(selected) > 0) and selected[-1] < X.shape[0]
    assert runs[0].n_evaluated_ >= selected.size
    np.testing.assert_array_equal(runs[1].sample_indices_, selected)  # seeded: reproducible
    common = np.intersect1d(exact.sample_indices_, selected).size
    assert common > 0.95 * exact.sample_indices_.size
    naive = NPPS(k=5, method="naive", neighbors="hnswlib", ef=400, random_state=1).fit(X, y)
    np.testing.assert_array_equal(naive.sample_indices_, NPPS(k=5, method="naive").fit(X, y).sample_indices_)


def test_seeded_selection_is_deterministic() -> None:
    X, y = _two_gaussians(2000, seed=1)
    for neighbors in ("exact", "annoy"):
        a = NPPS(initial_fraction=0.03, neighbors=neighbors, random_state=7).fit(X, y)
        b = NPPS(initial_fraction=0.03, neighbors=neighbors, random_state=7).fit(X, y)
        np.testing.assert_array_equal(a.sample_indices_, b.sample_indices_)
        assert a.n_evaluated_ == b.n_evaluated_
        np.testing.assert_array_equal(a.neighbors_entropy_, b.neighbors_entropy_)


def test_sampler_api_info_and_k_clipping() -> None:
    X, y = _two_gaussians(400)
    y_str = np.where(y == 1, "pos", "neg")
    s = NPPS(k=4, random_state=0)
    X_sel, y_sel = s.fit_resample(X, y_str)
    assert np.all(np.diff(s.sample_indices_) > 0)
    np.testing.assert_array_equal(X_sel, X[s.sample_indices_])
    np.testing.assert_array_equal(y_sel, y_str[s.sample_indices_])
    for key in ("n_train", "n_selected", "n_evaluated", "selection_seconds", "k", "method"):
        assert key in s.info_
    assert s.info_["n_selected"] == s.sample_indices_.size and s.info_["n_evaluated"] == s.n_evaluated_
    assert s.info_["k_clipped"] is False and "note" not in s.info_
    with pytest.warns(ParameterClipped, match=r"k=10 > 3 other training patterns; using k=3"):
        tiny = NPPS(k=10, method="naive").fit(np.arange(4.0)[:, None], [0, 1, 0, 1])
    assert tiny.info_["k"] == 3 and tiny.info_["k_clipped"] is True and "clipped" in tiny.info_["note"]


def test_parameter_validation() -> None:
    bad = [
        NPPS(k=0),
        NPPS(beta=0.0),
        NPPS(beta=1.5),
        NPPS(method="lazy"),
        NPPS(initial_fraction=0.0),
        NPPS(initial_fraction=1.2),
        NPPS(neighbors="kdtree"),
        NPPS(n_trees=0),
        NPPS(search_k=-2),
        NPPSSVM(C=0.0),
        NPPSSVM(sigma=-1.0),
        NPPSSVM(k=1.5),
    ]
    for estimator in bad:
        with pytest.raises(InvalidParameterError):
            estimator.fit(np.eye(4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="at least two classes"):
        NPPS().fit(np.eye(3), [1, 1, 1])


# ---------------------------------------------------------------- NPPSSVM


def test_npps_svm_is_svm_on_the_selection_and_reports_info() -> None:
    X, y = _two_gaussians(1000)
    # C = 10: with only the few boundary patterns left, C = 1 regularizes too strongly.
    model = NPPSSVM(k=5, random_state=0, C=10.0, sigma=2.0).fit(X, y)
    info = model.info_
    for key in ("selection_seconds", "svm_seconds", "n_train", "n_selected", "n_evaluated", "n_support", "fallback"):
        assert key in info
    assert info["fallback"] is None and info["n_train"] == 1000
    assert info["n_selected"] == model.sample_indices_.size < 200
    sel = model.sample_indices_
    svm = SVMClassifier(C=10.0, sigma=2.0).fit(X[sel], y[sel])
    X_test, y_test = _two_gaussians(1000, seed=5)
    np.testing.assert_array_equal(model.decision_function(X_test), svm.decision_function(X_test))
    assert info["n_support"] == svm.info_["n_support"]
    assert model.score(X_test, y_test) > 0.95
    assert METHODS["npps_svm"] is NPPSSVM


def test_npps_svm_falls_back_to_all_patterns() -> None:
    # Two far clusters: every neighbourhood is pure, nothing is selected.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (20, 2)), rng.normal(50, 1, (20, 2))])
    y = np.repeat([0, 1], 20)
    empty = NPPSSVM(k=3, random_state=0).fit(X, y)
    assert empty.info_["n_selected"] == 0 and empty.info_["fallback"] == FALLBACK_ALL
    np.testing.assert_array_equal(empty.predict(X), y)
    # A class-1 point inside cluster 0: its neighbourhood is pure (not selected); only
    # class-0 patterns around it are selected, so the selection has one class.
    X1 = np.vstack([X, [[0.0, 0.0]]])
    y1 = np.append(y, 1)
    one = NPPSSVM(k=3, method="naive").fit(X1, y1)
    assert one.info_["n_selected"] > 0 and one.info_["fallback"] == FALLBACK_ALL
    assert "lacks class" in one.info_["fallback_reason"]
    full = SVMClassifier().fit(X1, y1)
    np.testing.assert_array_equal(one.decision_function(X1), full.decision_function(X1))


def test_npps_svm_cache_memoizes_the_selection(pima) -> None:
    X, y = pima
    X_test = X[:50]
    cache = DistanceCache()
    first = NPPSSVM(k=5, random_state=0, sigma=2.0).fit(X, y, cache=cache)
    second = NPPSSVM(k=5, random_state=0, sigma=3.0).fit(X, y, cache=cache)
    assert first.info_["selection_cached"] is False and second.info_["selection_cached"] is True
    assert second.svm_.X_fit_ is first.svm_.X_fit_  # the SVM reuses the selection's distances
    assert second.info_["selection_seconds"] == first.info_["selection_seconds"] > 0
    plain = NPPSSVM(k=5, random_state=0, sigma=3.0).fit(X, y)
    np.testing.assert_array_equal(plain.sample_indices_, second.sample_indices_)
    np.testing.assert_allclose(
        second.decision_function(X_test, cache=cache), plain.decision_function(X_test), rtol=1e-9, atol=1e-12
    )
    unseeded = NPPSSVM(k=5).fit(X, y, cache=cache)  # a random selection is never memoized
    assert unseeded.info_["selection_cached"] is False


def _expected_failed_checks(estimator) -> dict[str, str]:
    return {
        "check_classifiers_train": (
            "On sklearn's make_blobs problem (nearly separable) NPPS keeps only the "
            "11-48 overlap patterns, mostly of one class; the RBF C-SVM (C=1, sigma=1) "
            "trained on them predicts that class away from the boundary, so training "
            "accuracy is 0.5-0.63 < 0.83. This is the method's behaviour, not a fault."
        ),
    }


@parametrize_with_checks([NPPSSVM(k=3, sigma=1.0)], expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)


def test_table2_setting_cell_breaks_ties_by_value_not_by_record_order() -> None:
    """Two splits chose C=1, two C=10: the cell is the same whatever order the record
    files (named by worker PIDs) are read in."""
    import pandas as pd

    from lkm.papers.npps.selection import setting

    recs = pd.DataFrame({"params": [{"sigma": 1.0}] * 4,
                         "info": [{"tuned_params": {"C": c}} for c in (10, 1, 10, 1)]})
    cells = {setting(recs.iloc[order].reset_index(drop=True)) for order in ([0, 1, 2, 3], [1, 0, 3, 2], [3, 2, 1, 0])}
    assert len(cells) == 1, cells


def _table2_context(with_modern_records: bool):
    """A ReportContext of a one-row Table 2 (ALL, SELECTED and ALL on a modern solver)
    with hand-made records: no fitting."""
    import pandas as pd

    from lkm.engine.store import RunStore
    from lkm.report.registry import ReportContext
    from lkm.spec import spec_from_dict

    spec = spec_from_dict({
        "name": "t2", "datasets": ["moons"], "protocol": {"kind": "kfold", "folds": 3, "seed": 0},
        "methods": [{"name": "ALL", "estimator": "svm"}, {"name": "SELECTED", "estimator": "npps_svm"},
                    {"name": "ALL (modern solver)", "estimator": "svm", "params": {"backend": "intelex"}}],
        "outputs": {"tables": ["npps_table2"], "options": {"npps_table2": {"rows": [
            {"dataset": "moons", "all": "ALL", "selected": "SELECTED", "modern": "ALL (modern solver)"}]}}},
    })

    def record(method: str, accuracy: float, info: dict) -> dict:
        return {"dataset": "moons", "split": "0", "method": method, "status": "ok", "params": {},
                "n_train": 1000, "n_test": 200, "accuracy": accuracy, "fit_seconds": 9.0, "info": info}

    recs = [record("ALL", 0.99, {"refit_seconds": 8.0, "n_support": 300}),
            record("SELECTED", 0.985, {"refit_seconds": 2.0, "n_selected": 200, "n_support": 120,
                                       "svm_seconds": 0.5, "selection_seconds": 1.5})]
    if with_modern_records:
        recs.append(record("ALL (modern solver)", 0.995, {"refit_seconds": 1.0, "n_support": 310}))
    recs.append({**record("ALL (modern solver)", 0.0, {}), "status": "error", "accuracy": math.nan})  # a failed fit
    return ReportContext(RunStore(Path(".")), spec, pd.DataFrame(recs), pd.DataFrame(), pd.DataFrame())


def test_table2_adds_the_modern_solver_row_after_its_dataset_when_it_has_records() -> None:
    from lkm.papers.npps.selection import table2

    table = table2(_table2_context(with_modern_records=True))
    assert list(table["dataset"]) == ["moons", "moons, ALL on a modern solver (scikit-learn-intelex)"]
    plain, modern = table.iloc[0], table.iloc[1]
    assert modern["patterns ALL"] == "1000" and modern["SVs ALL"] == "310" and modern["time ALL (s)"] == "1"
    assert modern["error ALL %"] == "0.50"
    # SELECTED repeated from the LIBSVM row; speed-up = modern ALL seconds / (SVM + NPPS) seconds = 1 / 2
    for col in ("patterns SELECTED", "SVs SELECTED", "time SELECTED = SVM + NPPS (s)", "error SELECTED %"):
        assert modern[col] == plain[col]  # ours only: the spec has no paper numbers, so no brackets
    assert modern["speed-up ALL/SELECTED"] == "0.5×" and plain["speed-up ALL/SELECTED"] == "4.0×"
    assert modern["paper row"] == "–" and "another session" not in modern["note"]


def test_table2_modern_row_says_when_it_was_timed_in_another_session() -> None:
    from lkm.papers.npps.selection import table2

    ctx = _table2_context(with_modern_records=True)
    ctx.records["finished_at"] = "2026-11-24T21:00:00"
    ctx.records.loc[ctx.records["method"] == "ALL (modern solver)", "finished_at"] = "2026-11-26T06:00:00"
    note = table2(ctx).iloc[1]["note"]
    assert "timed in another session (2026-11-26 against 2026-11-24)" in note


def test_table2_has_no_modern_solver_row_without_its_records() -> None:
    from lkm.papers.npps.selection import table2

    table = table2(_table2_context(with_modern_records=False))
    assert list(table["dataset"]) == ["moons"]


def test_claims_give_the_modern_solver_as_context_only_for_rows_that_have_it() -> None:
    from lkm.papers.npps.claims import modern_solver_context

    rows = [{"dataset": "a", "error_selected": 0.005, "modern_ratio": 0.8, "error_modern": 0.004},
            {"dataset": "b", "error_selected": 0.01}]
    text = modern_solver_context(rows)
    assert "a 0.80×, -0.10 points" in text and "b " not in text and "not the paper's claim" in text
    assert modern_solver_context(rows[1:]) == ""
