"""Issue 43, point 3: a cause shared by several rows of a report table is written once
under the table, numbered, and each row that differs links to it (HTML and Markdown); no
caption says ``None``."""

from __future__ import annotations

import re
from collections import Counter

from lkm.report.formatting import ci_column
from lkm.reproduction.paper import Difference
from lkm.reproduction.site import cause_finder, with_differences
from lkm.reproduction.site.markdown import table_md
from lkm.reproduction.site.tables import NO_CAUSE, Table
from lkm.spec.protocols import HoldoutProtocol

GENERATOR = "Another draw of another generator: the paper only draws these sets, so ours come from lkm's generator."
ONE_SPLIT = "One hold-out split in the paper against our mean over 5 random 80/20 splits."


def _table() -> Table:
    """Four rows that differ from the paper (three by the same cause, one by another) and
    one that does not, as in NPPS's Table 2."""
    causes = [Difference(GENERATOR, rows=(("dataset", ("xor", "sine", "checker")),)),
              Difference(ONE_SPLIT, rows=(("dataset", ("pima",)),))]
    t = Table("npps_table2", "each cell: ours (paper)", ["dataset", "error ALL %", ci_column("error ALL %")],
              [["xor", "7.60 (9.67)", "[5.72, 9.48]"], ["sine", "16.32 (13.33)", "[13.61, 19.03]"],
               ["checker", "2.96 (4.03)", "[2.11, 3.81]"], ["pima", "25.32 (29.90)", "[22.01, 28.64]"],
               ["wbc", "3.80 (3.90)", "[1.78, 5.81]"]], source="npps_table2/npps_table2")
    return with_differences(t, "npps-differ", cause_finder("npps_table2", causes))


def test_each_distinct_cause_is_numbered_once_and_the_rows_carry_its_marker() -> None:
    out = _table()
    assert out.causes == [GENERATOR, ONE_SPLIT]
    assert [f.endswith(" [1]") for f in out.flags[:3]] == [True] * 3 and out.flags[3].endswith(" [2]")
    assert out.flags[4].startswith("error ALL % consistent") and not re.search(r"\[\d+\]", out.flags[4])
    assert not any(GENERATOR in f or ONE_SPLIT in f for f in out.flags)


def test_markdown_writes_each_cause_once_and_every_row_link_reaches_its_anchor() -> None:
    text = str(table_md(_table()))
    assert text.count(GENERATOR) == 1 and text.count(ONE_SPLIT) == 1
    links = re.findall(r"\]\(#([^)]+)\)", text)
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    assert Counter(links)["why-npps_table2-npps_table2-1"] == 3 and Counter(links)["why-npps_table2-npps_table2-2"] == 1
    assert set(links) - {"npps-differ"} <= anchors and len(anchors) == 2


def test_html_writes_each_cause_once_and_every_row_link_reaches_its_anchor() -> None:
    from lkm.reproduction.site.html import _environment

    page = str(_environment().get_template("macros.html.j2").module.table(_table()))
    assert page.count("Another draw of another generator") == 1 and page.count("One hold-out split") == 1
    links = re.findall(r'href="#([^"]+)"', page)
    ids = set(re.findall(r' id="([^"]+)"', page))
    assert Counter(links)["why-npps_table2-npps_table2-1"] == 3 and Counter(links)["why-npps_table2-npps_table2-2"] == 1
    assert set(links) <= ids | {"npps-differ"}


def test_a_row_without_a_named_cause_says_so_in_place_and_gets_no_number() -> None:
    t = Table("x", "", ["dataset", "test % (ours)", "test % (paper)"], [["a", "90.00", "91.50"], ["b", "80", "85"]])
    out = with_differences(t, "p-differ")
    assert out.causes == [] and all(f.endswith(f": {NO_CAUSE}") for f in out.flags)


def test_a_holdout_without_a_test_size_says_the_test_part_is_the_rest() -> None:
    text = HoldoutProtocol(train_size=0.8, repeats=5).describe()
    assert "None" not in text and "train 0.8, test the rest" in text
    assert "test 0.2" in HoldoutProtocol(train_size=0.8, test_size=0.2).describe()
