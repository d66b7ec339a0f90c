"""The claims' verdict words (lkm.reproduction.claims): holds, contradicted, equivalent
within a stated margin, inconclusive with what the test could detect at 80 % power; and
the claim counts of the README and the guide, generated from the records."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student

from lkm.numerics.stats import MARGIN_POINTS, Paired, paired_test
from lkm.reproduction import claims, docs
from lkm.reproduction.claims import (
    better_claim,
    comparable_claim,
    fragile_verdict,
    inconclusive,
    noninferior_claim,
    reading_verdict,
    smoke_labelled,
    verdict,
)
from lkm.reproduction.site.views import verdict_class

REPO = Path(__file__).resolve().parents[1]
INCONCLUSIVE = re.compile(r"^inconclusive \(could detect ≥ (?P<x>\d+\.\d\d) points at 80 % power(, median of \d+ tests)?\)$")


def around(mean: float, spread: float, n: int = 10, seed: int = 0) -> Paired:
    """a − b over ``n`` folds (accuracy fractions): ``mean`` plus centred noise of sd ``spread``."""
    noise = np.random.default_rng(seed).standard_normal(n)
    noise = (noise - noise.mean()) / noise.std(ddof=1)
    return paired_test(mean + spread * noise, np.zeros(n))


def test_a_claim_the_test_shows_holds_and_one_it_refutes_is_contradicted() -> None:
    assert better_claim({"x": around(0.05, 0.01), "y": around(0.04, 0.01)}, "A", "B", "A − B")[1] is True
    assert better_claim({"x": around(-0.05, 0.01)}, "A", "B", "A − B")[1] is False
    assert verdict(True) == "holds" and verdict(False) == "contradicted" and verdict(None) == "n/a"


def test_a_claimed_difference_inside_the_margin_on_most_sets_is_equivalent() -> None:
    # CI of ±0.2 points around +0.1: inside ±1 point, not significant — evidence against "A beats B"
    sets = {"x": around(0.001, 0.002), "y": around(0.0, 0.002, seed=1), "z": around(0.0, 0.05, seed=2)}
    measure, ok = better_claim(sets, "A", "B", "A − B")
    assert ok == f"equivalent (within ±{MARGIN_POINTS:g} points)" and "equivalent within ±1 points on 2" in measure
    assert better_claim(sets, "A", "B", "A − B", margin=0.0005)[1].startswith("inconclusive (")  # a stated margin wins
    assert verdict_class(ok) == ("equivalent", False)


def test_inconclusive_states_the_detectable_effect_of_the_test_used() -> None:
    r = around(0.01, 0.03)  # 10 folds, not significant
    measure, ok = better_claim({"x": r}, "A", "B", "A − B")
    m = INCONCLUSIVE.match(ok)
    assert m, ok
    se = 0.03 / math.sqrt(10)
    assert float(m["x"]) == pytest.approx(100 * (student.ppf(0.975, 9) + student.ppf(0.8, 9)) * se, abs=0.005)
    # Nadeau–Bengio corrected folds see less: the same differences with n_test / n_train = 1/9
    corrected = paired_test(0.01 + 0.03 * (lambda z: (z - z.mean()) / z.std(ddof=1))(
        np.random.default_rng(0).standard_normal(10)), np.zeros(10), test_train_ratio=1 / 9)
    assert float(INCONCLUSIVE.match(inconclusive([corrected]))["x"]) == pytest.approx(100 * corrected.detectable_effect(), abs=0.005)
    assert corrected.detectable_effect() == pytest.approx(r.detectable_effect() * math.sqrt(1 + 10 / 9))


def test_over_several_sets_the_detectable_effect_is_the_median_of_the_undecided_ones() -> None:
    sets = {"x": around(0.003, 0.02), "y": around(0.0, 0.03, seed=1), "z": around(0.0, 0.05, seed=2),
            "w": around(0.2, 0.01, seed=3)}  # w is significant: it decided, so it does not count
    xs = sorted(sets[k].detectable_effect() for k in ("x", "y", "z"))
    ok = inconclusive(sets)
    assert ok.endswith(", median of 3 tests)") and float(INCONCLUSIVE.match(ok)["x"]) == pytest.approx(100 * xs[1], abs=0.005)


def test_comparable_and_noninferior_claims_are_inconclusive_with_a_number_when_undecided() -> None:
    wide = {"x": around(0.0, 0.05), "y": around(0.01, 0.05, seed=1)}
    assert INCONCLUSIVE.match(comparable_claim(wide, "A", "B", "A − B", 0.02)[1])
    assert INCONCLUSIVE.match(noninferior_claim(wide, "A", "B", "A − B", 0.01)[1])
    assert comparable_claim({"x": around(0.0, 0.002)}, "A", "B", "A − B", 0.02)[1] is True
    assert noninferior_claim({"x": around(-0.10, 0.01)}, "A", "B", "A − B", 0.01)[1] is False


def test_a_detectable_effect_that_moves_is_not_a_changed_verdict() -> None:
    a, b = "inconclusive (could detect ≥ 2.10 points at 80 % power)", "inconclusive (could detect ≥ 2.40 points at 80 % power)"
    assert fragile_verdict(a, b, True) == (a, f"same ({b})")
    cell, perturbed = fragile_verdict(True, b, True)
    assert cell == f"fragile (holds / {b} under {claims.PERTURBATION_WORDS})" and verdict_class(cell)[0] == "fragile"
    assert reading_verdict(a, a, [("other", b)])[0] == a
    cell, _ = reading_verdict("contradicted", False, [("other", "equivalent (within ±1 points)")])
    assert cell == "reading-dependent (stated reading: contradicted; other: equivalent (within ±1 points))"


def test_smoke_runs_label_every_new_verdict_word() -> None:
    table = pd.DataFrame({"#": ["1", "2", "3"], "verdict": ["contradicted", "equivalent (within ±1 points)",
                                                            "inconclusive (could detect ≥ 3.00 points at 80 % power)"]})
    for cell, word in zip(smoke_labelled(table)["verdict"], ("contradicted", "equivalent", "inconclusive"), strict=True):
        assert cell.startswith("smoke: not evidence (") and verdict_class(cell) == (word, True)


def test_claim_counts_are_counted_from_each_papers_claims_table(tmp_path: Path) -> None:
    def paper(*verdicts: str) -> SimpleNamespace:
        return SimpleNamespace(SPECS=[], evaluate_claims=lambda root: pd.DataFrame({"verdict": list(verdicts)}))

    snap = docs.Snapshot(tmp_path, {"p": paper("holds", "contradicted", "inconclusive (could detect ≥ 1.00 points)"),
                                    "q": paper("fragile (holds / contradicted under x)", "holds",
                                               "equivalent (within ±1 points)")})
    row = docs.claim_counts(snap).iloc[0].to_dict()
    assert row == {"claims": 6, "holds": 2, "partly": 0, "contradicted": 1, "equivalent": 1, "fragile": 1,
                   "reading-dependent": 0, "inconclusive": 1}
    assert "all/claims" in docs.doc_blocks({})


@pytest.mark.parametrize("rel", ["README.md", "docs/guide/reproductions.md"])
def test_the_prose_states_no_claim_count_of_its_own(rel: str) -> None:
    """The counts come from the generated ``all/claims`` block (checked against the records
    by tests/test_docs.py); prose outside a block that counts claims would drift."""
    text = (REPO / rel).read_text(encoding="utf-8")
    assert "<!-- lkm:begin all/claims -->" in text
    prose = docs.BLOCK_RE.sub("", text)
    counted = re.findall(r"\b\d+ claims\b|\b(?:holds|partly|contradicted|equivalent|fragile|reading-dependent|"
                         r"inconclusive|does not hold|not shown) \d+\b", prose)
    assert not counted, f"{rel} counts claims by hand: {counted}"


def test_two_methods_the_same_on_every_split_are_not_said_to_detect_zero() -> None:
    same = paired_test(np.full(5, 0.8), np.full(5, 0.8))
    assert inconclusive([same]) == "inconclusive (the same on every split)"
