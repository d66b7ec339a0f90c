"""Claims decided by paired tests (lkm.reproduction.claims + lkm.numerics.stats), and the fragility
label when the perturbed run's verdict differs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lkm.engine.store import RunStore
from lkm.papers import lpl, lrr
from lkm.reproduction import claims, perturbed, runs
from lkm.spec import spec_from_dict, spec_to_yaml

SIGMAS = [0.1, 1.0, 10.0]
DATASETS = ["sonar", "ionosphere", "heart-statlog"]
SPEC = {
    "datasets": DATASETS,
    "protocol": {"kind": "kfold", "folds": 10},
    "methods": [{"name": "PL", "estimator": "pl"}, {"name": "LPL", "estimator": "lpl"},
                {"name": "SVM", "estimator": "svm"}],
    "sweep": {"sigma": SIGMAS},
}
NOISE = np.random.default_rng(0).normal(0, 0.02, size=(len(DATASETS), 3, 10))


def write_run(root: Path, name: str, svm_gain: dict[str, float], perturb: dict | None = None) -> None:
    """Ten folds; every method best at sigma = 10 (0.80 + per-fold noise); SVM ``svm_gain[ds]``
    above LPL there, PL = LPL + its own noise."""
    data = {"name": name, **SPEC, **({"perturb": perturb} if perturb else {})}
    s = spec_from_dict(data)
    store = RunStore(root / name)
    store.prepare()
    store.write_spec(spec_to_yaml(s))
    records = []
    for i, ds in enumerate(DATASETS):
        for m in ("PL", "LPL", "SVM"):
            for sigma in SIGMAS:
                for f in range(10):
                    acc = 0.80 + NOISE[i, 1, f] + (svm_gain.get(ds, 0.0) if m == "SVM" else 0.0)
                    acc += 0.3 * NOISE[i, 0, f] if m == "PL" else 0.0
                    acc -= 0.0 if sigma == 10.0 else 0.2
                    records.append({
                        "task_id": f"{ds}-{m}-{sigma}-{f}", "dataset": ds, "split": f"r0f{f}", "method": m,
                        "params": {"sigma": sigma}, "status": "ok", "accuracy": acc, "fit_seconds": 0.1,
                        "predict_seconds": 0.01, "n_train": 90, "n_test": 10,
                    })
    store.append(records)


def row(root: Path, number: str):
    return lpl.evaluate_claims(root).set_index("#").loc[number]


def test_better_claim_counts_sets_where_the_difference_is_significant(tmp_path: Path) -> None:
    write_run(tmp_path, "lpl_vs_svm", {"sonar": 0.05})
    r = row(tmp_path, "3")
    assert "SVM significantly better on 1, not significant on 2 of 3" in r["our measure"]
    assert "sonar +5.00 [" in r["our measure"] and "p < 0.001" in r["our measure"]
    # significant on 1 of 3: not "most cases", not refuted; the other two sets' CIs lie inside ±1 point
    assert r["verdict"] == "equivalent (within ±1 points)" and "equivalent within ±1 points on 2" in r["our measure"]
    write_run(tmp_path / "lpl", "lpl_vs_svm", dict.fromkeys(DATASETS, -0.05))
    assert row(tmp_path / "lpl", "3")["verdict"] == "contradicted"  # LPL significantly better
    write_run(tmp_path / "all", "lpl_vs_svm", dict.fromkeys(DATASETS, 0.05))
    assert row(tmp_path / "all", "3")["verdict"] == "holds"


def test_comparable_is_read_as_equivalence_not_as_non_significance(tmp_path: Path) -> None:
    write_run(tmp_path, "lpl_vs_svm", {})
    r = row(tmp_path, "1a")  # LPL − PL: per-fold noise 0.6 points, CI well inside ±2
    assert "equivalent within ±2 points on 3" in r["our measure"] and r["verdict"] == "holds"


def test_a_verdict_that_changes_under_perturbation_is_fragile(tmp_path: Path) -> None:
    write_run(tmp_path, "lpl_vs_svm", dict.fromkeys(DATASETS, 0.05))
    assert row(tmp_path, "3")[f"verdict under {perturbed.PERTURBATION_WORDS}"] == "not run"
    write_run(tmp_path, "lpl_vs_svm-perturbed", {"sonar": 0.05}, perturb=perturbed.PERTURBATION)
    r = row(tmp_path, "3")
    assert r["verdict"] == f"fragile (holds / equivalent (within ±1 points) under {perturbed.PERTURBATION_WORDS})"
    assert row(tmp_path, "1a")["verdict"] == "holds"  # same verdict both ways: not fragile
    assert row(tmp_path, "4b")[f"verdict under {perturbed.PERTURBATION_WORDS}"] == "–"  # not checked


def test_perturbed_spec_keeps_only_the_settings_the_claims_read(tmp_path: Path) -> None:
    write_run(tmp_path, "lpl_vs_svm", {})
    plain = runs.load_run(tmp_path, "lpl_vs_svm")
    spec = spec_from_dict({"name": "lpl_vs_svm", **SPEC})
    p = perturbed.perturbed_spec(spec, plain, lpl.PERTURBED["lpl_vs_svm"])
    assert p.name == "lpl_vs_svm-perturbed" and p.perturb is not None
    assert p.perturb.permute_train == perturbed.PERTURBATION["permute_train"]
    assert all(m.sweep == {"sigma": [1.0, 10.0]} for m in p.methods)  # sigma* = 10, and sigma = 1 for claim 4a
    lrr_spec = perturbed.perturbed_spec(spec_from_dict({"name": "x", "datasets": ["iris"], "methods": [
        {"name": "RLS", "estimator": "rls"}, {"name": "LRR-x0", "estimator": "lrr"}]}), None,
        lrr.PERTURBED["lrr_uci"])
    assert [m.name for m in lrr_spec.methods] == ["RLS"]


def test_paired_claim_on_lrr_runs_says_not_significant(tmp_path: Path) -> None:
    spec = {"name": "lrr_uci", "datasets": ["iris"], "protocol": {"kind": "holdout", "train_size": 45, "repeats": 10},
            "methods": [{"name": "RLS", "estimator": "rls"}, {"name": "LRR", "estimator": "lrr"}]}
    store = RunStore(tmp_path / "lrr_uci")
    store.prepare()
    store.write_spec(spec_to_yaml(spec_from_dict(spec)))
    noise = np.random.default_rng(1).normal(0, 0.03, size=(2, 10))
    store.append([{"task_id": f"{m}{f}", "dataset": "iris", "split": f"r{f}", "method": m, "params": {},
                   "status": "ok", "accuracy": 0.8 + noise[i, f], "fit_seconds": 0.1, "predict_seconds": 0.1,
                   "n_train": 45, "n_test": 55} for i, m in enumerate(("RLS", "LRR")) for f in range(10)])
    r = lrr.evaluate_claims(tmp_path).set_index("#").loc["4a"]
    assert "not significant on 1 of 1" in r["our measure"] and r["verdict"].startswith("inconclusive (could detect ≥ ")
    assert "no difference" not in " ".join(lrr.evaluate_claims(tmp_path)["our measure"])


def test_claim_effect_on_one_set_is_its_paired_comparison() -> None:
    from lkm.numerics.stats import paired_test

    r = paired_test(np.array([0.82, 0.80, 0.85, 0.81]), np.array([0.80, 0.79, 0.80, 0.80]), test_train_ratio=0.1)
    effect = claims.ClaimEffect.of({"sonar": r})
    assert effect.effect == f"{100 * r.mean:+.2f} pts"
    assert effect.ci == f"[{100 * r.ci_low:+.2f}, {100 * r.ci_high:+.2f}]"
    assert effect.test.startswith("paired t over splits, Nadeau–Bengio corrected, p ")
    assert "McNemar" in claims.ClaimEffect.of({"usps": r}, "a − b (McNemar, exact)").test


def test_claim_effect_over_sets_is_a_t_interval_of_the_per_set_means() -> None:
    from scipy import stats as sps

    from lkm.numerics.stats import paired_test

    per_set = {ds: paired_test(np.array([m, m + 0.01, m - 0.01]), np.zeros(3)) for ds, m in
               zip(DATASETS, (0.01, 0.03, 0.05), strict=True)}
    effect = claims.ClaimEffect.of(per_set)
    # mean 3 points; sd over sets 2 points, se 2/sqrt(3); t_{0.975, 2} = 4.303
    half = sps.t.ppf(0.975, 2) * 2 / np.sqrt(3)
    assert effect.effect == "+3.00 pts (mean of 3 sets)"
    assert effect.ci == f"[{3 - half:+.2f}, {3 + half:+.2f}]"
    assert effect.test.endswith(f"significant on {sum(r.significant() for r in per_set.values())} of 3 sets")


def test_claims_table_has_effect_columns_filled_by_the_deciding_comparison(tmp_path: Path) -> None:
    write_run(tmp_path, "lpl_vs_svm", {"sonar": 0.05, "ionosphere": 0.05, "heart-statlog": 0.05})
    table = lpl.evaluate_claims(tmp_path)
    assert set(claims.EFFECT_COLUMNS) <= set(table.columns)
    row = table[table["our measure"].str.contains("SVM − LPL at each sigma")].iloc[0]
    assert row["effect"].endswith("pts (mean of 3 sets)") and row["95% CI"].startswith("[+")
    assert "significant on 3 of 3 sets" in row["test"]
    assert (table["effect"] != "").all()  # "–" where a claim has no paired comparison
