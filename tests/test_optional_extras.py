"""Optional extras never break a run (issue 40, point 2): a method whose optional package
is absent (``neighbors: hnswlib``, ``backend: intelex``, both in ``lkm[fast]``) is found
when the plan is built, listed before the first fit, recorded ``not run`` (not
``error``), shown as ``not run: needs lkm[fast]`` in tables and claims, and the command
exits 0; with the package installed nothing changes.

Absence is simulated with ``LKM_PRETEND_MISSING`` (read only by
:func:`lkm.methods.extras.is_installed`), so the dev venv, which has both extras, tests
both sides.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from lkm.cli import app
from lkm.engine.runner import build_plan
from lkm.engine.store import RunStore
from lkm.methods.extras import (
    NOT_RUN,
    PRETEND_MISSING_ENV,
    is_installed,
    missing_extra,
    needed_extra,
)

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden" / "lpl" / "lpl_annoy-smoke" / "tables" / "summary.md"
SKIPPED_LINE = "LPL-hnswlib needs hnswlib: `pip install 'lkm[fast]'` — skipped"
CELL = "not run: needs lkm[fast]"


def _records(run: Path) -> list[dict]:
    return list(RunStore(run).iter_records())


def _cells(markdown: str) -> list[list[str]]:
    """A Markdown table's rows as stripped cells (column widths follow the widest cell)."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines()
            if line.startswith("|") and not line.startswith("|:")]


def test_the_registry_reads_estimator_and_parameter_value(monkeypatch) -> None:
    monkeypatch.delenv(PRETEND_MISSING_ENV, raising=False)
    assert needed_extra("lpl", {"neighbors": "hnswlib"}).module == "hnswlib"
    assert needed_extra("lkm.methods.projection.LocalizedProjectionLearning", {"neighbors": "hnswlib"}).extra == "fast"
    assert needed_extra("npps_svm", {"neighbors": "hnswlib", "k": 10}).package == "hnswlib"
    assert needed_extra("svm", {"backend": "intelex"}).package == "scikit-learn-intelex"
    assert needed_extra("svm", {"backend": "libsvm"}) is None
    assert needed_extra("lpl", {"neighbors": "annoy"}) is None
    assert needed_extra("nn", {"neighbors": "hnswlib"}) is None  # another estimator's parameter
    # the dev venv has both extras: nothing is missing
    assert is_installed("hnswlib") and is_installed("sklearnex")
    assert missing_extra("lpl", {"neighbors": "hnswlib"}) is None
    monkeypatch.setenv(PRETEND_MISSING_ENV, "hnswlib, sklearnex")
    assert not is_installed("hnswlib") and not is_installed("sklearnex") and is_installed("annoy")
    extra = missing_extra("lpl", {"neighbors": "hnswlib"})
    assert extra is not None and extra.reason == "needs hnswlib: pip install 'lkm[fast]'"
    assert not is_installed("no_such_module_anywhere")


def test_with_the_extra_installed_the_plan_has_nothing_not_run(monkeypatch, data_dir) -> None:
    from lkm.papers import packaged_specs
    from lkm.spec import load_spec

    monkeypatch.delenv(PRETEND_MISSING_ENV, raising=False)
    spec = load_spec(packaged_specs()["lpl_annoy"], smoke=True)
    plan = build_plan(spec, data_dir=data_dir)
    assert plan.not_run == {} and plan.not_run_methods() == {}
    monkeypatch.setenv(PRETEND_MISSING_ENV, "hnswlib")
    missing = build_plan(spec, data_dir=data_dir)
    assert missing.task_ids == plan.task_ids  # the same tasks: ids do not depend on what is installed
    assert {t.method for t in missing.tasks if t.id in missing.not_run} == {"LPL-hnswlib"}
    assert list(missing.not_run_methods()) == ["LPL-hnswlib"]


def test_lpl_annoy_smoke_without_hnswlib_exits_0_and_says_not_run(tmp_path, monkeypatch, data_dir) -> None:
    """`lkm run lpl_annoy --smoke` without hnswlib: exit 0, the skipped line before the
    fits, 3 records `not run`, a short summary cell, claim 6b `not run`; installing it
    then fits exactly those 3 and the summary is the golden one, byte for byte."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    run = tmp_path / "results" / "lpl_annoy-smoke"
    args = ["run", "lpl_annoy", "--smoke", "--jobs", "1", "--no-progress", "--out", str(run)]
    res = CliRunner().invoke(app, args, env={PRETEND_MISSING_ENV: "hnswlib"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = res.output
    assert SKIPPED_LINE in out
    assert out.index(SKIPPED_LINE) < out.index("lpl_annoy-smoke: 12 fits (0 already recorded, 3 not run)")
    assert "failed" not in out and "ImportError" not in out
    records = _records(run)
    hnsw = [r for r in records if r["method"] == "LPL-hnswlib"]
    assert len(hnsw) == 3 and {r["status"] for r in hnsw} == {NOT_RUN}
    assert {r["needs"] for r in hnsw} == {"lkm[fast]"}
    assert all(r["error"].endswith("needs hnswlib: pip install 'lkm[fast]'") for r in hnsw)
    assert {r["status"] for r in records if r["method"] != "LPL-hnswlib"} == {"ok"}
    assert json.loads((run / "provenance.json").read_text())["tasks"]["not_run"] == 3

    summary = (run / "tables" / "summary.md").read_text(encoding="utf-8")
    row = next(line for line in summary.splitlines() if "LPL-hnswlib" in line)
    assert CELL in row and "error" not in row
    assert max(len(line) for line in summary.splitlines()) < 140  # no 250-column cell
    assert _cells(GOLDEN.read_text(encoding="utf-8"))[:-1] == _cells(summary)[:-1]  # the other rows as ever
    assert (run / "tables" / "summary.json").is_file() and CELL in (run / "tables" / "summary.json").read_text()

    from lkm.papers.lpl.claims import evaluate_claims

    claims = evaluate_claims(tmp_path / "results", smoke=True).set_index("#")
    assert claims.loc["6b", "our measure"] == f"LPL-hnswlib {CELL}"
    assert claims.loc["6b", "verdict"] == f"smoke: not evidence ({CELL})"
    assert "n/a" not in claims.loc["6b", "verdict"]

    # a rerun still without it: nothing to fit, nothing recorded twice
    res = CliRunner().invoke(app, args, env={PRETEND_MISSING_ENV: "hnswlib"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert SKIPPED_LINE in res.output and "nothing new to fit" in res.output
    assert sum(1 for p in (run / "records").glob("part-*.jsonl") for _ in p.open()) == 12

    # with the extra installed: the 3 are fitted, the summary is the golden one
    monkeypatch.delenv(PRETEND_MISSING_ENV, raising=False)
    res = CliRunner().invoke(app, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "skipped" not in res.output and "3 fits in" in res.output
    assert {r["status"] for r in _records(run)} == {"ok"}
    assert (run / "tables" / "summary.md").read_text(encoding="utf-8") == GOLDEN.read_text(encoding="utf-8")


def _write_spec(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


TINY_SVM = {
    "name": "tiny_intelex",
    "datasets": ["moons"],
    "protocol": {"kind": "kfold", "folds": 2, "seed": 0},
    "methods": [
        {"name": "SVM", "estimator": "svm", "params": {"sigma": 1.0}},
        {"name": "SVM-intelex", "estimator": "svm", "params": {"sigma": 1.0, "backend": "intelex"}},
    ],
}


@pytest.mark.parametrize("missing", [True, False])
def test_intelex_backend_on_a_tiny_spec(tmp_path, monkeypatch, missing: bool) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PRETEND_MISSING_ENV, raising=False)
    run = tmp_path / "run"
    env = {PRETEND_MISSING_ENV: "sklearnex"} if missing else {}
    res = CliRunner().invoke(app, ["run", str(_write_spec(tmp_path, TINY_SVM)), "--jobs", "1", "--no-progress",
                                   "--out", str(run)], env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    line = "SVM-intelex needs scikit-learn-intelex: `pip install 'lkm[fast]'` — skipped"
    status = {r["method"]: r["status"] for r in _records(run)}
    row = next(r for r in (run / "tables" / "summary.md").read_text().splitlines() if "SVM-intelex" in r)
    if missing:
        assert line in res.output and status == {"SVM": "ok", "SVM-intelex": NOT_RUN}
        assert CELL in row
    else:
        assert "skipped" not in res.output and status == {"SVM": "ok", "SVM-intelex": "ok"}
        assert CELL not in row


def test_dry_run_lists_what_will_not_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", str(_write_spec(tmp_path, TINY_SVM)), "--dry-run", "--out", str(tmp_path / "r")],
                             env={PRETEND_MISSING_ENV: "sklearnex"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "4 fits in all, 0 already recorded, 2 to run, 2 not run." in res.output
    assert "SVM-intelex needs scikit-learn-intelex" in res.output


TINY_NPPS = {
    "name": "tiny_npps",
    "datasets": ["moons"],
    "protocol": {"kind": "kfold", "folds": 2, "seed": 0},
    "methods": [
        {"name": "ALL", "estimator": "svm", "params": {"sigma": 1.0, "C": 10}},
        {"name": "SELECTED", "estimator": "npps_svm", "params": {"sigma": 1.0, "C": 10, "k": 10}},
        {"name": "ALL (modern solver)", "estimator": "svm", "params": {"sigma": 1.0, "C": 10, "backend": "intelex"}},
    ],
    "outputs": {"tables": ["npps_table2"], "figures": [], "options": {"npps_table2": {"rows": [
        {"dataset": "moons", "all": "ALL", "selected": "SELECTED", "modern": "ALL (modern solver)"}]}}},
}


def test_npps_table2_modern_row_without_intelex(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "tiny_npps"
    res = CliRunner().invoke(app, ["run", str(_write_spec(tmp_path, TINY_NPPS)), "--jobs", "1", "--no-progress",
                                   "--out", str(run)], env={PRETEND_MISSING_ENV: "sklearnex"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    table = json.loads((run / "tables" / "npps_table2.json").read_text())
    modern = next(dict(zip(table["columns"], r, strict=True)) for r in table["rows"] if "modern solver" in r[0])
    assert modern["error ALL %"] == CELL and modern["time ALL (s)"] == CELL
    assert modern["error SELECTED %"] not in ("", CELL)  # repeated from the row above

    from lkm.papers.npps.claims import modern_solver_context, table2_pairs
    from lkm.reproduction.runs import load_run

    pairs = table2_pairs(load_run(tmp_path, "tiny_npps"))
    assert pairs and pairs[0]["modern_not_run"] == CELL
    assert modern_solver_context(pairs).endswith(f"moons {CELL}")


def test_a_fit_after_a_not_run_record_is_the_one_read(tmp_path: Path) -> None:
    """A task first recorded `not run` (its extra missing), then fitted and failed once the
    extra was installed: the tables read the failure, not the stale placeholder."""
    store = RunStore(tmp_path / "run")
    store.append([{"task_id": "t1", "status": NOT_RUN, "needs": "lkm[fast]", "error": "needs hnswlib"}])
    store.append([{"task_id": "t1", "status": "error", "error": "ValueError: boom"}])
    assert [r["status"] for r in store.iter_records()] == ["error"]
    store.append([{"task_id": "t1", "status": "error", "error": "ValueError: again"}])
    assert [r["error"] for r in store.iter_records()] == ["ValueError: boom"]  # the first attempt, as before
