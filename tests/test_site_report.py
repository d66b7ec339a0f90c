"""The report of every reproduction (lkm.reproduction.site; `lkm report --all`, `lkm reproduce
all`) built from the smoke runs of all five papers: every claim once on the first screen,
every image it references present, no link leaving the folder, HTML that parses with no
error under the HTML5 algorithm (html5lib, strict) and as XML (the page is polyglot
HTML5), tables read from their JSON with their CSV, LaTeX and Markdown linked, wide
tables leading with the columns compared with the paper, hostile text escaped, a folder
written by an older lkm named, and report.md with the same claims
(tests/test_site_browser.py shows the page in headless Chromium)."""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import xml.etree.ElementTree as ET
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest
from typer.testing import CliRunner

from lkm.cli import app
from lkm.errors import LkmError
from lkm.papers import CROSS_SPEC, PAPERS
from lkm.reproduction import site
from lkm.reproduction.paper import Difference, paper_differences
from lkm.reproduction.site import Table, build_site, verdict_class, with_differences
from lkm.reproduction.site.tables import FLAG_COLUMN
from lkm.spec import load_spec

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_all(smoke_results) -> Path:
    """The results folder holding the smoke runs of every paper."""
    for key in PAPERS:
        root = smoke_results(key)
    return root


@pytest.fixture(scope="module")
def built(smoke_all: Path, tmp_path_factory) -> Path:
    """The report of the smoke runs, in this module's own folder (the results folder is
    shared with other test modules and workers: read only here)."""
    out = tmp_path_factory.mktemp("site") / "report"
    files = build_site(smoke_all, PAPERS, CROSS_SPEC, out=out, smoke=True)
    assert files.page == out / "index.html" and files.markdown == out / "report.md"
    return out


def _document(out: Path) -> ET.Element:
    text = (out / "index.html").read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(text.split("\n", 1)[1])  # strict: any unclosed tag or bare & fails


def tiny_results(root: Path) -> Path:
    """A small results folder written without fitting: the claims table of one paper
    (lpl, through the one table writer) and a cross-paper summary (ranking table, Friedman
    test, figure)."""
    from PIL import Image

    from lkm.report.tables import write_table

    claims = root / "lpl_claims"
    claims.mkdir(parents=True)
    write_table(pd.DataFrame({"#": ["1a", "1b", "2"], "the paper's claim": ["LPL is **fast**", "PL and LPL agree", "SVM wins"],
                              "where": ["Sec. 9", "Sec. 9", "Sec. 9"], "verdict": ["holds", "contradicted", "inconclusive (could detect ≥ 2.31 points at 80 % power)"],
                              "effect": ["+1.0 pts", "-3.0 pts", "–"], "95% CI": ["[+0.1, +1.9]", "[-5.0, -1.0]", "–"],
                              "test": ["paired t", "paired t", "–"], "run": ["lpl_vs_svm", "lpl_vs_svm", "lpl_synthetic"]}),
                claims / "claims", "the claims of a tiny report")
    cross = root / "cross_paper_summary"
    cross.mkdir()
    write_table(pd.DataFrame({"method": ["LPL", "SVM"], "average rank": [1.25, 1.75]}), cross / "ranking",
                "average ranks over 4 datasets", ["ranks: **lower** is better"])
    (cross / "friedman.json").write_text(json.dumps({"chi2": 1.0, "p": 0.32, "n_datasets": 4}), encoding="utf-8")
    image = Image.new("RGB", (400, 200), "white")
    for x in range(40, 360):
        image.putpixel((x, 100), (200, 30, 30))
    image.save(cross / "critical_difference.png")
    return root


def _claims(root: Path, key: str) -> list[str]:
    df = pd.read_csv(root / f"{key}_claims-smoke" / "claims.csv", dtype=str, keep_default_na=False)
    return list(df["#"])


def test_the_page_parses_without_error_under_the_html5_algorithm(built: Path) -> None:
    """html5lib in strict mode raises on the first parse error of the WHATWG algorithm
    (a missing doctype, misnested tags, a bad entity, a block inside a table...)."""
    html5lib = pytest.importorskip("html5lib", reason="html5lib is a dev dependency: pip install -e '.[dev]'")
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    doc = parser.parse((built / "index.html").read_text(encoding="utf-8"))
    assert not parser.errors and doc.find("body/main") is not None
    with pytest.raises(html5lib.html5parser.ParseError):
        parser.parse("<!DOCTYPE html><html><head><title>t</title></head><body><table><div></div></table></body></html>")


def test_the_page_is_well_formed_and_its_ids_are_unique(built: Path) -> None:
    doc = _document(built)
    assert doc.tag == "html" and doc.get("lang") == "en"
    assert doc.find("head/meta").get("charset") == "utf-8"
    # two scripts shipped beside the page: report.js, adding to a page complete without it
    # (the filters and sort buttons are not in the static HTML), and plotly.min.js for the
    # interactive figures; inline code only draws those (inside their div.plot) and marks the
    # page once plotly.js has loaded (lkm.reproduction.site.interactive)
    scripts = list(doc.iter("script"))
    assert [s.get("src") for s in scripts if s.get("src")] == ["report.js", "plotly.min.js"]
    drawing = {id(s) for d in doc.iter("div") if d.get("class") == "plot" for s in d.iter("script")}
    inline = [(s.text or "").strip() for s in scripts if not s.get("src") and id(s) not in drawing]
    assert drawing and inline == ['if (window.Plotly) { document.documentElement.classList.add("plotly"); }']
    assert (built / "report.js").is_file()
    assert not [el.tag for el in doc.iter() if el.tag in ("select", "input", "button", "form")]
    ids = [el.get("id") for el in doc.iter() if el.get("id")]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


def test_every_claim_of_every_paper_appears_once_on_the_first_screen(built: Path, smoke_all: Path) -> None:
    doc = _document(built)
    table = next(t for t in doc.iter("table") if t.get("id") == "claims")
    hrefs = [a.get("href") for a in table.iter("a")]
    total = 0
    for key in PAPERS:
        numbers = _claims(smoke_all, key)
        assert numbers, key
        total += len(numbers)
        for n in numbers:
            anchor = f"#{key}-claim-{re.sub(r'[^A-Za-z0-9_-]+', '-', n)}"
            assert hrefs.count(anchor) == 1, (key, n)
    rows = [tr for tr in table.iter("tr") if "claim-row" in (tr.get("class") or "")]
    assert len(rows) == total
    assert [tb.get("data-paper") for tb in table.iter("tbody")] == list(PAPERS)
    # each row carries its paper and verdict class (what the filters read); every smoke
    # verdict is marked as such
    for row in rows:
        verdict = next(td for td in row if "verdict" in (td.get("class") or ""))
        assert "v-smoke" in verdict.get("class") and verdict.text.startswith("smoke: not evidence")
        assert row.get("data-paper") in PAPERS and verdict_class(verdict.text)[0] == row.get("data-verdict")
    text = ET.tostring(doc, encoding="unicode", method="text")
    for name in ("holds:", "partly:", "contradicted:", "equivalent:", "fragile:", "inconclusive:"):
        assert name in text


def test_every_link_stays_inside_the_folder_and_every_image_exists(built: Path) -> None:
    from PIL import Image

    doc = _document(built)
    ids = {el.get("id") for el in doc.iter() if el.get("id")}
    images = [img.get("src") for img in doc.iter("img")]
    links = [a.get("href") for a in doc.iter("a")]
    scripts = [s.get("src") for s in doc.iter("script") if s.get("src")]
    assert images and len(images) == len(list((built / "figures").rglob("*.png")))
    # every table of a run links its CSV, LaTeX and Markdown, copied into the folder
    files = [a.get("href") for p in doc.iter("p") if p.get("class") == "files" for a in p.iter("a")]
    assert files and {Path(f).suffix for f in files} == {".csv", ".tex", ".md"}
    assert len(files) == len(list((built / "tables").rglob("*.*")))
    for ref in images + links + scripts:
        assert ref, "empty link"
        if ref.startswith("#"):
            assert ref[1:] in ids, f"no element with id {ref}"
            continue
        parsed = urlparse(ref)
        assert not parsed.scheme and not parsed.netloc, ref
        assert not ref.startswith("/") and ".." not in Path(unquote(parsed.path)).parts, ref
        target = (built / unquote(parsed.path)).resolve()
        assert target.is_relative_to(built.resolve()) and target.is_file(), ref
    for ref in images:
        with Image.open(built / ref) as im:
            im.verify()


def test_paper_sections_hold_tables_figures_settings_and_differences(built: Path) -> None:
    html = (built / "index.html").read_text(encoding="utf-8")
    for key in PAPERS:
        assert f'id="paper-{key}"' in html
        for experiment in PAPERS[key].SPECS:
            name = load_spec(REPO / experiment.spec, smoke=True).name
            assert f'id="run-{site.slug(name)}"' in html, name
    assert "settings and data versions" in html and "sha256" in html
    # LRR's artificial sets are far from the paper's numbers: they differ, linking to the cause
    assert 'class="differs"' in html and 'href="#lrr-differ"' in html and 'id="lrr-differ"' in html
    assert "ours − paper" in html
    assert 'id="cross-paper"' in html and 'id="environment"' in html
    # the "where we differ" prose rendered from Markdown, its links kept as text only
    doc = _document(built)
    differ = next(el for el in doc.iter("h3") if el.get("id") == "lrr-differ")
    section = next(s for s in doc.iter("section") if s.get("id") == "paper-lrr")
    after = list(section)[list(section).index(differ) + 1]
    assert after.tag in ("p", "ul", "ol", "h4", "table") and not list(after.iter("a"))


def test_wide_tables_lead_with_the_columns_compared_with_the_paper(built: Path) -> None:
    """NPPS's Table 2 (17 columns and more): the first table shows the row's identity,
    ours beside the paper's number, their difference and the flag; the full table is
    folded below it."""
    doc = _document(built)
    run = next(s for s in doc.iter("section") if s.get("id") == "run-npps_table2-smoke")
    first = next(run.iter("table"))
    head = [ET.tostring(th, encoding="unicode", method="text") for th in first.find("thead").iter("th")]
    compared = ["error ALL %", "error ALL % [95% CI]", "error ALL %: ours − paper",
                "error SELECTED %", "error SELECTED % [95% CI]", "error SELECTED %: ours − paper"]
    assert head[:8] == ["dataset", "paper row", *compared] and head[8:] in ([], [FLAG_COLUMN]), head
    more = next(d for d in run.iter("details") if d.get("class") == "more")
    full = [ET.tostring(th, encoding="unicode", method="text") for th in more.iter("th")]
    assert len(full) > len(head) and "note" in full and "time ALL (s)" in full


def test_report_md_has_the_same_claims_and_images(built: Path, smoke_all: Path) -> None:
    md = (built / "report.md").read_text(encoding="utf-8")
    for key in PAPERS:
        for n in _claims(smoke_all, key):
            anchor = f"{key}-claim-{re.sub(r'[^A-Za-z0-9_-]+', '-', n)}"
            assert md.count(f"](#{anchor})") == 1, (key, n)
            assert f'<a id="{anchor}"></a>' in md
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert images
    for ref in images:
        assert not urlparse(ref).scheme and not ref.startswith("/") and ".." not in ref, ref
        assert (built / ref).is_file(), ref


def test_lkm_report_all_rebuilds_from_the_recorded_runs(smoke_all: Path) -> None:
    # the results folder is shared between workers: one report build at a time
    with open(smoke_all / ".report.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = CliRunner().invoke(app, ["report", "--all", "--smoke", "--results", str(smoke_all)],
                                 catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert str(smoke_all / "report-smoke" / "index.html") in res.output
    assert "nothing fitted" in res.output
    assert (smoke_all / "report-smoke" / "report.md").is_file()


def test_report_wants_a_run_dir_or_all() -> None:
    res = CliRunner().invoke(app, ["report"])
    assert res.exit_code == 2 and "--all" in res.output
    res = CliRunner().invoke(app, ["report", "some_dir", "--all"])
    assert res.exit_code == 2 and "not both" in res.output


def _copy_results(src: Path, dst: Path) -> None:
    """Copy a results folder that another worker may be writing (atomic renames): a
    file gone by the time it is copied is skipped; no lock files, no report."""
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        if rel.parts[0].startswith(("report", ".")) or path.name in (".lkm-lock",) or path.name.startswith(".lkm-tmp-"):
            continue
        if path.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copy2(path, dst / rel)
            except FileNotFoundError:
                pass


def test_reproduce_all_resumes_every_paper_then_writes_the_report(smoke_all: Path, data_dir: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    results = tmp_path / "results"
    _copy_results(smoke_all, results)
    # one paper rerun (nothing new to fit) keeps this test short; no cross-paper spec
    monkeypatch.setattr("lkm.papers.PAPERS", {"lrr": PAPERS["lrr"]})
    monkeypatch.setattr("lkm.papers.CROSS_SPEC", str(tmp_path / "no_such_cross_paper.yaml"))
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("LKM_DATA_DIR", str(data_dir))
    res = CliRunner().invoke(app, ["reproduce", "all", "--smoke", "--results", str(results), "--no-progress"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "nothing new to fit" in res.output and "no cross-paper ranking" in res.output
    index = results / "report-smoke" / "index.html"
    assert f"report: {index}" in res.output.replace("\n", "")
    assert 'id="paper-lrr"' in index.read_text(encoding="utf-8")


def test_reproduce_rejects_an_unknown_key() -> None:
    res = CliRunner().invoke(app, ["reproduce", "alll"])
    assert res.exit_code == 2 and "all" in res.output


def test_a_report_with_nothing_run_says_what_makes_each_part(tmp_path: Path) -> None:
    """A results folder with one paper's claims table and a cross-paper summary alone: every
    paper listed (the command that reproduces the others), the claims shown, the summary
    shown (ranking table, Friedman test, figure at its natural size), each table linking
    its CSV, LaTeX and Markdown."""
    tiny_results(tmp_path)
    cross = tmp_path / "cross_paper_summary"
    files = build_site(tmp_path, PAPERS, CROSS_SPEC)
    assert files.page == tmp_path / "report" / "index.html" and files.claims == 3
    doc = _document(tmp_path / "report")
    text = ET.tostring(doc, encoding="unicode", method="text")
    for key in PAPERS:
        assert f"lkm reproduce {key}" in text
    assert "average ranks over 4 datasets" in text and "chi2" in text
    assert [(img.get("src"), img.get("width"), img.get("height")) for img in doc.iter("img")] == [
        ("figures/cross_paper_summary/critical_difference.png", "400", "200")]
    assert (tmp_path / "report" / "figures" / "cross_paper_summary" / "critical_difference.png").is_file()
    assert (tmp_path / "report" / "tables" / "cross_paper_summary" / "ranking.tex").is_file()
    assert (tmp_path / "report" / "tables" / "lpl_claims" / "claims.csv").is_file()
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "<strong>fast</strong>" in html and "<strong>lower</strong>" in html  # inline Markdown rendered
    assert any("lkm reproduce npps" in m for m in files.missing)
    # a rebuild after the figure and a table are gone removes their copies
    (cross / "critical_difference.png").unlink()
    for p in cross.glob("ranking.*"):
        p.unlink()
    build_site(tmp_path, PAPERS, CROSS_SPEC)
    assert not (tmp_path / "report" / "figures").exists()
    assert not (tmp_path / "report" / "tables" / "cross_paper_summary").exists()


def test_hostile_text_is_escaped_and_no_link_leaves_the_folder(tmp_path: Path) -> None:
    """Cells, captions, notes and claim texts are text: markup in them is shown, not run;
    Markdown links and images are kept as their text."""
    html5lib = pytest.importorskip("html5lib", reason="html5lib is a dev dependency: pip install -e '.[dev]'")
    from lkm.report.tables import write_table

    tiny_results(tmp_path)
    hostile = '<script>alert(1)</script> & "x" <img src=x onerror=alert(2)>'
    write_table(pd.DataFrame({"method": [hostile, "[click](https://evil.example/)"], "average rank": ["1", "2"]}),
                tmp_path / "cross_paper_summary" / "ranking",
                f"ranks {hostile} [see](javascript:alert(3)) ![pic](https://evil.example/x.png)",
                [f"note {hostile} <https://evil.example/auto>"])
    write_table(pd.DataFrame({"#": ["1"], "the paper's claim": [f"claim {hostile} [a](https://evil.example/)"],
                              "verdict": ["holds"]}), tmp_path / "lpl_claims" / "claims", hostile)
    build_site(tmp_path, PAPERS, CROSS_SPEC)
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    parser.parse(html)
    doc = _document(tmp_path / "report")
    assert [s.get("src") for s in doc.iter("script")] == ["report.js"]
    assert [img.get("src") for img in doc.iter("img")] == ["figures/cross_paper_summary/critical_difference.png"]
    assert not [a.get("href") for a in doc.iter("a") if not a.get("href", "").startswith(("#", "figures/", "tables/"))]
    assert "evil.example" not in "".join(el.get("href", "") + el.get("src", "") for el in doc.iter())
    assert "onerror" not in "".join(k for el in doc.iter() for k in el.attrib)
    text = ET.tostring(doc, encoding="unicode", method="text")
    assert "<script>alert(1)</script>" in text and "click" in text and "see" in text
    # the Markdown twins: shown as text by any viewer, run by none
    for md in [tmp_path / "report" / "report.md", tmp_path / "cross_paper_summary" / "ranking.md",
               tmp_path / "lpl_claims" / "claims.md"]:
        body = md.read_text(encoding="utf-8")
        assert "&lt;script>alert(1)&lt;/script>" in body and "&lt;img src=x" in body, md
        assert "<script" not in body and "<img" not in body, md


def test_a_folder_written_by_an_older_lkm_is_named_not_fatal(tmp_path: Path) -> None:
    """Tables with no .json (an older lkm wrote them): the report says which folder and
    the command that rewrites it, instead of failing."""
    tiny_results(tmp_path)
    for p in [*(tmp_path / "cross_paper_summary").glob("*.json"), tmp_path / "lpl_claims" / "claims.json"]:
        if p.name != "friedman.json":
            p.unlink()
    run = tmp_path / "lpl_vs_svm"  # a run folder whose tables an older lkm wrote
    (run / "tables").mkdir(parents=True)
    (run / "spec.yaml").write_text("name: lpl_vs_svm\n", encoding="utf-8")
    (run / "tables" / "summary.md").write_text("**summary**\n\n| a |\n|:--|\n| 1 |\n", encoding="utf-8")
    files = build_site(tmp_path, PAPERS, CROSS_SPEC)
    text = ET.tostring(_document(tmp_path / "report"), encoding="unicode", method="text")
    assert "tables written by an older lkm" in text and "lkm reproduce benchmark" in text
    assert f"lkm report {run}" in text
    assert any(m == f"lpl: lpl_vs_svm: tables written by an older lkm: run `lkm report {run}`" for m in files.missing)
    assert any("lpl_claims/claims: tables written by an older lkm" in m for m in files.missing)
    assert files.claims == 0 and "chi2" in text


def test_missing_or_corrupt_inputs_are_named_and_never_counted_as_agreement(tmp_path: Path) -> None:
    """Deleted tables, a deleted figure, a corrupt claims.json and a corrupt provenance.json:
    each named with its file in "Still missing", and the headline says some runs are not
    counted instead of reporting agreement it cannot see."""
    tiny_results(tmp_path)
    (tmp_path / "lpl_claims" / "claims.json").write_text("{not json", encoding="utf-8")
    run = tmp_path / "lpl_vs_svm"
    (run / "records").mkdir(parents=True)
    (run / "records" / "part-1.jsonl").write_text("{}\n", encoding="utf-8")
    (run / "spec.yaml").write_text("name: lpl_vs_svm\n", encoding="utf-8")
    (run / "provenance.json").write_text("{\"lkm_version\": ", encoding="utf-8")
    (run / "figures").mkdir()
    (run / "figures" / ".inputs.json").write_text(json.dumps({"best": {"digest": "x", "files": ["figures/best.png"]}}),
                                                  encoding="utf-8")
    files = build_site(tmp_path, PAPERS, CROSS_SPEC)
    missing = " | ".join(files.missing)
    assert f"no tables in {run / 'tables'}/" in missing
    assert "figure figures/best.png is gone" in missing
    assert f"{run / 'provenance.json'}: unreadable" in missing and "did not finish" not in missing
    assert "claims.json could not be read" in missing
    assert "not fully counted" in files.differing


def test_the_cross_paper_ranking_is_shown_when_written(benchmark_smoke: Path, tmp_path: Path) -> None:
    """The smoke cross-paper run (the session's `lkm run cross_paper --smoke`, copied:
    tests/conftest.benchmark_smoke) and lkm.report.ranking's ranking: the report's
    cross-paper section shows the ranking table, the Friedman test and the
    critical-difference figure."""
    cross = pytest.importorskip("lkm.report.ranking")
    spec = load_spec(CROSS_SPEC, smoke=True)
    shutil.copytree(benchmark_smoke, tmp_path / spec.name)
    cross.write_cross_paper(tmp_path, True)
    build_site(tmp_path, PAPERS, CROSS_SPEC, smoke=True)
    out = tmp_path / "report-smoke"
    doc = _document(out)
    section = next(s for s in doc.iter("section") if s.get("id") == "cross-paper")
    text = ET.tostring(section, encoding="unicode", method="text")
    assert "not run yet" not in text and "average rank" in text.lower() and "chi2" in text
    images = [img.get("src") for img in section.iter("img")]
    assert images and images[0].endswith("critical_difference.png") and (out / images[0]).is_file()
    assert "settings and data versions" in text


def test_without_a_cross_paper_summary_the_report_says_how_to_make_it(tmp_path: Path) -> None:
    build_site(tmp_path, PAPERS, CROSS_SPEC, smoke=True)
    md = (tmp_path / "report-smoke" / "report.md").read_text(encoding="utf-8")
    assert "lkm run cross_paper --smoke" in md


@pytest.mark.parametrize("cell, expected", [
    ("holds", ("holds", False)),
    ("contradicted", ("contradicted", False)),
    ("partly", ("partly", False)),
    ("equivalent (within ±1 points)", ("equivalent", False)),
    ("inconclusive (could detect ≥ 2.31 points at 80 % power, median of 9 tests)", ("inconclusive", False)),
    ("n/a", ("n/a", False)),
    ("not run: needs lkm[fast]", ("n/a", False)),
    ("fragile (holds / inconclusive (could detect ≥ 1.00 points at 80 % power) under permuted training rows, "
     "2 BLAS threads)", ("fragile", False)),
    ("reading-dependent (stated reading: contradicted; x: equivalent (within ±1 points))", ("reading-dependent", False)),
    ("smoke: not evidence (contradicted)", ("contradicted", True)),
    ("smoke: not evidence (inconclusive (could detect ≥ 3.90 points at 80 % power))", ("inconclusive", True)),
    ("smoke: not evidence (fragile (contradicted / inconclusive (could detect ≥ 1 points) under x))", ("fragile", True)),
    ("same (partly)", ("partly", False)),
])
def test_verdict_classes(cell: str, expected: tuple[str, bool]) -> None:
    assert verdict_class(cell) == expected


def test_differences_are_added_and_every_compared_row_gets_a_verdict() -> None:
    t = Table("x", "cap", ["dataset", "test % (ours)", "test % (paper)", "fit s (ours)", "fit s (paper)"],
              [["a", "90.00 ± 1.0", "91.50", "1.0", "9.0"], ["b", "80.00", "85.00", "1", "1"], ["c", "70", "–", "1", "1"]])
    out = with_differences(t, "p-differ")
    assert out.columns == ["dataset", "test % (ours)", "test % (paper)", "test %: ours − paper",
                           "fit s (ours)", "fit s (paper)"]
    assert [r[3] for r in out.rows] == ["-1.50", "-5.00", "–"]
    assert out.flags == [f"test % untested (no interval): -1.50 points: {site.NO_CAUSE}",
                         f"test % untested (no interval): -5.00 points: {site.NO_CAUSE}", ""] and out.link == "p-differ"
    assert out.verdicts == ["untested (no interval)", "untested (no interval)", ""]
    metric = Table("y", "", ["metric", "paper", "ours"], [["accuracy", "95.0", "92.0 ± 0.1"], ["fit_seconds", "6", "0.5"]])
    out = with_differences(metric)
    assert [r[-1] for r in out.rows] == ["-3.00", "–"] and out.flags == [f"accuracy untested (no interval): -3.00 points: {site.NO_CAUSE}", ""]


def test_ours_paper_cells_and_paper_apostrophe_columns_are_compared_and_a_tuned_column_gets_no_verdict() -> None:
    cells = Table("t2", "each cell: ours (paper)", ["dataset", "patterns ALL", "error ALL %"],
                  [["pima", "614 (615)", "25.32 (29.90)"], ["xor", "600 (600)", "7.60 (8.00)"]])
    out = with_differences(cells)
    assert out.columns[-1] == "error ALL %: ours − paper" and [r[-1] for r in out.rows] == ["-4.58", "-0.40"]
    assert out.flags[0].startswith("error ALL % untested (no interval): -4.58 points")
    apostrophe = Table("t1", "", ["method", "paper's error %", "ours, paper's K: error % (errors)", "ours, tuned: error % (errors)"],
                       [["SVM", "6.32", "10.51 (211/2007)", "8.67 (174/2007)"]])
    out = with_differences(apostrophe)
    assert out.columns == ["method", "paper's error %", "ours, paper's K: error % (errors)", "ours, paper's K − paper",
                           "ours, tuned: error % (errors)", "ours, tuned − paper"]
    assert out.rows[0][3] == "+4.19" and out.rows[0][5] == "+2.35"
    assert out.flags[0] == f"error % (ours, paper's K) untested (no interval): +4.19 points: {site.NO_CAUSE}"


def test_a_row_that_differs_names_the_first_cause_that_matches_it() -> None:
    causes = [
        Difference("the hard vicinity", runs=("lrr_art*",), rows=(("method", ("*-hard",)),)),
        Difference("training fits", quantities=("training %",)),
        Difference("the settings", runs=("lrr_artificial", "lrr_uci")),
    ]
    t = Table("s", "", ["dataset", "method", "testing % (ours)", "testing % (ours) [95% CI]", "testing % (paper)",
                        "training % (ours)", "training % (paper)"],
              [["art-2", "LRR1-hard", "62.5", "[55.0, 70.0]", "86.25", "70", "71"],
               ["art-2", "RLS", "96", "[93.0, 99.0]", "81", "70", "99"],
               ["art-2", "LRR1", "96", "[94.0, 98.0]", "95", "70", "70.5"]])
    out = with_differences(t, "lrr-differ", site.cause_finder("lrr_artificial", causes))
    assert out.flags[0] == ("testing % differs: -23.75 points, paper outside our 95% CI [55.00, 70.00]; "
                            "training % untested (no interval): -1.00 points [1]")
    assert out.flags[1] == ("testing % differs: +15.00 points, paper outside our 95% CI [93.00, 99.00] [2]; "
                            "training % untested (no interval): -29.00 points [3]")
    assert out.causes == ["the hard vicinity", "the settings", "training fits"]
    assert out.flags[2].startswith("testing % consistent (our interval 4.0 points wide, margin ±1): +1.00 points; training %")
    elsewhere = with_differences(t, None, site.cause_finder("lrr_benchmark", causes))
    assert elsewhere.flags[0].startswith(f"testing % differs: -23.75 points, paper outside our 95% CI [55.00, 70.00]: {site.NO_CAUSE}")


def test_a_bad_differences_file_is_one_line_naming_the_file_and_key(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "mypaper"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    (package / "differences.yaml").write_text("- cause: data\n  dataset: sonar\n")
    with pytest.raises(LkmError, match=r"^mypaper/differences.yaml: \[0\]\.dataset: unknown key") as err:
        paper_differences("mypaper")
    assert "\n" not in str(err.value)
    (package / "differences.yaml").write_text("- runs: x\n")
    with pytest.raises(LkmError, match=r"\[0\]\.cause: a one-sentence cause is required"):
        paper_differences("mypaper")
    (package / "differences.yaml").write_text("- {cause: c, rows: {dataset: []}}\n")
    with pytest.raises(LkmError, match=r"\[0\]\.rows\.dataset: expected a name or a list"):
        paper_differences("mypaper")


@pytest.mark.parametrize("key", sorted(PAPERS))
def test_every_named_cause_refers_to_runs_datasets_and_methods_of_its_paper(key: str) -> None:
    """A typo in differences.yaml would silently match nothing: every pattern must match
    a spec name, dataset or method of the paper's experiments."""
    module = PAPERS[key]
    specs = [load_spec(REPO / e.spec) for e in module.SPECS]
    known = {"runs": {s.name for s in specs},
             "dataset": {d.id for s in specs for d in s.datasets},
             "method": {m.name for s in specs for m in s.methods}}
    for cause in paper_differences(module.__name__):
        checks = [("runs", cause.runs), *((c, v) for c, v in cause.rows if c in known)]
        for what, patterns in checks:
            for pattern in patterns:
                assert any(fnmatchcase(name, pattern) for name in known[what]), (key, what, pattern, cause.cause)
