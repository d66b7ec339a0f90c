"""`lkm datasets list|info|fetch|verify`."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from lkm.cli.app import (
    DataDirOpt,
    _data_dir,
    _fail,
    _line,
    _one_line,
    console,
    datasets_app,
    err_console,
)
from lkm.errors import LkmError


@datasets_app.command("list")
def datasets_list() -> None:
    """All registered datasets: name, source, size, and whether they need downloading."""
    from lkm.data import list_datasets

    t = Table(title="registered datasets (`lkm datasets info NAME` for details)")
    for col in ("name", "source", "rows", "features", "classes", "aliases"):
        t.add_column(col)
    for info in list_datasets():
        n_cls = len(info.class_counts) if info.class_counts else "–"
        t.add_row(info.name, info.source, str(info.n_samples or "–"), str(info.n_features or "–"),
                  str(n_cls), ", ".join(info.aliases))
    console.print(t)


@datasets_app.command("info")
def datasets_info(
    name: Annotated[str, typer.Argument(help="Dataset name or alias.", show_default=False)],
    data_dir: DataDirOpt = None,
) -> None:
    """Rows, features, class counts, files, source and citation of one dataset."""
    from lkm.data import dataset_info

    try:
        _data_dir(data_dir)
        info = dataset_info(name)
    except LkmError as exc:
        raise _fail(exc) from None
    console.print(_line((info.name, "bold"), f" ({info.source})" + (f", aliases: {', '.join(info.aliases)}" if info.aliases else "")))
    console.print(info.description, highlight=False)
    console.print(f"rows: {info.n_samples}   features: {info.n_features}")
    if info.class_counts:
        console.print("classes: " + ", ".join(f"{k}: {v}" for k, v in info.class_counts.items()), highlight=False)
    for f in info.files:
        console.print(f"file: {f.dir}/{f.name}  {f.size} B  sha256 {f.sha256}\n      from {f.url or f.origin}", highlight=False)
    for k, v in (info.meta or {}).items():
        console.print(f"{k}: {v}", highlight=False)
    console.print(f"citation: {info.citation}", highlight=False)


@datasets_app.command("fetch")
def datasets_fetch(
    names: Annotated[list[str], typer.Argument(help="Dataset names.", show_default=False)],
    data_dir: DataDirOpt = None,
) -> None:
    """Download (or find in the mirror) and verify the files of NAMES."""
    from lkm.data import fetch

    failed = 0
    _data_dir(data_dir)
    for name in names:
        try:
            paths = fetch(name, data_dir=os.environ.get("LKM_DATA_DIR"))
            for p in paths:
                console.print(_line(("ok", "green"), f" {name}: {p}"))
        except LkmError as exc:
            failed += 1
            err_console.print(_line(("error:", "bold red"), f" {_one_line(exc)}"), soft_wrap=True)
    if failed:
        raise typer.Exit(2)


@datasets_app.command("verify")
def datasets_verify(data_dir: DataDirOpt = None) -> None:
    """Check the sha256 of every registered file found in the mirror or the download cache."""
    from lkm.data import verify

    _data_dir(data_dir)
    results = verify(data_dir=os.environ.get("LKM_DATA_DIR"))
    t = Table(title="dataset files")
    for col in ("dataset", "file", "status", "path"):
        t.add_column(col)
    bad = 0
    for r in results:
        style = {"ok": "green", "mismatch": "bold red", "missing": "yellow"}.get(r.status, "")
        bad += r.status == "mismatch"
        t.add_row(r.dataset, r.file, Text(r.status, style=style), str(r.path or "–"))
    console.print(t)
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "missing", "mismatch")}
    console.print(f"{counts['ok']} ok, {counts['missing']} missing, {counts['mismatch']} checksum mismatches")
    if bad:
        raise typer.Exit(1)
    if not counts["ok"]:
        from lkm.data.fetch import cache_dir, resolve_data_dir

        where = " or ".join(str(p) for p in (resolve_data_dir(None), cache_dir()) if p is not None)
        raise _fail(LkmError(f"no registered dataset file found in {where}: nothing was verified "
                             "(set LKM_DATA_DIR or --data-dir to a mirror, or `lkm datasets fetch NAME`)"), 1)
