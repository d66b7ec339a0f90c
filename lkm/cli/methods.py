"""`lkm methods` and `lkm bench`: the estimators, and their speed against reference libraries."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from lkm.cli.app import (
    DataDirOpt,
    _data_dir,
    _fail,
    app,
    console,
    print_rows,
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
    print_rows(None, columns, rows, wrap={"parameters (default)", "what it is"}, sep="\t")
    print(note, file=console.file)


@app.command()
def bench(
    data_dir: DataDirOpt = None,
    repeats: Annotated[int, typer.Option(min=1, help="Timing repeats; the best of them is reported.")] = 3,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write the results as JSON here.")] = None,
    tangent: Annotated[bool, typer.Option(
        "--tangent/--no-tangent",
        help="Include the tangent-distance 1-NN on the full USPS test set (about two minutes, "
        "timed once, absolute target 300 s); --no-tangent skips it.",
    )] = True,
) -> None:
    """Speed ratios against reference libraries, measured in the same run: five
    comparisons on one spambase fold (and breast cancer), HKNN against k-NN on USPS, and
    the tangent-distance 1-NN on USPS (an absolute target; skip it with --no-tangent).

    Ratios (ours / reference) carry across machines; seconds do not.
    """
    from lkm.bench import format_bench, run_bench

    try:
        _data_dir(data_dir)
        results = run_bench(data_dir=os.environ.get("LKM_DATA_DIR"), repeats=repeats, tangent=tangent)
    except LkmError as exc:
        raise _fail(exc) from None
    console.print(format_bench(results))
    if out:
        out.write_text(json.dumps(results, indent=2, default=str) + "\n")
