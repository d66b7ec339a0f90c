"""`lkm methods` and `lkm bench`: the estimators, and their speed against reference libraries."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from lkm.cli.app import (
    DataDirOpt,
    _data_dir,
    _fail,
    app,
    console,
)
from lkm.errors import LkmError


@app.command()
def methods() -> None:
    """List the estimators (spec key, kind, class, parameters with defaults, what it is),
    the NPPS sampler included. A spec may also name any scikit-learn classifier by dotted
    path (e.g. sklearn.neighbors.KNeighborsClassifier).

    A table on a terminal wide enough for it; otherwise (piped, narrow) one tab-separated
    line per estimator, never truncated.
    """
    from lkm.methods import describe_estimators

    columns = ["key", "kind", "class", "parameters (default)", "what it is"]
    rows = [[r["key"], r["kind"], r["class"], r["parameters"], r["doc"]] for r in describe_estimators()]
    note = ("methods[].estimator takes a key above or any scikit-learn classifier's dotted path, "
            "e.g. sklearn.neighbors.KNeighborsClassifier")
    if not _print_table(columns, rows, identifiers=3):
        for row in [columns, *rows]:  # not through Rich, which would expand the tabs
            print("\t".join(row), file=console.file)
    print(note, file=console.file)


def _print_table(columns: list[str], rows: list[list[str]], identifiers: int) -> bool:
    """Print a Rich table if stdout is a terminal wide enough for the first
    ``identifiers`` columns unwrapped (names stay copyable) and the rest wrapped at word
    boundaries; return False (nothing printed) otherwise."""
    if not console.is_terminal:
        return False
    t = Table()
    for i, name in enumerate(columns):
        if i < identifiers:
            t.add_column(name, no_wrap=True)
        else:
            t.add_column(name, overflow="fold")
    for row in rows:
        t.add_row(*row)
    # each column costs its content plus 3 (padding and rule), plus the closing rule;
    # wrapped columns need at least their longest word
    widths = [
        max(len(text) if i < identifiers else max(map(len, text.split()), default=0)
            for text in [columns[i], *(row[i] for row in rows)])
        for i in range(len(columns))
    ]
    if sum(w + 3 for w in widths) + 1 > console.width:
        return False
    console.print(t)
    return True


@app.command()
def bench(
    data_dir: DataDirOpt = None,
    repeats: Annotated[int, typer.Option(min=1, help="Timing repeats; the best of them is reported.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the results as JSON here.")] = None,
) -> None:
    """Speed ratios against reference libraries, measured in the same run on one spambase fold.

    Ratios (ours / reference) carry across machines; seconds do not.
    """
    from lkm.bench import format_bench, run_bench

    try:
        _data_dir(data_dir)
        results = run_bench(data_dir=os.environ.get("LKM_DATA_DIR"), repeats=repeats)
    except LkmError as exc:
        raise _fail(exc) from None
    console.print(format_bench(results))
    if out:
        out.write_text(json.dumps(results, indent=2, default=str) + "\n")
