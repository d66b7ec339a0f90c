"""Hostile numbers for the estimators (issue 9, "Estimators" and the "Unclear" items on
sigma = 1e-320 and LPL's k above the training size).

Promises: an extreme kernel width is evaluated exactly (finite outputs, the limit's
predictions) or refused with one line naming the parameter; features whose squared
distances over- or underflow float64 are refused naming the features; no estimator
returns NaN decision values or predictions; a k above the training size warns once per
fit and the record says which k was used.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from processes import patience
from typer.testing import CliRunner

from lkm.cli import app
from lkm.errors import LkmError, NumericalError
from lkm.methods import (
    NPPS,
    NPPSSVM,
    LocalizedProjectionLearning,
    LocalRiskPair,
    LocalRiskRegularization,
    ProjectionLearning,
    RegularizedLeastSquares,
    SVMClassifier,
)
from lkm.methods.projection import batched_pinv_forms
from lkm.methods.risk import hard_vicinity
from lkm.numerics.kernels import HeatConstantError

FAMILIES = {
    "pl": lambda s: ProjectionLearning(sigma=s),
    "lpl": lambda s: LocalizedProjectionLearning(sigma=s, k=5),
    "lpl_annoy": lambda s: LocalizedProjectionLearning(sigma=s, k=5, neighbors="annoy", random_state=0),
    "rls": lambda s: RegularizedLeastSquares(kernel="gaussian", sigma=s),
    "lrr": lambda s: LocalRiskRegularization(kernel="gaussian", sigma=s, beta=3.0),
    "lrr_pair": lambda s: LocalRiskPair(kernel="gaussian", sigma=s, beta=3.0, random_state=0),
    "svm": lambda s: SVMClassifier(sigma=s),
    "npps_svm": lambda s: NPPSSVM(sigma=s, k=4, random_state=0),
}


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.4 * rng.normal(size=80) > 0).astype(int)
    return X, y, rng.normal(size=(30, 3))


def one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message and message.strip() == message
    return message


def fit_predict(model, X, y, Q) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow/invalid-value noise either
        model.fit(X, y)
        return model.decision_function(Q), model.predict(Q)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("sigma", [1e-160, 1e-320])
def test_tiny_sigma_gives_finite_outputs_and_the_small_sigma_predictions(data, family, sigma) -> None:
    """Case: ProjectionLearning(sigma=1e-160) returned NaN; sigma=1e-320 a ZeroDivisionError.

    Below about 1e-154, 1/(2σ²) is not a float64; the exponent is now divided out
    instead, so every family gives finite values and the predictions of a small normal
    sigma (1e-3: every kernel value between distinct points already underflows there)."""
    X, y, Q = data
    decision, predicted = fit_predict(FAMILIES[family](sigma), X, y, Q)
    assert np.all(np.isfinite(decision))
    _, reference = fit_predict(FAMILIES[family](1e-3), X, y, Q)
    np.testing.assert_array_equal(predicted, reference)


def test_tiny_sigma_pl_is_the_nearest_neighbour_rule(data) -> None:
    """Case: sigma=1e-160 for PL. The exact limit of PL as sigma → 0 is 1-NN (G = I, and
    the exact-sign route keeps only the nearest pattern's term)."""
    X, y, Q = data
    _, predicted = fit_predict(ProjectionLearning(sigma=1e-160), X, y, Q)
    nearest = np.argmin(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(predicted, y[nearest])


@pytest.mark.parametrize("sigma", [1e-160, 1e160])
def test_svm_on_libsvms_own_kernel_refuses_a_gamma_outside_float64_in_one_line(data, sigma, monkeypatch) -> None:
    """Case: above ~5,800 rows SVMClassifier hands LIBSVM gamma = 1/(2σ²) itself, which is
    inf or 0 for such sigma (NaN or constant kernels). It now refuses, naming sigma."""
    import lkm.methods.svm as svm_module

    monkeypatch.setattr(svm_module, "PRECOMPUTED_MAX_BYTES", 0)  # force the large-n route
    X, y, _ = data
    with pytest.raises(NumericalError) as caught:
        SVMClassifier(sigma=sigma).fit(X, y)
    assert "sigma=" in one_line(caught.value)
    SVMClassifier(sigma=1.0).fit(X, y)  # a normal sigma still takes that route


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_huge_sigma_gives_finite_outputs(data, family) -> None:
    """Case: sigma=1e160 raised OverflowError for RLS/LRR (sigma**2). Now finite, with the
    predictions of sigma=1e100 (the kernel is exactly 1 everywhere in float64 at both)."""
    X, y, Q = data
    decision, predicted = fit_predict(FAMILIES[family](1e300), X, y, Q)
    assert np.all(np.isfinite(decision))
    _, reference = fit_predict(FAMILIES[family](1e100), X, y, Q)
    np.testing.assert_array_equal(predicted, reference)


@pytest.mark.parametrize("t", [1e-320, 1e300])
def test_heat_kernel_constant_out_of_range_is_one_line_naming_t(data, t) -> None:
    """Case: t=1e-320 gave NaN outputs (the constant (4πt)^(-d/2) overflowed, times 0)."""
    X, y, _ = data
    for model in (RegularizedLeastSquares(t=t), LocalRiskRegularization(t=t)):
        with pytest.raises(HeatConstantError) as info:
            model.fit(X, y)
        assert isinstance(info.value, NumericalError) and isinstance(info.value, ValueError)
        assert f"t={t}" in one_line(info.value) and "unit_diagonal" in str(info.value)


def test_heat_kernel_tiny_t_with_unit_diagonal_is_finite(data) -> None:
    """Case: t=1e-320 with the unit-diagonal heat kernel: exp(-d²/4t) is evaluable."""
    X, y, Q = data
    decision, _ = fit_predict(RegularizedLeastSquares(t=1e-320, unit_diagonal=True), X, y, Q)
    assert np.all(np.isfinite(decision))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("factor", [1e200, 1e-200])
def test_extreme_feature_scale_is_refused_naming_the_features(data, family, factor) -> None:
    """Case: X*1e200 gave NaN outputs (RLS, LRR, SVM) or obscure linkage/eigh errors
    (PL, LPL); X*1e-200 silently lost every distance (all squares underflow)."""
    X, y, _ = data
    with pytest.raises(NumericalError) as info:
        FAMILIES[family](1.0).fit(X * factor, y)
    message = one_line(info.value)
    assert "training features up to |x|=" in message and "rescale the features" in message


def test_extreme_query_scale_is_refused_and_the_npps_sampler_checks_too(data) -> None:
    """Case: test rows at 1e200 against a normal training set; NPPS(...).fit on X*1e200."""
    X, y, Q = data
    model = ProjectionLearning(sigma=1.0).fit(X, y)
    for call in (model.predict, model.decision_function):
        with pytest.raises(NumericalError, match=r"^ProjectionLearning: query features up to \|x\|=\d\.\d+e\+200 "):
            call(Q * 1e200)
    with pytest.raises(NumericalError, match=r"^NPPS: training features"):
        NPPS().fit(X * 1e200, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_infinite_features_raise_sklearns_value_error(data, bad) -> None:
    """Case: NaN/inf features, at fit and at predict (sklearn's check_array message)."""
    X, y, Q = data
    X_bad, Q_bad = X.copy(), Q.copy()
    X_bad[3, 1] = bad
    Q_bad[2, 0] = bad
    for make in FAMILIES.values():
        with pytest.raises(ValueError, match="NaN|infinity"):
            make(1.0).fit(X_bad, y)
        model = make(1.0).fit(X, y)
        with pytest.raises(ValueError, match="NaN|infinity"):
            model.predict(Q_bad)


@pytest.mark.parametrize(
    ("model", "coef", "named"),
    [
        (ProjectionLearning(sigma=0.7), "unique_coef_", "ProjectionLearning: sigma=0.7 gives"),
        (RegularizedLeastSquares(t=2.0), "dual_coef_", "kernel='heat', t=2.0, lam=0.5 gives"),
        (SVMClassifier(sigma=0.7), "dual_coef_", "SVMClassifier: sigma=0.7 gives"),
    ],
)
def test_non_finite_decision_values_raise_one_line_naming_the_parameters(data, model, coef, named) -> None:
    """Case: NaN decision values came back with only a RuntimeWarning. Whatever produces
    them (here a corrupted coefficient), decision_function and predict refuse in one line."""
    X, y, Q = data
    model.fit(X, y)
    getattr(model, coef).flat[0] = np.nan
    for call in (model.decision_function, model.predict):
        with pytest.raises(NumericalError) as info:
            call(Q)
        assert named in one_line(info.value) and "non-finite decision values" in str(info.value)
        assert isinstance(info.value, LkmError) and isinstance(info.value, ValueError)


def test_lpl_k_above_training_size_warns_once_records_k_and_is_fast() -> None:
    """Case: LPL with k above the training size was clipped silently and 10⁴× slower.

    One UserWarning per fit saying what was used, info_ records it, and k = ℓ solves one
    ℓ×ℓ system (it took ~30 s here as 200 separate 341×341 eigendecompositions)."""
    rng = np.random.default_rng(3)
    X, Q = rng.normal(size=(341, 8)), rng.normal(size=(200, 8))
    y = (X[:, 0] > 0).astype(int)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LocalizedProjectionLearning(k=500, sigma=2.0).fit(X, y)
        predicted = model.predict(Q)
        model.decision_function(Q)
    assert time.perf_counter() - t0 < 5.0 * patience()  # a bound, scaled by the machine's load
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert messages == ["LPL: k=500 > 341 training rows; using k=341"]
    assert model.k_ == model.info_["k"] == 341
    assert model.info_["k_requested"] == 500 and model.info_["k_clipped"] is True
    assert model.info_["note"] == messages[0]
    exact = LocalizedProjectionLearning(k=341, sigma=2.0).fit(X, y)
    np.testing.assert_array_equal(exact.predict(Q), predicted)
    assert "k_clipped" not in exact.info_  # no clipping, no note


def test_lpl_with_k_equal_to_l_equals_its_per_query_systems() -> None:
    """The k = ℓ shortcut computes what the per-query systems compute: every neighbour
    set is the training set, so G_N⁺ y_N is one G⁺ y in another order."""
    rng = np.random.default_rng(4)
    X, Q = rng.normal(size=(40, 3)), rng.normal(size=(15, 3))
    y = (X[:, 1] > 0).astype(int)
    model = LocalizedProjectionLearning(k=40, sigma=0.4).fit(X, y)
    order = np.argsort(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2), axis=1)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * 0.4**2))
    k_q = np.exp(-((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * 0.4**2))
    G = np.stack([K[np.ix_(o, o)] for o in order])
    left = np.take_along_axis(k_q, order, axis=1)
    right = np.where(y == 1, 1.0, -1.0)[order]
    expected, singular = batched_pinv_forms(G, left, right)
    assert not singular.any()
    np.testing.assert_allclose(model.decision_function(Q), expected, rtol=1e-8, atol=1e-10)


def test_npps_k_above_training_size_warns_once_per_fit() -> None:
    """Case: NPPS's k above the M − 1 other patterns, as a sampler and inside NPPSSVM."""
    X, y = np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 0, 1])
    for model in (NPPS(k=10, method="naive"), NPPSSVM(k=10, method="naive")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X, y)
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        assert messages == ["NPPS: k=10 > 5 other training patterns; using k=5 (clipped)"]
        assert model.info_["k"] == 5 and model.info_["k_requested"] == 10 and model.info_["k_clipped"]


def test_boolean_for_a_numeric_parameter_is_refused(data) -> None:
    """Case: ``sigma: true`` was accepted as sigma = 1 (sklearn's Interval takes bools)."""
    X, y, _ = data
    for model, name in ((ProjectionLearning(sigma=True), "sigma"), (LocalizedProjectionLearning(k=True), "k"),
                        (SVMClassifier(C=True), "C")):
        with pytest.raises(ValueError, match=f"'{name}' parameter .* not a boolean"):
            model.fit(X, y)
    RegularizedLeastSquares(unit_diagonal=True).fit(X, y)  # a boolean parameter stays one


def test_hard_vicinity_with_tiny_beta_still_holds_x0(data) -> None:
    """Case: beta=1e-170 made β²/4 underflow to 0, so LRR's hard vicinity lost x0 itself
    and the fit failed; ||x0 - x0|| = 0 < β/2 for every β > 0."""
    np.testing.assert_array_equal(hard_vicinity(np.array([0.0, 1e-300, 1.0]), 1e-170), [1.0, 0.0, 0.0])
    X, y, Q = data
    decision, _ = fit_predict(LocalRiskRegularization(vicinity="hard", beta=1e-170, x0=4), X, y, Q)
    assert np.all(np.isfinite(decision))


def _run(tmp_path: Path, spec: str):
    (tmp_path / "spec.yaml").write_text(spec)
    runner = CliRunner()
    return runner.invoke(app, ["run", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out"), "--no-progress"])


SPEC = """\
name: hostile
datasets: [{dataset}]
preprocessing: standardize
protocol: {{kind: kfold, folds: 2, repeats: 1, seed: 0}}
methods:
  - name: M
    estimator: {estimator}
    params: {params}
outputs: {{tables: [summary], figures: []}}
"""


def test_run_with_a_kernel_constant_overflow_fails_with_one_line_naming_t(tmp_path) -> None:
    """Case: a numerical failure inside a run. The task is recorded as failed with the
    estimator's message, and the run ends with exit 1 and one line naming t, not NaN."""
    res = _run(tmp_path, SPEC.format(dataset="sklearn-breast-cancer", estimator="rls", params="{t: 1.0e-30}"))
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "failed" in lines[0]
    assert "HeatConstantError" in lines[0] and "t=1e-30" in lines[0]


def test_run_with_the_smallest_accepted_sigma_records_finite_accuracy(tmp_path) -> None:
    """Case: PL at a sigma where 1/(2σ²) is near overflow (1e-150) used to be one step
    from NaN; the run records real accuracies (1-NN's)."""
    res = _run(tmp_path, SPEC.format(dataset="moons", estimator="pl", params="{sigma: 1.0e-150}"))
    assert res.exit_code == 0, res.output
    table = pd.read_csv(next((tmp_path / "out").rglob("results.csv")))
    assert (table["status"] == "ok").all() and table["accuracy"].between(0.5, 1.0).all()
