"""LocalRiskPair (the label-free combination of LRR¹ and LRR²), the paper's test-label
combination of Table 2, and the configs/lrr_artificial.yaml outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from lkm.data import load_dataset
from lkm.methods import METHODS, LocalRiskPair, LocalRiskRegularization
from lkm.papers.lrr.artificial import combined_accuracy

REPO = Path(__file__).resolve().parents[1]
PARAMS = {"kernel": "heat", "t": 1.0, "lam": 0.5, "beta": 6.0}


def _data(seed: int = 0):
    """The paper's artificial set (shuffled): 60 training, 240 test points."""
    ds = load_dataset("gaussians", n_samples=300, variance=0.5, random_state=seed)
    return ds.X[:60], ds.y[:60], ds.X[60:], ds.y[60:]


@pytest.mark.parametrize("vicinity", ["soft", "hard"])
def test_pair_picks_the_more_confident_lrr_per_point(vicinity) -> None:
    X, y, Xt, _ = _data()
    pair = LocalRiskPair(vicinity=vicinity, random_state=3, **PARAMS).fit(X, y)
    lrr1 = LocalRiskRegularization(vicinity=vicinity, x0="class:-1", random_state=3, **PARAMS).fit(X, y)
    lrr2 = LocalRiskRegularization(vicinity=vicinity, x0="class:1", random_state=3, **PARAMS).fit(X, y)
    assert pair.info_["x0_index"] == [lrr1.info_["x0_index"], lrr2.info_["x0_index"]]
    assert pair.info_["x0_classes"] == ["-1", "1"]
    f1, f2 = lrr1.decision_function(Xt), lrr2.decision_function(Xt)
    F = pair.component_decisions(Xt)
    np.testing.assert_allclose(F, np.column_stack([f1, f2]), rtol=1e-10, atol=1e-12)
    first = np.abs(f1) >= np.abs(f2)
    assert 0 < first.sum() < first.size  # both models are used on this data
    f = pair.decision_function(Xt)
    np.testing.assert_allclose(f[first], f1[first], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(f[~first], f2[~first], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(pair.chosen_component(Xt), np.where(first, 0, 1))
    np.testing.assert_array_equal(pair.predict(Xt)[first], lrr1.predict(Xt)[first])


def test_pair_nearest_x0_uses_the_lrr_whose_x0_is_nearer() -> None:
    X, y, Xt, _ = _data(1)
    pair = LocalRiskPair(combine="nearest_x0", random_state=0, **PARAMS).fit(X, y)
    x0 = np.asarray(pair.info_["x0_point"])
    d = ((Xt[:, None, :] - x0[None]) ** 2).sum(axis=2)
    chosen = pair.chosen_component(Xt)
    np.testing.assert_array_equal(chosen, np.argmin(d, axis=1))
    F = pair.component_decisions(Xt)
    np.testing.assert_allclose(pair.decision_function(Xt), F[np.arange(len(Xt)), chosen])
    assert METHODS["lrr_pair"] is LocalRiskPair


def test_pair_is_binary_only() -> None:
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.repeat([0, 1, 2], 10)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        LocalRiskPair().fit(X, y)


def test_paper_combination_from_per_class_accuracies() -> None:
    # LRR¹ right on 110 of the 120 class -1 points, LRR² on 60 of the 80 class 1 points:
    first = {"-1": 110 / 120, "1": 0.5}
    second = {"-1": 0.1, "1": 60 / 80}
    counts = {"-1": 120, "1": 80}
    assert combined_accuracy(first, second, counts, ("-1", "1")) == pytest.approx((110 + 60) / 200)
    # the paper's art-1 row: (0.88333 + 0.76670) / 2 = 0.825 (Table 2, column LRR)
    paper = combined_accuracy({"-1": 0.88333, "1": 0.75833}, {"-1": 0.86667, "1": 0.76670},
                              {"-1": 120, "1": 120}, ("-1", "1"))
    assert paper == pytest.approx(0.825, abs=5e-5)  # 0.76670 is printed for 0.76667


def test_smoke_run_writes_the_tables_and_figure(smoke_results) -> None:
    # lrr_artificial's smoke run inside the session's `lkm reproduce lrr --smoke`
    # (tests/conftest.smoke_results: made once per session and shared). Read only.
    out = smoke_results("lrr") / "lrr_artificial-smoke"
    for name in ("lrr_artificial", "lrr_per_class", "lrr_convention", "paper", "summary"):
        assert (out / "tables" / f"{name}.md").is_file(), name
    assert (out / "figures" / "lrr_x0.png").is_file()
    text = (out / "tables" / "lrr_artificial.md").read_text()
    assert "USES THE TEST LABELS" in text and "art-2" in text and "art-3" not in text
    assert "(82.50 T2)" in text  # the paper's LRR of art-1 beside ours
    assert "(86.25 T3)" in text  # Table 3, LRR1-hard on art-2
    assert "(88.33)" in (out / "tables" / "lrr_per_class.md").read_text()  # Table 1


@parametrize_with_checks([LocalRiskPair(), LocalRiskPair(kernel="gaussian", vicinity="hard", combine="nearest_x0")])
def test_sklearn_estimator_checks(estimator, check) -> None:
    check(estimator)
