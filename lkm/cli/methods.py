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
    """List the estimators (spec key, class, paper) and their parameters with defaults."""
    from lkm.methods import METHODS

    t = Table(title="estimators (use the key in a spec's methods[].estimator)")
    t.add_column("key")
    t.add_column("class")
    t.add_column("parameters (default)")
    t.add_column("what it is")
    for key, cls in METHODS.items():
        params = ", ".join(f"{k}={v!r}" for k, v in cls().get_params().items())
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        t.add_row(key, cls.__name__, params, doc)
    console.print(t)


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
