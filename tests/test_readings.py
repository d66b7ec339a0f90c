"""Readings of the papers' open choices (lkm.reproduction.readings), the statistical flag of
the report (the paper's number outside our 95 % interval), causes checked against their
own experiments, and claims whose verdict depends on a reading."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from lkm.errors import LkmError
from lkm.numerics.stats import rate_interval
from lkm.papers import PAPERS
from lkm.reproduction.claims import READINGS_COLUMN, claim_row
from lkm.reproduction.paper import Difference, Evidence, paper_differences
from lkm.reproduction.readings import (
    Choice,
    Reading,
    paper_readings,
    reading_experiments,
    reading_runs,
)
from lkm.reproduction.site import (
    Table,
    cause_finder,
    contradictions,
    is_flagged,
    reading_finder,
    row_status,
    with_differences,
)

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "docs" / "runs"


# -- the interval ----------------------------------------------------------------------
def test_one_fixed_test_set_gets_the_exact_binomial_interval() -> None:
    low, high = rate_interval([1 - 89 / 2007], [2007], [7291])
    ci = binomtest(2007 - 89, 2007).proportion_ci(method="exact")
    assert (low, high) == pytest.approx((ci.low, ci.high))
    assert low < 1 - 89 / 2007 < high


def test_several_splits_get_the_corrected_t_interval_and_it_is_wider_than_the_plain_one() -> None:
    acc = np.array([0.90, 0.92, 0.95, 0.91, 0.93])
    plain = rate_interval(acc, 100, 900, resampled=False)
    corrected = rate_interval(acc, 100, 900)
    from scipy.stats import t

    half = t.ppf(0.975, 4) * acc.std(ddof=1) * math.sqrt(1 / 5 + 100 / 900)
    assert corrected == pytest.approx((acc.mean() - half, acc.mean() + half))
    assert corrected[0] < plain[0] and corrected[1] > plain[1]


def test_an_interval_stays_inside_zero_and_one_and_equal_splits_pool_their_test_rows() -> None:
    low, high = rate_interval([0.99, 0.90, 1.0], 20, 40)
    assert 0.0 <= low and high <= 1.0
    same = rate_interval([1.0, 1.0, 1.0], 50, 100)
    ci = binomtest(150, 150).proportion_ci(method="exact")
    assert same == pytest.approx((ci.low, ci.high))


# -- the flag rule ---------------------------------------------------------------------
def test_a_row_is_flagged_when_the_paper_lies_outside_our_interval_not_by_a_margin() -> None:
    assert is_flagged(95.0, 97.0, (93.0, 97.5)) is False  # 2 points off, inside the interval
    assert is_flagged(95.5, 97.0, (95.0, 96.0)) is True  # 1.5 points off, outside
    assert is_flagged(90.0, 93.0, None) is True  # no interval: the margin decides
    t = Table("s", "", ["dataset", "method", "error % (ours)", "error % (ours) [95% CI]", "error % (paper)"],
              [["usps", "NHKNN-TD", "4.43", "[3.58, 5.43]", "2.44"],
               ["tiny", "LDCV", "10.00", "[4.00, 18.00]", "13.00"],
               ["usps", "NN", "5.63", "[4.67, 6.73]", "4.98"]])
    out = with_differences(t)
    assert out.flags[0].startswith("error % +1.99 points, paper outside our 95% CI [3.58, 5.43]")
    assert out.flags[1:] == ["", ""] and out.margin_only == 1
    assert out.columns[-1] == "error %: ours − paper"  # the interval column is not taken for a comparison


# -- readings --------------------------------------------------------------------------
CHOICE = Choice("svm-multiclass", "how?", "Sec. IV", ("base",), (("method", ("Linear-SVM",)),), (),
                (Reading("one-vs-all", "stated", stated=True), Reading("one-vs-one", "ovo", runs=(("base", "base.ovo"),)),
                 Reading("tuned", "cv", method="{method}-cv")))
COLUMNS = ["dataset", "method", "rate % (ours)", "rate % (ours) [95% CI]", "rate % (paper)"]


def _tables(ovo_rate: str, ovo_ci: str) -> dict[str, dict[str, Table]]:
    base = Table("t", "", COLUMNS, [["seg", "Linear-SVM", "92.90", "[91.25, 94.55]", "95.50"]])
    summary = Table("summary", "", ["dataset", "method", "accuracy % (ours)", "accuracy % (ours) [95% CI]"],
                    [["seg", "Linear-SVM-cv", "93.07 ± 1.66", "[91.35, 94.80]"]])
    variant = Table("t", "", COLUMNS, [["seg", "Linear-SVM", ovo_rate, ovo_ci, "95.50"]])
    return {"base": {"t": base, "summary": summary}, "base.ovo": {"t": variant}}


def test_a_flagged_row_is_reproduced_under_the_reading_whose_interval_holds_the_paper() -> None:
    tables = _tables("95.67", "[94.59, 96.75]")
    out = with_differences(tables["base"]["t"], None, None, reading_finder("base", [CHOICE], tables))
    flag = out.details[0][0]
    assert [name for name, _, _ in flag.reading.tried] == ["stated", "svm-multiclass: one-vs-one", "svm-multiclass: tuned"]
    assert flag.reading.reproduced[0] == "svm-multiclass: one-vs-one"
    assert "reproduced under reading ‘svm-multiclass: one-vs-one’ (95.67 [94.59, 96.75])" in out.flags[0]
    assert row_status(out.details[0]) == "reproduced"


def test_a_row_no_reading_reaches_says_not_reached_and_lists_every_reading() -> None:
    tables = _tables("93.00", "[92.00, 94.00]")
    out = with_differences(tables["base"]["t"], None, None, reading_finder("base", [CHOICE], tables))
    assert "not reached under the 3 readings tried" in out.flags[0]
    assert "‘svm-multiclass: tuned’ 93.07 [91.35, 94.80]" in out.flags[0]  # found in the run's summary table
    assert row_status(out.details[0]) == "not reached"


def test_a_cause_is_contradicted_when_its_own_experiment_says_otherwise() -> None:
    claims_ovo = Difference("the multi-class scheme", rows=(("method", ("Linear-SVM",)),),
                            evidence=(Evidence("svm-multiclass", reproduced=True, reading="one-vs-one"),))

    def flags(tables: dict[str, dict[str, Table]], causes: list[Difference]) -> list:
        out = with_differences(tables["base"]["t"], None, cause_finder("base", causes), reading_finder("base", [CHOICE], tables))
        return [f for parts in out.details for f in parts]

    [why] = contradictions(flags(_tables("93.00", "[92.00, 94.00]"), [claims_ovo]))
    assert why.startswith("seg Linear-SVM: the cause says reading ‘one-vs-one’ of ‘svm-multiclass’ reproduce")
    assert contradictions(flags(_tables("95.67", "[94.59, 96.75]"), [claims_ovo])) == []
    not_the_scheme = Difference("not the scheme", evidence=(Evidence("svm-multiclass", reproduced=False),))
    assert "but they give" in contradictions(flags(_tables("95.67", "[94.59, 96.75]"), [not_the_scheme]))[0]
    unrun = Difference("x", evidence=(Evidence("no-such-choice", reproduced=False),))
    assert "no such reading was run" in contradictions(flags(_tables("95.67", "[94.59, 96.75]"), [unrun]))[0]


def test_every_shipped_readings_file_parses_and_names_existing_variant_specs() -> None:
    for key, module in PAPERS.items():
        choices = paper_readings(module.__name__)
        names = {e.name for e in module.SPECS}
        for choice in choices:
            assert set(choice.runs) <= names, (key, choice.key)
            assert sum(r.stated for r in choice.readings) == 1
        for experiment in reading_experiments(module.__name__):
            assert Path(experiment.spec).is_file(), experiment.spec
        for difference in paper_differences(module.__name__):
            for evidence in difference.evidence:
                assert evidence.choice in {c.key for c in choices}, (key, evidence)
                named = {r.name for c in choices if c.key == evidence.choice for r in c.readings}
                assert evidence.reading is None or evidence.reading in named, (key, evidence)


def test_a_bad_readings_file_is_one_line_naming_the_file_and_key(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "readpaper"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    (package / "readings.yaml").write_text(
        "- {choice: c, question: q, paper: p, runs: [r], readings: [{name: a, says: s}, {name: b, says: t}]}\n")
    with pytest.raises(LkmError, match=r"readpaper/readings.yaml: \[0\].readings: exactly one reading is the stated one"):
        paper_readings("readpaper")
    (package / "readings.yaml").write_text("- {choice: c, question: q, paper: p, runs: [r], colour: red, readings: []}\n")
    with pytest.raises(LkmError, match=r"\[0\].colour: unknown key"):
        paper_readings("readpaper")


# -- claims under each reading ----------------------------------------------------------
def test_a_claim_whose_verdict_changes_between_readings_reads_reading_dependent() -> None:
    verdicts = {"usps": True, "usps.pm1": False, "usps.inhom": True}

    class FakeRun:
        def __init__(self, name: str) -> None:
            self.name = name

        def with_methods_of(self, variant: FakeRun) -> FakeRun:
            return variant

    def load(name: str, perturbed: bool = False) -> FakeRun:
        return FakeRun(name)

    def evaluate(run: FakeRun) -> tuple[str, bool]:
        return f"measured on {run.name}", verdicts[run.name]

    readings = {"usps": [("pixels: [−1, 1]", "usps.pm1"), ("constant: +1", "usps.inhom")]}
    row = claim_row("6", "the constant hurts", "Sec. 5.3", evaluate, ["usps"], load, set(), readings)
    assert row["verdict"].startswith("reading-dependent (stated reading: holds; pixels: [−1, 1]: contradicted")
    assert row[READINGS_COLUMN] == "pixels: [−1, 1]: contradicted; constant: +1: holds"
    verdicts["usps.pm1"] = True
    row = claim_row("6", "the constant hurts", "Sec. 5.3", evaluate, ["usps"], load, set(), readings)
    assert row["verdict"] == "holds" and row[READINGS_COLUMN].startswith("same (")


def test_reading_runs_map_a_base_run_to_its_variants() -> None:
    runs = reading_runs("lkm.papers.prls")
    assert ("usps-kernel-constant: (x·y/256 + 1)³", "prls_usps.inhomogeneous") in runs["prls_usps"]


# -- the committed snapshot --------------------------------------------------------------
def _rebuilt(tmp_path: Path, names: list[str]) -> Path:
    """Copies of snapshot run folders with their tables rebuilt from the records (no fitting)."""
    from lkm.engine.store import RunStore
    from lkm.report import build_report
    from lkm.spec import load_spec

    results = tmp_path / "results"
    for name in names:
        shutil.copytree(SNAPSHOT / name, results / name)
        build_report(RunStore(results / name), load_spec(results / name / "spec.yaml"), figures=False)
    return results


@pytest.mark.skipif(not (SNAPSHOT / "cevikalp_usps.psd_drop").is_dir(), reason="the readings are not in the snapshot yet")
def test_no_cevikalp_cause_in_the_snapshot_is_contradicted_by_its_own_experiment(tmp_path: Path) -> None:
    module = PAPERS["cevikalp"]
    names = [e.name for e in module.SPECS if (SNAPSHOT / e.name).is_dir()]
    results = _rebuilt(tmp_path, names)
    from lkm.reproduction.site.views import _paper_view

    view = _paper_view(results, "cevikalp", module, smoke=False)
    contradicted = [m for m in view.missing if "contradicted" in m]
    assert contradicted == []
    flagged = [f for run in view.runs for t in run.tables for parts in t.details for f in parts]
    psd = [f for f in flagged if f.difference and any(e.choice == "non-psd-repair" for e in f.difference.evidence)]
    assert {f.row[1] for f in psd} >= {"NHKNN-TD", "NLDCV-TD"}, "the TD rows are flagged and name the PSD experiment"



def test_a_reading_variant_is_run_by_its_dotted_name_from_any_folder() -> None:
    from lkm.cli.running import spec_path
    from lkm.papers import packaged_specs

    assert spec_path(Path("cevikalp_usps.q_half")) == packaged_specs()["cevikalp_usps.q_half"]
    with pytest.raises(LkmError, match=r"did you mean 'cevikalp_usps.q_half'"):
        spec_path(Path("cevikalp_usps.q_halff"))
