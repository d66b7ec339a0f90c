"""Parameter tuning by CV on the training part (MethodSpec ``tune``), per-dataset protocols,
and the LRR paired-test table (lkm.papers.lrr.benchmarks)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from lkm.engine.runner import build_plan, execute, fit_tuned, write_plan
from lkm.engine.store import RunStore
from lkm.errors import SpecError
from lkm.numerics.stats import paired_test
from lkm.report import build_report
from lkm.spec import spec_from_dict

GRID = {"t": [0.25, 4.0], "lam": [0.001, 0.1]}

TUNED = {
    "name": "tuned",
    "datasets": ["moons"],
    "protocol": {"kind": "holdout", "train_size": 60, "test_size": 100, "repeats": 2, "seed": 0},
    "methods": [
        {"name": "RLS", "estimator": "rls", "params": {"unit_diagonal": True, "t": 1.0, "lam": 0.5}},
        {"name": "RLS-cv", "estimator": "rls", "params": {"unit_diagonal": True},
         "tune": {"grid": GRID, "cv": 3, "seed": 0}},
        {"name": "LRR-cv", "estimator": "lrr", "params": {"unit_diagonal": True, "x0": 0},
         "tune": {"grid": {"beta": [1, 10], "lam": [0.01, 0.1]}, "cv": 3, "seed": 0}},
    ],
    "outputs": {"tables": ["summary", "lrr_paired", "lrr_tuned"], "figures": [], "formats": ["png"],
                "options": {"lrr_paired": {"pairs": [["RLS-cv", "RLS"]]}}},
}


def _run(tmp_path, spec_dict=TUNED):
    spec = spec_from_dict(spec_dict)
    plan = build_plan(spec)
    store = RunStore(tmp_path)
    store.prepare()
    write_plan(plan, store)
    summary = execute(plan, store, jobs=1, in_process=True)  # the spies below patch this process
    build_report(store, spec, plan.task_ids, plan.unavailable)
    return plan, store, summary


def test_tuned_params_come_from_the_grid_and_are_recorded(tmp_path):
    _, store, summary = _run(tmp_path)
    assert summary.failed == 0
    df = store.records_frame()
    tuned = df[df["method"] == "RLS-cv"]
    assert len(tuned) == 2
    for info in tuned["info"]:
        chosen = info["tuned_params"]
        assert set(chosen) == set(GRID)
        assert all(chosen[k] in GRID[k] for k in GRID)
        assert info["t"] == chosen["t"] and info["lam"] == chosen["lam"]  # the refitted model uses them
        assert 0.0 <= info["cv_score"] <= 1.0
        assert info["grid_size"] == 4 and info["cv_folds"] == 3
        assert info["cv_n_train"] == 60
    assert "tuned_params" not in df[df["method"] == "RLS"]["info"].iloc[0]
    assert (tmp_path / "tables" / "lrr_tuned.md").is_file()
    assert (tmp_path / "tables" / "lrr_paired.md").is_file()


def test_search_sees_the_training_part_only(tmp_path, monkeypatch):
    seen = []
    original = GridSearchCV.fit

    def spy(self, X, y=None, **kw):
        seen.append(len(X))
        return original(self, X, y, **kw)

    monkeypatch.setattr(GridSearchCV, "fit", spy)
    _run(tmp_path)
    assert seen and set(seen) == {60}  # train_size, never the 100 test rows


def test_fit_tuned_is_deterministic_and_refits():
    # fit_tuned only ever receives the training part; the choice is deterministic and the
    # refitted model generalizes to the held-out rows.
    from lkm.methods import METHODS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = (X[:, 0] > 0).astype(int)
    est, info = fit_tuned(METHODS["rls"](unit_diagonal=True), {"grid": GRID, "cv": 3, "seed": 0}, X[:80], y[:80])
    again, info2 = fit_tuned(METHODS["rls"](unit_diagonal=True), {"grid": GRID, "cv": 3, "seed": 0}, X[:80], y[:80])
    assert info["tuned_params"] == info2["tuned_params"]  # deterministic
    assert info["cv_n_train"] == 80
    assert np.mean(est.predict(X[80:]) == y[80:]) > 0.8


def test_tune_subsample_searches_a_seeded_stratified_subsample_and_refits_on_all(monkeypatch):
    """``subsample: 40`` of 100 training rows: every CV fold comes from the same 40 rows (20
    per class), the same rows for the same seed, and the chosen setting is refitted on all
    100 rows; ``refit_seconds`` times that refit alone."""
    from lkm.methods import METHODS

    seen = []
    original = GridSearchCV.fit

    def spy(self, X, y=None, **kw):
        seen.append({int(i) for tr, te in self.cv for i in np.concatenate([tr, te])})
        return original(self, X, y, **kw)

    monkeypatch.setattr(GridSearchCV, "fit", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = (X[:, 0] > 0.3).astype(int)
    tune = {"grid": {"C": [1.0, 10.0], "sigma": [0.5, 1.0]}, "cv": 4, "seed": 3, "subsample": 40}
    est, info = fit_tuned(METHODS["svm"](), tune, X, y)
    fit_tuned(METHODS["svm"](), tune, X, y)
    assert len(seen[0]) == 40 and seen[0] == seen[1]
    rows = np.array(sorted(seen[0]))
    assert abs(int(y[rows].sum()) - round(40 * y.mean())) <= 1  # stratified
    assert info["cv_n_train"] == 40 and est.X_fit_.shape[0] == 100
    assert 0 < info["refit_seconds"] and info["tuned_params"].keys() == {"C", "sigma"}
    whole, info_all = fit_tuned(METHODS["svm"](), {k: v for k, v in tune.items() if k != "subsample"}, X, y)
    assert len(seen[2]) == 100 and info_all["cv_n_train"] == 100


def test_tune_without_subsample_keeps_its_task_id():
    with_none = {**TUNED, "methods": [TUNED["methods"][0],
                                      {**TUNED["methods"][1], "tune": {"grid": GRID, "cv": 3, "seed": 0, "subsample": None}},
                                      TUNED["methods"][2]]}
    sub = {**TUNED, "methods": [TUNED["methods"][0],
                                {**TUNED["methods"][1], "tune": {"grid": GRID, "cv": 3, "seed": 0, "subsample": 30}},
                                TUNED["methods"][2]]}
    ids = lambda d: {t.id for t in build_plan(spec_from_dict(d)).tasks if t.method == "RLS-cv"}  # noqa: E731
    assert ids(TUNED) == ids(with_none)
    assert ids(TUNED).isdisjoint(ids(sub))


def test_tune_block_is_part_of_the_task_id():
    plain = build_plan(spec_from_dict(TUNED))
    other = {**TUNED, "methods": [TUNED["methods"][0],
                                  {**TUNED["methods"][1], "tune": {"grid": GRID, "cv": 4, "seed": 0}},
                                  TUNED["methods"][2]]}
    changed = build_plan(spec_from_dict(other))
    ids = lambda plan, m: {t.id for t in plan.tasks if t.method == m}  # noqa: E731
    assert ids(plain, "RLS") == ids(changed, "RLS")
    assert ids(plain, "RLS-cv").isdisjoint(ids(changed, "RLS-cv"))
    assert all(t.tune is None for t in plain.tasks if t.method == "RLS")


def _with_tune(grid, params=None):
    m = {"name": "X", "estimator": "rls", "params": params or {}, "tune": {"grid": grid}}
    return {**TUNED, "methods": [m], "outputs": {"tables": ["summary"], "figures": []}}


@pytest.mark.parametrize(
    ("grid", "params", "expected"),
    [
        ({"bogus": [1, 2]}, None, "methods[0].tune.grid.bogus: 'rls' has no parameter 'bogus'"),
        ({"lam": [0.1, -1]}, None, "methods[0].tune.grid.lam = -1:"),
        ({"lam": [0.1, 1]}, {"lam": 0.5}, "methods[0].tune.grid.lam: 'lam' is also in methods[0].params"),
    ],
)
def test_bad_tune_grid_is_a_one_line_error_naming_the_key(grid, params, expected):
    with pytest.raises(SpecError) as err:
        spec_from_dict(_with_tune(grid, params), "s.yaml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("s.yaml: ")
    assert expected in msg


def test_tune_needs_a_grid_and_two_folds():
    with pytest.raises(SpecError, match=r"tune\.cv"):
        spec_from_dict({**_with_tune({"lam": [1]}), "methods": [
            {"name": "X", "estimator": "rls", "tune": {"grid": {"lam": [1]}, "cv": 1}}]})
    with pytest.raises(SpecError, match=r"tune\.grid"):
        spec_from_dict({**_with_tune({}), "methods": [{"name": "X", "estimator": "rls", "tune": {"grid": {}}}]})


def test_global_sweep_leaves_tuned_parameters_alone():
    spec = spec_from_dict({**TUNED, "sweep": {"lam": [0.01, 1.0]}})
    by = {m.name: spec.method_grid(m) for m in spec.methods}
    assert len(by["RLS"]) == 2 and len(by["RLS-cv"]) == 1 and len(by["LRR-cv"]) == 1


def test_per_dataset_protocol_sizes():
    spec = spec_from_dict({
        **TUNED, "datasets": [
            {"name": "moons", "protocol": {"kind": "holdout", "train_size": 45, "test_size": 55, "repeats": 3}},
            {"name": "gaussians"},
        ],
        "methods": [TUNED["methods"][0]],
    })
    plan = build_plan(spec)
    assert [(len(s.train), len(s.test)) for s in plan.splits["moons"]] == [(45, 55)] * 3
    assert [(len(s.train), len(s.test)) for s in plan.splits["gaussians"]] == [(60, 100)] * 2
    # a spec without per-dataset protocols keeps its task ids (no "protocol": None in the id)
    base = build_plan(spec_from_dict({**TUNED, "datasets": ["gaussians"], "methods": [TUNED["methods"][0]]}))
    assert {t.id for t in base.tasks} == {t.id for t in plan.tasks if t.dataset == "gaussians"}


def test_paired_test_handles_ties():
    assert paired_test(np.array([0.5, 0.6]), np.array([0.5, 0.6])).p == 1.0
    assert np.isnan(paired_test(np.array([0.5]), np.array([0.4])).p)
    assert paired_test(np.linspace(0.6, 0.7, 10), np.linspace(0.5, 0.6, 10)).p < 0.01


def test_inner_cv_choice_ties_scores_equal_as_numbers_to_the_first_setting():
    """Fold accuracies (0.5, 0.7, 0.6) and (0.6, 0.6, 0.6) have the same mean; their float
    sums may differ in the last bit. The choice must not follow that bit: rounded scores tie
    and the first candidate wins, whichever sum came out larger."""
    from lkm.engine.runner import best_setting

    a, b = np.mean([0.5, 0.7, 0.6]), np.mean([0.6, 0.6, 0.6]) + 1e-15  # one setting a hair "better"
    assert best_setting({"mean_test_score": [a, b]}) == 0
    assert best_setting({"mean_test_score": [b, a]}) == 0
    assert best_setting({"mean_test_score": [0.5, 0.6 + 1e-6]}) == 1  # a real difference still decides
    assert best_setting({"mean_test_score": [np.nan, 0.2, np.nan]}) == 1  # failed settings pass over


def test_fit_tuned_records_the_chosen_settings_cv_score():
    """``cv_score`` is the chosen setting's own mean CV score, and the refitted model has its parameters."""
    from lkm.methods import METHODS

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    est, info = fit_tuned(METHODS["rls"](unit_diagonal=True), {"grid": GRID, "cv": 3, "seed": 0}, X, y)
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    search = GridSearchCV(METHODS["rls"](unit_diagonal=True), GRID, cv=folds, scoring="accuracy").fit(X, y)
    scores = {tuple(sorted(p.items())): s for p, s in zip(search.cv_results_["params"],
                                                          search.cv_results_["mean_test_score"], strict=True)}
    assert info["grid_size"] == 4 and set(info["tuned_params"]) == set(GRID)
    assert {k: est.get_params()[k] for k in GRID} == info["tuned_params"]
    assert info["cv_score"] == scores[tuple(sorted(info["tuned_params"].items()))]
    assert info["cv_score"] >= max(scores.values()) - 1e-9
