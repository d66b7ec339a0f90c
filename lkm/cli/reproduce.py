"""`lkm reproduce PAPER`: every experiment of a paper, then its claims table; `lkm reproduce
all`: every paper, the cross-paper comparison, then the report (results/report/)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from lkm.cli.app import (
    ClusterOpt,
    DataDirOpt,
    JobsOpt,
    MaxFitsOpt,
    ProgressOpt,
    SmokeOpt,
    app,
    console,
    err_console,
    exit_error,
    text_line,
    use_data_dir,
)
from lkm.cli.running import cluster_label, engine, print_notes, print_site, run_spec
from lkm.engine.workers import DEFAULT_JOBS
from lkm.errors import LkmError, did_you_mean


@app.command()
def reproduce(
    ctx: typer.Context,
    paper: Annotated[str, typer.Argument(help="Paper key: `lpl` (Tsuji, Kudo, Tanaka, Localized Projection Learning) `npps` (Shin, Cho, NPPS and kNN invariance), `lrr` (Li, Chen, Tang, local risk regularization), `cevikalp` (Cevikalp, Larlus, Douze, Jurie, local subspace classifiers) or `prls` (Yang, King, Lyu, partially penalized RLS); `benchmark`: the field's benchmark alone (every method on 26 data sets) and its ranking; or `all`: every paper, the benchmark and the report.", show_default=False)],
    results: Annotated[Path, typer.Option("--results", help="Folder holding one run folder per experiment.")] = Path("results"),
    jobs: JobsOpt = DEFAULT_JOBS,
    data_dir: DataDirOpt = None,
    smoke: SmokeOpt = False,
    progress: ProgressOpt = True,
    max_fits: MaxFitsOpt = None,
    cluster: ClusterOpt = None,
) -> None:
    """Run every experiment of a paper, then check the paper's claims from our numbers; `all`:
    every paper, then the cross-paper ranking, then the report.

    Each experiment is a spec shipped inside the paper's package (`lkm specs list`; run into
    `RESULTS/<spec name>/` under the current folder, resumable);
    the runs the claims read are rerun with permuted training rows and another BLAS thread
    count (`RESULTS/<spec name>-perturbed/`, only the settings the claims read), and a claim
    whose verdict changes is marked fragile; the claims table and the paper-vs-ours timing
    table go to `RESULTS/<paper>_claims/`.
    With everything recorded, a rerun only rebuilds tables and figures.

    `lkm reproduce all` does this for every paper in turn (lpl, npps, lrr, cevikalp, prls),
    then runs the cross_paper spec (every method on the shared datasets under one
    protocol) and writes its ranking, then writes the report: `RESULTS/report/index.html`
    (static, open it in a browser) and `RESULTS/report/report.md` — with `--smoke`,
    `RESULTS/report-smoke/`. A paper whose fits fail does not stop the others (exit 1 at
    the end). `lkm report --all` rebuilds the report alone from what is recorded.

    Examples: `lkm reproduce lpl` (= `make reproduce-lpl`), `lkm reproduce npps --smoke` (CI),
    `lkm reproduce lrr --cluster tcp://scheduler:8786` (every fit on a dask cluster),
    `lkm reproduce all --jobs 2` (= `make reproduce`), `lkm reproduce all --smoke`,
    `lkm reproduce benchmark --jobs 2` (= `make benchmark`; then `lkm compare` ranks a new method).
    """
    from lkm.papers import PAPERS

    try:
        use_data_dir(data_dir)
        if paper not in (ALL, BENCHMARK) and paper not in PAPERS:
            raise LkmError(f"unknown paper {paper!r}{did_you_mean(paper, [*PAPERS, BENCHMARK, ALL])}; "
                           f"known: {', '.join(PAPERS)}, {BENCHMARK}, or {ALL}")
        with engine(jobs, cluster, False, cluster_label(ctx)) if cluster else contextlib.nullcontext() as on_cluster:
            if paper == ALL:
                _reproduce_all(results, jobs, smoke, progress, max_fits, on_cluster)
            elif paper == BENCHMARK:
                _cross_paper(results, jobs, smoke, progress, max_fits, on_cluster)
                suffix = "-smoke" if smoke else ""
                console.print(f"ranking, pairwise tests and figures: {results}/cross_paper_summary{suffix}/")
            else:
                _reproduce(PAPERS[paper], results, jobs, smoke, progress, max_fits, on_cluster)
    except LkmError as exc:
        raise exit_error(exc, 1 if "fits failed" in str(exc) else 2) from None


#: `lkm reproduce all`: every paper, the cross-paper comparison, the report.
ALL = "all"
#: `lkm reproduce benchmark`: the benchmark spec (cross_paper) and its ranking alone.
BENCHMARK = "benchmark"


def _reproduce_all(results: Path, jobs: int, smoke: bool, progress: bool, max_fits, cluster) -> None:
    """Every paper of lkm.papers.PAPERS (a paper whose fits fail does not stop the others),
    the cross-paper spec and its ranking when they exist, then the report folder."""
    from lkm.papers import CROSS_SPEC, PAPERS
    from lkm.reproduction.site import build_site

    failed = []
    for key, module in PAPERS.items():
        console.print(text_line((f"== {key}", "bold"), f": {module.claims.TITLE}" if hasattr(module, "claims") else ""))
        try:
            _reproduce(module, results, jobs, smoke, progress, max_fits, cluster)
        except LkmError as exc:
            if "fits failed" not in str(exc):
                raise
            failed.append(key)
    errors = []
    if Path(CROSS_SPEC).is_file():
        console.print(text_line(("== cross-paper", "bold"), f": {CROSS_SPEC}"))
        try:
            _cross_paper(results, jobs, smoke, progress, max_fits, cluster)
        except LkmError as exc:  # the papers' report is still worth writing
            err_console.print(text_line(("error:", "bold red"), f" cross-paper: {exc}"), soft_wrap=True)
            errors.append(f"cross-paper: {exc}")
        except typer.Exit as exc:
            if exc.exit_code != 1:
                raise
            failed.append("cross-paper")
    else:
        err_console.print(text_line(("note:", "yellow"), f" {CROSS_SPEC} not found: no cross-paper ranking"))
    written = build_site(results, PAPERS, CROSS_SPEC, smoke=smoke)
    print_site(written)
    if errors:
        raise LkmError(errors[0])
    if failed:
        raise LkmError(f"some fits failed in: {', '.join(failed)} (see their records; the report shows what was recorded)")


def _cross_paper(results: Path, jobs: int, smoke: bool, progress: bool, max_fits, cluster) -> None:
    """The cross-paper spec's run, then its ranking (lkm.report.ranking)."""
    from lkm.papers import CROSS_SPEC
    from lkm.report.ranking import write_cross_paper
    from lkm.spec import load_spec

    spec = load_spec(CROSS_SPEC, smoke=smoke, max_fits=max_fits)
    print_notes(spec)
    failed = None
    try:
        run_spec(spec, CROSS_SPEC, results / spec.name, jobs, False, False, progress, cluster=cluster)
    except typer.Exit as exc:  # failed fits: rank what was recorded, then say so
        if exc.exit_code != 1:
            raise
        failed = exc
    write_cross_paper(results, smoke)
    if failed is not None:
        raise failed


def _reproduce(module, results: Path, jobs: int, smoke: bool, progress: bool, max_fits, cluster) -> None:
    """`lkm reproduce`'s work for one paper module, inside its error boundary."""
    from lkm.spec import load_spec

    failed = []
    for experiment in module.SPECS:
        if not Path(experiment.spec).is_file():
            raise LkmError(f"{experiment.spec}: not found; this installation of lkm lacks the specs it ships (reinstall it)")
        spec = load_spec(experiment.spec, smoke=smoke, max_fits=max_fits)
        print_notes(spec)
        n_jobs = min(jobs, experiment.jobs) if experiment.jobs else jobs
        try:
            run_spec(spec, experiment.spec, results / spec.name, n_jobs, False, False, progress, cluster=cluster)
        except typer.Exit as exc:  # a failed fit: report it, go on with the other experiments
            if exc.exit_code != 1:
                raise
            failed.append(spec.name)
    # Fragility check (lkm.reproduction.perturbed): the runs the claims read, rerun with
    # training rows permuted and another BLAS thread count, at the settings they read.
    from lkm.reproduction.perturbed import perturbed_experiments

    for spec, source in perturbed_experiments(module, results, smoke):
        # workers x BLAS threads within the cores: oversubscribed small solves slow down many-fold
        threads = (spec.perturb.blas_threads if spec.perturb else None) or 1
        try:
            run_spec(spec, source, results / spec.name, max(1, jobs // threads), False, False, progress,
                      cluster=cluster)
        except typer.Exit as exc:
            if exc.exit_code != 1:
                raise
            failed.append(spec.name)
    written = module.write_summary(results, smoke)
    claims = next(p for p in written if p.name == "claims.md")
    print_claims(claims, smoke)
    console.print(f"claims table (with our measures) and timing tables written under {claims.parent}/", highlight=False)
    if failed:
        raise LkmError(f"some fits failed in: {', '.join(failed)} (see their records)")


#: Below this many columns a claims table is printed as plain lines, not as a table.
MIN_TABLE_WIDTH = 70


def print_claims(table_file: Path, smoke: bool) -> None:
    """The claims table's claim and verdict columns (read from its ``.json`` twin, the
    cells as shown): a Rich table wrapped to the terminal (never truncated), or one plain
    line per claim when stdout is not a terminal or is narrower than
    :data:`MIN_TABLE_WIDTH`. The measures are in the written claims.md."""
    import json

    import pandas as pd
    from rich.table import Table

    from lkm.reproduction.claims import SMOKE_LABEL

    csv = table_file.with_suffix(".json")
    data = json.loads(csv.read_text(encoding="utf-8"))
    df = pd.DataFrame(data["rows"], columns=data["columns"], dtype=str)
    columns = [c for c in df.columns if c in ("#", "the paper's claim") or c.startswith("verdict")]
    title = f"{csv.parent.name}: the paper's claims" + (f" — smoke run, every verdict: {SMOKE_LABEL}" if smoke else "")
    if not console.is_terminal or console.width < MIN_TABLE_WIDTH:
        console.print(title, highlight=False)
        for _, row in df.iterrows():
            verdicts = "; ".join(f"{c}: {row[c]}" for c in columns[2:] if row[c] not in ("–", ""))
            console.print(f"{row['#']}  {row[columns[1]]} — {verdicts}", highlight=False, soft_wrap=True)
        return
    table = Table(title=title, show_lines=True)
    for col in columns:
        table.add_column(col, overflow="fold", no_wrap=col == "#", ratio=None if col == "#" else 1)
    for _, row in df.iterrows():
        table.add_row(*(row[c] for c in columns))
    console.print(table)
