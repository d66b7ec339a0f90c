"""`lkm docs snapshot|build|check|pack`: README's and docs/' generated tables, and the results pack as an archive."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lkm.cli.app import (
    console,
    docs_app,
    err_console,
    exit_error,
    text_line,
)
from lkm.errors import LkmError


@docs_app.command("snapshot")
def docs_snapshot(
    results: Annotated[Path, typer.Option("--results", help="Folder holding the run folders (`lkm reproduce` writes them).")] = Path("results"),
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Copy the runs the docs cite from RESULTS into docs/runs/ (spec, provenance, lock
    file, the plan's records gzipped) and the figures the docs show into docs/figures/;
    rewrite the results pack's manifest (docs/runs/PACK.json: version, sha256 of every
    file) and its pin (lkm/report/published.json)."""
    from lkm.papers import PAPERS
    from lkm.reproduction.docs import SNAPSHOT, snapshot

    report = snapshot(PAPERS, results, root)
    for name, n in report.runs.items():
        console.print(text_line(("snapshot", "green"), f" {name}: {n} records"))
    for name in report.kept:
        err_console.print(text_line(("kept", "yellow"), f" {name}: not in {results}/, the committed snapshot stays"))
    for name in report.absent:
        err_console.print(text_line(("absent", "yellow"), f" {name}: neither in {results}/ nor in {SNAPSHOT}/ (run its reproduction)"))
    for name in report.removed:
        console.print(f"removed {name}: no longer cited", highlight=False)
    for fig in report.missing_figures:
        err_console.print(text_line(("missing figure", "yellow"), f" {fig}: not in the run folder's figures/"))
    console.print(f"{len(report.figures)} figures copied; {root / SNAPSHOT}/ is {report.bytes / 1e6:.2f} MB, "
                  f"results pack version {report.pack_version or '-'} (PACK.json, pinned in lkm/report/published.json)",
                  highlight=False)


@docs_app.command("build")
def docs_build(
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Rewrite every generated table (`<!-- lkm:begin ID -->` blocks) of README.md and
    docs/reproductions/ from docs/runs/."""
    from lkm.papers import PAPERS
    from lkm.reproduction.docs import build

    try:
        changed = build(PAPERS, root)
    except LkmError as exc:
        raise exit_error(exc, 1) from None
    console.print(f"rewrote {', '.join(changed)}" if changed else "every generated table is current", highlight=False)


@docs_app.command("check")
def docs_check(
    root: Annotated[Path, typer.Option("--root", help="Repository root (where README.md and docs/ are).")] = Path("."),
) -> None:
    """Exit 1 listing every generated table that differs from what docs/runs/ gives (and
    every missing figure); `lkm docs build` rewrites them."""
    from lkm.papers import PAPERS
    from lkm.reproduction.docs import check

    problems = check(PAPERS, root)
    for p in problems:
        err_console.print(p, highlight=False, markup=False, soft_wrap=True)
    if problems:
        err_console.print(f"{len(problems)} problem(s); `make docs-figures` (or `lkm docs build`) regenerates the tables",
                          highlight=False)
        raise typer.Exit(1)
    console.print("every generated table matches docs/runs/")


@docs_app.command("pack")
def docs_pack(
    archive: Annotated[Path, typer.Argument(help="The archive to write, e.g. lkm-results.tar.gz.", show_default=False)],
    root: Annotated[Path, typer.Option("--root", help="Repository root (where docs/runs/ is).")] = Path("."),
) -> None:
    """Write the results pack (docs/runs/, checked against its manifest) as one .tar.gz,
    byte-stable for the same pack, and print its sha256: publish it, and anyone opens its
    full report with `lkm report --all --results URL#sha256=HEX --out DIR`."""
    from lkm.report.pack import verify_pack, write_archive
    from lkm.reproduction.docs import SNAPSHOT

    try:
        pack = verify_pack(root / SNAPSHOT)
        sha = write_archive(pack, archive)
    except (LkmError, OSError) as exc:
        raise exit_error(exc if isinstance(exc, LkmError) else LkmError(f"{archive}: {exc}")) from None
    console.print(f"{archive}: results pack version {pack.version}, {len(pack.runs)} runs, "
                  f"{archive.stat().st_size / 1e6:.1f} MB, sha256 {sha}", highlight=False)
    console.print(f"open it with: lkm report --all --results <URL of {archive.name}>#sha256={sha} --out DIR",
                  highlight=False)
