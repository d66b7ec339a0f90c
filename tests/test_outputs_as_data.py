"""Outputs as data (issue 28, point 4): results.csv and results.parquet hold JSON in every
structured column; every table's CSV twin holds mean and std (and interval bounds) as
numeric columns of their own, never a "96.62 ± 2.36" cell, while the .md and .json keep
the cells as displayed."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from processes import CEILING
from tiny_runs import TINY, run_tiny

from lkm.engine.store import json_default
from lkm.report.formatting import EDGE_MARK
from lkm.report.tables import csv_frame, write_table

REPO = Path(__file__).resolve().parents[1]

#: The tiny run with a paper value and every table, no figures.
TINY_TABLES = {**TINY, "paper": {"reference": "R", "results": [{"dataset": "moons", "method": "PL", "value": 0.9}]},
               "outputs": {"tables": ["summary", "metrics", "sweep", "timing"], "figures": []}}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """A tiny real run (two datasets, two methods, three folds) and its records."""
    root = tmp_path_factory.mktemp("tiny")
    _, plan, store, _ = run_tiny(root, TINY_TABLES)
    records = store.records_frame(plan.task_ids)
    return root, records.drop(columns=[c for c in ("traceback", "errors") if c in records.columns])


def _as_json(value) -> str:
    return json.dumps(value, sort_keys=True, default=json_default)


def _structured_columns(records: pd.DataFrame) -> list[str]:
    return [c for c in records.columns if records[c].map(lambda v: isinstance(v, (dict, list, tuple))).any()]


# -- results.csv / results.parquet --------------------------------------------------------
def test_every_structured_cell_of_the_results_is_json_equal_to_the_record(tiny_run) -> None:
    root, records = tiny_run
    structured = _structured_columns(records)
    assert {"params", "info"} <= set(structured), structured
    for name, read in (("results.csv", pd.read_csv), ("results.parquet", pd.read_parquet)):
        table = read(root / name)
        assert len(table) == len(records), name
        by_task = table.set_index("task_id")
        for col in structured:
            for task, value in zip(records["task_id"], records[col], strict=True):
                cell = by_task.at[task, col]
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    assert cell is None or (isinstance(cell, float) and math.isnan(cell)), (name, col, cell)
                    continue
                assert isinstance(cell, str), (name, col, cell)
                assert _as_json(json.loads(cell)) == _as_json(value), (name, col, task)


def test_results_csv_has_no_python_repr(tiny_run) -> None:
    text = (tiny_run[0] / "results.csv").read_text()
    assert "{'" not in text and "': " not in text  # a dict's repr quotes keys with '


# -- the CSV twin of every table ----------------------------------------------------------
_PM = re.compile(r"\d\s*±\s*\d")


def _check_csv_is_data(csv: Path) -> pd.DataFrame:
    text = csv.read_text(encoding="utf-8")
    assert not _PM.search(text), csv  # "mean ± std" is split into two columns; "within ±1 point" is words
    table = pd.read_csv(csv)
    for col in table.columns:
        if f"{col} std" in table.columns:
            assert pd.api.types.is_float_dtype(table[col]), (csv, col, table[col].tolist())
            assert pd.api.types.is_float_dtype(table[f"{col} std"]), (csv, col)
    return table


def test_every_table_csv_of_a_run_has_numeric_mean_and_std(tiny_run) -> None:
    root = tiny_run[0]
    csvs = sorted((root / "tables").glob("*.csv"))
    assert {c.stem for c in csvs} >= {"summary", "metrics", "sweep", "timing", "paper"}
    for csv in csvs:
        _check_csv_is_data(csv)
    summary = pd.read_csv(root / "tables" / "summary.csv")
    shown = json.loads((root / "tables" / "summary.json").read_text())
    ours = shown["columns"].index("accuracy % (ours)")
    for i, cells in enumerate(shown["rows"]):
        mean, std = (float(x) for x in cells[ours].split(" ± "))  # the .json keeps the cell as displayed
        assert summary.at[i, "accuracy % (ours)"] == pytest.approx(mean)
        assert summary.at[i, "accuracy % (ours) std"] == pytest.approx(std)
    assert list(summary.columns[:5]) == ["dataset", "method", "selected", "accuracy % (ours)", "accuracy % (ours) std"]
    assert pd.api.types.is_float_dtype(summary["accuracy % (ours) [95% CI] low"])
    assert pd.api.types.is_float_dtype(summary["accuracy % (paper)"])  # "–" where the paper has none: empty
    assert "±" in (root / "tables" / "summary.md").read_text()  # the displayed tables keep the cell


def test_marks_and_text_cells_get_columns_of_their_own(tmp_path: Path) -> None:
    df = pd.DataFrame({
        "dataset": ["a", "b", "c", "d"],
        "accuracy % (ours)": ["96.62 ± 2.36", f"80.00 ± 1.00 {EDGE_MARK}", "failed (2 of 2 fits): boom", "–"],
        "ours − paper": ["+1.20", "−0.50", "–", "–"],
        "splits": [10, 10, 0, 0],
    })
    write_table(df, tmp_path / "t", "caption")
    table = _check_csv_is_data(tmp_path / "t.csv")
    assert table["accuracy % (ours)"].tolist()[:2] == [96.62, 80.0]
    assert table["accuracy % (ours) std"].tolist()[:2] == [2.36, 1.0]
    assert table["accuracy % (ours) mark"].fillna("").tolist() == ["", EDGE_MARK, "", ""]
    assert table["accuracy % (ours) note"].fillna("").tolist() == ["", "", "failed (2 of 2 fits): boom", ""]
    assert table["ours − paper"].tolist()[:2] == [1.2, -0.5] and table["ours − paper"].isna().tolist()[2:] == [True] * 2
    shown = json.loads((tmp_path / "t.json").read_text())
    assert shown["rows"][1][1] == f"80.00 ± 1.00 {EDGE_MARK}" and shown["columns"] == list(df.columns)


def _md_tables(path: Path) -> pd.DataFrame:
    lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.startswith("|")]
    rows = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", x)[1:-1]] for x in lines]
    return pd.DataFrame(rows[2:], columns=rows[0])


def test_the_golden_smoke_tables_become_numeric_columns(tmp_path: Path) -> None:
    """Every golden smoke table (the cells as displayed) written through the table writer."""
    golden = sorted((REPO / "tests" / "golden").rglob("*.md"))
    assert golden
    split = 0
    for i, md in enumerate(golden):
        df = _md_tables(md)
        write_table(df, tmp_path / f"t{i}", md.stem)
        table = _check_csv_is_data(tmp_path / f"t{i}.csv")
        split += sum(f"{c} std" in table.columns for c in table.columns)
        for col in df.columns:
            if df[col].map(lambda v: bool(_PM.search(v))).any():
                assert f"{col} std" in table.columns, (md, col)
    assert split > 20


def test_csv_frame_keeps_other_columns() -> None:
    df = pd.DataFrame({"#": ["1", "2"], "claim": ["a ± b", "x"], "k": [1, 2], "x": [0.5, None]})
    out = csv_frame(df)
    assert out.columns.tolist() == ["#", "claim", "k", "x"]
    assert out["claim"].tolist() == ["a ± b", "x"]  # not numbers around ±: text, kept


# -- LaTeX that compiles ------------------------------------------------------------------
def _non_ascii_of_the_code_base() -> str:
    """Every non-ASCII character in lkm's sources and specs (what its tables may quote)."""
    chars: set[str] = set()
    for pattern in ("lkm/**/*.py", "lkm/**/*.yaml", "lkm/**/*.json", "configs/**/*.yaml"):
        for path in REPO.glob(pattern):
            chars |= {c for c in path.read_text(encoding="utf-8") if not c.isascii()}
    return "".join(sorted(chars))


def test_latex_escape_turns_every_character_of_the_code_base_into_ascii() -> None:
    from lkm.report.tables import latex_escape

    text = _non_ascii_of_the_code_base()
    assert {"Δ", "γ", "π", "⁺", "⁶", "±", "†"} <= set(text)
    escaped = latex_escape(text)
    assert escaped.isascii(), {c for c in escaped if not c.isascii()}
    for char, tex in (("Δ", r"\ensuremath{\Delta}"), ("γ", r"\ensuremath{\gamma}"), ("⁶", r"\ensuremath{^6}"),
                      ("⁺", r"\ensuremath{^+}"), ("š", r"\v{s}"), ("∅", r"\ensuremath{\emptyset}")):
        assert latex_escape(char) == tex, char
    assert latex_escape("x⁻¹ a₁₂") == r"x\ensuremath{^-}\ensuremath{^1} a\ensuremath{_1}\ensuremath{_2}"  # all math scripts


def test_latex_escape_of_arbitrary_unicode_is_pure_ascii() -> None:
    from lkm.report.tables import latex_escape

    rng = __import__("random").Random(28)
    points = [rng.randrange(0x80, 0x110000) for _ in range(5000)] + list(range(0x80, 0x3000))
    text = "".join(chr(p) for p in points if not 0xD800 <= p < 0xE000)
    assert latex_escape(text).isascii()


_PREAMBLE = ("\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage[T1]{fontenc}\n"
             "\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\usepackage{array}\n\\begin{document}\n")


def _compile(folder: Path, tex_files: list[Path]) -> str:
    """``\\input`` every file into one minimal document, compile it; the log."""
    import subprocess

    doc = folder / "all.tex"
    doc.write_text(_PREAMBLE + "".join(f"\\input{{{p.as_posix()}}}\n\\clearpage\n" for p in tex_files)
                   + "\\end{document}\n", encoding="ascii")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=folder,
                         capture_output=True, text=True, errors="replace", timeout=CEILING)
    log = (folder / "all.log").read_text(errors="replace")
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert res.returncode == 0 and not errors, (errors, res.stdout[-3000:])
    return log


def _overfull(log: str, tolerance_pt: float = 3.0) -> list[str]:
    return [m.group(0) for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)[^\n]*", log)
            if float(m.group(1)) > tolerance_pt]


@pytest.fixture
def pdflatex() -> str:
    import shutil

    path = shutil.which("pdflatex")
    if path is None:
        pytest.skip("pdflatex not installed")
    return path


def test_tables_of_every_character_the_code_base_writes_compile(pdflatex, tmp_path: Path) -> None:
    text = _non_ascii_of_the_code_base()
    df = pd.DataFrame({"chars": [text[i:i + 12] for i in range(0, len(text), 12)]})
    df["accuracy % (ours)"] = "96.62 ± 2.36 " + EDGE_MARK
    write_table(df, tmp_path / "chars", f"every character: {' '.join(text)}", notes=[" ".join(text)])
    wide = pd.DataFrame({f"column {i} ΔγΠ": [f"a long cell number {i} of a wide table ⁺⁶"] for i in range(12)})
    write_table(wide, tmp_path / "wide", "a wide table")
    narrow = pd.DataFrame({"a": ["x"], "b": [1]})
    write_table(narrow, tmp_path / "narrow", "a narrow table")
    assert "resizebox" in (tmp_path / "wide.tex").read_text()
    assert "resizebox" not in (tmp_path / "narrow.tex").read_text()
    log = _compile(tmp_path, [tmp_path / "chars.tex", tmp_path / "wide.tex", tmp_path / "narrow.tex"])
    assert _overfull(log) == []


def test_long_text_columns_wrap_instead_of_shrinking_the_table(pdflatex, tmp_path: Path) -> None:
    """A claims-like table (four columns of 300-character cells) wraps its text in
    ragged-right paragraph columns sized to the line: not resized, nothing overfull; an
    18-column numeric table still fits the line (smaller type, shrunk only as needed)."""
    text = "the paper claims that NPPS + SVM trains faster than SVM (0.24x on continuous-xor) "
    cell = (text * 4)[:300]
    claims = pd.DataFrame({c: [cell, cell[::-1]] for c in ("the paper's claim", "where", "our measure", "verdict")})
    write_table(claims, tmp_path / "claims", "claims")
    tex = (tmp_path / "claims.tex").read_text()
    assert "resizebox" not in tex
    assert tex.count("\\raggedright\\arraybackslash}p{") == 4
    numbers = pd.DataFrame({f"score {i}": [0.1234 * i, 1000.5 + i] for i in range(18)})
    write_table(numbers, tmp_path / "numbers", "eighteen numeric columns")
    assert "raggedright" not in (tmp_path / "numbers.tex").read_text()  # numbers stay right-aligned
    narrow = pd.DataFrame({"a": ["x"], "b": [1]})
    write_table(narrow, tmp_path / "narrow", "a narrow table")
    assert "p{" not in (tmp_path / "narrow.tex").read_text() and "small" not in (tmp_path / "narrow.tex").read_text()
    log = _compile(tmp_path, [tmp_path / "claims.tex", tmp_path / "numbers.tex", tmp_path / "narrow.tex"])
    assert _overfull(log) == []


@pytest.mark.parametrize("key", ["npps", "lrr"])
def test_every_tex_table_of_a_smoke_reproduction_compiles(pdflatex, smoke_results, tmp_path: Path, key: str) -> None:
    """`lkm reproduce KEY --smoke` (two of the quickest papers): every .tex it wrote,
    pure ASCII, compiles with pdflatex, and no table runs off the page."""
    root = smoke_results(key)
    tex_files = sorted(p for p in root.glob(f"{key}_*/**/*.tex"))
    assert len(tex_files) >= 5, tex_files
    for p in tex_files:
        assert p.read_text(encoding="utf-8").isascii(), p
    log = _compile(tmp_path, tex_files)
    assert _overfull(log) == []


def test_every_csv_of_a_smoke_reproduction_is_data(smoke_results) -> None:
    for csv in sorted(smoke_results("npps").glob("npps_*/**/*.csv")):
        if csv.name != "results.csv":
            _check_csv_is_data(csv)


def test_the_characters_latex_escape_leaves_out_are_those_pdflatex_cannot_set(pdflatex) -> None:
    """lkm/report/latex_kernel.py is what scripts/latex_kernel_macros.py finds with this
    pdflatex: pylatexenc's encodings that need a package beyond the kernel."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "scripts/latex_kernel_macros.py", "--check"], cwd=REPO,
                         capture_output=True, text=True, timeout=CEILING)
    assert res.returncode == 0, res.stdout + res.stderr
