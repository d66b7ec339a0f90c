"""Readable outputs: LaTeX that compiles, scores beyond accuracy and selection by them,
failed methods in the summary, selected values at the edge of their grid, smoke labels
on claims, figures redrawn only when their inputs change, PNG by default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_runs import TINY
from tiny_runs import run_tiny as _run

from lkm.engine.store import RunStore
from lkm.numerics.metrics import SCORES, fit_scores, roc_auc
from lkm.report import build_report
from lkm.report.aggregation import aggregate, select_best
from lkm.report.core import summary_table
from lkm.report.tables import latex_escape, write_table
from lkm.spec import OutputsSpec, load_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[1]

# -- LaTeX ------------------------------------------------------------------------------
_UNESCAPE = [(r"\textbackslash{}", "\\"), (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"),
             (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\textbar{}", "|"), (r"\dag{}", "†"),
             (r"\ensuremath{\pm}", "±"), (r"\ensuremath{-}", "−"), (r"\%", "%"), (r"\_", "_"), (r"\&", "&"), (r"\#", "#"),
             (r"\$", "$"), (r"\{", "{"), (r"\}", "}")]
#: What pdflatex's UTF-8 input reads without extra packages, besides ASCII.
_SAFE_NON_ASCII = set("–—‘’“”") | {chr(c) for c in range(0xA0, 0x100) if chr(c) not in "±²³¹·×"}


def _unescape(tex: str) -> str:
    out, i = [], 0
    while i < len(tex):
        for esc, char in _UNESCAPE:
            if tex.startswith(esc, i):
                out.append(char)
                i += len(esc)
                break
        else:
            out.append(tex[i])
            i += 1
    return "".join(out)


def _special_outside_commands(tex: str) -> list[str]:
    """Characters LaTeX treats specially that are not part of an escape or a command."""
    rest = tex
    for esc, _ in _UNESCAPE:
        rest = rest.replace(esc, "")
    rest = re.sub(r"\\[A-Za-z]+(?:\{\})?", "", rest)  # commands (and the empty group ending one)
    return [c for c in rest if c in "%_&#$\\~^{}"]


def _text_parts(tex: str) -> list[str]:
    """What lkm writes into a .tex table from data: cells, headers, caption and notes."""
    cells = [c for row in _tabular_rows(tex) for c in row]
    caption = re.search(r"\\caption\{(.*)\}\n", tex).group(1)
    notes = re.findall(r"\\par\\footnotesize (.*)\n", tex)
    return [*cells, caption, *notes]


def _tabular_rows(tex: str) -> list[list[str]]:
    body = tex.split("\\toprule\n", 1)[1].split("\n\\bottomrule", 1)[0]
    return [line.removesuffix(" \\\\").split(" & ") for line in body.splitlines() if line != "\\midrule"]


def test_latex_escape_covers_every_special_character() -> None:
    text = "a_b%c & #1 $2 {x} ~y^z \\ ± −"
    escaped = latex_escape(text)
    assert _special_outside_commands(escaped) == []
    assert _unescape(escaped) == text


def test_tex_tables_round_trip_a_dataset_named_with_special_characters(tmp_path: Path) -> None:
    names = ["a_b%c", "x&y#z", "$5 {t}", "~^\\"]
    df = pd.DataFrame({"dataset_name": names, "accuracy % (ours)": ["80.00 ± 1.00"] * 4, "splits": [10, 10, 10, 3]})
    write_table(df, tmp_path / "t", "run_1: accuracy (%) of a_b%c & co", notes=["† at the edge: 100%"])
    tex = (tmp_path / "t.tex").read_text()
    rows = _tabular_rows(tex)
    assert [len(r) for r in rows] == [3] * 5  # no unescaped & splits a cell
    assert [_unescape(c) for c in rows[0]] == list(df.columns)
    assert [_unescape(r[0]) for r in rows[1:]] == names
    caption = re.search(r"\\caption\{(.*)\}\n", tex).group(1)
    assert _unescape(caption) == "run_1: accuracy (%) of a_b%c & co"
    assert _unescape(_text_parts(tex)[-1]) == "† at the edge: 100%"
    assert all(_special_outside_commands(part) == [] for part in _text_parts(tex))
    assert not set(tex) - set(map(chr, range(32, 127))) - {"\n"} - _SAFE_NON_ASCII


def test_every_tex_file_of_a_run_has_no_unescaped_special_character(tmp_path: Path) -> None:
    spec = {**TINY, "datasets": [{"name": "moons", "label": "moons_a%b"}], "methods": TINY["methods"][:1],
            "paper": {"reference": "R&D #1", "results": [{"dataset": "moons_a%b", "method": "PL", "value": 0.9}]}}
    _run(tmp_path, spec)
    files = sorted((tmp_path / "tables").glob("*.tex"))
    assert {f.stem for f in files} == {"summary", "metrics", "paper"}
    for f in files:
        tex = f.read_text()
        assert "moons\\_a\\%b" in tex, f.name
        assert all(_special_outside_commands(part) == [] for part in _text_parts(tex)), f.name
        assert not set(tex) - set(map(chr, range(32, 127))) - {"\n"} - _SAFE_NON_ASCII, f.name


# -- scores beyond accuracy ---------------------------------------------------------------
def test_records_carry_balanced_accuracy_macro_f1_and_roc_auc(tmp_path: Path) -> None:
    _run(tmp_path)
    recs = RunStore(tmp_path).records_frame()
    assert (recs["status"] == "ok").all()
    for score in SCORES:
        assert recs[score].between(0, 1).all(), score  # binary (moons) and 3 classes (iris): all present
    good = recs[(recs["dataset"] == "moons") & (recs["accuracy"] > 0.8)]
    assert not good.empty and (good["roc_auc"] > 0.8).all()  # decision values for the positive class, not flipped
    metrics = (tmp_path / "tables" / "metrics.md").read_text()
    assert "balanced accuracy %" in metrics and "ROC AUC %" in metrics


def test_roc_auc_needs_decision_values_and_two_classes() -> None:
    y = np.array([0, 0, 1, 1])
    assert roc_auc(y, np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 1])) == pytest.approx(0.75)
    assert roc_auc(y, None, np.array([0, 1])) is None  # no decision_function / predict_proba
    assert roc_auc(np.array([1, 1]), np.array([0.2, 0.3]), np.array([0, 1])) is None  # one class in the test part
    three = np.array([0, 1, 2, 2])
    scores = np.eye(3)[three] + 0.1  # each row's own class highest: every one-vs-rest AUC is 1
    assert roc_auc(three, scores, np.array([0, 1, 2])) == 1.0
    s = fit_scores(np.array([0, 0, 0, 1]), np.array([0, 0, 0, 0]), None, np.array([0, 1]))
    assert s["balanced_accuracy"] == 0.5 and s["roc_auc"] is None
    assert s["macro_f1"] == pytest.approx((6 / 7 + 0) / 2)


def _records(rows: list[tuple[float, float, float | None]], sigma_grid=(0.5, 1.0, 2.0)) -> pd.DataFrame:
    """Two splits per sigma; rows: (accuracy, balanced accuracy, or None for an old record)."""
    recs = []
    for sigma, (acc, bal) in zip(sigma_grid, rows, strict=True):
        for split in range(2):
            rec = {"task_id": f"{sigma}-{split}", "dataset": "moons", "method": "PL", "params": {"sigma": sigma},
                   "status": "ok", "accuracy": acc, "fit_seconds": 0.01, "predict_seconds": 0.01, "n_train": 100,
                   "split": split}
            if bal is not None:
                rec["balanced_accuracy"] = bal
            recs.append(rec)
    return pd.DataFrame(recs)


def _spec(metric: str = "accuracy"):
    return spec_from_dict({**TINY, "datasets": ["moons"], "methods": TINY["methods"][:1],
                           "selection": {"metric": metric}})


def test_selection_by_balanced_accuracy_picks_by_it() -> None:
    df = _records([(0.90, 0.60), (0.85, 0.80), (0.70, 0.65)])
    assert select_best(aggregate(df, _spec()), _spec())["params"].iloc[0] == {"sigma": 0.5}
    spec = _spec("balanced_accuracy")
    best = select_best(aggregate(df, spec), spec)
    assert best["params"].iloc[0] == {"sigma": 1.0} and best["selected_by"].iloc[0] == "balanced_accuracy"
    table, _ = summary_table(best, spec, {})
    assert table["balanced accuracy % (ours)"].iloc[0] == "80.00 ± 0.00"
    assert table["accuracy % (ours)"].iloc[0] == "85.00 ± 0.00"


def test_old_records_without_the_metric_are_selected_by_accuracy_and_say_so() -> None:
    spec = _spec("balanced_accuracy")
    agg = aggregate(_records([(0.90, None), (0.85, None), (0.70, None)]), spec)
    assert agg["balanced_accuracy"].isna().all() and agg["roc_auc"].isna().all()
    best = select_best(agg, spec)
    assert best["params"].iloc[0] == {"sigma": 0.5} and best["selected_by"].iloc[0] == "accuracy"
    table, _ = summary_table(best, spec, {})
    assert table["balanced accuracy % (ours)"].iloc[0] == "– (selected by accuracy)"


def test_a_spec_selecting_by_balanced_accuracy_runs_end_to_end(tmp_path: Path) -> None:
    _, _, _, result = _run(tmp_path, {**TINY, "selection": {"metric": "balanced_accuracy"}})
    summary = (tmp_path / "tables" / "summary.md").read_text()
    assert "selected by balanced accuracy" in summary and "balanced accuracy % (ours)" in summary
    assert "(selected by accuracy)" not in summary  # every method has the score


# -- failed methods and the edge of the grid ---------------------------------------------
def _store_with(tmp_path: Path, spec, records: list[dict]) -> RunStore:
    store = RunStore(tmp_path)
    store.prepare()
    store.append(records)
    return store


def test_a_method_whose_every_fit_failed_is_in_the_summary_as_failed(tmp_path: Path) -> None:
    spec = spec_from_dict({**TINY, "datasets": ["moons"]})
    ok = _records([(0.9, 0.9), (0.8, 0.8), (0.7, 0.7)]).to_dict("records")
    failed = [{"task_id": f"svm-{i}", "dataset": "moons", "method": "SVM", "params": {"sigma": 1.0}, "split": i,
               "status": "error", "error": "moons/0/SVM {}: TypeError: fit() got an unexpected keyword argument 'cache'"}
              for i in range(2)]
    store = _store_with(tmp_path, spec, ok + failed)
    result = build_report(store, spec, {r["task_id"] for r in ok + failed}, {})
    summary = pd.read_csv(tmp_path / "tables" / "summary.csv", dtype=str)
    row = summary[summary["method"] == "SVM"].iloc[0]
    assert row["accuracy % (ours) note"].startswith("failed (2 of 2 fits): ")  # the CSV's accuracy is a number
    assert "unexpected keyword argument 'cache'" in row["accuracy % (ours) note"]
    assert any(w.startswith("SVM on moons: 2 of 2 fits failed; first: ") for w in result.failures)


def test_a_selected_value_at_the_edge_of_its_grid_is_marked_and_warned(tmp_path: Path) -> None:
    spec = spec_from_dict({**TINY, "datasets": ["moons"], "methods": TINY["methods"][:1]})
    edge = _records([(0.7, 0.7), (0.8, 0.8), (0.9, 0.9)]).to_dict("records")  # best at sigma = 2, the largest
    store = _store_with(tmp_path, spec, edge)
    result = build_report(store, spec, {r["task_id"] for r in edge}, {})
    summary = (tmp_path / "tables" / "summary.md").read_text()
    assert "sigma=2 †" in summary and "† at the edge of its grid" in summary
    assert result.warnings == ["tiny: selected sigma at the edge of its grid [0.5, 2] for PL on moons (2): "
                               "the best value may lie outside the grid (marked † in tables/summary)"]
    inside = _records([(0.7, 0.7), (0.9, 0.9), (0.8, 0.8)])
    best = select_best(aggregate(inside, spec), spec)
    table, notes = summary_table(best, spec, {})
    assert table["selected"].iloc[0] == "sigma=1" and notes == []


# -- claims of smoke runs ----------------------------------------------------------------
def _smoke_copy_of_the_snapshot(tmp_path: Path, runs: list[str]) -> Path:
    for name in runs:
        src = REPO / "docs" / "runs" / name
        base, _, perturbed = name.partition("-perturbed")
        dest = tmp_path / (f"{base}-smoke-perturbed" if name.endswith("-perturbed") else f"{name}-smoke")
        dest.symlink_to(src, target_is_directory=True)
    return tmp_path


def test_every_verdict_of_a_smoke_run_is_labelled_not_evidence(tmp_path: Path) -> None:
    from lkm.papers import lpl
    from lkm.reproduction.claims import SMOKE_LABEL

    root = _smoke_copy_of_the_snapshot(tmp_path, [p.name for p in (REPO / "docs" / "runs").glob("lpl_*")])
    written = lpl.write_summary(root, smoke=True)
    claims = pd.read_csv(root / "lpl_claims-smoke" / "claims.csv", dtype=str, keep_default_na=False)
    verdicts = [c for c in claims.columns if c.startswith("verdict")]
    cells = [v for c in verdicts for v in claims[c] if v != "–"]
    assert cells and all(v.startswith(f"{SMOKE_LABEL} (") for v in cells)
    assert any("holds" in v for v in cells)  # the snapshot gives real verdict words, all labelled
    md = next(p for p in written if p.name == "claims.md").read_text()
    assert md.startswith("**Tsuji") and f"SMOKE RUN (few datasets and settings): every verdict is {SMOKE_LABEL}" in md


def test_claims_print_as_plain_untruncated_lines_when_not_a_terminal(tmp_path: Path, capsys) -> None:
    from lkm.cli.reproduce import print_claims
    from lkm.reproduction.claims import SMOKE_LABEL

    df = pd.DataFrame({"#": ["1a"], "the paper's claim": ["a claim " * 30], "where": ["x"], "our measure": ["m"],
                       "verdict": [f"{SMOKE_LABEL} (holds)"]})
    from lkm.report.tables import write_table

    write_table(df, tmp_path / "claims", "claims")
    print_claims(tmp_path / "claims.md", smoke=True)
    out = capsys.readouterr().out
    assert ("a claim " * 30).strip() in out and f"verdict: {SMOKE_LABEL} (holds)" in out
    assert "…" not in out and "our measure" not in out


# -- figures -----------------------------------------------------------------------------
def test_figures_are_png_only_by_default() -> None:
    assert OutputsSpec().formats == ["png"]


def test_a_run_writes_png_figures_only_by_default(tmp_path: Path) -> None:
    _run(tmp_path)
    assert sorted(p.name for p in (tmp_path / "figures").iterdir() if not p.name.startswith(".")) == [
        "best.png", "sweep_sigma.png"]


@pytest.mark.parametrize("key", ["lpl", "npps", "lrr"])
def test_reproductions_keep_pdf_figures(key: str) -> None:
    from lkm.papers import PAPERS

    for experiment in PAPERS[key].SPECS:
        spec = load_spec(REPO / experiment.spec)
        if spec.outputs.figures:
            assert "pdf" in spec.outputs.formats, experiment.spec


def test_a_figure_is_redrawn_only_when_its_inputs_change(tmp_path: Path) -> None:
    spec, plan, store, first = _run(tmp_path)
    png = tmp_path / "figures" / "sweep_sigma.png"
    stamp = png.stat().st_mtime_ns
    assert first.reused == []
    again = build_report(store, spec, plan.task_ids, plan.unavailable)
    assert png.stat().st_mtime_ns == stamp and png in again.reused and png in again
    # another record (a changed score) changes what the figures are drawn from
    rec = next(r for r in store.iter_records() if r["dataset"] == "moons")
    store.append([{**rec, "task_id": "extra", "accuracy": 0.0}])
    changed = build_report(store, spec, plan.task_ids | {"extra"}, plan.unavailable)
    assert png.stat().st_mtime_ns != stamp and png not in changed.reused
    digests = json.loads((tmp_path / "figures" / ".inputs.json").read_text())
    assert set(digests) == {"sweep", "best"} and digests["sweep"]["files"] == ["figures/sweep_sigma.png"]
    # a deleted figure is drawn again
    png.unlink()
    build_report(store, spec, plan.task_ids | {"extra"}, plan.unavailable)
    assert png.is_file()


def test_failures_of_a_studies_only_run_are_not_fits() -> None:
    from lkm.report.aggregation import failed_fits, failure_warnings

    studies = pd.DataFrame([{"task_id": "s", "kind": "study", "dataset": "sonar", "study": "rbf", "status": "error",
                             "error": "boom"}])
    assert failed_fits(studies).empty and failure_warnings(studies) == []


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")  # scikit-learn's own, on the reference
def test_fit_scores_equal_scikit_learns_metrics(seed: int) -> None:
    """The confusion-matrix and rank formulas give scikit-learn's numbers: labels that are
    strings, a class absent from the test part or from the predictions, tied decision values."""
    from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

    rng = np.random.default_rng(seed)
    classes = np.array(["a", "b", "c"])[: 2 + seed % 2]
    y_true = rng.choice(classes[: 2 + (seed % 3 == 0)], size=40)  # seed 0, 3: maybe a class missing
    y_pred = rng.choice(classes, size=40)
    decision = np.round(rng.normal(size=(40, classes.size)), 1)  # rounded: ties
    if classes.size == 2:
        decision = decision[:, 1]
    got = fit_scores(y_true, y_pred, decision, classes)
    assert got["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y_true, y_pred), abs=1e-12)
    assert got["macro_f1"] == pytest.approx(f1_score(y_true, y_pred, average="macro", zero_division=0), abs=1e-12)
    if classes.size == 2:
        expected = roc_auc_score(y_true == classes[1], decision)
    else:
        expected = np.mean([roc_auc_score(y_true == c, decision[:, j])
                            for j, c in enumerate(classes) if c in set(y_true)])
    assert got["roc_auc"] == pytest.approx(expected, abs=1e-12)
