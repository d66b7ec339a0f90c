"""Scores that say when they are meaningless, outputs that do not attack their reader,
inputs with a bound (issue 39, points 3 and 4).

- NaN or infinite predictions or decision values of a user estimator are a failed fit
  (status ``error``, the reason in the record, exit 1), never a 0 % score.
- A classifier predicting one class for a test part holding several is scored, with a
  warning in its record and a mark and note in tables/summary.
- CSV cells a spreadsheet would evaluate (``=cmd|' /C calc'!A0``, ``+1``, ``-2``, ``@x``)
  are written with OWASP's single-quote prefix by the one CSV writer
  (:func:`lkm.files.write_csv`); numbers, and columns of numbers written as text, are not.
- A sparse (svmlight) file whose dense form exceeds ``LKM_MAX_DENSE_BYTES`` is refused
  in one line before it is made dense.

User estimators live in a module written to ``tmp_path`` and put on ``PYTHONPATH``;
runs go through the ``lkm`` CLI in a subprocess (real worker processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lkm.data.parsers import ParseError, svmlight
from lkm.engine.runner import checked_predictions, decision_values
from lkm.engine.store import RunStore
from lkm.files import spreadsheet_text, write_csv
from lkm.numerics.metrics import non_finite_rows, one_class_warning
from lkm.report.formatting import WARNING_MARK
from lkm.report.tables import write_table

USER_MODULE = '''
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin


class NearestMean(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == c].mean(axis=0) for c in self.classes_])
        return self

    def _distances(self, X):
        return ((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)

    def predict(self, X):
        return self.classes_[self._distances(X).argmin(axis=1)]


class NaNPredictions(NearestMean):
    """Predicts NaN for every third row (labels as floats)."""

    def predict(self, X):
        y = super().predict(X).astype(float)
        y[::3] = np.nan
        return y


class NaNDecisions(NearestMean):
    def decision_function(self, X):
        d = self._distances(X)[:, 0] - self._distances(X)[:, 1]
        d[:2] = np.nan
        return d


class InfProbabilities(NearestMean):
    def predict_proba(self, X):
        p = np.full((len(X), 2), 0.5)
        p[0, 1] = np.inf
        return p


class OneClass(NearestMean):
    def predict(self, X):
        return np.full(len(X), self.classes_[0])
'''

SPEC = """\
name: hostile-outputs
datasets: [moons]
preprocessing: standardize
protocol: {{kind: kfold, folds: 2, repeats: 1, seed: 0}}
methods:
{methods}
outputs: {{tables: [summary], figures: []}}
"""


def _lkm_run(tmp_path: Path, *methods: str) -> subprocess.CompletedProcess:
    (tmp_path / "hostile_outputs_user.py").write_text(USER_MODULE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(methods="\n".join(methods)))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "lkm.cli", "run", str(spec), "--out", str(tmp_path / "out"),
                           "--no-progress", "--jobs", "1"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def _records(out: Path) -> list[dict]:
    lines = [ln for part in sorted(out.rglob("records/part-*.jsonl")) for ln in part.read_text().splitlines()]
    return [json.loads(ln) for ln in lines if ln.strip()]


def _method(name: str) -> str:
    return f"  - {{name: {name}, estimator: hostile_outputs_user.{name}}}"


# -- silent scores --------------------------------------------------------------------
def test_non_finite_rows_counts_rows_of_numbers_and_never_text_labels() -> None:
    assert non_finite_rows(np.array([1.0, np.nan, 2.0, np.nan])) == {"NaN": 2}
    assert non_finite_rows(np.array([[0.1, np.inf], [np.nan, -np.inf], [0.0, 1.0]])) == {
        "NaN": 1, "infinite values": 2}
    assert non_finite_rows(np.array(["a", "b"], dtype=object)) == {}
    assert non_finite_rows(np.array(["a", None, float("nan"), 1.0], dtype=object)) == {"NaN": 2}
    assert non_finite_rows(np.array([-1, 1, -1])) == {}
    with pytest.raises(ValueError, match=r"^predict returned NaN for 2 of 4 test rows$"):
        checked_predictions(np.array([1.0, np.nan, 2.0, np.nan]), 4, "test")


def test_non_finite_decision_values_are_an_error_not_a_missing_score() -> None:
    class Decides:
        def decision_function(self, X):
            return np.array([0.5, -np.inf, 1.0])

    class Fails:
        def decision_function(self, X):
            raise RuntimeError("no scores")

    with pytest.raises(ValueError, match=r"^decision_function returned infinite values for 1 of 3 test rows$"):
        decision_values(Decides(), np.zeros((3, 2)))
    assert decision_values(Fails(), np.zeros((3, 2))) is None  # a score that fails is still only left out


def test_one_class_warning_only_when_the_test_part_holds_several() -> None:
    assert one_class_warning(np.array([0, 1, 1]), np.array([1, 1, 1])) == (
        "predicted one class (1) for all 3 test rows, which hold 2 classes")
    assert one_class_warning(np.array([1, 1]), np.array([1, 1])) is None
    assert one_class_warning(np.array([0, 1]), np.array([0, 1])) is None


def test_nan_predictions_and_decisions_are_failed_fits_with_their_reason_and_exit_1(tmp_path: Path) -> None:
    """Case: NaN predictions were scored 0 % and ranked, NaN decision values silently
    dropped ROC AUC; both said nothing."""
    res = _lkm_run(tmp_path, _method("NearestMean"), _method("NaNPredictions"), _method("NaNDecisions"),
                   _method("InfProbabilities"))
    assert res.returncode == 1, res.stderr
    records = {(r["method"], r["split"]): r for r in _records(tmp_path / "out")}
    assert len(records) == 8
    for split in ("r0f0", "r0f1"):
        assert records[("NearestMean", split)]["status"] == "ok"
        nan = records[("NaNPredictions", split)]
        n_test = len(nan.get("per_class_accuracy") or {}) or None  # an error record has no scores
        assert nan["status"] == "error" and "accuracy" not in nan and n_test is None
        assert "predict returned NaN for " in nan["error"] and " test rows" in nan["error"]
        assert records[("NaNDecisions", split)]["status"] == "error"
        assert "decision_function returned NaN for 2 of " in records[("NaNDecisions", split)]["error"]
        assert "predict_proba returned infinite values for 1 of " in records[("InfProbabilities", split)]["error"]
    line = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(line) == 1 and line[0].startswith("error: 6 fit(s) failed"), res.stderr
    summary = (tmp_path / "out" / "tables" / "summary.md").read_text()
    assert "failed (2 of 2 fits)" in summary and "predict returned NaN for" in summary


def test_a_one_class_predictor_is_scored_with_a_warning_in_record_and_summary(tmp_path: Path) -> None:
    """Case: a classifier predicting a single class on a two-class test part said nothing."""
    res = _lkm_run(tmp_path, _method("NearestMean"), _method("OneClass"))
    assert res.returncode == 0, res.stderr
    records = _records(tmp_path / "out")
    one = [r for r in records if r["method"] == "OneClass"]
    assert all(r["status"] == "ok" for r in one)
    assert all(r["warnings"] == [f"predicted one class (0) for all {r['n_test']} test rows, which hold 2 classes"]
               for r in one)
    assert all("warnings" not in r for r in records if r["method"] == "NearestMean")
    summary = (tmp_path / "out" / "tables" / "summary.md").read_text()
    assert f"{WARNING_MARK} OneClass on moons: 2 of 2 fits at the selected setting warn; first: predicted one class" in summary
    table = json.loads((tmp_path / "out" / "tables" / "summary.json").read_text())
    cells = {row[1]: row[3] for row in table["rows"]}
    assert cells["OneClass"].endswith(WARNING_MARK) and WARNING_MARK not in cells["NearestMean"]
    assert WARNING_MARK in res.stdout  # the printed summary shows the mark
    csv = pd.read_csv(tmp_path / "out" / "tables" / "summary.csv")
    assert csv["accuracy % (ours)"].dtype == float and list(csv["accuracy % (ours) mark"].fillna("")) == ["", "‡"]


# -- outputs that attack their reader ----------------------------------------------------
HOSTILE = ["=cmd|' /C calc'!A0", "+1", "-2", "@x", "\tTAB", "\rCR"]


def test_spreadsheet_text_follows_owasp_and_spares_numbers_phrases() -> None:
    assert [spreadsheet_text(s) for s in HOSTILE] == ["'" + s for s in HOSTILE]
    assert spreadsheet_text("moons") == "moons"
    assert spreadsheet_text("+0.52 pts (mean of 2 sets)") == "+0.52 pts (mean of 2 sets)"  # lkm's claim effects
    assert spreadsheet_text("-1 +cmd|' /C calc'!A0") == "'-1 +cmd|' /C calc'!A0"
    assert spreadsheet_text('-1 HYPERLINK("http://x")') == '\'-1 HYPERLINK("http://x")'  # a call: quoted
    assert spreadsheet_text("+0.25 log10 s (SVM − LPL), testing") == "+0.25 log10 s (SVM − LPL), testing"
    assert spreadsheet_text("-2+3+cmd|' /C calc'!A0") == "'-2+3+cmd|' /C calc'!A0"


def test_csv_writer_quotes_hostile_names_and_leaves_numbers(tmp_path: Path) -> None:
    df = pd.DataFrame({
        "dataset": HOSTILE[:4], "method": list(reversed(HOSTILE[:4])),
        "accuracy": [-0.5, 0.25, -2.0, 1e-3], "splits": [-1, 2, 3, 4],
        "ours − paper": ["-1.30", "+0.52", "", "2.00"],  # numbers as text (csv_frame's): numbers
        HOSTILE[0]: ["a", "b", "c", "d"],
    })
    before = df.copy()
    write_csv(tmp_path / "t.csv", df)
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is not changed
    back = pd.read_csv(tmp_path / "t.csv")
    assert list(back["dataset"]) == ["'" + s for s in HOSTILE[:4]]
    assert list(back["method"]) == ["'" + s for s in reversed(HOSTILE[:4])]
    assert list(back["accuracy"]) == [-0.5, 0.25, -2.0, 1e-3] and list(back["splits"]) == [-1, 2, 3, 4]
    assert back["ours − paper"].tolist()[:2] == [-1.3, 0.52] and back["ours − paper"].dtype == float
    assert list(back.columns)[-1] == "'" + HOSTILE[0]
    text = (tmp_path / "t.csv").read_text()
    assert "\n=" not in text and ",=" not in text and ",-0.5," in text


def test_every_table_and_results_csv_quote_hostile_names(tmp_path: Path) -> None:
    """Both writers of lkm (tables/*.csv and results.csv) go through the one rule."""
    table = pd.DataFrame({"dataset": HOSTILE[:4], "method": ["m"] * 4, "accuracy % (ours)": ["-1.00 ± 0.50"] * 4,
                          "splits": [3, 3, 3, 3]})
    write_table(table, tmp_path / "summary", "caption")
    back = pd.read_csv(tmp_path / "summary.csv")
    assert list(back["dataset"]) == ["'" + s for s in HOSTILE[:4]]
    assert list(back["accuracy % (ours)"]) == [-1.0] * 4 and list(back["accuracy % (ours) std"]) == [0.5] * 4
    assert "=cmd" in (tmp_path / "summary.md").read_text()  # only the CSV is for spreadsheets
    results = pd.DataFrame({"dataset": HOSTILE[:4], "method": HOSTILE[:4][::-1], "accuracy": [0.5, -1.0, 0.0, 1.0],
                            "params": [{"C": -1}] * 4})
    RunStore(tmp_path / "run").write_results(results)
    back = pd.read_csv(tmp_path / "run" / "results.csv")
    assert list(back["dataset"]) == ["'" + s for s in HOSTILE[:4]]
    assert list(back["accuracy"]) == [0.5, -1.0, 0.0, 1.0]
    assert [json.loads(p) for p in back["params"]] == [{"C": -1}] * 4
    parquet = pd.read_parquet(tmp_path / "run" / "results.parquet")  # data, not for spreadsheets: as given
    assert list(parquet["dataset"]) == HOSTILE[:4]


def test_a_run_with_hostile_names_writes_them_quoted(tmp_path: Path) -> None:
    (tmp_path / "hostile_outputs_user.py").write_text(USER_MODULE)
    rows = np.random.default_rng(0).normal(size=(30, 2))
    pd.DataFrame({"a": rows[:, 0], "b": rows[:, 1], "y": (rows[:, 0] > 0).astype(int)}).to_csv(
        tmp_path / "data.csv", index=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: hostile-names\n"
        "datasets:\n  - {name: \"=cmd|' /C calc'!A0\", path: data.csv, target: y}\n"
        "preprocessing: standardize\nprotocol: {kind: kfold, folds: 2, repeats: 1, seed: 0}\n"
        "methods:\n"
        "  - {name: '+1', estimator: hostile_outputs_user.NearestMean}\n"
        "  - {name: '-2', estimator: hostile_outputs_user.NearestMean}\n"
        "  - {name: '@x', estimator: hostile_outputs_user.NearestMean}\n"
        "outputs: {tables: [summary, metrics], figures: []}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "lkm.cli", "run", str(spec), "--out", str(tmp_path / "out"),
                          "--no-progress", "--jobs", "1"], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    for csv in [tmp_path / "out" / "results.csv", *sorted((tmp_path / "out" / "tables").glob("*.csv"))]:
        back = pd.read_csv(csv)
        assert set(back["dataset"]) == {"'=cmd|' /C calc'!A0"}, csv
        assert set(back["method"]) == {"'+1", "'-2", "'@x"}, csv
        scores = [c for c in back.columns if c.startswith("accuracy") and not c.endswith(("mark", "note"))]
        assert scores and all(back[c].dtype == float for c in scores), (csv, list(back.columns))


# -- unbounded inputs ---------------------------------------------------------------------
def test_a_sparse_file_too_large_to_densify_is_refused_in_one_line(tmp_path: Path, monkeypatch) -> None:
    """Case: a 10 KB svmlight file naming feature 1,000,000 became a 2.24 GiB array."""
    path = tmp_path / "wide.svm"
    path.write_text("".join(f"{i % 2} 1:{i}.5 1000000:1\n" for i in range(10)))
    monkeypatch.setenv("LKM_MAX_DENSE_BYTES", str(64 * 1024**2))
    tracemalloc.start()
    try:
        with pytest.raises(ParseError) as info:
            svmlight([path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path.name}/wide.svm: 10 rows x 1000000 features")
    assert "76.3 MiB" in msg and "64.0 MiB" in msg and "LKM_MAX_DENSE_BYTES" in msg
    assert peak < 16 * 1024**2  # nothing near the 76 MiB dense array was allocated
    monkeypatch.setenv("LKM_MAX_DENSE_BYTES", str(100 * 1024**2))  # raised: it loads
    assert svmlight([path]).X.shape == (10, 1000000)
    monkeypatch.setenv("LKM_MAX_DENSE_BYTES", "lots")
    with pytest.raises(ParseError, match="LKM_MAX_DENSE_BYTES='lots': expected a size"):
        svmlight([path])


def test_the_default_bound_refuses_the_found_case_through_lkm_datasets_add(tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from lkm.cli import app

    monkeypatch.delenv("LKM_MAX_DENSE_BYTES", raising=False)
    monkeypatch.setenv("LKM_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = tmp_path / "huge.svm"
    path.write_text("".join(f"{i % 2} 1:1 1000000:1\n" for i in range(300)))  # 300 x 1e6 x 8 B = 2.24 GiB
    res = CliRunner().invoke(app, ["datasets", "add", str(path), "--name", "huge"])
    assert res.exit_code != 0
    assert " ".join(res.output.split()).count("huge.svm: ") == 1, res.output
    assert "300 rows x 1000000 features would be a dense array of 2.2 GiB, over the limit of 2.0 GiB" in res.output


def test_every_registered_dataset_is_under_the_default_bound() -> None:
    """The bound refuses no registered dataset: none is svmlight today, and MNIST, the
    largest, is 0.41 GiB dense (the real datasets load as before: only svmlight is checked)."""
    from lkm.data.parsers import MAX_DENSE_BYTES
    from lkm.data.registry import load_registry

    sizes = {name: (info.n_samples or 0) * (info.n_features or 0) * 8 for name, info in load_registry().items()}
    assert sizes["mnist"] == 70000 * 784 * 8 and max(sizes.values()) < MAX_DENSE_BYTES
